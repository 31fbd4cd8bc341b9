"""Re-plan an uncommitted Kafka batch from the earliest offsets the broker holds (CD235), with consent.

``offsets/N`` without ``commits/N`` is re-run with the range ``offsets/N-1``..``offsets/N`` logged
(``MicroBatchExecution.populateStartOffsets``: ``committedOffsets`` from ``offsets/N-1``,
``availableOffsets`` from ``offsets/N``), and ``KafkaMicroBatchStream.planInputPartitions`` takes both
from the log; the tasks then fail on records retention deleted (``KafkaDataConsumer.get``). So the plan
rewrites the Kafka source's line of ``offsets/N-1`` (the batch's start) to each partition's earliest
offset, and where retention went past the batch's end, the line of ``offsets/N`` too (start and end
at the earliest: the partition reads nothing in the re-run, and the next batch starts where records
are). Every other byte of both files is kept (the metadata line, the other sources); nothing in the
commit log or the state refers to the positions. The records skipped are counted per partition
(``earliest - start``): what ``failOnDataLoss=false`` skips silently, made explicit and undoable.
Batch 0 has no ``offsets/-1`` (it starts from ``sources/<n>/0``): not planned here.

The second option re-plans the batch instead: ``offsets/N`` quarantined (Spark plans batch N anew
from ``offsets/N-1`` to the latest offsets, a new batch, not a re-run) and ``offsets/N-1``'s positions
moved inside the topic as :mod:`~checkpoint_doctor.planning.strategies.kafka_positions` moves them.
It is the way back where any re-run fails (Spark 4.1's connector, SPARK-55271: CD290), ranked after
the first because the batch's logged range is not kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.model import KafkaLive, KafkaOffset, OffsetSeq
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine, unavailable
from checkpoint_doctor.planning.preconditions import KafkaPositionsPre
from checkpoint_doctor.planning.steps import Step, WriteStep
from checkpoint_doctor.planning.strategies.kafka_positions import (
    FAMILY,
    SHOWN_RUNS,
    _loss,
    _note,
    source_moves,
)
from checkpoint_doctor.reading.positions import kafka_sources
from checkpoint_doctor.reading.snapshot import whole_content

NAME = "kafka-rerun-range"


@dataclass(frozen=True)
class RangeMove:
    """One partition of the re-run batch moved to the earliest offset: ``start`` and ``end`` as
    logged, ``earliest`` the new start (and the new end where it is past the logged one)."""

    topic: str
    partition: int
    start: int
    end: int
    earliest: int

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def skipped(self) -> int:
        return self.earliest - self.start

    @property
    def earliest_last(self) -> int:
        """The last offset deleted below the earliest."""
        return self.earliest - 1


def range_moves(start: KafkaOffset, end: KafkaOffset, live: KafkaLive) -> list[RangeMove]:
    """Return the partitions whose logged range starts below the topic's earliest offset."""
    positions = live.live
    begin = {(t, p): o for t, p, o in start.partitions}
    out = []
    for topic, part, until in end.partitions:
        pos = (positions.get(topic) or {}).get(part)
        frm = begin.get((topic, part))
        if pos is None or frm is None or frm < 0 or frm >= pos[0]:
            continue
        out.append(RangeMove(topic, part, frm, until, pos[0]))
    return out


def _rewrite(raw: str, values: dict[tuple[str, int], int]) -> str:
    data: dict[str, dict[str, int]] = json.loads(raw)
    for (topic, part), value in values.items():
        data.setdefault(topic, {})[str(part)] = value
    return json.dumps(data, separators=(",", ":"))


def _write(
    ctx: PlanContext, path: str, record: OffsetSeq, new: dict[int, dict[tuple[str, int], int]], why: str
) -> list[Step]:
    raw = whole_content(ctx.snapshot.raw, path)
    if raw is None:
        return []
    lines = raw.decode("utf-8").split("\n")
    for n, values in sorted(new.items()):
        source = record.sources[n]
        text = _rewrite(source.raw or "", values)
        lines[2 + n] = f"{source.name}:{text}" if record.version >= 2 else text
    return [
        *quarantine(ctx.snapshot, path, "its Kafka positions are rewritten"),
        WriteStep.of_bytes(path, "\n".join(lines).encode("utf-8"), why),
    ]


def _words(moves: list[RangeMove], each: str) -> str:
    shown = [each.format(m=m) for m in moves[:SHOWN_RUNS]]
    more = f", and {len(moves) - SHOWN_RUNS} more partitions" if len(moves) > SHOWN_RUNS else ""
    return ", ".join(shown) + more


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Move the re-run batch's start (and end, past it) to the earliest offsets."""
    live = ctx.options.diagnose.kafka
    batch = finding.batch_ids[0] if finding.batch_ids else None
    if live is None or batch is None:
        return []
    if batch == 0:
        return [
            unavailable(
                FAMILY,
                finding.code,
                "batch 0 starts from the initial offsets in sources/<n>/0, not from an offsets file",
            )
        ]
    end_entry, start_entry = ctx.snapshot.offsets.get(batch), ctx.snapshot.offsets.get(batch - 1)
    if end_entry is None or end_entry.record is None or start_entry is None or start_entry.record is None:
        return []
    begin = dict(kafka_sources(start_entry.record.sources))
    starts: dict[int, dict[tuple[str, int], int]] = {}
    ends: dict[int, dict[tuple[str, int], int]] = {}
    moved: dict[int, list[RangeMove]] = {}
    partitions: list[tuple[str, int, int, int | None]] = []
    for n, end in kafka_sources(end_entry.record.sources):
        frm = begin.get(n)
        if frm is None:
            continue
        moves = range_moves(frm, end, live)
        if not moves:
            continue
        moved[n] = moves
        starts[n] = {(m.topic, m.partition): m.earliest for m in moves}
        past = {(m.topic, m.partition): m.earliest for m in moves if m.earliest > m.end}
        if past:
            ends[n] = past
        kept = {(t, p): o for t, p, o in frm.partitions}
        by = {(m.topic, m.partition): m for m in moves}
        for topic in sorted({t for t, _, _ in end.partitions}):
            for part, (earliest, _) in sorted((live.live.get(topic) or {}).items()):
                m = by.get((topic, part))
                if m is not None:
                    partitions.append((topic, part, m.earliest, earliest))
                elif (topic, part) in kept:
                    partitions.append((topic, part, kept[(topic, part)], None))
    if not moved:
        return []
    notes = "; ".join(
        f"Kafka source {n}: " + _words(ms, "{m.name} {m.start} -> {m.earliest}")
        for n, ms in sorted(moved.items())
    )
    start_path, end_path = start_entry.file.path, end_entry.file.path
    steps = _write(
        ctx,
        start_path,
        start_entry.record,
        starts,
        f"batch {batch}'s Kafka start moved to the earliest offsets: {notes}; the other lines kept",
    )
    if ends:
        ended = "; ".join(
            f"Kafka source {n}: " + ", ".join(f"{t}-{p} -> {o}" for (t, p), o in sorted(v.items()))
            for n, v in sorted(ends.items())
        )
        steps += _write(
            ctx,
            end_path,
            end_entry.record,
            ends,
            f"batch {batch}'s Kafka end moved to the earliest offsets retention left past it: {ended}; "
            "the other lines kept",
        )
    if not steps:
        return []
    loss = "; ".join(
        f"Kafka source {n}: batch {batch} re-runs from the earliest offsets: "
        + _words(
            ms,
            "{m.name}: {m.skipped} records skipped ({m.start}..{m.earliest_last} deleted)",
        )
        + f" ({sum(m.skipped for m in ms)} records skipped in all)"
        for n, ms in sorted(moved.items())
    )
    hold = KafkaPositionsPre(bootstrap=live.bootstrap, partitions=tuple(partitions))
    first = Option(
        FAMILY, tuple(steps), (finding.code,), note=f"{start_path}: {notes}", loss=loss, holds=(hold,)
    )
    return [first, *_replan(finding, ctx, live, batch, start_entry.record, start_path, end_path)]


def _replan(
    finding: Finding,
    ctx: PlanContext,
    live: KafkaLive,
    batch: int,
    record: OffsetSeq,
    start_path: str,
    end_path: str,
) -> list[Option]:
    """Quarantine ``offsets/N`` and move ``offsets/N-1``'s positions inside the topic: batch N is
    planned anew (no re-run, so no SPARK-55271 on 4.1)."""
    if ctx.snapshot.commits.get(batch) is not None:
        return []
    sources = {n: (record.sources[n].raw or "", off) for n, off in kafka_sources(record.sources)}
    moved = source_moves(sources, live)
    if isinstance(moved, str) or not moved:
        return []
    steps = list(quarantine(ctx.snapshot, end_path, f"Spark re-plans batch {batch} from {start_path}"))
    steps += _write(
        ctx,
        start_path,
        record,
        {sm.source: _values(sm.json) for sm in moved},
        "Kafka positions moved inside the topic: "
        + "; ".join(_note(sm) for sm in moved)
        + "; the other lines kept",
    )
    hold = KafkaPositionsPre(
        bootstrap=live.bootstrap, partitions=tuple(p for sm in moved for p in sm.positions)
    )
    return [
        Option(
            FAMILY,
            tuple(steps),
            (finding.code,),
            note=f"Spark re-plans batch {batch}: " + "; ".join(_note(sm) for sm in moved),
            loss="; ".join(_loss(sm) for sm in moved),
            holds=(hold,),
        )
    ]


def _values(text: str) -> dict[tuple[str, int], int]:
    return {(t, int(p)): o for t, parts in json.loads(text).items() for p, o in parts.items()}


STRATEGY = Strategy(NAME, FAMILY, (Code.KAFKA_RERUN_RANGE_GONE,), propose)
