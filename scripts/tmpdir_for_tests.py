#!/usr/bin/env python3
"""Print the directory the tests' temporary files should go to, or nothing for the default.

The suite copies fixtures into temporary directories thousands of times and applies plans there
(each step synced to disk), so on a VM's disk much of a run is the kernel writing them: measured on
this 2-core VM, tests/execution took 239-273 s with its files on the disk and 78-97 s on a tmpfs
(system time 32-39 s against 10 s; the tests' own work, user time, 17-20 s either way). A tmpfs
holds the same files with the same semantics (permissions, links, FIFOs, nanosecond times), in RAM.

scripts/test.sh exports TMPDIR to what this prints: ``/dev/shm/cd-tests`` when
``/dev/shm`` is a directory with at least ``MIN_FREE`` bytes free (a container's default 64 MB
``/dev/shm`` is not), nothing when TMPDIR is already set or no tmpfs has room. pytest keeps only the
failed tests' directories (``tmp_path_retention_policy = failed`` in setup.cfg), so a run holds a
few hundred MB at a time.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence

MIN_FREE = 4 * 1024**3
CANDIDATES = ("/dev/shm",)
# Not "checkpoint-doctor...": tests tell the tool's own directory (<checkpoint>.checkpoint-doctor/) from
# the checkpoint by that word in a path (tests/execution: FaultInjector recorders).
NAME = "cd-tests"


def free_bytes(path: str) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def choose(
    environ: Mapping[str, str],
    candidates: Sequence[str] = CANDIDATES,
    free: Callable[[str], int] = free_bytes,
    min_free: int = MIN_FREE,
) -> str | None:
    """The temporary directory to use, or None to leave the default (TMPDIR, else /tmp)."""
    if environ.get("TMPDIR"):
        return None
    for candidate in candidates:
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK) and free(candidate) >= min_free:
            return os.path.join(candidate, NAME)
    return None


def main() -> int:
    chosen = choose(os.environ)
    if chosen is not None:
        os.makedirs(chosen, exist_ok=True)
        print(chosen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
