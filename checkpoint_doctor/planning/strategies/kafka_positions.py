"""Move a Kafka source's positions to where the topic still holds records (CD207), with consent.

What ``failOnDataLoss=false`` does silently, made explicit, counted and undoable. The first batch
after a restart starts from the Kafka source's line in the newest offsets file when that batch is
committed (``MicroBatchExecution.populateStartOffsets``: ``committedOffsets ++= availableOffsets``
then a new batch; a v2 source such as ``KafkaMicroBatchStream`` gets no ``getBatch`` replay), and
``KafkaMicroBatchStream.planInputPartitions`` checks exactly that line against the topic
(``KafkaOffsetReaderAdmin.getOffsetRangesFromResolvedOffsets``). So the plan rewrites that one line
and keeps every other byte of the file (the metadata line with the pinned confs, the other
sources): nothing in the commit log or the state refers to the positions (``commits/N`` holds the
watermark only), so no batch is re-run and no state changes. Per partition:

- a position below the topic's earliest offset (retention or ``deleteRecords`` removed records
  the query had not read): moved to the earliest; the records in between are skipped, counted;
- a position above the latest offset (the topic was deleted and recreated, or truncated): moved to
  the earliest of the topic as it is now, so the new topic is read from its beginning; what the old
  topic held after the position is gone and cannot be counted;
- a partition the topic no longer has: dropped from the line (Spark only reads partitions the
  topic lists); its unread records cannot be counted either;
- a partition added since that does not start at offset 0 (``Added partition ... starts from N
  instead of 0``): added to the line at its earliest offset; records 0..N-1 are skipped, counted.

- once a partition is gone or above the latest offset, the topic is proven deleted and recreated
  (Kafka never removes a partition; a log truncated below a position the broker acknowledged is a
  new log), so every other partition of it is reconsidered too (issue 32 item 5: two repairs kept
  positions inside the new topic and skipped 30 records they did not name): a position inside the new
  topic is moved to its earliest offset, so the new topic's records below it are read, not skipped,
  unless the record just below it was written no later than the batch that planned the position
  (``KafkaLive.below``, CD214's evidence): that partition still holds what the checkpoint read.

A topic that is gone altogether has no position to move to: the topic must be recreated first,
unless the job (``--job``) subscribes by pattern: ``SubscribePatternStrategy`` no longer lists a
deleted topic, so its partitions are dropped from the line, named as data loss (issue 32 item 1).
The positions come from the broker (``diagnose``'s ``--kafka-bootstrap-servers``); the plan's
:class:`~checkpoint_doctor.planning.preconditions.KafkaPositionsPre` checks them again at apply time.
A batch that is re-run (the newest offsets uncommitted) reads a range its log already fixed: not
planned here (CD207 judges new batches only).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import DiagnoseOptions, Finding
from checkpoint_doctor.diagnosis.sources.kafka import CLOCK_SLACK_MS, job_subscription
from checkpoint_doctor.diagnosis.sources.kafka_positions import ASSIGN, PATTERN, LivePositions, Subscription
from checkpoint_doctor.model import KafkaLive, KafkaOffset
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine, unavailable
from checkpoint_doctor.planning.preconditions import KafkaPositionsPre
from checkpoint_doctor.planning.steps import Step, WriteStep
from checkpoint_doctor.reading.positions import kafka_sources
from checkpoint_doctor.reading.snapshot import whole_content

NAME = "kafka-positions"
FAMILY = "kafka-positions"

#: Why a partition's position moves.
BELOW = "below-earliest"
ABOVE = "above-latest"
GONE = "partition-gone"
TOPIC_GONE = "topic-gone"
ADDED = "added-not-at-0"
RECREATED = "recreated"
NEGATIVE = "negative"


@dataclass(frozen=True)
class Move:
    """One partition's change: ``old`` None for an added partition, ``new`` None for a dropped one;
    ``skipped`` the records passed over (None: not known)."""

    topic: str
    partition: int
    old: int | None
    new: int | None
    why: str
    skipped: int | None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class SourceMove:
    """The moves of one Kafka source line and the line's new offsets JSON."""

    source: int
    moves: tuple[Move, ...]
    json: str
    #: Every partition of the source's topics after the move: (topic, partition, position, earliest
    #: the plan relies on or None), what the apply-time precondition checks.
    positions: tuple[tuple[str, int, int, int | None], ...]


def _recreated(
    off: KafkaOffset, live: LivePositions, moves: list[Move], kept_log: frozenset[tuple[str, int]]
) -> list[Move]:
    """The other partitions of a topic ``moves`` prove recreated (a partition gone or above its
    latest): a position inside the new topic moves to its earliest offset (issue 32 item 5)."""
    recreated = {m.topic for m in moves if m.why in (ABOVE, GONE)}
    out = []
    for topic, part, offset in off.partitions:
        parts = live.get(topic) or {}
        if topic not in recreated or part not in parts or (topic, part) in kept_log:
            continue
        earliest, latest = parts[part]
        if earliest < offset <= latest:
            # the new topic's records earliest..offset-1: read, where keeping the position skipped them
            out.append(Move(topic, part, offset, earliest, RECREATED, 0))
    return out


def moves_of(
    off: KafkaOffset,
    live: LivePositions,
    sub: Subscription | None = None,
    kept_log: frozenset[tuple[str, int]] = frozenset(),
) -> tuple[Move, ...] | str:
    """Return the moves that bring ``off`` inside the topics' live positions, or why none can.

    ``sub`` is the source's subscription when the job names it (``--job``), else None: a deleted
    topic's partitions are dropped only for a ``subscribePattern`` query, whose strategy no longer
    lists them (``SubscribePatternStrategy``; ``subscribe`` and ``assign`` describe the topic by name
    and fail on it whatever the offsets hold), and an ``assign`` query never reads an added partition
    (``AssignStrategy`` filters to its partitions), so none is added to its line.

    ``kept_log``: partitions whose record just below the position was written no later than the
    batch that planned it (the log the checkpoint read): never reconsidered as recreated.
    """
    out: list[Move] = []
    pattern = sub is not None and sub.shape == PATTERN
    for topic in sorted({t for t, _, _ in off.partitions}):
        if live.get(topic) is None and not pattern:
            how = (
                f"a {sub.shape} query describes it by name and fails on it whatever its offsets say"
                if sub is not None
                else "a subscribe or assign query describes it by name and fails on it whatever its offsets "
                "say; a subscribePattern query no longer lists it: name the query with --job MODULE:FUNCTION "
                "to plan dropping its partitions"
            )
            return (
                f"topic {topic} is gone from the broker: no position to move to ({how}); recreate the topic, "
                "then plan again (its partitions are then read from their earliest offset)"
            )
    for topic, part, offset in off.partitions:
        if live.get(topic) is None:
            out.append(Move(topic, part, offset, None, TOPIC_GONE, None))
            continue
        parts = live[topic] or {}
        if part not in parts:
            out.append(Move(topic, part, offset, None, GONE, None))
            continue
        earliest, latest = parts[part]
        if offset < 0:
            # not a position (CD211): moved to the earliest, nothing counted (a negative offset
            # counted 9223372036854775826 records skipped, issue 31 item 13)
            out.append(Move(topic, part, offset, earliest, NEGATIVE, None))
        elif offset > latest:
            out.append(Move(topic, part, offset, earliest, ABOVE, None))
        elif offset < earliest:
            out.append(Move(topic, part, offset, earliest, BELOW, earliest - offset))
    out += _recreated(off, live, out, kept_log)
    known = off.topic_partitions()
    if sub is not None and sub.shape == ASSIGN:
        return tuple(out)
    for topic in sorted({t for t, _, _ in off.partitions}):
        for part, (earliest, _) in sorted((live.get(topic) or {}).items()):
            if (topic, part) not in known and earliest != 0:
                out.append(Move(topic, part, None, earliest, ADDED, earliest))
    order = {(t, p): i for i, (t, p, _) in enumerate(off.partitions)}
    return tuple(sorted(out, key=lambda m: (m.old is None, order.get((m.topic, m.partition), 0))))


def _new_json(raw: str, moves: tuple[Move, ...]) -> str:
    """The offsets JSON with the moves made, the partitions kept in the order Spark wrote them."""
    data: dict[str, dict[str, int]] = json.loads(raw)
    for m in moves:
        parts = data.setdefault(m.topic, {})
        if m.new is None:
            parts.pop(str(m.partition), None)
        else:
            parts[str(m.partition)] = m.new
    # a topic whose every partition was dropped (a deleted topic of a pattern query) leaves the line,
    # as KafkaSourceOffset writes only the partitions it holds (JsonUtils.partitionOffsets)
    data = {t: parts for t, parts in data.items() if parts}
    return json.dumps(data, separators=(",", ":"))


def _positions(
    off: KafkaOffset, moves: tuple[Move, ...], live: LivePositions
) -> tuple[tuple[str, int, int, int | None], ...]:
    moved = {(m.topic, m.partition): m for m in moves}
    kept = {(t, p): o for t, p, o in off.partitions}
    out: list[tuple[str, int, int, int | None]] = []
    for topic in sorted({t for t, _, _ in off.partitions}):
        for part, (earliest, _) in sorted((live.get(topic) or {}).items()):
            m = moved.get((topic, part))
            if m is not None and m.new is not None:
                out.append((topic, part, m.new, earliest))
            elif (topic, part) in kept:
                out.append((topic, part, kept[(topic, part)], None))
            else:  # a new partition Spark reads from 0 itself: it must still start there
                out.append((topic, part, 0, 0))
    return tuple(out)


def kept_logs(off: KafkaOffset, live: KafkaLive, planned_ms: int | None) -> frozenset[tuple[str, int]]:
    """Return the partitions whose record just below the position was written no later than the batch
    that planned it (``planned_ms`` plus the clock slack CD214 allows): the log the checkpoint read."""
    if planned_ms is None or planned_ms <= 0:
        return frozenset()
    below = {(t, p, o): ts for t, p, o, ts in live.below}
    return frozenset(
        (t, p)
        for t, p, o in off.partitions
        if (ts := below.get((t, p, o - 1))) is not None and 0 <= ts <= planned_ms + CLOCK_SLACK_MS
    )


def source_moves(
    sources: Mapping[int, tuple[str, KafkaOffset]],
    live: KafkaLive,
    opts: DiagnoseOptions | None = None,
    planned_ms: int | None = None,
) -> list[SourceMove] | str:
    """Return the moves of each Kafka source (``{index: (raw JSON, offsets)}``) that needs one
    (``planned_ms``: the batchTimestampMs of the offsets file they come from)."""
    positions = live.live
    out = []
    for n, (raw, off) in sorted(sources.items()):
        sub = job_subscription(opts, n) if opts is not None else None
        moves = moves_of(off, positions, sub, kept_logs(off, live, planned_ms))
        if isinstance(moves, str):
            return moves
        if moves:
            out.append(SourceMove(n, moves, _new_json(raw, moves), _positions(off, moves, positions)))
    return out


#: Runs of partitions a plan's texts name before "and N more" (each run is partitions moved alike:
#: 100,000 partitions moved alike are one; the write step and the precondition keep every one).
SHOWN_RUNS = 50


@dataclass(frozen=True)
class _Run:
    """Consecutive partitions of a topic moved alike (same reason, old and new position)."""

    first: Move
    last: int
    count: int

    @property
    def name(self) -> str:
        m = self.first
        return m.name if self.count == 1 else f"{m.topic}-{m.partition}..{self.last}"

    @property
    def skipped(self) -> int | None:
        return None if self.first.skipped is None else self.first.skipped * self.count


def _runs(moves: tuple[Move, ...]) -> list[_Run]:
    """The moves as runs; each partition named alone while they are few enough to name."""
    out: list[_Run] = []
    for m in moves:
        if out and len(moves) > SHOWN_RUNS:
            run = out[-1]
            f = run.first
            if (f.topic, f.why, f.old, f.new, f.skipped, run.last + 1) == (
                m.topic,
                m.why,
                m.old,
                m.new,
                m.skipped,
                m.partition,
            ):
                out[-1] = _Run(f, m.partition, run.count + 1)
                continue
        out.append(_Run(m, m.partition, 1))
    return out


def _bounded(words: list[str], runs: list[_Run], sep: str) -> str:
    """The first SHOWN_RUNS texts, then how many partitions (and counted records) the rest hold."""
    if len(words) <= SHOWN_RUNS:
        return sep.join(words)
    rest = runs[SHOWN_RUNS:]
    parts = sum(r.count for r in rest)
    counted = sum(r.skipped or 0 for r in rest)
    tail = f", {counted} records skipped" if counted else ""
    return sep.join(words[:SHOWN_RUNS]) + f"{sep}and {parts} more partitions{tail}"


def _loss(sm: SourceMove) -> str:
    runs = _runs(sm.moves)
    parts = []
    for run in runs:
        m, name = run.first, run.name
        each = " each" if run.count > 1 else ""
        if m.why == BELOW:
            parts.append(f"{name}: {m.skipped} records skipped{each} ({m.old}..{m.new - 1} deleted)")  # type: ignore[operator]
        elif m.why == ADDED:
            parts.append(
                f"{name}: {m.skipped} records skipped{each} (0..{m.new - 1} deleted, added partition)"  # type: ignore[operator]
            )
        elif m.why == NEGATIVE:
            parts.append(
                f"{name}: offset {m.old} is not a position (CD211): read from the earliest {m.new}; "
                "what the query had not read is unknown, not counted"
            )
        elif m.why == RECREATED:
            parts.append(
                f"{name}: 0 records of the new topic skipped{each} (the topic was recreated: a partition "
                f"of it gone or below its position; read from its earliest {m.new}, so its records "
                f"{m.new}..{m.old - 1} are read, which the position {m.old} kept would skip); what the "  # type: ignore[operator]
                f"old topic held after {m.old} is gone, not counted"
            )
        elif m.why == ABOVE:
            parts.append(
                f"{name}: position {m.old} is above the topic's latest offset (deleted and recreated?): read "
                f"from its earliest {m.new}; what the old topic held after {m.old} is gone, not counted"
            )
        elif m.why == TOPIC_GONE:
            parts.append(
                f"{name}: topic deleted (the subscribePattern no longer lists it): its records from offset "
                f"{m.old} on are never read (how many is not known: the broker no longer holds them)"
            )
        else:
            parts.append(f"{name}: partition gone, its records after {m.old} are not read (not counted)")
    counted = sum(m.skipped or 0 for m in sm.moves)
    total = f"{counted} records skipped in all" if counted else "no deleted record counted"
    return f"Kafka source {sm.source}: {_bounded(parts, runs, '; ')} ({total})"


def _note(sm: SourceMove) -> str:
    runs = _runs(sm.moves)
    words = []
    for run in runs:
        m = run.first
        if m.new is None:
            words.append(f"{run.name} dropped")
        elif m.old is None:
            words.append(f"{run.name} added at {m.new}")
        else:
            words.append(f"{run.name} {m.old} -> {m.new}")
    return f"Kafka source {sm.source}: {_bounded(words, runs, ', ')}"


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Rewrite the Kafka lines of the offsets file the next batch starts from."""
    live = ctx.options.diagnose.kafka
    path = finding.paths[0] if finding.paths else ""
    raw = whole_content(ctx.snapshot.raw, path)
    batch = int(path.split("/")[1]) if path.startswith("offsets/") and path[8:].isdigit() else None
    entry = ctx.snapshot.offsets.get(batch) if batch is not None else None
    if live is None or raw is None or entry is None or entry.record is None:
        return []
    record = entry.record
    sources = {n: (record.sources[n].raw or "", off) for n, off in kafka_sources(record.sources)}
    meta = record.metadata
    planned = meta.batch_timestamp_ms if meta is not None else None
    moved = source_moves(sources, live, ctx.options.diagnose, planned)
    if isinstance(moved, str):
        return [unavailable(FAMILY, finding.code, moved)]
    if not moved:
        return []
    lines = raw.decode("utf-8").split("\n")
    for sm in moved:
        at = 2 + sm.source  # "v1", the metadata line, then one line per source
        name = record.sources[sm.source].name
        lines[at] = f"{name}:{sm.json}" if record.version >= 2 else sm.json
    notes = "; ".join(_note(sm) for sm in moved)
    steps: list[Step] = [*quarantine(ctx.snapshot, path, "its Kafka positions are rewritten")]
    steps.append(
        WriteStep.of_bytes(
            path,
            "\n".join(lines).encode("utf-8"),
            # the broker is named by the precondition: the steps stay the same whichever address reaches it
            f"Kafka positions moved inside the topic: {notes}; the other lines kept",
        )
    )
    gone = tuple(sorted({m.topic for sm in moved for m in sm.moves if m.why == TOPIC_GONE}))
    hold = KafkaPositionsPre(
        bootstrap=live.bootstrap, partitions=tuple(p for sm in moved for p in sm.positions), gone_topics=gone
    )
    loss = "; ".join(_loss(sm) for sm in moved)
    return [Option(FAMILY, tuple(steps), (finding.code,), note=f"{path}: {notes}", loss=loss, holds=(hold,))]


STRATEGY = Strategy(NAME, FAMILY, (Code.KAFKA_POSITIONS_GONE,), propose)
