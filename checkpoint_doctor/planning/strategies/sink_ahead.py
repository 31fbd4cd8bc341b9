"""Quarantine file sink log entries above the newest planned batch: they name batches the query
has not planned, so the sink would skip them when they run."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy
from checkpoint_doctor.planning.steps import Area, QuarantineStep, Step
from checkpoint_doctor.reading.layout import SINK_LOG, hadoop_crc_path
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot

NAME = "sink-ahead"


def sink_entry_path(batch_id: int, compact: bool) -> str:
    """Return the sink-relative path of a sink log entry."""
    return f"{SINK_LOG}/{batch_id}{'.compact' if compact else ''}"


def quarantine_sink_entry(
    snapshot: CheckpointSnapshot, batch_id: int, compact: bool, reason: str
) -> tuple[Step, ...]:
    """Quarantine a sink log entry and, on a local file system, its Hadoop checksum when there is
    one (the sink's listing does not keep checksums; one left behind blocks Spark's next write)."""
    path = sink_entry_path(batch_id, compact)
    steps: list[Step] = [QuarantineStep(path=path, area=Area.SINK, reason=reason)]
    if snapshot.sink is not None and snapshot.sink.local:
        steps.append(
            QuarantineStep(
                path=hadoop_crc_path(path),
                area=Area.SINK,
                reason=f"Hadoop checksum of {path}",
                if_present=True,
            )
        )
    return tuple(steps)


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Quarantine ``_spark_metadata/(L+1)..``."""
    sink = ctx.snapshot.sink
    latest = ctx.snapshot.offsets.latest_id
    if sink is None or latest is None:
        return []
    steps = tuple(
        s
        for e in sink.log.entries
        if e.batch_id > latest
        for s in quarantine_sink_entry(
            ctx.snapshot, e.batch_id, e.compact, "sink log entry ahead of the checkpoint"
        )
    )
    note = f"the sink writes batches {latest + 1}.. again when they run"
    return [Option("quarantine", steps, (finding.code,), note=note)] if steps else []


STRATEGY = Strategy(NAME, "quarantine", (Code.SINK_AHEAD_OF_OFFSETS,), propose)
