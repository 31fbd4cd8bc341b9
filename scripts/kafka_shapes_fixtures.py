"""Kafka fixtures per subscription shape (issue 32 item 1), written and restarted by real Spark.

    flock /tmp/checkpoint-doctor-spark.lock python scripts/kafka_shapes_fixtures.py 3.5.9 4.3.0

A checkpoint's offsets do not say whether the query used ``subscribe``, ``subscribePattern`` or
``assign`` (``ConsumerStrategy``), and the connector treats a deleted topic or a missing partition
differently in each: ``SubscribeStrategy`` and ``AssignStrategy`` describe their topics by name
(``Admin.describeTopics``: a deleted topic fails with ``UnknownTopicOrPartitionException``), a
``SubscribePatternStrategy`` lists the topics matching its regex (a deleted topic's partitions are
"gone", which ``failOnDataLoss=false`` drops), and ``AssignStrategy`` keeps only its assigned partitions
(one the topic no longer has is "gone", one added later is never read). Same world, three queries:
``events`` (3 partitions) and ``events-audit`` (2 partitions), read by ``subscribe=events,events-audit``,
``subscribePattern=events.*`` and ``assign={"events":[0,1,2],"events-audit":[0,1]}``. Two Trigger.Once
runs leave next offsets 15 on ``events`` and 8 on ``events-audit``; both then grow unread (20 and 12).
Each damage changes ``events`` only (deleted; recreated with 2 partitions; 2 partitions added, from 0
or trimmed to start at 1), and each scenario is restarted with ``failOnDataLoss`` true and false.

Used as ``scripts/kafka_fixtures.py`` (one broker per line, ``scripts/kafka_broker.py``; Spark with the
connector in sparklab, one process for a line's bases and one for its restarts). Layout:
``fixtures/kafka-shapes/spark-<v>/<shape base>[-<damage>]/{checkpoint,scenario.json}``; ``world``
replayable by ``scripts/kafka_world.py``; ``shape`` and ``subscription`` say how the query subscribed.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any

import generate_fixtures as gf
import jars
import kafka_broker
import kafka_fixtures as kf
import kafka_world

KAFKA_SHAPES_FIXTURES = gf.FIXTURES / "kafka-shapes"
EVENTS, AUDIT = "events", "events-audit"
TOPICS = {EVENTS: 3, AUDIT: 2}

#: base name -> (the option naming the subscription, its value)
SHAPES: dict[str, tuple[str, str]] = {
    "kafka-subscribe": ("subscribe", f"{EVENTS},{AUDIT}"),
    "kafka-pattern": ("subscribePattern", "events.*"),
    "kafka-assign": (
        "assign",
        json.dumps({t: list(range(n)) for t, n in TOPICS.items()}, separators=(",", ":")),
    ),
}


def query(base: str) -> dict[str, Any]:
    shape, value = SHAPES[base]
    return gf._q("kafka_stateless", args={"shape": shape, "subscription": value})


def _produce(topic: str, count: int, partitions: range | None = None) -> list[dict[str, Any]]:
    parts = partitions if partitions is not None else range(TOPICS[topic])
    return [{"op": "produce", "topic": topic, "partition": p, "count": count} for p in parts]


#: Run 0 reads events 0..9 and events-audit 0..3, run 1 events 10..14 and events-audit 4..7.
BASE_RUNS: list[list[dict[str, Any]]] = [
    [
        *({"op": "create_topic", "topic": t, "partitions": n} for t, n in TOPICS.items()),
        *_produce(EVENTS, 10),
        *_produce(AUDIT, 4),
    ],
    [*_produce(EVENTS, 5), *_produce(AUDIT, 4)],
]
BASE_AFTER = [*_produce(EVENTS, 5), *_produce(AUDIT, 4)]

DAMAGE: dict[str, dict[str, Any]] = {
    "topic-deleted": {
        "description": "topic events deleted (events-audit untouched)",
        "steps": [{"op": "delete_topic", "topic": EVENTS}],
    },
    "topic-recreated-smaller": {
        "description": "topic events deleted and recreated with 2 partitions of 25 records: events-2 is "
        "missing, events-0 and events-1 hold the checkpoint's positions (15)",
        "steps": [
            {"op": "delete_topic", "topic": EVENTS},
            {"op": "create_topic", "topic": EVENTS, "partitions": 2},
            *_produce(EVENTS, 25, range(2)),
        ],
    },
    "partitions-added": {
        "description": "two partitions added to events (5 in all), 3 records in each new one",
        "steps": [{"op": "add_partitions", "topic": EVENTS, "total": 5}, *_produce(EVENTS, 3, range(3, 5))],
    },
    "partitions-added-trimmed": {
        "description": "two partitions added to events with 3 records each, then their first record "
        "deleted: the new partitions start at offset 1, not 0",
        "steps": [
            {"op": "add_partitions", "topic": EVENTS, "total": 5},
            *_produce(EVENTS, 3, range(3, 5)),
            *({"op": "delete_records", "topic": EVENTS, "partition": p, "before": 1} for p in range(3, 5)),
        ],
    },
}


def _job(base: str, checkpoint: Any, bootstrap: str, args: dict[str, Any]) -> dict[str, Any]:
    q = query(base)
    return {
        "query": q["name"],
        "query_args": {**q["args"], **args},
        "checkpoint": str(checkpoint),
        "sink": None,
        "input": None,
        "mode": "micro-batch",
        "trigger": "once",
        "batches": 1,
        "timeout_s": gf.RESTART_TIMEOUT_S,
        "confs": {},
        "options": {},
        "kafka_bootstrap": bootstrap,
    }


def write_line(version: str, damages: list[str] | None = None) -> None:
    """Write the three bases of one line, derive the damaged scenarios, restart each with
    failOnDataLoss true and false (one sparklab process for the bases, one for the restarts)."""
    work = gf.SCRATCH / "kafka-shapes" / f"spark-{version}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = kf._spark_env(version)
    base_world = [s for run in BASE_RUNS for s in run] + BASE_AFTER
    chosen = [
        (d, s)
        for d, s in [("", {"description": "", "steps": []}), *DAMAGE.items()]
        if not damages or d in damages
    ]
    with kafka_broker.running() as broker:
        gf.log(f"== kafka broker {broker.version} at {broker.bootstrap}")
        jobs = []
        for base in SHAPES:
            for r in range(len(BASE_RUNS)):
                steps = [s for run in BASE_RUNS[: r + 1] for s in run]
                job = _job(base, work / base / "checkpoint", broker.bootstrap, {})
                job.update(id=f"kafka-shapes-base/{version}/{base}/run{r}", op="run")
                job["before_argv"] = kf._world_argv(
                    kf._steps_file(work, f"{base}-run{r}", steps), broker.bootstrap
                )
                jobs.append(job)
        results = gf.run_sparklab(version, jobs, "kafka-shapes-base", env)
        problems = [f"{r['id']}: {r['error']['message'].splitlines()[0]}" for r in results if r.get("error")]
        if problems:
            raise RuntimeError(f"kafka-shapes bases on {version}: {problems}")
        cases: list[tuple[Any, int]] = []
        restart_jobs = []
        for base, (shape, value) in SHAPES.items():
            cp = work / base / "checkpoint"
            gf.remove_stray_outputs(cp)
            for damage, spec in chosen:
                name = f"{base}-{damage}" if damage else base
                dest = KAFKA_SHAPES_FIXTURES / f"spark-{version}" / name
                if dest.exists():
                    shutil.rmtree(dest)
                dest.mkdir(parents=True)
                gf.copy_tree(cp, dest / "checkpoint")
                world = base_world + spec["steps"]
                kafka_world.replay(broker.bootstrap, world)
                q = query(base)
                scenario: dict[str, Any] = {
                    "schema_version": gf.SCHEMA_VERSION,
                    "name": name,
                    "spark_version": version,
                    "kind": "damaged" if damage else "base",
                    "base": base if damage else None,
                    "shape": shape,
                    "subscription": value,
                    "description": f"Kafka {shape}={value} over topics 'events' (3 partitions) and "
                    "'events-audit' (2 partitions) -> noop; two Trigger.Once runs: next offsets events 15, "
                    "events-audit 8; the topics then grow to 20 and 12."
                    + (f" Damage: {spec['description']}." if damage else ""),
                    "query": q,
                    "written_with": {
                        "trigger": "once",
                        "runs": len(BASE_RUNS),
                        "kafka_connector": jars.CONNECTOR_FOR[version][1],
                        "kafka_broker": broker.version,
                    },
                    "world": world,
                    "world_damage_steps": len(spec["steps"]),
                    "topic_positions": {t: kafka_world.positions(broker.bootstrap, t) for t in TOPICS},
                    "facts": gf.compute_facts(dest, q),
                    "fingerprint": gf.fingerprint(dest),
                    "restarts": [],
                }
                world_path = kf._steps_file(work, name, world)
                for fol in kf.FAIL_ON_DATA_LOSS:
                    scenario["restarts"].append(
                        {
                            "spark": version,
                            "mode": "micro-batch",
                            "query": q["name"],
                            "options": {"failOnDataLoss": fol, shape: value},
                            "fingerprint": scenario["fingerprint"],
                            "result": None,
                        }
                    )
                    tmp = work / "oracle" / f"{name}-fol-{fol}"
                    gf.copy_tree(dest / "checkpoint", tmp / "checkpoint")
                    job = _job(base, tmp / "checkpoint", broker.bootstrap, {"failOnDataLoss": fol})
                    job.update(id=f"kafka-shapes/{version}/{name}#fol={fol}", op="restart")
                    job["before_argv"] = kf._world_argv(world_path, broker.bootstrap)
                    restart_jobs.append(job)
                    cases.append((dest / "scenario.json", len(scenario["restarts"]) - 1))
                gf.write_json(dest / "scenario.json", scenario)
        results = gf.run_sparklab(version, restart_jobs, "kafka-shapes-oracle", env)
        for (sfile, idx), result in zip(cases, results, strict=True):
            scen = gf.load_json(sfile)
            scen["restarts"][idx]["result"] = result
            gf.write_json(sfile, scen)
            err = result.get("error")
            gf.log(
                f"   {result['id']}: started={result['started']} batches={[b['batchId'] for b in result['batches']]}"
                f" error={(err['message'].splitlines() or [''])[0][:160] if err else None}"
            )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":  # pragma: no cover - a generator run on a machine with Spark and Java
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    for v in sys.argv[1:] or list(gf.VERSIONS):
        write_line(v)
