"""The world steps of the Kafka fixtures, replayed on a real broker: each damage leaves the topic
positions the recorded restarts met (scripts/kafka_world.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import kafka_fixtures  # noqa: E402
import kafka_world  # noqa: E402

BASE = [s for run in kafka_fixtures.BASE_RUNS for s in run] + kafka_fixtures.BASE_AFTER

#: [earliest, latest] per partition after each damage (the base checkpoint's next offsets are 15).
EXPECTED = {
    "": {"0": [0, 20], "1": [0, 20], "2": [0, 20]},
    "records-deleted": {"0": [18, 20], "1": [18, 20], "2": [18, 20]},
    "topic-recreated": {"0": [0, 5], "1": [0, 5], "2": [0, 5]},
    "topic-recreated-grown": {"0": [0, 25], "1": [0, 25], "2": [0, 25]},
    "partitions-added": {"0": [0, 20], "1": [0, 20], "2": [0, 20], "3": [0, 3], "4": [0, 3]},
    "partitions-added-trimmed": {"0": [0, 20], "1": [0, 20], "2": [0, 20], "3": [1, 3], "4": [1, 3]},
    "partitions-lost": {"0": [0, 25], "1": [0, 25]},
    "topic-deleted": None,
}


def test_every_damage_has_its_expected_positions() -> None:
    assert set(EXPECTED) == {"", *kafka_fixtures.KAFKA_DAMAGE}


@pytest.mark.parametrize("damage", sorted(EXPECTED))
def test_world_replay_leaves_the_positions_of_the_damage(kafka, damage: str) -> None:
    steps = BASE + (kafka_fixtures.KAFKA_DAMAGE[damage]["steps"] if damage else [])
    kafka_world.replay(kafka.bootstrap, steps)
    assert kafka_world.positions(kafka.bootstrap, kafka_fixtures.TOPIC) == EXPECTED[damage]


def test_replay_starts_from_an_empty_broker(kafka) -> None:
    kafka_world.replay(kafka.bootstrap, [{"op": "create_topic", "topic": "other", "partitions": 1}])
    kafka_world.replay(kafka.bootstrap, BASE)
    assert kafka_world.positions(kafka.bootstrap, "other") is None
    assert kafka_world.positions(kafka.bootstrap, kafka_fixtures.TOPIC) == EXPECTED[""]
