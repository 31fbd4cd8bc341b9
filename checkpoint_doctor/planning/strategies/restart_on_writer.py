"""``restart-on-writer``: when the target Spark cannot read a log file's version, restart on the
oldest newer Spark line that can (the line that wrote it, or one after it). Nothing changes in the
checkpoint; the planner judges the option by diagnosing that line."""

from __future__ import annotations

from dataclasses import replace

from checkpoint_doctor.diagnosis import diagnose
from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.diagnosis.versions import LINES
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, unavailable
from checkpoint_doctor.planning.request import Cell
from checkpoint_doctor.planning.steps import RunStep

NAME = "restart-on-writer"


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Find the oldest newer line whose restart starts."""
    here = ctx.diagnosis.spark
    path = finding.paths[0] if finding.paths else "a log file"
    dopts = replace(ctx.options.diagnose, spark=None, mode=ctx.diagnosis.mode, now_ms=None, live_window_s=0)
    for line in LINES[LINES.index(here) + 1 :]:
        if diagnose(ctx.snapshot, replace(dopts, spark=line)).prediction.starts:
            step = RunStep(
                command=f"restart the query on Spark {line} (it reads {path}, which Spark {here} cannot)",
                reason="the checkpoint stays as it is",
            )
            return [
                Option(
                    NAME,
                    (step,),
                    (finding.code,),
                    note=f"restart on Spark {line}",
                    restart=Cell(line, ctx.diagnosis.mode),
                )
            ]
    return [
        unavailable(
            NAME, finding.code, f"no supported Spark line newer than {here} restarts on {path} either"
        )
    ]


STRATEGY = Strategy(NAME, NAME, (Code.LOG_VERSION_TOO_NEW, Code.COMMIT_VERSION_MISMATCH), propose)
