"""The Python API: what the command line does, as functions returning typed values.

``checkpoint_doctor.inspect``, ``diagnose``, ``plan`` and ``audit`` (re-exported by the package)
read through the same storage layer and run the same pure core as the CLI; nothing here prints or
exits. Paths are local paths, ``file:`` URIs, ``s3://`` or any fsspec URL; ``storage_options`` are
fsspec's (``{"client_kwargs": {"endpoint_url": ...}}``; credentials come from the environment).
Errors are :class:`~checkpoint_doctor.errors.CheckpointDoctorError` subclasses with a one-line message.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from checkpoint_doctor.diagnosis.changes.facts import JobFacts
from checkpoint_doctor.diagnosis.detect import WriterGuess, detect_mode, detect_writer
from checkpoint_doctor.diagnosis.matrix import MatrixDiagnosis, MatrixOptions, diagnose_matrix
from checkpoint_doctor.diagnosis.model import DEFAULT_LIVE_WINDOW_S
from checkpoint_doctor.diagnosis.options import matrix_options
from checkpoint_doctor.diagnosis.timeline import TimelineRow, timeline
from checkpoint_doctor.fleet.run import AuditResult
from checkpoint_doctor.planning.plan import RepairPlan
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.reading.storage import normalize_url

#: The default of ``live_window_s``: a batch planned this recently means a query may be live.
LIVE_WINDOW_S = DEFAULT_LIVE_WINDOW_S


@dataclass(frozen=True)
class Inspection:
    """What ``inspect`` shows: the snapshot, who wrote it and how, and the newest batch ids."""

    checkpoint: str
    query_id: str | None
    mode: str
    written_by: WriterGuess
    timeline: tuple[TimelineRow, ...]
    snapshot: CheckpointSnapshot

    def to_dict(self) -> dict[str, Any]:
        """Return ``inspect --format json``'s ``result``."""
        from checkpoint_doctor.diagnosis.inspection import inspect_report

        return inspect_report(self.snapshot)


def load(
    checkpoint: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    sink_path: str | None = None,
    deep: bool = False,
) -> CheckpointSnapshot:
    """Read a checkpoint (and a file sink's log) into a snapshot.

    Raises:
        NotACheckpointError: the directory holds no checkpoint.
        StorageError: it cannot be read.
    """
    from checkpoint_doctor.reading.pipeline import load_checkpoint, require_checkpoint

    snapshot = load_checkpoint(
        normalize_url(checkpoint),
        storage_options=storage_options,
        depth="deep" if deep else "default",
        sink_path=normalize_url(sink_path) if sink_path else None,
    )
    return require_checkpoint(snapshot)


def inspect(
    checkpoint: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    sink_path: str | None = None,
    deep: bool = False,
) -> Inspection:
    """Return what a checkpoint holds (``checkpoint-doctor inspect``)."""
    snapshot = load(checkpoint, storage_options=storage_options, sink_path=sink_path, deep=deep)
    mode = detect_mode(snapshot).mode
    return Inspection(
        checkpoint=snapshot.root,
        query_id=snapshot.query_id,
        mode=mode,
        written_by=detect_writer(snapshot),
        timeline=timeline(snapshot, mode),
        snapshot=snapshot,
    )


def _now(now_ms: int | None) -> int:
    return int(time.time() * 1000) if now_ms is None else now_ms


def _verdict(
    target: str | CheckpointSnapshot,
    *,
    storage_options: Mapping[str, Any] | None,
    sink_path: str | None,
    spark: Sequence[str],
    mode: Sequence[str],
    stateful: bool | None,
    live_window_s: float,
    now_ms: int | None,
    job: JobFacts | None = None,
) -> tuple[CheckpointSnapshot, MatrixOptions]:
    """Return the snapshot and matrix options of a verdict: a URL is loaded as the CLI loads it
    (the file sink next to it whose log proves it is the query's, the tool's own writes); a
    snapshot from :func:`load` is taken as it is."""
    snapshot, note, writes = target, None, frozenset[tuple[str, int | str]]()
    if not isinstance(target, CheckpointSnapshot):
        from checkpoint_doctor.loading import load_for_verdict

        loaded = load_for_verdict(
            normalize_url(target),
            storage_options,
            lambda: load(target, storage_options=storage_options, sink_path=sink_path),
            sink_path=normalize_url(sink_path) if sink_path else None,
        )
        snapshot, note, writes = loaded.snapshot, loaded.sink_note, loaded.own_writes
    assert isinstance(snapshot, CheckpointSnapshot)
    options = matrix_options(
        now_ms=_now(now_ms),
        spark=spark,
        modes=mode,
        stateful=stateful,
        live_window_s=live_window_s,
        sink_note=note,
        own_writes=writes,
    )
    if job is not None:
        from checkpoint_doctor.diagnosis.changes.options import with_job

        options = with_job(options, job)
    return snapshot, options


def diagnose(
    target: str | CheckpointSnapshot,
    *,
    spark: Sequence[str] = (),
    mode: Sequence[str] = (),
    stateful: bool | None = None,
    storage_options: Mapping[str, Any] | None = None,
    sink_path: str | None = None,
    live_window_s: float = LIVE_WINDOW_S,
    now_ms: int | None = None,
    job: JobFacts | None = None,
) -> MatrixDiagnosis:
    """Return the restart matrix of a checkpoint (a URL, or a snapshot from :func:`load`):
    ``checkpoint-doctor diagnose``. ``spark`` (lines or versions: ``"4.3"``, ``"4.3.0"``) and
    ``mode`` (``micro-batch``, ``async``, ``continuous``) narrow it; ``.exit_code`` is the CLI's.
    ``job``: the changed query as a Spark line described it (``--job``; the facts come from
    ``checkpoint_doctor.execution.job_facts.describe_jobs``, which starts that line's python)."""
    snapshot, options = _verdict(
        target,
        storage_options=storage_options,
        sink_path=sink_path,
        spark=spark,
        mode=mode,
        stateful=stateful,
        live_window_s=live_window_s,
        now_ms=now_ms,
        job=job,
    )
    return diagnose_matrix(snapshot, options)


def plan(
    target: str | CheckpointSnapshot,
    *,
    spark: Sequence[str] = (),
    mode: Sequence[str] = (),
    stateful: bool | None = None,
    strategy: str | None = None,
    accept_data_loss: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    sink_path: str | None = None,
    live_window_s: float = LIVE_WINDOW_S,
    now_ms: int | None = None,
    job: JobFacts | None = None,
) -> RepairPlan:
    """Return the repair plan for the restarts that fail (``checkpoint-doctor plan``; read-only).
    ``plan.to_json()`` is the file ``apply`` takes; ``job`` as :func:`diagnose` takes it."""
    from checkpoint_doctor.planning import PlanOptions
    from checkpoint_doctor.planning.matrix_plan import plan_for_matrix

    snapshot, options = _verdict(
        target,
        storage_options=storage_options,
        sink_path=sink_path,
        spark=spark,
        mode=mode,
        stateful=stateful,
        live_window_s=live_window_s,
        now_ms=now_ms,
        job=job,
    )
    matrix = diagnose_matrix(snapshot, options)
    return plan_for_matrix(
        snapshot,
        matrix,
        PlanOptions(strategy=strategy, accept_data_loss=accept_data_loss, diagnose=options.base),
        storage_options=dict(storage_options or {}),
    )


def audit(
    roots: str | Sequence[str],
    *,
    spark: Sequence[str] = (),
    mode: Sequence[str] = (),
    storage_options: Mapping[str, Any] | None = None,
    live_window_s: float = LIVE_WINDOW_S,
    jobs: int | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    now_ms: int | None = None,
    job: Sequence[tuple[str, JobFacts]] = (),
) -> AuditResult:
    """Audit every checkpoint and file sink output under the roots (``checkpoint-doctor audit``):
    ``.records`` (one dict per directory, ``audit-record.json``), ``.summary``, ``.notes``,
    ``.exit_code``. ``job``: ``(glob, facts)`` pairs, ``audit --job GLOB=MODULE:FUNCTION``'s (the
    first glob that matches a checkpoint judges it with its job's facts)."""
    from checkpoint_doctor.fleet.jobs import audit_jobs
    from checkpoint_doctor.fleet.run import audit as run_audit

    names = [roots] if isinstance(roots, str) else list(roots)
    return run_audit(
        [normalize_url(r) for r in names],
        storage_options,
        options=matrix_options(now_ms=_now(now_ms), spark=spark, modes=mode, live_window_s=live_window_s),
        jobs=jobs,
        include=include,
        exclude=exclude,
        job_facts=audit_jobs(job) if job else None,
    )
