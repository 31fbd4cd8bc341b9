"""Files the operator names for a command's output (``plan -o``, ``audit --html``, ``audit
--metrics``): checked before the work starts, written atomically after it, and never at the cost of
the finished work.

A destination is checked first (the directory exists and is writable, the protocol is known and its
extra installed, the bucket exists), so an audit of a thousand checkpoints does not end with "cannot
write". It never lies inside a checkpoint or sink the command reads (``plan -o
CKPT/offsets/31`` replaced the newest offsets file with plan JSON), compared by resolved location
(``file://`` URLs, ``..`` and symlinks lead inside too), and an existing file is replaced only with
``--force``: the write is an exclusive create otherwise. If the write still fails (the disk filled
up, the credentials expired), the output is saved to a local temporary file and the error names it.

A local file is checked again where it lands, when it is written (``out/`` swapped for a
link into the checkpoint's ``offsets/`` while a slow plan ran made ``plan -o out/3 --force`` replace
``offsets/3``): its directory is opened once, every later call is relative to that descriptor
(``openat``/``renameat``/``linkat``), and the directory's identity (device and inode, and those of
its ancestors up to ``/``) must not be a checkpoint or sink the command reads.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_mod
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from checkpoint_doctor.cli.options import normalize_url
from checkpoint_doctor.errors import CheckpointDoctorError, UsageError
from checkpoint_doctor.redaction import redact

if TYPE_CHECKING:
    from checkpoint_doctor.reading.storage import Storage


@dataclass(frozen=True)
class Destination:
    """A checked output destination: a local path, or a URL and its storage options."""

    url: str
    option: str
    local: bool
    storage_options: Mapping[str, Any]
    #: replace an existing file (``--force``); otherwise the write creates it exclusively
    force: bool = False
    #: the real paths of the local checkpoints and sinks the command reads (:func:`check_outside`
    #: adds them): checked again against where the file lands when it is written
    guarded: list[str] = field(default_factory=list, compare=False)

    @property
    def shown(self) -> str:
        """Return the destination as the operator wrote it (normalised)."""
        return self.url


def _check_local(path: str, option: str) -> None:
    parent = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        raise UsageError(
            f"{option} {path} is a directory", hint=f"name a file, e.g. {os.path.join(path, 'audit.html')}"
        )
    if not os.path.isdir(parent):
        raise UsageError(
            f"cannot write {path}: directory {parent} does not exist",
            hint=f"create it or choose another {option}",
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(
            f"cannot write {path}: directory {parent} is not writable", hint=f"choose another {option}"
        )


def _check_remote(url: str, option: str, storage_options: Mapping[str, Any]) -> None:
    from checkpoint_doctor.reading.storage import open_storage

    protocol, _, rest = url.partition("://")
    bucket = rest.split("/", 1)[0]
    if not bucket or rest.endswith("/"):
        raise UsageError(f"{option} {url} names no file", hint=f"e.g. {url.rstrip('/')}/audit.html")
    store = open_storage(f"{protocol}://{bucket}", storage_options)
    if protocol in ("s3", "s3a", "gs", "gcs") and not store.exists(""):
        raise UsageError(
            f"cannot write {url}: bucket {bucket} does not exist",
            hint=f"check the bucket name, the endpoint and {option}",
        )


def check_destination(
    target: str,
    option: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    local_only: bool = False,
    force: bool = False,
    reading: Sequence[Storage] = (),
) -> Destination:
    """Check that ``target`` can be written; return it.

    Raises:
        UsageError: it cannot (a missing or read-only directory, a directory, an unknown protocol,
            a missing bucket; or a URL where only a local file will do), it lies inside one of
            ``reading``, or it exists and ``force`` is not given.
        MissingDependencyError: its protocol's extra is not installed.
        StorageError: the storage behind it cannot be reached.
    """
    url = normalize_url(target)
    if "://" not in url:
        _check_local(url, option)
        dest = Destination(url, option, True, {}, force)
    elif local_only:
        raise UsageError(
            f"{option} {target} must be a local file",
            hint="node_exporter's textfile collector reads local files"
            if option == "--metrics"
            else "write it to this machine",
        )
    else:
        _check_remote(url, option, storage_options or {})
        dest = Destination(url, option, False, dict(storage_options or {}), force)
    check_outside(dest, reading)
    if not force and destination_exists(dest):
        raise UsageError(
            f"{option} {dest.url} exists", hint="pass --force to overwrite it, or choose another path"
        )
    return dest


def destination_exists(dest: Destination) -> bool:
    """Return whether the destination's file exists now."""
    store, name = _parent(dest)
    return store.exists(name)


def _parent(dest: Destination) -> tuple[Storage, str]:
    """Return the storage of the destination's directory and the file's name in it."""
    from checkpoint_doctor.reading.storage import open_storage

    parent, _, name = dest.url.rstrip("/").rpartition("/")
    if dest.local and not parent:
        parent = "."
    return open_storage(parent or "/", dest.storage_options), name


def check_outside(dest: Destination, reading: Sequence[Storage]) -> None:
    """Refuse a destination inside a checkpoint or sink the command reads: a read-only command
    never writes there.

    Raises:
        UsageError: naming the destination and what it lies inside.
    """
    from checkpoint_doctor.reading.storage import open_storage

    target = open_storage(dest.url, dest.storage_options)
    for store in reading:
        protocol, root = store.resolved_root()
        if protocol == "file" and root not in dest.guarded:
            dest.guarded.append(root)
        if store.contains(target):
            raise UsageError(
                f"{dest.option} {dest.url} is inside {store.url}, which this command reads; a read-only "
                "command never writes there",
                hint=f"choose a {dest.option} path outside it",
            )


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _refuse_inside(dir_fd: int, path: str, guarded: Sequence[str]) -> None:
    """Refuse when the opened directory is one of ``guarded`` or lies below one: compared by
    identity, walking ``..`` from the descriptor, so no path (or link swapped into it) can lie.

    Raises:
        UsageError: naming the file and the checkpoint or sink it would land in.
    """
    roots: dict[tuple[int, int], str] = {}
    for root in guarded:
        try:
            roots[_identity(os.stat(root))] = root
        except OSError:
            continue  # gone since the check: nothing to land in
    if not roots:
        return
    fd = os.dup(dir_fd)
    try:
        for _ in range(4096):  # PATH_MAX bounds the depth of a directory
            here = _identity(os.fstat(fd))
            if here in roots:
                raise UsageError(
                    f"{path} would land inside {roots[here]}, which this command reads (the directory "
                    "changed since it was checked); a read-only command never writes there",
                    hint="choose a path outside it",
                )
            parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = parent
            if _identity(os.fstat(fd)) == here:  # "/" is its own parent
                return
    finally:
        os.close(fd)


def write_atomically(
    path: str, data: bytes, mode: int = 0o644, *, replace: bool = True, guarded: Sequence[str] = ()
) -> None:
    """Write a local file so that a reader never sees it half-written: a temporary file in the
    same directory, flushed to disk, then renamed over the target (``rename`` is atomic on POSIX),
    or with ``replace=False`` linked to it (``link`` fails if the target exists: FileExistsError).

    The directory is opened once and every call is relative to it, after checking that it is not
    inside ``guarded`` (:func:`_refuse_inside`); an existing target that is not a regular file or
    a link (a device, a FIFO) is refused rather than replaced.

    Raises:
        UsageError: the directory lies inside ``guarded``, or the target is a special file.
        OSError: the write failed.
    """
    directory = os.path.dirname(os.path.abspath(path))
    name = os.path.basename(path)
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _refuse_inside(dir_fd, path, guarded)
        try:
            existing = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            existing = None
        if existing is not None and not (stat_mod.S_ISREG(existing) or stat_mod.S_ISLNK(existing)):
            raise UsageError(f"{path} exists and is not a regular file", hint="choose another path")
        tmp = f".{name}.{uuid.uuid4().hex}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
                os.fchmod(fh.fileno(), mode)
            if replace:
                os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            else:
                os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        finally:
            with contextlib.suppress(FileNotFoundError):  # renamed away, else (linked or failed) removed
                os.unlink(tmp, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def write_destination(dest: Destination, text: str) -> None:
    """Write ``text`` to a checked destination, atomically: replaced with ``force``, else created
    exclusively (a file that appeared since the check is not overwritten).

    Raises:
        UsageError: the write failed; the text was saved to a local temporary file, which the
            message names.
    """
    # Credentials in URLs never reach a file either (the page, the metrics labels, the plan).
    data = redact(text).encode("utf-8", "backslashreplace")
    try:
        if dest.local:
            write_atomically(dest.url, data, replace=dest.force, guarded=dest.guarded)
            return
        store, name = _parent(dest)
        (store.write if dest.force else store.write_exclusive)(name, data)
    except (OSError, CheckpointDoctorError) as exc:
        fd, saved = tempfile.mkstemp(
            prefix="checkpoint-doctor-", suffix=os.path.splitext(dest.url)[1] or ".out"
        )
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(
            f"cannot write {dest.url}: {reason}", hint=f"the {dest.option} output was saved to {saved}"
        ) from exc
