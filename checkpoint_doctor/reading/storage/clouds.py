"""Azure Blob Storage / ADLS Gen2 (adlfs) and Google Cloud Storage (gcsfs), opened with bounded
timeouts and retries, from every URL form Spark prints for them.

Azure: ``abfss://container@account.dfs.core.windows.net/path`` (Hadoop's ABFS driver, what Azure
Databricks, Synapse and HDInsight print), ``abfs://``, ``wasbs://container@account.blob.core.windows.
net/path`` (the older WASB driver), and fsspec's ``az://container/path`` / ``abfs://container/path``
with the account from the storage options or the environment (``AZURE_STORAGE_CONNECTION_STRING``,
``AZURE_STORAGE_ACCOUNT_NAME`` with ``AZURE_STORAGE_ACCOUNT_KEY`` or ``AZURE_STORAGE_SAS_TOKEN``,
``AZURE_STORAGE_CLIENT_ID``/``_SECRET``/``TENANT_ID``, else ``DefaultAzureCredential``: adlfs reads
them). GCS: ``gs://bucket/path`` (and ``gcs://``), credentials as gcsfs finds them
(``GOOGLE_APPLICATION_CREDENTIALS``, gcloud's, the metadata server) or ``--storage-option token=``;
``STORAGE_EMULATOR_HOST`` or ``endpoint_url`` for another endpoint.

Both create exclusively in one request the service applies atomically: Azure's Put Blob with
``If-None-Match: *`` (adlfs ``pipe_file(mode="create")``, ``overwrite=False``), GCS's upload with
``ifGenerationMatch=0``; the lock of an apply relies on it (``atomic_create``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from checkpoint_doctor.errors import UsageError
from checkpoint_doctor.reading.storage.errors import missing_dependency, translated
from checkpoint_doctor.reading.storage.options import (
    AZURE_RETRY_BACKOFF_S,
    GCS_CONNECT_TIMEOUT_S,
    GCS_READ_TIMEOUT_S,
    with_azure_defaults,
    with_gcs_defaults,
)
from checkpoint_doctor.reading.storage.remote import FsspecStorage

#: ``container@account.dfs.core.windows.net`` (or ``.blob.``; sovereign clouds have another suffix).
_AZURE_AUTHORITY = re.compile(r"^(?P<container>[^@/]+)@(?P<account>[^./]+)\.(?:dfs|blob)\.(?P<suffix>[^/]+)$")
_PUBLIC_SUFFIX = "core.windows.net"


def azure_location(rest: str) -> tuple[str, str | None, str | None]:
    """Return ``(container/path, account, account_host)`` of what follows ``scheme://`` in an Azure
    URL. Pure.

    ``container@account.dfs.core.windows.net/path`` names its account (and, outside Azure's public
    cloud, its host: ``account.blob.core.chinacloudapi.cn``); ``container/path`` does not.
    """
    authority, slash, path = rest.partition("/")
    match = _AZURE_AUTHORITY.match(authority)
    if match is None:
        return rest.strip("/"), None, None
    container, account, suffix = match["container"], match["account"], match["suffix"].lower()
    host = None if suffix == _PUBLIC_SUFFIX else f"{account}.blob.{suffix}"
    return f"{container}/{path}".strip("/") if slash else container, account, host


def open_azure(url: str, protocol: str, rest: str, options: Mapping[str, Any]) -> FsspecStorage:
    """Open an Azure URL (any form of :data:`~checkpoint_doctor.reading.storage.options.
    AZURE_PROTOCOLS`) with bounded timeouts and retries; the URL is shown back as given."""
    try:
        import adlfs
    except ImportError as exc:
        raise missing_dependency(url, exc) from exc
    root, account, host = azure_location(rest)
    if "client_kwargs" in options:
        # --storage-option endpoint_url= lands there (s3fs's place); adlfs would hand it to
        # DefaultAzureCredential, which fails with a TypeError far from the cause.
        raise UsageError(
            f"--storage-option endpoint_url/region_name/client_kwargs are S3 options, not for {url}",
            hint="give an Azure endpoint as BlobEndpoint=... in AZURE_STORAGE_CONNECTION_STRING "
            "(or --storage-option connection_string=...), or --storage-option account_host=HOST",
        )
    opts = with_azure_defaults(options)
    retry_total = opts.pop("retry_total")
    if account is not None:
        opts.setdefault("account_name", account)
    if host is not None:
        opts.setdefault("account_host", host)
    with translated(url, "open"):
        fs = adlfs.AzureBlobFileSystem(**opts)
        _bound_azure_client(fs, retry_total, opts["connection_timeout"], opts["read_timeout"])
    return FsspecStorage(url.rstrip("/") or url, fs, root, "az", atomic_create=True)


def _bound_azure_client(fs: Any, retry_total: Any, connection_timeout: Any, read_timeout: Any) -> None:
    """Give ``fs`` an Azure SDK client with the same account, endpoint and credential as adlfs made,
    and our retries and timeouts: adlfs builds its ``BlobServiceClient`` with the SDK's defaults
    and passes its ``connection_timeout``/``read_timeout`` to uploads and downloads only, so a
    listing waited out storage's ExponentialRetry (15 s, 18 s, 24 s) and a 60 s read timeout.
    fsspec may hand back a cached instance: one already bounded alike is left as it is."""
    from azure.storage.blob.aio import BlobServiceClient, ExponentialRetry

    wanted = (retry_total, connection_timeout, read_timeout)
    if getattr(fs, "_checkpoint_doctor_bounds", None) == wanted:
        return
    client = fs.service_client
    fs.service_client = BlobServiceClient(
        account_url=client.url,
        credential=client.credential,
        retry_policy=ExponentialRetry(
            initial_backoff=AZURE_RETRY_BACKOFF_S,
            increment_base=AZURE_RETRY_BACKOFF_S,
            retry_total=int(retry_total),
            random_jitter_range=0,
        ),
        connection_timeout=connection_timeout,
        read_timeout=read_timeout,
        _location_mode=getattr(fs, "location_mode", None) or "primary",
    )
    fs._checkpoint_doctor_bounds = wanted


def open_gcs(url: str, rest: str, options: Mapping[str, Any]) -> FsspecStorage:
    """Open ``gs://bucket/path`` (or ``gcs://``) with bounded timeouts and attempts."""
    try:
        import aiohttp
        from gcsfs.core import GCSFileSystem
    except ImportError as exc:
        raise missing_dependency(url, exc) from exc
    opts = with_gcs_defaults(options)
    attempts = int(opts.pop("retries"))
    # --storage-option endpoint_url= lands in client_kwargs (s3fs's place for it); gcsfs takes it
    # as its own endpoint_url and would ignore it there.
    client = opts.pop("client_kwargs", None)
    if isinstance(client, Mapping) and client.get("endpoint_url"):
        opts.setdefault("endpoint_url", client["endpoint_url"])
    # Per chunk of the answer, not the whole transfer: a large object is unaffected. A number the
    # operator gives (--storage-option requests_timeout=30) is that wait too: as a total, aiohttp
    # raises asyncio's TimeoutError, which gcsfs's retry loop does not catch (one attempt only).
    read_timeout = opts.get("requests_timeout", GCS_READ_TIMEOUT_S)
    if isinstance(read_timeout, (int, float)) and not isinstance(read_timeout, bool):
        opts["requests_timeout"] = aiohttp.ClientTimeout(
            sock_connect=GCS_CONNECT_TIMEOUT_S, sock_read=read_timeout
        )
    _quiet_gcsfs_retry_errors()
    with translated(url, "open"):
        # gcsfs.core's client, not the package's default ExtendedGcsFileSystem
        # (GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT): that one asks each bucket's storage layout over gRPC
        # first, up to 60 s per bucket where the endpoint speaks no gRPC (an emulator, a proxy).
        fs = GCSFileSystem(**opts)
        _bound_gcs_attempts(fs, attempts)
    return FsspecStorage(url.rstrip("/") or url, fs, rest.strip("/"), "gs", atomic_create=True)


def _bound_gcs_attempts(fs: Any, attempts: int) -> None:
    """Send every request of ``fs`` at most ``attempts`` times: gcsfs's ``_request`` carries
    ``@retry_request(retries=6)`` from its class body, which no option changes; the undecorated
    request is called through the same gcsfs retry loop with our number (same retriable errors,
    same backoff)."""
    from gcsfs.core import GCSFileSystem
    from gcsfs.retry import retry_request

    if getattr(fs, "_checkpoint_doctor_attempts", None) == attempts:
        return
    raw = GCSFileSystem._request.__wrapped__
    loop = retry_request.__wrapped__

    async def send(*args: Any, **kwargs: Any) -> Any:
        return await raw(fs, *args, **kwargs)

    send.__name__ = "_request"  # the retry loop's log lines name it

    async def _request(*args: Any, **kwargs: Any) -> Any:
        return await loop(send, attempts, *args, **kwargs)

    fs._request = _request
    fs._checkpoint_doctor_attempts = attempts


class _NoRetryLoopErrors(logging.Filter):
    """Drop gcsfs's ``logger.exception`` of a request its retry loop gives up on (an empty object's
    416, a dead endpoint): a traceback on stderr for what the tool reports in one line itself. Its
    DEBUG lines (each retry) stay for ``-vv``."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.funcName == "retry_request" and record.levelno >= logging.ERROR)


_QUIET = _NoRetryLoopErrors()


def _quiet_gcsfs_retry_errors() -> None:
    logger = logging.getLogger("gcsfs")
    if _QUIET not in logger.filters:
        logger.addFilter(_QUIET)
