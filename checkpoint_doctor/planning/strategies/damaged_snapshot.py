"""Quarantine RocksDB snapshot zips that cannot be loaded (unreadable, or naming missing SST files),
so the store loads the newest older zip and replays the changelogs from there: the same state, rebuilt without the damaged snapshot (what
Spark 4.3's ``autoSnapshotRepair`` does in memory, made durable for every Spark line)."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine
from checkpoint_doctor.planning.state_files import all_stores, damaged_zips
from checkpoint_doctor.planning.steps import Step

NAME = "damaged-snapshot"


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Quarantine every damaged zip of a store that keeps changelogs to replay."""
    steps: list[Step] = []
    for store in all_stores(ctx.snapshot):
        if not store.changelogs:
            continue
        for name in damaged_zips(store):
            steps += quarantine(ctx.snapshot, f"{store.path}/{name}", "a snapshot that cannot be loaded")
    if not steps:
        return []
    note = "older snapshots plus changelogs rebuild the same state"
    return [Option("quarantine", tuple(steps), (finding.code,), note=note)]


STRATEGY = Strategy(
    NAME,
    "quarantine",
    (Code.ROCKSDB_SST_MISSING, Code.ROCKSDB_SNAPSHOT_SKIPPED, Code.STATE_FILE_UNREADABLE),
    propose,
)
