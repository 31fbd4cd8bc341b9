"""Diagnosis: findings with stable codes and the restart prediction, from a snapshot. Pure.

``ALL_CHECKS`` is an explicit tuple (nothing registers itself on import). Each check is
``(Context, RestartPrediction) -> Iterable[Finding]``.
"""

from __future__ import annotations

from dataclasses import fields

from checkpoint_doctor.diagnosis import checks_logs, checks_writers
from checkpoint_doctor.diagnosis.changes import compare as checks_job
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.facts import SnapshotFacts
from checkpoint_doctor.diagnosis.model import DiagnoseOptions, Diagnosis, Finding
from checkpoint_doctor.diagnosis.outside import outside_notes
from checkpoint_doctor.diagnosis.restart import predict_restart
from checkpoint_doctor.diagnosis.sinks import checks as checks_sink
from checkpoint_doctor.diagnosis.sinks import checks_delta as checks_delta_sink
from checkpoint_doctor.diagnosis.sources import checks as checks_sources
from checkpoint_doctor.diagnosis.sources import checks_delta as checks_delta_sources
from checkpoint_doctor.diagnosis.sources import checks_files as checks_source_files
from checkpoint_doctor.diagnosis.sources import kafka as checks_kafka
from checkpoint_doctor.diagnosis.state import checks as checks_state
from checkpoint_doctor.diagnosis.state import checks_statefulness
from checkpoint_doctor.diagnosis.versions import target
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
    checks_delta_sources.check_delta_sources,
    checks_state.check_state_present,
    checks_state.check_state_restorable,
    checks_state.check_restorable_batch,
    checks_statefulness.check_state_suspected,
    checks_job.check_job,
    checks_job.check_job_writer_and_sources,
    checks_sink.check_sink,
    checks_delta_sink.check_delta_sink,
    checks_writers.check_debris,
    checks_writers.check_target,
)

#: Checks that read only the snapshot, the options and the restart mode, never the target line nor
#: the prediction: a restart matrix runs each once per mode instead of once per cell (their findings
#: are memoized in the shared :class:`SnapshotFacts`).
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

#: The options a MODE_CHECKS finding may depend on: every field but the line and the mode (read
#: from the dataclass, so a new option is part of the key). A tuple of them keys the memo; building
#: it costs a fifth of ``dataclasses.replace`` (asked once per cell of every matrix).
_MODE_KEY_FIELDS = tuple(f.name for f in fields(DiagnoseOptions) if f.name not in ("spark", "mode"))


def diagnose(
    snapshot: CheckpointSnapshot, options: DiagnoseOptions | None = None, facts: SnapshotFacts | None = None
) -> Diagnosis:
    """Diagnose a snapshot for one Spark line and restart mode.

    ``facts`` are the snapshot's target-independent facts, shared when one snapshot is diagnosed for
    several cells (:mod:`checkpoint_doctor.diagnosis.matrix`); None derives them here.

    Raises:
        ValueError: for an unsupported Spark version string (the CLI validates it first).
    """
    opts = options or DiagnoseOptions()
    ctx = Context(snapshot, target(opts.spark), opts, facts)
    prediction = predict_restart(ctx)
    findings: list[Finding] = []
    key = tuple([getattr(opts, name) for name in _MODE_KEY_FIELDS])
    shared = ctx.facts.mode_findings.setdefault((ctx.mode, key), {})
    for check in ALL_CHECKS:
        if check in MODE_CHECKS:
            found = shared.get(check)
            if found is None:
                found = shared[check] = tuple(check(ctx, prediction))
            findings.extend(found)
        else:
            findings.extend(check(ctx, prediction))
    unique = list(dict.fromkeys(findings))
    assumptions = [opts.job.summary] if opts.job is not None else []
    if opts.mode is None:
        assumptions.append(f"restart mode {ctx.mode}: detected from the logs ({ctx.detected.evidence})")
    if opts.stateful is None and ctx.stateful is None:
        assumptions.append(f"stateful operators: {ctx.facts.statefulness.text}")
    if opts.sources is None:
        assumptions.append("source count not checked (pass --sources N)")
    if opts.spark is None:
        assumptions.append(f"target Spark {ctx.target.line} (the newest supported; pass --spark)")
    assumptions.extend(outside_notes(snapshot, opts))
    return Diagnosis(
        checkpoint=snapshot.root,
        spark=ctx.target.line,
        mode=ctx.mode,
        mode_detected=ctx.detected.mode,
        prediction=prediction,
        findings=tuple(sorted(unique, key=Finding.sort_key)),
        assumptions=tuple(assumptions),
        query_id=snapshot.query_id,
    )


__all__ = ["ALL_CHECKS", "DiagnoseOptions", "Diagnosis", "Finding", "diagnose"]
