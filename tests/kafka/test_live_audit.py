"""``audit``/``diagnose`` with a real broker: one client for the whole audit, the retention countdown
of unread records, and the faults (unreachable, wrong password, topic not authorized, a broker that
goes away mid-audit).

The checkpoints are Spark's own (``fixtures/kafka/spark-4.3.0/kafka-stateless``: next offset 15 on
each of the 3 partitions of ``events``), copied to a temp root; the topic is rebuilt here with a
known ``retention.ms`` and records whose timestamps the test chose, so the deadline is exact.
"""

from __future__ import annotations

import json
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kafka_broker
import kafka_world
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from checkpoint_doctor.render.documents import iso_utc
from tests.cli.test_schemas import validate
from tests.kafka.test_live_diagnose import cli

ROOT = Path(__file__).resolve().parents[2]
CHECKPOINT = ROOT / "fixtures" / "kafka" / "spark-4.3.0" / "kafka-stateless" / "checkpoint"
NON_KAFKA = ROOT / "fixtures" / "spark-3.5.9" / "async" / "checkpoint"
RETENTION_MS = 2 * 3_600_000
PARTITIONS = 3
RECORDS = 20

pytestmark = pytest.mark.kafka


def build_topic(bootstrap: str, topic: str, first_ms: int, retention_ms: int = RETENTION_MS) -> None:
    """``topic`` with 3 partitions of 20 records; the record at offset o of partition p was written
    at ``first_ms + o * 1000 + p * 100``."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, PARTITIONS, 1, config={"retention.ms": str(retention_ms)})], operation_timeout=30
    )
    for future in futures.values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for p in range(PARTITIONS):
        for o in range(RECORDS):
            producer.produce(topic, b"v", partition=p, timestamp=first_ms + o * 1000 + p * 100)
    assert producer.flush(30) == 0


def build_topic_as_read(bootstrap: str, topic: str = "events") -> int:
    """``topic`` as :func:`build_topic` makes it, its records written a minute before the checkpoint's
    newest batch planned its positions (records written after it are a recreated topic's, CD214),
    with retention leaving an hour from now; returns ``first_ms``."""
    planned_ms = json.loads((CHECKPOINT / "offsets" / "1").read_text(encoding="utf-8").splitlines()[1])[
        "batchTimestampMs"
    ]
    first_ms = int(planned_ms) - 60_000
    build_topic(bootstrap, topic, first_ms, retention_ms=int(time.time() * 1000) - first_ms + 3_600_000)
    return first_ms


def copy_checkpoint(dest: Path, topic: str = "events", behind: int = 0) -> Path:
    """A copy of Spark's checkpoint; with another ``topic`` its offsets name that topic instead,
    with ``behind`` its newest offsets are that many records behind 15 on each partition."""
    shutil.copytree(CHECKPOINT, dest)
    if behind:
        newest = dest / "offsets" / "1"
        *head, line = newest.read_text(encoding="utf-8").splitlines()
        newest.write_text("\n".join([*head, line.replace(":15", f":{15 - behind}")]), encoding="utf-8")
        (dest / "offsets" / ".1.crc").unlink()
    if topic != "events":
        for path in [*dest.glob("offsets/[0-9]*"), dest / "sources" / "0" / "0"]:
            path.write_text(
                path.read_text(encoding="utf-8").replace('"events"', f'"{topic}"'), encoding="utf-8"
            )
        for crc in dest.rglob(".*.crc"):
            crc.unlink()
    return dest


@pytest.fixture
def world(kafka: Any) -> int:
    """The session broker holding ``events`` as the module docstring says; returns ``first_ms``."""
    kafka_world.reset(kafka.bootstrap)
    first_ms = (int(time.time()) - 3600) * 1000  # an hour ago: an hour left of the two
    build_topic(kafka.bootstrap, "events", first_ms)
    return first_ms


def test_diagnose_counts_down_to_retention(kafka: Any, world: int) -> None:
    out = cli("diagnose", str(CHECKPOINT), "--spark", "4.3", "--kafka-bootstrap-servers", kafka.bootstrap)
    text = " ".join(out.stdout.split())
    written = world + 15 * 1000  # partition 0's record at offset 15 is the oldest unread one
    deadline = written + RETENTION_MS
    assert (
        f"Kafka retention: unread records of events-0 (from offset 15, written {iso_utc(written)[:19]}Z) may "
        f"be deleted by retention.ms={RETENTION_MS} (2 h) from {iso_utc(deadline)[:19]}Z, in " in text
    ), out.stdout
    assert "Kafka source 0 reads 15 records" in text


def test_audit_reads_every_kafka_checkpoint_and_sorts_the_countdowns(
    kafka: Any, world: int, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    copy_checkpoint(root / "q-events")
    copy_checkpoint(root / "q-behind", behind=5)  # its unread records are 5 s older: it goes first
    shutil.copytree(NON_KAFKA, root / "q-rate")
    page, prom = tmp_path / "audit.html", tmp_path / "audit.prom"
    out = cli(
        "audit",
        str(root),
        "--kafka-bootstrap-servers",
        kafka.bootstrap,
        "--format",
        "json",
        "--html",
        str(page),
        "--metrics",
        str(prom),
    )
    doc = json.loads(out.stdout)
    validate("audit", doc)
    records = {Path(r["url"]).name: r for r in doc["result"]["records"]}
    assert "kafka" not in records["q-rate"]  # reads no Kafka topic
    part = records["q-events"]["kafka"]
    assert part["checked"] and part["bootstrap"] == kafka.bootstrap and part["topics"] == ["events"]
    retention = part["retention"]
    assert retention["bound"] == "retention.ms"
    assert (retention["topic"], retention["partition"], retention["offset"]) == ("events", 0, 15)
    assert retention["deadline_ms"] == world + 15 * 1000 + RETENTION_MS
    assert 0 < retention["remaining_s"] <= RETENTION_MS / 1000
    # every unread partition's retention window (the HTML's bars, issue 36 item 7): the countdown's
    # partition is the soonest
    windows = part["partitions"]
    assert windows and (windows[0]["topic"], windows[0]["partition"], windows[0]["offset"]) == (
        "events",
        0,
        15,
    )
    assert windows[0]["deadline_ms"] == retention["deadline_ms"]
    assert all(w["deadline_ms"] - w["written_ms"] == RETENTION_MS for w in windows)
    # the second fetch on the same partitions (another offset) gets its record too
    behind = records["q-behind"]["kafka"]["retention"]
    assert behind["offset"] == 10 and behind["deadline_ms"] == world + 10 * 1000 + RETENTION_MS
    html = page.read_text(encoding="utf-8")
    assert "Kafka retention, soonest first (2)" in html
    assert html.count('<tr class="retention">') == len(windows) + len(
        records["q-behind"]["kafka"]["partitions"]
    )
    assert html.index("events-0 (from offset 10") < html.index("events-0 (from offset 15")
    metric = [
        line for line in prom.read_text(encoding="utf-8").splitlines() if "kafka_retention_remaining" in line
    ]
    assert len(metric) == 4 and 'topic="events",partition="0"} ' in metric[-1]  # HELP, TYPE, 2 samples
    table = cli("audit", str(root), "--kafka-bootstrap-servers", kafka.bootstrap)
    lines = table.stdout.splitlines()
    at = lines.index("Kafka retention, soonest first:")
    assert "q-behind" in lines[at + 1] and "q-events" in lines[at + 2]
    assert "may be deleted by retention.ms=7200000" in lines[at + 1]


def test_audit_without_a_broker_says_how_to_check(tmp_path: Path) -> None:
    root = tmp_path / "root"
    copy_checkpoint(root / "q-events")
    out = cli("audit", str(root), "--format", "json")
    (record,) = json.loads(out.stdout)["result"]["records"]
    assert record["kafka"]["checked"] is False
    assert record["kafka"]["note"].startswith("Kafka positions not checked: pass --kafka-bootstrap-servers")
    page = tmp_path / "audit.html"
    table = cli("audit", str(root), "--html", str(page))
    assert (
        "1 checkpoint(s) read Kafka: Kafka positions not checked: pass --kafka-bootstrap-servers"
        in " ".join(table.stdout.split())
    )
    html = page.read_text(encoding="utf-8")
    assert "1 checkpoint read Kafka: Kafka positions not checked: pass --kafka-bootstrap-servers" in html


def test_unreachable_broker_makes_kafka_checkpoints_unreadable_and_the_audit_goes_on(tmp_path: Path) -> None:
    root = tmp_path / "root"
    copy_checkpoint(root / "q-a")
    copy_checkpoint(root / "q-b")
    shutil.copytree(NON_KAFKA, root / "q-rate")
    with socket.socket() as sock:  # bound, never listening: connection refused
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"
        out = cli("audit", str(root), "--kafka-bootstrap-servers", address, "--format", "json")
    doc = json.loads(out.stdout)
    assert out.returncode & 8 and doc["exit_code"] & 8
    records = {Path(r["url"]).name: r for r in doc["result"]["records"]}
    for name in ("q-a", "q-b"):
        assert records[name]["verdict"] == "unreadable"
        assert records[name]["error"]["message"].startswith(
            f"cannot read topic positions from Kafka broker {address}"
        )
    assert records["q-rate"]["verdict"] != "unreadable"


@pytest.fixture(scope="module")
def sasl_broker() -> Iterator[kafka_broker.Broker]:
    """A broker with a SASL_PLAINTEXT listener (user alice, no ACL: she may describe no topic)."""
    broker = kafka_broker.start(users={"alice": "alice-secret-pw"})
    try:
        build_topic(broker.bootstrap, "events", (int(time.time()) - 60) * 1000)
        yield broker
    finally:
        broker.stop()


def _sasl(broker: kafka_broker.Broker, password_file: Path) -> list[str]:
    assert broker.sasl_bootstrap is not None
    return [
        "--kafka-bootstrap-servers",
        broker.sasl_bootstrap,
        "--kafka-option",
        "security.protocol=SASL_PLAINTEXT",
        "--kafka-option",
        "sasl.mechanism=PLAIN",
        "--kafka-option",
        "sasl.username=alice",
        "--kafka-option",
        f"sasl.password=@{password_file}",
    ]


def test_wrong_password_is_one_line_without_the_secret(
    sasl_broker: kafka_broker.Broker, tmp_path: Path
) -> None:
    secret = tmp_path / "pw"
    secret.write_text("not-the-password-42\n", encoding="utf-8")
    out = cli("diagnose", str(CHECKPOINT), *_sasl(sasl_broker, secret))
    assert out.returncode == 8 and out.stdout == ""
    (line,) = out.stderr.strip().splitlines()
    assert f"Kafka broker {sasl_broker.sasl_bootstrap}: authentication failed" in line, line
    assert "not-the-password-42" not in out.stderr and "alice-secret-pw" not in out.stderr


def test_topic_not_authorized_is_said(sasl_broker: kafka_broker.Broker, tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("alice-secret-pw\n", encoding="utf-8")
    out = cli("diagnose", str(CHECKPOINT), *_sasl(sasl_broker, secret))
    assert out.returncode == 8 and out.stdout == ""
    (line,) = out.stderr.strip().splitlines()
    assert (
        f"cannot describe Kafka topic events on {sasl_broker.sasl_bootstrap}: topic authorization failed"
        in line
    )
    assert "alice-secret-pw" not in out.stderr


def test_a_missing_topic_with_auto_create_off_is_the_restart_spark_refuses(kafka: Any) -> None:
    kafka_world.reset(kafka.bootstrap)  # no topic at all; the broker never creates one on a request
    out = cli("diagnose", str(CHECKPOINT), "--spark", "4.3", "--kafka-bootstrap-servers", kafka.bootstrap)
    assert out.returncode == 4
    assert "events-0: next 15, topic missing" in " ".join(out.stdout.split())


def test_a_broker_that_goes_away_mid_audit(tmp_path: Path) -> None:
    """The first checkpoint is read, the broker stops, the second is unreadable naming it; the
    audit finishes and its exit code has the unreadable bit."""
    from checkpoint_doctor.fleet.kafka import AuditKafka
    from checkpoint_doctor.fleet.run import audit

    broker = kafka_broker.start()
    try:
        first_ms = (int(time.time()) - 60) * 1000
        build_topic(broker.bootstrap, "events", first_ms)
        build_topic(broker.bootstrap, "other", first_ms)
        root = tmp_path / "root"
        copy_checkpoint(root / "q1-events")
        copy_checkpoint(root / "q2-other", topic="other")
        kafka = AuditKafka(broker.bootstrap)

        seen: list[Any] = []

        def stop_after_first(record: Any) -> None:
            seen.append(record)
            if len(seen) == 1:
                broker.stop()

        result = audit([str(root)], jobs=1, on_record=stop_after_first, kafka=kafka)
    finally:
        broker.stop()
    records = {Path(r.url).name: r.to_json() for r in result.records}
    assert records["q1-events"]["kafka"]["checked"] is True
    assert records["q2-other"]["verdict"] == "unreadable"
    assert f"Kafka broker {broker.bootstrap}" in records["q2-other"]["error"]["message"]
    assert result.exit_code & 8
