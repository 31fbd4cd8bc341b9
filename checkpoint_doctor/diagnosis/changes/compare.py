"""The changed query against the checkpoint, in Spark's order and words. Pure.

With ``--job`` the query is known (:class:`~checkpoint_doctor.diagnosis.changes.facts.JobFacts`):
its source count goes to the offsets check (``OffsetSeq.toStreamProgress``'s assertion, CD201), its
statefulness replaces the guess from the checkpoint's traces, and the restart meets three more
things, each a step of :func:`checkpoint_doctor.diagnosis.restart.predict_restart`:

* 4.0+ compare the query's stateful operators with the operator metadata the checkpoint holds
  (``state/<op>/_metadata/metadata``; ``IncrementalExecution`` on the first batch): any operator
  added, removed or changed there fails (CD313) — 3.5 has no such metadata and no such check;
* each stateful operator's key and value schema against its schema file
  (``StateSchemaCompatibilityChecker``, CD312);
* the session confs the job sets that the checkpoint pins: ``OffsetSeqMetadata.setSessionConf``
  replaces them with the checkpoint's value and logs a WARN (CD015, the job's setting is ignored).
"""

from __future__ import annotations

from collections.abc import Iterator

from checkpoint_doctor.diagnosis.changes import sources, writer
from checkpoint_doctor.diagnosis.changes.facts import JobFacts
from checkpoint_doctor.diagnosis.changes.schemas import SchemaChange, schema_changes
from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.model import Finding, RestartPrediction
from checkpoint_doctor.diagnosis.versions import SparkError


def operators_in_metadata(ctx: Context) -> tuple[tuple[int, str], ...]:
    """Return (operator id, name) of every operator whose metadata file the checkpoint holds (v1
    ``_metadata/metadata``, or a transformWithState's newest ``_metadata/v2/<batch>``)."""
    out = []
    for op in ctx.snapshot.state.operators:
        rec = op.metadata if op.metadata is not None and op.metadata.record is not None else op.metadata_v2
        if rec is not None and rec.record is not None:
            out.append((op.operator_id, rec.record.operator_name))
    return tuple(sorted(out))


def operators_with_state(ctx: Context) -> tuple[int, ...]:
    """Return the ids of the operators whose state the checkpoint holds."""
    return tuple(sorted(op.operator_id for op in ctx.snapshot.state.operators if op.stores))


def operators_in_job(job: JobFacts) -> tuple[tuple[int, str], ...]:
    """Return (operator id, name) of the job's stateful operators."""
    return tuple(sorted((o.operator_id, o.name) for o in job.operators))


def operators_changed(ctx: Context, job: JobFacts) -> tuple[tuple[int, str], ...] | None:
    """Return the metadata's operators when the job's differ from them (None: they match, or the
    checkpoint holds no operator metadata to compare with)."""
    stored = operators_in_metadata(ctx)
    if not stored or stored == operators_in_job(job):
        return None
    return stored


def operators_without_state(ctx: Context, job: JobFacts) -> tuple[tuple[int, str], ...]:
    """Return the job's stateful operators that have no state in a checkpoint that holds some, where
    no operator metadata check refuses the restart first (3.5, or a checkpoint without metadata):
    a stateful operator added before another (dropDuplicates before the aggregation) takes an id
    whose state/<id> was never written, and the tasks fail loading its state version
    [exp: job-dedup-added on 3.5.9]. A checkpoint without any state is CD301's."""
    with_state = {op.operator_id for op in ctx.snapshot.state.operators if op.stores}
    if not with_state or (ctx.target.checks_operator_metadata and operators_in_metadata(ctx)):
        return ()
    return tuple((i, name) for i, name in operators_in_job(job) if i not in with_state)


def state_missing_error(ctx: Context, operator_id: int) -> SparkError:
    """What the tasks of a restart say loading the state of an operator that has none: the first
    file of the chain (HDFS ``1.delta``; RocksDB replays changelogs from version 1)."""
    if ctx.pinned_provider == "rocksdb":
        return ctx.target.state_file_missing(f"state/{operator_id}/0/1.changelog")
    return ctx.target.delta_missing(f"state/{operator_id}/0", 1, operator_id, 0)


def operators_error(ctx: Context, job: JobFacts) -> SparkError | None:
    """The 4.0+ operator metadata check of a restart (batch > 0), or None."""
    if not ctx.target.checks_operator_metadata:
        return None
    stored = operators_changed(ctx, job)
    if stored is None:
        return None
    return ctx.target.operators_not_match(stored, operators_in_job(job))


def schema_error(ctx: Context, job: JobFacts) -> SparkError | None:
    """The state schema check of the first stateful operator whose schema changed, or None."""
    changes = schema_changes(ctx.snapshot, job, nullability=ctx.target.checks_state_nullability)
    if not changes:
        return None
    first = changes[0]
    operator = next(o for o in job.operators if o.operator_id == first.operator_id)
    stored_other, new_other = _other_part(ctx, first, operator.key_schema, operator.value_schema)
    return ctx.target.state_schema_incompatible(first.part, first.stored, first.new, stored_other, new_other)


def _other_part(
    ctx: Context, change: SchemaChange, new_key: str | None, new_value: str | None
) -> tuple[str | None, str | None]:
    for op in ctx.snapshot.state.operators:
        for store in op.stores:
            rec = store.schema
            if op.operator_id == change.operator_id and rec is not None and rec.record is not None:
                if change.part == "key":
                    return rec.record.value_schema, new_value
                return rec.record.key_schema, new_key
    return None, None


def conf_overrides(ctx: Context, job: JobFacts) -> tuple[tuple[str, str, str], ...]:
    """Return (key, the job's value, the pinned value) of each conf the checkpoint pins otherwise."""
    entry = ctx.offsets(ctx.latest)
    metadata = entry.record.metadata if entry is not None and entry.record is not None else None
    if metadata is None:
        return ()
    out = []
    for key, value in job.confs:
        pinned = metadata.conf_value(key)
        if pinned is not None and pinned != value:
            out.append((key, value, pinned))
    return tuple(out)


def check_job(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD312, CD313, CD015: what the job changes that the checkpoint holds."""
    job = ctx.options.job
    if job is None:
        return
    restart = ctx.latest is not None
    if restart and ctx.target.checks_operator_metadata:
        stored = operators_changed(ctx, job)
        if stored is not None:
            new = operators_in_job(job)
            yield Finding(
                Code.STATE_OPERATORS_CHANGED,
                f"The job's stateful operators {_ops(new)} are not the ones the checkpoint's operator "
                f"metadata records {_ops(stored)}: Spark {ctx.target.line} refuses the restart.",
                paths=tuple(f"state/{i}/_metadata/metadata" for i, _ in stored),
                # Findings are hashed (deduplicated): tuples, which JSON writes as lists.
                details=(("in_checkpoint", stored), ("in_job", new)),
            )
    if restart:
        added = operators_without_state(ctx, job)
        if added:
            yield Finding(
                Code.STATE_OPERATORS_CHANGED,
                f"The job's stateful operators {_ops(operators_in_job(job))} include {_ops(added)}, which "
                f"the checkpoint holds no state for (state/{added[0][0]} is missing): the operator ids "
                f"shifted, and Spark {ctx.target.line} fails loading its state in the tasks.",
                paths=tuple(f"state/{i}" for i, _ in added),
                details=(("in_checkpoint", operators_with_state(ctx)), ("in_job", operators_in_job(job))),
            )
        for change in schema_changes(ctx.snapshot, job, nullability=ctx.target.checks_state_nullability):
            yield Finding(
                Code.STATE_SCHEMA_INCOMPATIBLE,
                f"State {change.text}.",
                paths=(change.schema_file,),
                details=(
                    ("operator_id", change.operator_id),
                    ("part", change.part),
                    ("stored", change.stored),
                    ("in_job", change.new),
                ),
            )
    for key, value, pinned in conf_overrides(ctx, job):
        restored = ctx.target.pinned_session_key(key)
        where = (
            "" if restored == key else f" as {restored} (the state's partitions; other shuffles use {value})"
        )
        warn = ctx.target.conf_overridden(key, value, pinned)
        yield Finding(
            Code.PINNED_CONF_OVERRIDDEN,
            f"The job sets {key}={value}, but the checkpoint pins {pinned}: Spark {ctx.target.line} "
            f'restores {pinned}{where} and logs "{warn}"',
            details=(("conf", key), ("in_job", value), ("pinned", pinned), ("restored_as", restored)),
        )


def check_job_writer_and_sources(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD220, CD221, CD222, CD420, CD421, CD630: the job's sources, sink, output mode and trigger
    against the checkpoint (:mod:`.sources`, :mod:`.writer`)."""
    job = ctx.options.job
    if job is None:
        return
    if job.unsupported is not None:
        yield Finding(
            Code.OUTPUT_MODE_UNSUPPORTED,
            f"Spark {job.spark_version} refuses the job's query in output mode {job.output_mode} at start(), "
            f'before it reads the checkpoint: "{job.unsupported}"',
            details=(("output_mode", job.output_mode), ("spark", job.unsupported)),
        )
    changed = writer.mode_change(ctx, job)
    if changed is not None:
        detected, wanted = changed
        yield Finding(
            Code.JOB_MODE_CHANGED,
            f"The job runs in {wanted} mode (trigger {job.trigger or '?'}, async progress tracking "
            f"{'on' if job.async_tracking else 'off'}); the checkpoint's logs show {detected} "
            f"({ctx.detected.evidence}): the restart is predicted in {wanted} mode.",
            details=(("in_checkpoint", detected), ("in_job", wanted)),
        )
    for change in sources.kind_changes(ctx, job):
        yield Finding(
            Code.SOURCE_KIND_CHANGED,
            f"Source {change.index} of the job is a {change.job_source.text}, but the checkpoint's offsets "
            f"hold a {sources.KIND_NAMES.get(change.in_checkpoint, change.in_checkpoint)} offset at its place "
            f"({change.raw}): its reader cannot parse it.",
            paths=(f"offsets/{ctx.latest}",) if ctx.latest is not None else (),
            details=(
                ("source", change.index),
                ("in_checkpoint", change.in_checkpoint),
                ("in_job", change.in_job),
            ),
        )
    for move in sources.file_source_moves(ctx, job):
        where = ", ".join(move.logged_dirs)
        if move.glob:
            text = (
                f"Source {move.index} of the job reads the glob {move.job_path}, but the "
                f"files its log lists are under {where}: with a glob Spark sets no basePath, so the restart "
                "starts and takes every matched file the log does not list as new (a copy of a file already "
                "read is read again)."
            )
        else:
            text = (
                f"Source {move.index} of the job reads {move.job_path}, but the files its log lists are under "
                f"{where}: the restart re-reads the newest batch's logged files with "
                f"basePath {move.job_path}, and Spark refuses a file outside it (Wrong basePath)."
            )
        yield Finding(
            Code.FILE_SOURCE_MOVED,
            text,
            paths=(f"sources/{move.index}",),
            details=(("source", move.index), ("in_job", move.job_path), ("in_log", move.logged_dirs)),
        )
    rate = sources.rate_partitions_change(ctx, job)
    if rate is not None:
        wanted_text = (
            str(rate.in_job) if rate.in_job is not None else "not set (the cluster's default parallelism)"
        )
        yield Finding(
            Code.RATE_PARTITIONS_CHANGED,
            f"Source {rate.index} of the job is the continuous rate source with numPartitions {wanted_text}, "
            f"but the checkpoint's offsets hold {rate.in_checkpoint} partition(s).",
            paths=(f"offsets/{ctx.latest}",) if ctx.latest is not None else (),
            details=(
                ("source", rate.index),
                ("in_checkpoint", rate.in_checkpoint),
                ("in_job", rate.in_job),
            ),
        )
    for kafka in sources.kafka_topics_changes(ctx, job):
        if kafka.fail_on_data_loss:
            then = "failOnDataLoss is true: Spark refuses the next batch (the partitions are 'gone')"
        else:
            then = (
                "failOnDataLoss is false: Spark drops them with a warning and their unread records are never "
                "read; the new subscription's partitions are read from their earliest offsets"
            )
        yield Finding(
            Code.KAFKA_TOPICS_CHANGED,
            f"Source {kafka.index} of the job is a Kafka source with {kafka.subscription}, which leaves out "
            f"{kafka.names} of the checkpoint's offsets: {then}.",
            paths=(f"offsets/{ctx.latest}",) if ctx.latest is not None else (),
            details=(("source", kafka.index), ("left_out", kafka.names), ("in_job", kafka.subscription)),
        )
    move_sink = writer.sink_move(ctx, job, prediction.next_batch_id)
    if move_sink is not None:
        yield Finding(
            Code.FILE_SINK_MOVED,
            move_sink.text,
            details=(("sink", move_sink.sink), ("in_job", move_sink.job_path)),
        )


def _ops(ops: tuple[tuple[int, str], ...]) -> str:
    return "[" + ", ".join(f"{i}: {n}" for i, n in ops) + "]" if ops else "[none]"
