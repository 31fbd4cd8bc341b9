"""Point a moved transformWithState checkpoint's operator metadata at its own schema files.

The operator metadata v2 (``state/<op>/_metadata/v2/<batch>``, ``OperatorStateMetadataV2``) records
its state schema files by absolute path (``stateStoreInfo[].stateSchemaFilePaths``); a restart reads
those paths (``TransformWithStateExec``), so a moved or copied checkpoint reads, or fails to find, the
old location's files. When this checkpoint holds every one of them (same operator, store and
``<batch>_<uuid>`` name), the newest metadata v2 (the file the restart reads) is rewritten with the
same JSON and each path replaced by the file's path under this checkpoint, qualified as Spark
qualifies the root. The old file and its Hadoop checksum are quarantined (the undo puts them back);
the next batches write their metadata with the rewritten paths.
"""

from __future__ import annotations

import json

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.diagnosis.state.tws import schema_refs
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine, unavailable
from checkpoint_doctor.planning.steps import Step, WriteStep
from checkpoint_doctor.reading.schema_paths import spark_form
from checkpoint_doctor.reading.snapshot import whole_content

NAME = "relocate-schema-paths"
FAMILY = "rewrite"


def _rewritten(raw: bytes, mapping: dict[str, str]) -> bytes:
    """The metadata v2 with each recorded schema path replaced (``v2`` line, then one JSON line)."""
    head, _, body = raw.decode("utf-8").partition("\n")
    obj = json.loads(body.split("\n", 1)[0])
    for store in obj.get("stateStoreInfo") or []:
        if isinstance(store.get("stateSchemaFilePaths"), list):
            store["stateSchemaFilePaths"] = [mapping.get(p, p) for p in store["stateSchemaFilePaths"]]
        elif isinstance(store.get("stateSchemaFilePath"), str):
            store["stateSchemaFilePath"] = mapping.get(
                store["stateSchemaFilePath"], store["stateSchemaFilePath"]
            )
    # Spark writes it with json4s' compact rendering: no spaces, keys in the order read.
    return f"{head}\n{json.dumps(obj, separators=(',', ':'), ensure_ascii=False)}".encode()


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Rewrite each operator's newest metadata v2 to this checkpoint's schema files."""
    snapshot = ctx.snapshot
    root = spark_form(snapshot.root).rstrip("/")
    refs = [r for r in schema_refs(snapshot) if not r.inside]
    if not refs:
        return []
    absent = [r.recorded for r in refs if not r.here or r.rel is None]
    if absent:
        return [
            unavailable(
                FAMILY,
                finding.code,
                f"this checkpoint does not hold {len(absent)} of the schema files the metadata names "
                f"(first: {absent[0]}): restore them from the old location first",
            )
        ]
    steps: list[Step] = []
    notes = []
    for op_id in sorted({r.operator_id for r in refs}):
        op = next(o for o in snapshot.state.operators if o.operator_id == op_id)
        if op.metadata_v2 is None:
            continue
        path = op.metadata_v2.file.path
        raw = whole_content(snapshot.raw, path)
        if raw is None:
            return [unavailable(FAMILY, finding.code, f"{path} was not read")]
        mapping = {r.recorded: f"{root}/{r.rel}" for r in refs if r.operator_id == op_id}
        try:
            data = _rewritten(raw, mapping)
        except (ValueError, UnicodeDecodeError, AttributeError) as exc:
            return [unavailable(FAMILY, finding.code, f"{path} cannot be rewritten: {exc}")]
        old_root = next((r.old_root for r in refs if r.operator_id == op_id and r.old_root), "the old place")
        steps += quarantine(snapshot, path, "rewritten with this checkpoint's schema file paths")
        steps.append(
            WriteStep.of_bytes(
                path,
                data,
                f"{len(mapping)} schema file path(s) {old_root}/... -> {root}/... (same files, held here)",
            )
        )
        notes.append(f"{path}: {len(mapping)} schema path(s) to {root}")
    if not steps:
        return []
    return [Option(FAMILY, tuple(steps), (finding.code,), note="; ".join(notes))]


STRATEGY = Strategy(NAME, FAMILY, (Code.TWS_SCHEMA_FILES_ELSEWHERE,), propose)
