"""Parse ``commits/<batchId>`` files (``CommitLog``: v1; v2 ``stateUniqueIds``; v3 ``sinkMetadataMap``).

Mirrors ``CommitLog.deserialize``: an empty file is "Incomplete log file in the offset commit log";
the version line IS trimmed (unlike offsets); a file with only the version line reads as ``{}``.
"""

from __future__ import annotations

import json
from typing import Any

from checkpoint_doctor.errors import CheckpointParseError
from checkpoint_doctor.model import CommitRecord
from checkpoint_doctor.parsing.text import (
    EMPTY,
    INVALID_CONTENT,
    decode_text,
    iter_lines,
    java_trim,
    json_long,
    parse_json_value,
    parse_version_line,
)

#: Highest commit log version any known Spark release writes (4.2+: v3).
MAX_COMMITS_VERSION = 3


def _unique_ids(obj: Any, *, path: str) -> tuple[tuple[int, tuple[tuple[str, ...], ...]], ...]:
    if not isinstance(obj, dict):
        raise CheckpointParseError(path, INVALID_CONTENT, "stateUniqueIds is not an object", line=2)
    out = []
    for op, parts in obj.items():
        try:
            op_id = int(op)
        except ValueError:
            raise CheckpointParseError(
                path, INVALID_CONTENT, f"stateUniqueIds key {op!r} is not an operator id", line=2
            ) from None
        if not isinstance(parts, list) or not all(
            isinstance(p, list) and all(isinstance(u, str) for u in p) for p in parts
        ):
            raise CheckpointParseError(
                path, INVALID_CONTENT, f"stateUniqueIds[{op}] is not a list of id lists", line=2
            )
        out.append((op_id, tuple(tuple(p) for p in parts)))
    return tuple(sorted(out))


def parse_commit(data: bytes, *, path: str, max_version: int = MAX_COMMITS_VERSION) -> CommitRecord:
    """Parse a commit file.

    Raises:
        CheckpointParseError: ``empty`` (Spark: ``Incomplete log file in the offset commit log``),
            ``malformed-header``, ``unsupported-version``, ``bad-json``/``truncated-json``,
            ``invalid-content``, ``not-text``.
    """
    # CommitLog.deserialize reads two lines and ignores the rest: so does this.
    lines = iter_lines(decode_text(data, path=path))
    first = next(lines, None)
    if first is None:
        raise CheckpointParseError(
            path, EMPTY, "empty file (Spark: Incomplete log file in the offset commit log)"
        )
    version = parse_version_line(java_trim(first), max_version=max_version, path=path)
    second = next(lines, None)
    if second is None:
        return CommitRecord(version=version, next_batch_watermark_ms=0, header_only=True)
    obj = parse_json_value(second, path=path, line=2)
    if not isinstance(obj, dict):
        raise CheckpointParseError(path, INVALID_CONTENT, "commit metadata is not a JSON object", line=2)
    ids = None
    if obj.get("stateUniqueIds") is not None:
        ids = _unique_ids(obj["stateUniqueIds"], path=path)
    sink = None
    if obj.get("sinkMetadataMap") is not None:
        sink = json.dumps(obj["sinkMetadataMap"], sort_keys=True, separators=(",", ":"))
    return CommitRecord(
        version=version,
        next_batch_watermark_ms=json_long(obj, "nextBatchWatermarkMs", path=path, line=2),
        state_unique_ids=ids,
        sink_metadata_json=sink,
    )


def serialize_commit(record: CommitRecord) -> bytes:
    """Write a :class:`CommitRecord` as Spark does; inverse of parse_commit."""
    if record.header_only:
        return f"v{record.version}".encode()
    obj: dict[str, Any] = {"nextBatchWatermarkMs": record.next_batch_watermark_ms}
    if record.state_unique_ids is not None:
        obj["stateUniqueIds"] = {str(op): [list(p) for p in parts] for op, parts in record.state_unique_ids}
    if record.sink_metadata_json is not None:
        obj["sinkMetadataMap"] = json.loads(record.sink_metadata_json)
    return f"v{record.version}\n{json.dumps(obj, separators=(',', ':'))}".encode()
