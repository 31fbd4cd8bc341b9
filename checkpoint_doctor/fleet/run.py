"""The fleet runner: list each root once, discover, then audit every target concurrently.

I/O lives here and in :mod:`checkpoint_doctor.reading.storage`; discovery, the diagnosis and the report
are pure. A target's snapshot is assembled from its slice of the root's one listing plus the reads
:func:`~checkpoint_doctor.reading.reads.plan_reads` asks for (on S3: a few GETs per checkpoint, no
listing request of its own). A failure on one target becomes that target's record; the audit goes
on.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import accumulate
from typing import Any

from checkpoint_doctor.diagnosis import DiagnoseOptions
from checkpoint_doctor.diagnosis.matrix import MatrixOptions, diagnose_matrix
from checkpoint_doctor.diagnosis.options import as_matrix_options, with_world
from checkpoint_doctor.diagnosis.sinks.checks import check_sink_log
from checkpoint_doctor.diagnosis.timeline import TimelineRow, sink_timeline, timeline
from checkpoint_doctor.errors import CheckpointDoctorError, StorageError
from checkpoint_doctor.fleet.delta import DeltaIndex, TableTask, table_tasks
from checkpoint_doctor.fleet.delta_report import delta_counts, far_tables
from checkpoint_doctor.fleet.discovery import (
    NOTE_EXCLUDED,
    SINK_LOG,
    Note,
    TargetKind,
    TreeIndex,
    discover,
    left_out,
    prune_rule,
    url_join,
)
from checkpoint_doctor.fleet.jobs import AuditJobs, record_hints, unmatched_notes
from checkpoint_doctor.fleet.kafka import AuditKafka, kafka_part
from checkpoint_doctor.fleet.pairing import SinkCandidate, newest_sink_id, sink_candidates
from checkpoint_doctor.fleet.records import (
    ROOT,
    AuditNote,
    AuditSummary,
    FileSink,
    LatestBatches,
    Record,
    SinkLogPart,
    records_json,
)
from checkpoint_doctor.fleet.report import (
    SummaryTally,
    checkpoint_record,
    link_sinks,
    linked,
    next_step,
    paired_sinks,
    sink_record,
    sort_records,
    stamped,
    summarize,
    unreadable_record,
)
from checkpoint_doctor.model import Listing
from checkpoint_doctor.reading.pipeline import SinkArg, attach_sink, read_sink, snapshot_from_listing
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot, SinkLog
from checkpoint_doctor.reading.storage import Storage, open_storage, translate_error
from checkpoint_doctor.reading.storage.local import LocalStorage
from checkpoint_doctor.render.documents import JsonObject
from checkpoint_doctor.render.hints import Hints, storage_pairs
from checkpoint_doctor.world.model import World
from checkpoint_doctor.world.sink_pairing import PairingEvidence, SinkChoice, choose_sink

#: Default concurrency on object stores: their audits wait on requests (S3 GETs), not the CPU.
DEFAULT_JOBS = 16

Progress = Callable[[int, int, Record], None]


@dataclass(frozen=True)
class AuditTask:
    """One directory to audit: everything a worker needs, picklable (sent to Spark executors).

    ``listing`` is the target's slice of its root's listing, relative to the target; ``sinks`` are
    the file sink outputs whose logs may prove they belong to this checkpoint (nearest first).
    """

    kind: str
    url: str
    root: str
    path: str
    listing: Listing
    sinks: tuple[SinkCandidate, ...] = ()
    #: The number of files of the target when ``listing`` leaves some out (a sink's data
    #: directories whose files a local audit's first listing counted, see ``prune_rule``).
    files: int | None = None
    #: The task with its listing, when ``listing`` is the root's first listing of it that left its
    #: checkpoints' own directories out (a local audit: :func:`plan_tasks` with ``subtree``): the
    #: target is listed again when audited, and only then (None: ``listing`` is whole).
    resolve: Callable[[], AuditTask] | None = field(default=None, compare=False, repr=False)
    #: What the code that runs the checkpoint says of its statefulness (a Declarative Pipeline's
    #: flow definitions, pipelines.spec), when nothing told the audit (None: not said).
    stateful: bool | None = None

    def resolved(self) -> AuditTask:
        """Return the task with its whole listing (listed now if it was left for later)."""
        if self.resolve is None:
            return self
        task = self.resolve()
        return task if self.stateful is None else replace(task, stateful=self.stateful)

    @property
    def file_count(self) -> int:
        """Return the number of files of the target (its record's ``files``)."""
        return self.files if self.files is not None else self.listing.file_count


@dataclass
class FleetPlan:
    """The roots, their stores, the tasks discovered, notes, and records of roots that failed."""

    roots: list[str] = field(default_factory=list)
    stores: dict[str, Storage] = field(default_factory=dict)
    tasks: list[AuditTask] = field(default_factory=list)
    notes: list[AuditNote] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    #: The Delta tables under the roots, paired with the checkpoints (fleet/delta.py), and the
    #: files read from their logs for pairing (counted in the summary, not in a record).
    tables: list[TableTask] = field(default_factory=list)
    delta_reads: int = 0


@dataclass(frozen=True)
class AuditResult:
    """The finished audit: records sorted by URL, notes, and the summary."""

    roots: tuple[str, ...]
    records: tuple[Record, ...]
    notes: tuple[AuditNote, ...]
    summary: AuditSummary

    @property
    def exit_code(self) -> int:
        """Return the bitwise OR of the records' exit codes."""
        return self.summary.exit_code

    def to_json(self) -> JsonObject:
        """Return the ``result`` of ``audit --format json``."""
        return {
            "roots": list(self.roots),
            "summary": self.summary.to_json(),
            "records": records_json(self.records),
            "notes": [n.to_json() for n in self.notes],
        }


def audit_note(root_url: str, note: Note) -> AuditNote:
    """Return a discovery note of a root, with its URL."""
    return AuditNote(url_join(root_url, note.path), root_url, note.path, note.kind, note.message)


def _unreadable(task: AuditTask, exc: BaseException) -> Record:
    """Return the record of a task whose storage or files could not be read."""
    return unreadable_record(
        kind=task.kind,
        url=task.url,
        root=task.root,
        path=task.path,
        error_type=type(exc).__name__,
        message=str(exc),
    )


def _batch_times(snapshot: CheckpointSnapshot, rows: Sequence[TimelineRow]) -> tuple[tuple[int, int], ...]:
    """When each batch of the timeline was planned (offsets' ``batchTimestampMs``), oldest first:
    only the offsets files already read (nothing more is read for the picture)."""
    times = []
    for row in reversed(rows):
        entry = snapshot.offsets.get(row.batch_id)
        record = entry.record if entry is not None else None
        if record is not None and record.metadata is not None and record.metadata.batch_timestamp_ms:
            times.append((row.batch_id, record.metadata.batch_timestamp_ms))
    return tuple(times)


def plan_tasks(
    root_url: str,
    listing: Listing,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    subtree: Callable[[str], Listing] | None = None,
    pruned: Sequence[str] = (),
    counted: Sequence[tuple[str, int]] = (),
) -> tuple[list[AuditTask], list[AuditNote]]:
    """Return the tasks and notes of one root's listing. Pure but for ``subtree``.

    ``pruned`` names the directories the listing left out (sorted: a local audit's first listing,
    :func:`~checkpoint_doctor.fleet.discovery.prune_rule`): a target holding one is given a
    ``resolve`` that lists it whole with ``subtree`` when it is audited, and its sink candidates
    are found then (they need its offsets and commits). ``counted`` names the directories whose
    files the listing only counted (sorted, with their number of files: a sink's data): a sink
    holding them is given their count (its record's files), a checkpoint holding one is listed
    whole when audited, as for ``pruned``."""
    found = discover(listing, root_url=root_url, include=include, exclude=exclude)
    index = TreeIndex(listing)
    # The pairing reads only a sink's _spark_metadata/: its candidates hold that part of its slice.
    sinks = [
        (url_join(root_url, t.path), t.path, _sink_log_part(index, t.path))
        for t in found.targets
        if t.kind == TargetKind.SINK
    ]
    newest = [newest_sink_id(listing) for _, _, listing in sinks]  # once per sink, not per checkpoint
    counted_dirs = [path for path, _ in counted]
    before = list(accumulate((n for _, n in counted), initial=0))
    tasks = []
    for t in found.targets:
        url = url_join(root_url, t.path)
        if subtree is not None and (
            _holds_any(pruned, t.path) or (t.kind != TargetKind.SINK and _holds_any(counted_dirs, t.path))
        ):
            later = partial(_listed_task, t.kind, url, root_url, t.path, subtree, sinks, newest)
            tasks.append(AuditTask(t.kind, url, root_url, t.path, Listing(), resolve=later))
            continue
        listing = index.slice(t.path)
        if t.kind == TargetKind.SINK:
            lo, hi = _span_of(counted_dirs, t.path)
            files = listing.file_count + before[hi] - before[lo] if hi > lo else None
            tasks.append(AuditTask(t.kind, url, root_url, t.path, listing, files=files))
            continue
        candidates = sink_candidates(t.path, listing, sinks, newest)
        tasks.append(AuditTask(t.kind, url, root_url, t.path, listing, candidates))
    return tasks, [audit_note(root_url, n) for n in found.notes]


def _sink_log_part(index: TreeIndex, path: str) -> Listing:
    """Return a sink's ``_spark_metadata/`` as a listing relative to the sink (what the pairing
    reads of a sink: its data files' names are not held for every checkpoint's candidates)."""
    log = index.slice(url_join(path, SINK_LOG))
    return Listing(
        dirs=(SINK_LOG, *(f"{SINK_LOG}/{d}" for d in log.dirs)),
        columns=tuple(c.rerooted(url_join(SINK_LOG, c.path)) for c in log.columns),
        unlisted=tuple((url_join(SINK_LOG, p), code) for p, code in log.unlisted),
    )


def _span_of(paths: Sequence[str], directory: str) -> tuple[int, int]:
    """Return the run of a sorted sequence of relative paths that lie below the directory."""
    if not directory:
        return 0, len(paths)
    return bisect.bisect_left(paths, directory + "/"), bisect.bisect_left(paths, directory + "0")


def _holds_any(paths: Sequence[str], directory: str) -> bool:
    """Return whether a sorted sequence of relative paths holds the directory or one below it."""
    if not directory:
        return bool(paths)
    i = bisect.bisect_left(paths, directory)
    return i < len(paths) and (paths[i] == directory or paths[i].startswith(directory + "/"))


def _listed_task(
    kind: str,
    url: str,
    root_url: str,
    path: str,
    subtree: Callable[[str], Listing],
    sinks: Sequence[tuple[str, str, Listing]],
    newest: Sequence[int | None],
) -> AuditTask:
    """Return the task of a target listed whole now (see :func:`plan_tasks`)."""
    listing = subtree(path)
    candidates = sink_candidates(path, listing, sinks, newest) if kind != TargetKind.SINK else ()
    return AuditTask(kind, url, root_url, path, listing, candidates)


def plan_fleet(
    roots: Sequence[str],
    storage_options: Mapping[str, Any] | None = None,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    on_listing: Callable[[str, bool, int], None] | None = None,
    pruned: bool = False,
) -> FleetPlan:
    """List every root once and discover its targets (``on_listing(root, done, entries)`` is told
    before and after each listing).

    ``pruned``: a root on local disk is listed without the directories its checkpoints own, and
    each checkpoint is listed whole when it is audited (:attr:`AuditTask.resolve`): the plan
    never holds the whole fleet's listing (issue 40 item 4). Its tasks then run only in this
    process (not shipped to Spark executors).

    A root that cannot be listed (missing, denied, unreachable) becomes an ``unreadable`` record of
    kind ``root``. A directory found under two roots is audited once.

    Raises:
        MissingDependencyError: a root's protocol needs an extra that is not installed.
        UsageError: a root's protocol is unknown.
    """
    plan = FleetPlan()
    seen: set[tuple[str, str]] = set()
    for root in dict.fromkeys(roots):
        store = open_storage(root, storage_options)
        plan.roots.append(store.url)
        plan.stores[store.url] = store
        if on_listing is not None:
            on_listing(store.url, False, 0)
        subtree: Callable[[str], Listing] | None = None
        left_out_dirs: tuple[str, ...] = ()
        counted: tuple[tuple[str, int], ...] = ()
        try:
            if pruned and isinstance(store, LocalStorage):
                rule = prune_rule(store.url, include=include, exclude=exclude)
                listing, subtree, left_out_dirs, counted = store.list_pruned(rule)
            else:
                listing = store.list_tree()
            if on_listing is not None:
                on_listing(store.url, True, listing.file_count + len(listing.dirs))
        except StorageError as exc:
            plan.records.append(
                unreadable_record(
                    kind=ROOT,
                    url=store.url,
                    root=store.url,
                    path="",
                    error_type=type(exc).__name__,
                    message=str(exc),
                )
            )
            continue
        tasks, notes = plan_tasks(
            store.url,
            listing,
            include=include,
            exclude=exclude,
            subtree=subtree,
            pruned=left_out_dirs,
            counted=counted,
        )
        for task in tasks:
            if (task.kind, task.url) not in seen:
                seen.add((task.kind, task.url))
                plan.tasks.append(task)
        plan.notes.extend(notes)
        known = {t.url for t in plan.tables}
        plan.tables.extend(t for t in table_tasks(store.url, listing, notes) if t.url not in known)
        records, notes = unlisted_outside_targets(store, listing, tasks, include=include, exclude=exclude)
        plan.records.extend(records)
        plan.notes.extend(notes)
    return plan


def unlisted_outside_targets(
    store: Storage,
    listing: Listing,
    tasks: Sequence[AuditTask],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> tuple[list[Record], list[AuditNote]]:
    """Return records (and notes) for the directories of a root's listing that could not be listed.

    One inside a target is that target's error (its record names the directory); one outside
    every target may hide checkpoints, so it gets an ``unreadable`` record of kind ``root`` naming
    it, and the audit goes on. ``--include``/``--exclude`` leave it out like a target.
    """
    records: list[Record] = []
    notes: list[AuditNote] = []
    for rel, code in listing.unlisted:
        if any(not t.path or rel == t.path or rel.startswith(t.path + "/") for t in tasks):
            continue
        url = url_join(store.url, rel)
        why = left_out(rel, store.url, include=include, exclude=exclude)
        if why is not None:
            notes.append(
                audit_note(store.url, Note(rel, NOTE_EXCLUDED, f"unreadable directory left out: {why}"))
            )
            continue
        error = translate_error(OSError(code, os.strerror(code)), url, "list")
        records.append(
            unreadable_record(
                kind=ROOT,
                url=url,
                root=store.url,
                path=rel,
                error_type=type(error).__name__,
                message=str(error),
            )
        )
    return records, notes


# ------------------------------------------------------------------------------------- one target


SinkStoreFor = Callable[[SinkCandidate], Storage]
SinkRead = tuple[SinkLog, SinkArg, int]


class SinkReads:
    """Each file sink's log read once per audit, whoever asks first: the sink's own record and every
    checkpoint it is a candidate for (a compact file can list hundreds of thousands of files).

    Its files are counted once, in the ``reads`` of one record, so that the requests of an audit
    are the sum of its records' reads: the sink's own record when the sink is a target of this
    audit (``owned``), else the record of the checkpoint that read it first. Thread-safe: one lock
    per sink.

    ``keep``: at most that many sinks' reads are kept, the least recently asked for let go first
    and read again if asked for again (counted once all the same). A local audit keeps a few
    (:data:`SINKS_KEPT`: a read takes microseconds, and a fleet's sinks must not all stay in memory,
    issue 40 item 4); None keeps every one (an object store's audit: each read is requests)."""

    def __init__(self, owned: Iterable[str] = (), *, keep: int | None = None) -> None:
        self._lock = threading.Lock()
        self._owned = set(owned)
        self._keep = keep
        self._entries: OrderedDict[str, tuple[threading.Lock, list[SinkRead | CheckpointDoctorError]]] = (
            OrderedDict()
        )
        #: The sinks not owned whose files a record has counted (once, whatever the reads).
        self._counted: set[str] = set()

    def own(self, urls: Iterable[str]) -> None:
        """Count the reads of these sinks in their own records (they are targets of the audit)."""
        with self._lock:
            self._owned.update(urls)

    def read(
        self, url: str, store: Callable[[], Storage], log_listing: Listing, *, owner: bool = False
    ) -> SinkRead:
        """Return :func:`read_sink` of the sink at ``url`` (the first call reads, the others wait),
        with the number of files to count in the caller's record (``owner``: the sink's own).

        Raises:
            CheckpointDoctorError: what the read raised (every caller sees the same failure).
        """
        with self._lock:
            lock, found = self._entries.setdefault(url, (threading.Lock(), []))
            self._entries.move_to_end(url)
            owned = url in self._owned
            while self._keep is not None and len(self._entries) > self._keep:
                self._entries.popitem(last=False)  # a reader holding it keeps its own reference
        read_now = False
        with lock:
            if not found:
                try:
                    found.append(read_sink(store(), log_listing))
                except CheckpointDoctorError as exc:
                    found.append(exc)
                with self._lock:
                    read_now = url not in self._counted
                    self._counted.add(url)
        result = found[0]
        if isinstance(result, CheckpointDoctorError):
            raise result
        sink, arg, count = result
        return sink, arg, count if owner or (read_now and not owned) else 0


#: The sinks' reads a local audit keeps at once (:class:`SinkReads`): a checkpoint's candidates are
#: the sinks nearest it, and the checkpoints are audited in path order.
SINKS_KEPT = 16


NO_SINK = "sink not checked: no file sink output under the audited roots has logs matching this checkpoint"


def _pair_sink(
    task: AuditTask, snapshot: CheckpointSnapshot, sink_store_for: SinkStoreFor, sink_reads: SinkReads
) -> tuple[CheckpointSnapshot, FileSink, int]:
    """Return the snapshot with the file sink its logs prove (:func:`choose_sink`, nearest
    candidates first: a less near one is read only when no nearer one is proven), and what was found.

    The sink logs read are shared by the audit; the count returned is the files read that this
    record owns (:class:`SinkReads`)."""
    reads = 0
    contradicted: list[tuple[SinkCandidate, PairingEvidence]] = []
    choice: SinkChoice[tuple[SinkCandidate, SinkArg, SinkLog]] = SinkChoice()
    for nearness in sorted({c.nearness for c in task.sinks}, reverse=True):
        read: list[tuple[tuple[SinkCandidate, SinkArg, SinkLog], SinkLog]] = []
        for candidate in (c for c in task.sinks if c.nearness == nearness):
            try:
                log_listing = TreeIndex(candidate.listing).slice(SINK_LOG)
                sink, arg, count = sink_reads.read(
                    candidate.url, partial(sink_store_for, candidate), log_listing
                )
            except CheckpointDoctorError:
                continue
            reads += count
            read.append(((candidate, arg, sink), sink))
        choice = choose_sink(snapshot, read)
        contradicted += [(c, e) for (c, _, _), e in choice.contradicted]
        if choice.proven:
            break
    if choice.chosen is not None:
        (candidate, arg, parsed), evidence = choice.chosen
        return attach_sink(snapshot, arg, parsed), FileSink.checked_at(candidate.url, evidence.text), reads
    if choice.proven:
        urls = ", ".join(c.url for (c, _, _), _ in choice.proven)
        note = f"sink not checked: the logs of several file sink outputs match ({urls})"
        return snapshot, FileSink.not_checked(note), reads
    if contradicted:
        first, evidence = contradicted[0]
        others = f" and {len(contradicted) - 1} more" if len(contradicted) > 1 else ""
        note = (
            f"sink not checked: the file sink output {first.url}{others} is another query's ({evidence.text})"
        )
        return snapshot, FileSink.not_checked(note), reads
    return snapshot, FileSink.not_checked(NO_SINK), reads


def _audit_checkpoint(
    store: Storage,
    task: AuditTask,
    options: MatrixOptions,
    sink_store_for: SinkStoreFor,
    sink_reads: SinkReads,
    kafka: AuditKafka | None = None,
    delta: DeltaIndex | None = None,
    jobs: AuditJobs | None = None,
) -> Record:
    if jobs is not None:
        # The checkpoint's own query (audit --job), judged as diagnose --job judges it.
        options = jobs.options_for(options, task.path, task.url)
    if task.stateful is not None and options.base.stateful is None:
        # A pipeline flow's code says it is stateful (a join whose state/ is gone leaves no trace).
        options = replace(options, base=replace(options.base, stateful=task.stateful))
    own = snapshot_from_listing(store, task.listing)
    snapshot, sink, sink_reads_owned = _pair_sink(task, own, sink_store_for, sink_reads)
    # The broker's positions of this checkpoint's topics (a broker failure: this record unreadable)
    live = kafka.live_for(snapshot) if kafka is not None else None
    # The Delta tables under the roots that are its source and sink (fleet/delta.py)
    pairing, delta_reads = delta.pair(task.root, task.path, snapshot) if delta is not None else (None, 0)
    # What the audit found around it, handed to the diagnosis as diagnose and plan hand theirs.
    world = World(snapshot, None, frozenset(), pairing, kafka=live)
    matrix = diagnose_matrix(snapshot, with_world(options, world))
    newest = snapshot.offsets.latest
    metadata = newest.record.metadata if newest is not None and newest.record is not None else None
    batch_time = metadata.batch_timestamp_ms if metadata is not None else None
    rows = timeline(snapshot, matrix.mode_detected)
    now = options.base.now_ms
    return checkpoint_record(
        url=task.url,
        root=task.root,
        path=task.path,
        matrix=matrix,
        timeline=rows,
        latest=LatestBatches(
            snapshot.offsets.latest_id,
            snapshot.commits.latest_id,
            batch_time,
            # The audit's clock (injected in tests): "stopped 3 h ago" in every output.
            stopped_ms=max(0, now - batch_time) if batch_time and now else None,
            batch_times=_batch_times(snapshot, rows),
        ),
        files=task.listing.file_count,
        reads=own.read_count + sink_reads_owned + delta_reads,
        sink=sink,
        kafka=kafka_part(snapshot, live, options.base.now_ms),
        delta=pairing,
        job=jobs.part(task.path, task.url) if jobs is not None else None,
    )


def _audit_sink(store: Storage, task: AuditTask, sink_reads: SinkReads) -> Record:
    log_listing = TreeIndex(task.listing).slice(SINK_LOG)
    sink, _, reads = sink_reads.read(task.url, lambda: store, log_listing, owner=True)
    findings = sorted(dict.fromkeys(check_sink_log(sink)), key=lambda f: f.sort_key())
    missing = sink.missing_for_readers()
    log = SinkLogPart(
        latest=sink.log.latest_id,
        entries=len(sink.log.entries),
        compacts=tuple(sink.compact_ids),
        compact_interval=sink.compact_interval,
        missing_for_readers=tuple(missing),
    )
    ids = [e.batch_id for e in sink.log.entries if not e.compact]
    return sink_record(
        url=task.url,
        root=task.root,
        path=task.path,
        findings=findings,
        log=log,
        timeline=sink_timeline(ids, sink.compact_ids, missing),
        files=task.file_count,
        reads=reads,
    )


def audit_task(
    store: Storage,
    task: AuditTask,
    options: MatrixOptions,
    sink_store_for: SinkStoreFor | None = None,
    sink_reads: SinkReads | None = None,
    kafka: AuditKafka | None = None,
    delta: DeltaIndex | None = None,
    jobs: AuditJobs | None = None,
) -> Record:
    """Audit one target through its store; never raises: a failure becomes the target's record.

    ``sink_store_for`` opens the stores of the file sinks that may belong to a checkpoint (None:
    none is read, the checkpoint's record says "sink not checked"); ``sink_reads`` shares the sink
    logs read between the tasks of one audit (None: this task's own); ``kafka`` the broker
    connection that reads the positions of Kafka sources (None: not checked); ``delta`` the Delta
    tables under the roots to pair with (None: not paired); ``jobs`` the checkpoints' changed
    queries (``audit --job``; None: none)."""
    reads = sink_reads if sink_reads is not None else SinkReads()
    try:
        if task.kind == TargetKind.SINK:
            return _audit_sink(store, task, reads)
        if sink_store_for is None:
            task = replace(task, sinks=())
        return _audit_checkpoint(
            store, task, options, sink_store_for or _no_sink_store, reads, kafka, delta, jobs
        )
    except CheckpointDoctorError as exc:
        return _unreadable(task, exc)
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


def _no_sink_store(candidate: SinkCandidate) -> Storage:
    raise AssertionError("no sink candidates without a sink store")


def run_tasks(
    tasks: Sequence[AuditTask],
    store_for: Callable[[AuditTask], Storage],
    options: MatrixOptions,
    *,
    jobs: int = DEFAULT_JOBS,
    progress: Progress | None = None,
    sink_reads: SinkReads | None = None,
    kafka: AuditKafka | None = None,
    delta: DeltaIndex | None = None,
    job_facts: AuditJobs | None = None,
    release: bool = False,
) -> list[Record]:
    """Audit tasks with up to ``jobs`` threads; return one record per task (completion order).

    ``progress(done, total, record)`` is called from the calling thread after each record;
    ``sink_reads`` shares the sink logs read with other calls of the same audit. ``release``: the
    tasks (a list) are taken out of it as they start, so that each task's slice of the listing is
    freed once audited (most of a fleet audit's memory is its listing, bench: memory), and the
    records are only handed to ``progress``, not kept (the list returned is empty): the caller
    keeps what it needs of them (issue 40 item 4: memory flat in the number of checkpoints).
    """
    shared = sink_reads if sink_reads is not None else SinkReads()
    shared.own(t.url for t in tasks if t.kind == TargetKind.SINK)
    total = len(tasks)
    records: list[Record] = []
    finished = _Handover(total, None if release and progress is not None else records, progress)
    queue = _queue(tasks, release)

    def one(task: AuditTask) -> Record:
        try:
            store = store_for(task)
            task = task.resolved()
        except CheckpointDoctorError as exc:
            return _unreadable(task, exc)

        def sink_store_for(candidate: SinkCandidate) -> Storage:
            return store_for(
                AuditTask(TargetKind.SINK, candidate.url, task.root, candidate.path, candidate.listing)
            )

        return audit_task(store, task, options, sink_store_for, shared, kafka, delta, job_facts)

    if jobs <= 1 or total <= 1:
        for task in queue:
            record = one(task)
            del task  # not held while the record is handled (release)
            finished(record)
            del record
        return records
    with ThreadPoolExecutor(max_workers=min(jobs, total), thread_name_prefix="cd-audit") as pool:
        pending: set[Future[Record]] = set()
        # Submit lazily (a bounded window) so a huge fleet does not queue every task at once.
        for task in queue:
            pending.add(pool.submit(one, task))
            if len(pending) >= 4 * jobs:
                break
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    finished(future.result())
                    nxt = next(queue, None)
                    if nxt is not None:
                        pending.add(pool.submit(one, nxt))
        except BaseException:
            # Interrupted (Ctrl-C) or a progress callback failed: do not start what is queued.
            for future in pending:
                future.cancel()
            raise
    return records


class _Handover:
    """Hand each finished record to ``progress`` (and keep it in ``records``, unless None)."""

    def __init__(self, total: int, records: list[Record] | None, progress: Progress | None) -> None:
        self.total, self.records, self.progress, self.done = total, records, progress, 0

    def __call__(self, record: Record) -> None:
        self.done += 1
        if self.records is not None:
            self.records.append(record)
        if self.progress is not None:
            self.progress(self.done, self.total, record)


def _queue(tasks: Sequence[AuditTask], release: bool) -> Iterator[AuditTask]:
    """Return the tasks to run, taken out of their list as they are handed out (``release``)."""
    return _taken(tasks) if release and isinstance(tasks, list) else iter(tasks)


def _taken(tasks: list[AuditTask]) -> Iterator[AuditTask]:
    """Yield the tasks of a list, emptying it: none is held once handed out."""
    queue = deque(tasks)
    tasks.clear()
    while queue:
        yield queue.popleft()


def audited_stores(plan: FleetPlan) -> list[Storage]:
    """Return the storage of every checkpoint, sink and Delta table the plan audits or reads for
    pairing (to keep outputs out: ``audit --html`` into a table's ``_delta_log`` became a commit of
    the table, issue 31)."""
    store_for = local_store_for(plan)
    tables = [plan.stores[t.root].child(t.path) if t.path else plan.stores[t.root] for t in plan.tables]
    return [*(store_for(task) for task in plan.tasks), *tables]


def local_store_for(plan: FleetPlan) -> Callable[[AuditTask], Storage]:
    """Return a function giving a task's store as a child of its root's store (no new client)."""

    def store_for(task: AuditTask) -> Storage:
        root = plan.stores[task.root]
        return root.child(task.path) if task.path else root

    return store_for


#: GETs in flight per audited checkpoint: ``read_many`` reads a checkpoint's few files at once.
READS_IN_FLIGHT = 8
_S3_PROTOCOLS = ("s3://", "s3a://")


def fleet_storage_options(
    roots: Sequence[str], storage_options: Mapping[str, Any] | None, jobs: int
) -> dict[str, Any]:
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


class RecordStream:
    """The audit's records as they finish, for the API and the CLI alike: a sink output's record
    names the checkpoints proven to be its (they are audited first), and each record gets its next
    command (with the flags that shaped the audit) and the envelope's tool version and time, as
    ``audit-record.json`` requires. The CLI only writes what :meth:`add` returns."""

    def __init__(self, hints: Hints, clock: Callable[[], int], *, keep: bool = True) -> None:
        self.hints = hints
        self.clock = clock
        #: The finished records, when kept (``keep``); an output written record by record (``audit
        #: --format jsonl``) keeps none: the summary is counted as they finish (``tally``).
        self.records: list[Record] = []
        self.keep = keep
        self.tally = SummaryTally()
        #: ``paired_sinks(self.records)``, kept as records are added (not recounted per record).
        self._paired: dict[str, list[str]] = {}

    def add(self, record: Record) -> Record:
        """Return the finished record (linked, with its next step, stamped) and keep it."""
        done = linked(record, self._paired)
        # A Delta table paired from farther away than diagnose looks is named in the next command;
        # a checkpoint judged with a --job names it (the audit's hints carry its --job-python).
        far = far_tables(done)
        hints = replace(self.hints, delta_tables=(*self.hints.delta_tables, *far)) if far else self.hints
        # One copy of the record with its next step and its stamp, not one each.
        done = stamped(done, self.clock(), next_step=next_step(done, record_hints(hints, done)))
        self.tally.add(done)
        if self.keep:
            self.records.append(done)
        for url, checkpoints in paired_sinks((done,)).items():
            self._paired.setdefault(url, []).extend(checkpoints)
        return done


def audit_plan(
    plan: FleetPlan,
    options: MatrixOptions,
    stream: RecordStream,
    *,
    jobs: int | None = None,
    on_record: Callable[[Record], None] | None = None,
    kafka: AuditKafka | None = None,
    job_facts: AuditJobs | None = None,
    release: bool = False,
) -> None:
    """Audit a planned fleet on this machine into the stream: the records of the roots that failed,
    then the checkpoints, then the file sink outputs (a sink's record then names the checkpoints
    whose logs proved it is theirs when it is written). ``on_record`` is told each finished record
    from the calling thread; ``kafka`` reads the Kafka sources' live positions (None: not checked).
    ``release``: the plan lets go of its tasks (``plan.tasks`` is emptied) and each task's listing
    is freed once it is audited, not at the end (issue 40 item 4; the peak is still the whole
    listing, held before the first target is audited)."""

    def add(record: Record) -> None:
        done = stream.add(record)
        if on_record is not None:
            on_record(done)

    for record in plan.records:
        add(record)
    store_for = local_store_for(plan)
    threads = jobs or default_jobs(plan)
    local = bool(plan.stores) and all(store.is_local for store in plan.stores.values())
    sink_reads = SinkReads(
        (t.url for t in plan.tasks if t.kind == TargetKind.SINK), keep=SINKS_KEPT if local else None
    )
    delta = delta_index(plan, threads)
    groups = (
        [t for t in plan.tasks if t.kind != TargetKind.SINK],
        [t for t in plan.tasks if t.kind == TargetKind.SINK],
    )
    if release:
        plan.tasks.clear()
    for group in groups:
        run_tasks(
            group,
            store_for,
            options,
            jobs=threads,
            progress=lambda _d, _t, r: add(r),
            sink_reads=sink_reads,
            kafka=kafka,
            delta=delta,
            job_facts=job_facts,
            release=release,
        )


def delta_index(plan: FleetPlan, jobs: int) -> DeltaIndex:
    """Read the plan's Delta tables for pairing (each once, ``jobs`` at a time), and say in the
    plan's notes what became of each."""

    def store_for(table: TableTask) -> Storage:
        root = plan.stores[table.root]
        return root.child(table.path) if table.path else root

    index = DeltaIndex(plan.tables, store_for, jobs=jobs)
    plan.notes[:] = index.noted(plan.notes)
    plan.delta_reads = index.reads
    return index


def audit_hints(options: MatrixOptions, storage_options: Mapping[str, Any] | None) -> Hints:
    """Return the flags of an audit that its records' next steps repeat: ``audit``'s own
    (``--spark``, ``--mode``, ``--live-window``) and the storage options that may be printed."""
    return Hints.from_options(
        {"spark_version": options.lines, "mode": options.modes, "live_window": options.base.live_window_s},
        storage_pairs(storage_options or {}),
    )


def finish(
    roots: Sequence[str],
    notes: Sequence[AuditNote],
    records: Sequence[Record],
    *,
    interrupted: bool = False,
    delta_reads: int = 0,
) -> AuditResult:
    """Return the result of the finished records (every one, the roots' included), sorted by URL
    (``interrupted``: the records are those finished before the audit was stopped; ``delta_reads``:
    the files read from Delta logs to pair the tables, counted in the summary)."""
    ordered = link_sinks(sort_records(records))
    by_url = sorted(notes, key=lambda n: (n.url, n.kind))
    summary = summarize(ordered, by_url, interrupted=interrupted)
    summary = replace(summary, delta=delta_counts(by_url, ordered, delta_reads))
    return AuditResult(tuple(roots), tuple(ordered), tuple(by_url), summary)


def finish_tallied(
    roots: Sequence[str],
    notes: Sequence[AuditNote],
    stream: RecordStream,
    *,
    interrupted: bool = False,
    delta_reads: int = 0,
) -> AuditResult:
    """Return the result of an audit whose records were written as they finished and not kept:
    no records, the summary counted from them (:class:`SummaryTally`, equal to :func:`finish`'s)."""
    by_url = sorted(notes, key=lambda n: (n.url, n.kind))
    summary = stream.tally.summary(by_url, interrupted=interrupted, delta_reads=delta_reads)
    return AuditResult(tuple(roots), (), tuple(by_url), summary)


def audit(
    roots: Sequence[str],
    storage_options: Mapping[str, Any] | None = None,
    *,
    options: MatrixOptions | DiagnoseOptions | None = None,
    jobs: int | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    hints: Hints | None = None,
    clock: Callable[[], int] | None = None,
    on_record: Callable[[Record], None] | None = None,
    kafka: AuditKafka | None = None,
    job_facts: AuditJobs | None = None,
) -> AuditResult:
    """Audit every checkpoint and file sink output under the roots, on this machine, with ``jobs``
    threads (None: :func:`default_jobs`). ``hints`` carry the flags the records' next steps repeat
    (default: :func:`audit_hints`); ``clock`` stamps them (epoch millis); ``on_record`` is told
    each finished record; ``kafka`` reads the Kafka sources' live positions; ``job_facts`` the
    checkpoints' changed queries (``audit --job``).

    Raises:
        MissingDependencyError: a root's protocol needs an extra that is not installed.
        UsageError: a root's protocol is unknown.
    """
    fleet_options = fleet_storage_options(roots, storage_options, jobs or DEFAULT_JOBS)
    plan = plan_fleet(roots, fleet_options, include=include, exclude=exclude, pruned=True)
    matrix_options = as_matrix_options(options)
    stream = RecordStream(
        hints if hints is not None else audit_hints(matrix_options, storage_options),
        clock or (lambda: int(time.time() * 1000)),
    )
    if job_facts is not None:
        plan.notes.extend(unmatched_notes(plan.tasks, job_facts, plan.roots))
    audit_plan(
        plan,
        matrix_options,
        stream,
        jobs=jobs,
        on_record=on_record,
        kafka=kafka,
        job_facts=job_facts,
        release=True,
    )
    return finish(plan.roots, plan.notes, stream.records, delta_reads=plan.delta_reads)
