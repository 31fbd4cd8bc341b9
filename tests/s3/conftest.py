"""Fixtures for tests against real object store servers on 127.0.0.1, used through fsspec's own
packages as a user would: moto (S3, s3fs), Azurite (Azure Blob Storage, adlfs) and fake-gcs-server
(Google Cloud Storage, gcsfs).

``moto_server`` (session): one ``ThreadedMotoServer`` with a free port. ``s3`` (per test): dummy
credentials in the environment (no ``AWS_PROFILE``), the server reset (``POST /moto-api/reset``),
s3fs's instance cache cleared, a bucket ``ckpt-bucket`` and an empty request log. ``azure`` and
``gcs`` (per test): the same empty bucket (container) on the session's Azurite or fake-gcs-server,
its credentials and endpoint in the cloud's usual environment variables. ``store`` is each of the
three in turn: a test that takes it runs on every store.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import s3fs

from tests.s3.emulators import AZURITE_ACCOUNT, Azurite, FakeGcs
from tests.s3.server import BUCKET, MotoServer, shared_server

AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}
AWS_UNSET = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
)


@dataclass
class S3:
    """The S3 side of a test: endpoint, bucket, and an s3fs of its own to arrange and observe."""

    server: MotoServer
    fs: Any
    bucket: str = BUCKET
    name = "s3"
    #: the command the lock's message names to remove a stale lock
    removal = "aws s3 rm"

    @property
    def endpoint(self) -> str:
        """Return the server's URL."""
        return self.server.endpoint

    @property
    def options(self) -> dict[str, Any]:
        """Return the storage options pointing s3fs at the server."""
        return {"client_kwargs": {"endpoint_url": self.server.endpoint}}

    def url(self, rel: str = "") -> str:
        """Return ``s3://<bucket>/<rel>``."""
        return f"s3://{self.bucket}/{rel}" if rel else f"s3://{self.bucket}"

    def key(self, rel: str) -> str:
        """Return ``<bucket>/<rel>``, the s3fs path."""
        return f"{self.bucket}/{rel}"


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    server = shared_server()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def s3_observer(moto_server: MotoServer) -> Any:
    """An s3fs of the tests' own to arrange and observe objects: explicit keys, no listings cache,
    never shared with the store under test (skip_instance_cache)."""
    return s3fs.S3FileSystem(
        key=AWS_ENV["AWS_ACCESS_KEY_ID"],
        secret=AWS_ENV["AWS_SECRET_ACCESS_KEY"],
        client_kwargs={"endpoint_url": moto_server.endpoint},
        skip_instance_cache=True,
        use_listings_cache=False,
    )


@pytest.fixture
def s3(moto_server: MotoServer, s3_observer: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3]:
    for key, value in AWS_ENV.items():
        monkeypatch.setenv(key, value)
    for key in AWS_UNSET:
        monkeypatch.delenv(key, raising=False)
    moto_server.enforce_iam(False)
    moto_server.reset()
    s3fs.S3FileSystem.clear_instance_cache()
    env = S3(moto_server, s3_observer)
    env.fs.mkdir(env.bucket)
    moto_server.log.clear()
    yield env
    s3fs.S3FileSystem.clear_instance_cache()


#: What the cloud SDKs could pick up from the machine instead of the test's own settings.
AZURE_UNSET = (
    "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_ACCOUNT_NAME",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_SAS_TOKEN",
    "AZURE_STORAGE_CLIENT_ID",
    "AZURE_STORAGE_CLIENT_SECRET",
    "AZURE_STORAGE_TENANT_ID",
    "AZURE_STORAGE_ANON",
)
GCS_UNSET = ("STORAGE_EMULATOR_HOST", "GOOGLE_APPLICATION_CREDENTIALS", "GCSFS_DEFAULT_PROJECT")


@dataclass
class Emulated:
    """An Azure or GCS bucket on an emulator, with the same face as :class:`S3`: ``url(rel)`` is
    what an operator types (Spark's own form on Azure), ``key(rel)`` the path of ``fs``, an fsspec
    file system of the tests' own."""

    name: str
    fs: Any
    endpoint: str
    scheme: str
    removal: str
    bucket: str = BUCKET

    @property
    def options(self) -> dict[str, Any]:
        """Nothing: the endpoint and credentials are in the environment, as an operator sets them."""
        return {}

    def url(self, rel: str = "") -> str:
        """Return the URL of ``rel`` in the bucket (``scheme`` ends where the bucket's path starts)."""
        return f"{self.scheme}/{rel}" if rel else self.scheme

    def key(self, rel: str) -> str:
        """Return ``<bucket>/<rel>``, the path of ``fs``."""
        return f"{self.bucket}/{rel}"


@pytest.fixture(scope="session")
def azurite() -> Iterator[Azurite]:
    server = Azurite()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def fake_gcs() -> Iterator[FakeGcs]:
    server = FakeGcs()
    yield server
    server.stop()


@pytest.fixture
def azure(azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulated]:
    import adlfs

    for key in AZURE_UNSET:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string())
    fs = adlfs.AzureBlobFileSystem(connection_string=azurite.connection_string(), skip_instance_cache=True)
    if fs.exists(BUCKET):
        fs.rm(BUCKET, recursive=True)
    fs.mkdir(BUCKET)
    adlfs.AzureBlobFileSystem.clear_instance_cache()
    yield Emulated(
        "azure",
        fs,
        azurite.url,
        f"abfss://{BUCKET}@{AZURITE_ACCOUNT}.dfs.core.windows.net",
        f"delete abfss://{BUCKET}@",
    )
    adlfs.AzureBlobFileSystem.clear_instance_cache()


@pytest.fixture
def gcs(fake_gcs: FakeGcs, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulated]:
    from gcsfs.core import GCSFileSystem

    for key in GCS_UNSET:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", fake_gcs.url)
    # A raw OAuth token (--storage-option token=ya29...) is used as it is, not looked up at Google's
    # tokeninfo endpoint (gcsfs.credentials._get_creds_from_raw_token): the tests reach no network.
    monkeypatch.setenv("FETCH_RAW_TOKEN_EXPIRY", "false")
    fs = GCSFileSystem(endpoint_url=fake_gcs.url, token="anon", skip_instance_cache=True, cache_timeout=0)
    if fs.exists(BUCKET):
        fs.rm(BUCKET, recursive=True)
    fs.mkdir(BUCKET)
    GCSFileSystem.clear_instance_cache()
    yield Emulated("gcs", fs, fake_gcs.url, f"gs://{BUCKET}", "gcloud storage rm")
    GCSFileSystem.clear_instance_cache()


#: One of the stores (they share the attributes the tests use).
Store = S3 | Emulated


@pytest.fixture(params=["s3", "azure", "gcs"])
def store(request: pytest.FixtureRequest) -> Store:
    """Each object store in turn (its fixture: ``s3``, ``azure`` or ``gcs``)."""
    return request.getfixturevalue(request.param)
