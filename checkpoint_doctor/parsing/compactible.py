"""Parse compactible file-stream logs: the file source's ``sources/<n>/`` and the file sink's
``_spark_metadata/`` (``CompactibleFileStreamLog``): ``v1`` then one JSON object per line.

Also the other ``sources/<n>/0`` files: Kafka initial offsets (a leading NUL byte kept for Spark
2.1.0, ``KafkaSourceInitialOffsetWriter``) and the ``rate`` source's start time
(``RateStreamMicroBatchStream``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator

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
    DECODER,
    EMPTY,
    INVALID_CONTENT,
    MALFORMED_HEADER,
    decode_text,
    iter_lines,
    java_parse_long,
    json_long,
    parse_json_value,
    parse_version_line,
)

FILE_STREAM_LOG_VERSION = 1


def _json_lines(lines: Iterable[str], *, path: str) -> Iterator[tuple[int, dict[str, object]]]:
    """Yield (line number, object) for the entry lines, one at a time (a compact file can hold
    hundreds of thousands: only the parsed entries are kept, never the lines)."""
    for i, line in enumerate(lines, start=2):
        obj = parse_json_value(line, path=path, line=i)
        if not isinstance(obj, dict):
            raise CheckpointParseError(path, INVALID_CONTENT, "entry is not a JSON object", line=i)
        yield i, obj


def parse_sink_log(data: bytes, *, path: str) -> SinkLogBatch:
    """Parse a ``_spark_metadata/<id>`` or ``<id>.compact`` file.

    Raises:
        CheckpointParseError: ``empty`` (Spark: ``Incomplete log file``), header or JSON errors.
    """
    lines = iter_lines(decode_text(data, path=path))
    first = next(lines, None)
    if first is None:
        raise CheckpointParseError(path, EMPTY, "empty file (Spark: Incomplete log file)")
    version = parse_version_line(first, max_version=FILE_STREAM_LOG_VERSION, path=path)
    entries: list[SinkFileEntry] = []
    append = entries.append
    decode = DECODER.raw_decode
    canonical = _CANONICAL.fullmatch
    for i, line in enumerate(lines, start=2):
        # A line exactly as Spark writes it (SinkFileStatus serialised by json4s, its path without
        # an escape) is read by a regular expression at a third of the JSON decoder's time; any
        # other line goes through the decoder (bench: audit, a compact file lists every file).
        match = canonical(line)
        if match is not None:
            file, size, written, action = match.groups()
            append(SinkFileEntry(file, int(size), action, int(written)))
            continue
        # parse_json_value's common case inline: a line that starts with its value (raw_decode
        # reads the first value as Jackson does); anything else, errors included, goes through it.
        try:
            obj = decode(line)[0]
        except (ValueError, RecursionError):
            obj = parse_json_value(line, path=path, line=i)
        if not isinstance(obj, dict):
            raise CheckpointParseError(path, INVALID_CONTENT, "entry is not a JSON object", line=i)
        file = obj.get("path")
        if not isinstance(file, str):
            raise CheckpointParseError(path, INVALID_CONTENT, "entry without 'path'", line=i)
        # json_long's common case inline (a compact file lists every file the sink wrote).
        size = obj.get("size", 0)
        if type(size) is not int or not _LONG_MIN <= size <= _LONG_MAX:
            size = json_long(obj, "size", path=path, line=i)
        # SinkFileStatus.modificationTime: when the task wrote the file (pairs a sink with the
        # checkpoint whose batch planned it; see world/sink_pairing.py).
        written = obj.get("modificationTime", _ABSENT)
        if written is _ABSENT:
            written = None
        elif type(written) is not int or not _LONG_MIN <= written <= _LONG_MAX:
            written = json_long(obj, "modificationTime", path=path, line=i)
        action = obj.get("action", "add")
        append(SinkFileEntry(str(file), size, action if type(action) is str else str(action), written))
    return SinkLogBatch(version=version, entries=tuple(entries))


_ABSENT = object()
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1

#: A JSON non-negative integer that fits a long (no leading zero: JSON has none; 18 digits at most).
_NUMBER = r"(?:0|[1-9][0-9]{0,17})"
#: A sink log line as FileStreamSinkLog writes it (json4s ``Serialization.write`` of a
#: ``SinkFileStatus``: these keys in this order, no spaces): path (a JSON string without escapes
#: or control characters, so its text is its value), size, modificationTime, action.
_CANONICAL = re.compile(
    rf'\{{"path":"([^"\\\x00-\x1f]*)","size":({_NUMBER}),"isDir":false,"modificationTime":({_NUMBER}),'
    rf'"blockReplication":{_NUMBER},"blockSize":{_NUMBER},"action":"(add|delete)"\}}'
)


def _parse_file_source_log(lines: Iterable[str], *, version: int, path: str) -> FileSourceLogBatch:
    entries = []
    for i, obj in _json_lines(lines, path=path):
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


def is_kafka_initial_offsets(data: bytes) -> bool:
    """Whether a ``sources/<n>/0`` file has the shape of Kafka initial offsets.

    ``KafkaSourceInitialOffsetWriter.serialize`` writes a NUL byte, ``v1\n`` and the JSON; Spark
    2.1.0's KafkaSource wrote ``out.write(bytes.length)`` (one byte: the JSON length's low 8 bits)
    and the JSON, no version line (SPARK-19517). The reader skips the first byte whatever it is, so
    a first byte other than ``v`` followed by ``{`` or ``v`` is Kafka's (a 2.1.0 file whose JSON is
    118 bytes long, first byte ``v``, is the one shape this cannot tell from a text log).
    """
    return data[:1] == b"\x00" or (len(data) > 1 and data[:1] != b"v" and data[1:2] in (b"{", b"v"))


def _parse_kafka_initial(data: bytes, *, path: str) -> KafkaInitialOffsets:
    # KafkaSourceInitialOffsetWriter.deserialize: skip one byte, then "v1\n<json>" or 2.1.0 "<json>";
    # nothing after the first byte fails its require(content.nonEmpty).
    if len(data) < 2:
        raise CheckpointParseError(path, EMPTY, "no content after the first byte (Spark: requirement failed)")
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
    if is_kafka_initial_offsets(data):
        return _parse_kafka_initial(data, path=path)
    lines = iter_lines(decode_text(data, path=path))
    version = parse_version_line(next(lines, ""), max_version=FILE_STREAM_LOG_VERSION, path=path)
    head = list(itertools.islice(lines, 2))
    if len(head) == 1:
        start = java_parse_long(head[0])
        if start is not None:
            return RateStartTime(version=version, start_time_ms=start)
    return _parse_file_source_log(itertools.chain(head, lines), version=version, path=path)
