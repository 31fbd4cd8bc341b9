"""transformWithState operators: what a restart reads before any state version is loaded. Pure.

A transformWithState operator (``TransformWithStateExec``, ``TransformWithStateInPandasExec``,
``TransformWithStateInPySparkExec``) keeps its operator metadata v2 in ``state/<op>/_metadata/v2/<batch>``
and its state schema files v3 in ``state/<op>/_stateSchema/<store>/<batch>_<uuid>``. While planning the
first batch of a restart, ``IncrementalExecution`` reads the newest metadata v2
(``OperatorStateMetadataV2Reader``; an older file is found when only the newest is gone) and, through
its ``stateSchemaFilePaths``, the schema files, to compare them with the new plan
(``TransformWithStateExec.validateAndMaybeEvolveStateSchema``). Those paths are absolute, written where
the checkpoint was when the file was written (``reading.schema_paths``).
"""

from __future__ import annotations

from collections.abc import Iterator

from checkpoint_doctor.diagnosis.code_info import Code
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.model import Finding, RestartPrediction
from checkpoint_doctor.diagnosis.spark_line import SparkError
from checkpoint_doctor.reading.schema_paths import is_inside, recorded_root, rel_of
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot, StateOperator
from checkpoint_doctor.valueclasses import frozen


@frozen
class SchemaRef:
    """One schema file a transformWithState operator's newest metadata v2 names."""

    operator_id: int
    #: The path as recorded (``file:/...``, ``s3a://...``): the one Spark reads.
    recorded: str
    #: The same file inside this checkpoint (``state/<op>/_stateSchema/...``), relative.
    rel: str | None
    #: Whether the recorded path lies under this checkpoint's root.
    inside: bool
    #: Whether the file Spark reads exists: inside, from the listing; outside, what the reader
    #: found there (None: not looked up).
    exists: bool | None
    #: Whether this checkpoint holds the file (at ``rel``).
    here: bool

    @property
    def old_root(self) -> str | None:
        return recorded_root(self.recorded, self.operator_id)


def tws_operators(snapshot: CheckpointSnapshot) -> list[StateOperator]:
    """The operators that are transformWithState's: a metadata v2 or a ``_stateSchema`` file."""
    return [op for op in snapshot.state.operators if op.metadata_v2_batches or op.schema_files]


def schema_refs(snapshot: CheckpointSnapshot) -> list[SchemaRef]:
    """Every schema file the newest metadata v2 of each operator names, and where it is."""
    outside = dict(snapshot.outside_files)
    out = []
    for op in snapshot.state.operators:
        rec = op.metadata_v2.record if op.metadata_v2 is not None else None
        if rec is None:
            continue
        for recorded in rec.schema_file_paths:
            rel = rel_of(recorded, op.operator_id)
            here = rel is not None and snapshot.file(rel) is not None
            inside = is_inside(recorded, snapshot.root)
            exists = here if inside else outside.get(recorded)
            out.append(SchemaRef(op.operator_id, recorded, rel, inside, exists, here))
    return out


def missing_metadata(snapshot: CheckpointSnapshot) -> list[StateOperator]:
    """transformWithState operators whose ``_metadata/v2/`` holds no file (their schema files
    remain): the restart cannot read the operator's metadata."""
    # The newest file unreadable too: Spark's reader says the same ("Either the file does not exist,
    # or the file is corrupted", OperatorStateMetadataV2Reader).
    return [
        op
        for op in tws_operators(snapshot)
        if not op.metadata_v2_batches or (op.metadata_v2 is not None and op.metadata_v2.failure is not None)
    ]


def check_transform_with_state(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD320 a schema file missing; CD321 schema files recorded at another checkpoint's path;
    CD322 no operator metadata v2."""
    snapshot = ctx.snapshot
    for op in missing_metadata(snapshot):
        yield Finding(
            Code.TWS_OPERATOR_METADATA_MISSING,
            f"state/{op.operator_id} is a transformWithState operator's (its schema files are in "
            f"state/{op.operator_id}/_stateSchema) but state/{op.operator_id}/_metadata/v2/ holds no readable file"
            + (f" ({op.metadata_v2.failure.reason})" if op.metadata_v2 and op.metadata_v2.failure else "")
            + ".",
            paths=(f"state/{op.operator_id}/_metadata/v2",),
            details=(("operator", op.operator_id),),
        )
    refs = schema_refs(snapshot)
    for ref in refs:
        if ref.inside and not ref.here:
            yield Finding(
                Code.TWS_SCHEMA_FILE_MISSING,
                f"state/{ref.operator_id}/_metadata/v2/{_newest(snapshot, ref.operator_id)} names the schema "
                f"file {ref.rel or ref.recorded}, which is missing.",
                paths=(ref.rel,) if ref.rel else (),
                details=(("operator", ref.operator_id), ("recorded", ref.recorded)),
            )
    elsewhere = [r for r in refs if not r.inside]
    if elsewhere:
        first = elsewhere[0]
        gone = [r for r in elsewhere if r.exists is not True]
        if gone:
            state = (
                f"{len(gone)} of them {'is' if len(gone) == 1 else 'are'} not there"
                if any(r.exists is False for r in gone)
                else "they were not looked up (another store)"
            )
        else:
            state = (
                "they are still there: the restart reads the old location's files, and fails once it is gone"
            )
        here = sum(1 for r in elsewhere if r.here)
        yield Finding(
            Code.TWS_SCHEMA_FILES_ELSEWHERE,
            f"state/{first.operator_id}/_metadata/v2/{_newest(snapshot, first.operator_id)} records its "
            f"{len(elsewhere)} schema file(s) under {first.old_root or first.recorded}, not under this "
            f"checkpoint; {state}. This checkpoint holds {here} of them.",
            paths=tuple(sorted({f"state/{r.operator_id}/_metadata/v2" for r in elsewhere})),
            details=(
                ("operator", first.operator_id),
                ("recorded_root", first.old_root),
                ("recorded", tuple(r.recorded for r in elsewhere)),
                ("held_here", here),
            ),
        )


def _newest(snapshot: CheckpointSnapshot, operator_id: int) -> str:
    for op in snapshot.state.operators:
        if op.operator_id == operator_id and op.metadata_v2_batches:
            return str(op.metadata_v2_batches[-1])
    return "<batch>"


def restart_error(ctx: Context, batch_id: int) -> tuple[SparkError, Code] | None:
    """What planning batch ``batch_id`` of a restart meets first in a transformWithState operator
    (None: nothing)."""
    snapshot = ctx.snapshot
    gone = missing_metadata(snapshot)
    if gone:
        return ctx.target.tws_metadata_missing(
            gone[0].operator_id, batch_id
        ), Code.TWS_OPERATOR_METADATA_MISSING
    for ref in schema_refs(snapshot):
        if ref.inside and not ref.here:
            return ctx.target.tws_schema_file_missing(ref.recorded, ref.rel), Code.TWS_SCHEMA_FILE_MISSING
        if not ref.inside and ref.exists is not True:
            return ctx.target.tws_schema_file_missing(ref.recorded, None), Code.TWS_SCHEMA_FILES_ELSEWHERE
    return None
