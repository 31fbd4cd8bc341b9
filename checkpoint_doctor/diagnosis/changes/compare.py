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

from checkpoint_doctor.diagnosis.changes.facts import JobFacts
from checkpoint_doctor.diagnosis.changes.schemas import SchemaChange, schema_changes
from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.model import Finding, RestartPrediction
from checkpoint_doctor.diagnosis.versions import SparkError


def operators_in_metadata(ctx: Context) -> tuple[tuple[int, str], ...]:
    """Return (operator id, name) of every operator whose metadata file the checkpoint holds."""
    out = []
    for op in ctx.snapshot.state.operators:
        rec = op.metadata
        if rec is not None and rec.record is not None:
            out.append((op.operator_id, rec.record.operator_name))
    return tuple(sorted(out))


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
    changes = schema_changes(ctx.snapshot, job)
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
        for change in schema_changes(ctx.snapshot, job):
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


def _ops(ops: tuple[tuple[int, str], ...]) -> str:
    return "[" + ", ".join(f"{i}: {n}" for i, n in ops) + "]" if ops else "[none]"
