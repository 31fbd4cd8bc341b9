"""Checks on ``state/``: can the next batch load its state version in every store. Pure."""

from __future__ import annotations

from collections.abc import Iterator

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.facts import StoreVerdict
from checkpoint_doctor.diagnosis.model import Finding, RestartPrediction
from checkpoint_doctor.ids import count_missing, missing_in


def check_state_present(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD301 stateful without state; CD308 declared stateless but state present."""
    state = ctx.snapshot.state
    has_stores = any(op.stores for op in state.operators)
    if ctx.options.stateful is False and has_stores:
        yield Finding(
            Code.STATE_DIRECTORY_UNEXPECTED,
            f"state/ holds operators {', '.join(str(op.operator_id) for op in state.operators)} but the query "
            "was declared stateless.",
            paths=("state",),
        )
        return
    wanted = ctx.options.stateful is True or (state.exists and not has_stores and bool(ctx.offsets_ids))
    if wanted and not has_stores and ctx.offsets_ids:
        what = "is missing" if not state.exists else "holds no state files"
        yield Finding(Code.STATE_MISSING, f"the query is stateful but state/ {what}.", paths=("state",))


def _listed(ids: tuple[int, ...], total: int, shown: int = 20) -> str:
    """Return ids as ``1, 2, 3`` (``... and N more`` past ``shown``)."""
    text = ", ".join(map(str, ids[:shown]))
    return text + (f" and {total - shown} more" if total > shown else "")


def check_state_restorable(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD302/CD303/CD306: the next batch's state version in every store; CD304/CD305 partitions."""
    b = prediction.next_batch_id
    state = ctx.snapshot.state
    if b is None or not state.operators or ctx.is_continuous:
        return
    notable: dict[int, list[StoreVerdict]] = {}
    for verdict in ctx.notable_stores(b):
        notable.setdefault(verdict.store.operator_id, []).append(verdict)
    for op in state.operators:
        if not op.stores:
            continue
        meta_parts = dict(op.metadata.record.stores) if op.metadata and op.metadata.record else {}
        expected = ctx.operator_partitions(op)
        count = expected or (max(meta_parts.values()) if meta_parts else None)
        if count is not None:
            missing = missing_in(0, count - 1, op.partition_dirs)
            extra = sorted(p for p in op.partition_dirs if p >= count)
            if missing and b > 0:
                yield Finding(
                    Code.STATE_PARTITIONS_MISSING,
                    f"state/{op.operator_id} has no directories for partitions "
                    f"{_listed(missing, count_missing(0, count - 1, op.partition_dirs))} "
                    f"of the {count} pinned shuffle partitions.",
                    paths=tuple(f"state/{op.operator_id}/{p}" for p in missing),
                    details=(("operator", op.operator_id), ("expected_partitions", count)),
                )
            if extra:
                yield Finding(
                    Code.STATE_PARTITIONS_EXTRA,
                    f"state/{op.operator_id} has directories for partitions {', '.join(map(str, extra))} beyond "
                    f"the {count} pinned shuffle partitions.",
                    paths=tuple(f"state/{op.operator_id}/{p}" for p in extra),
                    details=(("operator", op.operator_id),),
                )
        for store, result, code, skipped in notable.get(op.operator_id, ()):
            if code is None:
                yield Finding(
                    Code.ROCKSDB_SNAPSHOT_SKIPPED,
                    f"{store.path}'s newest snapshot cannot be loaded ({', '.join(skipped)} missing or "
                    f"unreadable); Spark {ctx.target.line} loads state version {b} without it ({result.basis}).",
                    paths=skipped,
                    batch_ids=(b,),
                    details=(("operator", store.operator_id), ("partition", store.partition_id)),
                )
                continue
            bad = result.corrupt or result.missing
            what = "cannot be read" if result.corrupt else ("is missing" if len(bad) == 1 else "are missing")
            yield Finding(
                code,
                f"batch {b} loads state version {b} from {store.path} but {', '.join(bad)} {what} ({result.basis}).",
                paths=bad,
                batch_ids=(b,),
                details=(
                    ("operator", store.operator_id),
                    ("partition", store.partition_id),
                    ("store", store.store_name),
                    ("version", b),
                ),
            )


def check_restorable_batch(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD307: the newest batch restorable everywhere, when it is behind the newest commit."""
    k = ctx.committed
    if k is None or ctx.is_continuous:
        return
    best = ctx.facts.newest_restorable_batch
    if best is None or best >= k:
        return
    yield Finding(
        Code.STATE_RESTORABLE_BATCH,
        f"the newest batch whose state loads in every partition is batch {best} (state version {best + 1}); "
        f"the newest commit is commits/{k}.",
        batch_ids=(best,),
        details=(("batch", best), ("latest_commit", k)),
    )
