"""Parse the checkpoint's ``metadata`` file (``StreamMetadata``): ``{"id": "<query id>"}``, no header."""

from __future__ import annotations

import json

from checkpoint_doctor.errors import CheckpointParseError
from checkpoint_doctor.model import QueryMetadata
from checkpoint_doctor.parsing.text import EMPTY, INVALID_CONTENT, decode_text, parse_json_value


def parse_query_metadata(data: bytes, *, path: str) -> QueryMetadata:
    """Parse ``metadata``.

    Raises:
        CheckpointParseError: ``empty``, ``bad-json``/``truncated-json``, ``invalid-content`` (no
            string ``id``; Spark: ``Error reading stream metadata from <path>``), ``not-text``.
    """
    text = decode_text(data, path=path)
    if not text.strip():
        raise CheckpointParseError(path, EMPTY, "empty file (Spark: Error reading stream metadata)")
    obj = parse_json_value(text, path=path, line=1)
    if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
        raise CheckpointParseError(path, INVALID_CONTENT, "no string field 'id'", line=1)
    return QueryMetadata(query_id=obj["id"])


def serialize_query_metadata(meta: QueryMetadata) -> bytes:
    """Write ``metadata`` as Spark does: ``{"id":"..."}`` without a trailing newline."""
    return json.dumps({"id": meta.query_id}, separators=(",", ":")).encode()
