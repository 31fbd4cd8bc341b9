"""Checks on the per-source offsets of the newest batches. Pure."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.model import Finding, RestartPrediction
from checkpoint_doctor.model import DeltaOffset, KafkaOffset


def check_source_count(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD201: the newest offsets file has a different number of sources than the query."""
    wanted = ctx.options.sources
    entry = ctx.offsets(ctx.latest)
    if wanted is None or entry is None or entry.record is None or entry.record.version != 1:
        return
    have = len(entry.record.sources)
    if have != wanted:
        yield Finding(
            Code.SOURCE_COUNT_MISMATCH,
            f"{entry.file.path} has {have} source line(s) but the query has {wanted} source(s).",
            paths=(entry.file.path,),
            batch_ids=(entry.batch_id,),
            details=(("in_checkpoint", have), ("in_query", wanted)),
        )


def _read_offsets(ctx: Context) -> list:
    return [e for e in ctx.snapshot.offsets.entries if e.record is not None]


def check_void_sources(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD202: a ``-`` source line in the batch to re-run for a source that had an offset before."""
    if not prediction.rerun or prediction.end_from is None:
        return
    entry = ctx.snapshot.offsets.get(int(prediction.end_from.rpartition("/")[2]))
    if entry is None or entry.record is None:
        return
    earlier = [e for e in _read_offsets(ctx) if e.batch_id < entry.batch_id]
    for src in entry.record.sources:
        if src.raw is not None:
            continue
        had = next(
            (
                e
                for e in reversed(earlier)
                if src.index < len(e.record.sources) and e.record.sources[src.index].raw is not None
            ),
            None,
        )
        if had is not None:
            yield Finding(
                Code.SOURCE_OFFSET_VOID,
                f"{entry.file.path} has no offset ('-') for source {src.index}, which had one in {had.file.path}.",
                paths=(entry.file.path, had.file.path),
                batch_ids=(entry.batch_id,),
                details=(("source", src.index),),
            )


def check_source_identity(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD203 Kafka partitions appear/vanish; CD204 a Delta table id changes, between read batches."""
    entries = _read_offsets(ctx)
    for prev, cur in itertools.pairwise(entries):
        for a, b in zip(prev.record.sources, cur.record.sources, strict=False):
            if isinstance(a.decoded, KafkaOffset) and isinstance(b.decoded, KafkaOffset):
                before, after = a.decoded.topic_partitions(), b.decoded.topic_partitions()
                if before != after:
                    gone = sorted(before - after)
                    new = sorted(after - before)
                    parts = []
                    if new:
                        parts.append("appear: " + ", ".join(f"{t}-{p}" for t, p in new))
                    if gone:
                        parts.append("vanish: " + ", ".join(f"{t}-{p}" for t, p in gone))
                    yield Finding(
                        Code.KAFKA_PARTITIONS_CHANGED,
                        f"Kafka partitions of source {b.index} change between {prev.file.path} and "
                        f"{cur.file.path} ({'; '.join(parts)}).",
                        paths=(prev.file.path, cur.file.path),
                        batch_ids=(prev.batch_id, cur.batch_id),
                        details=(("appeared", len(new)), ("vanished", len(gone))),
                    )
            if (
                isinstance(a.decoded, DeltaOffset)
                and isinstance(b.decoded, DeltaOffset)
                and a.decoded.reservoir_id != b.decoded.reservoir_id
            ):
                yield Finding(
                    Code.DELTA_TABLE_CHANGED,
                    f"Delta source {b.index} reads table {b.decoded.reservoir_id} in {cur.file.path} but "
                    f"table {a.decoded.reservoir_id} in {prev.file.path}.",
                    paths=(prev.file.path, cur.file.path),
                    batch_ids=(prev.batch_id, cur.batch_id),
                )
