"""``recreate-metadata``: write ``metadata`` with ``--query-id`` (the old id) or a new id derived from
the checkpoint (deterministic), warning that sinks and listeners keyed on the id see a new query.
Spark 3.5 does the latter silently on restart; 4.2+ refuse to start without the file."""

from __future__ import annotations

import hashlib
import json
import uuid

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine, unavailable
from checkpoint_doctor.planning.steps import QuarantineStep, Step, WriteStep
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot

NAME = "recreate-metadata"
NEW_ID_NOTE = "with a NEW query id: sinks and listeners keyed on the query id see a new query"


def derived_query_id(snapshot: CheckpointSnapshot) -> str:
    """Return a new query id derived from the checkpoint, so the plan stays deterministic."""
    digest = hashlib.sha256(f"{snapshot.root}\0{snapshot.fingerprint()}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Quarantine an unreadable ``metadata`` (or the orphan checksum of a missing one), then write it."""
    snapshot = ctx.snapshot
    if "metadata" in snapshot.dirs:
        return [unavailable(NAME, finding.code, "metadata is a directory here; move it away by hand first")]
    query_id = ctx.options.query_id or derived_query_id(snapshot)
    steps: list[Step] = []
    if finding.code == Code.METADATA_UNREADABLE:
        steps += quarantine(snapshot, "metadata", "unreadable metadata")
    elif finding.code == Code.METADATA_ID_INVALID:
        # The id Spark cannot parse is not the query's (no run used it): nothing in the checkpoint
        # names the real one (offsets, commits and state hold no query id), so only --query-id can.
        steps += quarantine(snapshot, "metadata", "metadata whose id UUID.fromString refuses")
    elif snapshot.crc_of("metadata") is not None:
        steps.append(QuarantineStep(path=".metadata.crc", reason="orphan checksum of metadata"))
    steps.append(
        WriteStep(
            path="metadata",
            content_text=json.dumps({"id": query_id}, separators=(",", ":")),
            reason="recreate the query id",
        )
    )
    note = "with the given query id" if ctx.options.query_id else NEW_ID_NOTE
    return [Option(NAME, tuple(steps), (finding.code,), note=note)]


STRATEGY = Strategy(
    NAME, NAME, (Code.METADATA_MISSING, Code.METADATA_UNREADABLE, Code.METADATA_ID_INVALID), propose
)
