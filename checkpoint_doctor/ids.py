"""Batch id ranges as data and as text. Pure."""

from __future__ import annotations

from collections.abc import Iterable


def ranges(ids: Iterable[int]) -> list[list[int]]:
    """Return sorted ids as inclusive [first, last] runs."""
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
