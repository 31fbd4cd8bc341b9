"""Azure (adlfs) and GCS (gcsfs) as an operator meets them: every URL form Spark prints, shown back
as given; the timeouts and retries each client is opened with; an endpoint that refuses or never
answers, counted in connections on the wire (tests/s3/test_s3_errors.py does the same for S3)."""

from __future__ import annotations

import pytest

from checkpoint_doctor.errors import (
    AccessDeniedError,
    CheckpointNotFoundError,
    CredentialsError,
    EndpointUnreachableError,
    MissingStorageBackendError,
    UsageError,
)
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.storage import open_storage
from checkpoint_doctor.reading.storage.clouds import azure_location
from checkpoint_doctor.reading.storage.errors import missing_dependency, translate_error
from tests.s3.conftest import Emulated
from tests.s3.emulators import AZURITE_ACCOUNT, AZURITE_KEY
from tests.s3.test_s3_errors import (  # noqa: F401 - fixtures
    SilentServer,
    closed_port,
    short_default_timeouts,
    silent_server,
)
from tests.storage.builders import checkpoint_files

AZURE_URLS = {
    # Hadoop's ABFS driver (Azure Databricks, Synapse, HDInsight print these)
    "abfss://ckpt@acct.dfs.core.windows.net/jobs/orders": ("ckpt/jobs/orders", "acct", None),
    "abfs://ckpt@acct.dfs.core.windows.net/jobs/orders/": ("ckpt/jobs/orders", "acct", None),
    # the WASB driver
    "wasbs://ckpt@acct.blob.core.windows.net/jobs/orders": ("ckpt/jobs/orders", "acct", None),
    "wasb://ckpt@acct.blob.core.windows.net/jobs": ("ckpt/jobs", "acct", None),
    # a sovereign cloud: the account's host is not the public one
    "abfss://ckpt@acct.dfs.core.chinacloudapi.cn/jobs": (
        "ckpt/jobs",
        "acct",
        "acct.blob.core.chinacloudapi.cn",
    ),
    "abfss://ckpt@acct.dfs.core.windows.net": ("ckpt", "acct", None),
    # fsspec's own: the account from the options or the environment
    "az://ckpt/jobs/orders": ("ckpt/jobs/orders", None, None),
    "abfs://ckpt/jobs/orders": ("ckpt/jobs/orders", None, None),
}


@pytest.mark.parametrize("url", sorted(AZURE_URLS))
def test_every_azure_url_form_names_its_container_path_and_account(url: str) -> None:
    assert azure_location(url.partition("://")[2]) == AZURE_URLS[url]


def _azurite_at(port: int) -> str:
    return (
        f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
        f"BlobEndpoint=http://127.0.0.1:{port}/{AZURITE_ACCOUNT};"
    )


def test_an_azure_store_is_opened_with_bounded_timeouts_and_one_retry(closed_port: int) -> None:  # noqa: F811
    url = f"abfss://ckpt@{AZURITE_ACCOUNT}.dfs.core.windows.net/jobs/orders"
    store = open_storage(url, {"connection_string": _azurite_at(closed_port)})

    client = store.fs.service_client
    assert (store.url, store.root, store.atomic_create) == (url, "ckpt/jobs/orders", True)
    assert client._config.retry_policy.total_retries == 1
    assert client._config.retry_policy.initial_backoff == 1
    transport = client._pipeline._transport.connection_config
    assert (transport.timeout, transport.read_timeout) == (5, 10)
    # The same account and endpoint as adlfs's own client.
    assert client.url.startswith(f"http://127.0.0.1:{closed_port}/{AZURITE_ACCOUNT}")


def test_the_operator_sets_azure_timeouts_and_retries_as_text(closed_port: int) -> None:  # noqa: F811
    options = {
        "connection_string": _azurite_at(closed_port),
        "read_timeout": "30",
        "connection_timeout": "2",
        "retry_total": "4",
    }
    client = open_storage("az://ckpt/jobs", options).fs.service_client

    assert client._config.retry_policy.total_retries == 4
    transport = client._pipeline._transport.connection_config
    assert (transport.timeout, transport.read_timeout) == (2, 30)


def test_a_gcs_store_is_opened_with_bounded_timeouts_and_two_attempts() -> None:
    import aiohttp
    from gcsfs.core import GCSFileSystem

    store = open_storage("gs://bkt/jobs/orders/", {"endpoint_url": "http://127.0.0.1:9", "token": "anon"})

    assert (store.url, store.root, store.atomic_create) == ("gs://bkt/jobs/orders", "bkt/jobs/orders", True)
    # gcsfs.core's client, not the gRPC-probing ExtendedGcsFileSystem
    assert type(store.fs) is GCSFileSystem
    assert store.fs.requests_timeout == aiohttp.ClientTimeout(sock_connect=5, sock_read=10)
    assert store.fs._checkpoint_doctor_attempts == 2


def test_endpoint_url_reaches_gcsfs_and_is_refused_for_azure() -> None:
    from checkpoint_doctor.reading.storage import parse_storage_options

    options = parse_storage_options(["endpoint_url=http://127.0.0.1:9", "token=anon"])

    assert open_storage("gs://bkt/ckpt", options).fs._location == "http://127.0.0.1:9"
    with pytest.raises(UsageError, match="S3 options, not for az://ckpt/jobs"):
        open_storage("az://ckpt/jobs", options)


@pytest.mark.parametrize(
    ("url", "extra"),
    [
        ("abfss://c@a.dfs.core.windows.net/x", "azure"),
        ("wasbs://c@a.blob.core.windows.net/x", "azure"),
        ("az://c/x", "azure"),
        ("gs://b/x", "gcs"),
    ],
)
def test_a_missing_backend_names_the_extra(url: str, extra: str) -> None:
    error = missing_dependency(url, ImportError("No module named 'x'"))

    assert isinstance(error, MissingStorageBackendError)
    assert f"checkpoint-doctor[{extra}]" in str(error)


# ------------------------------------------------------------------ against the emulators


def _silent(
    store: Emulated, port: int, read_timeout: float, attempts: int | None = None
) -> dict[str, object]:
    """Point the store at ``port`` with a short read timeout (and ``attempts`` tries)."""
    if store.name == "azure":
        options: dict[str, object] = {"connection_string": _azurite_at(port), "read_timeout": read_timeout}
        if attempts is not None:
            options["retry_total"] = attempts - 1
        return options
    options = {"endpoint_url": f"http://127.0.0.1:{port}", "requests_timeout": read_timeout}
    if attempts is not None:
        options["retries"] = attempts
    return options


#: Requests a listing of the checkpoint sends before it fails: adlfs's find asks first whether the
#: path is a blob (a HEAD, its failure taken as "no"), then lists; gcsfs lists.
LISTING_REQUESTS = {"azure": 2, "gcs": 1}


@pytest.fixture(params=["azure", "gcs"])
def cloud(request: pytest.FixtureRequest) -> Emulated:
    return request.getfixturevalue(request.param)


def test_an_endpoint_that_never_answers_fails_after_two_attempts(
    cloud: Emulated,
    silent_server: SilentServer,  # noqa: F811
) -> None:
    url = cloud.url("ckpt")

    with pytest.raises(EndpointUnreachableError) as info:
        open_storage(url, _silent(cloud, silent_server.port, 0.5)).list_tree()

    # Two attempts of each request: not the SDK's 4 after 15 s, 18 s, 24 s, nor gcsfs's 6.
    assert len(silent_server.accepted) == 2 * LISTING_REQUESTS[cloud.name]
    message = str(info.value)
    assert message.startswith(f"cannot list {url}: ") and "\n" not in message
    assert "--storage-option" in message


def test_the_operator_sets_the_attempts(cloud: Emulated, silent_server: SilentServer) -> None:  # noqa: F811
    with pytest.raises(EndpointUnreachableError):
        load_checkpoint(
            cloud.url("ckpt"), storage_options=_silent(cloud, silent_server.port, 0.2, attempts=3)
        )

    assert len(silent_server.accepted) == 3 * LISTING_REQUESTS[cloud.name]


def test_a_refused_endpoint_is_one_line(cloud: Emulated, closed_port: int) -> None:  # noqa: F811
    url = cloud.url("ckpt")

    with pytest.raises(EndpointUnreachableError) as info:
        open_storage(url, _silent(cloud, closed_port, 1, attempts=1)).list_tree()

    message = str(info.value)
    assert message.startswith(f"cannot list {url}: endpoint unreachable (") and "\n" not in message
    assert f"127.0.0.1:{closed_port}" in message


def test_default_options_answer_on_a_silent_endpoint(
    cloud: Emulated,
    silent_server: SilentServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no timeout option: two attempts per request, each waiting out the default read timeout
    (10 s without a byte: about 21 s a request; here 1 s, ``short_default_timeouts``)."""
    short_default_timeouts(monkeypatch)
    options = _silent(cloud, silent_server.port, 0)
    options.pop("read_timeout", None)
    options.pop("requests_timeout", None)

    with pytest.raises(EndpointUnreachableError):
        load_checkpoint(cloud.url("ckpt"), storage_options=options)

    assert len(silent_server.accepted) == 2 * LISTING_REQUESTS[cloud.name]


def test_a_missing_prefix_and_a_missing_bucket(cloud: Emulated) -> None:
    for rel, data in checkpoint_files().items():
        cloud.fs.pipe_file(cloud.key(f"ckpt/{rel}"), data)
    elsewhere = cloud.url("x").replace(cloud.bucket, "no-such-bucket")

    with pytest.raises(CheckpointNotFoundError) as missing:
        open_storage(cloud.url("ckp"), cloud.options).list_tree()  # a prefix of "ckpt/"
    with pytest.raises(CheckpointNotFoundError):
        open_storage(elsewhere, cloud.options).list_tree()
    listing = open_storage(cloud.url("ckpt/offsets"), cloud.options).list_tree()

    assert missing.value.url == cloud.url("ckp")
    assert [f.path for f in listing.files] == ["0", "1", "2"]


def test_a_wrong_azure_account_key_is_refused_without_the_key(azure: Emulated, azurite) -> None:
    wrong = azurite.connection_string().replace(AZURITE_KEY, "V1JPTkdLRVk=")

    # Azurite answers a bad signature 403 AuthorizationFailure (Azure itself: AuthenticationFailed,
    # the SDK's ClientAuthenticationError: rejected credentials, below).
    with pytest.raises(AccessDeniedError) as info:
        open_storage(azure.url("ckpt"), {"connection_string": wrong}).list_tree()

    assert str(info.value).startswith(f"cannot list {azure.url('ckpt')}: access denied")
    assert "V1JPTkdLRVk=" not in str(info.value)


def test_azure_and_google_authentication_failures_are_rejected_credentials() -> None:
    from azure.core.exceptions import ClientAuthenticationError
    from google.auth.exceptions import DefaultCredentialsError

    azure_error = translate_error(
        ClientAuthenticationError("Server failed to authenticate"), "az://c/x", "list"
    )
    google_error = translate_error(DefaultCredentialsError("no default credentials"), "gs://b/x", "list")

    assert isinstance(azure_error, CredentialsError) and "rejected" in str(azure_error)
    assert "AZURE_STORAGE_" in str(azure_error)
    assert isinstance(google_error, CredentialsError) and "no credentials found" in str(google_error)
    assert "GOOGLE_APPLICATION_CREDENTIALS" in str(google_error)


@pytest.mark.parametrize(
    "form",
    [
        "abfss://{c}@devstoreaccount1.dfs.core.windows.net/{p}",
        "abfs://{c}@devstoreaccount1.dfs.core.windows.net/{p}",
        "wasbs://{c}@devstoreaccount1.blob.core.windows.net/{p}",
        "wasb://{c}@devstoreaccount1.blob.core.windows.net/{p}",
        "az://{c}/{p}",
        "abfs://{c}/{p}",
    ],
)
def test_every_azure_url_form_reads_the_checkpoint_and_is_shown_as_given(
    form: str, azure: Emulated, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from checkpoint_doctor.cli import main

    for rel, data in checkpoint_files().items():
        azure.fs.pipe_file(azure.key(f"jobs/orders/{rel}"), data)
    url = form.format(c=azure.bucket, p="jobs/orders")

    code = main(["inspect", url, "--format", "json"])
    out, err = capsys.readouterr()

    assert (code, err) == (0, "")
    report = json.loads(out)["result"]
    assert report["checkpoint"] == url
    assert report["query_id"] == "0f7cc2a5-6a4b-4c41-9a56-2f3c8d1e7b90"


@pytest.mark.parametrize("form", ["gs://{b}/{p}", "gcs://{b}/{p}"])
def test_every_gcs_url_form_reads_the_checkpoint_and_is_shown_as_given(
    form: str, gcs: Emulated, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from checkpoint_doctor.cli import main

    for rel, data in checkpoint_files().items():
        gcs.fs.pipe_file(gcs.key(f"jobs/orders/{rel}"), data)
    url = form.format(b=gcs.bucket, p="jobs/orders")

    code = main(["inspect", url, "--format", "json"])
    out, err = capsys.readouterr()

    assert (code, err) == (0, "")
    assert json.loads(out)["result"]["checkpoint"] == url
