"""The :class:`Storage` protocol every backend implements, and the path arithmetic they share."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from checkpoint_doctor.errors import StorageError
from checkpoint_doctor.model import FileStat, Listing

#: A file's permission bits and owner: (mode, uid, gid).
Ownership = tuple[int, int, int]


class Storage(Protocol):
    """Storage rooted at one URL; every ``rel`` argument is a path relative to the root, POSIX style.

    ``url`` is the user-facing URL of the root (errors and reports name it), ``root`` the backend's
    path for it. ``is_local`` says the files are on this machine's file system (no request costs);
    ``atomic_create`` says :meth:`write_exclusive` is a single atomic create-if-absent (local disk
    and S3), so two processes racing for one name cannot both succeed: a lock file can rely on it.
    Every method raises only :class:`~checkpoint_doctor.errors.StorageError` subclasses, naming the
    URL of the file or directory concerned.
    """

    url: str
    root: str
    protocol: str
    is_local: bool
    atomic_create: bool

    def url_of(self, rel: str) -> str:
        """Return the user-facing URL of a relative path."""
        ...

    def child(self, rel: str) -> Storage:
        """Return the storage rooted at a subdirectory (same backend, same client)."""
        ...

    def resolved_root(self) -> tuple[str, str]:
        """Return where the root really is: the protocol and the backend path, symlinks resolved
        on local disk (``file://`` and plain paths alike)."""
        ...

    def contains(self, other: Storage) -> bool:
        """Return whether ``other``'s root is this root or lies below it (:meth:`resolved_root`)."""
        ...

    def list_tree(self, *, missing_ok: bool = False) -> Listing:
        """List every file and directory below the root in one recursive listing (``missing_ok``:
        a root that does not exist lists empty; on an object store, no probe follows an empty
        listing to tell a missing prefix from an empty directory).

        Raises:
            CheckpointNotFoundError: the root does not exist (and not ``missing_ok``).
            NotADirectoryStorageError: the root is a file.
            StorageError: the root itself cannot be listed. A subdirectory that cannot be listed
                is named in ``Listing.unlisted`` instead.
        """
        ...

    def subdirs(self, rel: str = "") -> list[str]:
        """Return the names of the directories directly below a path, sorted (one shallow listing:
        a request with a delimiter on an object store; empty when the path does not exist).

        Raises:
            StorageError: the path exists and cannot be listed.
        """
        ...

    def read(self, rel: str, *, max_bytes: int | None = None) -> bytes:
        """Return the bytes of one file.

        Raises:
            FileTooLargeError: the file holds more than ``max_bytes`` bytes (nothing more is read).
            StorageError: translated failure (CheckpointNotFoundError if missing).
        """
        ...

    def read_many(
        self, rels: Iterable[str], *, max_bytes: int | None = None
    ) -> dict[str, bytes | StorageError]:
        """Read several files (concurrently where the backend is asynchronous); an unreadable or
        oversized file maps to its translated error instead of raising."""
        ...

    def read_heads(self, rels: Iterable[str], size: int) -> dict[str, bytes | StorageError]:
        """Read the first ``size`` bytes of each file (all of a shorter one), as :meth:`read_many`
        does: for checks that need only a file's header, never its whole (a state snapshot)."""
        ...

    def stat(self, rel: str) -> FileStat | None:
        """Return the current stat of a regular file, or None if there is none at the path."""
        ...

    def exists(self, rel: str) -> bool:
        """Return whether a file or directory exists at the path."""
        ...

    def write_exclusive(
        self,
        rel: str,
        data: bytes,
        *,
        like_siblings: bool = False,
        owner: Any = None,
        keep_temp: bool = False,
    ) -> str | None:
        """Create a file that must not exist yet; never a partial file under the final name.
        On local disk ``like_siblings`` gives it the mode and owner of the files beside it, and
        ``owner`` (mode, uid, gid) exactly those (object stores have neither). ``keep_temp``: on
        local disk the temp file the new one was linked from is kept and returned (relative
        path): the same inode beside it proves who created the file (None elsewhere).

        Raises:
            TargetExistsError: the file already exists (nothing was written).
            StorageError: any other failure.
        """
        ...

    def created_from_temp(self, rel: str) -> bool | None:
        """Return whether a temp file of the tool's beside ``rel`` is the same file (device and
        inode): ``rel`` was then linked from it by :meth:`write_exclusive` (None: an object store
        cannot tell)."""
        ...

    def write(self, rel: str, data: bytes, *, private: bool = False) -> None:
        """Create or replace a file whole (tool-owned files only: journal, backups); ``private``:
        readable by this process's user only, on local disk."""
        ...

    def delete(self, rel: str) -> None:
        """Delete one file (CheckpointNotFoundError if it is already gone)."""
        ...

    def delete_tree(self, rel: str) -> None:
        """Delete a directory and everything below it (tool-owned locations only)."""
        ...

    def makedirs(self, rel: str) -> None:
        """Create a directory and its parents (nothing to do on object stores)."""
        ...

    # What an undo gives back besides the bytes: a directory, a modification time, a mode and owner,
    # a symbolic link. Object stores have none of them (a prefix is gone with its last key, and the
    # ETag of the same bytes is the same): there these do nothing, and no file is a link.

    def remove_dir(self, rel: str) -> None:
        """Remove an empty directory (nothing to do on object stores).

        Raises:
            StorageError: the directory is not empty, or cannot be removed.
        """
        ...

    def set_mtime(self, rel: str, mtime_ms: int) -> None:
        """Set a file's modification time; a symbolic link is left as it is (its target is not
        this store's file to change)."""
        ...

    def ownership(self, rel: str) -> Ownership | None:
        """Return a file's mode and owner, not following a final link (None on object stores)."""
        ...

    def set_ownership(self, rel: str, owner: Ownership) -> None:
        """Give a file a mode and owner (an owner this process may not give is left); a symbolic
        link is left as it is (``chmod`` would follow it)."""
        ...

    def link_target(self, rel: str) -> str | None:
        """Return what a symbolic link at the path points to, as written, or None if it is none."""
        ...

    def read_link_target(self, rel: str, target: str, *, max_bytes: int | None = None) -> bytes:
        """Return the bytes of the file a symbolic link at ``rel`` to ``target`` points to, whether
        or not the link is there now (as :meth:`read`)."""
        ...

    def make_link(self, rel: str, target: str) -> None:
        """Create the symbolic link ``rel`` -> ``target``.

        Raises:
            TargetExistsError: the name exists.
            StorageError: any other failure (object stores have no links).
        """
        ...

    def temps_beside(self, rel: str) -> list[str]:
        """Return the temp files of this tool that a killed write left beside ``rel`` (relative
        paths; writes on object stores leave none)."""
        ...


class RootedPaths:
    """Path arithmetic for a storage rooted at ``root`` and shown as ``url``."""

    url: str
    root: str

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

    def resolved_root(self) -> tuple[str, str]:
        """Return the protocol and the backend path of the root."""
        raise NotImplementedError

    def read_many(
        self, rels: Iterable[str], *, max_bytes: int | None = None
    ) -> dict[str, bytes | StorageError]:
        """Read several files; an unreadable or oversized one maps to its error (see Storage)."""
        return self._read_all(rels, max_bytes, head=False)

    def read_heads(self, rels: Iterable[str], size: int) -> dict[str, bytes | StorageError]:
        """Read the first ``size`` bytes of each file (see Storage)."""
        return self._read_all(rels, size, head=True)

    def _read_all(
        self, rels: Iterable[str], max_bytes: int | None, *, head: bool
    ) -> dict[str, bytes | StorageError]:
        """Read each file once, whole up to ``max_bytes`` or (``head``) its first ``max_bytes``."""
        raise NotImplementedError

    def contains(self, other: Storage) -> bool:
        """Return whether ``other``'s root is this root or lies below it, on the same storage."""
        protocol, root = self.resolved_root()
        other_protocol, other_root = other.resolved_root()
        return protocol == other_protocol and is_below(other_root, root)


def is_below(path: str, parent: str) -> bool:
    """Return whether ``path`` is ``parent`` or lies below it (both normalised, '/'-separated)."""
    p = parent.rstrip("/")
    c = path.rstrip("/")
    return c == p or c.startswith(p + "/")


def first_failure(results: dict[str, bytes | StorageError]) -> StorageError | None:
    """Return the first error among read results, if every one failed (and there was one)."""
    errors = [v for v in results.values() if isinstance(v, StorageError)]
    return errors[0] if results and len(errors) == len(results) else None
