"""Diagnosis: findings with stable codes and the restart prediction, from a snapshot. Pure.

``ALL_CHECKS`` is an explicit tuple (nothing registers itself on import). Each check is
``(Context, RestartPrediction) -> Iterable[Finding]``.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import cast

from checkpoint_doctor.diagnosis import checks_logs, checks_writers
from checkpoint_doctor.diagnosis.changes import compare as checks_job
from checkpoint_doctor.diagnosis.checks_writers import older_target
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.detect import CONTINUOUS, REAL_TIME
from checkpoint_doctor.diagnosis.facts import SnapshotFacts
from checkpoint_doctor.diagnosis.line_rules import (
    MODE_KEY_FIELDS,
    CellMemo,
    LineCheck,
    answers_alike,
    cell_memo,
    restamped,
)
from checkpoint_doctor.diagnosis.model import DiagnoseOptions, Diagnosis, Finding, RestartPrediction
from checkpoint_doctor.diagnosis.outside import outside_notes, shared_outside_notes
from checkpoint_doctor.diagnosis.restart import predict_restart
from checkpoint_doctor.diagnosis.sinks import checks as checks_sink
from checkpoint_doctor.diagnosis.sinks import checks_delta as checks_delta_sink
from checkpoint_doctor.diagnosis.sources import checks as checks_sources
from checkpoint_doctor.diagnosis.sources import checks_delta as checks_delta_sources
from checkpoint_doctor.diagnosis.sources import checks_files as checks_source_files
from checkpoint_doctor.diagnosis.sources import kafka as checks_kafka
from checkpoint_doctor.diagnosis.state import checks as checks_state
from checkpoint_doctor.diagnosis.state import checks_statefulness
from checkpoint_doctor.diagnosis.state import tws as checks_tws
from checkpoint_doctor.diagnosis.state import tws_job as checks_tws_job
from checkpoint_doctor.diagnosis.tracing import Question, traced
from checkpoint_doctor.diagnosis.versions import SparkTarget, target
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot

ALL_CHECKS = (
    checks_writers.check_live_writer,
    checks_writers.check_interleaved_runs,
    checks_logs.check_metadata,
    checks_logs.check_restart_files,
    checks_logs.check_offsets_metadata,
    checks_logs.check_repartition_marker,
    checks_logs.check_offsets_tail,
    checks_logs.check_commit_consistency,
    checks_logs.check_log_holes,
    checks_logs.check_continuous,
    checks_sources.check_source_count,
    checks_sources.check_void_sources,
    checks_sources.check_source_identity,
    checks_source_files.check_source_files,
    checks_kafka.check_kafka_positions,
    checks_kafka.check_kafka_rerun_range,
    checks_kafka.check_kafka_offsets_negative,
    checks_kafka.check_kafka_unchecked,
    checks_kafka.check_kafka_retention_deadline,
    checks_kafka.check_kafka_topic_recreated,
    checks_kafka.check_kafka_subscription_shape,
    checks_delta_sources.check_delta_sources,
    checks_delta_sources.check_delta_tables,
    checks_delta_sources.check_delta_options,
    checks_state.check_state_present,
    checks_state.check_state_restorable,
    checks_tws.check_transform_with_state,
    checks_state.check_restorable_batch,
    checks_statefulness.check_state_suspected,
    checks_job.check_job,
    checks_tws_job.check_tws_job,
    checks_job.check_job_writer_and_sources,
    checks_sink.check_sink,
    checks_delta_sink.check_delta_sink,
    checks_writers.check_debris,
    checks_writers.check_older_target,
    checks_writers.check_target,
)

#: Checks that read only the snapshot, the options and the restart mode, never the target line nor
#: the prediction: a restart matrix runs each once per mode instead of once per cell (their findings
#: are memoized in the shared :class:`SnapshotFacts`). Except in real-time mode, where ``is_async``
#: asks the line (``_first_cell`` runs them as line checks there).
MODE_CHECKS = frozenset(
    {
        checks_writers.check_live_writer,
        checks_logs.check_offsets_tail,
        checks_logs.check_commit_consistency,
        checks_logs.check_log_holes,
        checks_logs.check_continuous,
        checks_sources.check_source_count,
        checks_sources.check_source_identity,
        checks_state.check_state_present,
        checks_state.check_restorable_batch,
    }
)

#: Checks that read neither the restart mode (``ctx.mode``, ``is_async``, ``is_continuous``,
#: ``is_real_time``, ``restart_start_entry``, ``tail_gap_code``) nor the prediction: a restart
#: matrix runs each once per line for every mode (their findings and the questions they asked of
#: the line's rules are kept in the shared :class:`SnapshotFacts`). The restorability, debris, sink
#: and source checks ask the prediction (the batch the restart runs) and are not among them.
#: ``tests/diagnosis/test_line_rules.py`` holds every fixture's cells in every mode to the cell alone.
MODE_FREE_CHECKS = frozenset(
    {
        checks_writers.check_live_writer,
        checks_writers.check_interleaved_runs,
        checks_logs.check_metadata,
        checks_logs.check_repartition_marker,
        checks_sources.check_source_count,
        checks_sources.check_source_identity,
        checks_state.check_state_present,
    }
)

#: Checks that ask the restart mode only whether it is continuous (``ctx.is_continuous``), and never
#: the prediction: shared like MODE_FREE_CHECKS by the modes that answer alike (micro-batch, async
#: and real-time restarts, or continuous ones).
CONTINUITY_CHECKS = frozenset(
    {
        checks_logs.check_offsets_metadata,
        checks_logs.check_log_holes,
        checks_logs.check_continuous,
        checks_state.check_restorable_batch,
    }
)


def diagnose(
    snapshot: CheckpointSnapshot, options: DiagnoseOptions | None = None, facts: SnapshotFacts | None = None
) -> Diagnosis:
    """Diagnose a snapshot for one Spark line and restart mode.

    ``facts`` are the snapshot's target-independent facts, shared when one snapshot is diagnosed for
    several cells (:mod:`checkpoint_doctor.diagnosis.matrix`); None derives them here. With shared
    facts, the parts of an earlier cell whose line rules answer alike for this line are taken over
    (:mod:`checkpoint_doctor.diagnosis.line_rules`).

    Raises:
        ValueError: for an unsupported Spark version string (the CLI validates it first).
    """
    opts = options or DiagnoseOptions()
    if facts is None:
        return _diagnose(snapshot, opts, target(opts.spark), SnapshotFacts(snapshot))
    return diagnose_cell(snapshot, opts, target(opts.spark), facts, cell_memo(facts, opts))


def _mode_findings(ctx: Context) -> dict[object, tuple[Finding, ...]]:
    key = tuple([getattr(ctx.options, name) for name in MODE_KEY_FIELDS])
    return ctx.facts.mode_findings.setdefault((ctx.mode, key), {})


def _diagnose(
    snapshot: CheckpointSnapshot, opts: DiagnoseOptions, real: SparkTarget, facts: SnapshotFacts
) -> Diagnosis:
    """One cell, every part computed."""
    ctx = Context(snapshot, real, opts, facts)
    prediction = predict_restart(ctx)
    findings: list[Finding] = []
    shared = _mode_findings(ctx)
    for check, per_mode, _ in _CHECKS:
        if per_mode:
            found = shared.get(check)
            if found is None:
                found = shared[check] = tuple(check(ctx, prediction))
            findings.extend(found)
        else:
            findings.extend(check(ctx, prediction))
    return _assemble(snapshot, facts, opts, real.line, prediction, findings, _assumptions(ctx, real.line))


def diagnose_cell(
    snapshot: CheckpointSnapshot,
    opts: DiagnoseOptions,
    real: SparkTarget,
    facts: SnapshotFacts,
    memo: CellMemo,
) -> Diagnosis:
    """Diagnose one cell of several sharing ``facts``, for the line of ``real`` (``opts.spark`` may
    name another: the options are those of ``memo``'s cells). The parts whose line rules answer for
    this line as for an earlier cell are taken over; the others are computed, their questions
    recorded (:mod:`checkpoint_doctor.diagnosis.line_rules`)."""
    line = real.line
    for questions, whole in memo.wholes:
        if answers_alike(questions, real):
            return _with_line(whole, line, facts, real, memo)
    index = memo.known_prediction(real)
    if index is None:
        first = _first_cell(snapshot, _for_line(opts, line), real, facts, memo)
        return _with_line(first, line, facts, real, memo)
    prediction = restamped(memo.predictions[index][1], line)
    return _with_line(
        _planned_cell(snapshot, opts, real, facts, memo, index, prediction), line, facts, real, memo
    )


def _planned_cell(
    snapshot: CheckpointSnapshot,
    opts: DiagnoseOptions,
    real: SparkTarget,
    facts: SnapshotFacts,
    memo: CellMemo,
    index: int,
    prediction: RestartPrediction,
) -> Diagnosis:
    """The cell of ``real``'s line given the prediction at ``index`` of ``memo`` (``prediction``, as
    stamped for the line): the plan's checks whose questions this line answers alike are taken
    over, the others computed (and recorded)."""
    line = real.line
    parts = [index]
    findings: list[Finding] = []
    ctx: Context | None = None
    trace: list[Question] = []
    for part in memo.plans[index]:
        if part.__class__ is tuple:
            findings.extend(part)
            continue
        check = cast(LineCheck, part)
        known = check.known_index(real)
        if known is None:
            if ctx is None:
                ctx = Context(snapshot, traced(real, trace), _for_line(opts, line), facts)
            known = check.compute(ctx, prediction, trace)
        parts.append(known)
        findings.extend(check.known[known][1])
    key = tuple(parts)
    same = memo.diagnoses.get(key)
    if same is None:
        assumptions = memo.assumptions
        assert assumptions is not None  # set by the first cell
        same = memo.diagnoses[key] = _assemble(snapshot, facts, opts, line, prediction, findings, assumptions)
        memo.add_whole(key, same)
    return same


def _with_line(
    diagnosis: Diagnosis, line: str, facts: SnapshotFacts, real: SparkTarget, memo: CellMemo
) -> Diagnosis:
    """Return a memo's diagnosis as the cell of ``line``: stamped with it, and with the cell's findings
    that name its line (``LINE_CHECKS``, left out of the memo's parts, which are thus the same for
    every line: computed once) in their place: their codes are theirs only, so inserting them where
    ``Finding.sort_key`` orders them puts them where a cell diagnosed alone has them (the memo's
    findings are sorted; a stable sort would put an equal key after them: ``bisect_right``)."""
    prediction = diagnosis.prediction
    if prediction.spark != line:
        prediction = restamped(prediction, line)
    extra = facts.per_line.get(line)
    if extra is None:
        extra = facts.per_line[line] = older_target(facts.writer, real)
    if not extra:
        return restamped(diagnosis, line, prediction=prediction)
    if len(extra) > 1:
        findings = sorted((*diagnosis.findings, *extra), key=Finding.sort_key)
    else:
        keys = memo.sort_keys.get(id(diagnosis))
        if keys is None:
            keys = memo.sort_keys[id(diagnosis)] = [f.sort_key() for f in diagnosis.findings]
        findings = list(diagnosis.findings)
        findings.insert(bisect_right(keys, extra[0].sort_key()), extra[0])
    return restamped(diagnosis, line, prediction=prediction, findings=tuple(findings))


def _for_line(opts: DiagnoseOptions, line: str) -> DiagnoseOptions:
    return opts if opts.spark == line else restamped(opts, line)


def _first_cell(
    snapshot: CheckpointSnapshot,
    opts: DiagnoseOptions,
    real: SparkTarget,
    facts: SnapshotFacts,
    memo: CellMemo,
) -> Diagnosis:
    """A cell whose prediction is not an earlier cell's: everything computed, the questions of the
    line rules recorded per part (the prediction, each check)."""
    trace: list[Question] = []
    ctx = Context(snapshot, traced(real, trace), opts, facts)
    prediction = predict_restart(ctx)
    questions = tuple(trace)
    alike = memo.alike_for_checks(prediction)
    if alike is not None:
        # A new prediction that differs from an earlier one only in its notes (4.3: "Delta tables not
        # judged", no Delta Lake release), which no check reads: the checks are those of the
        # earlier one's plan, taken over where this line answers their questions alike.
        index = memo.add(questions, prediction, list(memo.plans[alike]))
        return _planned_cell(snapshot, opts, real, facts, memo, index, prediction)
    if memo.mode_findings is None:
        memo.mode_findings = _mode_findings(ctx)
    shared = memo.mode_findings
    # The checks that ask neither the mode nor the prediction: another mode's cell of this line
    # asked them already (the same questions of the line's rules, the same findings).
    free: dict[object, tuple[tuple[Question, ...], tuple[Finding, ...]]] = facts.mode_free.setdefault(
        (real.line, tuple([getattr(opts, name) for name in MODE_KEY_FIELDS])), {}
    )
    # In real-time mode, whether the restart is async is a question of the line (4.3 makes a
    # stateless real-time query async by default): the MODE_CHECKS that ask it are line checks there.
    lines_alike = ctx.mode != REAL_TIME
    continuous = ctx.mode == CONTINUOUS
    plan: list[tuple[Finding, ...] | LineCheck] = []
    findings: list[Finding] = []
    for check, per_mode, shares in _CELL_CHECKS:
        # What the modes share a check's findings by: the check (MODE_FREE_CHECKS), or the check
        # and whether the restart is continuous (CONTINUITY_CHECKS); None: not shared.
        share = None if not shares else check if shares == 1 else (check, continuous)
        if per_mode and lines_alike:
            found = shared.get(check)
            if found is None:
                known = free.get(share) if share is not None else None
                found = shared[check] = tuple(check(ctx, prediction)) if known is None else known[1]
                if share is not None and known is None:
                    free[share] = ((), found)
            plan.append(found)
        elif share is not None and share in free:
            asked, found = free[share]
            plan.append(LineCheck(check, asked, found) if asked else found)
        else:
            start = len(trace)
            found = tuple(check(ctx, prediction))
            asked = tuple(trace[start:]) if len(trace) > start else ()
            if share is not None:
                free[share] = (asked, found)
            plan.append(LineCheck(check, asked, found) if asked else found)
        findings.extend(found)
    index = memo.add(questions, prediction, plan)
    if memo.assumptions is None:
        memo.assumptions = _assumptions(ctx, real.line, shared=True)
    key = (index, *[0 for part in memo.plans[index] if part.__class__ is not tuple])
    result = _assemble(snapshot, facts, opts, real.line, prediction, findings, memo.assumptions)
    memo.diagnoses[key] = result
    memo.add_whole(key, result)
    return result


#: Each check with whether its findings depend on the mode and options only (MODE_CHECKS), and
#: what the modes share them by: 1, nothing (MODE_FREE_CHECKS); 2, whether the restart is
#: continuous (CONTINUITY_CHECKS); 0, not shared.
_CHECKS = tuple(
    (check, check in MODE_CHECKS, 1 if check in MODE_FREE_CHECKS else 2 if check in CONTINUITY_CHECKS else 0)
    for check in ALL_CHECKS
)

#: The checks whose findings name the cell's line: a function of the writer and the line, added to
#: each cell of a matrix rather than making every line's cell differ (``_with_line``).
LINE_CHECKS = (checks_writers.check_older_target,)

#: The checks of a matrix's cells, diagnosed with the memo (:func:`diagnose_cell`).
_CELL_CHECKS = tuple(kinds for kinds in _CHECKS if kinds[0] not in LINE_CHECKS)


def _assumptions(ctx: Context, line: str, shared: bool = False) -> tuple[str, ...]:
    """What a cell assumed (the same for every line when the line is named: ``opts.spark``);
    ``shared``: a matrix's cell, whose notes on the world outside are the other modes' too."""
    opts = ctx.options
    assumptions = [opts.job.summary] if opts.job is not None else []
    if opts.mode is None:
        assumptions.append(f"restart mode {ctx.mode}: detected from the logs ({ctx.detected.evidence})")
    if opts.stateful is None and ctx.stateful is None:
        assumptions.append(f"stateful operators: {ctx.facts.statefulness.text}")
    if opts.sources is None:
        assumptions.append("source count not checked (pass --sources N)")
    if opts.spark is None:
        assumptions.append(f"target Spark {line} (the newest supported; pass --spark)")
    assumptions.extend(shared_outside_notes(ctx.facts, opts) if shared else outside_notes(ctx.snapshot, opts))
    return tuple(assumptions)


def _assemble(
    snapshot: CheckpointSnapshot,
    facts: SnapshotFacts,
    opts: DiagnoseOptions,
    line: str,
    prediction: RestartPrediction,
    findings: list[Finding],
    assumptions: tuple[str, ...],
) -> Diagnosis:
    unique = list(dict.fromkeys(findings))
    detected = facts.mode.mode
    return Diagnosis(
        checkpoint=snapshot.root,
        spark=line,
        mode=opts.mode or detected,
        mode_detected=detected,
        prediction=prediction,
        findings=tuple(sorted(unique, key=Finding.sort_key)),
        assumptions=assumptions,
        query_id=snapshot.query_id,
    )


__all__ = ["ALL_CHECKS", "DiagnoseOptions", "Diagnosis", "Finding", "cell_memo", "diagnose", "diagnose_cell"]
