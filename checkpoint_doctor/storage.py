"""The only module that talks to storage (fsspec, s3fs, the local disk).

A :class:`CheckpointStore` is rooted at one URL (a plain path, ``file://``, ``memory://``, ``s3://``
or any fsspec protocol) and speaks in paths relative to that root, POSIX style. It lists a whole tree
in one recursive listing (s3fs ``find``: one ListObjectsV2 request per 1,000 keys; a plain
``os.scandir`` walk on local disk, which is several times faster than fsspec's per-entry ``info``),
reads files (concurrently where the backend is asynchronous), and makes the few changes a repair
needs. Every backend error is translated here into the project's exceptions, naming the URL and what
to do; nothing above this module sees an ``OSError`` or a botocore exception.
"""

from __future__ import annotations

import contextlib
import hashlib
import operator
import os
import posixpath
import stat as stat_mod
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from checkpoint_doctor.errors import (
    AccessDeniedError,
    CheckpointNotFoundError,
    CredentialsError,
    EndpointUnreachableError,
    MissingDependencyError,
    NotADirectoryStorageError,
    StorageError,
    TargetExistsError,
    UsageError,
)
from checkpoint_doctor.model import DirEntries, FileStat, Listing

_PATH = operator.attrgetter("path")
_EXTRA_FOR_PROTOCOL = {"s3": ("s3", "s3fs"), "s3a": ("s3", "s3fs"), "gs": ("gcs", "gcsfs")}
_NO_CREDENTIALS = ("NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError")
_REJECTED_CREDENTIALS = (
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "InvalidToken",
    "ExpiredToken",
    "TokenRefreshRequired",
    "InvalidClientTokenId",
)
_UNREACHABLE = (
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ClientConnectorError",
    "ServerDisconnectedError",
    "ConnectionError",
    "ConnectionRefusedError",
    "gaierror",
    "TimeoutError",
)


def parse_storage_options(pairs: Iterable[str]) -> dict[str, Any]:
    """Turn ``key=value`` strings into fsspec storage options.

    ``endpoint_url`` (and ``region_name``) go into ``client_kwargs`` as s3fs expects; ``true``/
    ``false`` become booleans. A dotted key sets a nested option, and its value becomes an int or a
    float when it reads as one: ``config_kwargs.connect_timeout=2`` and
    ``config_kwargs.retries.total_max_attempts=1`` give
    ``{"config_kwargs": {"connect_timeout": 2, "retries": {"total_max_attempts": 1}}}`` (botocore's
    ``Config``: fail fast on an unreachable endpoint).

    Raises:
        UsageError: when an item has no ``=``, or a dotted key clashes with a plain one.
    """
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key or any(not part for part in key.split(".")):
            raise UsageError(
                f"storage option {pair!r} is not key=value", hint="e.g. --storage-option endpoint_url=http://127.0.0.1:9000"
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
        for part in parents:
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise UsageError(f"storage option {pair!r} clashes with {part}={target!r}")
        target[leaf] = parsed
    return options


def _number(value: str) -> Any:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            continue
    return value


def _is_local(fs: Any) -> bool:
    return type(fs).__name__ == "LocalFileSystem"


def _class_names(exc: BaseException) -> set[str]:
    names: set[str] = set()
    current: BaseException | None = exc
    seen = 0
    while current is not None and seen < 8:
        names.update(c.__name__ for c in type(current).__mro__)
        current = current.__cause__ or current.__context__
        seen += 1
    return names


def _error_code(exc: BaseException) -> str | None:
    """Return the service error code (botocore ``ClientError``) found in the exception chain."""
    current: BaseException | None = exc
    seen = 0
    while current is not None and seen < 8:
        response = getattr(current, "response", None)
        if isinstance(response, Mapping):
            code = response.get("Error", {}).get("Code")
            if code:
                return str(code)
        current = current.__cause__ or current.__context__
        seen += 1
    return None


def translate_error(exc: BaseException, url: str, op: str) -> StorageError:
    """Map a backend exception to the project's :class:`StorageError` family."""
    names = _class_names(exc)
    text = str(exc) or type(exc).__name__
    if names & set(_NO_CREDENTIALS) or "Unable to locate credentials" in text:
        return CredentialsError(
            url,
            op,
            "no credentials found",
            hint="set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE, or pass --storage-option key=... secret=...",
        )
    code = _error_code(exc)
    if code in _REJECTED_CREDENTIALS:
        return CredentialsError(
            url,
            op,
            f"the credentials were rejected ({code})",
            hint="check the access key, secret and session token (AWS_* variables, AWS_PROFILE or --storage-option key=... secret=...)",
        )
    if isinstance(exc, FileNotFoundError):
        if code == "NoSuchBucket":
            return CheckpointNotFoundError(url, op, "no such bucket", hint="check the bucket name and the endpoint")
        return CheckpointNotFoundError(url, op, "no such file or directory", hint="check the path")
    if isinstance(exc, NotADirectoryError):
        return NotADirectoryStorageError(
            url, op, "it is a file, not a directory", hint="pass the checkpoint directory"
        )
    if isinstance(exc, PermissionError) or "AccessDenied" in text or "Forbidden" in text:
        return AccessDeniedError(
            url, op, "access denied", hint="check the permissions or bucket policy for this path"
        )
    if names & set(_UNREACHABLE):
        return EndpointUnreachableError(
            url,
            op,
            f"endpoint unreachable ({text.splitlines()[0][:160]})",
            hint="check the network and --storage-option endpoint_url",
        )
    if isinstance(exc, FileExistsError):
        return TargetExistsError(url, op, "the target already exists")
    first = text.splitlines()[0][:200] if text else type(exc).__name__
    return StorageError(url, op, f"{type(exc).__name__}: {first}")


@contextlib.contextmanager
def _translated(url: str, op: str) -> Iterator[None]:
    try:
        yield
    except StorageError:
        raise
    except ImportError as exc:
        raise _missing_dependency(url, exc) from exc
    except Exception as exc:
        raise translate_error(exc, url, op) from exc


def _missing_dependency(url: str, exc: ImportError) -> MissingDependencyError:
    """Name the URL, the package that is missing and how to install it."""
    protocol = _split_protocol(url)[0]
    known = _EXTRA_FOR_PROTOCOL.get(protocol)
    if known is not None:
        return MissingDependencyError(url, *known)
    cause = exc.__cause__ if isinstance(exc.__cause__, ImportError) else None
    module = (exc.name or (cause.name if cause is not None else None) or protocol).partition(".")[0]
    error = MissingDependencyError(url, "", module)
    # No checkpoint-doctor extra installs it: point at the package itself.
    error.hint = f"install it with: pip install {module}"
    return error


def _split_protocol(url: str) -> tuple[str, str]:
    if "://" in url:
        protocol, _, rest = url.partition("://")
        return protocol.lower(), rest
    return "file", url


@contextlib.contextmanager
def _local_temp(final: str, data: bytes) -> Iterator[str]:
    """Write ``data`` to a hidden, fsync'ed temp file beside ``final``; it goes whatever fails."""
    os.makedirs(os.path.dirname(final), exist_ok=True)
    tmp = os.path.join(os.path.dirname(final), f".{os.path.basename(final)}.{uuid.uuid4()}.cdtmp")
    try:
        with open(tmp, "xb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        yield tmp
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


class CheckpointStore:
    """Storage rooted at one URL; every path argument is relative to that root, POSIX style."""

    def __init__(self, url: str, fs: Any, root: str) -> None:
        self.url = url
        self.fs = fs
        self.root = root.rstrip("/") if root not in ("/", "") else root
        self.protocol = _split_protocol(url)[0]
        self.is_local = _is_local(fs)

    # ----------------------------------------------------------------------------- paths
    def full_path(self, rel: str) -> str:
        """Return the backend path of a relative path."""
        if not rel:
            return self.root
        return f"{self.root}/{rel}" if self.root != "/" else f"/{rel}"

    def url_of(self, rel: str) -> str:
        """Return the user-facing URL of a relative path."""
        if not rel:
            return self.url
        return f"{self.url.rstrip('/')}/{rel}"

    def child(self, rel: str) -> CheckpointStore:
        """Return a store rooted at a subdirectory."""
        return CheckpointStore(self.url_of(rel), self.fs, self.full_path(rel))

    # ----------------------------------------------------------------------------- listing
    def _walk_local(self) -> Listing:
        # The hot loop of a local inspect: one scandir per directory and one stat per file (the
        # DirEntry caches it); rows per directory are sorted and split into columns in C.
        columns: list[DirEntries] = []
        dirs: list[str] = []
        stack = [(self.root, "")]
        while stack:
            path, rel = stack.pop()
            rows: list[tuple[str, int, int]] = []
            add = rows.append
            try:
                it = os.scandir(path)
            except FileNotFoundError:
                if not rel:
                    raise
                continue  # a subdirectory removed while we walk (purge, state maintenance)
            with it:
                for entry in it:
                    # is_dir/is_file come from the directory entry's type (no syscall); only
                    # regular files are stat'ed, symlinks and sockets are not files of a checkpoint.
                    if entry.is_dir(follow_symlinks=False):
                        child = f"{rel}/{entry.name}" if rel else entry.name
                        dirs.append(child)
                        stack.append((entry.path, child))
                    elif entry.is_file(follow_symlinks=False):
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except FileNotFoundError:
                            # Renamed or deleted between readdir and stat (a live writer's temp
                            # file): it is not part of this listing.
                            continue
                        add((entry.name, st.st_size, st.st_mtime_ns))
            if rows:
                rows.sort()
                names, sizes, mtimes_ns = zip(*rows, strict=True)
                columns.append(DirEntries(rel, names, sizes, tuple([m // 1_000_000 for m in mtimes_ns])))
        columns.sort(key=lambda d: d.path)
        dirs.sort()
        return Listing(dirs=tuple(dirs), columns=tuple(columns))

    def _walk_fsspec(self) -> Listing:
        found = self.fs.find(self.root, withdirs=True, detail=True)
        files: list[FileStat] = []
        dirs: list[str] = []
        prefix = self.root.rstrip("/") + "/"
        for path, info in found.items():
            norm = path.rstrip("/")
            if norm == self.root.rstrip("/"):
                continue
            if not norm.startswith(prefix.lstrip("/")) and not norm.startswith(prefix):
                continue
            rel = norm[len(prefix) :] if norm.startswith(prefix) else norm[len(prefix.lstrip("/")) :]
            if info.get("type") == "directory":
                dirs.append(rel)
            else:
                files.append(
                    FileStat(rel, int(info.get("size") or 0), _mtime_ms(info), _etag(info))
                )
        # Object stores have no directories: derive them from the keys so empty-looking prefixes
        # and real directories look alike to the layer above.
        derived = {posixpath.dirname(f.path) for f in files}
        while derived:
            extra = {d for d in derived if d}
            dirs.extend(extra - set(dirs))
            derived = {posixpath.dirname(d) for d in extra} - set(dirs)
        files.sort(key=lambda f: f.path)
        return Listing(tuple(files), tuple(sorted(set(dirs))))

    def list_tree(self) -> Listing:
        """List every file under the root in one recursive listing.

        Raises:
            CheckpointNotFoundError: the root does not exist.
            NotADirectoryStorageError: the root is a file.
            StorageError: any other backend failure (translated).
        """
        with _translated(self.url, "list"):
            if self.is_local:
                if not os.path.exists(self.root):
                    raise FileNotFoundError(self.root)
                if not os.path.isdir(self.root):
                    raise NotADirectoryError(self.root)
                return self._walk_local()
            listing = self._walk_fsspec()
            if not listing.files and not listing.dirs:
                self._check_root_is_directory()
            return listing

    def _check_root_is_directory(self) -> None:
        # Raises FileNotFoundError when missing (an object store prefix with no keys below it).
        info = self.fs.info(self.root)
        if info.get("type") != "directory":
            raise NotADirectoryError(self.root)

    # ----------------------------------------------------------------------------- reading
    def read(self, rel: str) -> bytes:
        """Return the bytes of one file.

        Raises:
            StorageError: translated backend failure (CheckpointNotFoundError if missing).
        """
        with _translated(self.url_of(rel), "read"):
            if self.is_local:
                with open(self.full_path(rel), "rb") as fh:
                    return fh.read()
            return bytes(self.fs.cat_file(self.full_path(rel)))

    def read_many(self, rels: Iterable[str]) -> dict[str, bytes | StorageError]:
        """Read several files; an unreadable one maps to its translated error instead of raising.

        On asynchronous backends (s3fs) the GETs run concurrently in one call.
        """
        paths = list(dict.fromkeys(rels))
        out: dict[str, bytes | StorageError] = {}
        if not paths:
            return out
        if self.is_local:
            for rel in paths:
                try:
                    out[rel] = self.read(rel)
                except StorageError as exc:
                    out[rel] = exc
            return out
        full = [self.full_path(r) for r in paths]
        with _translated(self.url, "read"):
            results = self.fs.cat(full, on_error="return")
        if not isinstance(results, Mapping):
            results = {full[0]: results}
        by_norm = {k.rstrip("/").lstrip("/"): v for k, v in results.items()}
        for rel, path in zip(paths, full, strict=True):
            value = results.get(path, by_norm.get(path.lstrip("/")))
            if isinstance(value, BaseException) or value is None:
                failure = value if isinstance(value, BaseException) else FileNotFoundError(path)
                out[rel] = translate_error(failure, self.url_of(rel), "read")
            else:
                out[rel] = bytes(value)
        return out

    def stat(self, rel: str) -> FileStat | None:
        """Return the current stat of a file, or None if it does not exist."""
        with _translated(self.url_of(rel), "stat"):
            if self.is_local:
                try:
                    st = os.stat(self.full_path(rel))
                except FileNotFoundError:
                    return None
                if not stat_mod.S_ISREG(st.st_mode):
                    return None
                return FileStat(rel, st.st_size, st.st_mtime_ns // 1_000_000)
            try:
                self.fs.invalidate_cache(self.full_path(rel))
                info = self.fs.info(self.full_path(rel))
            except FileNotFoundError:
                return None
            if info.get("type") == "directory":
                return None
            return FileStat(rel, int(info.get("size") or 0), _mtime_ms(info), _etag(info))

    def exists(self, rel: str) -> bool:
        """Return whether a file or directory exists at the relative path."""
        with _translated(self.url_of(rel), "stat"):
            if self.is_local:
                return os.path.exists(self.full_path(rel))
            self.fs.invalidate_cache(self.full_path(rel))
            return bool(self.fs.exists(self.full_path(rel)))

    # ----------------------------------------------------------------------------- changing
    def write_exclusive(self, rel: str, data: bytes) -> None:
        """Create a file that must not exist yet, atomically where the backend allows.

        Local disk: write a hidden temp file in the same directory, fsync, then ``os.link`` it to
        the final name (fails if the name exists) and remove the temp: never a partial file under
        the final name. S3: ``PutObject`` with ``If-None-Match: *`` (s3fs ``mode="create"``).

        Raises:
            TargetExistsError: the file already exists.
            StorageError: any other failure.
        """
        with _translated(self.url_of(rel), "write"):
            if self.is_local:
                final = self.full_path(rel)
                with _local_temp(final, data) as tmp:
                    try:
                        os.link(tmp, final)
                    except FileExistsError:
                        raise
                    except OSError:
                        # No hard links here (some network or FAT file systems): check, then rename.
                        if os.path.lexists(final):
                            raise FileExistsError(final) from None
                        os.replace(tmp, final)
                return
            path = self.full_path(rel)
            try:
                self.fs.pipe_file(path, data, mode="create")
            except TypeError:
                # Backends without mode= (older fsspec): best effort exists-then-write.
                if self.fs.exists(path):
                    raise FileExistsError(path) from None
                self.fs.pipe_file(path, data)
            self.fs.invalidate_cache(path)

    def write(self, rel: str, data: bytes) -> None:
        """Create or replace a file atomically (used only for tool-owned files: journal, backups).

        Local disk: temp file, fsync, ``os.replace``. Object stores: one PUT.

        Raises:
            StorageError: translated failure.
        """
        with _translated(self.url_of(rel), "write"):
            if self.is_local:
                final = self.full_path(rel)
                with _local_temp(final, data) as tmp:
                    os.replace(tmp, final)
                return
            path = self.full_path(rel)
            self.fs.pipe_file(path, data)
            self.fs.invalidate_cache(path)

    def delete(self, rel: str) -> None:
        """Delete one file.

        Raises:
            StorageError: translated failure (CheckpointNotFoundError if it is already gone).
        """
        with _translated(self.url_of(rel), "delete"):
            if self.is_local:
                os.unlink(self.full_path(rel))
                return
            path = self.full_path(rel)
            if not self.fs.exists(path):
                raise FileNotFoundError(path)
            self.fs.rm_file(path)
            self.fs.invalidate_cache(path)

    def delete_tree(self, rel: str) -> None:
        """Delete a directory and everything below it (used only on tool-owned locations)."""
        with _translated(self.url_of(rel), "delete"):
            path = self.full_path(rel)
            if self.is_local:
                import shutil

                shutil.rmtree(path)
                return
            self.fs.rm(path, recursive=True)
            self.fs.invalidate_cache(path)

    def makedirs(self, rel: str) -> None:
        """Create a directory (no-op on object stores)."""
        with _translated(self.url_of(rel), "create"):
            self.fs.makedirs(self.full_path(rel), exist_ok=True)


def _mtime_ms(info: Mapping[str, Any]) -> int | None:
    for key in ("mtime", "LastModified", "last_modified", "created"):
        value = info.get(key)
        if value is None:
            continue
        if hasattr(value, "timestamp"):
            return int(value.timestamp() * 1000)
        try:
            return int(float(value) * 1000)
        except (TypeError, ValueError):
            continue
    return None


def _etag(info: Mapping[str, Any]) -> str | None:
    value = info.get("ETag") or info.get("etag")
    return str(value).strip('"') if value else None


def sha256_hex(data: bytes) -> str:
    """Return the hex sha256 of bytes (used for backups and fingerprints)."""
    return hashlib.sha256(data).hexdigest()


def open_store(url: str, storage_options: Mapping[str, Any] | None = None) -> CheckpointStore:
    """Open the storage behind a URL or local path.

    Raises:
        MissingDependencyError: the protocol's fsspec backend is not installed (names the extra).
        UsageError: the protocol is unknown.
        StorageError: the backend could not be set up.
    """
    import fsspec

    options = dict(storage_options or {})
    protocol, rest = _split_protocol(url)
    if protocol == "s3a":
        protocol = "s3"
    if protocol == "file":
        local = os.path.abspath(os.path.expanduser(rest))
        fs = fsspec.filesystem("file")
        return CheckpointStore(url if "://" in url else local, fs, local)
    try:
        cls = fsspec.get_filesystem_class(protocol)
    except ValueError as exc:
        raise UsageError(f"unknown storage protocol {protocol!r} in {url}") from exc
    except ImportError as exc:
        raise _missing_dependency(url, exc) from exc
    with _translated(url, "open"):
        fs = cls(**options)
        root = cls._strip_protocol(url)
    return CheckpointStore(f"{protocol}://{rest}".rstrip("/") or url, fs, root)
