"""Values produced by diagnosis: findings, the restart prediction, the diagnosis. Immutable, JSON-safe."""

from __future__ import annotations

from typing import Any

from checkpoint_doctor.diagnosis.changes.facts import JobFacts
from checkpoint_doctor.diagnosis.codes import CODES, ERROR, INFO, SEVERITY_ORDER, WARNING, Code, Severity
from checkpoint_doctor.diagnosis.versions import SparkError, at_root
from checkpoint_doctor.exit_codes import ExitCode
from checkpoint_doctor.model import KafkaLive, SourceOffset
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.valueclasses import frozen
from checkpoint_doctor.world.delta_pairing import DeltaPairing

#: Codes about a possibly live writer: no repair may go ahead (plan proposes none, apply refuses).
LIVE_WRITER_CODES = frozenset({Code.LIVE_WRITER, Code.FRESH_TEMP_FILE})
#: Codes about the writers, reported before everything else. Interleaved runs (CD503) are history
#: the offsets files keep for good: a writer live now shows as CD501/CD502 too, so CD503 alone does
#: not stop a repair (it would stop every plan on that checkpoint forever).
WRITER_CODES = LIVE_WRITER_CODES | {Code.INTERLEAVED_RUNS}


#: How recent a planned batch or a temp file must be for a query to count as live (seconds;
#: ``--live-window``'s default everywhere).
DEFAULT_LIVE_WINDOW_S = 600.0
#: How soon a Kafka retention deadline must be to be a finding (CD213; ``--loss-horizon``'s default):
#: a daily audit sees every unread record retention may delete before the next one.
DEFAULT_LOSS_HORIZON_S = 86400.0


@frozen
class Finding:
    """One observed fact about a checkpoint, with its evidence. Severity comes from the code."""

    code: Code
    message: str
    paths: tuple[str, ...] = ()
    batch_ids: tuple[int, ...] = ()
    details: tuple[tuple[str, Any], ...] = ()
    #: The (Spark line, restart mode) cells of a restart matrix the finding applies to (none: one cell).
    cells: tuple[tuple[str, str], ...] = ()
    #: Set by the restart matrix when the severity differs from the code's (an error that only
    #: a plausible, not the configured, restart meets is a warning).
    effective_severity: Severity | None = None

    @property
    def severity(self) -> Severity:
        """Return the effective severity: the code's, unless the restart matrix set another."""
        return self.effective_severity or CODES[self.code].severity

    @property
    def slug(self) -> str:
        """Return the code's slug."""
        return CODES[self.code].slug

    def detail(self, key: str, default: Any = None) -> Any:
        """Return one detail value."""
        for k, v in self.details:
            if k == key:
                return v
        return default

    def sort_key(self) -> tuple[int, int, str, tuple[int, ...], tuple[str, ...]]:
        """Writer findings first, then by severity, code and evidence."""
        return (
            0 if self.code in WRITER_CODES else 1,
            SEVERITY_ORDER[self.severity],
            self.code,
            self.batch_ids,
            self.paths,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "code": self.code,
            "slug": self.slug,
            "severity": self.severity,
            "message": self.message,
            "paths": list(self.paths),
            "batch_ids": list(self.batch_ids),
            "details": dict(self.details),
            "cells": [{"spark": spark, "mode": mode} for spark, mode in self.cells],
            "code_severity": CODES[self.code].severity,
        }


#: The note of a restart on a line with no Delta Lake release (4.3): its Delta sources and sink are
#: not judged (no delta-spark artifact is published for it, so no restart of it was ever recorded).
NOT_JUDGED = "Delta tables not judged on Spark {line}: no Delta Lake release exists for it"

#: The note of a restart on a line with a Delta Lake release whose Delta tables could not be judged
#: all the same: one cannot be read (CD215) or several copies of one are equally near (CD216), so its
#: STARTS says nothing of them either (issue 31 items 1 and 8).
TABLES_NOT_JUDGED = "Delta tables not judged: {why}"
_TABLES_NOT_JUDGED_PREFIX = TABLES_NOT_JUDGED.format(why="")

#: The three outcomes of a restart: Spark starts it, fails it, or the tool cannot judge it (a
#: Delta query on a line with no Delta Lake release: a STARTS there would say nothing of its tables).
STARTS, FAILS, NOT_JUDGED_OUTCOME = "starts", "fails", "not-judged"


@frozen
class RestartPrediction:
    """What Spark does when the query is restarted on this checkpoint.

    ``next_batch_id`` is the batch (or epoch) the restart runs first; ``rerun`` says whether it
    re-executes a batch already planned in the offsets log (same end offsets) or plans a new one.
    ``start_offsets``/``end_offsets`` come from the offsets files named in ``start_from``/``end_from``
    (no end offsets for a new batch: the source decides them). ``warnings`` are the WARN/ERROR lines
    Spark logs that matter. ``error`` is set when the restart fails, with ``caused_by`` naming the
    finding codes behind it.
    """

    spark: str
    mode: str
    starts: bool
    next_batch_id: int | None = None
    rerun: bool = False
    start_from: str | None = None
    start_offsets: tuple[SourceOffset, ...] | None = None
    end_from: str | None = None
    end_offsets: tuple[SourceOffset, ...] | None = None
    watermark_ms: int | None = None
    warnings: tuple[str, ...] = ()
    error: SparkError | None = None
    caused_by: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    new_query_id: bool = False

    @property
    def not_judged(self) -> bool:
        """Whether the restart starts only as far as the tool can tell: its Delta tables were not
        judged (no Delta Lake release for the line, or a table unread or ambiguous: CD215, CD216),
        so it is neither a start nor a failure."""
        return self.starts and (
            self.no_delta_release or any(n.startswith(_TABLES_NOT_JUDGED_PREFIX) for n in self.notes)
        )

    @property
    def no_delta_release(self) -> bool:
        """Whether its Delta tables were not judged because the line has no Delta Lake release."""
        return NOT_JUDGED.format(line=self.spark) in self.notes

    @property
    def outcome(self) -> str:
        """``starts``, ``fails`` or ``not-judged`` (:attr:`not_judged`)."""
        return FAILS if not self.starts else NOT_JUDGED_OUTCOME if self.not_judged else STARTS

    @property
    def summary(self) -> str:
        """Return the prediction in one sentence."""
        if self.not_judged:
            # Not a start: the Delta tables decide the restart and no Delta Lake release reads them
            # on this line. What the checkpoint alone says is kept after it.
            if not self.no_delta_release:
                return f"NOT JUDGED: a Delta table could not be judged ({self._started})"
            return f"NOT JUDGED: no Delta Lake release for Spark {self.spark} ({self._started})"
        if not self.starts and self.error is not None:
            when = {
                "start": "at start()",
                "init": "before running any batch",
                "batch": f"in batch {self.next_batch_id}",
                "task": f"in the tasks of batch {self.next_batch_id}",
                "commit": f"when committing batch {self.next_batch_id}",
            }.get(self.error.phase, "")
            return f"FAILS {when}: {self.error.summary}".strip()
        return self._started

    @property
    def _started(self) -> str:
        # The one wording of a start, also a matrix cell's (render.diagnosis._cell_text).
        unit = "epoch" if self.mode == "continuous" else "batch"
        kind = "re-runs" if self.rerun else "new"
        return f"STARTS {kind} {unit} {self.next_batch_id}"

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""

        def offsets(items: tuple[SourceOffset, ...] | None) -> list[dict[str, Any]] | None:
            return None if items is None else [s.to_dict() for s in items]

        return {
            "spark": self.spark,
            "mode": self.mode,
            "outcome": self.outcome,
            "summary": self.summary,
            "next_batch_id": self.next_batch_id,
            "batch_kind": None if self.next_batch_id is None else ("rerun" if self.rerun else "new"),
            "start_from": self.start_from,
            "start_offsets": offsets(self.start_offsets),
            "end_from": self.end_from,
            "end_offsets": offsets(self.end_offsets),
            "watermark_ms": self.watermark_ms,
            "new_query_id": self.new_query_id,
            "warnings": list(self.warnings),
            "error": self.error.to_dict() if self.error else None,
            "caused_by": list(self.caused_by),
            "notes": list(self.notes),
        }


@frozen
class DiagnoseOptions:
    """What the operator tells diagnosis about the restart they plan.

    ``spark`` None means the newest supported line; ``mode`` None means the mode that wrote the
    checkpoint; ``sources``/``stateful`` None mean unknown (inferred where the checkpoint shows it).
    ``checkpoint_format_version`` is the session's state store checkpoint format (4.0/4.1 commit
    headers must equal it). ``now_ms`` and ``live_window_s`` drive live-writer detection
    (``live_window_s`` 0 disables it). ``confs`` are session confs of the restart that change what
    Spark does (e.g. ``spark.sql.streaming.stateStore.autoSnapshotRepair.enabled``).
    """

    spark: str | None = None
    mode: str | None = None
    sources: int | None = None
    stateful: bool | None = None
    checkpoint_format_version: int | None = None
    live_window_s: float = DEFAULT_LIVE_WINDOW_S
    now_ms: int | None = None
    confs: tuple[tuple[str, str], ...] = ()
    #: Files checkpoint-doctor's own applies wrote, as (path, ETag or mtime): a repair is not a
    #: live writer (read from the checkpoint's tool directory at the I/O edge).
    own_writes: frozenset[tuple[str, int | str]] = frozenset()
    #: The Kafka topics' positions read from a broker at the I/O edge (None: not checked).
    kafka: KafkaLive | None = None
    #: Seconds ahead within which a Kafka retention deadline of unread records is a warning (CD213).
    loss_horizon_s: float = DEFAULT_LOSS_HORIZON_S
    #: The Delta tables named with --delta-table, read at the I/O edge (None: not checked).
    delta: tuple[DeltaTable, ...] | None = None
    #: Which Delta tables are the checkpoint's source and sink (found beside it, named, or under an
    #: audit's roots), paired at the edge (None: pair the ``delta`` tables named, if any).
    delta_pairing: DeltaPairing | None = None
    #: What the restarted query is, as a Spark line described it (``--job``; None: not known).
    job: JobFacts | None = None
    #: The reader options of the restart's Delta sources by source index, where no ``job`` says them:
    #: what a plan made with ``--job`` records, so that ``apply`` judges as the plan did
    #: (``readChangeFeed``, ``skipChangeCommits``... are not in the checkpoint).
    delta_options: tuple[tuple[int, tuple[tuple[str, str], ...]], ...] = ()
    #: How each Kafka source subscribes, ``(source index, shape, value, failOnDataLoss)``, where the
    #: job is not at hand (a plan's request keeps them for apply's re-plan); the job's own otherwise.
    kafka_subscriptions: tuple[tuple[int, str, str, bool], ...] = ()

    def delta_source_options(self) -> tuple[tuple[int, tuple[tuple[str, str], ...]], ...]:
        """The reader options of each Delta source of the restart, by source index: the job's (its
        ``delta`` sources, in Spark's order, the offsets' order), else :attr:`delta_options`."""
        if self.job is None:
            return self.delta_options
        return tuple(
            (n, tuple(s.options)) for n, s in enumerate(self.job.sources) if s.name.lower() == "delta"
        )

    @property
    def delta_tables(self) -> tuple[DeltaTable, ...] | None:
        """Return every Delta table this verdict knows (paired, found beside or named), each once, or
        None when none was read: what the planner's Delta strategies and counts work from."""
        # The tables beside it that other appIds wrote too: a foreachBatch's idempotent writes name
        # their own appId (CD407 judges them, delta-sink-txn plans from them).
        paired = (
            (*self.delta_pairing.tables, *self.delta_pairing.others) if self.delta_pairing is not None else ()
        )
        named = self.delta or ()
        if self.delta_pairing is None and self.delta is None:
            return None
        return tuple({t.url: t for t in (*named, *paired)}.values())


@frozen
class Diagnosis:
    """The result of diagnosing one checkpoint for one Spark line and mode."""

    checkpoint: str
    spark: str
    mode: str
    mode_detected: str
    prediction: RestartPrediction
    findings: tuple[Finding, ...]
    assumptions: tuple[str, ...] = ()
    query_id: str | None = None

    @property
    def codes(self) -> tuple[str, ...]:
        """Return the sorted distinct codes found."""
        return tuple(sorted({f.code for f in self.findings}))

    @property
    def worst(self) -> str | None:
        """Return the worst severity found, or None."""
        if not self.findings:
            return None
        return min((f.severity for f in self.findings), key=lambda s: SEVERITY_ORDER[s])

    @property
    def exit_code(self) -> int:
        """0 nothing of warning or error severity, 1 warnings only, 4 an error finding."""
        worst = self.worst
        if worst == ERROR or not self.prediction.starts:
            return ExitCode.ERRORS
        # A restart the tool could not judge is not a healthy one (issue 36): a warning.
        if worst == WARNING or self.prediction.not_judged:
            return ExitCode.WARNINGS
        return ExitCode.OK

    def restart_dict(self) -> dict[str, Any]:
        """Return the ``restart`` part of :meth:`to_dict` alone (a matrix cell shows only this: it
        does not pay for its findings' texts, which the matrix merges once)."""
        template = self.prediction.to_dict()
        # Every text names the checkpoint as Spark prints it; ``message`` stays Spark's template.
        restart: dict[str, Any] = at_root(template, self.checkpoint)
        if restart["error"] is not None:
            restart["error"]["text"] = restart["error"]["message"]
            restart["error"]["message"] = template["error"]["message"]
        return restart

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict (the error text with this checkpoint's root as Spark prints it)."""
        counts = {s: sum(1 for f in self.findings if f.severity == s) for s in (ERROR, WARNING, INFO)}
        restart = self.restart_dict()
        return {
            "checkpoint": self.checkpoint,
            "query_id": self.query_id,
            "spark": self.spark,
            "mode": self.mode,
            "mode_detected": self.mode_detected,
            "assumptions": list(self.assumptions),
            "restart": restart,
            "findings": at_root([f.to_dict() for f in self.findings], self.checkpoint),
            "counts": counts,
            "exit_code": self.exit_code,
        }
