"""The documentation's Kafka examples (docs/kafka.md), run as printed against the session's broker with
each example's topics replayed from its fixture's recorded world (scripts/kafka_world.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kafka_world
import pytest

from tests.docs.examples import FIXTURES, KAFKA_ON_THE_PAGE, check, examples

EXAMPLES = [e for e in examples() if "skip" not in e.spec and "kafka" in e.spec]


def test_the_kafka_examples_are_found() -> None:
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_the_kafka_example_prints_what_the_page_shows(example, kafka: Any, tmp_path: Path) -> None:
    scenario = json.loads(
        (FIXTURES / str(example.one("kafka")) / "scenario.json").read_text(encoding="utf-8")
    )
    kafka_world.replay(kafka.bootstrap, scenario["world"])
    check(example, tmp_path, {KAFKA_ON_THE_PAGE: kafka.bootstrap})
