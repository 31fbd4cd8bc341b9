"""The job's sources against the checkpoint's: what each source reads back on restart. Pure.

Spark numbers a query's sources by their place in the plan (the offsets log has one line per source,
in that order, and ``sources/<n>`` belongs to source ``n``); it never compares a source with the one
that wrote the checkpoint. What a changed source meets is the offset and the log the old one left:

* another kind of source at place ``n`` deserializes the old one's offset line with its own reader
  (``MicroBatchStream.deserializeOffset``, ``ContinuousStream.deserializeOffset``) when the first
  batch or epoch is planned, and fails in that reader's words [exp: job-source-kind-changed,
  job-continuous-on];
* a file source whose path changed re-reads the newest batch's files from its log
  (``FileStreamSource.getBatch``) with ``basePath`` set to its new path (unless the path is a glob),
  and ``PartitioningAwareFileIndex`` requires every logged file to start with it: "Wrong basePath
  <path> for the root path: <file>" [exp: job-file-source-moved]; a glob path gets no basePath and
  reads every file it matches that the log does not list (a copy of old files is read again);
* the continuous ``rate`` source keeps one offset per partition and refuses another
  ``numPartitions`` when it plans the first epoch (``RateStreamContinuousStream``)
  [exp: job-rate-partitions-changed]; a rate limit (``rowsPerSecond``) may change, and so may the
  micro-batch rate source's ``numPartitions`` and rate-micro-batch's ``rowsPerBatch``, which their
  offsets do not record [exp: job-rate-rows-changed, job-rate-source-partitions-changed,
  job-rate-micro-batch-rows-changed];
* a Kafka source plans its next batch from the old offsets to the latest offsets of what it now
  subscribes to: a partition of the old offsets its subscription leaves out is one that is "gone"
  (``KafkaOffsetReaderAdmin.getOffsetRangesFromResolvedOffsets``), which ``failOnDataLoss`` (true by
  default) refuses; with false the old topic's unread records are dropped and the new topic is read
  from its earliest offsets [exp: kafka-job-topic-changed, kafka-job-topic-changed-lenient]; a topic
  added to the subscription is read from its earliest offsets [exp: kafka-job-topic-added].
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from checkpoint_doctor.diagnosis.changes.facts import JobFacts, JobSource
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.sources.files import FILE, source_logs
from checkpoint_doctor.diagnosis.spark_line import SparkError
from checkpoint_doctor.model import (
    ContinuousRateOffset,
    FileSourceLogBatch,
    FileSourceOffset,
    KafkaOffset,
    SourceOffset,
)

#: The short names of Spark's file formats (a file source's ``StreamingRelation`` is named
#: ``FileSource[<path>]``; these are what ``format(...)`` takes).
FILE_FORMATS = frozenset({"json", "csv", "parquet", "orc", "text", "avro", "xml", "binaryfile"})


def is_file_source(source: JobSource) -> bool:
    """Return whether the job's source is Spark's file source."""
    name = source.name.lower()
    return name.startswith("filesource[") or name in FILE_FORMATS


def offset_type(source: JobSource, mode: str) -> str | None:
    """Return the offset type (``DecodedOffset.type``) the job's source writes in ``mode``, or None
    when the source is not one whose offsets the tool decodes (it is then not compared)."""
    name = source.name.lower()
    if name == "rate-micro-batch":
        return "rate-micro-batch"
    if name == "rate":
        return "continuous-rate" if mode == "continuous" else "long"
    if name == "kafka":
        return "kafka"
    if name == "delta":
        return "delta"
    if is_file_source(source):
        return FILE
    return None


#: What a line of the offsets log holds, by offset type (the findings name the kind of source).
KIND_NAMES = {
    "rate-micro-batch": "rate-micro-batch source",
    "long": "rate source (or another LongOffset source)",
    "continuous-rate": "continuous rate source",
    "kafka": "Kafka source",
    "delta": "Delta source",
    FILE: "file source",
}


@dataclass(frozen=True)
class KindChange:
    """Source ``index`` of the job is another kind than the one whose offset the checkpoint holds."""

    index: int
    in_checkpoint: str
    in_job: str
    job_source: JobSource
    raw: str


def newest_offsets(ctx: Context) -> tuple[SourceOffset, ...]:
    """Return the source lines of the newest readable offsets file."""
    for entry in reversed(ctx.snapshot.offsets.entries):
        if entry.record is not None:
            return entry.record.sources
    return ()


def kind_changes(ctx: Context, job: JobFacts) -> tuple[KindChange, ...]:
    """Return the sources whose kind differs from the offset at their place (both known)."""
    out = []
    for src, job_source in zip(newest_offsets(ctx), job.sources, strict=False):
        want = offset_type(job_source, ctx.mode)
        if src.raw is None or src.decoded is None or want is None or src.decoded.type == want:
            continue
        out.append(KindChange(src.index, src.decoded.type, want, job_source, src.raw))
    return tuple(out)


#: The readers that parse their start offset while the next batch is planned
#: (``MicroBatchExecution.constructNextBatch`` asks a ``SupportsAdmissionControl`` stream for its
#: ``latestOffset(start, limit)``); the others (the rate source, the V1 file source) parse it when the
#: batch runs (``runBatch``), after every planning [exp: job-sources-reordered: the rate-micro-batch
#: source at place 1 fails on the rate source's offset before the rate source at place 0 runs].
PARSED_WHILE_PLANNING = frozenset({"rate-micro-batch", "kafka"})


def kind_error(ctx: Context, job: JobFacts) -> SparkError | None:
    """The changed source Spark fails on first (the readers parsed while planning, in source order,
    then the others), in the line's words, or None."""
    changes = sorted(kind_changes(ctx, job), key=lambda c: (c.in_job not in PARSED_WHILE_PLANNING, c.index))
    if not changes:
        return None
    first = changes[0]
    return ctx.target.source_offset_unreadable(first.in_checkpoint, first.in_job, first.raw)


# --------------------------------------------------------------------------------- file source


def _qualified(path: str) -> str | None:
    """Return a path as Hadoop qualifies it for the comparison (``file:`` URIs and absolute local
    paths as the path; other schemes as ``scheme://authority/path``), None for a relative path
    (qualified against the job's working directory, which is not known here)."""
    parts = urlsplit(path)
    if parts.scheme in ("", "file"):
        local = parts.path if parts.scheme else path
        return local if local.startswith("/") else None
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def _is_glob(path: str) -> bool:
    # SparkHadoopUtil.isGlobPath: any of {}[]*?\ in the path.
    return any(c in path for c in "{}[]*?\\")


@dataclass(frozen=True)
class FileSourceMove:
    """A file source whose path no longer holds the files its log lists."""

    index: int
    job_path: str
    #: The directories of the logged files read (the first few).
    logged_dirs: tuple[str, ...]
    glob: bool


def _logged_files(ctx: Context, index: int, first: int, last: int) -> list[str]:
    """The files the log lists for batches ``first..last`` (compaction files included), among the
    log files the snapshot read (the newest batch's, and what a restart reads, are)."""
    log = source_logs(ctx.snapshot).get(index)
    if log is None:
        return []
    out: dict[str, None] = {}
    for entry in log.entries:
        if isinstance(entry.record, FileSourceLogBatch):
            for f in entry.record.entries:
                if first <= f.batch_id <= last:
                    out.setdefault(f.path, None)
    return list(out)


def _job_path(source: JobSource) -> str | None:
    return dict(source.options).get("path")


def file_source_moves(ctx: Context, job: JobFacts) -> tuple[FileSourceMove, ...]:
    """Return the file sources whose path does not hold the files their log lists (every file of
    the log outside the job's path, or not matched by its glob)."""
    kinds = ctx.facts.source_kinds
    out = []
    for index, source in enumerate(job.sources):
        path = _job_path(source)
        if not is_file_source(source) or path is None or kinds.get(index) != FILE:
            continue
        glob = _is_glob(path)
        base = _qualified(path)
        files = _logged_files(ctx, index, 0, 1 << 62)
        if base is None or not files:
            continue
        qualified = [q for q in (_qualified(f) for f in files) if q is not None]
        if glob:
            inside = [f for f in qualified if fnmatch.fnmatch(f, base) or fnmatch.fnmatch(_parent(f), base)]
        else:
            inside = [f for f in qualified if f.startswith(base)]
        if inside:
            continue
        dirs = tuple(dict.fromkeys(_parent(f) for f in qualified))
        out.append(FileSourceMove(index, path, dirs[:3], glob))
    return tuple(out)


def _parent(path: str) -> str:
    return path.rstrip("/").rpartition("/")[0]


def base_path_error(
    ctx: Context,
    job: JobFacts,
    start: tuple[SourceOffset, ...] | None,
    end: tuple[SourceOffset, ...] | None,
) -> SparkError | None:
    """``FileStreamSource.getBatch(start, end)`` of the restart with the job's path as ``basePath``:
    every file the log lists for the batch must start with it (``PartitioningAwareFileIndex``)."""
    if end is None:
        return None
    for index, source in enumerate(job.sources):
        path = _job_path(source)
        if not is_file_source(source) or path is None or _is_glob(path) or index >= len(end):
            continue
        base = _qualified(path)
        stop = end[index].decoded
        begin = start[index].decoded if start is not None and index < len(start) else None
        if base is None or not isinstance(stop, FileSourceOffset):
            continue
        first = begin.log_offset + 1 if isinstance(begin, FileSourceOffset) else 0
        for f in _logged_files(ctx, index, first, stop.log_offset):
            q = _qualified(f)
            if q is not None and not q.startswith(base):
                return ctx.target.wrong_base_path(path, f)
    return None


# --------------------------------------------------------------------------------- rate source


@dataclass(frozen=True)
class RatePartitionsChange:
    """The continuous rate source's partitions: the checkpoint's offset has ``in_checkpoint``, the
    job asks for ``in_job`` (None: not set, Spark's default is the cluster's default parallelism)."""

    index: int
    in_checkpoint: int
    in_job: int | None


def rate_partitions_change(ctx: Context, job: JobFacts) -> RatePartitionsChange | None:
    """Return the first continuous rate source whose partitions differ from its offset's."""
    if ctx.mode != "continuous":
        return None
    for src, source in zip(newest_offsets(ctx), job.sources, strict=False):
        if source.name.lower() != "rate" or not isinstance(src.decoded, ContinuousRateOffset):
            continue
        stored = len(src.decoded.partitions)
        raw = {k.lower(): v for k, v in source.options}.get("numpartitions")
        wanted = int(raw) if raw is not None and raw.strip().isdigit() else None
        if wanted != stored:
            return RatePartitionsChange(src.index, stored, wanted)
    return None


# --------------------------------------------------------------------------------- Kafka source


@dataclass(frozen=True)
class KafkaTopicsChange:
    """A Kafka source whose subscription no longer covers partitions its offsets hold (``gone``)."""

    index: int
    gone: tuple[tuple[str, int], ...]
    subscription: str
    fail_on_data_loss: bool

    @property
    def names(self) -> str:
        """Return the partitions as the connector names them (``events-0, events-1``)."""
        return ", ".join(f"{t}-{p}" for t, p in self.gone)


def _covers(options: dict[str, str], topic: str, partition: int) -> bool | None:
    """Whether the subscription reads the partition (None: no subscription the tool understands)."""
    if "subscribe" in options:
        return topic in {t.strip() for t in options["subscribe"].split(",") if t.strip()}
    if "subscribepattern" in options:
        # SubscribePatternStrategy.assignedTopicPartitions (the Admin path, the default since 3.4) keeps
        # a topic where ``topicRegex.findFirstIn(name)`` finds the pattern anywhere in the name.
        try:
            return re.search(options["subscribepattern"], topic) is not None
        except re.error:
            return None
    if "assign" in options:
        try:
            assigned = json.loads(options["assign"])
        except ValueError:
            return None
        if not isinstance(assigned, dict):
            return None
        return partition in {int(p) for p in assigned.get(topic) or []}
    return None


def kafka_topics_changes(ctx: Context, job: JobFacts) -> tuple[KafkaTopicsChange, ...]:
    """Return the Kafka sources whose subscription (``subscribe``, ``subscribePattern`` or
    ``assign``) leaves out partitions the checkpoint's newest offsets hold."""
    out = []
    for src, source in zip(newest_offsets(ctx), job.sources, strict=False):
        if source.name.lower() != "kafka" or not isinstance(src.decoded, KafkaOffset):
            continue
        options = {k.lower(): v for k, v in source.options}
        gone = []
        for topic, partition in _in_line_order(src):
            if _covers(options, topic, partition) is False:
                gone.append((topic, partition))
        if gone:
            kind = next(k for k in ("subscribe", "subscribepattern", "assign") if k in options)
            shown = {"subscribe": "subscribe", "subscribepattern": "subscribePattern", "assign": "assign"}[
                kind
            ]
            fail = options.get("failondataloss", "true").strip().lower() != "false"
            # In the offsets line's order: the connector's Set of up to 4 keeps it (a Scala Set1..Set4).
            out.append(KafkaTopicsChange(src.index, tuple(gone), f"{shown}={options[kind]}", fail))
    return tuple(out)


def _in_line_order(src: SourceOffset) -> list[tuple[str, int]]:
    """The offsets line's (topic, partition) pairs in the order the line writes them (3.5.9 wrote
    ``{"events":{"2":15,"1":15,"0":15}}``, 4.x ``{"events":{"0":15,...}}``): the connector's message
    names them in that order."""
    assert isinstance(src.decoded, KafkaOffset)
    try:
        data = json.loads(src.raw or "")
        return [(str(t), int(p)) for t, parts in data.items() for p in parts]
    except (ValueError, AttributeError, TypeError):
        return [(t, p) for t, p, _ in src.decoded.partitions]


# --------------------------------------------------------------------------------- Delta source


def delta_source_paths(job: JobFacts) -> tuple[str, ...]:
    """Return the table paths the job's Delta sources read (a table read by name has none here).

    A Delta source checks the table id its offsets hold (``reservoirId``) against the table it reads
    now (``DeltaSource``): another table at the job's path fails as a replaced one does,
    ``DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE`` [exp: delta-source-stateless-replaced], and a
    copy of the same table (same id) is read on. The caller reads these tables as ``--delta-table``."""
    return tuple(dict.fromkeys(delta_source_paths_by_index(job).values()))


def delta_source_paths_by_index(job: JobFacts) -> dict[int, str]:
    """Return the table path each of the job's Delta sources reads, by source index (Spark's order of
    the plan's sources is the offsets log's: source ``n`` of the job resumes from source ``n``'s
    offset)."""
    out: dict[int, str] = {}
    for n, source in enumerate(job.sources):
        path = dict(source.options).get("path")
        if source.name.lower() == "delta" and path:
            out[n] = path
    return out
