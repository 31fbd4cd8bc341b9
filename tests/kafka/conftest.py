"""A real Kafka broker for the tests under tests/kafka/ (one per session, started on first use).

The broker is ``scripts/kafka_broker.py``: kafka_2.13 from Maven (``scripts/jars.py``), KRaft,
one node on 127.0.0.1 free ports, its log dir in a temp folder removed at the end.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import kafka_broker  # noqa: E402


@pytest.fixture(scope="session")
def kafka() -> Iterator[kafka_broker.Broker]:
    """A running broker; ``kafka.bootstrap`` is its ``host:port``."""
    broker = kafka_broker.start()
    try:
        yield broker
    finally:
        broker.stop(grace_s=0)  # its logs are removed: no controlled shutdown to wait for


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "kafka" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.kafka)
