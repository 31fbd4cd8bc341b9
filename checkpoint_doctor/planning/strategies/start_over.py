"""``start-over``: the offsets log is gone while commits remain (nothing records which source
ranges the committed batches read), so the only restart that is consistent is a new start at batch
0 from the sources' starting offsets, keeping the query id: the commits, the state (it summarises the
lost ranges) and the source logs are quarantined, and the directories they leave empty removed
(Spark 4.1+ refuses a new query whose ``state/`` lists anything). Always needs consent."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, emptied_dirs
from checkpoint_doctor.planning.steps import QuarantineStep, Step
from checkpoint_doctor.planning.strategies.sink_ahead import quarantine_sink_entry

NAME = "start-over"
LOSS = (
    "the query starts again at batch 0 from the sources' starting offsets (the source's startingOffsets: "
    "a Kafka source defaults to 'latest', which skips everything not yet read; rate and file sources read "
    "from their beginning again) and its state restarts empty, rebuilt only from what the sources still hold"
)


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Quarantine commits/, state/ and sources/ files (and a known file sink's log)."""
    snapshot = ctx.snapshot
    removed = [f.path for f in snapshot.files if f.path.startswith(("commits/", "state/", "sources/"))]
    steps: list[Step] = [QuarantineStep(path=p, reason="start over at batch 0") for p in removed]
    gone = set(removed)
    for top in ("state", "sources"):
        steps += emptied_dirs(snapshot, top, gone, "emptied by the start-over")
    if snapshot.sink is not None:
        for e in snapshot.sink.log.entries:
            steps += quarantine_sink_entry(snapshot, e.batch_id, e.compact, "start over at batch 0")
    return [
        Option(NAME, tuple(steps), (finding.code,), note="a new start at batch 0, same query id", loss=LOSS)
    ]


STRATEGY = Strategy(NAME, NAME, (Code.COMMITS_WITHOUT_OFFSETS_LOG,), propose)
