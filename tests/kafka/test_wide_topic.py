"""10,000 partitions: a checkpoint of a topic that wide is judged in bounded time and memory.

The checkpoint is generated (one offsets line naming 10,000 partitions of ``wide``, beside the
metadata and commit Spark wrote for ``fixtures/kafka/spark-4.3.0/kafka-stateless``). The pure
part runs in the default tests; the live one (a real topic of 10,000 partitions, one record in
each) is ``slow``: Kafka's controller takes one request of at most 10,000 records
(``QuorumController`` "excessively large batch operation"), so the topic is created with 5,000
partitions and grown to 10,000, and the broker then needs a minute or two to open their logs.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from checkpoint_doctor.diagnosis.sources.kafka_positions import predict
from checkpoint_doctor.diagnosis.sources.kafka_retention import TIME, countdown
from checkpoint_doctor.diagnosis.spark_line import SparkLine
from checkpoint_doctor.model import KafkaLive, KafkaOffset, KafkaRetention

ROOT = Path(__file__).resolve().parents[2]
SPARK = ROOT / "fixtures" / "kafka" / "spark-4.3.0" / "kafka-stateless" / "checkpoint"
WIDE = 10_000
NOW = 1_800_000_000_000


def wide_checkpoint(dest: Path, partitions: int = WIDE, topic: str = "wide") -> Path:
    """A checkpoint whose newest (committed) batch ends at offset 0 of each of ``partitions``."""
    (dest / "offsets").mkdir(parents=True)
    (dest / "commits").mkdir()
    (dest / "metadata").write_bytes((SPARK / "metadata").read_bytes())
    meta = (SPARK / "offsets" / "1").read_text(encoding="utf-8").splitlines()[1]
    line = json.dumps({topic: {str(p): 0 for p in range(partitions)}}, separators=(",", ":"))
    (dest / "offsets" / "0").write_text(f"v1\n{meta}\n{line}", encoding="utf-8")
    (dest / "commits" / "0").write_bytes((SPARK / "commits" / "1").read_bytes())
    return dest


def test_ten_thousand_partitions_pure() -> None:
    offsets = KafkaOffset(tuple(("wide", p, 0) for p in range(WIDE)))
    live = KafkaLive(
        "b:9092",
        (("wide", tuple((p, 0, 1) for p in range(WIDE))),),
        (KafkaRetention("wide", 3_600_000, -1),),
        tuple(("wide", p, 0, NOW - 1_000 * p) for p in range(WIDE)),
    )
    restart = predict(offsets, live.live, SparkLine("4.3"))
    assert restart.error is None and restart.rows == WIDE
    found = countdown(offsets, live, NOW)
    assert found is not None and found.bound == TIME
    assert found.partition == WIDE - 1  # its record is the oldest: it goes first


@pytest.mark.slow
@pytest.mark.kafka
def test_ten_thousand_partitions_live(kafka: Any, tmp_path: Path) -> None:
    import kafka_world
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    from tests.kafka.test_live_diagnose import cli

    kafka_world.reset(kafka.bootstrap)
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.create_topics([NewTopic("wide", WIDE // 2, 1)], operation_timeout=120).values():
        future.result(timeout=180)
    for future in admin.create_partitions([NewPartitions("wide", WIDE)], operation_timeout=120).values():
        future.result(timeout=180)
    deadline = time.monotonic() + 600
    while len(admin.list_topics(topic="wide", timeout=60).topics["wide"].partitions) < WIDE:
        assert time.monotonic() < deadline, "the broker did not list 10,000 partitions in 10 minutes"
        time.sleep(2)
    first_ms = (int(time.time()) - 600) * 1000
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 50, "log_level": 0})
    for p in range(WIDE):
        producer.produce("wide", b"v", partition=p, timestamp=first_ms + p)
        producer.poll(0)
    assert producer.flush(300) == 0
    checkpoint = wide_checkpoint(tmp_path / "ckpt")
    out = cli("diagnose", str(checkpoint), "--spark", "4.3", "--kafka-bootstrap-servers", kafka.bootstrap)
    text = " ".join(out.stdout.split())
    assert out.returncode in (0, 1), out.stderr
    assert f"Kafka source 0 reads {WIDE} records up to the latest offsets" in text
    assert f"and {WIDE - 6} more" in text
    assert "Kafka retention: unread records of wide-0 (from offset 0," in text
