"""JSON documents the tool reads back from the operator (plan files, apply journals): bounded in size
and nesting, UTF-8, one JSON value. Pure.

A plan or a journal line is a few kilobytes nested a few levels deep; anything far larger or deeper
was not written by this tool (a binary file passed by mistake, a hostile edit) and is refused with a
reason, before any code walks it (a deep enough value would exhaust Python's recursion limit in
``repr``, in comparisons and in the JSON parser itself).
"""

from __future__ import annotations

import json
from typing import Any

#: Bytes of one plan file or one journal: a plan with thousands of steps is under a megabyte.
MAX_DOCUMENT_BYTES = 16 * 2**20
#: Nesting of a plan or a journal event (they nest four levels deep).
MAX_DOCUMENT_DEPTH = 32


class DocumentError(ValueError):
    """Raised when bytes are not a JSON document this tool could have written; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Return whether ``value`` nests deeper than ``limit`` (an iterative walk: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def parse_json_document(
    data: bytes, *, max_bytes: int = MAX_DOCUMENT_BYTES, max_depth: int = MAX_DOCUMENT_DEPTH
) -> Any:
    """Return the JSON value of ``data``.

    Raises:
        DocumentError: larger than ``max_bytes``, not UTF-8 (binary), not JSON, or nested deeper
            than ``max_depth``.
    """
    if len(data) > max_bytes:
        raise DocumentError(f"{len(data)} bytes, more than the {max_bytes} a document of this tool holds")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"not UTF-8 text (a binary file? invalid byte at offset {exc.start})") from exc
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise DocumentError(f"JSON nested deeper than {max_depth} levels") from exc
    except ValueError as exc:
        raise DocumentError(f"not JSON ({exc})") from exc
    if _depth_exceeds(value, max_depth):
        raise DocumentError(f"JSON nested deeper than {max_depth} levels")
    return value
