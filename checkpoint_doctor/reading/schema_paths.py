"""Files a restart reads by absolute path: a transformWithState operator's state schema files.

The operator metadata v2 (``OperatorStateMetadataV2``, ``state/<op>/_metadata/v2/<batch>``) records
its schema files in ``stateSchemaFilePaths`` as the writer qualified them (``file:/old/place/...``,
``s3a://bucket/...``). Spark reads those paths, not the checkpoint's own copies: a moved checkpoint
fails when the old place is gone, a copied one keeps reading the old place while it exists.
"""

from __future__ import annotations

import os

from checkpoint_doctor.reading.snapshot import CheckpointSnapshot

#: The directory of the schema files inside an operator's directory.
SCHEMA_DIR = "_stateSchema"


def spark_form(root: str) -> str:
    """Return a checkpoint root as Spark qualifies it (``file:/abs``, ``s3a://bucket/prefix``)."""
    if root.startswith("file://"):
        return "file:" + root[len("file://") :]
    if root.startswith("/"):
        return "file:" + root
    if root.startswith("s3://"):
        return "s3a://" + root[len("s3://") :]
    return root


def rel_of(recorded: str, operator_id: int) -> str | None:
    """The file a recorded schema path names, relative to its checkpoint (``state/<op>/_stateSchema/...``)."""
    _, sep, tail = recorded.partition(f"/state/{operator_id}/{SCHEMA_DIR}/")
    return f"state/{operator_id}/{SCHEMA_DIR}/{tail}" if sep and tail else None


def recorded_root(recorded: str, operator_id: int) -> str | None:
    """The checkpoint root a recorded schema path was written under (``file:/old/place``)."""
    head, sep, _ = recorded.partition(f"/state/{operator_id}/{SCHEMA_DIR}/")
    return head if sep else None


def recorded_schema_paths(snapshot: CheckpointSnapshot) -> list[tuple[int, str]]:
    """(operator id, recorded path) of every schema file the newest metadata v2 names."""
    out: list[tuple[int, str]] = []
    for op in snapshot.state.operators:
        rec = op.metadata_v2.record if op.metadata_v2 is not None else None
        if rec is not None:
            out.extend((op.operator_id, p) for p in rec.schema_file_paths)
    return out


def is_inside(recorded: str, root: str) -> bool:
    """Whether a recorded path lies under the checkpoint root (both as Spark qualifies them)."""
    return recorded.startswith(spark_form(root).rstrip("/") + "/")


def look_up_outside(snapshot: CheckpointSnapshot) -> tuple[tuple[str, bool | None], ...]:
    """Whether each recorded schema path outside the checkpoint exists (I/O: a local stat).

    Only ``file:`` paths are looked up (a local checkpoint moved on its disk); a remote one is left
    unknown (None) rather than opening another store's credentials from a recorded path.
    """
    out: list[tuple[str, bool | None]] = []
    for _, recorded in recorded_schema_paths(snapshot):
        if is_inside(recorded, snapshot.root):
            continue
        found: bool | None = None
        if recorded.startswith("file:"):
            found = os.path.isfile(recorded[len("file:") :])
        out.append((recorded, found))
    return tuple(sorted(set(out)))
