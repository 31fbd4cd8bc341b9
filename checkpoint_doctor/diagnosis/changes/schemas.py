"""State schemas: the key and value StructType a job's stateful operator keeps, against the schema
file its operator wrote (``state/<op>/0/_metadata/schema``). Pure.

Spark's check (``StateSchemaCompatibilityChecker``: ``DataType.equalsIgnoreNameAndCompatibleNullability``)
ignores field names and metadata; what must match is the number, order and type of the fields,
nested ones included. Nullability: 3.5-4.2 refuse a nullable new field where the stored one is not
nullable (``equalsIgnoreNameAndCompatibleNullability(new, stored)``: a non-nullable new field over a
nullable stored one passes), 4.3 does not [exp: job-aggregate-renamed: count() -> sum(value)].
"""

from __future__ import annotations

import json
import re
from typing import Any

from checkpoint_doctor.diagnosis.changes.facts import JobFacts
from checkpoint_doctor.model import StateSchemaHeader
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.valueclasses import frozen


def _shape(data_type: Any) -> Any:
    """A data type without names, nullability or metadata (what the check compares)."""
    if isinstance(data_type, dict):
        kind = data_type.get("type")
        if kind == "struct":
            return ("struct", tuple(_shape(f.get("type")) for f in data_type.get("fields") or []))
        if kind == "array":
            return ("array", _shape(data_type.get("elementType")))
        if kind == "map":
            return ("map", _shape(data_type.get("keyType")), _shape(data_type.get("valueType")))
        if kind == "udt":
            return ("udt", data_type.get("class"))
        return (str(kind),)
    return data_type


def _parse(schema: str) -> Any:
    try:
        return json.loads(schema)
    except ValueError:
        return None


def _nullable_over_not_null(stored: Any, new: Any) -> bool:
    """Whether some field (nested ones included) is nullable in ``new`` where ``stored`` is not."""
    if not (isinstance(stored, dict) and isinstance(new, dict)):
        return False
    kind = stored.get("type")
    if kind == "struct":
        # Called once the shapes are equal: as many fields on both sides.
        pairs = zip(stored.get("fields") or [], new.get("fields") or [], strict=True)
        return any(
            (bool(n.get("nullable")) and not bool(o.get("nullable")))
            or _nullable_over_not_null(o.get("type"), n.get("type"))
            for o, n in pairs
        )
    if kind == "array":
        return (
            bool(new.get("containsNull")) and not bool(stored.get("containsNull"))
        ) or _nullable_over_not_null(stored.get("elementType"), new.get("elementType"))
    if kind == "map":
        return (
            (bool(new.get("valueContainsNull")) and not bool(stored.get("valueContainsNull")))
            or _nullable_over_not_null(stored.get("keyType"), new.get("keyType"))
            or _nullable_over_not_null(stored.get("valueType"), new.get("valueType"))
        )
    return False


def compatible(stored: str, new: str, *, nullability: bool = False) -> bool:
    """Return whether a new schema passes Spark's check against the stored one (``nullability``:
    the line refuses a nullable new field over a non-nullable stored one, 3.5-4.2)."""
    a, b = _parse(stored), _parse(new)
    if a is None or b is None:
        return True  # not judged: an unreadable schema is reported by the state checks
    if _shape(a) != _shape(b):
        return False
    return not (nullability and _nullable_over_not_null(a, b))


def ddl(schema: str) -> str:
    """Return a StructType JSON as Spark's short form: ``struct<window:struct<start:timestamp,...>>``."""
    parsed = _parse(schema)
    return _ddl(parsed) if parsed is not None else schema


#: An expression id Spark prints after an attribute (``value#439L``): a number per analysis, no word
#: of the operator's.
_EXPR_ID = re.compile(r"#\d+L?\b")
#: The cast the analyzer puts around a literal to widen it (``cast(3 as bigint)``): the job wrote ``3``.
_LITERAL_CAST = re.compile(r"cast\((-?\d+(?:\.\d+)?) as (?:bigint|int|smallint|tinyint|double|float)\)")


def field_text(name: str) -> str:
    """A state field's name as the job's author wrote it: a grouping key that is an expression is
    named by Spark with its analyzed text (``(value#1L % cast(4 as bigint))``, issue 34), shown as
    ``(value % 4)``; a plain name is left as it is."""
    return _LITERAL_CAST.sub(r"\1", _EXPR_ID.sub("", name))


def _ddl(data_type: Any) -> str:
    if isinstance(data_type, str):
        return data_type
    if not isinstance(data_type, dict):
        return str(data_type)
    kind = data_type.get("type")
    if kind == "struct":
        inner = ",".join(
            f"{field_text(str(f.get('name')))}:{_ddl(f.get('type'))}" for f in data_type.get("fields") or []
        )
        return f"struct<{inner}>"
    if kind == "array":
        return f"array<{_ddl(data_type.get('elementType'))}>"
    if kind == "map":
        return f"map<{_ddl(data_type.get('keyType'))},{_ddl(data_type.get('valueType'))}>"
    return str(kind)


@frozen
class SchemaChange:
    """A stateful operator whose key (``part`` "key") or value schema is not the stored one."""

    operator_id: int
    part: str
    stored: str
    new: str
    schema_file: str

    @property
    def text(self) -> str:
        """Return the change in an operator's words."""
        return (
            f"operator {self.operator_id}: the job's state {self.part} schema {ddl(self.new)} is not "
            f"the stored {ddl(self.stored)} ({self.schema_file})"
        )


def schema_changes(
    snapshot: CheckpointSnapshot, job: JobFacts, *, nullability: bool = False
) -> tuple[SchemaChange, ...]:
    """Return the job's operators whose key or value schema fails the check, key first per operator
    (Spark checks the key schema first); ``nullability`` as :func:`compatible`."""
    stored: dict[int, tuple[str, StateSchemaHeader]] = {}
    for op in snapshot.state.operators:
        for store in op.stores:
            rec = store.schema
            if rec is not None and rec.record is not None and rec.record.key_schema is not None:
                stored.setdefault(op.operator_id, (rec.file.path, rec.record))
    out = []
    for operator in job.operators:
        found = stored.get(operator.operator_id)
        if found is None:
            continue
        path, header = found
        for part, new, old in (
            ("key", operator.key_schema, header.key_schema),
            ("value", operator.value_schema, header.value_schema),
        ):
            if new is not None and old is not None and not compatible(old, new, nullability=nullability):
                out.append(SchemaChange(operator.operator_id, part, old, new, path))
    return tuple(out)
