"""``reset-state``: operators start from empty state at the current offsets (with consent).

For every store that cannot load the version the next batch reads (``B``, the batch id), write an
empty state of version ``B``: the HDFS provider's ``<B>.snapshot`` (``loadMap`` takes a snapshot of
the version itself before any delta) or a RocksDB ``<B>.zip`` holding only an empty checkpoint
metadata (``loadCheckpointFromDfs`` takes the newest zip at or below ``B``). Stores that load keep
their state. With ``state/`` gone entirely, the stores to create come from ``--state-store`` (default:
operator 0, store ``default``: one aggregation, deduplication or flatMapGroupsWithState).

What is lost is said plainly: aggregates restart from zero, deduplication forgets the keys it has
seen, stream-stream joins lose the rows they buffered.
"""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine, unavailable
from checkpoint_doctor.planning.state_files import (
    EMPTY_LZ4_STATE,
    all_stores,
    empty_rocksdb_zip,
    loads,
    store_path,
)
from checkpoint_doctor.planning.steps import Step, WriteStep
from checkpoint_doctor.reading.snapshot import StateStore

NAME = "reset-state"
CONSEQUENCE = (
    "aggregates restart from zero, deduplication forgets the keys it has seen (they pass once more), "
    "stream-stream joins lose the rows they buffered (matches with earlier rows are missed)"
)
#: The most stores one plan resets: a plan is a file of steps, and an apply writes each one; a
#: pinned partition count beyond this (a damaged or hostile offsets file) gets no reset plan.
MAX_RESET_STORES = 100_000
#: Spark reads spark.sql.shuffle.partitions as a Java int.
JAVA_INT_MAX = 2**31 - 1
PROVIDER = "spark.sql.streaming.stateStore.providerClass"
CODEC = "spark.sql.streaming.stateStore.compression.codec"


def _stores(ctx: PlanContext) -> list[tuple[int, str]]:
    pairs = {(s.operator_id, s.store_name) for s in all_stores(ctx.snapshot)}
    if not pairs:
        pairs = set(ctx.options.state_stores or ((0, "default"),))
    return sorted(pairs)


def _partitions(ctx: PlanContext) -> int | None:
    value = ctx.conf("spark.sql.shuffle.partitions")
    if value is not None and value.isdigit():
        return int(value)
    dirs = [p for op in ctx.snapshot.state.operators for p in op.partition_dirs]
    return max(dirs) + 1 if dirs else None


def _provider(ctx: PlanContext) -> str:
    kinds = {s.provider for s in all_stores(ctx.snapshot)} - {"empty"}
    if len(kinds) == 1:
        return kinds.pop()
    return "rocksdb" if "RocksDB" in (ctx.conf(PROVIDER) or "") else "hdfs"


def _blocked(ctx: PlanContext, provider: str) -> str | None:
    stores = all_stores(ctx.snapshot)
    if any(s.zips_v2 or s.changelogs_v2 for s in stores) or any(
        e.record is not None and e.record.state_unique_ids for e in ctx.snapshot.commits.entries
    ):
        return "checkpoint format 2 names state files by ids recorded in the commit log; a reset cannot make them"
    codec = ctx.conf(CODEC) or "lz4"
    if provider == "hdfs" and codec != "lz4":
        return f"the checkpoint pins state compression codec {codec}; empty state is written only for lz4"
    return None


def _reset_store(
    ctx: PlanContext, existing: StateStore | None, path: str, b: int, provider: str
) -> list[Step]:
    name, data = (
        (f"{b}.zip", empty_rocksdb_zip()) if provider == "rocksdb" else (f"{b}.snapshot", EMPTY_LZ4_STATE)
    )
    steps: list[Step] = []
    target = f"{path}/{name}"
    if ctx.snapshot.file(target) is not None:
        steps += quarantine(ctx.snapshot, target, "replaced by an empty state")
    steps.append(
        WriteStep.of_bytes(target, data, f"empty state of version {b}: the store starts from nothing")
    )
    return steps


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Write empty state for every store that cannot load the next batch's version."""
    b = ctx.diagnosis.prediction.next_batch_id
    partitions = _partitions(ctx)
    if b is None or b == 0 or partitions is None:
        why = "the restart runs batch 0, which needs no state" if b == 0 else "the partition count is unknown"
        return [unavailable(NAME, finding.code, why)]
    if partitions > JAVA_INT_MAX:
        return [
            unavailable(
                NAME, finding.code, f"the pinned partition count {partitions} is not an int Spark reads"
            )
        ]
    if partitions * len(_stores(ctx)) > MAX_RESET_STORES:
        why = (
            f"it would write {partitions * len(_stores(ctx))} empty state stores "
            f"({partitions} pinned shuffle partitions), more than the {MAX_RESET_STORES} a plan holds"
        )
        return [unavailable(NAME, finding.code, why)]
    provider = _provider(ctx)
    blocked = _blocked(ctx, provider)
    if blocked is not None:
        return [unavailable(NAME, finding.code, blocked)]
    existing = {(s.operator_id, s.partition_id, s.store_name): s for s in all_stores(ctx.snapshot)}
    steps: list[Step] = []
    reset: list[str] = []
    for op, name in _stores(ctx):
        for p in range(partitions):
            store = existing.get((op, p, name))
            if store is not None and loads(ctx.snapshot, store, b):
                continue
            path = store_path(op, p, name)
            steps += _reset_store(ctx, store, path, b, provider)
            reset.append(path)
    if not steps:
        return []
    scope = f"{len(reset)} of {partitions * len(_stores(ctx))} state store(s) ({', '.join(reset[:4])}{', ...' if len(reset) > 4 else ''})"
    loss = f"state reset in {scope} at batch {b}: {CONSEQUENCE}"
    return [
        Option(NAME, tuple(steps), (finding.code,), note=f"empty state of version {b} in {scope}", loss=loss)
    ]


STRATEGY = Strategy(
    NAME,
    NAME,
    (
        Code.STATE_MISSING,
        Code.STATE_VERSION_NOT_RESTORABLE,
        Code.ROCKSDB_SST_MISSING,
        Code.STATE_PARTITIONS_MISSING,
        Code.STATE_FILE_UNREADABLE,
    ),
    propose,
)
