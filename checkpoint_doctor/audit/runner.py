"""The fleet runner: list each root once, discover, then audit every target concurrently.

I/O lives here and in :mod:`checkpoint_doctor.storage`; discovery, the diagnosis and the report
are pure. A target's snapshot is assembled from its slice of the root's one listing plus the reads
:func:`~checkpoint_doctor.snapshot.plan_reads` asks for (on S3: a few GETs per checkpoint, no
listing request of its own). A failure on one target becomes that target's record; the audit goes
on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from checkpoint_doctor.audit.discovery import SINK, SINK_LOG, Note, TreeIndex, discover, url_join
from checkpoint_doctor.audit.report import (
    checkpoint_record,
    sink_record,
    sink_timeline,
    sort_records,
    summarize,
    unreadable_record,
)
from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.errors import CheckpointDoctorError, StorageError
from checkpoint_doctor.layout import index_listing, index_sink_listing
from checkpoint_doctor.loading import snapshot_from_listing
from checkpoint_doctor.model import Listing
from checkpoint_doctor.snapshot import (
    DEFAULT_DEPTH,
    assemble_snapshot,
    plan_reads,
)
from checkpoint_doctor.storage import CheckpointStore, open_store

#: Default concurrency on object stores: their audits wait on requests (S3 GETs), not the CPU.
DEFAULT_JOBS = 16

Progress = Callable[[int, int, Mapping[str, Any]], None]


@dataclass(frozen=True)
class AuditTask:
    """One directory to audit: everything a worker needs, picklable (sent to Spark executors).

    ``listing`` is the target's slice of its root's listing, relative to the target.
    """

    kind: str
    url: str
    root: str
    path: str
    listing: Listing


@dataclass
class FleetPlan:
    """The roots, their stores, the tasks discovered, notes, and records of roots that failed."""

    roots: list[str] = field(default_factory=list)
    stores: dict[str, CheckpointStore] = field(default_factory=dict)
    tasks: list[AuditTask] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class AuditResult:
    """The finished audit: records sorted by URL, notes, and the summary."""

    roots: tuple[str, ...]
    records: tuple[dict[str, Any], ...]
    notes: tuple[dict[str, Any], ...]
    summary: dict[str, Any]

    @property
    def exit_code(self) -> int:
        """Return the bitwise OR of the records' exit codes."""
        return int(self.summary["exit_code"])


def note_dict(root_url: str, note: Note) -> dict[str, Any]:
    """Return a note as JSON-safe data, with its URL."""
    return {"url": url_join(root_url, note.path), "root": root_url, **note.to_dict()}


def plan_tasks(root_url: str, listing: Listing, *, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> tuple[list[AuditTask], list[dict[str, Any]]]:
    """Return the tasks and notes of one root's listing. Pure."""
    found = discover(listing, root_url=root_url, include=include, exclude=exclude)
    index = TreeIndex(listing)
    tasks = [
        AuditTask(t.kind, url_join(root_url, t.path), root_url, t.path, index.slice(t.path)) for t in found.targets
    ]
    return tasks, [note_dict(root_url, n) for n in found.notes]


def plan_fleet(
    roots: Sequence[str],
    storage_options: Mapping[str, Any] | None = None,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> FleetPlan:
    """List every root once and discover its targets.

    A root that cannot be listed (missing, denied, unreachable) becomes an ``unreadable`` record of
    kind ``root``. A directory found under two roots is audited once.

    Raises:
        MissingDependencyError: a root's protocol needs an extra that is not installed.
        UsageError: a root's protocol is unknown.
    """
    plan = FleetPlan()
    seen: set[tuple[str, str]] = set()
    for root in dict.fromkeys(roots):
        store = open_store(root, storage_options)
        plan.roots.append(store.url)
        plan.stores[store.url] = store
        try:
            listing = store.list_tree()
        except StorageError as exc:
            plan.records.append(
                unreadable_record(kind="root", url=store.url, root=store.url, path="", error_type=type(exc).__name__, message=str(exc))
            )
            continue
        tasks, notes = plan_tasks(store.url, listing, include=include, exclude=exclude)
        for task in tasks:
            if (task.kind, task.url) not in seen:
                seen.add((task.kind, task.url))
                plan.tasks.append(task)
        plan.notes.extend(notes)
    return plan


# ------------------------------------------------------------------------------------- one target


def _audit_checkpoint(store: CheckpointStore, task: AuditTask, options: DiagnoseOptions) -> dict[str, Any]:
    from checkpoint_doctor.inspection import timeline

    snapshot = snapshot_from_listing(store, task.listing)
    diagnosis = diagnose(snapshot, options)
    return checkpoint_record(
        url=task.url,
        root=task.root,
        path=task.path,
        diagnosis=diagnosis,
        timeline_rows=timeline(snapshot),
        files=task.listing.file_count,
        reads=snapshot.read_count,
    )


def _audit_sink(store: CheckpointStore, task: AuditTask, options: DiagnoseOptions) -> dict[str, Any]:
    from checkpoint_doctor.diagnosis.checks_sink import check_sink
    from checkpoint_doctor.diagnosis.context import Context
    from checkpoint_doctor.diagnosis.model import RestartPrediction
    from checkpoint_doctor.diagnosis.versions import target

    log_store = store.child(SINK_LOG)
    index = index_sink_listing(TreeIndex(task.listing).slice(SINK_LOG))
    _, sink_paths = plan_reads(index_listing(Listing((), ())), DEFAULT_DEPTH, index)
    contents = log_store.read_many(sink_paths)
    errors = [v for v in contents.values() if isinstance(v, StorageError)]
    if sink_paths and len(errors) == len(sink_paths):
        raise errors[0]
    snapshot = assemble_snapshot(task.url, index_listing(Listing((), ())), {}, sink=(task.url, index, contents))
    sink = snapshot.sink
    assert sink is not None
    # The sink checks that need no checkpoint: on an empty checkpoint there is no latest offsets
    # or commit id and no batch to re-run, so check_sink reports only CD404/CD405/CD406.
    ctx = Context(snapshot, target(options.spark), options)
    prediction = RestartPrediction(spark=ctx.target.line, mode=ctx.mode, starts=True)
    findings = sorted(dict.fromkeys(check_sink(ctx, prediction)), key=lambda f: f.sort_key())
    missing = sink.missing_for_readers()
    log = {
        "latest": sink.log.latest_id,
        "entries": len(sink.log.entries),
        "compacts": list(sink.compact_ids),
        "compact_interval": sink.compact_interval,
        "missing_for_readers": list(missing),
    }
    ids = [e.batch_id for e in sink.log.entries if not e.compact]
    return sink_record(
        url=task.url,
        root=task.root,
        path=task.path,
        findings=findings,
        log=log,
        timeline=sink_timeline(ids, sink.compact_ids, missing),
        files=task.listing.file_count,
        reads=len(contents),
    )


def audit_task(store: CheckpointStore, task: AuditTask, options: DiagnoseOptions) -> dict[str, Any]:
    """Audit one target through its store; never raises: a failure becomes the target's record."""
    try:
        if task.kind == SINK:
            return _audit_sink(store, task, options)
        return _audit_checkpoint(store, task, options)
    except CheckpointDoctorError as exc:
        return unreadable_record(kind=task.kind, url=task.url, root=task.root, path=task.path, error_type=type(exc).__name__, message=str(exc))
    except Exception as exc:  # noqa: BLE001 - one target's bug must not stop a fleet audit
        return unreadable_record(
            kind=task.kind,
            url=task.url,
            root=task.root,
            path=task.path,
            error_type="InternalError",
            message=f"internal error auditing {task.url}: {type(exc).__name__}: {exc}",
            internal=True,
        )


def run_tasks(
    tasks: Sequence[AuditTask],
    store_for: Callable[[AuditTask], CheckpointStore],
    options: DiagnoseOptions,
    *,
    jobs: int = DEFAULT_JOBS,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Audit tasks with up to ``jobs`` threads; return one record per task (completion order).

    ``progress(done, total, record)`` is called from the calling thread after each record.
    """
    total = len(tasks)
    records: list[dict[str, Any]] = []

    def one(task: AuditTask) -> dict[str, Any]:
        try:
            store = store_for(task)
        except CheckpointDoctorError as exc:
            return unreadable_record(kind=task.kind, url=task.url, root=task.root, path=task.path, error_type=type(exc).__name__, message=str(exc))
        return audit_task(store, task, options)

    if jobs <= 1 or total <= 1:
        for task in tasks:
            records.append(one(task))
            if progress is not None:
                progress(len(records), total, records[-1])
        return records
    with ThreadPoolExecutor(max_workers=min(jobs, total), thread_name_prefix="cd-audit") as pool:
        pending: set[Future[dict[str, Any]]] = set()
        queue = iter(tasks)
        # Submit lazily (a bounded window) so a huge fleet does not queue every task at once.
        for task in queue:
            pending.add(pool.submit(one, task))
            if len(pending) >= 4 * jobs:
                break
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    records.append(future.result())
                    if progress is not None:
                        progress(len(records), total, records[-1])
                    nxt = next(queue, None)
                    if nxt is not None:
                        pending.add(pool.submit(one, nxt))
        except BaseException:
            # Interrupted (Ctrl-C) or a progress callback failed: do not start what is queued.
            for future in pending:
                future.cancel()
            raise
    return records


def local_store_for(plan: FleetPlan) -> Callable[[AuditTask], CheckpointStore]:
    """Return a function giving a task's store as a child of its root's store (no new client)."""

    def store_for(task: AuditTask) -> CheckpointStore:
        root = plan.stores[task.root]
        return root.child(task.path) if task.path else root

    return store_for


#: GETs in flight per audited checkpoint: ``read_many`` reads a checkpoint's few files at once.
READS_IN_FLIGHT = 8
_S3_PROTOCOLS = ("s3://", "s3a://")


def fleet_storage_options(roots: Sequence[str], storage_options: Mapping[str, Any] | None, jobs: int) -> dict[str, Any]:
    """Return the storage options for auditing ``roots`` with ``jobs`` concurrent checkpoints. Pure.

    On S3, botocore keeps at most 10 connections per client (``max_pool_connections``): with a few
    GETs per checkpoint that would cap a ``--jobs 16`` audit at one or two checkpoints in flight.
    Unless the operator set it (``--storage-option config_kwargs.max_pool_connections=N``), the pool
    is sized to ``jobs`` x :data:`READS_IN_FLIGHT`. Other protocols get the options unchanged.
    """
    options = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in (storage_options or {}).items()}
    if not any(root.startswith(_S3_PROTOCOLS) for root in roots):
        return options
    config = options.setdefault("config_kwargs", {})
    if isinstance(config, dict):
        config.setdefault("max_pool_connections", max(10, jobs * READS_IN_FLIGHT))
    return options


def default_jobs(plan: FleetPlan) -> int:
    """Return the concurrency to use when the operator gave none: ``DEFAULT_JOBS``, or 1 when every
    root is on local disk, where reads take microseconds and the work is parsing: threads would
    only contend for the interpreter lock (a network file system mounted locally wants ``--jobs``)."""
    if plan.stores and all(store.is_local for store in plan.stores.values()):
        return 1
    return DEFAULT_JOBS


def finish(plan: FleetPlan, records: Sequence[dict[str, Any]]) -> AuditResult:
    """Combine the roots' records and the targets' records into the result."""
    ordered = sort_records([*plan.records, *records])
    notes = sorted(plan.notes, key=lambda n: (n["url"], n["kind"]))
    return AuditResult(tuple(plan.roots), tuple(ordered), tuple(notes), summarize(ordered, notes))


def audit(
    roots: Sequence[str],
    storage_options: Mapping[str, Any] | None = None,
    *,
    options: DiagnoseOptions | None = None,
    jobs: int | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    progress: Progress | None = None,
) -> AuditResult:
    """Audit every checkpoint and file sink output under the roots, on this machine, with ``jobs``
    threads (None: :func:`default_jobs`).

    Raises:
        MissingDependencyError: a root's protocol needs an extra that is not installed.
        UsageError: a root's protocol is unknown.
    """
    fleet_options = fleet_storage_options(roots, storage_options, jobs or DEFAULT_JOBS)
    plan = plan_fleet(roots, fleet_options, include=include, exclude=exclude)
    records = run_tasks(
        plan.tasks, local_store_for(plan), options or DiagnoseOptions(), jobs=jobs or default_jobs(plan), progress=progress
    )
    return finish(plan, records)
