"""Backend exceptions become the project's :class:`~checkpoint_doctor.errors.StorageError` family.

Failures are recognised by exception type (``isinstance`` against the built-in ``OSError`` family
and, when installed, botocore's and aiohttp's exception classes) and by the S3 error code a
botocore ``ClientError`` carries, never by class names or message text. Every translated error
names the URL and says what to do; none quotes a storage option (credentials stay out of messages).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import sys
from collections.abc import Iterator, Mapping

from checkpoint_doctor.errors import (
    AccessDeniedError,
    CheckpointDoctorError,
    CheckpointNotFoundError,
    CredentialsError,
    EndpointUnreachableError,
    MissingDependencyError,
    MissingStorageBackendError,
    NotADirectoryStorageError,
    StorageError,
    TargetExistsError,
)

#: protocol -> (checkpoint-doctor extra, package): the extras setup.cfg declares for fsspec backends.
EXTRA_FOR_PROTOCOL = {
    "s3": ("s3", "s3fs"),
    "s3a": ("s3", "s3fs"),
    "gs": ("gcs", "gcsfs"),
    "gcs": ("gcs", "gcsfs"),
    **dict.fromkeys(("abfs", "abfss", "az", "wasb", "wasbs"), ("azure", "adlfs")),
}

#: S3 error codes of credentials the service rejected.
_REJECTED_CREDENTIALS = frozenset(
    {
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "InvalidToken",
        "ExpiredToken",
        "TokenRefreshRequired",
        "InvalidClientTokenId",
        "AuthenticationFailed",  # Azure: a wrong account key or SAS signature
    }
)
_DENIED = frozenset(
    {
        "AccessDenied",
        "AllAccessDisabled",
        "Forbidden",
        "403",
        "AuthorizationFailure",
        "AuthorizationPermissionMismatch",
        "AuthorizationResourceTypeMismatch",
    }
)
#: How far down ``__cause__``/``__context__`` to look for the original failure.
_CHAIN_DEPTH = 8

NO_CREDENTIALS_HINT = (
    "set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE, or pass --storage-option key=... secret=..."
)
TIMEOUT_HINT = (
    "check the endpoint; if it is only slow, raise --storage-option config_kwargs.read_timeout=SECONDS "
    "(and config_kwargs.connect_timeout)"
)
UNREACHABLE_HINT = "check the network and --storage-option endpoint_url"
_AZURE = frozenset({"abfs", "abfss", "az", "wasb", "wasbs"})
_GCS = frozenset({"gs", "gcs"})
#: What to do, in each cloud's own words: (no credentials, rejected credentials, timeout, unreachable).
_AZURE_HINTS = (
    "set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY or "
    "AZURE_STORAGE_SAS_TOKEN, or sign in (az login), or pass --storage-option account_key=...",
    "check the account key, SAS token or service principal (AZURE_STORAGE_* variables or --storage-option)",
    "check the endpoint; if it is only slow, raise --storage-option read_timeout=SECONDS "
    "(and connection_timeout)",
    "check the network, the account name and the endpoint (BlobEndpoint of AZURE_STORAGE_CONNECTION_STRING)",
)
_GCS_HINTS = (
    "set GOOGLE_APPLICATION_CREDENTIALS or sign in (gcloud auth application-default login), "
    "or pass --storage-option token=...",
    "check the credentials (GOOGLE_APPLICATION_CREDENTIALS or --storage-option token=...)",
    "check the endpoint; if it is only slow, raise --storage-option requests_timeout=SECONDS",
    "check the network and --storage-option endpoint_url (or STORAGE_EMULATOR_HOST)",
)
_S3_HINTS = (
    NO_CREDENTIALS_HINT,
    "check the access key, secret and session token (AWS_* variables, AWS_PROFILE or --storage-option key=... secret=...)",
    TIMEOUT_HINT,
    UNREACHABLE_HINT,
)


def _hints(url: str) -> tuple[str, str, str, str]:
    protocol = split_protocol(url)[0]
    return _AZURE_HINTS if protocol in _AZURE else _GCS_HINTS if protocol in _GCS else _S3_HINTS


def _kinds() -> dict[str, tuple[type[BaseException], ...]]:
    """Return the exception classes per failure kind, for the backends imported so far (a failure
    before adlfs or gcsfs was loaded must not leave their classes out of a later one)."""
    loaded = tuple(name in sys.modules for name in ("asyncio", "azure.core", "azure.identity", "google.auth"))
    return _kinds_for(loaded)


@functools.lru_cache(maxsize=16)
def _kinds_for(loaded: tuple[bool, ...]) -> dict[str, tuple[type[BaseException], ...]]:
    """Return the exception classes per failure kind, with the optional backends' own classes."""
    import socket  # here, not at start-up: only a failure needs its classes

    no_credentials: list[type[BaseException]] = []
    rejected: list[type[BaseException]] = []
    timeouts: list[type[BaseException]] = [TimeoutError, socket.timeout]
    # asyncio.TimeoutError (its own class before Python 3.11) can only be raised once an async
    # backend (s3fs) imported asyncio: not imported here, it is start-up time for every command.
    if "asyncio" in sys.modules:
        timeouts.append(sys.modules["asyncio"].TimeoutError)
    unreachable: list[type[BaseException]] = [ConnectionError, socket.gaierror]
    with contextlib.suppress(ImportError):
        from fsspec.exceptions import FSTimeoutError

        timeouts.append(FSTimeoutError)
    with contextlib.suppress(ImportError):
        from botocore import exceptions as boto

        no_credentials += [
            boto.NoCredentialsError,
            boto.PartialCredentialsError,
            boto.CredentialRetrievalError,
        ]
        timeouts += [boto.ConnectTimeoutError, boto.ReadTimeoutError]
        unreachable += [boto.EndpointConnectionError, boto.ConnectionClosedError, boto.ConnectionError]
    with contextlib.suppress(ImportError):
        import aiohttp

        timeouts.append(aiohttp.ServerTimeoutError)
        unreachable.append(aiohttp.ClientConnectionError)
    # Azure's SDK (adlfs) and Google's auth (gcsfs): loaded only when that backend was.
    if "azure.core" in sys.modules:
        from azure.core import exceptions as azure

        timeouts += [azure.ServiceRequestTimeoutError, azure.ServiceResponseTimeoutError]
        unreachable += [azure.ServiceRequestError, azure.ServiceResponseError]
        rejected.append(azure.ClientAuthenticationError)
    if "azure.identity" in sys.modules:
        no_credentials.append(sys.modules["azure.identity"].CredentialUnavailableError)
    if "google.auth" in sys.modules:
        from google.auth import exceptions as google

        no_credentials.append(google.DefaultCredentialsError)
        rejected.append(google.RefreshError)
    return {
        "no_credentials": tuple(no_credentials),
        "timeout": tuple(timeouts),
        "unreachable": tuple(unreachable),
        "rejected": tuple(rejected),
    }


def _chain(exc: BaseException) -> Iterator[BaseException]:
    current: BaseException | None = exc
    for _ in range(_CHAIN_DEPTH):
        if current is None:
            return
        yield current
        current = current.__cause__ or current.__context__


def _any_is(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> BaseException | None:
    return next((e for e in _chain(exc) if kinds and isinstance(e, kinds)), None)


def error_code(exc: BaseException) -> str | None:
    """Return the service error code found in the exception chain: a botocore ``ClientError``'s,
    or an Azure ``HttpResponseError``'s ``error_code`` (``InvalidRange``, ``AuthenticationFailed``)."""
    for current in _chain(exc):
        response = getattr(current, "response", None)
        if isinstance(response, Mapping):
            error = response.get("Error")
            code = error.get("Code") if isinstance(error, Mapping) else None
            if code:
                return str(code)
        azure_code = getattr(current, "error_code", None)  # a StorageErrorCode, a str enum
        if isinstance(azure_code, str) and azure_code:
            return str(getattr(azure_code, "value", azure_code))
    return None


def http_status(exc: BaseException) -> int | None:
    """Return the HTTP status found in the exception chain: Azure's ``status_code``, gcsfs's
    ``HttpError.code``, aiohttp's ``status``."""
    for current in _chain(exc):
        for attribute in ("status_code", "code", "status"):
            value = getattr(current, attribute, None)
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value < 600:
                return value
    return None


def _first_line(exc: BaseException, limit: int = 200) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:limit] if text.strip() else type(exc).__name__


def translate_error(exc: BaseException, url: str, op: str) -> StorageError:
    """Map a backend exception to the project's :class:`StorageError` family."""
    if isinstance(exc, StorageError):
        return exc
    kinds = _kinds()
    code = error_code(exc)
    no_credentials_hint, rejected_hint, timeout_hint, unreachable_hint = _hints(url)
    if _any_is(exc, kinds["no_credentials"]) is not None:
        return CredentialsError(url, op, "no credentials found", hint=no_credentials_hint)
    if code in _REJECTED_CREDENTIALS or _any_is(exc, kinds["rejected"]) is not None:
        return CredentialsError(
            url, op, f"the credentials were rejected ({code or 'authentication failed'})", hint=rejected_hint
        )
    if isinstance(exc, FileNotFoundError):
        if code == "NoSuchBucket":
            return CheckpointNotFoundError(
                url, op, "no such bucket", hint="check the bucket name and the endpoint"
            )
        return CheckpointNotFoundError(url, op, "no such file or directory", hint="check the path")
    if isinstance(exc, NotADirectoryError):
        return NotADirectoryStorageError(
            url, op, "it is a file, not a directory", hint="pass the checkpoint directory"
        )
    if isinstance(exc, PermissionError) or code in _DENIED:
        return AccessDeniedError(
            url, op, "access denied", hint="check the permissions or bucket policy for this path"
        )
    timeout = _any_is(exc, kinds["timeout"])
    if timeout is not None:
        return EndpointUnreachableError(
            url, op, f"no answer within the timeout ({_first_line(timeout, 160)})", hint=timeout_hint
        )
    unreachable = _any_is(exc, kinds["unreachable"])
    if unreachable is not None:
        return EndpointUnreachableError(
            url,
            op,
            f"endpoint unreachable ({_first_line(unreachable, 160)})",
            hint=unreachable_hint,
        )
    if isinstance(exc, FileExistsError):
        return TargetExistsError(url, op, "the target already exists")
    if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
        return StorageError(
            url,
            op,
            "a loop of symbolic links",
            hint="point it at the checkpoint directory (readlink -f shows where it leads)",
        )
    return StorageError(url, op, f"{type(exc).__name__}: {_first_line(exc)}")


@contextlib.contextmanager
def translated(url: str, op: str) -> Iterator[None]:
    """Translate any backend exception raised inside the block (ImportError: a missing backend)."""
    try:
        yield
    except Exception as exc:
        error = backend_error(exc, url, op)
        if error is exc:
            raise
        raise error from exc


def backend_error(exc: Exception, url: str, op: str) -> CheckpointDoctorError:
    """Return the project's error for an exception of a backend at ``url``: a StorageError as it is,
    an ImportError as the missing backend, anything else through :func:`translate_error`."""
    if isinstance(exc, StorageError):
        return exc
    if isinstance(exc, ImportError):
        return missing_dependency(url, exc)
    return translate_error(exc, url, op)


def split_protocol(url: str) -> tuple[str, str]:
    """Return ``(protocol, rest)``; a plain path is ``("file", path)``."""
    if "://" in url:
        protocol, _, rest = url.partition("://")
        return protocol.lower(), rest
    return "file", url


def missing_dependency(url: str, exc: ImportError) -> MissingDependencyError:
    """Name the URL, the package that is missing and how to install it."""
    protocol = split_protocol(url)[0]
    known = EXTRA_FOR_PROTOCOL.get(protocol)
    if known is not None:
        return MissingStorageBackendError(url, *known)
    cause = exc.__cause__ if isinstance(exc.__cause__, ImportError) else None
    module = (exc.name or (cause.name if cause is not None else None) or protocol).partition(".")[0]
    error = MissingStorageBackendError(url, "", module)
    # No checkpoint-doctor extra installs it: point at the package itself.
    error.hint = f"install it with: pip install {module}"
    return error
