"""The restart matrix: one checkpoint diagnosed for every Spark line and plausible restart mode. Pure.

An operator's question is rarely "what does Spark 4.3 in async mode do": it is "will this restart,
however it is restarted". The matrix answers it cell by cell with the single-cell engine
(:func:`checkpoint_doctor.diagnosis.diagnose`), sharing the snapshot's target-independent facts
(:class:`~checkpoint_doctor.diagnosis.facts.SnapshotFacts`):

* lines: every supported line (``LINES``), or the lines named with ``--spark``;
* modes: the detected mode, plus a synchronous micro-batch restart when async progress tracking
  wrote the logs (``asyncProgressTrackingEnabled`` switched off) and when continuous processing did
  (the trigger changed), and both micro-batch modes when real-time mode did (``Trigger.RealTime``
  replaced); or the modes named with ``--mode``. Real-time cells only on lines that have the trigger
  (4.1+).

Each cell has a **role**: ``as-configured`` (the detected mode on the line(s) that wrote the
checkpoint, or the named lines/modes), ``plausible`` (an upgrade, or another plausible mode), or
``downgrade`` (a line older than the writer: shown, counted only when named). Findings merge across
the counted cells with the one severity rule (:mod:`~checkpoint_doctor.diagnosis.severity`): an
error that only makes plausible cells fail is a warning naming the cells and quoting Spark. Exit code: an as-configured cell fails or an error -> 4; any counted cell fails or a
warning -> 1; else 0.

"As configured" means the session the writer had: the confs its logs prove
(:mod:`~checkpoint_doctor.diagnosis.writer_confs`, e.g. ``checkpointFormatVersion=2`` proven by v2
commits with ``stateUniqueIds``) are set in every cell. A restart without them is a plausible
restart too: where it fails and the configured one starts, its failure is a warning naming the conf
(those cells are judged but not shown as rows; the matrix rows are the writer's session).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field, replace
from functools import lru_cache
from typing import Any, NamedTuple

from checkpoint_doctor.diagnosis import diagnose_cell
from checkpoint_doctor.diagnosis.changes.facts import JobFacts
from checkpoint_doctor.diagnosis.codes import CODES, ERROR, INFO, SEVERITY_ORDER, WARNING, Code, Severity
from checkpoint_doctor.diagnosis.detect import ASYNC, CONTINUOUS, MICRO_BATCH, REAL_TIME, WriterGuess
from checkpoint_doctor.diagnosis.facts import SnapshotFacts
from checkpoint_doctor.diagnosis.line_rules import CellMemo, cell_memo, restamped
from checkpoint_doctor.diagnosis.model import DiagnoseOptions, Diagnosis, Finding
from checkpoint_doctor.diagnosis.outside import shared_outside_notes
from checkpoint_doctor.diagnosis.severity import effective_severity
from checkpoint_doctor.diagnosis.state.checks_statefulness import (
    per_line,
    stateful_assumption,
    stateful_by_line,
)
from checkpoint_doctor.diagnosis.state.statefulness import UNKNOWN, Statefulness
from checkpoint_doctor.diagnosis.versions import LINES, at_root, target
from checkpoint_doctor.diagnosis.writer_confs import ProvenConf, applicable, proven_confs, with_confs
from checkpoint_doctor.exit_codes import ExitCode
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.valueclasses import frozen
from checkpoint_doctor.world.delta_pairing import DeltaPairing

AS_CONFIGURED = "as-configured"
PLAUSIBLE = "plausible"
DOWNGRADE = "downgrade"
ROLES = (AS_CONFIGURED, PLAUSIBLE, DOWNGRADE)


class Cell(NamedTuple):
    """One restart: a Spark release line and a restart mode."""

    spark: str
    mode: str

    @property
    def text(self) -> str:
        """Return the cell as ``Spark 4.3 (micro-batch)``."""
        return f"Spark {self.spark} ({self.mode})"


@frozen
class MatrixOptions:
    """The restarts to evaluate: named lines and modes narrow the matrix (empty: every plausible one);
    ``base`` carries everything else a single-cell diagnosis takes (its spark/mode are ignored)."""

    lines: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    base: DiagnoseOptions = field(default_factory=DiagnoseOptions)
    #: What the caller found out about the query's file sink (it looked next to the checkpoint).
    sink_note: str | None = None
    #: Why ``--job`` was not analysed (plan without pyspark), or None.
    job_note: str | None = None


@frozen
class CellDiagnosis:
    """One cell of the matrix: its role, its label in an operator's words, its diagnosis."""

    cell: Cell
    role: str
    label: str
    diagnosis: Diagnosis
    #: How the restart differs from the configured one: (line words, mode words), '' for no difference.
    situation: tuple[str, str] = ("", "")

    @property
    def counted(self) -> bool:
        """Whether a failure of this cell counts (downgrades are shown only)."""
        return self.role != DOWNGRADE

    @property
    def fails(self) -> bool:
        """Whether the restart of this cell fails."""
        return not self.diagnosis.prediction.starts

    @property
    def if_stateful(self) -> str | None:
        """What this restart does if the query has stateful operators (statefulness suspected)."""
        for f in self.diagnosis.findings:
            if f.code == Code.STATE_MAY_BE_GONE:
                return str(f.detail("if_stateful"))
        return None

    @property
    def delta_not_judged(self) -> bool:
        """Whether this restart's line has no Delta Lake release, so its Delta sources were not
        judged (its STARTS says nothing of them)."""
        return self.diagnosis.prediction.not_judged

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict (the error text with the checkpoint's root as Spark prints it)."""
        restart = self.diagnosis.restart_dict()
        keys = ("outcome", "summary", "next_batch_id", "batch_kind", "error", "caused_by")
        return {
            "spark": self.cell.spark,
            "mode": self.cell.mode,
            "role": self.role,
            "counted": self.counted,
            "label": self.label,
            **{k: restart[k] for k in keys},
            "if_stateful": self.if_stateful,
            "codes": list(self.diagnosis.codes),
        }


@frozen
class MatrixDiagnosis:
    """A checkpoint diagnosed for every cell of the restart matrix, with merged findings."""

    checkpoint: str
    query_id: str | None
    writer: WriterGuess
    writer_lines: tuple[str, ...]
    mode_detected: str
    cells: tuple[CellDiagnosis, ...]
    findings: tuple[Finding, ...]
    assumptions: tuple[str, ...]
    statefulness: Statefulness
    named_lines: tuple[str, ...] = ()
    named_modes: tuple[str, ...] = ()
    #: The session confs the logs prove the writer used, set in every cell.
    proven: tuple[ProvenConf, ...] = ()
    #: Statefulness unknown: per line, what a restart in the detected mode does if the query has
    #: stateful operators (CD310's cells, or asked once per line where nothing suggests state).
    if_stateful: tuple[tuple[str, str], ...] = ()
    #: The restarted query as a Spark line described it (``--job``), or None.
    job: JobFacts | None = None
    #: Why ``--job`` was not analysed (plan without pyspark), or None.
    job_note: str | None = None
    #: The Delta tables paired with the checkpoint at the edge (found beside it, named), or None.
    delta_pairing: DeltaPairing | None = None
    #: What was checked of a file sink (found beside the checkpoint, named, or not checked): one of
    #: ``assumptions``, which a one-cell answer says too.
    sink_assumption: str | None = None
    #: The applies of checkpoint-doctor that changed this checkpoint and did not finish (rows of
    #: ``history``, :func:`checkpoint_doctor.world.load.tool_records_for`): a warning, whatever Spark
    #: would do, because the checkpoint is half repaired until the apply is undone or finished.
    unfinished_applies: tuple[dict[str, Any], ...] = ()

    @property
    def job_assumptions(self) -> tuple[str, ...]:
        """Return what the output says about ``--job``: the query as Spark described it, or why not."""
        if self.job is not None:
            return (self.job.summary,)
        return (self.job_note,) if self.job_note is not None else ()

    @property
    def counted_cells(self) -> tuple[CellDiagnosis, ...]:
        """Return the cells whose failure counts (every role but downgrade)."""
        return tuple(c for c in self.cells if c.counted)

    @property
    def failing_cells(self) -> tuple[CellDiagnosis, ...]:
        """Return the counted cells whose restart fails."""
        return tuple(c for c in self.counted_cells if c.fails)

    @property
    def as_configured(self) -> tuple[CellDiagnosis, ...]:
        """Return the as-configured cells."""
        return tuple(c for c in self.cells if c.role == AS_CONFIGURED)

    @property
    def primary(self) -> CellDiagnosis:
        """Return the first as-configured cell (the newest such line), else the first counted cell."""
        configured = self.as_configured
        if configured:
            return configured[-1] if len({c.cell.mode for c in configured}) == 1 else configured[0]
        return (self.counted_cells or self.cells)[0]

    @property
    def exit_code(self) -> int:
        """4: an as-configured cell fails or an error finding; 1: a counted cell fails, a warning,
        or an as-configured cell not judged (``--spark 4.3`` on a Delta query: nothing judged its
        tables, so it is not healthy; the full matrix judges them on the lines with a release)."""
        severities = {f.severity for f in self.findings}
        if ERROR in severities or any(c.fails for c in self.as_configured):
            return ExitCode.ERRORS
        if (
            WARNING in severities
            or self.failing_cells
            or self.unfinished_applies
            or any(c.delta_not_judged for c in self.as_configured)
        ):
            return ExitCode.WARNINGS
        return ExitCode.OK

    @property
    def state_may_be_gone(self) -> Finding | None:
        """Return the CD310 finding: statefulness unknown, traces of state, no state (None: not met)."""
        return next((f for f in self.findings if f.code == Code.STATE_MAY_BE_GONE), None)

    @property
    def assumed_stateless(self) -> str | None:
        """Return the assumption line when the matrix judged the query stateless though nothing tells
        and a stateful query meets something else (None: statefulness known, named, or CD310)."""
        if not self.if_stateful or self.statefulness.suspected:
            return None
        return stateful_assumption(self.statefulness, self.mode_detected, self.if_stateful)

    def cell(self, spark: str, mode: str) -> CellDiagnosis | None:
        """Return one cell, or None when it is not in the matrix."""
        return next((c for c in self.cells if c.cell == (spark, mode)), None)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict: the matrix, the merged findings and, as ``restart``, the primary
        cell's detailed prediction (what a single-cell diagnose reported)."""
        counts = {s: sum(1 for f in self.findings if f.severity == s) for s in (ERROR, WARNING, INFO)}
        primary = self.primary.diagnosis.to_dict()
        return {
            "checkpoint": self.checkpoint,
            "query_id": self.query_id,
            "written_by": {
                "line": self.writer.line,
                "label": self.writer.label,
                "lines": list(self.writer_lines),
                "evidence": list(self.writer.evidence),
            },
            "mode_detected": self.mode_detected,
            "named": {"lines": list(self.named_lines), "modes": list(self.named_modes)},
            "stateful": {
                **self.statefulness.to_dict(),
                "if_stateful": [{"spark": line, "restart": what} for line, what in self.if_stateful],
            },
            "spark": primary["spark"],
            "mode": primary["mode"],
            "restart": primary["restart"],
            "matrix": [c.to_dict() for c in self.cells],
            "findings": at_root([f.to_dict() for f in self.findings], self.checkpoint),
            "counts": counts,
            "assumptions": list(self.assumptions),
            "job": self.job.to_dict() if self.job is not None else None,
            "delta_pairing": self.delta_pairing.to_dict() if self.delta_pairing is not None else None,
            **({"unfinished_applies": list(self.unfinished_applies)} if self.unfinished_applies else {}),
            "exit_code": self.exit_code,
        }


# ------------------------------------------------------------------------------------- the cells


def writer_lines(writer: WriterGuess) -> tuple[str, ...]:
    """Return the lines that may have written the checkpoint (``4.0`` means 4.0 or 4.1; unknown: every
    line from the oldest that can have written every file)."""
    if writer.line is None:
        return LINES[LINES.index(writer.minimum or LINES[0]) :]
    if writer.minimum is not None and writer.beyond_line:
        # Conf keys of an older line, files of a newer one (WriterGuess.label): either wrote it.
        end = "4.1" if writer.minimum == "4.0" else writer.minimum
        return LINES[LINES.index(writer.line) : LINES.index(end) + 1]
    end = "4.1" if writer.line == "4.0" else writer.line
    span = LINES[LINES.index(writer.line) : LINES.index(end) + 1]
    if writer.minimum is not None:
        narrowed = tuple(line for line in span if LINES.index(line) >= LINES.index(writer.minimum))
        if narrowed:
            return narrowed
    return span


def plausible_modes(detected: str) -> tuple[str, ...]:
    """Return the detected mode, plus a micro-batch restart of an async or continuous checkpoint, and
    both micro-batch modes of a real-time one."""
    if detected == REAL_TIME:
        return (REAL_TIME, ASYNC, MICRO_BATCH)
    return (detected, MICRO_BATCH) if detected in (ASYNC, CONTINUOUS) else (detected,)


def _situation(cell: Cell, wrote: Sequence[str], detected: str) -> tuple[str, str]:
    """Return how a cell differs from the configured restart: (line words, mode words)."""
    index, low, high = LINES.index(cell.spark), LINES.index(wrote[0]), LINES.index(wrote[-1])
    origin = _span(list(wrote))
    line = f"upgrade from {origin}" if index > high else f"downgrade from {origin}" if index < low else ""
    mode = ""
    if cell.mode != detected:
        mode = {
            (ASYNC, MICRO_BATCH): "asyncProgressTrackingEnabled off",
            (CONTINUOUS, MICRO_BATCH): "continuous checkpoint restarted with a micro-batch trigger",
            (REAL_TIME, MICRO_BATCH): "a micro-batch trigger instead of Trigger.RealTime",
            (REAL_TIME, ASYNC): "async progress tracking instead of Trigger.RealTime",
            (MICRO_BATCH, REAL_TIME): "Trigger.RealTime instead of a micro-batch trigger",
            (ASYNC, REAL_TIME): "Trigger.RealTime instead of async progress tracking",
        }.get((detected, cell.mode), f"{cell.mode} restart of a {detected} checkpoint")
    return line, mode


def _span(lines: Sequence[str]) -> str:
    """Return lines as ``3.5``, ``4.0-4.1`` (consecutive supported lines) or ``3.5, 4.2``."""
    ordered = sorted(dict.fromkeys(lines), key=LINES.index)
    first, last = LINES.index(ordered[0]), LINES.index(ordered[-1])
    if len(ordered) > 1 and last - first + 1 == len(ordered):
        return f"{ordered[0]}-{ordered[-1]}"
    return ", ".join(ordered)


def _label(cell: Cell, wrote: Sequence[str], detected: str, named: bool) -> str:
    parts = [f"Spark {cell.spark}", *(p for p in _situation(cell, wrote, detected) if p)]
    if len(parts) == 1:
        parts.append("as named" if named else "as configured")
    return ", ".join(parts)


PlannedCell = tuple[Cell, str, str, tuple[str, str]]


def plan_cells(facts: SnapshotFacts, options: MatrixOptions) -> list[PlannedCell]:
    """Return the cells to evaluate with their roles, labels and situations, in line then mode order."""
    return list(_plan(facts.mode.mode, facts_writer_lines(facts), options.lines, options.modes))


def facts_writer_lines(facts: SnapshotFacts) -> tuple[str, ...]:
    """Return the lines that may have written the checkpoint, narrowed to 4.1+ when real-time mode did
    (the conf keys alone say "4.0 or 4.1"; Trigger.RealTime exists from 4.1)."""
    wrote = writer_lines(facts.writer)
    if facts.mode.mode == REAL_TIME:
        wrote = tuple(line for line in wrote if target(line).real_time_trigger) or wrote
    return wrote


@lru_cache(maxsize=256)
def _plan(
    detected: str, wrote: tuple[str, ...], named_lines: tuple[str, ...], named_modes: tuple[str, ...]
) -> tuple[PlannedCell, ...]:
    """The cells of :func:`plan_cells`: the same few answers for every checkpoint of a fleet, so kept."""
    lines = tuple(line for line in LINES if line in named_lines) if named_lines else LINES
    modes = tuple(dict.fromkeys(named_modes)) if named_modes else plausible_modes(detected)
    configured_lines = set(named_lines) if named_lines else set(wrote)
    configured_modes = set(named_modes) if named_modes else {detected}
    out = []
    for line in lines:
        for mode in modes:
            if mode == REAL_TIME and not target(line).real_time_trigger:
                continue  # Trigger.RealTime does not exist before 4.1 (SPARK-53736)
            cell = Cell(line, mode)
            if line in configured_lines and mode in configured_modes:
                role = AS_CONFIGURED
            elif LINES.index(line) < LINES.index(wrote[0]) and line not in named_lines:
                role = DOWNGRADE
            else:
                role = PLAUSIBLE
            named = bool(named_lines or named_modes) and role == AS_CONFIGURED
            out.append((cell, role, _label(cell, wrote, detected, named), _situation(cell, wrote, detected)))
    return tuple(out)


def diagnose_cells(
    snapshot: CheckpointSnapshot,
    cells: Sequence[PlannedCell],
    base: DiagnoseOptions,
    facts: SnapshotFacts | None = None,
) -> tuple[CellDiagnosis, ...]:
    """Diagnose a snapshot (a real one, or one a planner simulated) for the given cells.

    The detected mode is passed as None so each cell reads "detected from the logs" as a single
    diagnose does; the facts are derived once for all cells.
    """
    shared = facts if facts is not None else SnapshotFacts(snapshot)
    detected = shared.mode.mode
    # The cells of one mode share their options but the line, and a memo of what their line rules
    # answered (diagnosis.line_rules): each mode's options are built once, not once per cell.
    by_mode: dict[str | None, tuple[DiagnoseOptions, CellMemo]] = {}
    out = []
    for cell, role, label, situation in cells:
        mode = None if cell.mode == detected else cell.mode
        found = by_mode.get(mode)
        if found is None:
            # ``dataclasses.replace`` costs a fifth of a memo-hit cell (restamped: the fields' dict).
            opts = restamped(base, cell.spark, mode=mode)
            found = by_mode[mode] = (opts, cell_memo(shared, opts))
        result = diagnose_cell(snapshot, found[0], target(cell.spark), shared, found[1])
        out.append(CellDiagnosis(cell, role, label, result, situation))
    return tuple(out)


# ------------------------------------------------------------------------------------- findings


_PRIORITY = {AS_CONFIGURED: 0, PLAUSIBLE: 1, DOWNGRADE: 2}


#: Shorter words for a mode situation inside a sentence ("a restart with ... fails").
_WITH = {"continuous checkpoint restarted with a micro-batch trigger": "a micro-batch trigger"}


def describe(cells: Sequence[CellDiagnosis]) -> str:
    """Return restarts in words, grouped: ``with asyncProgressTrackingEnabled off on Spark 3.5-4.3``,
    ``on Spark 4.2-4.3 (upgrade from 3.5)``."""
    groups: dict[str, list[CellDiagnosis]] = {}
    for c in cells:
        groups.setdefault(c.situation[1], []).append(c)
    parts = []
    for mode_words, members in groups.items():
        span = _span([c.cell.spark for c in members])
        line_words = {c.situation[0] for c in members}
        upgrade = f" ({line_words.pop()})" if len(line_words) == 1 and "" not in line_words else ""
        words = _WITH.get(mode_words, mode_words)
        words = words if words.startswith("without ") else f"with {words}"
        parts.append(f"{words} on Spark {span}" if mode_words else f"on Spark {span}{upgrade}")
    return "; ".join(parts)


def _sentence(text: str) -> str:
    """Return text starting with a capital letter (our words; Spark's are quoted as they are)."""
    return text[:1].upper() + text[1:]


def _quote(finding: Finding, cells: Sequence[CellDiagnosis]) -> str | None:
    """Return what Spark says in the cells whose restart this finding makes fail, grouped by text:
    ``a restart with asyncProgressTrackingEnabled off on Spark 4.3 fails: batch 30 doesn't exist``."""
    return _quote_failing([c for c in cells if c.fails and finding.code in c.diagnosis.prediction.caused_by])


def _quote_failing(failing: Sequence[CellDiagnosis]) -> str | None:
    """:func:`_quote` of the cells it names (those a finding makes fail)."""
    texts: dict[str, list[CellDiagnosis]] = {}
    for c in failing:
        pred = c.diagnosis.prediction
        texts.setdefault(pred.error.summary if pred.error is not None else pred.summary, []).append(c)
    if not texts:
        return None
    return "; ".join(f"a restart {describe(group)} fails: {text}" for text, group in texts.items())


def _state_message(finding: Finding, everyone: Sequence[CellDiagnosis], detected: str) -> str:
    """CD310 in the matrix: what each line does if the query has state (the detected mode's column)."""
    consequences = per_line(_suspected_column(everyone, detected))
    traces = "; ".join(str(t) for t in finding.detail("traces", ()))
    return (
        f"state/ holds no state, but {traces}. If the query has stateful operators, their state is gone "
        f"and a {detected} restart does this: {consequences}. {SETTLE_STATEFULNESS}"
    )


def _suspected_column(everyone: Sequence[CellDiagnosis], detected: str) -> tuple[tuple[str, str], ...]:
    """The hypothesis of CD310 per line, read from the detected mode's cells (each line once)."""
    column = {c.cell.spark: str(c.if_stateful) for c in everyone if c.cell.mode == detected and c.if_stateful}
    return tuple(column.items())


#: How an operator settles unknown statefulness (diagnose, plan and explain CD310 say the same).
SETTLE_STATEFULNESS = (
    "Settle it with --stateful or --stateless: with --stateful the finding is CD301 (an error), "
    "restoring state/ from a backup keeps the state, and 'plan --stateful --accept-data-loss' resets "
    "it to empty (reset-state)."
)


def _copy(finding: Finding, **changes: Any) -> Finding:
    """``dataclasses.replace`` of a Finding (a frozen value without ``__post_init__``, its fields in
    ``__dict__``) at a fifth of the cost: every merged finding of every matrix is one."""
    copy = object.__new__(Finding)
    copy.__dict__.update(finding.__dict__)
    copy.__dict__.update(changes)
    return copy


def merge_findings(cells: Sequence[CellDiagnosis], detected: str) -> tuple[Finding, ...]:
    """Merge the cells' findings: one finding per fact naming its cells, with its effective severity."""
    # Downgrades are shown in the matrix, their findings are not merged.
    ordered = sorted((c for c in cells if c.role != DOWNGRADE), key=lambda c: _PRIORITY[c.role])
    groups: dict[tuple[str, tuple[str, ...], tuple[int, ...]], tuple[Finding, list[CellDiagnosis]]] = {}
    # What each counted cell is, asked once per cell rather than once per finding (bench: matrix):
    # its role, its cell and, when it fails, the codes that make it fail.
    shown: dict[int, tuple[bool, tuple[str, str], tuple[str, ...] | None]] = {}
    for c in ordered:
        pred = c.diagnosis.prediction
        shown[id(c)] = (
            c.role == AS_CONFIGURED,
            (c.cell.spark, c.cell.mode),
            None if pred.starts else pred.caused_by,
        )
        for f in c.diagnosis.findings:
            key = (f.code, f.paths, f.batch_ids)
            group = groups.get(key)
            if group is None:
                groups[key] = (f, [c])
            else:
                group[1].append(c)
    merged = []
    for first, counted in groups.values():
        code = first.code
        configured = fails_configured = fails_plausible = False
        failing = []
        for c in counted:
            role_configured, _, caused_by = shown[id(c)]
            configured = configured or role_configured
            if caused_by is not None and code in caused_by:
                failing.append(c)
                if role_configured:
                    fails_configured = True
                else:
                    fails_plausible = True
        quote = _quote_failing(failing) if failing else None
        # Spark's words end the first sentence; the finding (often a path: ``commits/.3.crc
        # remains``) is labelled rather than starting a sentence in lower case.
        message = f"{_sentence(quote.rstrip('.'))}. Cause: {first.message}" if quote else first.message
        judged = effective_severity(
            code,
            fails_configured=fails_configured,
            fails_plausible=fails_plausible,
            met_configured=configured,
        )
        lowered = first.effective_severity
        if lowered is not None and SEVERITY_ORDER[lowered] > SEVERITY_ORDER[judged]:
            # A check that knows its fact less certain than its code says so (CD215 of a table that
            # only lies beside the checkpoint: maybe the query's): no restart raises it again.
            judged = lowered
        severity: Severity | None = judged
        if severity == CODES[code].severity:
            severity = None  # the code's own: not stored, so a finding's JSON stays as it was
        if code == Code.STATE_MAY_BE_GONE:
            message = _state_message(first, cells, detected)
        elif not configured:
            message = message if quote else _sentence(f"{describe(counted)}: {first.message}")
        merged.append(
            _copy(
                first,
                message=message,
                cells=tuple(dict.fromkeys([shown[id(c)][1] for c in counted])),
                effective_severity=severity,
            )
        )
    return tuple(sorted(merged, key=Finding.sort_key))


# ------------------------------------------------------------------------------------- the matrix


def _assumptions(
    facts: SnapshotFacts,
    snapshot: CheckpointSnapshot,
    opts: MatrixOptions,
    if_stateful: Sequence[tuple[str, str]] = (),
    proven: tuple[ProvenConf, ...] | None = None,
    sink: str | None = None,
) -> list[str]:
    """The matrix's assumptions (``sink``: :func:`_sink_assumption`'s, computed once by the caller)."""
    base = opts.base
    out = [f"mode {facts.mode.mode}: detected from the logs ({facts.mode.evidence})"]
    if base.job is not None:
        out.append(base.job.summary)
    if opts.job_note is not None:
        out.append(opts.job_note)
    writer = facts.writer
    if writer.evidence:
        out.append(f"written by Spark {writer.label}: {'; '.join(writer.evidence)}")
    else:
        out.append(
            "the Spark line that wrote it is unknown (no pinned confs): every line counts as configured"
        )
    for p in opts_proven(opts, snapshot) if proven is None else proven:
        out.append(f"{p.text}: the writer's session had it ({p.evidence}); every restart is judged with it")
    if base.stateful is None and facts.statefulness.verdict == UNKNOWN:
        out.append(stateful_assumption(facts.statefulness, facts.mode.mode, if_stateful))
    if base.sources is None:
        out.append("source count not checked (pass --sources N)")
    if sink is not None:
        out.append(sink)
    out.extend(shared_outside_notes(facts, base))
    return out


def _sink_assumption(snapshot: CheckpointSnapshot, opts: MatrixOptions) -> str | None:
    from checkpoint_doctor.diagnosis.changes.writer import writes_file_sink

    if opts.sink_note is not None:
        return opts.sink_note
    job = opts.base.job
    if snapshot.sink is None and (job is None or writes_file_sink(job)):
        # A --job that writes no file sink (noop, Delta, Kafka...) has no sink log to check.
        return "file sink not checked (pass --sink-path with the query's output directory if it writes files)"
    return None


def with_unfinished(result: MatrixDiagnosis, unfinished: Sequence[dict[str, Any]]) -> MatrixDiagnosis:
    """Return ``result`` with the applies that changed its checkpoint and did not finish (issue 31:
    diagnose was silent after an interrupted apply; the CLI and the API say it alike)."""
    return replace(result, unfinished_applies=tuple(unfinished)) if unfinished else result


def diagnose_matrix(snapshot: CheckpointSnapshot, options: MatrixOptions | None = None) -> MatrixDiagnosis:
    """Diagnose a snapshot for every cell of the restart matrix (narrowed by the named lines/modes).

    Raises:
        ValueError: a named line is not a supported line (normalise with ``versions.line_of`` first).
    """
    opts = options or MatrixOptions()
    unknown = [line for line in opts.lines if line not in LINES]
    if unknown:
        raise ValueError(f"unsupported Spark line {unknown[0]!r}; supported: {', '.join(LINES)}")
    facts = SnapshotFacts(snapshot)
    proven = opts_proven(opts, snapshot)
    wrote = facts_writer_lines(facts)
    planned = list(_plan(facts.mode.mode, wrote, opts.lines, opts.modes))
    configured = with_confs(opts.base, proven)
    cells = diagnose_cells(snapshot, planned, configured, facts)
    unset = _without_proven(snapshot, planned, cells, opts.base, proven, facts)
    # CD310's cells (statefulness suspected: check_state_suspected), else asked once per line.
    suspected = _suspected_column(cells, facts.mode.mode) if facts.statefulness.suspected else ()
    if_stateful = suspected or stateful_by_line(
        snapshot,
        facts,
        configured,
        dict.fromkeys(cell.spark for cell, *_ in planned),
    )
    sink = _sink_assumption(snapshot, opts)
    return MatrixDiagnosis(
        checkpoint=snapshot.root,
        query_id=snapshot.query_id,
        writer=facts.writer,
        writer_lines=wrote,
        mode_detected=facts.mode.mode,
        cells=cells,
        findings=merge_findings(cells + unset, facts.mode.mode),
        assumptions=tuple(_assumptions(facts, snapshot, opts, if_stateful, proven, sink)),
        statefulness=facts.statefulness,
        named_lines=opts.lines,
        named_modes=opts.modes,
        proven=proven,
        if_stateful=if_stateful,
        job=opts.base.job,
        job_note=opts.job_note,
        delta_pairing=opts.base.delta_pairing,
        sink_assumption=sink,
    )


def opts_proven(opts: MatrixOptions, snapshot: CheckpointSnapshot) -> tuple[ProvenConf, ...]:
    """Return the confs the logs prove the writer used that the operator did not set otherwise."""
    return applicable(proven_confs(snapshot), opts.base)


def _without_proven(
    snapshot: CheckpointSnapshot,
    planned: Sequence[PlannedCell],
    cells: Sequence[CellDiagnosis],
    base: DiagnoseOptions,
    proven: tuple[ProvenConf, ...],
    facts: SnapshotFacts,
) -> tuple[CellDiagnosis, ...]:
    """Return the plausible restarts without the proven confs that fail where the writer's session
    starts, keeping only the findings that make them fail (the rest is the configured cells')."""
    if not proven:
        return ()
    words = "without " + ", ".join(p.text for p in proven)
    starting = {c.cell for c in cells if c.counted and not c.fails}
    wanted = []
    for cell, _, _, (line_words, mode_words) in planned:
        if cell in starting:
            how = f"{mode_words}, {words}" if mode_words else words
            label = ", ".join(p for p in (f"Spark {cell.spark}", line_words, how) if p)
            wanted.append((cell, PLAUSIBLE, label, (line_words, how)))
    out = []
    for c in diagnose_cells(snapshot, wanted, base, facts):
        if c.fails:
            pred = c.diagnosis.prediction
            kept = tuple(f for f in c.diagnosis.findings if f.code in pred.caused_by)
            out.append(replace(c, diagnosis=replace(c.diagnosis, findings=kept)))
    return tuple(out)
