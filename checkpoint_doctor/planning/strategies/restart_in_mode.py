"""``restart-in-mode``: some refusals are about how the query restarts, not the files: a checkpoint
written by continuous processing restarted as micro-batch (no metadata lines, and continuous sources
keep other offsets), or async progress tracking switched on for a stateful query. The option is to
restart the way the checkpoint can be read; the planner judges it by diagnosing that mode."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy
from checkpoint_doctor.planning.request import Cell
from checkpoint_doctor.planning.steps import RunStep

NAME = "restart-in-mode"
HOW = {
    "continuous": "restart the query with Trigger.Continuous, the mode that wrote this checkpoint",
    "micro-batch": "restart the query without asyncProgressTrackingEnabled: stateful queries do not support it",
}


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Restart in continuous mode (CD008 on a continuous checkpoint) or without async (CD602)."""
    if (
        finding.code == Code.OFFSETS_METADATA_LINE_EMPTY
        and ctx.diagnosis.mode_detected == "continuous"
        and ctx.diagnosis.mode != "continuous"
    ):
        mode = "continuous"
    elif finding.code == Code.ASYNC_STATEFUL:
        mode = "micro-batch"
    else:
        return []
    step = RunStep(command=HOW[mode], reason="the checkpoint stays as it is")
    return [Option(NAME, (step,), (finding.code,), note=HOW[mode], restart=Cell(ctx.diagnosis.spark, mode))]


STRATEGY = Strategy(NAME, NAME, (Code.OFFSETS_METADATA_LINE_EMPTY, Code.ASYNC_STATEFUL), propose)
