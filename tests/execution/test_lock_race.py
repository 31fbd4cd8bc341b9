"""One lock holder: a stale lock taken over by two processes at once is removed by one of them only
(issue 31: the later one's delete removed the first one's live lock, and one plan was applied twice).

The race is made deterministic: the process under test (``taker``) works on a store that, just
before its n-th storage operation, lets a rival take the lock in full (a complete ``acquire``); n
runs over every operation of the taker's takeover, so the rival comes in at every point of it."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import pytest

from checkpoint_doctor.errors import LockHeldError
from checkpoint_doctor.execution.lock import LOCK, CheckpointLock
from checkpoint_doctor.reading.storage import Storage, open_storage
from tests.faults import OPERATIONS

DEAD = 2**22 + 12345  # above the default pid_max of 4194304: no such process


class RivalAt:
    """A store that, before its ``at``-th operation, runs ``rival`` once (everything else delegated)."""

    def __init__(self, inner: Storage, at: int, rival: Callable[[], None]) -> None:
        self._inner = inner
        self._at = at
        self._rival = rival
        self.count = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in OPERATIONS:
            return attr

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            if self.count == self._at:
                self._rival()
            return attr(*args, **kwargs)

        return wrapped


def _stale(store: Storage) -> None:
    for name in store.list_tree(missing_ok=True).files:
        store.delete(name.path)
    owner = {"pid": DEAD, "host": socket.gethostname(), "what": "apply dead", "since_ms": 1}
    store.write_exclusive(LOCK, json.dumps(owner).encode())


def _try(store: Any, what: str) -> CheckpointLock | None:
    try:
        return CheckpointLock.acquire(store, what, None)
    except LockHeldError:
        return None


def race_at_every_operation(make_store: Callable[[int], Storage]) -> tuple[int, list[str]]:
    """Return (runs, problems) of a stale-lock takeover raced by a rival at each of its operations."""
    quiet = make_store(0)
    _stale(quiet)
    counter = RivalAt(quiet, 0, lambda: None)
    alone = _try(counter, "apply alone")
    assert alone is not None, "an uncontested takeover of a dead process's lock must succeed"
    alone.release()
    problems: list[str] = []
    # One past the last operation: the rival comes after the taker is done (it is then refused).
    for at in range(1, counter.count + 2):
        raw = make_store(at)
        _stale(raw)
        got: dict[str, CheckpointLock | None] = {}

        def rival(raw: Storage = raw, got: dict[str, CheckpointLock | None] = got) -> None:
            got["rival"] = _try(raw, "apply rival")

        racing = RivalAt(raw, at, rival)
        got["taker"] = _try(racing, "apply taker")
        racing._at = -1  # the race is the takeover's: none in the release
        got.setdefault("rival", None)
        held = [who for who, lock in got.items() if lock is not None]
        holder = json.loads(raw.read(LOCK)).get("what") if raw.exists(LOCK) else None
        if len(held) != 1 or holder != f"apply {held[0]}":
            problems.append(f"rival at operation {at}: holders {held}, lock names {holder!r}")
        for lock in got.values():
            if lock is not None:
                lock.release()
        leftovers = [f.path for f in raw.list_tree(missing_ok=True).files]
        if leftovers:
            problems.append(f"rival at operation {at}: left {leftovers}")
    return counter.count + 1, problems


def test_a_stale_lock_raced_at_every_operation_has_one_holder(tmp_path) -> None:
    runs, problems = race_at_every_operation(lambda n: open_storage(str(tmp_path / f"tool-{n}")))
    assert runs >= 4
    assert problems == []


def test_a_taker_killed_inside_the_takeover_leaves_the_lock_to_the_operator(tmp_path) -> None:
    """A marker left by a taker that died: the stale lock is not removed by anyone else, and the
    refusal names both files."""
    store = open_storage(str(tmp_path / "tool"))
    _stale(store)
    stale = store.read(LOCK)
    import hashlib

    marker = "lock.takeover-" + hashlib.sha256(stale).hexdigest()[:32]
    store.write_exclusive(marker, json.dumps({"pid": DEAD, "host": socket.gethostname()}).encode())

    with pytest.raises(LockHeldError) as info:
        CheckpointLock.acquire(store, "apply late", None)

    assert store.read(LOCK) == stale
    assert f"rm {tmp_path / 'tool' / 'lock'}" in str(info.value)
    assert str(tmp_path / "tool" / marker) in str(info.value)
