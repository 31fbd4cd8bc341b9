"""Storage options: ``--storage-option key=value`` parsing, and the network defaults for S3.

Errors name the option by its position and key only, never its value: an operator pastes a secret
into ``--storage-option`` as readily as an endpoint, and error output ends up in tickets and logs.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from checkpoint_doctor.errors import UsageError

#: botocore ``Config`` for S3 unless the operator sets these keys (an endpoint that
#: accepts connections and never answers hung an inspect for 406 s with s3fs's defaults: five s3fs
#: attempts of five botocore attempts, each waiting out a 15 s read timeout). With these, one request
#: fails after at most 2 x (5 s to connect + 10 s without a byte) plus a backoff under a second:
#: an operator gets an answer in about 21 s on a dead endpoint, 1 s on a refused connection.
#: S3 answers a healthy request in well under a second; ``read_timeout`` bounds the wait for each
#: chunk of the response, not the whole transfer, so large files are unaffected.
S3_CONFIG_DEFAULTS: dict[str, Any] = {
    "connect_timeout": 5,
    "read_timeout": 10,
    "retries": {"total_max_attempts": 2, "mode": "standard"},
}
#: s3fs retries on top of botocore (``S3FileSystem.retries``, 5 by default): one attempt, so the
#: retry budget is botocore's alone and set by ``config_kwargs.retries``.
S3FS_ATTEMPTS = 1
S3_PROTOCOLS = ("s3", "s3a")


def parse_storage_options(pairs: Iterable[str]) -> dict[str, Any]:
    """Turn ``key=value`` strings into fsspec storage options.

    ``endpoint_url`` (and ``region_name``) go into ``client_kwargs`` as s3fs expects; ``true``/
    ``false`` become booleans. A dotted key sets a nested option, and its value becomes an int or a
    float when it reads as one: ``config_kwargs.connect_timeout=2`` and
    ``config_kwargs.retries.total_max_attempts=1`` give
    ``{"config_kwargs": {"connect_timeout": 2, "retries": {"total_max_attempts": 1}}}`` (botocore's
    ``Config``).

    Raises:
        UsageError: when an item has no ``=`` or an empty key part, or a dotted key clashes with a
            plain one; the message names the item's position and key, never its value.
    """
    options: dict[str, Any] = {}
    for number, pair in enumerate(pairs, start=1):
        key, sep, value = pair.partition("=")
        if not sep or not key or any(not part for part in key.split(".")):
            if not sep:
                why = "it has no '=' (its text is not shown: it may be a secret)"
            elif not key:
                why = "its key is empty"
            else:
                why = f"key {key!r} has an empty part"
            raise UsageError(
                f"--storage-option number {number} is not key=value: {why}",
                hint="e.g. --storage-option endpoint_url=http://127.0.0.1:9000",
            )
        parsed: Any = value
        if value.lower() in ("true", "false"):
            parsed = value.lower() == "true"
        elif "." in key:
            parsed = _number(value)
        if key in ("endpoint_url", "region_name"):
            options.setdefault("client_kwargs", {})[key] = parsed
            continue
        *parents, leaf = key.split(".")
        target = options
        for depth, part in enumerate(parents, start=1):
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                clash = ".".join(parents[:depth])
                raise UsageError(
                    f"--storage-option {key} clashes with --storage-option {clash}, which sets a plain value",
                    hint=f"give {clash} either as one value or as dotted keys, not both",
                )
        if isinstance(target.get(leaf), dict):
            raise UsageError(
                f"--storage-option {key} clashes with dotted keys below {key}",
                hint=f"give {key} either as one value or as dotted keys, not both",
            )
        target[leaf] = parsed
    return options


def _number(value: str) -> Any:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            continue
    return value


def with_s3_defaults(options: Mapping[str, Any]) -> dict[str, Any]:
    """Return S3 storage options with :data:`S3_CONFIG_DEFAULTS` under what the operator set. Pure.

    A value the operator gave wins, key by key (``config_kwargs.read_timeout=60`` keeps the default
    connect timeout and retries); ``config_kwargs`` given as something other than a mapping is left
    alone for s3fs to judge.
    """
    out = dict(options)
    config = out.get("config_kwargs", {})
    if not isinstance(config, Mapping):
        return out
    merged = copy.deepcopy(S3_CONFIG_DEFAULTS)
    for key, value in config.items():
        if key == "retries" and isinstance(value, Mapping):
            merged["retries"] = dict(value)
        else:
            merged[key] = value
    out["config_kwargs"] = merged
    return out


#: Azure Blob Storage and ADLS Gen2 through adlfs: every scheme Spark prints for them (Hadoop's ABFS
#: driver ``abfs``/``abfss``, the older WASB driver ``wasb``/``wasbs``) and fsspec's own ``az``.
AZURE_PROTOCOLS = ("abfs", "abfss", "az", "wasb", "wasbs")
#: Google Cloud Storage through gcsfs (Hadoop's GCS connector prints ``gs``).
GCS_PROTOCOLS = ("gs", "gcs")

#: adlfs opens its Azure SDK client with the SDK's defaults: storage's ExponentialRetry (3 retries
#: after 15 s, 18 s, 24 s plus jitter), 20 s to connect, 60 s without a byte; against Azurite with
#: its port closed a diagnose failed only after 177 s. As on S3, one retry, 5 s to connect and 10 s
#: without a byte of the answer (``read_timeout`` is per chunk: large blobs are unaffected), a
#: backoff of a second: about 31 s at worst on an endpoint that never answers, 1 s when refused.
#: ``connection_timeout`` and ``read_timeout`` are adlfs's own options; ``retry_total`` (the SDK's
#: name) is taken out before adlfs sees it.
AZURE_CLIENT_DEFAULTS: dict[str, Any] = {"connection_timeout": 5, "read_timeout": 10, "retry_total": 1}
AZURE_RETRY_BACKOFF_S = 1
#: gcsfs sends every request with aiohttp and ``timeout=requests_timeout``, None by default: no
#: timeout at all, so an endpoint that never answers hangs forever; and it tries each request six
#: times (gcsfs.retry.retry_request, backoff 1 + 2 + 4 + 8 + 16 s). Here: 5 s to connect, 10 s
#: without a byte, two attempts (``retries``, gcsfs's name for the attempts): about 32 s at worst.
GCS_CONNECT_TIMEOUT_S = 5
GCS_READ_TIMEOUT_S = 10
GCS_ATTEMPTS = 2


#: Options that are numbers: ``--storage-option read_timeout=30`` reads as the text ``30``.
_AZURE_NUMBERS = ("connection_timeout", "read_timeout", "timeout", "retry_total", "max_concurrency")
_GCS_NUMBERS = ("requests_timeout", "retries", "timeout")


def _numbers(options: dict[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    for key in keys:
        if isinstance(options.get(key), str):
            options[key] = _number(options[key])
    return options


def with_azure_defaults(options: Mapping[str, Any]) -> dict[str, Any]:
    """Return adlfs storage options with :data:`AZURE_CLIENT_DEFAULTS` under what the operator set
    (numbers given as text made numbers). Pure."""
    return _numbers({**AZURE_CLIENT_DEFAULTS, **options}, _AZURE_NUMBERS)


def with_gcs_defaults(options: Mapping[str, Any]) -> dict[str, Any]:
    """Return gcsfs storage options with the bounded timeouts and attempts under what the operator
    set (``requests_timeout=SECONDS`` is gcsfs's own: a total per request). Pure."""
    out = dict(options)
    out.setdefault("retries", GCS_ATTEMPTS)
    return _numbers(out, _GCS_NUMBERS)
