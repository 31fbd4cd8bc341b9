"""Ahead of loss: how long until Kafka's retention deletes records a stopped query has not read. Pure.

Takes a Kafka source's next offsets, the topics' live positions and retention settings, the
timestamp of the record at each position still held (all read at the I/O edge,
``checkpoint_doctor.world.kafka``) and the clock, and returns a :class:`Countdown`.

The broker's rule (``UnifiedLog.deleteRetentionMsBreachedSegments``, run every
``log.retention.check.interval.ms``): a closed segment goes when ``now - segment.largestTimestamp >
retention.ms``; ``deleteRetentionSizeBreachedSegments`` drops the oldest segments while the
partition is larger than ``retention.bytes``. A segment's largest timestamp is at least that of
the record at the checkpoint's position, so that record is deleted *no sooner than* its timestamp
plus ``retention.ms``: the countdown is the earliest moment unread records can be lost (the active
segment is never deleted, so a quiet topic keeps them longer). ``retention.bytes`` depends on how
fast the topic grows, which a single look cannot tell: it is named, not timed. A topic whose
``cleanup.policy`` has no ``delete`` is only compacted (``LogCleaner``): no retention deadline.
"""

from __future__ import annotations

import datetime as dt

from checkpoint_doctor.model import KafkaLive, KafkaOffset, KafkaRetention
from checkpoint_doctor.valueclasses import frozen

#: The bound a countdown follows.
TIME = "retention.ms"
SIZE = "retention.bytes"
UNBOUNDED = "unbounded"
COMPACTED = "compacted"
CAUGHT_UP = "nothing unread"
GONE = "already deleted"
UNKNOWN = "unknown"


@frozen
class Countdown:
    """When retention may first delete a Kafka source's unread records.

    ``bound`` is which rule decides (``retention.ms``, ``retention.bytes``, ``unbounded``,
    ``compacted``, ``nothing unread``, ``already deleted``, ``unknown``); ``deadline_ms`` and
    ``remaining_ms`` are set for ``retention.ms`` only (``remaining_ms`` <= 0: overdue, deleted at
    the broker's next retention check). ``topic``/``partition``/``offset``/``timestamp_ms`` name the
    record that goes first.
    """

    bound: str
    text: str
    deadline_ms: int | None = None
    remaining_ms: int | None = None
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    timestamp_ms: int | None = None
    retention_bytes: int | None = None

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-safe dict."""
        return {
            "bound": self.bound,
            "text": self.text,
            "deadline_ms": self.deadline_ms,
            "remaining_s": None if self.remaining_ms is None else self.remaining_ms / 1000,
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "timestamp_ms": self.timestamp_ms,
            "retention_bytes": self.retention_bytes,
        }


def duration(ms: int) -> str:
    """Return a span as the two largest units (``2 d 3 h``, ``41 min``, ``12 s``)."""
    s = max(0, ms) // 1000
    units = [("d", 86400), ("h", 3600), ("min", 60), ("s", 1)]
    parts: list[str] = []
    for name, size in units:
        if s >= size or (name == "s" and not parts):
            parts.append(f"{s // size} {name}")
            s %= size
        if len(parts) == 2:
            break
    return " ".join(parts)


def utc(ms: int) -> str:
    # Seconds are enough for a deadline (render.documents.iso_utc keeps milliseconds for records).
    stamp = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def _unread(
    offsets: KafkaOffset, live: KafkaLive
) -> tuple[list[tuple[str, int, int]], bool, Countdown | None]:
    """Return the positions with unread records, whether one is above its latest offset or gone, and the
    countdown of records deleted already (below the earliest offset), if any."""
    positions = live.live
    unread: list[tuple[str, int, int]] = []
    beyond = False
    for topic, part, offset in offsets.partitions:
        pos = (positions.get(topic) or {}).get(part)
        if pos is None:
            beyond = True  # topic or partition gone: nothing to count down, CD207 says what the restart does
            continue
        earliest, latest = pos
        if offset < 0:
            beyond = True  # not a position (CD211): nothing to count down from
            continue
        if offset < earliest and offset < latest:
            text = (
                f"{topic}-{part}: records from offset {offset} to {earliest} were deleted already (see CD207)"
            )
            return [], False, Countdown(GONE, text, topic=topic, partition=part, offset=offset)
        if offset < latest:
            unread.append((topic, part, offset))
        elif offset > latest:
            beyond = True  # above the latest: CD207 says what the restart does
    return unread, beyond, None


def countdown(offsets: KafkaOffset, live: KafkaLive, now_ms: int) -> Countdown | None:
    """Return the countdown of one Kafka source whose next offsets are ``offsets`` (None when
    positions are above the topic's latest offsets: nothing is unread, CD207 says the rest)."""
    unread, beyond, gone = _unread(offsets, live)
    if gone is not None:
        return gone
    if not unread:
        return (
            None
            if beyond
            else Countdown(CAUGHT_UP, "nothing unread: every position is at the topic's latest offset")
        )
    retention: dict[str, KafkaRetention] = {r.topic: r for r in live.retention}
    heads = {(t, p, o): ts for t, p, o, ts in live.heads}
    timed: list[tuple[int, str, int, int, int]] = []
    sized: list[tuple[int, str]] = []
    compacted: set[str] = set()
    unknown: list[str] = []
    for topic, part, offset in unread:
        conf = retention.get(topic)
        if conf is None:
            unknown.append(f"{topic} (retention not read)")
        elif "delete" not in conf.cleanup_policy.split(","):
            compacted.add(topic)
        else:
            if conf.retention_bytes >= 0:
                sized.append((conf.retention_bytes, topic))
            ts = heads.get((topic, part, offset))
            if conf.retention_ms < 0:
                pass
            elif ts is None or ts < 0:
                unknown.append(f"{topic}-{part} (no timestamp at offset {offset})")
            else:
                timed.append((ts + conf.retention_ms, topic, part, offset, ts))
    limit, by = min(sized) if sized else (None, None)
    if timed:
        deadline, topic, part, offset, ts = min(timed)
        ms = retention[topic].retention_ms
        left = deadline - now_ms
        when = f"in {duration(left)}" if left > 0 else "overdue: at the broker's next retention check"
        also = (
            f"; retention.bytes={limit} on {by} may delete them sooner if a partition grows past it"
            if sized
            else ""
        )
        text = (
            f"unread records of {topic}-{part} (from offset {offset}, written {utc(ts)}) may be deleted by "
            f"retention.ms={ms} ({duration(ms)}) from {utc(deadline)}, {when}{also}"
        )
        return Countdown(TIME, text, deadline, left, topic, part, offset, ts, limit)
    if unknown:
        return Countdown(UNKNOWN, "retention deadline unknown: " + ", ".join(unknown))
    if sized:
        text = (
            f"unread records are kept by size only: retention.bytes={limit} on {by} deletes them once a "
            "partition grows past it (retention.ms=-1; not timed: the write rate is unknown)"
        )
        return Countdown(SIZE, text, retention_bytes=limit)
    if compacted:
        text = (
            f"{', '.join(sorted(compacted))}: cleanup.policy without delete, no retention deadline "
            "(compaction keeps the newest record per key)"
        )
        return Countdown(COMPACTED, text)
    return Countdown(UNBOUNDED, "unbounded: retention.ms=-1 and retention.bytes=-1, unread records are kept")


@frozen
class PartitionDeadline:
    """When retention may first delete one partition's unread records (``retention.ms`` only)."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    retention_ms: int

    @property
    def deadline_ms(self) -> int:
        return self.timestamp_ms + self.retention_ms

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


def deadlines(offsets: KafkaOffset, live: KafkaLive) -> list[PartitionDeadline]:
    """Return each partition's retention deadline (the record at its position, written at ``ts``,
    goes no sooner than ``ts + retention.ms``), soonest first; partitions without one (no unread
    record, a topic or partition gone, no timestamp, compacted or unbounded) are left out."""
    unread, _, gone = _unread(offsets, live)
    if gone is not None:
        return []  # records are gone already: CD207
    retention = {r.topic: r for r in live.retention}
    heads = {(t, p, o): ts for t, p, o, ts in live.heads}
    out = []
    for topic, part, offset in unread:
        conf = retention.get(topic)
        ts = heads.get((topic, part, offset))
        if conf is None or "delete" not in conf.cleanup_policy.split(",") or conf.retention_ms < 0:
            continue
        if ts is None or ts < 0:
            continue
        out.append(PartitionDeadline(topic, part, offset, ts, conf.retention_ms))
    return sorted(out, key=lambda d: (d.deadline_ms, d.topic, d.partition))


def when(deadline_ms: int, now_ms: int) -> str:
    """``in 59 min`` or ``overdue`` (deleted at the broker's next retention check)."""
    left = deadline_ms - now_ms
    return f"in {duration(left)}" if left > 0 else "overdue: at the broker's next retention check"


#: The bounds in the order they matter: records lost already, then a deadline, then the untimed.
ORDER = (GONE, TIME, UNKNOWN, SIZE, COMPACTED, UNBOUNDED, CAUGHT_UP)


def soonest(countdowns: list[Countdown | None]) -> Countdown | None:
    """Return the countdown that matters first among a query's sources (a timed one before any other)."""
    found = [c for c in countdowns if c is not None]
    if not found:
        return None
    return min(found, key=sort_key)


def sort_key(c: Countdown) -> tuple[int, int]:
    """Sort countdowns soonest first: lost, then by deadline, then the untimed."""
    return (ORDER.index(c.bound), c.deadline_ms or 0)
