"""Fault injection for the executor: a store wrapper that fails on the Nth storage operation."""

from __future__ import annotations

from typing import Any

from checkpoint_doctor.errors import StorageError
from checkpoint_doctor.reading.storage import Storage

OPERATIONS = ("list_tree", "read", "read_many", "stat", "exists", "write", "write_exclusive", "delete")


class FaultInjector:
    """Counts operations across every wrapped store and fails the ``fail_at``-th one (1-based)."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.fail_at = fail_at
        self.count = 0
        self.failed = False

    def tick(self, url: str, op: str) -> None:
        self.count += 1
        if self.fail_at is not None and self.count == self.fail_at:
            self.failed = True
            raise StorageError(url, op, f"injected fault at operation {self.count}")


class FailingStore:
    """A Storage that fails when its injector says so (everything else is delegated)."""

    def __init__(self, inner: Storage, injector: FaultInjector) -> None:
        self._inner = inner
        self._injector = injector

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name in OPERATIONS:

            def wrapped(*args: Any, **kwargs: Any) -> Any:
                self._injector.tick(self._inner.url, name)
                return attr(*args, **kwargs)

            return wrapped
        if name == "child":
            return lambda rel: FailingStore(self._inner.child(rel), self._injector)
        return attr


class StallingStore:
    """A Storage that stalls at its first ``op`` (an injected delay): it creates ``ready``,
    then waits until ``release`` exists (at most ``timeout_s``) before doing the operation."""

    def __init__(self, inner: Storage, op: str, ready: str, release: str, timeout_s: float = 120.0) -> None:
        self._inner = inner
        self._op = op
        self._ready = ready
        self._release = release
        self._timeout_s = timeout_s
        self._stalled = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name != self._op or self._stalled:
            return attr

        def stalled(*args: Any, **kwargs: Any) -> Any:
            import os
            import time

            self._stalled = True
            with open(self._ready, "w") as fh:
                fh.write(str(os.getpid()))
            deadline = time.monotonic() + self._timeout_s
            while not os.path.exists(self._release) and time.monotonic() < deadline:
                time.sleep(0.05)
            return attr(*args, **kwargs)

        return stalled
