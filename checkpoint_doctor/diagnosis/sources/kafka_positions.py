"""What a Kafka source does on restart, from the checkpoint's next offsets and the topic's live positions.

Pure: takes the last offsets-log line's :class:`KafkaOffset` and, per topic, ``{partition: (earliest,
latest)}`` (``None`` when the broker does not know the topic), returns the restart in Spark's words on
a line. The order of checks is the connector's (``kafka010/KafkaOffsetReaderAdmin.getOffsetRangesFromResolvedOffsets``,
called when the first batch after a restart is planned): a new partition must start at 0, a known
partition must still exist, its latest offset must not be below the checkpoint's; a position below
the earliest offset is only seen in the batch's tasks (``consumer/KafkaDataConsumer``). Each
``failOnDataLoss=true`` refusal is ``reportDataLoss``; with ``false`` Spark warns and reads on, and
:attr:`KafkaRestart.rows` says how many records the next batch reads. A topic gone altogether fails
in the Admin client whatever ``failOnDataLoss`` says. Proven by the restarts recorded in
``fixtures/kafka/`` (tests/kafka/test_positions_replay.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace

from checkpoint_doctor.diagnosis.spark_line import SparkError, SparkLine
from checkpoint_doctor.model import KafkaOffset
from checkpoint_doctor.valueclasses import frozen

#: ``{topic: {partition: (earliest, latest)}}``; a topic the broker does not list maps to None.
LivePositions = Mapping[str, Mapping[int, tuple[int, int]] | None]

#: The connector's instruction, appended to every data-loss text (KafkaSourceProvider
#: INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_TRUE on 3.5; kafka-error-conditions.json KAFKA_DATA_LOSS on 4.x).
_LOST = "Some data may have been lost because they are not available in Kafka any more"


@frozen
class PartitionRead:
    """One partition of the next batch: where it starts and ends, and records passed over."""

    topic: str
    partition: int
    start: int
    end: int
    skipped: int

    @property
    def rows(self) -> int:
        return max(0, self.end - max(self.start, self.start + self.skipped))


@frozen
class KafkaRestart:
    """The restart of one Kafka source: refused with ``error``, or the next batch's reads."""

    error: SparkError | None
    reads: tuple[PartitionRead, ...] = ()

    @property
    def rows(self) -> int:
        return sum(r.rows for r in self.reads)

    @property
    def skipped(self) -> int:
        return sum(r.skipped for r in self.reads)


def _tp(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def _data_loss(line: SparkLine, texts: list[tuple[str, str]], phase: str) -> SparkError:
    """The refusal naming one of several partitions: the connector reports the first of a hash set
    (or of the failing tasks), so any of them may be the one named; the others are ``alternatives``.

    4.x raises ``KafkaIllegalStateException`` with the condition ``KAFKA_DATA_LOSS.<sub>``, but the
    query's exception prints its text only (the condition is named at each call) ("... Reason: <sub's text> SQLSTATE: XXKST", recorded on
    4.3.0), so no ``[KAFKA_DATA_LOSS...]`` prefix can be grepped for: ``error_class`` stays None.
    """
    if line.error_classes:
        first, *others = [f"Reason: {t4}" for _, t4 in texts]
        return SparkError(f"{_LOST}; ... {first}", first, phase, None, tuple(others))
    first, *others = [t35 for t35, _ in texts]
    return SparkError(f"{first} {_LOST}", first, phase, None, tuple(others))


#: The connector's subscription shapes (``ConsumerStrategy``), named by the source option that picks each.
SUBSCRIBE, PATTERN, ASSIGN = "subscribe", "subscribePattern", "assign"
SHAPES = (SUBSCRIBE, PATTERN, ASSIGN)


@frozen
class Subscription:
    """How a Kafka source subscribes: ``shape`` one of :data:`SHAPES`, ``value`` the option's value
    as the job gives it (None: not known, taken as exactly what the checkpoint's offsets hold)."""

    shape: str = SUBSCRIBE
    value: str | None = None


#: The default: ``subscribe`` to exactly the topics the checkpoint's offsets hold.
SUBSCRIBED = Subscription()


def _assigned(value: str | None) -> set[tuple[str, int]] | None:
    """The partitions of an ``assign`` value (``{"events":[0,1]}``, ``JsonUtils.partitions``), or None."""
    if value is None:
        return None
    try:
        data = json.loads(value)
        return {(str(t), int(p)) for t, parts in data.items() for p in parts}
    except (ValueError, TypeError, AttributeError):
        return None


def _matches(value: str | None, topic: str) -> bool:
    """Whether a ``subscribePattern`` regex takes ``topic``: ``SubscribePatternStrategy`` lists the
    broker's topics and keeps those where ``topicRegex.findFirstIn(name)`` finds a match (not a whole
    match); a pattern Python cannot read is taken to match the checkpoint's topics."""
    if value is None:
        return True
    try:
        return re.search(value, topic) is not None
    except re.error:
        return True


def _unknown_topic() -> SparkError:
    # SubscribeStrategy and AssignStrategy describe their topics by name (ConsumerStrategy
    # .retrieveAllPartitions: Admin.describeTopics(...).allTopicNames().get()), which fails for a
    # deleted topic whatever failOnDataLoss says (recorded: fixtures/kafka*/ *-topic-deleted).
    text = "UnknownTopicOrPartitionException: This server does not host this topic-partition"
    return SparkError(f"org.apache.kafka.common.errors.{text}", text, "batch")


def predict(
    checkpoint: KafkaOffset,
    live: LivePositions,
    line: SparkLine,
    fail_on_data_loss: bool = True,
    subscription: Subscription = SUBSCRIBED,
) -> KafkaRestart:
    """The restart of a source whose checkpoint holds ``checkpoint`` as next offsets, subscribed as
    ``subscription`` says (``subscribe`` by default: the checkpoint does not say, issue 32 item 1)."""
    known = {(t, p): o for t, p, o in checkpoint.partitions}
    shape = subscription.shape
    topics = {topic for topic, _ in known}
    if shape != PATTERN:
        for topic in sorted(topics):
            if live.get(topic) is None:
                return KafkaRestart(_unknown_topic())
    # Only this source's own topics: ``live`` holds every topic the checkpoint's sources read, and a
    # query with several Kafka sources (a union or a join) has one KafkaMicroBatchStream per source,
    # each listing the partitions of its own subscription (KafkaOffsetReaderAdmin.fetchLatestOffsets);
    # another source's partitions are not "added" to this one (issue 32 item 2). A pattern query lists
    # the topics its regex matches: a deleted one adds no partition, so its partitions are "gone"
    # (SubscribePatternStrategy.assignedTopicPartitions); an assign query keeps its assigned
    # partitions only (AssignStrategy.assignedTopicPartitions: ``.filter(partitions.contains(_))``),
    # so a partition added to its topic is never read and one the topic lost is "gone".
    assigned = _assigned(subscription.value) if shape == ASSIGN else None
    if shape == ASSIGN and assigned is None:
        assigned = set(known)
    now = {
        (t, p): pos
        for t, parts in live.items()
        if parts is not None and t in topics and (shape != PATTERN or _matches(subscription.value, t))
        for p, pos in parts.items()
        if assigned is None or (t, p) in assigned
    }
    new = {tp: pos for tp, pos in sorted(now.items()) if tp not in known}
    # New partitions are read from their earliest offset, which must be 0.
    not_zero = [(_tp(*tp), earliest) for tp, (earliest, _) in new.items() if earliest != 0]
    if not_zero and fail_on_data_loss:
        texts = [
            (
                f"Added partition {tp} starts from {e} instead of 0. Some data may have been missed.",
                f"Added partition {tp} starts from {e} instead of 0.",
            )
            for tp, e in not_zero
        ]
        # KAFKA_DATA_LOSS.ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO
        return KafkaRestart(_data_loss(line, texts, "batch"))
    gone = sorted(tp for tp in known if tp not in now)
    if gone and fail_on_data_loss:
        names = ", ".join(_tp(*tp) for tp in gone)
        texts = [
            (
                f"Set({names}) are gone. Some data may have been missed.",
                f"Partitions Set({names}) have been deleted.",
            )
        ]
        # KAFKA_DATA_LOSS.PARTITIONS_DELETED
        error = _data_loss(line, texts, "batch")
        if len(gone) > 1:
            # Several partitions are named in the order of a Scala set (fromPartitionOffsets.keySet.diff:
            # a hash set past 4 entries; 4.3.0 printed "Set(events-2, events-1, events-0)" for a deleted
            # topic): the sorted set is shown, the log is searched for the words after it.
            search = (
                "have been deleted." if line.error_classes else "are gone. Some data may have been missed."
            )
            error = replace(error, search=search, headline=error.search)
        return KafkaRestart(error)
    kept = {tp: (offset, now[tp]) for tp, offset in sorted(known.items()) if tp in now}
    changed = [(_tp(*tp), offset, latest) for tp, (offset, (_, latest)) in kept.items() if latest < offset]
    if changed and fail_on_data_loss:
        texts = [
            (
                f"Partition {tp}'s offset was changed from {o} to {n}, some data may have been missed.",
                f"Partition {tp} offset was changed from {o} to {n}.",
            )
            for tp, o, n in changed
        ]
        # KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED
        return KafkaRestart(_data_loss(line, texts, "batch"))
    reads = [PartitionRead(t, p, earliest, latest, 0) for (t, p), (earliest, latest) in new.items()]
    for (t, p), (offset, (earliest, latest)) in kept.items():
        if offset < 0:
            # not a position (CD211): the tasks late-bind -2 to the earliest offset
            # (KafkaBatchPartitionReader.resolveRange); no record is counted as skipped
            reads.append(PartitionRead(t, p, earliest, latest, 0))
            continue
        # above the latest (with failOnDataLoss=false): the range is dropped, the partition reads nothing
        skipped = 0 if latest < offset else max(0, min(earliest, latest) - offset)
        reads.append(PartitionRead(t, p, offset, latest, skipped))
    below = [r for r in reads if r.skipped]
    if below and fail_on_data_loss:
        texts = [
            (
                f"Cannot fetch offset {r.start} (GroupId: spark-kafka-source-<uuid>-executor, TopicPartition: {_tp(r.topic, r.partition)}).",
                f"Could not read records in offset [{r.start}, {r.end}) for topic partition {_tp(r.topic, r.partition)}",
            )
            for r in below
        ]
        # KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE
        return KafkaRestart(_data_loss(line, texts, "task"))
    return KafkaRestart(None, tuple(sorted(reads, key=lambda r: (r.topic, r.partition))))


def predict_rerun(
    start: KafkaOffset, end: KafkaOffset, live: LivePositions, line: SparkLine, fail_on_data_loss: bool = True
) -> KafkaRestart | None:
    """The re-run of an uncommitted batch whose logged range is ``[start, end)``, against the broker.

    A re-run batch is planned from its offsets files only: ``KafkaMicroBatchStream.planInputPartitions``
    -> ``KafkaOffsetReaderAdmin.getOffsetRangesFromResolvedOffsets(start, end)`` asks the broker for
    nothing but the earliest offsets of partitions ``end`` holds and ``start`` does not. The topic is
    met in the tasks: ``KafkaDataConsumer.get`` fetches from the range's start and, on an
    ``OffsetOutOfRangeException`` (records deleted below the earliest), ``throwOnDataLoss(offset,
    untilOffset, ...)`` with failOnDataLoss=true (3.5 ``Cannot fetch offset N``; 4.x
    ``KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE`` ``Could not read records in offset [N, until)``),
    or ``getEarliestAvailableOffsetBetween`` and reads on from the earliest with false (issue 32 item 4).

    Returns None when the range cannot be judged here (a topic or partition gone, a partition new in
    ``end``, a range reaching past the latest offset: a topic recreated under the batch), else the
    restart: the reads of the re-run batch with what each partition skips.
    """
    begin = {(t, p): o for t, p, o in start.partitions}
    reads = []
    for topic, part, until in end.partitions:
        parts = live.get(topic)
        pos = None if parts is None else parts.get(part)
        frm = begin.get((topic, part))
        if pos is None or frm is None or frm < 0 or until < 0:
            return None
        earliest, latest = pos
        if frm >= until:
            continue
        if until > latest or earliest > latest:
            return None
        skipped = max(0, min(earliest, until) - frm)
        reads.append(PartitionRead(topic, part, frm, until, skipped))
    below = [r for r in reads if r.skipped]
    if below and fail_on_data_loss:
        texts = [
            (
                f"Cannot fetch offset {r.start} (GroupId: spark-kafka-source-<uuid>-executor, TopicPartition: {_tp(r.topic, r.partition)}).",
                f"Could not read records in offset [{r.start}, {r.end}) for topic partition {_tp(r.topic, r.partition)}",
            )
            for r in below
        ]
        # KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE, in the re-run batch's tasks
        return KafkaRestart(_data_loss(line, texts, "task"))
    return KafkaRestart(None, tuple(sorted(reads, key=lambda r: (r.topic, r.partition))))
