"""Quarantine files that block Spark's next write or a fresh start: an orphan Hadoop ``.crc`` where
the next batch file goes (the rename fails: "Multiple streaming queries are concurrently using"),
or leftovers in a checkpoint with no batches (4.1+ refuses to start a new query there)."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine
from checkpoint_doctor.planning.steps import Area, QuarantineStep, Step

NAME = "orphan-files"


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """One option per finding: quarantine every path it names."""
    steps: tuple[Step, ...]
    if finding.code == Code.ORPHAN_CRC_BLOCKS_WRITE:
        # A file sink's orphan (checks_sink) is in the sink's log, not in the checkpoint.
        area = Area.SINK if finding.detail("area") == Area.SINK else Area.CHECKPOINT
        steps = tuple(
            QuarantineStep(path=p, area=area, reason="orphan checksum blocks the next write")
            for p in finding.paths
        )
    else:
        steps = tuple(
            s
            for p in finding.paths
            for s in quarantine(ctx.snapshot, p, "leftover in a checkpoint with no batches")
        )
    return [Option("quarantine", steps, (finding.code,))] if steps else []


STRATEGY = Strategy(
    NAME, "quarantine", (Code.ORPHAN_CRC_BLOCKS_WRITE, Code.FRESH_CHECKPOINT_NOT_EMPTY), propose
)
