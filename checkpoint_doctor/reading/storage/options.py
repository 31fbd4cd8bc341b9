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
