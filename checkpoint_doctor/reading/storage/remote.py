"""Any fsspec file system (s3fs for ``s3://``/``s3a://``, ``memory://``, gcsfs...), through public
fsspec API only: ``find``, ``cat``/``cat_file`` with a byte range, ``info``, ``pipe_file``, ``rm``.

S3 is opened with bounded timeouts and retries (:data:`~checkpoint_doctor.reading.storage.options.
S3_CONFIG_DEFAULTS`) and creates exclusively with ``PutObject`` ``If-None-Match: *``.
"""

from __future__ import annotations

import base64
import hashlib
import posixpath
from collections.abc import Iterable, Mapping
from typing import Any

from checkpoint_doctor.errors import FileTooLargeError, StorageError, UsageError
from checkpoint_doctor.model import FileStat, Listing
from checkpoint_doctor.reading.storage.base import Ownership, RootedPaths
from checkpoint_doctor.reading.storage.errors import (
    error_code,
    http_status,
    missing_dependency,
    translate_error,
    translated,
)
from checkpoint_doctor.reading.storage.options import S3FS_ATTEMPTS, with_s3_defaults


class FsspecStorage(RootedPaths):
    """A directory (or key prefix) on an fsspec file system."""

    is_local = False

    def __init__(self, url: str, fs: Any, root: str, protocol: str, *, atomic_create: bool) -> None:
        self.url = url
        self.fs = fs
        self.root = root.rstrip("/") if root not in ("/", "") else root
        self.protocol = protocol
        self.atomic_create = atomic_create

    def child(self, rel: str) -> FsspecStorage:
        """Return the storage rooted at a subdirectory (same client)."""
        return FsspecStorage(
            self.url_of(rel), self.fs, self.full_path(rel), self.protocol, atomic_create=self.atomic_create
        )

    def resolved_root(self) -> tuple[str, str]:
        """Return the protocol and the root path (``bucket/prefix`` on S3)."""
        return self.protocol, self.root.strip("/")

    # ----------------------------------------------------------------------------- listing
    def _relative(self, path: str) -> str | None:
        norm = path.rstrip("/")
        for prefix in (self.root.rstrip("/") + "/", self.root.strip("/") + "/"):
            if norm.startswith(prefix):
                return norm[len(prefix) :]
        return None

    def list_tree(self, *, missing_ok: bool = False) -> Listing:
        """List every file below the root in one recursive ``find`` (s3fs: one ListObjectsV2 per
        1,000 keys)."""
        with translated(self.url, "list"):
            parent, _, name = self.root.rstrip("/").rpartition("/")
            if missing_ok and parent:
                # s3fs's find probes a prefix that lists empty (HEAD, then a listing); asked with a
                # prefix below the parent, it lists the same keys and does not.
                below = self.root.rstrip("/") + "/"
                found = {
                    path: info
                    for path, info in self.fs.find(
                        parent, withdirs=True, detail=True, prefix=name + "/"
                    ).items()
                    if path.startswith(below)
                }
            else:
                found = self.fs.find(self.root, withdirs=True, detail=True)
            files: list[FileStat] = []
            dirs: set[str] = set()
            for path, info in found.items():
                rel = self._relative(path)
                if not rel:
                    continue
                if info.get("type") == "directory":
                    dirs.add(rel)
                else:
                    files.append(FileStat(rel, int(info.get("size") or 0), _mtime_ms(info), _etag(info)))
            # Object stores have no directories: derive them from the keys so that prefixes and
            # real directories look alike to the layer above.
            complete: set[str] = set()  # directories whose ancestors are all in ``dirs``
            for path in [*(f.path for f in files), *dirs]:
                parent = posixpath.dirname(path)
                while parent and parent not in complete:
                    dirs.add(parent)
                    complete.add(parent)
                    parent = posixpath.dirname(parent)
            # An empty listing: fs.info raises FileNotFoundError when the root is missing (a prefix
            # with no key below it), and tells a file from an empty directory.
            if not files and not dirs and missing_ok:
                return Listing((), ())
            if not files and not dirs and self.fs.info(self.root).get("type") != "directory":
                raise NotADirectoryError(self.root)
            files.sort(key=lambda f: f.path)
            return Listing(tuple(files), tuple(sorted(dirs)))

    def subdirs(self, rel: str = "") -> list[str]:
        """Return the prefixes directly below a path: one listing with a delimiter (s3fs ``ls``)."""
        path = self.full_path(rel)
        with translated(self.url_of(rel), "list"):
            try:
                entries = self.fs.ls(path, detail=True, refresh=True)
            except FileNotFoundError:
                return []
            base = path.strip("/") + "/"
            names = []
            for info in entries:
                name = str(info.get("name", "")).strip("/")
                if info.get("type") == "directory" and name.startswith(base):
                    names.append(name[len(base) :])
            return sorted(n for n in names if n and "/" not in n)

    # ----------------------------------------------------------------------------- reading
    def read(self, rel: str, *, max_bytes: int | None = None) -> bytes:
        """Return the bytes of one file; with ``max_bytes``, one ranged GET of ``max_bytes + 1``."""
        url = self.url_of(rel)
        with translated(url, "read"):
            if max_bytes is None:
                return bytes(self.fs.cat_file(self.full_path(rel)))
            try:
                data = bytes(self.fs.cat_file(self.full_path(rel), start=0, end=max_bytes + 1))
            except Exception as exc:  # s3fs raises an OSError, adlfs the SDK's HttpResponseError
                if not _empty_object(exc):
                    raise
                data = b""
        if len(data) > max_bytes:
            raise FileTooLargeError(url, len(data), max_bytes)
        return data

    def _read_all(
        self, rels: Iterable[str], max_bytes: int | None, *, head: bool
    ) -> dict[str, bytes | StorageError]:
        # One ``cat``: on s3fs the GETs (ranged when bounded) run concurrently.
        paths = list(dict.fromkeys(rels))
        out: dict[str, bytes | StorageError] = {}
        if not paths:
            return out
        full = [self.full_path(r) for r in paths]
        ranged: dict[str, Any] = {}
        if max_bytes is not None:
            ranged = {"start": 0, "end": max_bytes if head else max_bytes + 1}
        with translated(self.url, "read"):
            if self.protocol == "az":
                # adlfs's cat reads one blob after another (a sync loop of cat_file): its cat_ranges
                # is fsspec's, which sends them together (one round trip for a batch, as on S3).
                starts = [ranged.get("start")] * len(full)
                ends = [ranged.get("end")] * len(full)
                results: Any = dict(
                    zip(full, self.fs.cat_ranges(full, starts, ends, on_error="return"), strict=True)
                )
            else:
                results = self.fs.cat(full, on_error="return", **ranged)
        if not isinstance(results, Mapping):
            results = {full[0]: results}
        by_norm = {k.strip("/"): v for k, v in results.items()}
        for rel, path in zip(paths, full, strict=True):
            value = results.get(path, by_norm.get(path.strip("/")))
            url = self.url_of(rel)
            if isinstance(value, BaseException) and _empty_object(value):
                out[rel] = b""
            elif isinstance(value, BaseException) or value is None:
                failure = value if isinstance(value, BaseException) else FileNotFoundError(path)
                out[rel] = translate_error(failure, url, "read")
            elif max_bytes is not None and len(value) > max_bytes and not head:
                out[rel] = FileTooLargeError(url, len(value), max_bytes)
            else:
                out[rel] = bytes(value)
        return out

    def stat(self, rel: str) -> FileStat | None:
        """Return the current stat of a file, or None (one HEAD on S3, never from a cache)."""
        path = self.full_path(rel)
        with translated(self.url_of(rel), "stat"):
            self.fs.invalidate_cache(path)
            try:
                info = self.fs.info(path)
            except FileNotFoundError:
                return None
            if info.get("type") == "directory":
                return None
            return FileStat(rel, int(info.get("size") or 0), _mtime_ms(info), _etag(info))

    def exists(self, rel: str) -> bool:
        """Return whether a file or a non-empty prefix exists at the path."""
        path = self.full_path(rel)
        with translated(self.url_of(rel), "stat"):
            self.fs.invalidate_cache(path)
            return bool(self.fs.exists(path))

    # ----------------------------------------------------------------------------- changing
    def write_exclusive(
        self,
        rel: str,
        data: bytes,
        *,
        like_siblings: bool = False,
        owner: Any = None,
        keep_temp: bool = False,
    ) -> None:
        """Create a file that must not exist yet: ``pipe_file(mode="create")`` (an object has no
        owner or mode of its own: ``like_siblings`` and ``owner`` change nothing).

        On S3 that is one ``PutObject`` with ``If-None-Match: *``, which the service applies
        atomically (of two racing creators one gets 412 PreconditionFailed) for objects under
        100 MiB (s3fs uploads larger ones in parts, without the condition). Other fsspec backends
        check, then write (``atomic_create`` is False for them).
        """
        path = self.full_path(rel)
        with translated(self.url_of(rel), "write"):
            self.fs.pipe_file(path, data, mode="create")
            self.fs.invalidate_cache(path)

    def created_from_temp(self, rel: str) -> bool | None:
        """An object has no inode and its create no temp: who created it cannot be told."""
        return None

    def write(self, rel: str, data: bytes, *, private: bool = False) -> None:
        """Create or replace a file: one PUT (``private``: the bucket's policy decides who reads)."""
        path = self.full_path(rel)
        with translated(self.url_of(rel), "write"):
            self.fs.pipe_file(path, data)
            self.fs.invalidate_cache(path)

    def delete(self, rel: str) -> None:
        """Delete one file (an object store deletes a missing key silently: checked first)."""
        path = self.full_path(rel)
        with translated(self.url_of(rel), "delete"):
            if not self.fs.exists(path):
                raise FileNotFoundError(path)
            self.fs.rm_file(path)
            self.fs.invalidate_cache(path)

    def delete_tree(self, rel: str) -> None:
        """Delete every key below a prefix."""
        path = self.full_path(rel)
        with translated(self.url_of(rel), "delete"):
            self.fs.rm(path, recursive=True)
            self.fs.invalidate_cache(path)

    def makedirs(self, rel: str) -> None:
        """Create a directory (a no-op on object stores)."""
        with translated(self.url_of(rel), "create"):
            self.fs.makedirs(self.full_path(rel), exist_ok=True)

    # An object store has no directories, settable times, owners or links (see Storage): a prefix
    # is gone with its last key, and a restored object's ETag is that of the same bytes.

    def remove_dir(self, rel: str) -> None:
        """Nothing to do: a prefix is gone with its last key."""

    def set_mtime(self, rel: str, mtime_ms: int) -> None:
        """Nothing to do: an object's time is when it was written."""

    def ownership(self, rel: str) -> Ownership | None:
        """An object has no mode or owner of its own."""
        return None

    def set_ownership(self, rel: str, owner: Ownership) -> None:
        """Nothing to do: an object has no mode or owner of its own."""

    def link_target(self, rel: str) -> str | None:
        """An object is never a link."""
        return None

    def read_link_target(self, rel: str, target: str, *, max_bytes: int | None = None) -> bytes:
        """Refused: an object store has no links."""
        raise StorageError(self.url_of(rel), "read", "an object store has no symbolic links")

    def make_link(self, rel: str, target: str) -> None:
        """Refused: an object store has no links."""
        raise StorageError(self.url_of(rel), "link", "an object store has no symbolic links")

    def temps_beside(self, rel: str) -> list[str]:
        """None: a write to an object store is one request, it leaves no temp file."""
        return []


def _empty_object(exc: BaseException) -> bool:
    """Whether a ranged read from byte 0 failed only because the object is empty (S3 and Azure
    answer a range on a 0-byte object with 416 InvalidRange, GCS with 416)."""
    return error_code(exc) == "InvalidRange" or http_status(exc) == 416


def _mtime_ms(info: Mapping[str, Any]) -> int | None:
    for key in ("mtime", "LastModified", "last_modified", "created"):
        value = info.get(key)
        if value is None:
            continue
        if hasattr(value, "timestamp"):
            return int(value.timestamp() * 1000)
        try:
            return int(float(value) * 1000)
        except (TypeError, ValueError, OverflowError):
            continue
    return None


#: The MD5 of no bytes, base64 as Azure and GCS give theirs.
_EMPTY_MD5 = base64.b64encode(hashlib.md5(b"", usedforsecurity=False).digest()).decode("ascii")


def _etag(info: Mapping[str, Any]) -> str | None:
    """Return what tells an object's bytes: on GCS and Azure the content MD5 the service keeps
    (``md5Hash``; ``content_settings.content_md5``), since their ETag changes with every write of
    the same bytes (a generation, an opaque version) and a file an undo put back must fit the plan
    again as on S3, whose ETag of a single PUT is the MD5; else the ETag. Azure keeps no MD5 for a
    blob written in blocks without one (Hadoop's ABFS driver): its ETag stands, and a plan made
    before an apply and undo of it no longer fits (refused, never wrongly applied)."""
    md5 = info.get("md5Hash")
    settings = info.get("content_settings")  # the SDK's ContentSettings (a DictMixin) or a dict
    if not md5 and settings is not None and hasattr(settings, "get"):
        if settings.get("content_md5"):
            md5 = base64.b64encode(bytes(settings["content_md5"])).decode("ascii")
        elif not info.get("size"):
            md5 = _EMPTY_MD5  # Azure keeps none for an empty blob: its bytes are known all the same
    if md5:
        return str(md5)
    value = info.get("ETag") or info.get("etag")
    return str(value).strip('"') if value else None


def open_s3(url: str, rest: str, options: Mapping[str, Any]) -> FsspecStorage:
    """Open ``s3://bucket/prefix`` (or ``s3a://``) with bounded timeouts and retries."""
    try:
        import s3fs
    except ImportError as exc:
        raise missing_dependency(url, exc) from exc
    with translated(url, "open"):
        fs = s3fs.S3FileSystem(**with_s3_defaults(options))
    # s3fs's own retry loop wraps botocore's: one attempt, so that botocore's retries are the
    # whole budget (fsspec may hand back a cached instance: setting it again is harmless).
    fs.retries = S3FS_ATTEMPTS
    return FsspecStorage(f"s3://{rest}".rstrip("/"), fs, rest.strip("/"), "s3", atomic_create=True)


def open_fsspec(url: str, protocol: str, options: Mapping[str, Any]) -> FsspecStorage:
    """Open any other protocol fsspec knows (``fsspec.core.url_to_fs``)."""
    import fsspec
    from fsspec.core import url_to_fs

    if protocol not in fsspec.available_protocols():
        raise UsageError(
            f"unknown storage protocol {protocol!r} in {url}",
            hint="use a local path, s3:// or another protocol fsspec knows",
        )
    with translated(url, "open"):
        fs, root = url_to_fs(url, **options)
    return FsspecStorage(url.rstrip("/") or url, fs, root, protocol, atomic_create=False)
