"""A changed transformWithState processor (``--job``) against the checkpoint's schema files and
operator metadata v2, in Spark's order and words. Pure.

While planning the first batch of a restart, ``IncrementalExecution`` (4.0+) first compares the
query's stateful operators with the operator metadata (CD313: the pandas processor swapped for the
Row one, or for an aggregation, is another operator name). Then ``TransformWithStateExec.
validateAndMaybeEvolveStateSchema`` (``StateSchemaCompatibilityChecker``) compares each column
family the processor declares with the newest schema file: a family of the same name must keep its
key schema (``STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE``: the grouping key, a MapState's user key) and its
value schema (``STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE``: a field added or retyped, a TTL added or
removed, which wraps the value in ``struct<value, ttlExpirationMs>``); families added or no longer
declared pass. Then ``validateNewMetadata`` compares the new operator properties with the old ones:
``timeMode`` and output mode (``STATE_STORE_INVALID_CONFIG_AFTER_RESTART``) and each variable's kind
(``STATE_STORE_INVALID_VARIABLE_TYPE_CHANGE``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from checkpoint_doctor.diagnosis.changes.facts import JobFacts, JobOperator, TwsVariable
from checkpoint_doctor.diagnosis.changes.schemas import compatible, ddl
from checkpoint_doctor.diagnosis.code_info import Code
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.model import Finding, RestartPrediction
from checkpoint_doctor.diagnosis.spark_line import SparkError
from checkpoint_doctor.model import ColumnFamilySchema, TransformWithStateProperties
from checkpoint_doctor.reading.snapshot import StateOperator
from checkpoint_doctor.valueclasses import frozen


@frozen
class TwsChange:
    """One thing the job's processor changes that the checkpoint holds, as Spark meets it."""

    operator_id: int
    #: ``key``, ``value`` (a column family's schema), ``config`` (time or output mode),
    #: ``kind`` (a variable's kind), ``dropped`` (a stored variable the processor no longer declares),
    #: with the Avro encoding ``evolves`` (a value schema Spark evolves) or ``evolution`` (one it refuses).
    part: str
    name: str
    stored: str
    new: str
    path: str


def _struct(fields: list[tuple[str, Any]]) -> dict[str, Any]:
    return {
        "type": "struct",
        "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields],
    }


def _load(schema: str) -> Any:
    try:
        return json.loads(schema)
    except ValueError:
        return None


def column_family(key_schema: str, variable: TwsVariable) -> tuple[str, str]:
    """The key and value schemas Spark keeps for a state variable (``StateStoreColumnFamilySchemaUtils``):
    the grouping key (a MapState's: ``struct<key: <grouping key>, userKey: <user key>>``), and the value
    (with a TTL: ``struct<value: <value>, ttlExpirationMs: long>``) [exp: fixtures/tws/spark-*/tws_*-healthy]."""
    key = _load(key_schema)
    value = _load(variable.value_schema)
    if variable.kind == "MapState" and variable.user_key_schema is not None:
        key = _struct([("key", key), ("userKey", _load(variable.user_key_schema))])
    if variable.ttl:
        value = _struct([("value", value), ("ttlExpirationMs", "long")])
    return json.dumps(key), json.dumps(value)


ENCODING_CONF = "spark.sql.streaming.stateStore.encodingFormat"
#: Avro's type promotions (``SchemaCompatibility``: a reader of the new type reads the old one).
_PROMOTIONS = {
    ("integer", "long"),
    ("integer", "float"),
    ("integer", "double"),
    ("long", "float"),
    ("long", "double"),
    ("float", "double"),
    ("string", "binary"),
    ("binary", "string"),
}


def encoding(ctx: Context) -> str:
    """The state encoding the newest offsets pin (``unsaferow`` when none is pinned)."""
    for e in reversed(ctx.snapshot.offsets.entries):
        if e.record is not None and e.record.metadata is not None:
            return (e.record.metadata.conf_value(ENCODING_CONF) or "unsaferow").lower()
    return "unsaferow"


def avro_evolves(stored: Any, new: Any) -> bool:
    """Whether Avro reads data written with ``stored`` through ``new`` (the reader), as Spark's
    ``StateSchemaCompatibilityChecker`` asks Avro's ``SchemaCompatibility`` with the Avro encoding:
    fields matched by name; a new field needs a default (Spark's nullable fields default to null); a
    field dropped passes; a type must stay or be promoted (int -> long ...)."""
    if (
        isinstance(stored, dict)
        and isinstance(new, dict)
        and stored.get("type") == new.get("type") == "struct"
    ):
        old_fields = {f.get("name"): f for f in stored.get("fields") or []}
        for field in new.get("fields") or []:
            old = old_fields.get(field.get("name"))
            if old is None:
                if not field.get("nullable"):
                    return False
            elif not avro_evolves(old.get("type"), field.get("type")):
                return False
        return True
    if isinstance(stored, dict) or isinstance(new, dict):
        return stored == new
    return stored == new or (stored, new) in _PROMOTIONS


def _stored_families(op: StateOperator) -> tuple[str, dict[str, ColumnFamilySchema]]:
    """Each column family's newest schema (a later schema file, written by an Avro evolution, holds
    the evolved ones), and the newest file's path."""
    parsed = sorted(
        (r for r in op.schema_files if r.record is not None), key=lambda r: _batch_of(r.file.path)
    )
    families: dict[str, ColumnFamilySchema] = {}
    for rec in parsed:
        assert rec.record is not None
        families.update({c.name: c for c in rec.record.column_families})
    return (parsed[-1].file.path if parsed else ""), families


def _batch_of(path: str) -> int:
    head = path.rpartition("/")[2].split("_", 1)[0]
    return int(head) if head.isdigit() else -1


def _properties(op: StateOperator) -> TransformWithStateProperties | None:
    rec = op.metadata_v2.record if op.metadata_v2 is not None else None
    return rec.properties if rec is not None else None


def tws_changes(ctx: Context, job: JobFacts) -> list[TwsChange]:
    """Every change of the job's transformWithState operators, in the order Spark checks them."""
    out: list[TwsChange] = []
    ops = {op.operator_id: op for op in ctx.snapshot.state.operators}
    for operator in job.operators:
        op = ops.get(operator.operator_id)
        if operator.tws is None or op is None or operator.key_schema is None:
            continue
        props = _properties(op)
        stored_name = (
            op.metadata_v2.record.operator_name if op.metadata_v2 and op.metadata_v2.record else None
        )
        if stored_name is not None and stored_name != operator.name:
            continue  # another operator: the metadata check refuses it first (CD313)
        out.extend(_schema_changes(op, operator, avro=encoding(ctx) == "avro"))
        if props is not None:
            out.extend(_property_changes(op, operator, props))
    return out


def _schema_changes(op: StateOperator, operator: JobOperator, *, avro: bool) -> Iterator[TwsChange]:
    assert operator.tws is not None
    assert operator.key_schema is not None
    path, stored = _stored_families(op)
    for variable in operator.tws.variables:
        family = stored.get(variable.name)
        if family is None:
            continue  # a new variable: a new column family
        key, value = column_family(operator.key_schema, variable)
        if not compatible(family.key_schema, key):
            yield TwsChange(op.operator_id, "key", variable.name, family.key_schema, key, path)
        elif avro and _load(family.value_schema) != _load(value):
            # The Avro encoding evolves a value schema Avro can read the old data with (a new schema
            # file, the family's value schema id + 1), and refuses any other change.
            evolves = avro_evolves(_load(family.value_schema), _load(value))
            part = "evolves" if evolves else "evolution"
            yield TwsChange(op.operator_id, part, variable.name, family.value_schema, value, path)
        elif not avro and not compatible(family.value_schema, value):
            yield TwsChange(op.operator_id, "value", variable.name, family.value_schema, value, path)


def _property_changes(
    op: StateOperator, operator: JobOperator, props: TransformWithStateProperties
) -> Iterator[TwsChange]:
    assert operator.tws is not None
    path = (
        f"state/{op.operator_id}/_metadata/v2/{op.metadata_v2_batches[-1] if op.metadata_v2_batches else ''}"
    )
    tws = operator.tws
    if props.time_mode != tws.time_mode:
        yield TwsChange(op.operator_id, "config", "timeMode", props.time_mode, tws.time_mode, path)
    if props.output_mode.lower() != tws.output_mode.lower():
        yield TwsChange(op.operator_id, "config", "outputMode", props.output_mode, tws.output_mode, path)
    declared = {v.name: v for v in tws.variables}
    for stored in props.variables:
        if stored.kind == "TimerState":
            continue
        new = declared.get(stored.name)
        if new is None:
            yield TwsChange(op.operator_id, "dropped", stored.name, stored.kind, "", path)
        elif new.kind != stored.kind:
            yield TwsChange(op.operator_id, "kind", stored.name, stored.kind, new.kind, path)


def restart_error(ctx: Context, job: JobFacts) -> tuple[SparkError, Code] | None:
    """What planning the first batch meets first in the job's transformWithState operators (None: nothing)."""
    for change in tws_changes(ctx, job):
        if change.part in ("key", "value"):
            return (
                ctx.target.state_schema_incompatible(change.part, change.stored, change.new, None, None),
                Code.TWS_STATE_SCHEMA_INCOMPATIBLE,
            )
        if change.part == "evolution":
            return (
                ctx.target.tws_invalid_value_evolution(change.stored, change.new),
                Code.TWS_VALUE_SCHEMA_EVOLUTION_INVALID,
            )
        if change.part == "config":
            return ctx.target.tws_config_changed(
                change.name, change.stored, change.new
            ), Code.TWS_CONFIG_CHANGED
        if change.part == "kind":
            return (
                ctx.target.tws_variable_type_changed(change.name, change.stored, change.new),
                Code.TWS_VARIABLE_KIND_CHANGED,
            )
    return None


def check_tws_job(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD323 time or output mode changed; CD324 a state variable's key or value schema changed; CD325 a
    variable's kind changed; CD326 a stored variable the processor no longer declares."""
    job = ctx.options.job
    if job is None or ctx.latest is None:
        return
    line = ctx.target.line
    for change in tws_changes(ctx, job):
        where = f"state/{change.operator_id}"
        if change.part in ("key", "value"):
            yield Finding(
                Code.TWS_STATE_SCHEMA_INCOMPATIBLE,
                f"{where}: the job's state variable {change.name!r} has the {change.part} schema "
                f"{ddl(change.new)}, not the stored {ddl(change.stored)} ({change.path}): Spark {line} refuses "
                f"the restart (STATE_STORE_{change.part.upper()}_SCHEMA_NOT_COMPATIBLE).",
                paths=(change.path,),
                details=(
                    ("operator_id", change.operator_id),
                    ("variable", change.name),
                    ("part", change.part),
                ),
            )
        elif change.part in ("evolution", "evolves"):
            refused = change.part == "evolution"
            yield Finding(
                Code.TWS_VALUE_SCHEMA_EVOLUTION_INVALID if refused else Code.TWS_VALUE_SCHEMA_EVOLVES,
                f"{where}: the job's state variable {change.name!r} has the value schema {ddl(change.new)}, "
                f"not the stored {ddl(change.stored)} ({change.path}), with the Avro state encoding: "
                + (
                    f"Avro cannot read the old values with it, and Spark {line} refuses the restart "
                    "(STATE_STORE_INVALID_VALUE_SCHEMA_EVOLUTION)."
                    if refused
                    else f"Spark {line} evolves it (a new schema file; the old values are read with the new "
                    "schema) and starts."
                ),
                paths=(change.path,),
                details=(("operator_id", change.operator_id), ("variable", change.name)),
            )
        elif change.part == "config":
            yield Finding(
                Code.TWS_CONFIG_CHANGED,
                f"{where}: the job's {change.name} is {change.new}, the checkpoint's operator metadata records "
                f"{change.stored} ({change.path}): Spark {line} refuses the restart "
                "(STATE_STORE_INVALID_CONFIG_AFTER_RESTART).",
                paths=(change.path,),
                details=(("operator_id", change.operator_id), ("config", change.name)),
            )
        elif change.part == "kind":
            yield Finding(
                Code.TWS_VARIABLE_KIND_CHANGED,
                f"{where}: the job declares state variable {change.name!r} as a {change.new}, the checkpoint "
                f"holds it as a {change.stored} ({change.path}): Spark {line} refuses the restart "
                "(STATE_STORE_INVALID_VARIABLE_TYPE_CHANGE).",
                paths=(change.path,),
                details=(("operator_id", change.operator_id), ("variable", change.name)),
            )
        else:
            yield Finding(
                Code.TWS_VARIABLE_DROPPED,
                f"{where}: the checkpoint holds state variable {change.name!r} ({change.stored}), which the "
                f"job's processor no longer declares (removed or renamed): Spark {line} starts, and that "
                "state is no longer read (a renamed variable starts empty).",
                paths=(change.path,),
                details=(("operator_id", change.operator_id), ("variable", change.name)),
            )
