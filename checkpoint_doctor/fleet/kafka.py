"""An audit's Kafka sources: live positions from one broker connection, and the retention countdowns.

:class:`AuditKafka` is the I/O edge an audit shares between its checkpoints: one
:class:`~checkpoint_doctor.world.kafka.KafkaReader` (one admin client, each topic described once,
requests batched per checkpoint, every call bounded in time). A broker that fails makes the
checkpoint asking unreadable, with the reason, and the audit goes on (the reader then fails the
next ones at once instead of waiting for its timeout again).

The rest is pure: :func:`kafka_part` is what a record says about its Kafka sources,
:func:`retention_rows` the countdowns of an audit sorted soonest first (text, HTML and metrics).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from checkpoint_doctor.diagnosis.sources.kafka import FLAG, retention_countdown, topics_of
from checkpoint_doctor.diagnosis.sources.kafka_retention import ORDER, TIME, Countdown
from checkpoint_doctor.fleet.records import CheckpointRecord, KafkaPart, PartitionWindow, Record
from checkpoint_doctor.model import KafkaLive, KafkaOffset
from checkpoint_doctor.reading.positions import kafka_sources, newest_sources, unread_offsets
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot

NOT_CHECKED = (
    f"Kafka positions not checked: pass {FLAG} (and --kafka-option KEY=VALUE for client settings) to "
    "compare the checkpoint's offsets with the broker's and count down to retention"
)


class AuditKafka:
    """The broker connection of one audit (``--kafka-bootstrap-servers``)."""

    def __init__(self, bootstrap: str, options: Mapping[str, str] | None = None) -> None:
        from checkpoint_doctor.world.kafka import open_reader

        self.bootstrap = bootstrap
        self.reader = open_reader(bootstrap, options)

    def live_for(self, snapshot: CheckpointSnapshot) -> KafkaLive | None:
        """Return the live positions of the checkpoint's Kafka topics (None: it reads no Kafka).

        Raises:
            StorageError: the broker could not be reached, the login failed, a topic is not authorized.
        """
        offsets = [off for _, off in kafka_sources(newest_sources(snapshot))]
        offsets += [off for _, off in unread_offsets(snapshot)]
        if not offsets:
            return None
        return self.reader.read(offsets)

    def close(self) -> None:
        self.reader.close()


def kafka_part(snapshot: CheckpointSnapshot, live: KafkaLive | None, now_ms: int | None) -> KafkaPart | None:
    """Return the record's ``kafka`` part (None when the checkpoint reads no Kafka topic). Pure."""
    topics = tuple(topics_of(newest_sources(snapshot)))
    if not topics:
        return None
    if live is None:
        return KafkaPart(topics=topics, note=NOT_CHECKED)
    return KafkaPart(
        topics=topics,
        bootstrap=live.bootstrap,
        retention=retention_countdown(snapshot, live, now_ms),
        partitions=partition_windows([off for _, off in unread_offsets(snapshot)], live),
    )


def partition_windows(offsets: Sequence[KafkaOffset], live: KafkaLive) -> tuple[PartitionWindow, ...]:
    """Return the retention window of every partition whose next offset is still held and below
    the latest (its records unread), on a topic whose cleanup.policy deletes by retention.ms, with
    the timestamp of the record at that offset known: soonest deadline first. Pure. The same rules
    as the countdown (``kafka_retention.countdown``), for every partition rather than the first."""
    positions = live.live
    retention = {r.topic: r for r in live.retention}
    heads = {(t, p, o): ts for t, p, o, ts in live.heads}
    found: dict[tuple[str, int], PartitionWindow] = {}
    for offset in offsets:
        for topic, part, at in offset.partitions:
            pos = (positions.get(topic) or {}).get(part)
            conf = retention.get(topic)
            ts = heads.get((topic, part, at))
            if pos is None or conf is None or ts is None or ts < 0:
                continue
            earliest, latest = pos
            if not earliest <= at < latest or conf.retention_ms < 0:
                continue
            if "delete" not in conf.cleanup_policy.split(","):
                continue
            window = PartitionWindow(topic, part, at, ts, ts + conf.retention_ms)
            # The oldest unread record of a partition read by two offsets (newest and unread) counts.
            if (topic, part) not in found or window.deadline_ms < found[(topic, part)].deadline_ms:
                found[(topic, part)] = window
    return tuple(sorted(found.values(), key=lambda w: (w.deadline_ms, w.topic, w.partition)))


@dataclass(frozen=True)
class RetentionRow:
    """One checkpoint's retention countdown (text, HTML and metrics)."""

    url: str
    countdown: Countdown

    @property
    def bound(self) -> str:
        return self.countdown.bound

    @property
    def text(self) -> str:
        return self.countdown.text

    @property
    def remaining_s(self) -> float | None:
        """Seconds left (negative: overdue; None: no deadline)."""
        left = self.countdown.remaining_ms
        return None if left is None else left / 1000


def retention_rows(records: Iterable[Record]) -> list[RetentionRow]:
    """Return the countdown of each checkpoint whose Kafka positions were checked, soonest first
    (records already lost, then by deadline, then the untimed bounds). Pure."""
    rows = [
        RetentionRow(r.url, r.kafka.retention)
        for r in records
        if isinstance(r, CheckpointRecord) and r.kafka is not None and r.kafka.retention is not None
    ]
    return sorted(rows, key=lambda r: (ORDER.index(r.bound), r.countdown.deadline_ms or 0, r.url))


def render_retention(rows: Sequence[RetentionRow]) -> str:
    """Return the text section of the countdowns (empty without any). Pure."""
    if not rows:
        return ""
    lines = ["Kafka retention, soonest first:"]
    for row in rows:
        lines.append(f"  {row.url}: {row.text}")
    return "\n".join(lines)


def not_checked_count(records: Iterable[Record]) -> int:
    """Return how many checkpoints read Kafka topics whose positions were not checked. Pure."""
    return sum(
        1 for r in records if isinstance(r, CheckpointRecord) and r.kafka is not None and not r.kafka.checked
    )


def timed(row: RetentionRow) -> bool:
    """Whether a countdown row has a deadline (``retention.ms``)."""
    return bool(row.bound == TIME)
