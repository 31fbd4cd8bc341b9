"""Storage: the only code that talks to the local disk, fsspec and s3fs.

:func:`open_storage` turns a URL (a plain path, ``file://``, ``s3://``, ``s3a://``, ``memory://`` or
Azure's ``abfss://``/``abfs://``/``wasbs://``/``az://``, ``gs://`` or any fsspec protocol) into a :class:`Storage`: :class:`LocalStorage` for the local disk (an
``os.scandir`` walk, bounded reads, atomic writes, create-exclusive by ``link``) or
:class:`FsspecStorage` for everything else (public fsspec API; S3 with bounded timeouts and retries
and create-exclusive by ``If-None-Match: *``). Both speak in paths relative to their root and
translate every backend error into the project's exceptions, naming the URL and what to do; nothing
above this package sees an ``OSError`` or a botocore exception.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from checkpoint_doctor.reading.storage.base import Storage, first_failure
from checkpoint_doctor.reading.storage.errors import split_protocol, translate_error
from checkpoint_doctor.reading.storage.local import LocalStorage, open_local, printable_name
from checkpoint_doctor.reading.storage.options import (
    AZURE_PROTOCOLS,
    GCS_PROTOCOLS,
    S3_PROTOCOLS,
    parse_storage_options,
)
from checkpoint_doctor.reading.storage.urls import normalize_url

if TYPE_CHECKING:
    from checkpoint_doctor.reading.storage.remote import FsspecStorage


def __getattr__(name: str) -> Any:
    # The fsspec storage is imported when a remote URL is opened: a local verdict does not pay for it
    # at start-up (start-up is most of a verdict's time, see scripts/bench.py --section diagnose).
    if name == "FsspecStorage":
        from checkpoint_doctor.reading.storage.remote import FsspecStorage

        return FsspecStorage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FsspecStorage",
    "LocalStorage",
    "Storage",
    "first_failure",
    "normalize_url",
    "open_parent",
    "open_storage",
    "parse_storage_options",
    "printable_name",
    "translate_error",
]


def open_storage(url: str, storage_options: Mapping[str, Any] | None = None) -> Storage:
    """Open the storage behind a URL or local path (no request is sent).

    Raises:
        MissingDependencyError: the protocol's fsspec backend is not installed (names the extra).
        UsageError: the protocol is unknown.
        StorageError: the backend could not be set up.
    """
    options = dict(storage_options or {})
    protocol, rest = split_protocol(url)
    if protocol != "file":
        from checkpoint_doctor.redaction import remember_url_userinfo

        remember_url_userinfo(url)
    if protocol == "file":
        return open_local(url, rest)
    from checkpoint_doctor.reading.storage.remote import open_fsspec, open_s3

    if protocol in S3_PROTOCOLS:
        return open_s3(url, rest, options)
    if protocol in AZURE_PROTOCOLS:
        from checkpoint_doctor.reading.storage.clouds import open_azure

        return open_azure(url, protocol, rest, options)
    if protocol in GCS_PROTOCOLS:
        from checkpoint_doctor.reading.storage.clouds import open_gcs

        return open_gcs(url, rest, options)
    return open_fsspec(url, protocol, options)


def open_parent(url: str, storage_options: Mapping[str, Any] | None = None) -> tuple[Storage, str] | None:
    """Open the directory that holds ``url`` and return it with ``url``'s name in it; None at the
    root of a bucket or file system. A local path is made absolute first, as :func:`open_storage`
    makes it: ``checkpoint``, ``.`` and ``~/ckpt`` have a parent like ``/jobs/orders/checkpoint``
    (what lies beside a checkpoint must not depend on how its path was typed).

    Raises:
        the errors of :func:`open_storage`.
    """
    protocol, rest = split_protocol(url)
    if protocol == "file" and "://" not in url:
        url = os.path.abspath(os.path.expanduser(rest))
    parent, _, own = url.rstrip("/").rpartition("/")
    if not parent or parent.endswith((":/", ":")):
        return None
    return open_storage(parent, storage_options), own
