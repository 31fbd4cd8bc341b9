"""What a Delta source makes of its table's schema changing under it: column mapping renames and
drops, and type widening (issue 33 items 1 and 2). Pure: takes ``metaData.schemaString`` values.

On restart delta-spark compares the table's schema at the version the restart lists changes from
(the batch before the newest offsets', ``DeltaSource.checkReadIncompatibleSchemaChangeOnStreamStartOnce``)
with the schema of the snapshot the source is built on (the table's latest), in
``DeltaSource.checkReadIncompatibleSchemaChanges``:

* with column mapping, a column whose physical name has another logical name (renamed) or is gone
  (dropped) is ``DeltaColumnMapping.hasNoColumnMappingSchemaChanges`` false: every release refuses
  with ``DeltaErrors.blockStreamingReadsWithIncompatible{ColumnMapping,NonAdditive}SchemaChanges``,
  ``DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG`` (``streaming.schemaTracking.enabled``
  is true by default in 3.3.3, 4.0.1 and 4.4.0);
* a type widened (``TypeWidening.containsWideningTypeChanges``): Delta 3.3 checks the older data
  against the new read schema without type widening (``SchemaUtils.isReadCompatible``) and refuses
  with ``DELTA_SCHEMA_CHANGED_WITH_VERSION``; Delta 4.0 tracks it as a non-additive change
  (``typeWidening.enableStreamingSchemaTracking`` true) and refuses with ``..._USE_SCHEMA_LOG``; Delta
  4.4 reads it (that conf false, ``TypeWideningMode.AllTypeWidening``).

A column is followed by its physical name (``delta.columnMapping.physicalName``, nested names joined)
as ``DeltaColumnMapping.getPhysicalNameFieldMap`` does; without column mapping by its name.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from checkpoint_doctor.valueclasses import frozen

PHYSICAL = "delta.columnMapping.physicalName"


@frozen
class SchemaChange:
    """The non-additive changes between two schemas: ``renamed`` (old name, new name), ``dropped``
    (names), ``widened`` (name, old type, new type)."""

    renamed: tuple[tuple[str, str], ...] = ()
    dropped: tuple[str, ...] = ()
    widened: tuple[tuple[str, str, str], ...] = ()

    @property
    def rename_or_drop(self) -> bool:
        """Whether a column was renamed or dropped (column mapping's non-additive changes)."""
        return bool(self.renamed or self.dropped)

    @property
    def any(self) -> bool:
        """Whether anything non-additive changed."""
        return bool(self.renamed or self.dropped or self.widened)

    def words(self) -> str:
        """The changes in words: ``column note renamed to remark; column small widened from short to integer``."""
        parts = [f"column {a} renamed to {b}" for a, b in self.renamed]
        parts += [f"column {a} dropped" for a in self.dropped]
        parts += [f"column {a} widened from {t0} to {t1}" for a, t0, t1 in self.widened]
        return "; ".join(parts)

    @property
    def kind(self) -> str:
        """Delta's name for the change (``NonAdditiveSchemaChangeTypes``), type widening apart."""
        if self.renamed and self.dropped:
            return "RENAME AND DROP COLUMN"
        if self.renamed:
            return "RENAME COLUMN"
        if self.dropped:
            return "DROP COLUMN"
        return "TYPE WIDENING"


def _parse(schema: str | None) -> dict[str, Any] | None:
    if schema is None:
        return None
    try:
        doc = json.loads(schema)
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("fields"), list) else None


def _type_name(t: Any) -> str:
    if isinstance(t, str):
        return t
    if isinstance(t, dict):
        return str(t.get("type"))
    return repr(t)


def _walk(
    fields: list[Any], physical: tuple[str, ...], logical: tuple[str, ...], out: dict[tuple[str, ...], Any]
) -> None:
    for f in fields:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            continue
        meta = f.get("metadata")
        mapped = meta.get(PHYSICAL) if isinstance(meta, dict) else None
        phys: str = mapped if isinstance(mapped, str) else f["name"]
        p, n = (*physical, phys), (*logical, str(f["name"]))
        t = f.get("type")
        out[p] = (".".join(n), t)
        nested = t
        # A struct inside an array or a map is walked too (SchemaMergingUtils.explode).
        while isinstance(nested, dict) and nested.get("type") in ("array", "map"):
            nested = nested.get("elementType") if nested.get("type") == "array" else nested.get("valueType")
        if (
            isinstance(nested, dict)
            and nested.get("type") == "struct"
            and isinstance(nested.get("fields"), list)
        ):
            _walk(nested["fields"], p, n, out)


def _columns(doc: dict[str, Any]) -> dict[tuple[str, ...], Any]:
    out: dict[tuple[str, ...], Any] = {}
    _walk(doc["fields"], (), (), out)
    return out


def column_mapping(schema: str | None) -> bool:
    """Whether a schema's columns carry physical names (column mapping ``name`` or ``id``)."""
    doc = _parse(schema)
    return doc is not None and any(
        isinstance(f, dict) and isinstance(f.get("metadata"), dict) and PHYSICAL in f["metadata"]
        for f in doc["fields"]
    )


#: Schema pairs compared and kept: the cells of a restart matrix, and the checkpoints of a fleet
#: reading one table or copies of one job, compare the same two schemas again and again (each
#: comparison parses both; bench: delta). A few, since a schema may be large.
_COMPARED = 16


@lru_cache(maxsize=_COMPARED)
def compare(old: str | None, new: str | None) -> SchemaChange:
    """Return the non-additive changes from schema ``old`` to schema ``new`` (empty when either is
    unknown or unreadable). Renames and drops count only when ``new`` has column mapping (Delta's
    ``isRenameColumnOperation``/``isDropColumnOperation`` need physical names; an older schema without
    them is compared by its names, as the upgrade assigns them); a type change of a
    column that is in both counts as widened (Delta changes a type only by widening it)."""
    a, b = _parse(old), _parse(new)
    if a is None or b is None:
        return SchemaChange()
    before, after = _columns(a), _columns(b)
    # Column mapping enabled since (DeltaColumnMapping.hasNoColumnMappingSchemaChanges's upgrade case)
    # is compared with the old names as physical names, as the upgrade assigns them: what _walk does.
    mapped = column_mapping(new)
    renamed: list[tuple[str, str]] = []
    dropped: list[str] = []
    widened: list[tuple[str, str, str]] = []
    for path, (name, t) in before.items():
        now = after.get(path)
        if now is None:
            if mapped:
                dropped.append(name)
            continue
        if mapped and now[0].rsplit(".", 1)[-1] != name.rsplit(".", 1)[-1]:
            renamed.append((name, now[0]))
        complex_type = isinstance(t, dict) and t.get("type") in ("struct", "array", "map")
        if not complex_type and _type_name(t) != _type_name(now[1]):
            widened.append((now[0], _type_name(t), _type_name(now[1])))
    return SchemaChange(tuple(renamed), tuple(dropped), tuple(widened))


def describe(schema: str | None) -> str:
    """A schema's top-level columns and types in a few words (``id long, note string``)."""
    doc = _parse(schema)
    if doc is None:
        return "unknown"
    return ", ".join(
        f"{f.get('name')} {_type_name(f.get('type'))}" for f in doc["fields"] if isinstance(f, dict)
    )
