#!/usr/bin/env python3
"""Replay a Kafka "world" (topics and their records) on a broker, as a list of steps.

A Kafka fixture's checkpoint only means something beside the topic it was read from, and what
breaks a restart usually happened to the topic (retention deleted records, the topic was deleted
and recreated, partitions were added). So the topic's history is kept in the scenario as steps
that rebuild it on any fresh broker (CI starts its own), not as broker files:

    {"op": "create_topic", "topic": "events", "partitions": 3}
    {"op": "produce", "topic": "events", "partition": 0, "count": 10}   # appends offsets n..n+9
    {"op": "delete_records", "topic": "events", "partition": 0, "before": 6}  # log start -> 6
    {"op": "delete_topic", "topic": "events"}
    {"op": "add_partitions", "topic": "events", "total": 5}

``delete_records`` moves the log start offset at once, as retention does when it deletes a
segment (AdminClient.deleteRecords, KIP-107). Partitions cannot be removed in Kafka: a topic
with fewer partitions is a deleted and recreated one.

CLI (used by sparklab jobs between restarts): ``python scripts/kafka_world.py BOOTSTRAP STEPS.json``
deletes every topic that is not internal, replays the steps and prints the resulting positions.
``STEPS.json`` is a list of steps or a fixture's ``scenario.json`` (its ``world``: the topics as
they were when the fixture was judged, damage included). Needs confluent-kafka (the package's
``kafka`` extra).

    python scripts/kafka_broker.py &     # prints bootstrap=127.0.0.1:PORT
    python scripts/kafka_world.py 127.0.0.1:PORT fixtures/kafka/spark-4.0.5/kafka-stateless-records-deleted/scenario.json
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

TIMEOUT_S = 30.0


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})


def _wait_all(futures: dict[Any, Any]) -> None:
    for future in futures.values():
        future.result(timeout=TIMEOUT_S)


def _topics(admin: AdminClient) -> set[str]:
    return {t for t in admin.list_topics(timeout=TIMEOUT_S).topics if not t.startswith("__")}


def _wait_gone(admin: AdminClient, topics: set[str]) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while topics & _topics(admin):
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"topics {sorted(topics & _topics(admin))} still listed {TIMEOUT_S:.0f} s after deletion"
            )
        time.sleep(0.2)


def reset(bootstrap: str) -> None:
    """Delete every topic that is not internal, and wait until the broker no longer lists them."""
    admin = _admin(bootstrap)
    existing = _topics(admin)
    if existing:
        _wait_all(admin.delete_topics(sorted(existing), operation_timeout=TIMEOUT_S))
        _wait_gone(admin, existing)


def _create(admin: AdminClient, topic: str, partitions: int) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            _wait_all(admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=TIMEOUT_S))
            return
        except Exception as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def _produce(bootstrap: str, topic: str, partition: int, count: int) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False, "log_level": 3}
    )
    for i in range(count):
        producer.produce(
            topic, value=f"p{partition}-r{i}".encode(), key=str(partition).encode(), partition=partition
        )
    left = producer.flush(TIMEOUT_S)
    if left:
        raise RuntimeError(f"{left} records to {topic}-{partition} not delivered within {TIMEOUT_S:.0f} s")


def apply_step(bootstrap: str, step: dict[str, Any]) -> None:
    admin = _admin(bootstrap)
    op, topic = step["op"], step["topic"]
    if op == "create_topic":
        _create(admin, topic, int(step["partitions"]))
    elif op == "produce":
        _produce(bootstrap, topic, int(step["partition"]), int(step["count"]))
    elif op == "delete_records":
        tp = TopicPartition(topic, int(step["partition"]), int(step["before"]))
        _wait_all(admin.delete_records([tp], operation_timeout=TIMEOUT_S))
    elif op == "delete_topic":
        _wait_all(admin.delete_topics([topic], operation_timeout=TIMEOUT_S))
        _wait_gone(admin, {topic})
    elif op == "add_partitions":
        _wait_all(
            admin.create_partitions([NewPartitions(topic, int(step["total"]))], operation_timeout=TIMEOUT_S)
        )
    else:
        raise ValueError(f"unknown world step {op!r}")


def replay(bootstrap: str, steps: list[dict[str, Any]]) -> None:
    reset(bootstrap)
    for step in steps:
        apply_step(bootstrap, step)


def positions(bootstrap: str, topic: str) -> dict[str, list[int]] | None:
    """``{"0": [earliest, latest], ...}`` for a topic, or None when the broker does not list it."""
    from confluent_kafka import Consumer

    meta = _admin(bootstrap).list_topics(timeout=TIMEOUT_S).topics.get(topic)
    if meta is None or meta.error is not None:
        return None
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "checkpoint-doctor-world", "log_level": 3}
    )
    try:
        out = {}
        for p in sorted(meta.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT_S)
            out[str(p)] = [int(low), int(high)]
        return out
    finally:
        consumer.close()


def load_steps(path: str) -> list[dict[str, Any]]:
    """The steps of a file: a list of steps, or a fixture's ``scenario.json`` whose ``world`` they are.

    Raises:
        ValueError: neither shape, or a step without ``op`` and ``topic`` (named by its index).
    """
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    # A fixture's scenario.json keeps its world's steps under "world" (scripts/kafka_fixtures.py).
    steps = data.get("world") if isinstance(data, dict) else data
    if not isinstance(steps, list):
        raise ValueError(f"{path}: neither a list of world steps nor a scenario.json with a 'world' list")
    for i, step in enumerate(steps):
        if not isinstance(step, dict) or "op" not in step or "topic" not in step:
            raise ValueError(f"{path}: step {i} is not an object with 'op' and 'topic': {step!r}")
    return steps


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    bootstrap, steps_path = argv
    try:
        steps = load_steps(steps_path)
    except (OSError, ValueError) as exc:
        print(f"kafka_world: {exc}", file=sys.stderr)
        return 2
    replay(bootstrap, steps)
    topics = sorted({s["topic"] for s in steps})
    print(json.dumps({t: positions(bootstrap, t) for t in topics}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
