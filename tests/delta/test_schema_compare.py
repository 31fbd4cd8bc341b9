"""The schema comparison a Delta source's restart makes (``diagnosis.sources.delta_schema``), on
schemas shaped as Delta writes them (``metaData.schemaString`` with column mapping's physical names),
and the schema in force at a version as the table's log tells it (``DeltaTable.schema_at``)."""

from __future__ import annotations

import json

from checkpoint_doctor.diagnosis.sources.delta import (
    WIDENING_READ,
    WIDENING_SCHEMA_CHANGED,
    WIDENING_SCHEMA_LOG,
    widening,
)
from checkpoint_doctor.diagnosis.sources.delta_schema import compare
from checkpoint_doctor.model_delta import DeltaCommit, DeltaTable


def _field(name: str, kind: object, physical: str | None) -> dict:
    meta = {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": physical} if physical else {}
    return {"name": name, "type": kind, "nullable": True, "metadata": meta}


def _schema(*fields: dict) -> str:
    return json.dumps({"type": "struct", "fields": list(fields)})


BEFORE = _schema(
    _field("id", "long", "col-a"), _field("note", "string", "col-b"), _field("small", "short", "col-c")
)


def test_a_rename_is_the_same_physical_column_with_another_name() -> None:
    after = _schema(
        _field("id", "long", "col-a"), _field("remark", "string", "col-b"), _field("small", "short", "col-c")
    )
    got = compare(BEFORE, after)
    assert got.renamed == (("note", "remark"),) and not got.dropped and not got.widened
    assert got.kind == "RENAME COLUMN" and got.words() == "column note renamed to remark"


def test_a_drop_is_a_physical_column_gone_and_an_added_one_is_nothing() -> None:
    after = _schema(
        _field("id", "long", "col-a"), _field("small", "short", "col-c"), _field("x", "string", "col-d")
    )
    got = compare(BEFORE, after)
    assert got.dropped == ("note",) and not got.renamed and got.kind == "DROP COLUMN"
    assert not compare(BEFORE, _schema(*json.loads(BEFORE)["fields"], _field("x", "string", "col-d"))).any


def test_a_widened_type_is_named_with_both_types() -> None:
    after = _schema(
        _field("id", "long", "col-a"), _field("note", "string", "col-b"), _field("small", "integer", "col-c")
    )
    got = compare(BEFORE, after)
    assert got.widened == (("small", "short", "integer"),) and not got.rename_or_drop
    assert got.words() == "column small widened from short to integer"


def test_without_column_mapping_a_missing_name_is_no_rename_or_drop() -> None:
    """Delta's isRenameColumnOperation/isDropColumnOperation need physical names on both sides."""
    plain = _schema(_field("id", "long", None), _field("note", "string", None))
    assert not compare(plain, _schema(_field("id", "long", None))).any
    assert compare(plain, _schema(_field("id", "long", None), _field("note", "integer", None))).widened


def test_a_rename_after_column_mapping_was_enabled_is_one() -> None:
    """The upgrade names each physical column by its logical name (assignColumnIdAndPhysicalName)."""
    plain = _schema(_field("id", "long", None), _field("note", "string", None))
    upgraded = _schema(_field("id", "long", "id"), _field("remark", "string", "note"))
    assert compare(plain, upgraded).renamed == (("note", "remark"),)


def test_a_nested_field_is_followed_by_its_physical_path() -> None:
    inner_before = {"type": "struct", "fields": [_field("a", "string", "col-x")]}
    inner_after = {"type": "struct", "fields": [_field("b", "string", "col-x")]}
    got = compare(_schema(_field("s", inner_before, "col-s")), _schema(_field("s", inner_after, "col-s")))
    assert got.renamed == (("s.a", "s.b"),)


def test_each_delta_release_does_its_own_thing_with_a_widened_type() -> None:
    assert widening("3.3.3") == WIDENING_SCHEMA_CHANGED
    assert widening("4.0.1") == WIDENING_SCHEMA_LOG
    assert widening("4.4.0") == WIDENING_READ


def _commit(version: int, schema: str | None = None) -> DeltaCommit:
    return DeltaCommit(version, "WRITE", 1, 0, schema)


def test_the_schema_at_a_version_is_the_newest_metadata_at_or_below_it() -> None:
    after = _schema(_field("id", "long", "col-a"))
    table = DeltaTable(
        url="t",
        table_id="x",
        latest_version=6,
        earliest_version=0,
        checkpoint_version=None,
        schema=after,
        txns=(),
        commits=(_commit(3), _commit(4), _commit(5, after), _commit(6)),
        first_schema=(3, BEFORE),
    )
    assert table.schema_at(3) == BEFORE and table.schema_at(4) == BEFORE
    assert table.schema_at(5) == after and table.schema_at(6) == after
    # without the schema at the first version read, a version before the change is not told
    assert DeltaTable("t", "x", 6, 0, None, after, (), table.commits).schema_at(4) is None
