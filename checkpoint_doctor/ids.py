"""Batch id ranges as data and as text. Pure."""

from __future__ import annotations

from collections.abc import Iterable


def ranges(ids: Iterable[int]) -> list[list[int]]:
    """Return sorted ids as inclusive [first, last] runs (a ``range`` is one run, never iterated)."""
    if isinstance(ids, range) and ids.step == 1:
        return [[ids.start, ids.stop - 1]] if ids else []
    out: list[list[int]] = []
    for i in sorted(ids):
        if out and i == out[-1][1] + 1:
            out[-1][1] = i
        elif not out or i != out[-1][1]:
            out.append([i, i])
    return out


def range_text(ids: Iterable[int]) -> str:
    """Return ids as compact text: ``0..4, 7, 9..12`` (``none`` when empty)."""
    runs = ranges(ids)
    if not runs:
        return "none"
    return ", ".join(f"{a}..{b}" if b > a else str(a) for a, b in runs)


def ids_text(noun: str, ids: Iterable[int]) -> str:
    """Return ids with their noun, singular for one id: ``batch 11``, ``batches 10..11``, ``epochs 3, 5``."""
    runs = ranges(ids)
    one = len(runs) == 1 and runs[0][0] == runs[0][1]
    plural = {"batch": "batches"}.get(noun, noun + "s")
    return f"{noun if one else plural} {range_text(ids)}"


def count_text(n: int, noun: str, plural: str | None = None) -> str:
    """Return ``1 checkpoint``, ``2 checkpoints`` (``plural`` for nouns that do not take an s)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def span_text(noun: str, first: int, last: int) -> str:
    """Return ``first..last`` inclusive with its noun (``batch 11`` when they are equal)."""
    return ids_text(noun, range(first, last + 1))


#: Ids a finding, a path list or a message spells out at most. A batch id is any Java long and a
#: partition count any int, so the span between two of them cannot always be listed; the message
#: names the whole range (a batch file named 9223372036854775807 exhausted memory).
MAX_LISTED = 1000


def id_range(first: int, last: int, limit: int = MAX_LISTED) -> tuple[int, ...]:
    """Return ``first..last`` inclusive, the lowest ``limit`` of them at most."""
    return tuple(range(first, min(last, first + limit - 1) + 1))


def missing_in(first: int, last: int, present: Iterable[int], limit: int = MAX_LISTED) -> tuple[int, ...]:
    """Return the lowest ids of ``first..last`` that are not in ``present``, ``limit`` at most.

    Work is proportional to ``len(present)`` and ``limit``, never to the span.
    """
    out: list[int] = []
    expected = first
    for p in sorted({p for p in present if first <= p <= last}):
        while expected < p and len(out) < limit:
            out.append(expected)
            expected += 1
        if len(out) >= limit:
            return tuple(out)
        expected = p + 1
    while expected <= last and len(out) < limit:
        out.append(expected)
        expected += 1
    return tuple(out)


def count_missing(first: int, last: int, present: Iterable[int]) -> int:
    """Return how many ids of ``first..last`` are not in ``present``."""
    if last < first:
        return 0
    return last - first + 1 - len({p for p in present if first <= p <= last})
