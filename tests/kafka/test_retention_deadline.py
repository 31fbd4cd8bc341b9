"""Time to loss is a finding (issue 32 item 7): unread records retention may delete within the loss
horizon (default 24 h, ``--loss-horizon``) are CD213, a warning with the deadline of each partition,
soonest first; beyond the horizon only the countdown note remains. The topic is real (the session's
broker, records with timestamps the test chose); the clock is injected where a deadline is compared
(the pure diagnosis), and the CLI runs keep half an hour of margin either side of every horizon."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import kafka_world
import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.positions import unread_offsets
from checkpoint_doctor.world.kafka import KafkaReader
from tests.cli.test_schemas import validate
from tests.kafka.test_live_audit import CHECKPOINT, build_topic, build_topic_as_read, copy_checkpoint
from tests.kafka.test_live_diagnose import cli

pytestmark = pytest.mark.kafka

#: The record at offset o of partition p was written FIRST_MS + o s + p * 100 ms: in the past (the
#: broker refuses timestamps over an hour ahead, log.message.timestamp.after.max.ms), with a
#: retention long enough that the broker deletes nothing while the test runs.
FIRST_MS = 1_700_000_000_000
LONG_MS = 10 * 365 * 86_400_000


@pytest.fixture
def fixed_topic(kafka: Any) -> str:
    kafka_world.reset(kafka.bootstrap)
    build_topic(kafka.bootstrap, "events", FIRST_MS, retention_ms=LONG_MS)
    return str(kafka.bootstrap)


def _diagnose(bootstrap: str, now_ms: int, horizon_s: float = 86400.0) -> Any:
    snapshot = load_checkpoint(str(CHECKPOINT))
    reader = KafkaReader(bootstrap)
    try:
        live = reader.read([off for _, off in unread_offsets(snapshot)])
    finally:
        reader.close()
    opts = DiagnoseOptions(
        spark="4.3",
        mode="micro-batch",
        stateful=False,
        live_window_s=0,
        now_ms=now_ms,
        kafka=live,
        loss_horizon_s=horizon_s,
    )
    return diagnose(snapshot, opts)


def test_a_deadline_within_the_horizon_is_a_warning_per_partition_soonest_first(fixed_topic: str) -> None:
    # partition p's record at offset 15 was written at FIRST_MS + 15 s + p * 100 ms
    deadline = [FIRST_MS + 15_000 + p * 100 + LONG_MS for p in range(3)]
    now = deadline[0] - 59 * 60_000  # 59 minutes before the soonest
    result = _diagnose(fixed_topic, now)
    (found,) = [f for f in result.findings if f.code == "CD213"]
    assert found.severity == "warning" and result.exit_code == 1
    assert "within the 1 d horizon, soonest first: events-0 from offset 15" in found.message
    assert (
        found.message.index("events-0 from")
        < found.message.index("events-1 from")
        < found.message.index("events-2 from")
    )
    assert "from 2033-11-11T22:13:35Z, in 59 min" in found.message  # events-0's deadline
    details = dict(found.details)
    assert details["deadline_ms"] == deadline[0] and details["remaining_s"] == 59 * 60
    assert [(name, ms) for name, _, ms, _ in details["partitions"]] == [
        (f"events-{p}", deadline[p]) for p in range(3)
    ]
    # an overdue deadline is said so
    late = dict(
        next(f for f in _diagnose(fixed_topic, deadline[2] + 1).findings if f.code == "CD213").details
    )
    assert late["remaining_s"] < 0


def test_beyond_the_horizon_only_the_countdown_remains(fixed_topic: str) -> None:
    now = FIRST_MS + 15_000 + LONG_MS - 2 * 3_600_000  # two hours before the soonest deadline
    assert not [f for f in _diagnose(fixed_topic, now, horizon_s=3600).findings if f.code == "CD213"]
    assert [f for f in _diagnose(fixed_topic, now, horizon_s=3 * 3600).findings if f.code == "CD213"]


def test_diagnose_and_audit_warn_and_rank_with_the_loss_horizon(kafka: Any, tmp_path: Path) -> None:
    kafka_world.reset(kafka.bootstrap)
    build_topic_as_read(kafka.bootstrap)
    out = cli("diagnose", str(CHECKPOINT), "--kafka-bootstrap-servers", kafka.bootstrap, "--format", "json")
    doc = json.loads(out.stdout)
    validate("diagnose", doc)
    assert out.returncode == 1, out.stdout
    assert [f["code"] for f in doc["result"]["findings"] if f["severity"] != "info"] == ["CD213"]
    narrow = cli(
        "diagnose", str(CHECKPOINT), "--kafka-bootstrap-servers", kafka.bootstrap, "--loss-horizon", "1800"
    )
    assert narrow.returncode == 0 and "CD213" not in narrow.stdout
    assert "Kafka retention: unread records of events-0" in " ".join(narrow.stdout.split())
    root = tmp_path / "root"
    copy_checkpoint(root / "q-events")
    copy_checkpoint(root / "q-behind", behind=5)  # its unread records are 5 s older: it goes first
    prom = tmp_path / "audit.prom"
    # --live-window 0: the copies were just written (CD501 would warn too)
    audit = ["audit", str(root), "--live-window", "0", "--kafka-bootstrap-servers", kafka.bootstrap]
    table = cli(*audit, "--metrics", str(prom))
    assert table.returncode == 1, table.stdout
    lines = table.stdout.splitlines()
    at = lines.index("Kafka retention, soonest first:")
    assert "q-behind" in lines[at + 1] and "q-events" in lines[at + 2]
    assert "CD213" in table.stdout
    metrics = prom.read_text(encoding="utf-8")
    assert 'code="CD213"' in metrics
    # every partition due within the horizon, per checkpoint (2 checkpoints x 3 partitions)
    due = [
        line
        for line in metrics.splitlines()
        if line.startswith("checkpoint_doctor_kafka_loss_deadline_seconds{")
    ]
    assert len(due) == 6 and all('topic="events"' in line for line in due), due
    assert all(0 < float(line.rsplit(" ", 1)[1]) <= 3600 + 60 for line in due)  # an hour, plus offset 15 s
    wide = cli(*audit, "--loss-horizon", "600", "--format", "json")
    assert wide.returncode == 0, wide.stdout
    shutil.rmtree(root)
