"""Parse compactible file-stream logs: the file source's ``sources/<n>/`` and the file sink's
``_spark_metadata/`` (``CompactibleFileStreamLog``): ``v1`` then one JSON object per line.

Also the other ``sources/<n>/0`` files: Kafka initial offsets (a leading NUL byte kept for Spark
2.1.0, ``KafkaSourceInitialOffsetWriter``) and the ``rate`` source's start time
(``RateStreamMicroBatchStream``).
"""

from __future__ import annotations

from checkpoint_doctor.errors import CheckpointParseError
from checkpoint_doctor.model import (
    FileSourceEntry,
    FileSourceLogBatch,
    KafkaInitialOffsets,
    KafkaOffset,
    RateStartTime,
    SinkFileEntry,
    SinkLogBatch,
    SourceMetadataRecord,
)
from checkpoint_doctor.parsing.source_offsets import decode_offset
from checkpoint_doctor.parsing.text import (
    EMPTY,
    INVALID_CONTENT,
    MALFORMED_HEADER,
    decode_text,
    java_parse_long,
    json_long,
    parse_json_value,
    parse_version_line,
    split_lines,
)

FILE_STREAM_LOG_VERSION = 1


def _json_lines(lines: list[str], *, path: str) -> list[dict[str, object]]:
    out = []
    for i, line in enumerate(lines, start=2):
        obj = parse_json_value(line, path=path, line=i)
        if not isinstance(obj, dict):
            raise CheckpointParseError(path, INVALID_CONTENT, "entry is not a JSON object", line=i)
        out.append(obj)
    return out


def parse_sink_log(data: bytes, *, path: str) -> SinkLogBatch:
    """Parse a ``_spark_metadata/<id>`` or ``<id>.compact`` file.

    Raises:
        CheckpointParseError: ``empty`` (Spark: ``Incomplete log file``), header or JSON errors.
    """
    lines = split_lines(decode_text(data, path=path))
    if not lines:
        raise CheckpointParseError(path, EMPTY, "empty file (Spark: Incomplete log file)")
    version = parse_version_line(lines[0], max_version=FILE_STREAM_LOG_VERSION, path=path)
    entries = []
    for i, obj in enumerate(_json_lines(lines[1:], path=path), start=2):
        if not isinstance(obj.get("path"), str):
            raise CheckpointParseError(path, INVALID_CONTENT, "entry without 'path'", line=i)
        entries.append(
            SinkFileEntry(
                path=str(obj["path"]),
                size=json_long(obj, "size", path=path, line=i),
                action=str(obj.get("action", "add")),
            )
        )
    return SinkLogBatch(version=version, entries=tuple(entries))


def _parse_file_source_log(lines: list[str], *, version: int, path: str) -> FileSourceLogBatch:
    entries = []
    for i, obj in enumerate(_json_lines(lines, path=path), start=2):
        if not isinstance(obj.get("path"), str):
            raise CheckpointParseError(path, INVALID_CONTENT, "entry without 'path'", line=i)
        entries.append(
            FileSourceEntry(
                path=str(obj["path"]),
                timestamp_ms=json_long(obj, "timestamp", path=path, line=i),
                batch_id=json_long(obj, "batchId", path=path, line=i),
            )
        )
    return FileSourceLogBatch(version=version, entries=tuple(entries))


def _parse_kafka_initial(data: bytes, *, path: str) -> KafkaInitialOffsets:
    # KafkaSourceInitialOffsetWriter.deserialize: skip one byte, then "v1\n<json>" or 2.1.0 "<json>".
    text = decode_text(data[1:], path=path)
    legacy = not text.startswith("v")
    version = 0
    raw = text
    if not legacy:
        newline = text.find("\n")
        if newline <= 0:
            raise CheckpointParseError(
                path, MALFORMED_HEADER, "failed to detect the log file version line", line=1
            )
        version = parse_version_line(text[:newline], max_version=1, path=path)
        raw = text[newline + 1 :]
    decoded = decode_offset(raw)
    return KafkaInitialOffsets(
        version=version,
        offset=decoded if isinstance(decoded, KafkaOffset) else None,
        raw=raw,
        legacy_format=legacy,
    )


def parse_source_metadata(data: bytes, *, path: str) -> SourceMetadataRecord:
    """Parse a file under ``sources/<n>/``, recognising its kind from the bytes.

    Raises:
        CheckpointParseError: ``empty``, header or JSON errors.
    """
    if not data:
        raise CheckpointParseError(path, EMPTY, "empty file (Spark: Incomplete log file)")
    if data[:1] == b"\x00":
        return _parse_kafka_initial(data, path=path)
    lines = split_lines(decode_text(data, path=path))
    version = parse_version_line(lines[0], max_version=FILE_STREAM_LOG_VERSION, path=path)
    rest = lines[1:]
    if len(rest) == 1:
        start = java_parse_long(rest[0])
        if start is not None:
            return RateStartTime(version=version, start_time_ms=start)
    return _parse_file_source_log(rest, version=version, path=path)
