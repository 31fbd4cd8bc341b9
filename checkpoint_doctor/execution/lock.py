"""One writer at a time: an exclusive lock per checkpoint for the whole of an apply or an undo.

The lock is the object ``<checkpoint>.checkpoint-doctor/lock``, created exclusively (local disk:
temp file + ``link``; S3: a conditional ``PutObject`` with ``If-None-Match: *``), holding who took it.
A second apply or undo of the same checkpoint is refused while it exists, naming the holder. A lock
left by a process that died on this host (its pid is gone) is taken over; any other stale lock is
for the operator to remove, and the refusal says how.

The takeover is atomic (issue 31: two processes that both read the same dead holder could each
remove "the stale lock", the later one removing the other's live lock, and both applied). Only
the process that creates ``lock.takeover-<sha256 of the stale lock's bytes>`` exclusively may
remove that lock, and only if, read again after winning, it still holds those bytes. Nobody else
removes a lock held by another process (a holder removes only its own), so between that read
and the delete the lock cannot change: of any number of processes taking over one stale lock,
one removes it, the others then meet the winner's (live) lock and are refused. This needs only
an atomic create-if-absent and a read that sees the newest object: ``link`` on local disk, a
conditional ``PutObject`` (``If-None-Match: *``) with S3's strong read-after-write consistency on
S3 (no conditional delete is needed). A taker killed inside the takeover leaves its marker: the
stale lock is then left for the operator, and the refusal names both files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import socket
from dataclasses import dataclass
from typing import Any

from checkpoint_doctor.errors import LockHeldError, StorageError, TargetExistsError
from checkpoint_doctor.reading.storage import Storage
from checkpoint_doctor.reading.storage.errors import split_protocol

LOCK = "lock"
#: The marker whose exclusive creation gives the right to remove one stale lock (by its bytes).
TAKEOVER = "lock.takeover-"
#: Locks this process holds (by URL): a lock naming this pid that is not here is a leftover of a
#: release that failed (a storage error), and is taken over like a dead process's.
_HELD: set[str] = set()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def local_path(store: Storage, rel: str) -> str | None:
    """Return the local file system path of ``rel``, or None when the store is not a local disk."""
    if split_protocol(store.url)[0] != "file":
        return None
    full = getattr(store, "full_path", None)
    return str(full(rel)) if full is not None else None


def _removal_hint(store: Storage) -> str:
    url = store.url_of(LOCK)
    path = local_path(store, LOCK)
    if path is not None:
        return f"if no checkpoint-doctor apply or undo is running, remove it: rm {shlex.quote(path)}"
    if url.startswith(("s3://", "s3a://")):
        return f"if no checkpoint-doctor apply or undo is running, remove it: aws s3 rm '{url}'"
    if url.startswith(("gs://", "gcs://")):
        gs_url = "gs://" + url.partition("://")[2]
        return f"if no checkpoint-doctor apply or undo is running, remove it: gcloud storage rm '{gs_url}'"
    return f"if no checkpoint-doctor apply or undo is running, delete {url}"


@dataclass
class CheckpointLock:
    """A held lock; :meth:`release` gives it back (also as a context manager)."""

    store: Storage
    owner: dict[str, Any]

    @staticmethod
    def acquire(store: Storage, what: str, now_ms: int | None) -> CheckpointLock:
        """Take the checkpoint's lock for ``what`` (``apply <plan-id>``, ``undo <journal>``).

        Raises:
            LockHeldError: another apply or undo holds it.
            StorageError: the lock could not be written.
        """
        owner = {"pid": os.getpid(), "host": socket.gethostname(), "what": what, "since_ms": now_ms}
        data = json.dumps(owner, sort_keys=True).encode()
        for attempt in (1, 2):
            try:
                store.write_exclusive(LOCK, data)
                _HELD.add(store.url_of(LOCK))
                return CheckpointLock(store, owner)
            except TargetExistsError:
                raw = _raw(store)
                holder = _parsed(raw)
                if attempt == 1 and raw is not None and _stale_here(holder, store.url_of(LOCK)):
                    # The holder died on this host: take over, atomically (see module docstring).
                    if _take_over(store, raw, owner):
                        continue
                    raise LockHeldError(store.url_of(LOCK), holder, _takeover_hint(store, raw)) from None
                raise LockHeldError(store.url_of(LOCK), holder, _removal_hint(store)) from None
        raise LockHeldError(store.url_of(LOCK), _holder(store), _removal_hint(store))

    def release(self) -> None:
        """Remove the lock if it is still this process's."""
        _HELD.discard(self.store.url_of(LOCK))
        try:
            if _holder(self.store) == self.owner:
                self.store.delete(LOCK)
        except StorageError:
            pass  # the refusal message of the next writer says how to remove a leftover lock

    def __enter__(self) -> CheckpointLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _raw(store: Storage) -> bytes | None:
    """Return the lock's bytes, or None when it cannot be read (gone since)."""
    try:
        return store.read(LOCK, max_bytes=_MAX_LOCK_BYTES)
    except StorageError:
        return None


def _parsed(raw: bytes | None) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw is not None else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _holder(store: Storage) -> dict[str, Any]:
    return _parsed(_raw(store))


#: A lock is a line of JSON; anything larger is no lock of this tool's (read bounded).
_MAX_LOCK_BYTES = 64 * 1024


def _marker(raw: bytes) -> str:
    return TAKEOVER + hashlib.sha256(raw).hexdigest()[:32]


def _take_over(store: Storage, raw: bytes, owner: dict[str, Any]) -> bool:
    """Remove the stale lock whose bytes are ``raw`` if this process wins the right to (creates its
    marker exclusively) and the lock still holds those bytes; return False when another process
    holds that right (it is taking over, or was killed doing it)."""
    marker = _marker(raw)
    try:
        store.write_exclusive(marker, json.dumps(owner, sort_keys=True).encode())
    except TargetExistsError:
        return False
    try:
        # Read again now that no other taker may remove it: still the dead holder's, it goes.
        if _raw(store) == raw:
            store.delete(LOCK)
    finally:
        # The marker names bytes no lock will hold again: left behind (a failed delete), it is
        # only a leftover, and a late taker that wins it finds another lock and removes nothing.
        with contextlib.suppress(StorageError):
            store.delete(marker)
    return True


def _takeover_hint(store: Storage, raw: bytes) -> str:
    marker = store.url_of(_marker(raw))
    path = local_path(store, _marker(raw))
    return (
        f"{_removal_hint(store)}; another process is taking the stale lock over, or was killed doing "
        f"it (its marker {shlex.quote(path) if path is not None else marker}: remove it too)"
    )


def _stale_here(holder: dict[str, Any], url: str) -> bool:
    pid = holder.get("pid")
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    if pid == os.getpid():
        return url not in _HELD
    return not _alive(pid)
