"""Predict what Spark does on restart, step by step in Spark's own order. Pure.

Micro-batch and async follow ``MicroBatchExecution.populateStartOffsets``
(``AsyncProgressTrackingMicroBatchExecution`` with async progress tracking):
metadata, then ``offsets/L`` (parse, source count), then ``offsets/L-1`` (async: the newest durable
file below L), then ``commits/K`` and the K-vs-L cases, then the first batch's state load and writes.
Continuous processing follows ``ContinuousExecution.getStartOffsets``; the real-time trigger first
deletes the offsets above the newest commit (:mod:`~checkpoint_doctor.diagnosis.real_time`). The first failure in
that order is the one Spark raises; everything else is reported as findings.
"""

from __future__ import annotations

from dataclasses import field, replace

from checkpoint_doctor.diagnosis import real_time
from checkpoint_doctor.diagnosis.changes import compare as changes
from checkpoint_doctor.diagnosis.changes import sources as changed_sources
from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.context import COMMITS, OFFSETS, Context
from checkpoint_doctor.diagnosis.model import RestartPrediction
from checkpoint_doctor.diagnosis.sources import checks_delta
from checkpoint_doctor.diagnosis.sources import files as source_files
from checkpoint_doctor.diagnosis.sources import kafka as checks_kafka
from checkpoint_doctor.diagnosis.state import tws as checks_tws
from checkpoint_doctor.diagnosis.state import tws_job as checks_tws_job
from checkpoint_doctor.diagnosis.versions import SparkError
from checkpoint_doctor.ids import missing_in
from checkpoint_doctor.model import OffsetSeq, SourceOffset
from checkpoint_doctor.parsing.java_uuid import java_uuid_error
from checkpoint_doctor.parsing.text import java_parse_int
from checkpoint_doctor.reading.layout import SINK_LOG, hadoop_crc_path
from checkpoint_doctor.valueclasses import mutable


@mutable
class _Run:
    """The prediction being built (mutable scratch, frozen into a RestartPrediction at the end)."""

    ctx: Context
    next_batch_id: int | None = None
    rerun: bool = False
    start_from: str | None = None
    start_offsets: tuple[SourceOffset, ...] | None = None
    end_from: str | None = None
    end_offsets: tuple[SourceOffset, ...] | None = None
    watermark_ms: int | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    new_query_id: bool = False

    def done(self, error: SparkError | None = None, *caused_by: str) -> RestartPrediction:
        return RestartPrediction(
            spark=self.ctx.line,
            mode=self.ctx.mode,
            starts=error is None,
            next_batch_id=self.next_batch_id,
            rerun=self.rerun,
            start_from=self.start_from,
            start_offsets=self.start_offsets,
            end_from=self.end_from,
            end_offsets=self.end_offsets,
            watermark_ms=self.watermark_ms,
            warnings=tuple(self.warnings),
            error=error,
            caused_by=tuple(caused_by),
            notes=tuple(self.notes),
            new_query_id=self.new_query_id,
        )


def _sources(seq: OffsetSeq | None) -> tuple[SourceOffset, ...] | None:
    return None if seq is None else seq.sources


def _metadata_step(run: _Run) -> RestartPrediction | None:
    ctx = run.ctx
    snap = ctx.snapshot
    has_logs = bool(ctx.offsets_ids or ctx.commit_ids)
    if snap.metadata is None:
        if has_logs:
            if ctx.target.missing_metadata_fatal:
                return run.done(ctx.target.missing_metadata(), Code.METADATA_MISSING)
            run.new_query_id = True
            run.notes.append("metadata is missing: Spark writes a new one with a new random query id")
            if ctx.local_fs and ".metadata.crc" in snap.hadoop_crcs:
                # StreamMetadata.write renames onto the stale checksum (FileAlreadyExistsException).
                text = "Multiple streaming queries are concurrently using metadata."
                return run.done(SparkError(text, text, "start"), Code.ORPHAN_CRC_BLOCKS_WRITE)
        return None
    if snap.metadata.failure is not None:
        return run.done(ctx.target.metadata_unreadable(snap.metadata.failure), Code.METADATA_UNREADABLE)
    if snap.metadata.record is not None:
        # StreamExecution: ``val id: UUID = UUID.fromString(streamMetadata.id)``, built in start().
        error = java_uuid_error(snap.metadata.record.query_id)
        if error is not None:
            return run.done(ctx.target.metadata_id_invalid(error), Code.METADATA_ID_INVALID)
    return None


def _orphan_crc_blocks(ctx: Context, log: str, batch_id: int) -> bool:
    return (
        ctx.local_fs
        and hadoop_crc_path(f"{log}/{batch_id}") in ctx.snapshot.hadoop_crcs
        and (ctx.snapshot.file(f"{log}/{batch_id}") is None)
    )


def _writes_step(run: _Run) -> RestartPrediction | None:
    """The first batch's own writes: offsets/B for a new batch, then commits/B."""
    ctx = run.ctx
    b = run.next_batch_id
    if b is None:
        return None
    if not run.rerun and _orphan_crc_blocks(ctx, OFFSETS, b):
        return run.done(ctx.target.concurrent_rename(OFFSETS, "batch"), Code.ORPHAN_CRC_BLOCKS_WRITE)
    sink = ctx.snapshot.sink
    if sink is not None and sink.orphan_crc_for(b) is not None:
        # The sink adds batch b to its log while the batch runs, before commits/b is written.
        log_dir = f"{sink.url.rstrip('/')}/{SINK_LOG}"
        return run.done(ctx.target.sink_concurrent_rename(log_dir), Code.ORPHAN_CRC_BLOCKS_WRITE)
    if _orphan_crc_blocks(ctx, COMMITS, b):
        return run.done(ctx.target.concurrent_rename(COMMITS, "commit"), Code.ORPHAN_CRC_BLOCKS_WRITE)
    return None


def _job_step(run: _Run, *, schemas: bool) -> RestartPrediction | None:
    """The changed query (``--job``) on a restart (batch > 0): 4.0+ IncrementalExecution checks the
    operators against their metadata first, stateless queries included [exp: job-aggregation-removed
    on 4.0.5]; with ``schemas``, the schema check that runs before any state version is loaded
    (3.5: StateStore.get in each task; 4.x: while planning the batch) [exp: job-grouping-key-added,
    job-aggregate-changed]."""
    ctx, job, b = run.ctx, run.ctx.options.job, run.next_batch_id
    if job is None or b is None or b == 0:
        return None
    if schemas:
        error = changes.schema_error(ctx, job)
        if error is not None:
            return run.done(error, Code.STATE_SCHEMA_INCOMPATIBLE)
        # Then the state of each operator is loaded: one the job added has none [exp: job-dedup-added on 3.5.9].
        added = changes.operators_without_state(ctx, job)
        if added:
            return run.done(changes.state_missing_error(ctx, added[0][0]), Code.STATE_OPERATORS_CHANGED)
        return None
    error = changes.operators_error(ctx, job)
    return run.done(error, Code.STATE_OPERATORS_CHANGED) if error is not None else None


def state_step(ctx: Context, next_batch_id: int | None, rerun: bool) -> RestartPrediction | None:
    """Return the failure of a restart's state step alone, for a restart that reached batch
    ``next_batch_id`` (``rerun``: re-running it), or None when the step passes."""
    run = _Run(ctx)
    run.next_batch_id, run.rerun = next_batch_id, rerun
    return _state_step(run)


def _tws_step(run: _Run) -> RestartPrediction | None:
    """transformWithState: the operator metadata v2 and the schema files it names are read while
    planning a restart's batch (IncrementalExecution), before the schema check and any state load."""
    if not run.next_batch_id:
        return None
    error = checks_tws.restart_error(run.ctx, run.next_batch_id)
    if error is None and run.ctx.options.job is not None:
        # Then the changed processor against the schema files and the metadata (--job).
        error = checks_tws_job.restart_error(run.ctx, run.ctx.options.job)
    return run.done(*error) if error is not None else None


def _state_step(run: _Run) -> RestartPrediction | None:
    """Batch B loads state version B in every operator, partition and store."""
    ctx = run.ctx
    b = run.next_batch_id
    failed = _job_step(run, schemas=False)
    if failed is not None:
        return failed
    if b is None or ctx.stateful is not True:
        return None
    if ctx.is_async:
        return run.done(ctx.target.async_stateful(), Code.ASYNC_STATEFUL)
    state = ctx.snapshot.state
    stores = [s for op in state.operators for s in op.stores]
    if not stores:
        if b == 0:
            return None
        return run.done(ctx.target.state_missing_dir(ctx.pinned_provider), Code.STATE_MISSING)
    failed = _tws_step(run) or _job_step(run, schemas=True)
    if failed is not None:
        return failed
    for op in state.operators:
        expected = ctx.operator_partitions(op)
        if expected is not None and b > 0:
            missing_parts = missing_in(0, expected - 1, op.partition_dirs, limit=1)
            if missing_parts:
                p = missing_parts[0]
                # A RocksDB store without a zip replays changelogs from version 1 (state_missing_dir).
                rocksdb = any(s.provider == "rocksdb" for s in op.stores)
                error = (
                    ctx.target.state_file_missing(f"state/{op.operator_id}/{p}/1.changelog")
                    if rocksdb
                    else ctx.target.delta_missing(f"state/{op.operator_id}/{p}", 1, op.operator_id, p)
                )
                return run.done(error, Code.STATE_PARTITIONS_MISSING)
    for store, result, code, _ in ctx.notable_stores(b):
        if code is None:
            continue
        if result.corrupt:
            bad = result.corrupt[0]
            return run.done(ctx.target.state_file_corrupt(bad, ctx.snapshot.raw.get(bad, b"")[:8]), code)
        missing = result.missing[0]
        if missing.endswith(".delta"):
            version = int(missing.rpartition("/")[2].split(".")[0])
            return run.done(
                ctx.target.delta_missing(store.path, version, store.operator_id, store.partition_id), code
            )
        return run.done(ctx.target.state_file_missing(missing), code)
    latest = ctx.offsets(ctx.latest)
    if latest is not None and latest.record is not None and ctx.legacy_state_formats_differ(latest.record):
        return run.done(ctx.target.state_format_mismatch(), Code.OFFSETS_WITHOUT_CONF_FATAL)
    return None


def _repartition_check(run: _Run) -> RestartPrediction | None:
    """4.3 ``checkUnfinishedRepartitionOnRestart``: when L > K it reads offsets/L and offsets/L-1
    (``OfflineStateRepartitionUtils.isRepartitionBatch``) before anything else, async mode included."""
    ctx = run.ctx
    t = ctx.target
    latest, k = ctx.latest, ctx.committed
    # Not in async mode: an async restart of such a log ran fine on 4.3.0 (async-tail-uncommitted).
    # The line is asked last: a matrix cell replays only the questions asked (diagnosis.line_rules).
    if ctx.is_async or latest is None or k is None or latest <= k or not t.repartition_check:
        return None
    entry = ctx.offsets(latest)
    assert entry is not None
    problem = ctx.log_problem(entry, OFFSETS)
    if problem is not None:
        return run.done(problem.error, problem.code)
    if latest == 0:
        return None
    prev = ctx.offsets(latest - 1)
    if prev is None:
        return run.done(
            t.requirement_failed(f"Previous batch {latest - 1} not found in offset log"),
            ctx.tail_gap_code(strict=True) or Code.OFFSETS_PREDECESSOR_MISSING,
        )
    problem = ctx.log_problem(prev, OFFSETS)
    if problem is not None:
        return run.done(problem.error, problem.code)
    seq, prev_seq = entry.record, prev.record
    if seq is None or prev_seq is None:
        return None
    if seq.metadata is None:
        return run.done(
            t.requirement_failed(f"Batch {latest} metadata not found"), Code.OFFSETS_METADATA_LINE_EMPTY
        )
    parts = seq.metadata.conf_value("spark.sql.shuffle.partitions")
    if parts is None:
        return run.done(
            SparkError("java.util.NoSuchElementException: None.get", "None.get", "init"),
            Code.OFFSETS_WITHOUT_CONF_FATAL,
        )
    if prev_seq.metadata is None:
        return run.done(
            t.requirement_failed(f"Previous batch {latest - 1} metadata not found"),
            Code.OFFSETS_METADATA_LINE_EMPTY,
        )
    prev_parts = prev_seq.metadata.conf_value("spark.sql.shuffle.partitions")
    if prev_parts is None:
        return run.done(
            SparkError("java.util.NoSuchElementException: None.get", "None.get", "init"),
            Code.OFFSETS_WITHOUT_CONF_FATAL,
        )
    if prev_parts != parts:
        return run.done(t.unfinished_repartition(latest, k), Code.UNFINISHED_REPARTITION)
    return None


def _fresh_start(run: _Run) -> RestartPrediction:
    ctx = run.ctx
    t = ctx.target
    run.next_batch_id = 0
    run.rerun = False
    run.notes.append("no offsets: Spark starts a new query at batch 0 from the sources' initial offsets")
    if ctx.commit_ids and t.empty_offsets_with_commits_asserts:
        return run.done(t.empty_offsets_assertion(), Code.COMMITS_WITHOUT_OFFSETS_LOG)
    if t.fresh_dir_must_be_empty:
        # MicroBatchExecution.verifyNewCheckpointDirectory checks offsets, state, commits in this order
        # [exp: offsets-dir-deleted on 4.1.4 names <cp>/state, not <cp>/commits].
        for directory in ("offsets", "state", "commits"):
            if _lists_entries(ctx, directory):
                return run.done(
                    t.fresh_not_empty(directory),
                    Code.FRESH_CHECKPOINT_NOT_EMPTY
                    if not ctx.commit_ids
                    else Code.COMMITS_WITHOUT_OFFSETS_LOG,
                )
    kafka = _kafka_step(run)
    if kafka is not None:
        return kafka
    blocked = _writes_step(run)
    if blocked is not None:
        return blocked
    if 0 in ctx.commit_ids:
        return run.done(t.concurrent_update(0), Code.COMMITS_WITHOUT_OFFSETS_LOG)
    return run.done()


def _sources_created_step(run: _Run) -> RestartPrediction | None:
    """The query thread creates the sources (StreamExecution.runStream, "Initializing sources")
    before it reads any offsets file: the rate source reads its start time, the file source its log."""
    ctx = run.ctx
    problems = source_files.created_problems(
        ctx.target, ctx.snapshot, dict(ctx.options.confs), kinds=ctx.facts.source_kinds
    )
    if problems:
        return run.done(problems[0].error, Code.SOURCE_FILE_UNREADABLE)
    if _source_evolution_on(ctx) and ctx.target.source_evolution_needs_v2:
        latest = ctx.offsets(ctx.latest)
        if latest is not None and latest.record is not None and latest.record.version == 1:
            return run.done(ctx.target.source_evolution_on_v1(), Code.SOURCE_EVOLUTION_NEEDS_V2_OFFSETS)
    return None


def _source_evolution_on(ctx: Context) -> bool:
    value = ctx.session_conf("spark.sql.streaming.queryEvolution.enableSourceEvolution")
    return value is not None and value.lower() == "true"


def _kafka_step(run: _Run) -> RestartPrediction | None:
    """KafkaMicroBatchStream.initialOffset reads sources/<n>/0 only for a batch without a start offset."""
    for problem in source_files.kafka_problems(
        run.ctx.target, run.ctx.snapshot, kinds=run.ctx.facts.source_kinds
    ):
        if source_files.kafka_reads(run.start_offsets, problem.source):
            return run.done(problem.error, Code.SOURCE_FILE_UNREADABLE)
    return None


def _kafka_live_step(run: _Run) -> RestartPrediction | None:
    """The new batch's Kafka ranges against the broker's positions (KafkaMicroBatchStream.planInputPartitions
    -> KafkaOffsetReaderAdmin.getOffsetRangesFromResolvedOffsets, then the tasks' fetches)."""
    error = checks_kafka.restart_error(run.ctx, run.start_offsets)
    if error is not None:
        return run.done(error, Code.KAFKA_POSITIONS_GONE)
    run.notes.extend(checks_kafka.reads_notes(run.ctx, run.start_offsets))
    return None


def _kafka_rerun_npe(run: _Run) -> RestartPrediction | None:
    """4.1's Kafka connector fails a re-run batch in its progress metrics (SPARK-55271): the batch runs,
    then the query stops. A real-time restart plans the batch anew, so it is not a re-run."""
    ctx = run.ctx
    if run.rerun and checks_kafka.kafka_sources(run.end_offsets) and ctx.target.kafka_rerun_metrics_npe:
        return run.done(ctx.target.kafka_rerun_metrics_error(), Code.KAFKA_RERUN_METRICS_NPE)
    return None


def _delta_step(run: _Run) -> RestartPrediction | None:
    """The next batch's Delta sources against their tables' logs (DeltaSource.latestOffset/getBatch
    from the start offset: table id, then the commits listed from its version)."""
    where = (run.ctx, run.next_batch_id, run.rerun, run.start_offsets, run.end_offsets)
    failed = checks_delta.restart_error(*where)
    if failed is not None:
        return run.done(failed[0], failed[1])
    run.notes.extend(checks_delta.reads_notes(*where))
    return None


def _kafka_rerun_live_step(run: _Run) -> RestartPrediction | None:
    """A re-run batch reads the range its offsets files fixed; its tasks meet the broker
    (KafkaMicroBatchStream.planInputPartitions, then KafkaDataConsumer.get): records deleted from that
    range fail it before 4.1's metrics NullPointerException could (issue 32 item 4)."""
    if run.ctx.options.kafka is None or not checks_kafka.kafka_sources(run.end_offsets):
        return None
    error = checks_kafka.rerun_error(run.ctx, run.start_offsets, run.end_offsets)
    if error is not None:
        return run.done(error, Code.KAFKA_RERUN_RANGE_GONE)
    run.notes.extend(checks_kafka.rerun_notes(run.ctx, run.next_batch_id, run.start_offsets, run.end_offsets))
    return None


def _file_source_range_step(run: _Run) -> RestartPrediction | None:
    """FileStreamSource.getBatch(start, end) of the batch re-initialised or re-run."""
    problem = source_files.file_source_range(
        run.ctx.target,
        run.ctx.snapshot,
        run.start_offsets,
        run.end_offsets,
        kinds=run.ctx.facts.source_kinds,
    )
    return run.done(problem.error, Code.SOURCE_FILE_UNREADABLE) if problem is not None else None


def _lists_entries(ctx: Context, directory: str) -> bool:
    """Whether Spark's listing of ``directory`` shows anything (local Hadoop .crc files are hidden)."""
    snap = ctx.snapshot
    prefix = directory + "/"
    for f in snap.files:
        if f.path.startswith(prefix):
            name = f.name
            if ctx.local_fs and name.startswith(".") and name.endswith(".crc"):
                continue
            return True
    return any(d.startswith(prefix) for d in snap.dirs)


def _continuous(run: _Run) -> RestartPrediction:
    ctx = run.ctx
    t = ctx.target
    k = ctx.committed
    if k is None:
        run.next_batch_id = 0
        run.notes.append("no commits: continuous processing starts at epoch 0 from the initial offsets")
        return run.done()
    commit = ctx.commit(k)
    if commit is not None:
        problem = ctx.log_problem(commit, COMMITS)
        if problem is not None:
            return run.done(problem.error, problem.code)
    run.next_batch_id = k + 1
    entry = ctx.offsets(k)
    if entry is None:
        return run.done(t.continuous_commit_without_offsets(k), Code.CONTINUOUS_COMMIT_WITHOUT_OFFSETS)
    problem = ctx.log_problem(entry, OFFSETS)
    if problem is not None:
        return run.done(problem.error, problem.code)
    run.start_from = entry.file.path
    run.start_offsets = _sources(entry.record)
    run.notes.append(f"continuous processing resumes after the newest commit, at epoch {k + 1}")
    failed = _source_kind_step(run)
    return failed if failed is not None else run.done()


#: The pinned conf Spark reads as an int when it restores the session confs (the others are
#: strings, booleans or versions Spark checks elsewhere).
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


def predict_restart(ctx: Context) -> RestartPrediction:
    """Return what the target Spark does when the query restarts on this checkpoint."""
    run = _Run(ctx)
    job = ctx.options.job
    if job is not None and job.unsupported is not None:
        # StreamingQueryManager.createQuery checks the output mode before the checkpoint is read.
        return run.done(ctx.target.unsupported_operation(job.unsupported), Code.OUTPUT_MODE_UNSUPPORTED)
    failed = _metadata_step(run)
    if failed is not None:
        return failed
    if ctx.is_continuous:
        return _continuous(run)
    failed = _sources_created_step(run)
    if failed is not None:
        return failed
    if ctx.is_real_time:
        return _real_time(run)
    if ctx.latest is None:
        return _fresh_start(run)
    return _resume(run)


def _real_time(run: _Run) -> RestartPrediction:
    """MicroBatchExecution.initializeExecution with a RealTimeTrigger: the 4.2+ repartition check on
    the logs as they are, the purge of offsets above K, 4.3's checkpoint format check, then the
    micro-batch restart of what is left."""
    ctx = run.ctx
    gone = real_time.purged_ids(ctx.offsets_ids, ctx.committed)
    if gone:
        run.next_batch_id, run.rerun = ctx.latest, True
        failed = _repartition_check(run)
        if failed is not None:
            return failed
    if ctx.target.real_time_needs_format_v2:
        commit = next((e for e in reversed(ctx.snapshot.commits.entries) if e.record is not None), None)
        version = commit.record.version if commit is not None and commit.record is not None else None
        if real_time.format_v1_refused(version, ctx.session_conf(real_time.DANGEROUSLY_ALLOW_V1)):
            return run.done(ctx.target.real_time_checkpoint_v1(), Code.REAL_TIME_CHECKPOINT_V1)
    if not gone:
        return _fresh_start(run) if ctx.latest is None else _resume(run)
    # The mode is named: the purged logs alone may no longer show real-time mode's trace.
    purged = Context(
        real_time.after_purge(ctx.snapshot, gone), ctx.target, replace(ctx.options, mode=ctx.mode)
    )
    after = _Run(
        purged,
        warnings=[
            ctx.target.real_time_purge_warning(
                -1 if ctx.committed is None else ctx.committed, ctx.latest or 0
            )
        ],
    )
    after.notes.append(
        f"real-time mode deletes {', '.join(f'offsets/{i}' for i in gone)} (above the newest commit) and "
        f"plans batch {gone[0]} again: it reads what its tasks reach, not the logged range"
    )
    result = _fresh_start(after) if purged.latest is None else _resume(after)
    return result


def _resume(run: _Run) -> RestartPrediction:
    """populateStartOffsets with offsets present: offsets/L, offsets/L-1, commits/K, then the batch."""
    ctx = run.ctx
    latest = ctx.latest
    entry = ctx.offsets(latest)
    assert latest is not None
    assert entry is not None
    run.next_batch_id = latest
    run.rerun = True
    failed = _repartition_check(run)
    if failed is not None:
        return failed
    problem = ctx.log_problem(entry, OFFSETS)
    if problem is not None:
        return run.done(problem.error, problem.code)
    seq = entry.record
    if seq is None:
        run.notes.append(f"{entry.file.path} was not read; prediction incomplete")
        return run.done()
    failed = _offsets_step(run, seq)
    if failed is not None:
        return failed
    if seq.metadata is None and seq.version == 1:
        # populateStartOffsets creates the WatermarkTracker only from the metadata line.
        return run.done(ctx.target.no_watermark_tracker(), Code.OFFSETS_METADATA_LINE_EMPTY)
    partitions = seq.metadata.conf_value(SHUFFLE_PARTITIONS) if seq.metadata is not None else None
    if partitions is not None and java_parse_int(partitions) is None:
        # OffsetSeqMetadata.setSessionConf sets the pinned confs before the commit log is read.
        return run.done(ctx.target.shuffle_partitions_not_int(partitions), Code.PINNED_CONF_INVALID)
    if ctx.options.job is not None:
        for key, value, pinned in changes.conf_overrides(ctx, ctx.options.job):
            run.warnings.append(ctx.target.conf_overridden(key, value, pinned))
    conflict = False
    if ctx.committed is None:
        run.notes.append(f"no commit log present: Spark re-runs batch {latest}")
    else:
        failed = _commit_step(run, entry.file.path, seq)
        if failed is not None:
            return failed
        conflict = ctx.committed > latest
    failed = _batch_step(run)
    if failed is not None:
        return failed
    if conflict:
        # K > L: batch L runs again and its commit finds commits/L written (HDFSMetadataLog.add).
        return run.done(ctx.target.concurrent_update(latest), Code.COMMIT_AHEAD_OF_OFFSETS)
    blocked = _writes_step(run) or _kafka_rerun_npe(run)
    if blocked is not None:
        return blocked
    sink = ctx.snapshot.sink
    top = sink.log.latest_id if sink is not None else None
    if run.next_batch_id is not None and top is not None and run.next_batch_id <= top:
        run.warnings.append(f"Skipping already committed batch {run.next_batch_id}")
    return run.done()


def _offsets_step(run: _Run, seq: OffsetSeq) -> RestartPrediction | None:
    """offsets/L against the query's sources, then the start of batch L (offsets/L-1, or P when async)."""
    ctx = run.ctx
    t = ctx.target
    latest = ctx.latest
    assert latest is not None
    wanted = ctx.options.sources
    if wanted is not None and seq.version == 1 and len(seq.sources) != wanted:
        return run.done(t.source_count(len(seq.sources), wanted), Code.SOURCE_COUNT_MISMATCH)
    run.end_from = f"offsets/{latest}"
    run.end_offsets = seq.sources
    if seq.metadata is not None:
        run.watermark_ms = seq.metadata.batch_watermark_ms
    if latest == 0:
        return None
    prev = ctx.restart_start_entry
    if prev is None:
        if not ctx.is_async:
            run.warnings.append(t.batch_missing_log(latest - 1, latest))
            return run.done(
                t.batch_missing(latest - 1), ctx.tail_gap_code() or Code.OFFSETS_PREDECESSOR_MISSING
            )
        run.notes.append(
            "async restart with no durable offsets below L: batch L starts from the initial offsets"
        )
        return None
    problem = ctx.log_problem(prev, OFFSETS)
    if problem is not None:
        return run.done(problem.error, problem.code)
    if prev.record is not None:
        if wanted is not None and prev.record.version == 1 and len(prev.record.sources) != wanted:
            return run.done(t.source_count(len(prev.record.sources), wanted), Code.SOURCE_COUNT_MISMATCH)
        run.start_from = prev.file.path
        run.start_offsets = prev.record.sources
    return None


def _commit_step(run: _Run, latest_path: str, seq: OffsetSeq) -> RestartPrediction | None:
    """commits/K against L: K == L plans a new batch (V1 sources re-read batch L's range first)."""
    ctx = run.ctx
    latest, k = ctx.latest, ctx.committed
    assert latest is not None
    assert k is not None
    commit = ctx.commit(k)
    assert commit is not None
    problem = ctx.log_problem(commit, COMMITS)
    if problem is not None:
        return run.done(problem.error, problem.code)
    if k == latest:
        # populateStartOffsets calls getBatch(offsets/L-1, offsets/L) on V1 sources (file source)
        # before it plans batch L+1.
        previous = run.start_offsets
        run.next_batch_id = latest + 1
        run.rerun = False
        run.start_from, run.start_offsets = latest_path, seq.sources
        run.end_from, run.end_offsets = None, None
        unread = source_files.file_source_range(
            ctx.target, ctx.snapshot, previous, seq.sources, kinds=ctx.facts.source_kinds
        )
        if unread is not None:
            return run.done(unread.error, Code.SOURCE_FILE_UNREADABLE)
        moved = _base_path_step(run, previous, seq.sources)
        if moved is not None:
            return moved
        if commit.record is not None:
            run.watermark_ms = max(run.watermark_ms or 0, commit.record.next_batch_watermark_ms)
    elif k < latest - 1:
        run.warnings.append(ctx.target.commits_behind_warning(k, latest))
    return None


def _base_path_step(
    run: _Run, start: tuple[SourceOffset, ...] | None, end: tuple[SourceOffset, ...] | None
) -> RestartPrediction | None:
    """The changed query (``--job``): its file source re-reads the batch's logged files with its own
    path as basePath [exp: job-file-source-moved]."""
    job = run.ctx.options.job
    error = changed_sources.base_path_error(run.ctx, job, start, end) if job is not None else None
    return run.done(error, Code.FILE_SOURCE_MOVED) if error is not None else None


def _source_kind_step(run: _Run) -> RestartPrediction | None:
    """The changed query (``--job``): each source's reader parses the offset at its place when the
    batch (or epoch) is planned [exp: job-source-kind-changed, job-continuous-on]; the continuous rate
    source then checks its partitions [exp: job-rate-partitions-changed], a Kafka source the
    partitions its new subscription leaves out [exp: kafka-job-topic-changed]."""
    ctx, job = run.ctx, run.ctx.options.job
    if job is None:
        return None
    error = changed_sources.kind_error(ctx, job)
    if error is not None:
        return run.done(error, Code.SOURCE_KIND_CHANGED)
    change = changed_sources.rate_partitions_change(ctx, job)
    if change is not None:
        return run.done(
            ctx.target.rate_partitions_changed(change.in_checkpoint, change.in_job),
            Code.RATE_PARTITIONS_CHANGED,
        )
    if not run.rerun:
        # A new batch's range runs from the old offsets to the latest of the new subscription
        # [exp: kafka-job-topic-changed]; a re-run batch reads the range its offsets file fixed.
        for kafka in changed_sources.kafka_topics_changes(ctx, job):
            if kafka.fail_on_data_loss:
                return run.done(
                    ctx.target.kafka_partitions_unsubscribed(kafka.names), Code.KAFKA_TOPICS_CHANGED
                )
    return None


def _batch_step(run: _Run) -> RestartPrediction | None:
    """The first batch's reads: Kafka initial offsets, the file source's range, then the state."""
    failed = _source_kind_step(run)
    if failed is not None:
        return failed
    failed = _kafka_step(run)
    if failed is None and not run.rerun:
        failed = _kafka_live_step(run)
    elif failed is None:
        failed = _kafka_rerun_live_step(run)
    if failed is None and run.rerun:
        failed = _file_source_range_step(run) or _base_path_step(run, run.start_offsets, run.end_offsets)
    if failed is None:
        failed = _delta_step(run)
    return failed if failed is not None else _state_step(run)
