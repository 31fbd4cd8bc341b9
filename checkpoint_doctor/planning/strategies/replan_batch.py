"""Quarantine the newest offsets file when its batch has no commit: Spark plans that batch again
with new end offsets (``MicroBatchExecution.populateStartOffsets``: ``K < L`` re-runs ``L``). Used when ``offsets/L`` is unusable (unreadable, void
sources, blank metadata, no confs, an unfinished repartition) or when ``offsets/(L-1)`` is missing
below an uncommitted ``L``."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine

NAME = "replan-batch"
#: Codes about ``offsets/L`` itself; the tail codes (missing ``L-1``) name no path.
FILE_CODES = (
    Code.OFFSETS_FILE_UNREADABLE,
    Code.OFFSETS_JAVA_SERIALIZED,
    Code.OFFSETS_METADATA_LINE_EMPTY,
    Code.OFFSETS_WITHOUT_CONF_FATAL,
    Code.UNFINISHED_REPARTITION,
    Code.SOURCE_OFFSET_VOID,
)


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Quarantine ``offsets/L`` (and its checksum) if ``commits/L`` does not exist."""
    snapshot = ctx.snapshot
    latest = snapshot.offsets.latest_id
    if latest is None or snapshot.commits.get(latest) is not None:
        return []
    path = f"offsets/{latest}"
    if finding.code in FILE_CODES and path not in finding.paths and latest not in finding.batch_ids:
        return []
    steps = quarantine(snapshot, path, "re-plan the uncommitted batch")
    return [Option("quarantine", steps, (finding.code,), note=f"Spark re-plans batch {latest}")]


STRATEGY = Strategy(
    NAME, "quarantine", (Code.OFFSETS_PREDECESSOR_MISSING, Code.OFFSETS_JUMP_AHEAD, *FILE_CODES), propose
)
