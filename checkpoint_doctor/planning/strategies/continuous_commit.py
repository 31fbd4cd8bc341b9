"""Continuous processing: quarantine the commits without offsets, so the query resumes after the
newest epoch that has both (``ContinuousExecution.getStartOffsets``)."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine

NAME = "continuous-commit"


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Quarantine every commit above the newest epoch whose offsets exist."""
    offsets, commits = ctx.snapshot.offsets, ctx.snapshot.commits
    k = commits.latest_id
    if k is None:
        return []
    keep = max((c for c in commits.ids if c < k and offsets.get(c) is not None), default=None)
    floor = keep if keep is not None else -1
    steps = tuple(
        s
        for c in commits.entries
        if c.batch_id > floor
        for s in quarantine(ctx.snapshot, c.file.path, "commit without offsets")
    )
    note = (
        f"continuous processing resumes after epoch {keep}" if keep is not None else "starts again at epoch 0"
    )
    return [Option("quarantine", steps, (finding.code,), note=note)]


STRATEGY = Strategy(NAME, "quarantine", (Code.CONTINUOUS_COMMIT_WITHOUT_OFFSETS,), propose)
