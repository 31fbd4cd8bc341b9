"""Checks on ``state/``: can the next batch load its state version in every store. Pure."""

from __future__ import annotations

from collections.abc import Iterator

from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.model import Finding, RestartPrediction
from checkpoint_doctor.state_chain import newest_restorable_batch, skipped_snapshot_ssts


def check_state_present(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD301 stateful without state; CD308 declared stateless but state present."""
    state = ctx.snapshot.state
    has_stores = any(op.stores for op in state.operators)
    if ctx.options.stateful is False and has_stores:
        yield Finding(
            "CD308",
            f"state/ holds operators {', '.join(str(op.operator_id) for op in state.operators)} but the query "
            "was declared stateless.",
            paths=("state",),
        )
        return
    wanted = ctx.options.stateful is True or (state.exists and not has_stores and bool(ctx.offsets_ids))
    if wanted and not has_stores and ctx.offsets_ids:
        what = "is missing" if not state.exists else "holds no state files"
        yield Finding("CD301", f"the query is stateful but state/ {what}.", paths=("state",))


def check_state_restorable(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD302/CD303/CD306: the next batch's state version in every store; CD304/CD305 partitions."""
    b = prediction.next_batch_id
    state = ctx.snapshot.state
    if b is None or not state.operators or ctx.is_continuous:
        return
    expected = ctx.pinned_partitions
    for op in state.operators:
        if not op.stores:
            continue
        meta_parts = dict(op.metadata.record.stores) if op.metadata and op.metadata.record else {}
        count = expected or (max(meta_parts.values()) if meta_parts else None)
        if count is not None:
            missing = [p for p in range(count) if p not in op.partition_dirs]
            extra = [p for p in op.partition_dirs if p >= count]
            if missing and b > 0:
                yield Finding(
                    "CD304",
                    f"state/{op.operator_id} has no directories for partitions {', '.join(map(str, missing))} "
                    f"of the {count} pinned shuffle partitions.",
                    paths=tuple(f"state/{op.operator_id}/{p}" for p in missing),
                    details=(("operator", op.operator_id), ("expected_partitions", count)),
                )
            if extra:
                yield Finding(
                    "CD305",
                    f"state/{op.operator_id} has directories for partitions {', '.join(map(str, extra))} beyond "
                    f"the {count} pinned shuffle partitions.",
                    paths=tuple(f"state/{op.operator_id}/{p}" for p in extra),
                    details=(("operator", op.operator_id),),
                )
        for store in op.stores:
            result, code = ctx.restorability(store, b)
            if code is None:
                skipped = skipped_snapshot_ssts(store, b) if store.provider == "rocksdb" else ()
                if skipped:
                    yield Finding(
                        "CD309",
                        f"{store.path} needs {', '.join(skipped)} for its newest snapshot, which is missing; "
                        f"Spark {ctx.target.line} loads state version {b} without it ({result.basis}).",
                        paths=skipped,
                        batch_ids=(b,),
                        details=(("operator", store.operator_id), ("partition", store.partition_id)),
                    )
                continue
            yield Finding(
                code,
                f"batch {b} loads state version {b} from {store.path} but {', '.join(result.missing)} "
                f"{'is' if len(result.missing) == 1 else 'are'} missing ({result.basis}).",
                paths=result.missing,
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
    best = newest_restorable_batch(ctx.snapshot.state)
    if best is None or best >= k:
        return
    yield Finding(
        "CD307",
        f"the newest batch whose state loads in every partition is batch {best} (state version {best + 1}); "
        f"the newest commit is commits/{k}.",
        batch_ids=(best,),
        details=(("batch", best), ("latest_commit", k)),
    )
