"""Colour for a terminal (issue 36): the words an operator scans for, styled with click.style.
The CLI decides whether to colour (``--color``, ``NO_COLOR``, a terminal) and calls :func:`paint`."""

from __future__ import annotations

import re

import click

#: The words coloured, as whole words: a restart's verdict, a finding's severity, an audit verdict
#: at the start of its row. Spark's own text (an error class) is never recoloured inside.
_STYLES: tuple[tuple[re.Pattern[str], dict[str, object]], ...] = (
    (re.compile(r"\bFAILS\b"), {"fg": "red", "bold": True}),
    (re.compile(r"\bSTARTS\b"), {"fg": "green", "bold": True}),
    (re.compile(r"\bNOT JUDGED\b"), {"fg": "yellow", "bold": True}),
    (re.compile(r"(?<=^  )ERROR\b|^error\b|^unreadable\b", re.M), {"fg": "red", "bold": True}),
    (re.compile(r"(?<=^  )WARNING\b|^warning\b", re.M), {"fg": "yellow", "bold": True}),
)


def paint(text: str) -> str:
    """Return text with its verdict and severity words styled (ANSI escapes)."""
    for pattern, style in _STYLES:
        text = pattern.sub(lambda m, s=style: click.style(m.group(0), **s), text)  # type: ignore[misc]
    return text
