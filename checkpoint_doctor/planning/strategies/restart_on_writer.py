"""``restart-on-writer``: when the target Spark cannot read a log file's version, restart on the
oldest newer Spark line that can (the line that wrote it, or one after it). Nothing changes in the
checkpoint; the planner judges the option by diagnosing that line."""

from __future__ import annotations

from dataclasses import replace

from checkpoint_doctor.diagnosis import diagnose
from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.detect import detect_writer
from checkpoint_doctor.diagnosis.matrix import writer_lines
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.diagnosis.versions import LINES
from checkpoint_doctor.diagnosis.writer_confs import CHECKPOINT_FORMAT_VERSION, proven_confs
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, unavailable
from checkpoint_doctor.planning.request import Cell
from checkpoint_doctor.planning.steps import RunStep

NAME = "restart-on-writer"


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Find the oldest newer line whose restart starts."""
    here = ctx.diagnosis.spark
    path = finding.paths[0] if finding.paths else "a log file"
    dopts = replace(ctx.options.diagnose, spark=None, mode=ctx.diagnosis.mode, now_ms=None, live_window_s=0)
    wrote = writer_lines(detect_writer(ctx.snapshot))
    for line in LINES[LINES.index(here) + 1 :]:
        if diagnose(ctx.snapshot, replace(dopts, spark=line)).prediction.starts:
            # The step names no target line: every cell that cannot read the file proposes the
            # same option, once.
            step = RunStep(
                command=f"restart the query on Spark {line}, which reads {path}",
                reason="the checkpoint stays as it is",
            )
            who = (
                "the line that wrote it"
                if line in wrote
                else f"newer than the writer (Spark {'-'.join(dict.fromkeys((wrote[0], wrote[-1])))})"
            )
            note = f"restart on Spark {line}, {who}"
            session = _writer_session(finding, ctx)
            if session is not None:
                note += f"; or restart on Spark {here} with {session}"
            return [Option(NAME, (step,), (finding.code,), note=note, restart=Cell(line, ctx.diagnosis.mode))]
    return [
        unavailable(
            NAME, finding.code, f"no supported Spark line newer than {here} restarts on {path} either"
        )
    ]


def _writer_session(finding: Finding, ctx: PlanContext) -> str | None:
    """For a 4.0/4.1 commit-version mismatch on commits the writer wrote with checkpoint format 2:
    the conf that makes the same line read them (CommitLog's exact version match is against it)."""
    if finding.code != Code.COMMIT_VERSION_MISMATCH:
        return None
    proven = {p.key: p for p in proven_confs(ctx.snapshot)}
    conf = proven.get(CHECKPOINT_FORMAT_VERSION)
    return f"{conf.text}, as the writer had ({conf.evidence})" if conf is not None else None


STRATEGY = Strategy(NAME, NAME, (Code.LOG_VERSION_TOO_NEW, Code.COMMIT_VERSION_MISMATCH), propose)
