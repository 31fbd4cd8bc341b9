"""The retention countdown of unread Kafka records, from typed facts and a frozen clock (no broker).

The live proof is tests/kafka/test_live_audit.py (a real broker, a topic with a small retention.ms
and records with known timestamps); here each bound the countdown can follow is pinned.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkpoint_doctor.diagnosis.sources.kafka_retention import (
    CAUGHT_UP,
    COMPACTED,
    GONE,
    SIZE,
    TIME,
    UNBOUNDED,
    UNKNOWN,
    Countdown,
    countdown,
    duration,
    soonest,
)
from checkpoint_doctor.fleet.kafka import render_retention, retention_rows
from checkpoint_doctor.fleet.metrics import render_metrics
from checkpoint_doctor.fleet.records import CheckpointRecord, KafkaPart
from checkpoint_doctor.fleet.report import summarize
from checkpoint_doctor.model import KafkaLive, KafkaOffset, KafkaRetention
from tests.fleet.records import checkpoint_record

NOW = 1_800_000_000_000  # the frozen clock: 2027-01-15T08:00:00Z
HOUR = 3_600_000


def live(
    retention_ms: int = HOUR,
    retention_bytes: int = -1,
    policy: str = "delete",
    heads: tuple[tuple[str, int, int, int | None], ...] = (),
    positions: tuple[tuple[int, int, int], ...] = ((0, 0, 20), (1, 0, 20)),
) -> KafkaLive:
    return KafkaLive(
        "b:9092",
        (("events", positions),),
        (KafkaRetention("events", retention_ms, retention_bytes, policy),),
        heads,
    )


OFFSETS = KafkaOffset((("events", 0, 15), ("events", 1, 12)))


def test_retention_ms_counts_down_from_the_oldest_unread_record() -> None:
    heads = (("events", 0, 15, NOW - 50 * 60_000), ("events", 1, 12, NOW - 40 * 60_000))
    found = countdown(OFFSETS, live(heads=heads), NOW)
    assert found is not None and found.bound == TIME
    # partition 0's record at the position is the older one: it goes first, 10 minutes from now
    assert (found.topic, found.partition, found.offset) == ("events", 0, 15)
    assert found.deadline_ms == NOW + 10 * 60_000 and found.remaining_ms == 10 * 60_000
    assert "retention.ms=3600000 (1 h) from 2027-01-15T08:10:00Z, in 10 min" in found.text


def test_overdue_when_the_deadline_passed() -> None:
    heads = (("events", 0, 15, NOW - 2 * HOUR), ("events", 1, 12, NOW))
    found = countdown(OFFSETS, live(heads=heads), NOW)
    assert found is not None and found.remaining_ms == -HOUR
    assert "overdue: at the broker's next retention check" in found.text


def test_bytes_bound_is_named_and_not_timed() -> None:
    found = countdown(OFFSETS, live(retention_ms=-1, retention_bytes=1 << 20), NOW)
    assert found is not None and found.bound == SIZE and found.deadline_ms is None
    assert "retention.bytes=1048576" in found.text and "not timed" in found.text


def test_both_bounds_the_timed_one_leads_and_the_size_is_said() -> None:
    heads = (("events", 0, 15, NOW), ("events", 1, 12, NOW))
    found = countdown(OFFSETS, live(retention_bytes=1000, heads=heads), NOW)
    assert found is not None and found.bound == TIME and found.retention_bytes == 1000
    assert "retention.bytes=1000 on events may delete them sooner" in found.text


def test_unbounded_when_retention_is_minus_one() -> None:
    found = countdown(OFFSETS, live(retention_ms=-1), NOW)
    assert found is not None and found.bound == UNBOUNDED
    assert found.text.startswith("unbounded")


def test_compacted_topic_has_no_deadline() -> None:
    found = countdown(OFFSETS, live(policy="compact"), NOW)
    assert found is not None and found.bound == COMPACTED


def test_caught_up_and_beyond_the_latest() -> None:
    at_latest = KafkaOffset((("events", 0, 20), ("events", 1, 20)))
    found = countdown(at_latest, live(), NOW)
    assert found is not None and found.bound == CAUGHT_UP
    above = KafkaOffset((("events", 0, 25),))
    assert countdown(above, live(), NOW) is None  # CD207's ground


def test_records_deleted_already() -> None:
    found = countdown(OFFSETS, live(positions=((0, 17, 20), (1, 0, 20))), NOW)
    assert found is not None and found.bound == GONE and "15 to 17" in found.text


def test_a_record_not_fetched_leaves_the_deadline_unknown() -> None:
    found = countdown(OFFSETS, live(heads=(("events", 0, 15, None),)), NOW)
    assert found is not None and found.bound == UNKNOWN
    assert "events-0 (no timestamp at offset 15)" in found.text


def test_soonest_prefers_a_deadline_to_an_untimed_bound() -> None:
    a = countdown(OFFSETS, live(retention_ms=-1), NOW)
    b = countdown(OFFSETS, live(heads=(("events", 0, 15, NOW), ("events", 1, 12, NOW))), NOW)
    assert soonest([a, None, b]) is b


@given(st.integers(min_value=-(10**12), max_value=10**13))
def test_duration_is_two_units_at_most(ms: int) -> None:
    text = duration(ms)
    assert 1 <= len(text.split()) // 2 <= 2
    assert text.split()[-1] in ("d", "h", "min", "s")


def _record(url: str, retention: Countdown | None) -> CheckpointRecord:
    kafka = KafkaPart(topics=("events",), bootstrap="b:9092", retention=retention)
    return checkpoint_record(url, kafka=kafka)


def _timed(minutes: int) -> Countdown:
    heads = (("events", 0, 15, NOW - HOUR + minutes * 60_000), ("events", 1, 12, NOW))
    found = countdown(OFFSETS, live(heads=heads), NOW)
    assert found is not None
    return found


def test_audit_rows_and_metric_are_sorted_soonest_first() -> None:
    unbounded = countdown(OFFSETS, live(retention_ms=-1), NOW)
    assert unbounded is not None
    records = [
        _record("file:/a", unbounded),
        _record("file:/b", _timed(30)),
        _record("file:/c", _timed(5)),
        _record("file:/d", None),
    ]
    rows = retention_rows(records)
    assert [r.url for r in rows] == ["file:/c", "file:/b", "file:/a"]
    text = render_retention(rows)
    assert text.splitlines()[0] == "Kafka retention, soonest first:"
    assert text.splitlines()[1].startswith("  file:/c: unread records of events-0")
    metrics = render_metrics(records, summarize(records), started_ms=NOW, finished_ms=NOW, exit_code=0)
    samples = [line for line in metrics.splitlines() if line.startswith("checkpoint_doctor_kafka_retention")]
    assert samples == [
        'checkpoint_doctor_kafka_retention_remaining_seconds{url="file:/b",kind="checkpoint",topic="events",partition="0"} 1800',
        'checkpoint_doctor_kafka_retention_remaining_seconds{url="file:/c",kind="checkpoint",topic="events",partition="0"} 300',
    ]


@pytest.mark.parametrize("left", [300.0, -5.0, None])
def test_html_shows_the_countdowns_above_the_rows(left: float | None) -> None:
    from checkpoint_doctor.fleet.html import _left
    from checkpoint_doctor.fleet.kafka import RetentionRow

    ms = None if left is None else int(left * 1000)
    row = RetentionRow("file:/a", Countdown(bound="retention.ms", text="t", remaining_ms=ms))
    assert _left(row) == {300.0: "5 min", -5.0: "overdue", None: "-"}[left]
