"""``rollback``: quarantine every offsets/commit above the newest consistent batch R (readable
``offsets/R``, ``offsets/(R-1)`` and ``commits/R``; state version R+1 loadable in every store, SST
files, damaged files and checkpoint-format-2 unique ids included), the state files above version
R+1, the sources' own log entries above R (a file source's file lists) and, with a file sink path,
the sink log entries above R, all together. A source log compacted above R cannot be rolled back
(the compaction replaced the entries R needs). Spark re-plans R+1.. with new end
offsets: a sink that skips committed batch ids loses them unless its log is rolled back too."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine, unavailable
from checkpoint_doctor.planning.state_files import all_stores, rollback_target, state_files_above
from checkpoint_doctor.planning.steps import QuarantineStep, Step
from checkpoint_doctor.planning.strategies.sink_ahead import quarantine_sink_entry
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot

NAME = "rollback"
CODES = (
    Code.OFFSETS_FILE_UNREADABLE, Code.COMMIT_FILE_UNREADABLE, Code.LOG_VERSION_TOO_NEW, Code.OFFSETS_JAVA_SERIALIZED, Code.OFFSETS_METADATA_LINE_EMPTY, Code.OFFSETS_WITHOUT_CONF_FATAL, Code.UNFINISHED_REPARTITION, Code.ASYNC_TAIL_SYNC_RESTART, Code.OFFSETS_PREDECESSOR_MISSING, Code.COMMIT_AHEAD_OF_OFFSETS,
    Code.OFFSETS_JUMP_AHEAD, Code.SOURCE_OFFSET_VOID, Code.SOURCE_FILE_UNREADABLE, Code.STATE_VERSION_NOT_RESTORABLE, Code.ROCKSDB_SST_MISSING, Code.STATE_PARTITIONS_MISSING, Code.STATE_UNIQUE_IDS_MISSING, Code.STATE_FILE_UNREADABLE,
)  # fmt: skip


def rollback_steps(snapshot: CheckpointSnapshot, r: int) -> tuple[Step, ...]:
    """Return the steps that roll the checkpoint (and a known sink log) back to batch ``r``."""
    steps: list[Step] = []
    reason = f"roll back to batch {r}"
    for log in (snapshot.offsets, snapshot.commits):
        for e in log.entries:
            if e.batch_id > r:
                steps += quarantine(snapshot, e.file.path, reason)
    for source in snapshot.sources:
        for entry in source.entries:
            if entry.batch_id > r:
                steps += quarantine(snapshot, entry.file.path, f"source log entry above batch {r}")
    done = {s.key[1] for s in steps if s.key is not None}
    for path in state_files_above(snapshot, r + 1):
        if path not in done:
            steps.append(
                QuarantineStep(path=path, reason=f"state above version {r + 1}, the rollback target")
            )
    if snapshot.sink is not None:
        for sink_entry in snapshot.sink.log.entries:
            if sink_entry.batch_id > r:
                steps += quarantine_sink_entry(
                    snapshot, sink_entry.batch_id, sink_entry.compact, f"sink log entry above batch {r}"
                )
    return tuple(steps)


def compacted_above(snapshot: CheckpointSnapshot, r: int) -> str | None:
    """Return a source log compacted above batch ``r`` (its older entries are gone), or None."""
    for source in snapshot.sources:
        if any(e.compact and e.batch_id > r for e in source.entries):
            return source.path
    return None


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Roll back to the newest batch consistent everywhere."""
    if ctx.diagnosis.spark == "4.0" and any(
        st.zips_v2 or st.changelogs_v2 for st in all_stores(ctx.snapshot)
    ):
        # Observed with Spark 4.0.5 (fixture rocksdb-v2-state-missing, scripts/record_repairs.py): after
        # such a rollback the restart fails with "Cannot read RocksDB checkpoint metadata. Expected v2,
        # but found v1"; 4.1.4 and later load the older version.
        why = "Spark 4.0 cannot load an older checkpoint-format-2 state version ('Expected v2, but found v1'); use Spark 4.1 or newer"
        return [unavailable(NAME, finding.code, why)]
    r, why = ctx.once("rollback-target", lambda: rollback_target(ctx.snapshot))
    if r is None:
        return [unavailable(NAME, finding.code, why)]
    compacted = compacted_above(ctx.snapshot, r)
    if compacted is not None:
        why = f"{compacted} was compacted after batch {r}: its entries up to {r} are no longer separate files"
        return [unavailable(NAME, finding.code, why)]
    steps = ctx.once(f"rollback-steps-{r}", lambda: rollback_steps(ctx.snapshot, r))
    if not steps:
        return []
    return [Option(NAME, steps, (finding.code,), note=f"roll back to batch {r}")]


STRATEGY = Strategy(NAME, NAME, CODES, propose)
