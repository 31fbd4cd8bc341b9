"""What real Spark did on restart when the Kafka topic changed under a checkpoint, replayed (no Spark,
no broker): every recorded restart of fixtures/kafka/ (scripts/kafka_fixtures.py) against the table
below, per line, in Spark's own words.

The table is what the connector's source says (kafka010/KafkaMicroBatchStream, KafkaOffsetReaderAdmin,
consumer/KafkaDataConsumer) and what the recordings show; each row is proven by a real restart.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KAFKA_FIXTURES = REPO / "fixtures" / "kafka"
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import generate_fixtures  # noqa: E402
import kafka_fixtures  # noqa: E402

from tests.kafka.test_broker import EXPECTED as POSITIONS  # noqa: E402

SCENARIOS = sorted(KAFKA_FIXTURES.glob("spark-*/*/scenario.json"))
#: Lines with recorded Kafka restarts (the others are not generated yet: see fixtures/README.md).
LINES = sorted({p.parent.parent.name.removeprefix("spark-") for p in SCENARIOS})

#: The batch after the base's two (batch 2) reads 15..20 on each of the 3 partitions.
NEXT = 15

#: failOnDataLoss=true refusals, per line family: a plain text on 3.5, the connector's KAFKA_DATA_LOSS
#: condition on 4.x (kafka-error-conditions.json, SPARK-47135). None: the restart runs a batch.
REFUSED_35 = {
    "": None,
    # executor task: the fetch below the log start (KafkaDataConsumer.fetchRecord)
    "records-deleted": r"java\.lang\.IllegalStateException: Cannot fetch offset 15 \(GroupId: spark-kafka-source-<uuid>-executor, TopicPartition: events-\d\)",
    # driver, planning the batch: the latest offset is below the checkpoint's (KafkaMicroBatchStream)
    "topic-recreated": r"Partition events-\d's offset was changed from 15 to 5, some data may have been missed",
    # recreated past the old positions: nothing to see (silent loss)
    "topic-recreated-grown": None,
    "partitions-added": None,
    "partitions-added-trimmed": r"Added partition events-[34] starts from 1 instead of 0",
    "partitions-lost": r"Set\(events-2\) are gone",
    "topic-deleted": r"UnknownTopicOrPartitionException: This server does not host this topic-partition",
}

#: 4.x: the connector raises KafkaIllegalStateException with a KAFKA_DATA_LOSS condition; the query's
#: exception prints "... Reason: <the condition's text> SQLSTATE: XXKST" without the condition's name.
REFUSED_4X = {
    "": None,
    "records-deleted": r"Reason: Could not read records in offset \[15, 20\) for topic partition events-\d\nwith consumer group spark-kafka-source-<uuid>-executor\.",
    "topic-recreated": r"Reason: Partition events-\d offset was changed from 15 to 5\.",
    "topic-recreated-grown": None,
    "partitions-added": None,
    "partitions-added-trimmed": r"Reason: Added partition events-[34] starts from 1 instead of 0\.",
    "partitions-lost": r"Reason: Partitions Set\(events-2\) have been deleted\.",
    "topic-deleted": r"UnknownTopicOrPartitionException: This server does not host this topic-partition\. SQLSTATE: XXKST",
}

#: Rows batch 2 reads when the restart runs (failOnDataLoss=false, or nothing to detect).
ROWS = {
    "": 3 * (20 - NEXT),
    "records-deleted": 3 * (20 - 18),  # 15..17 skipped on each partition
    "topic-recreated": 0,  # positions above the new latest: the batch is empty
    "topic-recreated-grown": 3 * (25 - NEXT),  # the new topic's 0..14 are never read
    "partitions-added": 3 * (20 - NEXT) + 2 * 3,  # new partitions read from 0
    "partitions-added-trimmed": 3 * (20 - NEXT) + 2 * 2,  # ... from their earliest, 1
    "partitions-lost": 2 * (25 - NEXT),
}

#: Damages Spark refuses whatever failOnDataLoss says.
ALWAYS_REFUSED = {"topic-deleted"}


def _scenario(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _damage(scen: dict) -> str:
    base = scen["base"] or scen["name"]
    return scen["name"].removeprefix(base).removeprefix("-")


def _refusal(damage: str, line: str) -> str | None:
    return (REFUSED_35 if line.startswith("3.5") else REFUSED_4X)[damage]


def test_every_line_with_kafka_fixtures_has_every_scenario() -> None:
    assert LINES, "no Kafka fixtures: python scripts/generate_fixtures.py --stage kafka"
    names = {
        f"{b}-{d}" if d else b for b in kafka_fixtures.KAFKA_BASES for d in ["", *kafka_fixtures.KAFKA_DAMAGE]
    }
    for line in LINES:
        assert {p.parent.name for p in SCENARIOS if p.parent.parent.name == f"spark-{line}"} == names


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_the_damage_is_in_the_world_not_in_the_checkpoint(path: Path) -> None:
    scen = _scenario(path)
    assert generate_fixtures.fingerprint(path.parent) == scen["fingerprint"]
    if scen["base"]:
        base = _scenario(path.parent.parent / scen["base"] / "scenario.json")
        assert scen["fingerprint"] == base["fingerprint"]
        assert scen["world"][: len(base["world"])] == base["world"]
    assert scen["topic_positions"] == POSITIONS[_damage(scen)]
    assert scen["facts"]["offsets"] == [0, 1] and scen["facts"]["commits"] == [0, 1]


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_each_recorded_restart_is_what_spark_does(path: Path) -> None:
    scen = _scenario(path)
    damage, line = _damage(scen), scen["spark_version"]
    assert [r["options"]["failOnDataLoss"] for r in scen["restarts"]] == ["true", "false"]
    for entry in scen["restarts"]:
        result = entry["result"]
        assert entry["fingerprint"] == scen["fingerprint"] and not result["timed_out"]
        refused = entry["options"]["failOnDataLoss"] == "true" or damage in ALWAYS_REFUSED
        pattern = _refusal(damage, line) if refused else None
        if pattern is None:
            assert result["error"] is None, result["error"]
            (batch,) = result["batches"]
            assert batch["batchId"] == 2
            assert batch["numInputRows"] == ROWS[damage]
            start = batch["sources"][0]["startOffset"]
            start = json.loads(start) if isinstance(start, str) else start
            assert start == {"events": dict.fromkeys("012", NEXT)}
        else:
            assert not result["started"] and result["batches"] == []
            assert re.search(pattern, result["error"]["message"]), result["error"]["message"][:400]
