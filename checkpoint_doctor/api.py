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
from typing import TYPE_CHECKING, Any

from checkpoint_doctor.diagnosis.changes.facts import JobFacts
from checkpoint_doctor.diagnosis.detect import WriterGuess, detect_mode, detect_writer
from checkpoint_doctor.diagnosis.matrix import (
    MatrixDiagnosis,
    MatrixOptions,
    diagnose_matrix,
    with_unfinished,
)
from checkpoint_doctor.diagnosis.model import DEFAULT_LIVE_WINDOW_S
from checkpoint_doctor.diagnosis.options import matrix_options
from checkpoint_doctor.diagnosis.timeline import TimelineRow, timeline
from checkpoint_doctor.fleet.run import AuditResult
from checkpoint_doctor.planning.plan import RepairPlan
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.reading.storage import normalize_url

if TYPE_CHECKING:
    from checkpoint_doctor.fleet.baseline import AuditChanges
    from checkpoint_doctor.pipelines.load import PipelineReport
    from checkpoint_doctor.world.model import Unfinished

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
    delta_tables: Sequence[str] = (),
    job: JobFacts | None = None,
) -> tuple[CheckpointSnapshot, MatrixOptions, Unfinished]:
    """Return the snapshot, matrix options and unfinished applies of a verdict: a URL is loaded as the CLI loads it
    (the file sink next to it whose log proves it is the query's, the tool's own writes, the Delta
    tables beside it and those named, paired with it); a snapshot from :func:`load` is taken as it
    is (with the Delta tables named only)."""
    from checkpoint_doctor.world.delta_discovery import NearbyTables
    from checkpoint_doctor.world.load import load_for_verdict, pair_delta
    from checkpoint_doctor.world.model import World

    job_delta: dict[int, str] = {}
    if job is not None:
        from checkpoint_doctor.diagnosis.changes.sources import delta_source_paths_by_index

        # The table each of a changed job's Delta sources reads is that source's, as diagnose --job pairs it.
        job_delta = {n: normalize_url(p) for n, p in delta_source_paths_by_index(job).items()}
    tables = [normalize_url(t) for t in delta_tables]
    if isinstance(target, CheckpointSnapshot):
        # A snapshot says nothing of where it was read: only the tables named are looked at.
        pairing, named = (
            pair_delta(target, NearbyTables(), storage_options, tables, job_delta)
            if tables or job_delta
            else (None, None)
        )
        loaded = World(target, None, frozenset(), pairing, named)
    else:
        loaded = load_for_verdict(
            normalize_url(target),
            storage_options,
            lambda: load(target, storage_options=storage_options, sink_path=sink_path),
            sink_path=normalize_url(sink_path) if sink_path else None,
            delta_tables=tables,
            job_delta=job_delta,
        )
    options = matrix_options(
        now_ms=_now(now_ms),
        spark=spark,
        modes=mode,
        stateful=stateful,
        live_window_s=live_window_s,
        world=loaded,
    )
    if job is not None:
        from checkpoint_doctor.diagnosis.changes.options import with_job

        options = with_job(options, job)
    return loaded.snapshot, options, loaded.unfinished


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
    delta_tables: Sequence[str] = (),
    job: JobFacts | None = None,
) -> MatrixDiagnosis:
    """Return the restart matrix of a checkpoint (a URL, or a snapshot from :func:`load`):
    ``checkpoint-doctor diagnose``. ``spark`` (lines or versions: ``"4.3"``, ``"4.3.0"``) and
    ``mode`` (``micro-batch``, ``async``, ``continuous``) narrow it; ``.exit_code`` is the CLI's.
    The Delta tables beside a checkpoint URL are found and paired as the CLI does;
    ``delta_tables`` names more (``--delta-table``). ``job``: the changed query as a Spark line
    described it (``--job``; the facts come from
    ``checkpoint_doctor.execution.job_facts.describe_jobs``, which starts that line's python); the
    tables its Delta sources read are paired as named ones, as ``--job`` does."""
    snapshot, options, unfinished = _verdict(
        target,
        storage_options=storage_options,
        sink_path=sink_path,
        spark=spark,
        mode=mode,
        stateful=stateful,
        live_window_s=live_window_s,
        now_ms=now_ms,
        delta_tables=delta_tables,
        job=job,
    )
    return with_unfinished(diagnose_matrix(snapshot, options), unfinished)


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
    delta_tables: Sequence[str] = (),
    job: JobFacts | None = None,
) -> RepairPlan:
    """Return the repair plan for the restarts that fail (``checkpoint-doctor plan``; read-only).
    ``plan.to_json()`` is the file ``apply`` takes; ``job`` as :func:`diagnose` takes it."""
    from checkpoint_doctor.planning import PlanOptions
    from checkpoint_doctor.planning.matrix_plan import plan_for_matrix

    snapshot, options, _unfinished = _verdict(
        target,
        storage_options=storage_options,
        sink_path=sink_path,
        spark=spark,
        mode=mode,
        stateful=stateful,
        live_window_s=live_window_s,
        now_ms=now_ms,
        delta_tables=delta_tables,
        job=job,
    )
    matrix = diagnose_matrix(snapshot, options)
    return plan_for_matrix(
        snapshot,
        matrix,
        PlanOptions(strategy=strategy, accept_data_loss=accept_data_loss, diagnose=options.base),
        storage_options=dict(storage_options or {}),
    )


def diagnose_pipeline(
    storage_root: str,
    *,
    spark: Sequence[str] = (),
    warehouse: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    job: str | None = None,
) -> tuple[PipelineReport, ...]:
    """Judge a Spark Declarative Pipeline's storage root (``checkpoint-doctor diagnose <storage root>``):
    one :class:`~checkpoint_doctor.pipelines.load.PipelineReport` per Spark line with pipelines
    (``spark`` narrows them; default 4.1, 4.2 and 4.3): every flow's live version, what the next
    ``spark-pipelines run`` does with it, and the pipeline's findings (CD8xx). ``warehouse``: where
    the tables lie (default: ``spark-warehouse`` beside the storage root, if there). ``job``: the
    pipeline code the next run runs (``--job``: a ``spark-pipeline.yml`` or its project directory;
    default: the spec beside the storage root)."""
    from checkpoint_doctor.pipelines.load import judge_lines, pipeline_lines

    return judge_lines(
        normalize_url(storage_root).rstrip("/"),
        pipeline_lines(spark),
        warehouse=warehouse,
        storage_options=storage_options,
        code_spec=job,
    )


def plan_reset_flow(
    flow_dir: str,
    *,
    accept_data_loss: bool = False,
    spark: str | None = None,
    live_window_s: float = LIVE_WINDOW_S,
    storage_options: Mapping[str, Any] | None = None,
    start: str = "committed",
    accept_duplicates: bool = False,
) -> RepairPlan:
    """``checkpoint-doctor plan <flow dir> --reset-flow``: a Declarative Pipeline flow's new live version
    n+1 past its last committed batch, keeping the table's data (pipelines.reset); apply it with
    :func:`apply_plan` as any plan. The flow directory is ``<storage>/_checkpoints/<c>/<s>/<t>/<f>``.

    Raises:
        UsageError: not a flow directory. RefusedError: nothing committed yet; a stateful flow's
            reset without ``accept_data_loss`` (its state starts empty); ``start`` ``"earliest"`` (each
            file source from its table's start, ``--reset-start earliest``) without
            ``accept_duplicates``, or on a flow without a file source."""
    from checkpoint_doctor.errors import UsageError
    from checkpoint_doctor.pipelines.layout import flow_dir_parts
    from checkpoint_doctor.pipelines.load import plan_reset

    url = normalize_url(flow_dir).rstrip("/")
    parts = flow_dir_parts(url)
    if parts is None:
        raise UsageError(f"{flow_dir} is not a pipeline flow directory (.../_checkpoints/<c>/<s>/<t>/<f>)")
    plan, _ = plan_reset(
        url,
        storage_options,
        pipeline=parts[0],
        accept_data_loss=accept_data_loss,
        spark=spark,
        live_window_s=live_window_s,
        start=start,
        accept_duplicates=accept_duplicates,
    )
    return plan


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
    ``.records`` (one typed record per directory: :mod:`checkpoint_doctor.fleet.records`, each
    ``.to_json()`` as ``audit-record.json`` has it), ``.summary``, ``.notes``, ``.exit_code``;
    ``.to_json()`` is what ``audit --format json`` prints as its ``result``. ``job``: ``(glob,
    facts)`` pairs, ``audit --job GLOB=MODULE:FUNCTION``'s (the first glob that matches a checkpoint
    judges it with its job's facts)."""
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


def audit_changes(result: AuditResult, baseline: str) -> AuditChanges:
    """Return what changed since a previous audit (``audit --baseline FILE``): ``baseline`` is
    that audit's ``--format jsonl`` or ``json`` output (a local file); ``.worse`` is what the CLI's
    exit bit 64 says, ``.to_json()`` what its JSON's ``changes`` holds."""
    from checkpoint_doctor.fleet.baseline import compare, read_baseline

    return compare(
        read_baseline(baseline), result.records, result.roots, interrupted=result.summary.interrupted
    )
