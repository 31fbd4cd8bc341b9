"""Live restarts sampled per run, all of them on request.

A live test proves that what real Spark did, recorded in the fixtures and replayed by the default
suite without a JVM, is still what Spark does. Restarting every recorded case each run costs minutes
per Spark line, so the default run restarts a deterministic sample (the same cases every run: one per
kind, e.g. per plan strategy) and the whole set is opt-in:

- ``CHECKPOINT_DOCTOR_ALL_LIVE=1``: every live test restarts every case (its sample is everything),
  and the tests marked ``live_all`` run;
- ``-m live_all``: the tests marked ``live_all`` (each restarts every case of its kind).

Without either, tests marked ``live_all`` are deselected (tests/conftest.py), not skipped: the run's
summary counts them as deselected.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

T = TypeVar("T")

ALL_LIVE_ENV = "CHECKPOINT_DOCTOR_ALL_LIVE"


def all_live() -> bool:
    """True when the run asks for every live restart (``CHECKPOINT_DOCTOR_ALL_LIVE=1``)."""
    return os.environ.get(ALL_LIVE_ENV, "") == "1"


def one_per(cases: Iterable[T], kind: Callable[[T], Hashable]) -> list[T]:
    """The first case of each kind, in the cases' order (a deterministic sample)."""
    seen: set[Hashable] = set()
    out = []
    for case in cases:
        k = kind(case)
        if k not in seen:
            seen.add(k)
            out.append(case)
    return out


def one_line(versions: Iterable[str], sampled: str) -> list[object]:
    """``versions`` as pytest parameters of which only ``sampled`` runs by default: the others are
    marked ``live_all`` (deselected unless asked for, as above). A file whose every test restarts
    real Spark on each line samples a different line per test, so that its default run still
    starts every line once (tests/spark/test_catch_up.py; docs/test-suite.md lists them)."""
    import pytest

    versions = list(versions)
    assert sampled in versions, (sampled, versions)
    return [pytest.param(v, marks=() if v == sampled else pytest.mark.live_all) for v in versions]


def shared_among(items: Sequence[T], line: str, lines: Sequence[str]) -> list[T]:
    """The items a default run gives ``line`` when each item needs one of ``lines``, not all: every
    ``len(lines)``-th item from the line's index on, so that every item and every line is
    restarted each run (all the items with ``CHECKPOINT_DOCTOR_ALL_LIVE=1``)."""
    if all_live():
        return list(items)
    return list(items[list(lines).index(line) :: len(lines)])
