"""``catch-up``: the documented recipe for the async tail, run by ``checkpoint-doctor catch-up``
(async progress tracking with interval 0 until two consecutive batches are durable)."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy
from checkpoint_doctor.planning.steps import RunStep

NAME = "catch-up"


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Offer the catch-up run with the operator's job."""
    job = ctx.options.job or "MODULE:FUNCTION"
    command = f"checkpoint-doctor catch-up {ctx.snapshot.root} --job {job} --batches 2"
    step = RunStep(
        command=command,
        reason="re-enable async progress tracking with interval 0, run two micro-batches, stop",
    )
    return [
        Option(
            NAME,
            (step,),
            (finding.code,),
            note="needs the operator's streaming job and new data in the sources",
        )
    ]


STRATEGY = Strategy(NAME, NAME, (Code.ASYNC_TAIL_SYNC_RESTART,), propose)
