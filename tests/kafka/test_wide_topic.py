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


def _wide_plan(tmp_path: Path, partitions: int, earliest: int = 5) -> Any:
    """The accepted kafka-positions plan of a checkpoint at offset 0 of every partition of ``wide``
    whose records below ``earliest`` retention deleted (the recorded positions, no broker)."""
    from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
    from checkpoint_doctor.planning import PlanOptions, plan_repair
    from checkpoint_doctor.reading.pipeline import load_checkpoint

    snapshot = load_checkpoint(str(wide_checkpoint(tmp_path / "ckpt", partitions)))
    live = KafkaLive("b:9092", (("wide", tuple((p, earliest, 9) for p in range(partitions))),))
    opts = DiagnoseOptions(spark="4.3", mode="micro-batch", stateful=False, live_window_s=0, kafka=live)
    return plan_repair(snapshot, diagnose(snapshot, opts), PlanOptions(accept_data_loss=True, diagnose=opts))


def test_a_plan_over_many_partitions_is_compact(tmp_path: Path) -> None:
    """Issue 31 item 9: 100,000 partitions made a plan of 16,777,217 bytes (45 MB today) that apply
    refuses. Partitions moved alike are one range in the precondition and one run in the texts; what
    grows with the partitions is the offsets file the plan writes (its bytes, in the step and its option)."""
    from checkpoint_doctor.planning.preconditions import KafkaPositionsPre

    plan = _wide_plan(tmp_path, WIDE)
    text = plan.to_json()
    written = next(s for s in plan.steps if s.kind == "write")
    content = len(json.dumps(written.to_dict()["content"]))
    # the written file twice (step and option) and a bounded rest (was ~460 bytes per partition)
    assert len(text.encode()) < 2 * content + 64 * 1024, len(text)
    (pre,) = [p for p in plan.preconditions if isinstance(p, KafkaPositionsPre)]
    assert pre.to_dict()["ranges"] == [
        {"topic": "wide", "first": 0, "last": WIDE - 1, "position": 5, "earliest": 5}
    ]
    assert KafkaPositionsPre.from_json(pre.to_dict()) == pre  # the ranges come back as every partition
    (loss,) = plan.expected["consequences"]["loss"]
    assert f"wide-0..{WIDE - 1}: 5 records skipped each (0..4 deleted)" in loss
    assert f"({5 * WIDE} records skipped in all)" in loss


def test_runs_of_different_moves_are_named_up_to_a_bound(tmp_path: Path) -> None:
    """Each partition moved differently: the texts name the first runs and count the rest."""
    from checkpoint_doctor.planning.strategies.kafka_positions import SHOWN_RUNS

    snapshot_dir = wide_checkpoint(tmp_path / "ckpt", 1000)
    from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
    from checkpoint_doctor.planning import PlanOptions, plan_repair
    from checkpoint_doctor.reading.pipeline import load_checkpoint

    snapshot = load_checkpoint(str(snapshot_dir))
    live = KafkaLive("b:9092", (("wide", tuple((p, 1 + p % 7, 9) for p in range(1000))),))
    opts = DiagnoseOptions(spark="4.3", mode="micro-batch", stateful=False, live_window_s=0, kafka=live)
    plan = plan_repair(snapshot, diagnose(snapshot, opts), PlanOptions(accept_data_loss=True, diagnose=opts))
    (loss,) = plan.expected["consequences"]["loss"]
    total = sum(1 + p % 7 for p in range(1000))
    rest = sum(1 + p % 7 for p in range(SHOWN_RUNS, 1000))
    assert (
        f"; and {1000 - SHOWN_RUNS} more partitions, {rest} records skipped ({total} records skipped in all)"
        in loss
    )
    assert len(loss) < 10_000


def test_a_forged_range_is_a_plan_format_error() -> None:
    from checkpoint_doctor.errors import PlanFormatError
    from checkpoint_doctor.planning.preconditions import KafkaPositionsPre

    old = {
        "bootstrap": "b:9092",
        "partitions": [{"topic": "t", "partition": 3, "position": 7, "earliest": None}],
    }
    assert KafkaPositionsPre.from_json(old).partitions == (("t", 3, 7, None),)  # a plan written before ranges
    for first, last in ((0, 10**12), (5, 4), (-1, 0)):
        row = {"topic": "t", "first": first, "last": last, "position": 0, "earliest": None}
        with pytest.raises(PlanFormatError):
            KafkaPositionsPre.from_json({"bootstrap": "b:9092", "ranges": [row]})


def test_plan_never_writes_a_file_apply_would_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plan larger than apply reads (parsing.documents.MAX_DOCUMENT_BYTES, lowered here so that a
    small checkpoint reaches it; the broker's answer is the recorded one) is refused, exit 32, and no
    file is written."""
    from checkpoint_doctor.cli.app import main
    from checkpoint_doctor.parsing import documents

    ckpt = wide_checkpoint(tmp_path / "ckpt", 200)
    live = KafkaLive("b:9092", (("wide", tuple((p, 5, 9) for p in range(200))),))
    monkeypatch.setattr(
        "checkpoint_doctor.world.load.kafka_positions", lambda snapshot, bootstrap, settings: live
    )
    monkeypatch.setattr(documents, "MAX_DOCUMENT_BYTES", 2_000)
    out = tmp_path / "plan.json"
    args = ["plan", str(ckpt), "--spark", "4.3", "--live-window", "0"]
    args += ["--kafka-bootstrap-servers", "b:9092", "--accept-data-loss"]
    assert main([*args, "-o", str(out)]) == 32
    err = capsys.readouterr().err
    assert "more than the 2000 'apply' reads; nothing was written" in err, err
    assert not out.exists()
