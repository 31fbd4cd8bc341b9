"""Kafka fixtures with two Kafka sources in one query (issue 32 item 2), written and restarted by real Spark.

Used by ``scripts/generate_fixtures.py --stage kafka-sources`` (or ``python scripts/kafka_sources_fixtures.py
VERSION...``), as ``scripts/kafka_fixtures.py``: one broker per line (``scripts/kafka_broker.py``), Spark
with the connector in sparklab. The query is ``kafka_union`` (sparklab): source 0 subscribes to ``events``
(3 partitions), source 1 to ``orders`` (2 partitions). Two Trigger.Once runs leave next offsets 15 on
``events`` and 8 on ``orders``; each damage then changes one topic only, so a source judged against
the other's topic would be seen. Layout: ``fixtures/kafka-sources/spark-<v>/<name>/{checkpoint,
scenario.json}``, ``world`` replayable by ``scripts/kafka_world.py``, ``restarts`` with
``failOnDataLoss`` true and false, and ``topic_positions`` per topic.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

import generate_fixtures as gf
import jars
import kafka_broker
import kafka_fixtures as kf
import kafka_world

KAFKA_SOURCES_FIXTURES = gf.FIXTURES / "kafka-sources"
EVENTS, ORDERS = "events", "orders"
TOPICS = {EVENTS: 3, ORDERS: 2}
QUERY = gf._q("kafka_union", sources=2, args={"topic": EVENTS, "topic2": ORDERS})
BASE = "kafka-two-sources"


def _produce(topic: str, count: int) -> list[dict[str, Any]]:
    return [{"op": "produce", "topic": topic, "partition": p, "count": count} for p in range(TOPICS[topic])]


#: Run 0 reads events 0..9 and orders 0..3, run 1 events 10..14 and orders 4..7 (next 15 and 8);
#: then both grow unread (events to 20, orders to 12).
BASE_RUNS: list[list[dict[str, Any]]] = [
    [
        *({"op": "create_topic", "topic": t, "partitions": n} for t, n in TOPICS.items()),
        *_produce(EVENTS, 10),
        *_produce(ORDERS, 4),
    ],
    [*_produce(EVENTS, 5), *_produce(ORDERS, 4)],
]
BASE_AFTER = [*_produce(EVENTS, 5), *_produce(ORDERS, 4)]

DAMAGE: dict[str, dict[str, Any]] = {
    "orders-records-deleted": {
        "description": "retention deleted records of source 1's topic below its positions: orders log "
        "start 10 (next offsets 8); events untouched",
        "steps": [
            {"op": "delete_records", "topic": ORDERS, "partition": p, "before": 10}
            for p in range(TOPICS[ORDERS])
        ],
    },
    "events-recreated-grown": {
        "description": "source 0's topic events deleted and recreated with 3 partitions of 25 records: "
        "its next offsets (15) fall inside the new topic, records 0..14 of each partition are never read; "
        "orders untouched",
        "steps": [
            {"op": "delete_topic", "topic": EVENTS},
            {"op": "create_topic", "topic": EVENTS, "partitions": TOPICS[EVENTS]},
            *_produce(EVENTS, 25),
        ],
    },
    "events-recreated-more-partitions": {
        "description": "source 0's topic events deleted and recreated with 5 partitions of 25 records: "
        "Spark reads the two new partitions from 0 and the three old ones from 15, records 0..14 of "
        "those are never read; orders untouched",
        "steps": [
            {"op": "delete_topic", "topic": EVENTS},
            {"op": "create_topic", "topic": EVENTS, "partitions": 5},
            *({"op": "produce", "topic": EVENTS, "partition": p, "count": 25} for p in range(5)),
        ],
    },
}


def _job(checkpoint: Any, bootstrap: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "query": QUERY["name"],
        "query_args": {**QUERY["args"], **args},
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


def write_line(version: str) -> None:
    """Write the base of one line, derive the damaged scenarios and restart each with failOnDataLoss true and false."""
    work = gf.SCRATCH / "kafka-sources" / f"spark-{version}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = kf._spark_env(version)
    base_world = [s for run in BASE_RUNS for s in run] + BASE_AFTER
    cp = work / BASE / "checkpoint"
    with kafka_broker.running() as broker:
        gf.log(f"== kafka broker {broker.version} at {broker.bootstrap}")
        jobs = []
        for r in range(len(BASE_RUNS)):
            steps = [s for run in BASE_RUNS[: r + 1] for s in run]
            job = _job(cp, broker.bootstrap, {})
            job.update(id=f"kafka-sources-base/{version}/run{r}", op="run")
            job["before_argv"] = kf._world_argv(kf._steps_file(work, f"run{r}", steps), broker.bootstrap)
            jobs.append(job)
        results = gf.run_sparklab(version, jobs, "kafka-sources-base", env)
        problems = [f"{r['id']}: {r['error']['message'].splitlines()[0]}" for r in results if r.get("error")]
        if problems:
            raise RuntimeError(f"kafka-sources base on {version}: {problems}")
        gf.remove_stray_outputs(cp)
        cases: list[tuple[Any, int]] = []
        restart_jobs = []
        for damage, spec in [("", {"description": "", "steps": []}), *DAMAGE.items()]:
            name = f"{BASE}-{damage}" if damage else BASE
            dest = KAFKA_SOURCES_FIXTURES / f"spark-{version}" / name
            if dest.exists():
                shutil.rmtree(dest)
            dest.mkdir(parents=True)
            gf.copy_tree(cp, dest / "checkpoint")
            world = base_world + spec["steps"]
            kafka_world.replay(broker.bootstrap, world)
            scenario: dict[str, Any] = {
                "schema_version": gf.SCHEMA_VERSION,
                "name": name,
                "spark_version": version,
                "kind": "damaged" if damage else "base",
                "base": BASE if damage else None,
                "description": "Kafka topics 'events' (3 partitions, source 0) union 'orders' (2 partitions, "
                "source 1) -> noop; two Trigger.Once runs: next offsets events 15, orders 8; the topics then "
                "grow to 20 and 12." + (f" Damage: {spec['description']}." if damage else ""),
                "query": QUERY,
                "written_with": {
                    "trigger": "once",
                    "runs": len(BASE_RUNS),
                    "kafka_connector": jars.CONNECTOR_FOR[version][1],
                    "kafka_broker": broker.version,
                },
                "world": world,
                "world_damage_steps": len(spec["steps"]),
                "topic_positions": {t: kafka_world.positions(broker.bootstrap, t) for t in TOPICS},
                "facts": gf.compute_facts(dest, QUERY),
                "fingerprint": gf.fingerprint(dest),
                "restarts": [],
            }
            world_path = kf._steps_file(work, name, world)
            for fol in kf.FAIL_ON_DATA_LOSS:
                scenario["restarts"].append(
                    {
                        "spark": version,
                        "mode": "micro-batch",
                        "query": QUERY["name"],
                        "options": {"failOnDataLoss": fol},
                        "fingerprint": scenario["fingerprint"],
                        "result": None,
                    }
                )
                tmp = work / "oracle" / f"{name}-fol-{fol}"
                gf.copy_tree(dest / "checkpoint", tmp / "checkpoint")
                job = _job(tmp / "checkpoint", broker.bootstrap, {"failOnDataLoss": fol})
                job.update(id=f"kafka-sources/{version}/{name}#fol={fol}", op="restart")
                job["before_argv"] = kf._world_argv(world_path, broker.bootstrap)
                restart_jobs.append(job)
                cases.append((dest / "scenario.json", len(scenario["restarts"]) - 1))
            gf.write_json(dest / "scenario.json", scenario)
        results = gf.run_sparklab(version, restart_jobs, "kafka-sources-oracle", env)
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
