"""A topic recreated and grown past the checkpoint's positions (issue 32 item 3): real Spark starts at the
old positions with no word, whatever failOnDataLoss says, and never reads the new topic's records
below them (fixtures/kafka/*/*-topic-recreated-grown, fixtures/kafka-sources/*/*-events-recreated-grown,
restarted by real Spark). CD214 counts them per partition from the timestamp of the record just below
each position: appended after the batch that planned the position, it cannot be one the checkpoint read.

The replays give the diagnosis the recorded positions and the record timestamps a broker gives (in the
recorded worlds the damage follows the base's runs); the live cases replay the worlds on a real broker
and read everything through the tool's own I/O edge.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.model import KafkaLive
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.cli.test_schemas import validate

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
HOUR_MS = 3600 * 1000

#: (fixture folder, the recreated topic's source index)
GROWN = [
    *(
        (p.parent, 0)
        for p in sorted(FIXTURES.glob("kafka/spark-*/kafka-stateless-topic-recreated-grown/scenario.json"))
    ),
    *(
        (p.parent, 0)
        for p in sorted(FIXTURES.glob("kafka/spark-*/kafka-stateful-topic-recreated-grown/scenario.json"))
    ),
    *(
        (p.parent, 0)
        for p in sorted(
            FIXTURES.glob("kafka-sources/spark-*/kafka-two-sources-events-recreated-*/scenario.json")
        )
    ),
]
#: The same checkpoints where the topic only grew (the records below the positions are the ones read).
KEPT = [
    *(p.parent for p in sorted(FIXTURES.glob("kafka/spark-*/kafka-stateless/scenario.json"))),
    *(
        p.parent
        for p in sorted(FIXTURES.glob("kafka/spark-*/kafka-stateless-partitions-added/scenario.json"))
    ),
    *(p.parent for p in sorted(FIXTURES.glob("kafka-sources/spark-*/kafka-two-sources/scenario.json"))),
]


def _scenario(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "scenario.json").read_text(encoding="utf-8"))


def _positions(scen: dict[str, Any]) -> dict[str, dict[str, list[int]] | None]:
    pos = scen["topic_positions"]
    return pos if "events" in pos else {"events": pos}  # fixtures/kafka/ records its one topic bare


def _batch_ms(folder: Path) -> int:
    meta = (folder / "checkpoint" / "offsets" / "1").read_text(encoding="utf-8").split("\n")[1]
    return int(json.loads(meta)["batchTimestampMs"])


def _live(folder: Path, appended_ms: int, recreated: str = "events") -> KafkaLive:
    """The recorded positions, and the record below each position held: written at ``appended_ms`` on
    the ``recreated`` topic, before the checkpoint's batch 1 on any other (orders is untouched)."""
    snapshot = load_checkpoint(str(folder / "checkpoint"))
    entry = snapshot.offsets.get(1)
    assert entry is not None and entry.record is not None
    pos = _positions(_scenario(folder))
    topics = tuple(
        (t, None if parts is None else tuple(sorted((int(p), lo, hi) for p, (lo, hi) in parts.items())))
        for t, parts in sorted(pos.items())
    )
    ends = {(t, int(p)): (lo, hi) for t, parts in pos.items() for p, (lo, hi) in (parts or {}).items()}
    below = tuple(
        (t, p, o - 1, appended_ms if t == recreated else _batch_ms(folder) - 1000)
        for s in entry.record.sources
        for t, p, o in getattr(s.decoded, "partitions", ())
        if (t, p) in ends and ends[(t, p)][0] <= o - 1 < ends[(t, p)][1]
    )
    return KafkaLive("recorded", topics, (), (), below)


def _line(scen: dict[str, Any]) -> str:
    return ".".join(scen["spark_version"].split(".")[:2])


def _offsets(raw: Any) -> dict[str, Any]:
    return json.loads(raw) if isinstance(raw, str) else raw  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("folder", "source"), GROWN, ids=lambda v: f"{v.parent.name}/{v.name}" if isinstance(v, Path) else str(v)
)
def test_a_recreated_grown_topic_is_a_warning_counting_what_spark_never_read(
    folder: Path, source: int
) -> None:
    scen = _scenario(folder)
    stateful = bool(scen["query"].get("stateful"))
    live = _live(folder, _batch_ms(folder) + HOUR_MS)
    got = diagnose(
        load_checkpoint(str(folder / "checkpoint")),
        DiagnoseOptions(spark=_line(scen), stateful=stateful, live_window_s=0, kafka=live),
    )
    # Spark started and read from the old positions with failOnDataLoss true and false alike
    assert got.prediction.starts and "CD207" not in got.codes, got.prediction.summary
    (finding,) = [f for f in got.findings if f.code == "CD214"]
    assert finding.severity == "warning"
    details = dict(finding.details)
    assert details["source"] == source
    earliest = {p: lo for p, (lo, _) in _positions(scen)["events"].items()}  # type: ignore[union-attr]
    for restart in scen["restarts"]:
        result = restart["result"]
        assert result["error"] is None and result["started"]
        (batch,) = result["batches"]
        start = _offsets(batch["sources"][source]["startOffset"])["events"]
        # never read: the new topic's records between its earliest offset and where Spark started
        never = {f"events-{p}": o - earliest[p] for p, o in start.items()}
        assert dict(details["unread_per_partition"]) == never
        assert details["unread"] == sum(never.values()) == 45
    assert "never reads 45 records of the new topic below them" in finding.message


@pytest.mark.parametrize("folder", KEPT, ids=lambda v: f"{v.parent.name}/{v.name}")
def test_records_below_the_positions_written_before_the_batch_are_no_finding(folder: Path) -> None:
    scen = _scenario(folder)
    live = _live(folder, _batch_ms(folder) - 1000)
    got = diagnose(
        load_checkpoint(str(folder / "checkpoint")),
        DiagnoseOptions(
            spark=_line(scen), stateful=bool(scen["query"].get("stateful")), live_window_s=0, kafka=live
        ),
    )
    assert "CD214" not in got.codes and got.prediction.starts


def test_a_record_within_the_clock_slack_is_no_proof() -> None:
    """A producer's clock a few minutes ahead of the driver's is not a recreated topic."""
    (folder, _) = GROWN[0]
    scen = _scenario(folder)
    live = _live(folder, _batch_ms(folder) + 5 * 60 * 1000)
    got = diagnose(
        load_checkpoint(str(folder / "checkpoint")),
        DiagnoseOptions(spark=_line(scen), live_window_s=0, kafka=live),
    )
    assert "CD214" not in got.codes


# ------------------------------------------------------------------ live: a real broker, the tool's I/O edge


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "checkpoint_doctor", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def _diagnose_json(folder: Path, line: str, bootstrap: str) -> tuple[int, dict[str, Any]]:
    out = _cli(
        "diagnose",
        str(folder / "checkpoint"),
        "--spark",
        line,
        "--kafka-bootstrap-servers",
        bootstrap,
        "--format",
        "json",
    )
    assert out.stdout, out.stderr
    doc = json.loads(out.stdout)
    validate("diagnose", doc)  # CD214's details fit the published schema
    return out.returncode, doc["result"]


@pytest.mark.kafka
@pytest.mark.parametrize(
    "folder",
    [
        FIXTURES / "kafka" / "spark-4.3.0" / "kafka-stateless-topic-recreated-grown",
        FIXTURES / "kafka-sources" / "spark-3.5.9" / "kafka-two-sources-events-recreated-grown",
    ],
    ids=lambda v: f"{v.parent.name}/{v.name}",
)
def test_live_recreated_grown_topic_counts_the_records_never_read(kafka: Any, folder: Path) -> None:
    import kafka_world

    scen = _scenario(folder)
    kafka_world.replay(kafka.bootstrap, scen["world"])
    code, doc = _diagnose_json(folder, _line(scen), kafka.bootstrap)
    assert code == 1  # a warning: the restart starts
    (finding,) = [f for f in doc["findings"] if f["code"] == "CD214"]
    assert finding["details"]["unread"] == 45
    assert finding["details"]["unread_per_partition"] == [
        ["events-0", 15],
        ["events-1", 15],
        ["events-2", 15],
    ]
    (cell,) = [c for c in doc["matrix"] if c["spark"] == _line(scen) and c["mode"] == "micro-batch"]
    assert cell["outcome"] == "starts"


@pytest.mark.kafka
@pytest.mark.parametrize("transactional", [False, True], ids=["plain", "transactional"])
def test_live_records_written_before_the_batch_are_no_finding(kafka: Any, transactional: bool) -> None:
    """The topic the checkpoint read, grown: its records carry the times they were written (before the
    batches that read them), so nothing was replaced. Transactional: records 0..13 in one transaction,
    its commit marker at offset 14, just below the position 15: the consumer skips the marker and
    returns record 15, written after the batch; that record is not the one below the position."""
    import kafka_world
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    folder = FIXTURES / "kafka" / "spark-4.3.0" / "kafka-stateless"
    kafka_world.reset(kafka.bootstrap)
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    # no retention: the records' old timestamps must not make the broker delete them
    for future in admin.create_topics([NewTopic("events", 3, 1, config={"retention.ms": "-1"})]).values():
        future.result(timeout=30)
    batch = _batch_ms(folder)
    conf = {"bootstrap.servers": kafka.bootstrap, "acks": "all"}
    if transactional:
        conf["transactional.id"] = "checkpoint-doctor-test"
    producer = Producer(conf)
    if transactional:
        producer.init_transactions(30)
        producer.begin_transaction()
    for p in range(3):
        for i in range(14 if transactional else 15):  # read by the checkpoint's batches: before batch 1
            producer.produce("events", value=f"p{p}-r{i}".encode(), partition=p, timestamp=batch - 60_000 + i)
    if transactional:
        producer.commit_transaction(30)  # the markers take offset 14 on each partition
        producer.begin_transaction()
    for p in range(3):
        for i in range(15, 20):  # unread: written after the batch
            producer.produce(
                "events", value=f"p{p}-r{i}".encode(), partition=p, timestamp=batch + HOUR_MS + i
            )
    if transactional:
        producer.commit_transaction(30)
    assert producer.flush(30) == 0
    code, doc = _diagnose_json(folder, "4.3", kafka.bootstrap)
    assert "CD214" not in [f["code"] for f in doc["findings"]], doc["findings"]
    assert code in (0, 1)
