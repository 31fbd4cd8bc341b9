"""Fixtures for tests against a real moto S3 server on 127.0.0.1, used through s3fs as a user would.

``moto_server`` (session): one ``ThreadedMotoServer`` with a free port. ``s3`` (per test): dummy
credentials in the environment (no ``AWS_PROFILE``), the server reset (``POST /moto-api/reset``),
s3fs's instance cache cleared, a bucket ``ckpt-bucket`` and an empty request log.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import s3fs

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
