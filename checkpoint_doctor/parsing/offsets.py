"""Parse ``offsets/<batchId>`` files (``OffsetSeqLog``: v1 in every release, v2 "OffsetMap" from 4.2).

v1: ``v1``, a metadata JSON line (may be blank: continuous mode), then one line per source in
``sources/<n>`` order, ``-`` meaning "no offset yet". v2: metadata required, then ``<name>:<offset>``
lines split at the first colon. Mirrors ``OffsetSeqLog.deserialize``: the version line is not trimmed,
the metadata line is, and source lines are kept verbatim (only their source interprets them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from checkpoint_doctor.errors import CheckpointParseError
from checkpoint_doctor.model import OffsetSeq, OffsetSeqMetadata, SourceOffset
from checkpoint_doctor.parsing.source_offsets import decode_offset
from checkpoint_doctor.parsing.text import (
    EMPTY,
    HEADER_ONLY,
    INVALID_CONTENT,
    TOO_LARGE,
    decode_text,
    iter_lines,
    java_trim,
    json_long,
    parse_json_value,
    parse_version_line,
)

#: Highest offsets log version any known Spark release writes (4.2+ OffsetMap).
MAX_OFFSETS_VERSION = 2
#: Source lines read of one offsets file. Spark writes one line per source of the query and reads
#: them all (``OffsetSeqLog.deserialize``); a union of even a few hundred streams is rare, and a
#: driver planning thousands of sources in one query does not exist in practice. A file with more
#: lines was not written by a query (3 million blank lines took 3.6 GB to hold as
#: source offsets): it is reported as ``too-large`` instead of held line by line.
MAX_SOURCE_LINES = 10_000
VOID_OFFSET = "-"


def _parse_metadata(text: str, *, version: int, path: str) -> OffsetSeqMetadata:
    obj: Any = parse_json_value(text, path=path, line=2)
    if not isinstance(obj, dict):
        raise CheckpointParseError(path, INVALID_CONTENT, "metadata line is not a JSON object", line=2)
    conf_obj = obj.get("conf")
    has_conf = "conf" in obj and conf_obj is not None
    conf: tuple[tuple[str, str], ...] = ()
    if has_conf:
        if not isinstance(conf_obj, dict):
            raise CheckpointParseError(path, INVALID_CONTENT, "metadata 'conf' is not an object", line=2)
        conf = tuple(sorted((str(k), v if isinstance(v, str) else str(v)) for k, v in conf_obj.items()))
    info: tuple[tuple[str, str], ...] = ()
    if version >= 2 and isinstance(obj.get("sourceMetadataInfo"), dict):
        info = tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in obj["sourceMetadataInfo"].items()))
    return OffsetSeqMetadata(
        batch_watermark_ms=json_long(obj, "batchWatermarkMs", path=path, line=2),
        batch_timestamp_ms=json_long(obj, "batchTimestampMs", path=path, line=2),
        conf=conf,
        has_conf=has_conf,
        source_metadata_info=info,
    )


def parse_offsets(data: bytes, *, path: str, max_version: int = MAX_OFFSETS_VERSION) -> OffsetSeq:
    """Parse an offsets file.

    Raises:
        CheckpointParseError: with ``kind`` ``empty`` (Spark: ``Incomplete log file``),
            ``malformed-header``, ``unsupported-version``, ``header-only`` (Spark: ``next on empty
            iterator``), ``bad-json``/``truncated-json`` (metadata line), ``invalid-content`` (v2
            without metadata or a line without ``name:``), ``not-text``, ``java-serialized`` or
            ``too-large`` (more than :data:`MAX_SOURCE_LINES` source lines).
    """
    lines = iter_lines(decode_text(data, path=path))
    first = next(lines, None)
    if first is None:
        raise CheckpointParseError(path, EMPTY, "empty file (Spark: Incomplete log file)")
    version = parse_version_line(first, max_version=max_version, path=path)
    second = next(lines, None)
    if second is None:
        raise CheckpointParseError(
            path, HEADER_ONLY, "only the version line, no metadata line", line=1, version=version
        )
    meta_text = java_trim(second)
    metadata = None
    if meta_text:
        metadata = _parse_metadata(meta_text, version=version, path=path)
    elif version >= 2:
        raise CheckpointParseError(
            path, INVALID_CONTENT, "VERSION_2 offset log requires metadata", line=2, version=version
        )
    return OffsetSeq(version=version, metadata=metadata, sources=_sources(lines, version=version, path=path))


def _sources(lines: Iterator[str], *, version: int, path: str) -> tuple[SourceOffset, ...]:
    sources: list[SourceOffset] = []
    for i, line in enumerate(lines):
        if i == MAX_SOURCE_LINES:
            raise CheckpointParseError(
                path,
                TOO_LARGE,
                f"more than {MAX_SOURCE_LINES} source lines (Spark writes one per source of the query)",
                line=i + 3,
                version=version,
            )
        name = None
        value = line
        if version >= 2:
            name, sep, value = line.partition(":")
            if not sep:
                raise CheckpointParseError(
                    path, INVALID_CONTENT, f"Invalid OffsetMap format: {line[:80]}", line=i + 3
                )
        if value == VOID_OFFSET:
            sources.append(SourceOffset(index=i, raw=None, name=name))
        else:
            sources.append(SourceOffset(index=i, raw=value, name=name, decoded=decode_offset(value)))
    return tuple(sources)


def serialize_offsets(seq: OffsetSeq) -> bytes:
    """Write an :class:`OffsetSeq` as Spark does (no trailing newline); inverse of parse_offsets."""
    lines = [f"v{seq.version}"]
    if seq.metadata is None:
        lines.append("")
    else:
        md: dict[str, Any] = {
            "batchWatermarkMs": seq.metadata.batch_watermark_ms,
            "batchTimestampMs": seq.metadata.batch_timestamp_ms,
        }
        if seq.metadata.has_conf:
            md["conf"] = dict(seq.metadata.conf)
        if seq.metadata.source_metadata_info:
            md["sourceMetadataInfo"] = {k: json.loads(v) for k, v in seq.metadata.source_metadata_info}
        lines.append(json.dumps(md, separators=(",", ":")))
    for src in seq.sources:
        value = VOID_OFFSET if src.raw is None else src.raw
        lines.append(f"{src.name}:{value}" if seq.version >= 2 else value)
    return "\n".join(lines).encode("utf-8")
