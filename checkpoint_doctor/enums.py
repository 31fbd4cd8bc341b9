"""The base of the package's word enums: a member is its word wherever text is made.

A member of a :class:`TextEnum` is a ``str`` whose value is the word itself, so it compares and
hashes as the word, serializes to JSON as the word (``json.dumps`` writes a ``str`` subclass as its
text) and prints as the word in f-strings and ``str()`` (a plain ``(str, Enum)`` would print
``Area.SINK`` there before Python 3.11's ``StrEnum``, which the audit's Spark executors may lack).
"""

from __future__ import annotations

from enum import Enum


class TextEnum(str, Enum):
    """A ``str`` enum that is its value in ``str()``, ``format()`` and JSON."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)
