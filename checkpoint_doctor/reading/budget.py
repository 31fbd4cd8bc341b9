"""A process-wide budget of bytes read and not yet let go, shared by every thread.

Each file is read with a bound of its own (a Delta commit 64 MiB, ``world.delta_log.MAX_COMMIT_BYTES``),
but a bound per file does not bound a process that reads many at once: a Delta table of 40 sparse
63 MB commits was read in one batch (2.67 GB resident, issue 31), and an audit's ``--jobs`` workers
read several tables together. Readers of such files hold their bytes in this budget while they read
and parse them: a reader waits while others hold more than :data:`BYTES_IN_FLIGHT`, and one reader
alone always proceeds (a single file over the budget is still read, alone), so the budget bounds
memory without ever deadlocking. Spark itself reads a Delta commit line by line; the budget keeps
this tool within a few of its bounded files at a time, whatever the number of threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Bytes of bounded files held at once by the whole process (every thread).
BYTES_IN_FLIGHT = 256 * 2**20


class ByteBudget:
    """A counting semaphore on bytes (see the module docstring)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held = 0
        self._cond = threading.Condition()
        #: The most bytes held at once since the budget was made (what a test asserts).
        self.peak = 0

    @contextmanager
    def hold(self, n: int) -> Iterator[None]:
        """Hold ``n`` bytes (at most the whole budget) for the block, waiting while others hold
        too much to add them."""
        n = max(0, min(n, self.limit))
        with self._cond:
            while self._held and self._held + n > self.limit:
                self._cond.wait()
            self._held += n
            self.peak = max(self.peak, self._held)
        try:
            yield
        finally:
            with self._cond:
                self._held -= n
                self._cond.notify_all()


#: The budget of the process's reads of Delta log files.
BUDGET = ByteBudget(BYTES_IN_FLIGHT)
