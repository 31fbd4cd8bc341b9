"""Audit records as values: one frozen dataclass per kind of record, built once by the audit's
record stream (:class:`~checkpoint_doctor.fleet.run.RecordStream`) and read by every renderer (text,
HTML, metrics) through typed fields. Pure.

* :class:`CheckpointRecord`: a checkpoint, diagnosed as ``diagnose`` does (its
  :class:`~checkpoint_doctor.diagnosis.matrix.MatrixDiagnosis` is kept whole: the rules a renderer
  needs, such as :attr:`MatrixDiagnosis.failing_cells`, are the model's own);
* :class:`SinkRecord`: a file sink output checked on its own;
* :class:`UnreadableRecord`: a checkpoint, sink or root that could not be read.

JSON is made only where it is written: :meth:`Record.to_json` returns the object of
``schemas/audit-record.json``, key for key and in the order the schema's documents always had.

Adding a field to a kind of record (one place per kind): declare it on that class with a default
(``delta: DeltaPart | None = None``), pass it where the record is built
(:func:`~checkpoint_doctor.fleet.report.checkpoint_record` / ``sink_record``, called by
``fleet/run.py``'s ``_audit_checkpoint`` / ``_audit_sink``), write it in that class's ``_body`` at
the place its key belongs (an optional key only when it is set, as ``kafka``), and describe it in
``schemas/audit-record.json``. Renderers read ``record.delta`` on a ``CheckpointRecord``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from checkpoint_doctor.diagnosis.timeline import SinkRow, TimelineRow
from checkpoint_doctor.diagnosis.versions import at_root
from checkpoint_doctor.enums import TextEnum
from checkpoint_doctor.exit_codes import ExitCode
from checkpoint_doctor.fleet.discovery import TargetKind
from checkpoint_doctor.render.documents import JsonObject, iso_utc, schema_version

if TYPE_CHECKING:
    from checkpoint_doctor.diagnosis.matrix import CellDiagnosis, MatrixDiagnosis
    from checkpoint_doctor.diagnosis.model import Finding
    from checkpoint_doctor.diagnosis.sources.kafka_retention import Countdown
    from checkpoint_doctor.world.delta_pairing import DeltaPairing


class Verdict(TextEnum):
    """A record's verdict, in the one order every output uses: the worst first. An error (a restart
    that fails, a sink readers cannot use) is what to fix; an unreadable directory may hide one; a
    warning may need nothing."""

    ERROR = "error"
    UNREADABLE = "unreadable"
    WARNING = "warning"
    OK = "ok"


OK = Verdict.OK
WARNING = Verdict.WARNING
ERROR = Verdict.ERROR
UNREADABLE = Verdict.UNREADABLE
#: The verdicts, worst first: the triage order, the tables, the summary and the metrics.
VERDICTS = tuple(Verdict)
#: How bad a verdict is (0: worst).
VERDICT_ORDER = {v: i for i, v in enumerate(VERDICTS)}

#: The kind of a record of a root (or of a directory outside every target) that could not be listed.
ROOT = "root"
#: Every kind of record, in the summary's order.
RECORD_KINDS = (str(TargetKind.CHECKPOINT), str(TargetKind.SINK), ROOT)


def verdict_of(exit_code: int) -> Verdict:
    """Return the verdict of a record's exit code."""
    if exit_code & (ExitCode.UNREADABLE | ExitCode.INTERNAL):
        return UNREADABLE
    if exit_code & ExitCode.ERRORS:
        return ERROR
    if exit_code & ExitCode.WARNINGS:
        return WARNING
    return OK


def fails_if_stateful(cell: CellDiagnosis) -> bool:
    """Whether a restart that starts fails if the query is stateful (statefulness unknown, CD310)."""
    return not cell.fails and (cell.if_stateful or "").startswith("FAILS")


# ------------------------------------------------------------------------------- the parts


@dataclass(frozen=True)
class Stamp:
    """The envelope fields every written record carries (``audit-record.json``)."""

    tool_version: str
    generated_at: str

    @classmethod
    def at(cls, generated_at_ms: int) -> Stamp:
        """Return the stamp of this tool at a time (epoch millis)."""
        from checkpoint_doctor.version import __version__

        return cls(__version__, iso_utc(generated_at_ms))


@dataclass(frozen=True)
class RecordError:
    """Why a directory could not be audited."""

    type: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"type": self.type, "message": self.message}


@dataclass(frozen=True)
class Restart:
    """The restart that counts (the matrix's primary cell) in a line: its outcome and summary (with
    "if stateless; if stateful: ..." when it starts only if the query is stateless, as diagnose's
    "?"), the next batch id, the codes that cause a failure, and what a stateful query meets."""

    starts: bool
    summary: str
    next_batch_id: int | None
    caused_by: tuple[str, ...] = ()
    if_stateful: str | None = None
    #: Its Delta tables were not judged (``--spark 4.3``: no Delta Lake release): not a start.
    not_judged: bool = False

    @classmethod
    def of(cls, matrix: MatrixDiagnosis) -> Restart:
        """Return the restart of a matrix's primary cell, its texts naming the checkpoint as Spark does."""
        primary = matrix.primary
        prediction = primary.diagnosis.prediction
        summary = at_root(prediction.summary, matrix.checkpoint)
        if fails_if_stateful(primary):
            summary += f" if stateless; if stateful: {primary.if_stateful}"
        return cls(
            starts=prediction.starts,
            summary=summary,
            next_batch_id=prediction.next_batch_id,
            caused_by=tuple(prediction.caused_by),
            if_stateful=primary.if_stateful,
            not_judged=prediction.not_judged,
        )

    @property
    def outcome(self) -> str:
        """``starts``, ``fails`` or ``not-judged``."""
        return "fails" if not self.starts else "not-judged" if self.not_judged else "starts"

    @property
    def fails(self) -> bool:
        return not self.starts

    @property
    def fails_if_stateful(self) -> bool:
        """Whether it starts only if the query is stateless (CD310)."""
        return self.starts and (self.if_stateful or "").startswith("FAILS")

    def to_json(self) -> JsonObject:
        return {
            "outcome": self.outcome,
            "summary": self.summary,
            "next_batch_id": self.next_batch_id,
            "caused_by": list(self.caused_by),
            "if_stateful": self.if_stateful,
        }


#: The note of a checkpoint audited without looking for its file sink.
SINK_NOT_CHECKED = "sink not checked"


@dataclass(frozen=True)
class FileSink:
    """Which file sink output was checked with a checkpoint (``url``, how its log proved it is the
    query's: ``evidence``), or why none was (``note``)."""

    url: str | None = None
    evidence: str | None = None
    note: str | None = SINK_NOT_CHECKED

    @classmethod
    def checked_at(cls, url: str, evidence: str) -> FileSink:
        return cls(url=url, evidence=evidence, note=None)

    @classmethod
    def not_checked(cls, note: str) -> FileSink:
        return cls(note=note)

    @property
    def checked(self) -> bool:
        return self.url is not None

    def to_json(self) -> JsonObject:
        if self.checked:
            return {"checked": True, "url": self.url, "evidence": self.evidence}
        return {"checked": False, "url": None, "note": self.note}


def ago(ms: int) -> str:
    """Return how long ago, in words (``3 h``, ``2 d 4 h``, ``41 min``): seconds only under an hour."""
    from checkpoint_doctor.diagnosis.sources.kafka_retention import duration

    return duration(ms if ms < 3_600_000 else ms // 60_000 * 60_000)


@dataclass(frozen=True)
class LatestBatches:
    """A checkpoint's newest offsets and commit ids, when the newest batch was planned
    (``batchTimestampMs``), how long before the audit that was (``stopped_ms``: the audit's clock,
    ``MatrixOptions.now_ms``, so a test injects it), and when each batch of the timeline whose
    offsets file was read was planned (``batch_times``: (batch id, epoch millis), oldest first)."""

    offsets: int | None
    commit: int | None
    batch_time_ms: int | None = None
    stopped_ms: int | None = None
    batch_times: tuple[tuple[int, int], ...] = ()

    @property
    def stopped(self) -> str | None:
        """How long before the audit the newest batch was planned (``3 h``), or None."""
        return None if self.stopped_ms is None else ago(self.stopped_ms)

    @property
    def uncommitted(self) -> int | None:
        """The batches planned but not committed (None: no offsets)."""
        return (
            None if self.offsets is None else self.offsets - (self.commit if self.commit is not None else -1)
        )

    def to_json(self) -> JsonObject:
        return {
            "offsets": self.offsets,
            "commit": self.commit,
            "uncommitted": self.uncommitted,
            "batch_time_ms": self.batch_time_ms,
            "batch_time": iso_utc(self.batch_time_ms) if self.batch_time_ms else None,
            "stopped_s": None if self.stopped_ms is None else self.stopped_ms / 1000,
            "stopped": self.stopped,
            "batch_times": [{"batch_id": b, "batch_time_ms": t} for b, t in self.batch_times],
        }


@dataclass(frozen=True)
class PartitionWindow:
    """The retention window of the first unread record of one Kafka partition: written at
    ``written_ms`` (its timestamp), deleted by ``retention.ms`` from ``deadline_ms``."""

    topic: str
    partition: int
    offset: int
    written_ms: int
    deadline_ms: int

    def to_json(self) -> JsonObject:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "written_ms": self.written_ms,
            "deadline_ms": self.deadline_ms,
        }


@dataclass(frozen=True)
class KafkaPart:
    """What a record says about its Kafka sources: the topics, and with a broker
    (``bootstrap``) the retention countdown of the first unread record; without one, how to check."""

    topics: tuple[str, ...]
    bootstrap: str | None = None
    retention: Countdown | None = None
    note: str | None = None
    #: Every unread partition with a retention.ms deadline, soonest first (the HTML's bars).
    partitions: tuple[PartitionWindow, ...] = ()

    @property
    def checked(self) -> bool:
        return self.bootstrap is not None

    def to_json(self) -> JsonObject:
        return {
            "checked": self.checked,
            "bootstrap": self.bootstrap,
            "topics": list(self.topics),
            "retention": None if self.retention is None else self.retention.to_dict(),
            "note": self.note,
            "partitions": [w.to_json() for w in self.partitions],
        }


@dataclass(frozen=True)
class SinkLogPart:
    """A file sink's ``_spark_metadata`` log as a record shows it."""

    latest: int | None
    entries: int
    compacts: tuple[int, ...] = ()
    compact_interval: int | None = None
    missing_for_readers: tuple[str, ...] = ()

    def to_json(self) -> JsonObject:
        return {
            "latest": self.latest,
            "entries": self.entries,
            "compacts": list(self.compacts),
            "compact_interval": self.compact_interval,
            "missing_for_readers": list(self.missing_for_readers),
        }


# ------------------------------------------------------------------------------- the records


@dataclass(frozen=True)
class JobPart:
    """What a checkpoint's record says of the job that judged it (its ``job`` key)."""

    job: str
    glob: str
    spark_version: str
    mode: str
    elapsed_s: float
    summary: str

    def to_json(self) -> JsonObject:
        return {
            "job": self.job,
            "glob": self.glob,
            "spark_version": self.spark_version,
            "mode": self.mode,
            "elapsed_s": self.elapsed_s,
            "summary": self.summary,
        }


@dataclass(frozen=True, kw_only=True)
class Record:
    """What every record has: which directory (``url``, its ``root`` and its ``path`` below it), the
    exit code (the verdict follows from it), the finding codes, the next command (set by the record
    stream) and the envelope stamp (likewise)."""

    kind: str
    url: str
    root: str
    path: str
    exit_code: int
    codes: tuple[str, ...] = ()
    next_step: str | None = None
    stamp: Stamp | None = None

    @property
    def verdict(self) -> Verdict:
        return verdict_of(self.exit_code)

    @property
    def findings(self) -> tuple[Finding, ...]:
        """The record's findings (none for an unreadable directory)."""
        return ()

    def to_json(self) -> JsonObject:
        """Return the record as ``audit-record.json`` has it."""
        data: JsonObject = {"schema_version": schema_version("audit-record")}
        if self.stamp is not None:
            data["tool_version"] = self.stamp.tool_version
            data["generated_at"] = self.stamp.generated_at
        data.update(
            kind=str(self.kind),
            url=self.url,
            root=self.root,
            path=self.path,
            verdict=self.verdict.value,
            exit_code=int(self.exit_code),
            codes=list(self.codes),
            next_step=self.next_step,
        )
        if self.kind in (TargetKind.CHECKPOINT, TargetKind.SINK):
            data[str(self.kind)] = self.url
        data.update(self._body())
        return data

    def _body(self) -> JsonObject:
        return {}


@dataclass(frozen=True, kw_only=True)
class CheckpointRecord(Record):
    """A checkpoint diagnosed for its restart matrix (``diagnosis``), with its newest batches, its
    timeline (the shape ``inspect`` prints), the file sink checked with it and its Kafka sources."""

    kind: str = field(default=str(TargetKind.CHECKPOINT), init=False)
    diagnosis: MatrixDiagnosis
    restart: Restart
    lines: str
    file_sink: FileSink = FileSink()
    files: int = 0
    reads: int = 0
    latest: LatestBatches = LatestBatches(None, None)
    timeline: tuple[TimelineRow, ...] = ()
    kafka: KafkaPart | None = None
    #: Its Delta tables: which are its source and sink, which Delta source none pairs with
    #: (fleet/delta.py; the words are fleet/delta_report.py's). None: nothing Delta about it.
    delta: DeltaPairing | None = None
    #: The changed query that judged it (``audit --job``, fleet/jobs.py). None: its own query.
    job: JobPart | None = None

    @property
    def findings(self) -> tuple[Finding, ...]:
        """The merged findings of the diagnosis (their texts name the checkpoint as ``<cp>``:
        :meth:`finding_message`)."""
        return self.diagnosis.findings

    def finding_message(self, finding: Finding) -> str:
        """Return a finding's message naming the checkpoint as Spark prints it (as the JSON has it)."""
        return str(at_root(finding.message, self.diagnosis.checkpoint))

    @property
    def failing_cells(self) -> tuple[CellDiagnosis, ...]:
        """The counted restarts that fail (:attr:`MatrixDiagnosis.failing_cells`)."""
        return self.diagnosis.failing_cells

    @property
    def assumed_stateless(self) -> bool:
        """Whether the checkpoint is judged stateless though nothing tells and nothing suggests state
        (no state/, no watermark), while a stateful query's restart on it fails."""
        return self.diagnosis.assumed_stateless is not None and any(
            what.startswith("FAILS") for _, what in self.diagnosis.if_stateful
        )

    def _body(self) -> JsonObject:
        data = self.diagnosis.to_dict()
        keys = ("spark", "mode", "role", "counted", "label", "outcome", "summary", "if_stateful")
        body = {
            "restart": self.restart.to_json(),
            "matrix": [{k: c[k] for k in keys} for c in data["matrix"]],
            "lines": self.lines,
            "stateful": data["stateful"],
            "file_sink": self.file_sink.to_json(),
            "query_id": data["query_id"],
            "files": self.files,
            "reads": self.reads,
            "latest": self.latest.to_json(),
            "timeline": [row.to_dict() for row in self.timeline],
            "diagnosis": data,
        }
        if self.kafka is not None:
            body["kafka"] = self.kafka.to_json()
        if self.delta is not None:
            body["delta"] = self.delta.to_dict()
        if self.job is not None:
            body["job"] = self.job.to_json()
        return body


@dataclass(frozen=True, kw_only=True)
class SinkRecord(Record):
    """A file sink output checked on its own (CD404-CD406), its log and timeline, and the audited
    checkpoints whose logs prove it is theirs (``paired_with``, said in words in ``pairing``: set
    when the record stream links it)."""

    kind: str = field(default=str(TargetKind.SINK), init=False)
    sink_findings: tuple[Finding, ...] = ()
    sink_log: SinkLogPart
    files: int = 0
    reads: int = 0
    timeline: tuple[SinkRow, ...] = ()
    paired_with: tuple[str, ...] = ()
    pairing: str | None = None

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.sink_findings

    def _body(self) -> JsonObject:
        return {
            "files": self.files,
            "reads": self.reads,
            "timeline": [row.to_dict() for row in self.timeline],
            "sink_log": self.sink_log.to_json(),
            "findings": [f.to_dict() for f in self.sink_findings],
            "paired_with": list(self.paired_with),
            "pairing": self.pairing,
        }


@dataclass(frozen=True, kw_only=True)
class UnreadableRecord(Record):
    """A checkpoint, file sink output or root (``kind``) that could not be read: ``error`` says why
    (an internal error while auditing it: exit code 16, ``InternalError``)."""

    error: RecordError

    @classmethod
    def of(
        cls,
        *,
        kind: str,
        url: str,
        root: str,
        path: str,
        error_type: str,
        message: str,
        internal: bool = False,
    ) -> UnreadableRecord:
        return cls(
            kind=kind,
            url=url,
            root=root,
            path=path,
            exit_code=ExitCode.INTERNAL if internal else ExitCode.UNREADABLE,
            error=RecordError(error_type, message),
        )

    def _body(self) -> JsonObject:
        return {"error": self.error.to_json()}


AuditRecord = CheckpointRecord | SinkRecord | UnreadableRecord


# ------------------------------------------------------------------------------- notes, summary


@dataclass(frozen=True)
class AuditNote:
    """Something found under a root and skipped (or left out), with why."""

    url: str
    root: str
    path: str
    kind: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {
            "url": self.url,
            "root": self.root,
            "path": self.path,
            "kind": self.kind,
            "message": self.message,
        }


@dataclass(frozen=True)
class CodeCount:
    """How many records a finding code was found in, with its worst severity as found."""

    code: str
    slug: str | None
    severity: str | None
    title: str | None
    count: int

    def to_json(self) -> JsonObject:
        return {
            "code": self.code,
            "slug": self.slug,
            "severity": self.severity,
            "title": self.title,
            "count": self.count,
        }


@dataclass(frozen=True)
class DeltaCounts:
    """The summary's Delta counts: tables found under the roots, paired as a source or a sink of an
    audited checkpoint, Delta sources no table pairs with, and the files read from the tables' logs
    to pair them (a source table's commits read for a checkpoint count in its record's reads)."""

    tables: int = 0
    paired_sources: int = 0
    paired_sinks: int = 0
    unpaired_sources: int = 0
    reads: int = 0

    def to_json(self) -> JsonObject:
        return {
            "tables": self.tables,
            "paired_sources": self.paired_sources,
            "paired_sinks": self.paired_sinks,
            "unpaired_sources": self.unpaired_sources,
            "reads": self.reads,
        }


@dataclass(frozen=True)
class AuditSummary:
    """The fleet summary (``audit-summary.json`` without its envelope): counts by kind and verdict,
    restarts that fail, records per code; ``interrupted``: the counts cover what had finished."""

    total: int
    #: Records per kind (checkpoint, sink, root) and per verdict (its word, worst first).
    kinds: Mapping[str, int]
    verdicts: Mapping[str, int]
    restart_fails: int
    restart_fails_if_stateful: int
    assumed_stateless: int
    some_restart_fails: int
    codes: tuple[CodeCount, ...]
    note_count: int
    exit_code: int
    interrupted: bool = False
    #: The Delta tables under the roots and what was paired (fleet/delta_report.py).
    delta: DeltaCounts = field(default_factory=DeltaCounts)

    def to_json(self) -> JsonObject:
        return {
            "total": self.total,
            "kinds": {k: self.kinds.get(k, 0) for k in RECORD_KINDS},
            "verdicts": {v.value: self.verdicts.get(v.value, 0) for v in VERDICTS},
            "restart_fails": self.restart_fails,
            "restart_fails_if_stateful": self.restart_fails_if_stateful,
            "assumed_stateless": self.assumed_stateless,
            "some_restart_fails": self.some_restart_fails,
            "codes": [c.to_json() for c in self.codes],
            "note_count": self.note_count,
            "exit_code": self.exit_code,
            "interrupted": self.interrupted,
            "delta": self.delta.to_json(),
        }


def records_json(records: Iterable[Record]) -> list[JsonObject]:
    """Return records as JSON-safe data (the writer's)."""
    return [r.to_json() for r in records]


def notes_json(notes: Sequence[AuditNote]) -> list[dict[str, str]]:
    return [n.to_json() for n in notes]
