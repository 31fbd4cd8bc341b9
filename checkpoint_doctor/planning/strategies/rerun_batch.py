"""Quarantine an unreadable newest commit: Spark re-runs that batch with the same end offsets."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine

NAME = "rerun-batch"


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Quarantine ``commits/K``."""
    k = ctx.snapshot.commits.latest_id
    if k is None:
        return []
    steps = quarantine(ctx.snapshot, f"commits/{k}", "unreadable commit")
    return [Option("quarantine", steps, (finding.code,), note=f"Spark re-runs batch {k}")]


STRATEGY = Strategy(NAME, "quarantine", (Code.COMMIT_FILE_UNREADABLE,), propose)
