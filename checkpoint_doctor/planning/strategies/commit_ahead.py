"""Quarantine the commits above the newest offsets file (``K > L``): Spark then continues after
``L``; a batch id that was committed is planned again (``MicroBatchExecution.populateStartOffsets``
throws ``CONCURRENT_STREAM_LOG_UPDATE`` while ``K > L``)."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine

NAME = "commit-ahead"


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Quarantine ``commits/(L+1)..K``."""
    snapshot = ctx.snapshot
    latest = snapshot.offsets.latest_id
    if latest is None:
        return []
    steps = tuple(
        s
        for c in snapshot.commits.entries
        if c.batch_id > latest
        for s in quarantine(snapshot, c.file.path, "commit ahead of offsets")
    )
    if not steps:
        return []
    return [Option("quarantine", steps, (finding.code,), note=f"Spark continues after batch {latest}")]


STRATEGY = Strategy(NAME, "quarantine", (Code.COMMIT_AHEAD_OF_OFFSETS,), propose)
