"""Faults at the Kafka edge that must stay one checkpoint's (issue 31 item 11): a checkpoint naming a
topic Kafka would refuse (a space, 250 characters) is that checkpoint's CD207, not every Kafka
checkpoint of the audit unreadable; a transient ``NOT_LEADER_FOR_PARTITION`` is asked again within the
call's deadline. The broker is the session's real one; the leader fault is injected into its client."""

from __future__ import annotations

import json
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import kafka_world
import pytest
from confluent_kafka import KafkaError, KafkaException

from checkpoint_doctor.errors import EndpointUnreachableError
from checkpoint_doctor.model import KafkaOffset, legal_topic
from checkpoint_doctor.world.kafka import KafkaReader
from tests.cli.test_schemas import validate
from tests.kafka.test_live_audit import build_topic_as_read, copy_checkpoint
from tests.kafka.test_live_diagnose import cli

pytestmark = pytest.mark.kafka


@pytest.fixture
def events(kafka: Any) -> str:
    kafka_world.reset(kafka.bootstrap)
    build_topic_as_read(kafka.bootstrap)
    return str(kafka.bootstrap)


def test_topic_names_as_kafka_validates_them() -> None:
    assert legal_topic("events") and legal_topic("a.b_c-9") and legal_topic("t" * 249)
    for bad in ("bad topic", "t" * 250, "", ".", "..", "ümlaut", "a/b"):
        assert not legal_topic(bad), bad


def test_an_illegal_topic_name_is_its_checkpoints_finding_not_the_audits(events: str, tmp_path: Path) -> None:
    root = tmp_path / "root"
    copy_checkpoint(root / "q-events")
    copy_checkpoint(root / "q-space", topic="bad topic")
    copy_checkpoint(root / "q-long", topic="t" * 250)
    # --loss-horizon 60: q-events' records (an hour from retention) are not CD213's here
    out = cli(
        "audit", str(root), "--kafka-bootstrap-servers", events, "--loss-horizon", "60", "--format", "json"
    )
    doc = json.loads(out.stdout)
    validate("audit", doc)
    # an error on two checkpoints, nothing unreadable (was: exit 8, all three "unreadable")
    assert out.returncode == doc["exit_code"] == 4, out.stderr
    records = {Path(r["url"]).name: r for r in doc["result"]["records"]}
    assert records["q-events"]["verdict"] != "unreadable" and records["q-events"]["kafka"]["checked"]
    for name, topic in (("q-space", "bad topic"), ("q-long", "t" * 250)):
        record = records[name]
        assert record["verdict"] == "error" and record["kafka"]["checked"], record
        assert "CD207" in record["codes"]
        # a topic that is not there has nothing to count down (was "nothing unread")
        assert record["kafka"].get("retention") is None
        one = cli("diagnose", str(root / name), "--kafka-bootstrap-servers", events, "--format", "json")
        assert one.returncode == 4, one.stderr
        (gone,) = [f for f in json.loads(one.stdout)["result"]["findings"] if f["code"] == "CD207"]
        assert f"{topic}-0: next 15, topic missing (not a legal Kafka topic name" in gone["message"]


class _LeaderMoving:
    """The real admin client, except that the first ``failures`` list_offsets answers for ``events-1``
    are NOT_LEADER_FOR_PARTITION (a leader election under way)."""

    def __init__(self, admin: Any, failures: int) -> None:
        self.admin = admin
        self.failures = failures
        self.asked: list[int] = []

    def list_offsets(self, request: dict[Any, Any], **kw: Any) -> dict[Any, Any]:
        futures = dict(self.admin.list_offsets(request, **kw))
        self.asked.append(len(request))
        for tp in list(futures):
            if (tp.topic, tp.partition) == ("events", 1) and self.failures:
                self.failures -= 1
                failed: Future[Any] = Future()
                failed.set_exception(KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)))
                futures[tp] = failed
        return futures

    def __getattr__(self, name: str) -> Any:
        return getattr(self.admin, name)


def test_a_moving_leader_is_asked_again(events: str) -> None:
    reader = KafkaReader(events)
    moving = _LeaderMoving(reader.admin, failures=2)
    reader.admin = moving
    try:
        live = reader.read(
            [KafkaOffset((("events", 0, 15), ("events", 1, 15), ("events", 2, 15)))], heads=False
        )
    finally:
        reader.close()
    assert live.live == {"events": {0: (0, 20), 1: (0, 20), 2: (0, 20)}}
    # earliest: 3 partitions, then events-1 twice more; latest: 3 partitions
    assert moving.asked == [3, 1, 1, 3]


def test_a_leader_that_never_comes_is_an_error_within_the_calls_deadline(events: str) -> None:
    reader = KafkaReader(events, timeout_s=1.0)
    reader.admin = _LeaderMoving(reader.admin, failures=10**6)
    try:
        with pytest.raises(EndpointUnreachableError, match="Not leader for partition"):
            reader.read([KafkaOffset((("events", 1, 15),))], heads=False)
    finally:
        reader.close()
    assert len(reader.admin.asked) > 1  # asked again before giving up
