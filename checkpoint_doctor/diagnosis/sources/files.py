"""What Spark reads under ``sources/<n>/`` on restart, and when. Pure.

Three sources keep files there (``RateStreamMicroBatchStream``, ``FileStreamSourceLog``,
``KafkaSourceInitialOffsetWriter``), each read at its own moment:

* ``rate`` in micro-batch (``RateStreamMicroBatchStream``): ``sources/<n>/0`` holds the start time,
  read when the stream is created (its ``creationTimeMs``), i.e. when the query thread builds the
  logical plan ("Initializing sources", ``StreamExecution.runStream``), before any offsets file.
* the file source (``FileStreamSource``): its constructor reads the newest log entry
  (``metadataLog.getLatest``) and every entry from the newest compaction on (``metadataLog.restore``
  -> ``CompactibleFileStreamLog.allFiles``); later ``getBatch(start, end)`` reads the entries
  ``start+1..end`` (``FileStreamSourceLog.get``): in ``populateStartOffsets`` when the newest batch is
  committed (or one behind), and for the re-run batch in ``runBatch``.
* Kafka (``KafkaMicroBatchStream``, the default micro-batch reader): ``sources/<n>/0`` holds the
  initial offsets, read only by ``initialOffset()``, which ``MicroBatchExecution`` calls when the
  batch to run has no start offset for the source (``current.getOrElse(stream.initialOffset)``): a
  first batch, or a ``-`` line. A restart from offsets/ never reads it.

Which source a ``sources/<n>`` directory belongs to comes from the offsets line of source ``n``
(``FileStreamSourceOffset``, ``LongOffset``, ``KafkaSourceOffset``), else from the file itself.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from checkpoint_doctor.diagnosis.spark_line import SparkError
from checkpoint_doctor.diagnosis.versions import SparkTarget
from checkpoint_doctor.ids import missing_in
from checkpoint_doctor.model import (
    FileSourceLogBatch,
    FileSourceOffset,
    KafkaInitialOffsets,
    KafkaOffset,
    LogEntry,
    LongOffset,
    RateStartTime,
    SourceMetadataRecord,
    SourceOffset,
)
from checkpoint_doctor.parsing.compactible import is_kafka_initial_offsets
from checkpoint_doctor.parsing.text import iter_lines
from checkpoint_doctor.reading.positions import newest_sources
from checkpoint_doctor.reading.snapshot import BatchLog, CheckpointSnapshot, derive_compact_interval
from checkpoint_doctor.valueclasses import frozen

RATE = "rate"
FILE = "file"
KAFKA = "kafka"
#: spark.sql.streaming.fileSource.log.compactInterval
DEFAULT_COMPACT_INTERVAL = 10
COMPACT_INTERVAL_CONF = "spark.sql.streaming.fileSource.log.compactInterval"


@frozen
class SourceFileProblem:
    """A file of ``sources/<n>/`` that is missing or unreadable, and what Spark says reading it."""

    source: int
    kind: str
    path: str
    reason: str
    error: SparkError


def source_logs(snapshot: CheckpointSnapshot) -> dict[int, BatchLog[SourceMetadataRecord]]:
    """Return the ``sources/<n>`` logs of positional (v1) sources by index."""
    out = {}
    for log in snapshot.sources:
        name = log.path.rpartition("/")[2]
        if name.isdigit():
            out[int(name)] = log
    return out


def _kind_of_log(log: BatchLog[SourceMetadataRecord], raw: Mapping[str, bytes]) -> str | None:
    for entry in log.entries:
        if isinstance(entry.record, FileSourceLogBatch):
            return FILE
        if isinstance(entry.record, KafkaInitialOffsets):
            return KAFKA
        if isinstance(entry.record, RateStartTime):
            return RATE
    first = log.get(0)
    if first is not None and is_kafka_initial_offsets(raw.get(first.file.path, b"")):
        return KAFKA
    if len(log.entries) > 1 or any(e.compact for e in log.entries):
        return FILE
    return None


def source_kinds(snapshot: CheckpointSnapshot) -> dict[int, str]:
    """Return the kind (rate, file, kafka) of every source that keeps files, by source index.

    A diagnosis asks for it once per snapshot (``SnapshotFacts.source_kinds``) and hands it to
    the functions below as ``kinds``: every cell of a restart matrix asks several times."""
    return _source_kinds(snapshot)


def _source_kinds(snapshot: CheckpointSnapshot) -> dict[int, str]:
    logs = source_logs(snapshot)
    kinds: dict[int, str] = {}
    for src in newest_sources(snapshot):
        decoded = src.decoded
        if isinstance(decoded, FileSourceOffset):
            kinds[src.index] = FILE
        elif isinstance(decoded, KafkaOffset):
            kinds[src.index] = KAFKA
        elif isinstance(decoded, LongOffset) and src.index in logs:
            # LongOffset is also the socket and memory sources' offset; only rate keeps sources/<n>/0
            kinds[src.index] = RATE
    for n, log in logs.items():
        if n not in kinds:
            kind = _kind_of_log(log, snapshot.raw)
            if kind is not None:
                kinds[n] = kind
    return kinds


def _failing_line(raw: bytes | None, line: int | None) -> str | None:
    if raw is None or line is None:
        return None
    if line <= 0:
        return None
    return next(itertools.islice(iter_lines(raw.decode("utf-8", "replace")), line - 1, None), None)


def _unreadable(
    target: SparkTarget, n: int, kind: str, entry: LogEntry[SourceMetadataRecord], raw: bytes | None
) -> SourceFileProblem | None:
    failure = entry.failure
    if failure is None:
        return None
    too_new = None
    if failure.kind == "unsupported-version" and failure.version is not None:
        too_new = target.too_new(
            failure.path, failure.version, log="sources", phase="batch" if kind == KAFKA else "init"
        )
    if kind == RATE:
        error = target.rate_start_unreadable(failure, raw or b"", too_new=too_new)
    elif kind == KAFKA:
        error = target.kafka_initial_unreadable(failure, too_new=too_new)
    else:
        error = too_new or target.file_source_entry_unreadable(failure, _failing_line(raw, failure.line))
    return SourceFileProblem(n, kind, failure.path, failure.reason, error)


# --------------------------------------------------------------------------------- file source
def compact_interval(log: BatchLog[SourceMetadataRecord], default: int) -> int:
    """``CompactibleFileStreamLog.compactInterval``: the conf, unless the newest compaction disagrees."""
    compacts = [e.batch_id for e in log.entries if e.compact]
    if compacts and (max(compacts) + 1) % default != 0:
        return derive_compact_interval(default, max(compacts))
    return default


def _entry_path(log: BatchLog[SourceMetadataRecord], batch_id: int, interval: int) -> str:
    compact = (batch_id + 1) % interval == 0
    return f"{log.path}/{batch_id}" + (".compact" if compact else "")


def _file_source_created(
    target: SparkTarget,
    n: int,
    log: BatchLog[SourceMetadataRecord],
    raw: Mapping[str, bytes],
    default_interval: int,
) -> list[SourceFileProblem]:
    """``FileStreamSource``'s constructor: ``getLatest`` then ``allFiles`` from the newest compaction."""
    latest = log.latest
    if latest is None:
        return []
    out = []
    problem = _unreadable(target, n, FILE, latest, raw.get(latest.file.path))
    if problem is not None:
        out.append(problem)
    interval = compact_interval(log, default_interval)
    first = max(0, (latest.batch_id + 1) // interval * interval - 1)
    # The entries from the newest compaction on, in id order: the missing ones (the first few:
    # ids and intervals are any long) and the unreadable present ones. Never every id in between.
    found: list[tuple[int, SourceFileProblem]] = []
    for batch_id in missing_in(first, latest.batch_id, log.ids):
        path = _entry_path(log, batch_id, interval)
        error = target.file_source_entry_missing(path, latest.batch_id, interval)
        found.append((batch_id, SourceFileProblem(n, FILE, path, "missing", error)))
    for entry in log.entries:
        if (
            first <= entry.batch_id <= latest.batch_id
            and entry is not latest
            and log.get(entry.batch_id) is entry
        ):
            problem = _unreadable(target, n, FILE, entry, raw.get(entry.file.path))
            if problem is not None:
                found.append((entry.batch_id, problem))
    out.extend(problem for _, problem in sorted(found, key=lambda x: x[0]))
    return out


def _log_offset(src: SourceOffset | None) -> int | None:
    return src.decoded.log_offset if src is not None and isinstance(src.decoded, FileSourceOffset) else None


def file_source_range(
    target: SparkTarget,
    snapshot: CheckpointSnapshot,
    start: tuple[SourceOffset, ...] | None,
    end: tuple[SourceOffset, ...] | None,
    *,
    kinds: Mapping[int, str] | None = None,
) -> SourceFileProblem | None:
    """``FileStreamSource.getBatch(start, end)``: the entries ``start+1..end`` must be found.

    An entry at or below the newest compaction is found in the compaction file even when its own
    file is gone (``FileStreamSourceLog.get`` looks there for removed batches).
    """
    if end is None:
        return None
    logs = source_logs(snapshot)
    for n, kind in sorted((kinds if kinds is not None else _source_kinds(snapshot)).items()):
        log = logs.get(n)
        if kind != FILE or log is None or n >= len(end):
            continue
        stop = _log_offset(end[n])
        begin = _log_offset(start[n]) if start is not None and n < len(start) else -1
        if stop is None or begin is None or begin >= stop:
            continue
        problem = _range_problem(target, n, log, begin + 1, stop)
        if problem is not None:
            return problem
    return None


def _range_problem(
    target: SparkTarget, n: int, log: BatchLog[SourceMetadataRecord], first: int, last: int
) -> SourceFileProblem | None:
    """The first id of ``first..last`` neither in the log nor folded into its newest compaction.

    Work follows the entries, not the span: log offsets are any long.
    """
    newest_compact = max((e.batch_id for e in log.entries if e.compact), default=-1)
    covered_to = min(last, newest_compact)  # ids up to the newest compaction are found in it
    listed = sorted(i for i in log.ids if max(first, covered_to + 1) <= i <= last)
    gap = missing_in(max(first, covered_to + 1), last, listed, limit=1)
    if not gap:
        return None
    present_first = first if covered_to >= first else (listed[0] if listed else None)
    present_last = listed[-1] if listed else (covered_to if covered_to >= first else None)
    present = () if present_first is None or present_last is None else (present_first, present_last)
    error = target.file_source_range_missing(first, last, present)
    return SourceFileProblem(n, FILE, f"{log.path}/{gap[0]}", "missing", error)


# --------------------------------------------------------------------------------- entry points
def created_problems(
    target: SparkTarget,
    snapshot: CheckpointSnapshot,
    confs: Mapping[str, str],
    *,
    kinds: Mapping[int, str] | None = None,
) -> list[SourceFileProblem]:
    """Problems Spark meets creating the sources (rate start time, file source log), in order."""
    logs = source_logs(snapshot)
    try:
        interval = int(confs.get(COMPACT_INTERVAL_CONF, DEFAULT_COMPACT_INTERVAL))
    except ValueError:
        interval = DEFAULT_COMPACT_INTERVAL
    out: list[SourceFileProblem] = []
    for n, kind in sorted((kinds if kinds is not None else _source_kinds(snapshot)).items()):
        log = logs.get(n)
        if log is None:
            continue
        if kind == RATE:
            entry = log.get(0)
            problem = (
                _unreadable(target, n, RATE, entry, snapshot.raw.get(entry.file.path)) if entry else None
            )
            out.extend([problem] if problem else [])
        elif kind == FILE:
            out.extend(_file_source_created(target, n, log, snapshot.raw, interval))
    return out


def kafka_problems(
    target: SparkTarget, snapshot: CheckpointSnapshot, *, kinds: Mapping[int, str] | None = None
) -> list[SourceFileProblem]:
    """Kafka initial-offsets files that cannot be read (read only by a batch without start offsets)."""
    logs = source_logs(snapshot)
    out = []
    for n, kind in sorted((kinds if kinds is not None else _source_kinds(snapshot)).items()):
        entry = logs[n].get(0) if kind == KAFKA and n in logs else None
        problem = _unreadable(target, n, KAFKA, entry, None) if entry is not None else None
        if problem is not None:
            out.append(problem)
    return out


def kafka_reads(start: tuple[SourceOffset, ...] | None, source: int) -> bool:
    """Whether the batch to run asks Kafka source ``source`` for its initial offsets."""
    return start is None or source >= len(start) or start[source].raw is None
