"""One writer at a time: an exclusive lock per checkpoint for the whole of an apply or an undo.

The lock is the object ``<checkpoint>.checkpoint-doctor/lock``, created exclusively (local disk:
temp file + ``link``; S3: a conditional ``PutObject`` with ``If-None-Match: *``), holding who took it.
A second apply or undo of the same checkpoint is refused while it exists, naming the holder. A lock
left by a process that died on this host (its pid is gone) is taken over; any other stale lock is
for the operator to remove, and the refusal says how.
"""

from __future__ import annotations

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
                holder = _holder(store)
                if attempt == 1 and _stale_here(holder, store.url_of(LOCK)):
                    # The holder died on this host: take over (re-read first, so only its lock goes).
                    if _holder(store) == holder:
                        store.delete(LOCK)
                    continue
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


def _holder(store: Storage) -> dict[str, Any]:
    try:
        value = json.loads(store.read(LOCK))
    except (StorageError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _stale_here(holder: dict[str, Any], url: str) -> bool:
    pid = holder.get("pid")
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    if pid == os.getpid():
        return url not in _HELD
    return not _alive(pid)
