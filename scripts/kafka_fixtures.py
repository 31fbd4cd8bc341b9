"""Kafka fixtures: checkpoints written by real Spark + its Kafka connector, damage done to the world.

Used by ``scripts/generate_fixtures.py --stage kafka`` (stdlib + confluent-kafka in the calling
python; Spark runs in sparklab with the connector from ``scripts/jars.py``, one broker from
``scripts/kafka_broker.py`` per line). Layout: ``fixtures/kafka/spark-<v>/<name>/{checkpoint,
scenario.json}``. A scenario is its checkpoint plus ``world``: the topic's history as replayable
steps (``scripts/kafka_world.py``). The base steps are those the base was written against; a damaged
scenario appends the damage (records deleted as retention does, topic deleted or recreated,
partitions added). Its checkpoint is the base's, byte for byte: the damage is outside it.

Each scenario is restarted on its own line with ``failOnDataLoss`` true (the connector's default)
and false, on a fresh broker rebuilt from ``world``; what Spark did is recorded under ``restarts``,
with the topic's positions (``[earliest, latest]`` per partition) the restart met.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import generate_fixtures as gf
import jars
import kafka_broker
import kafka_world

KAFKA_FIXTURES = gf.FIXTURES / "kafka"
TOPIC = "events"
PARTITIONS = 3
#: sparklab reads the connector jars for ``spark.jars`` from this variable.
SPARK_JARS_ENV = "CHECKPOINT_DOCTOR_SPARK_JARS"
WORLD_PY = Path(__file__).resolve().parent / "kafka_world.py"


def _produce_all(count: int, partitions: range = range(PARTITIONS)) -> list[dict[str, Any]]:
    return [{"op": "produce", "topic": TOPIC, "partition": p, "count": count} for p in partitions]


#: The base world: 3 partitions of 10 records, read by run 0 (batch 0 ends at 10); 5 more each,
#: read by run 1 (batch 1 ends at 15); then 5 more each that no batch has read (latest 20).
BASE_RUNS: list[list[dict[str, Any]]] = [
    [{"op": "create_topic", "topic": TOPIC, "partitions": PARTITIONS}, *_produce_all(10)],
    _produce_all(5),
]
BASE_AFTER = _produce_all(5)

KAFKA_BASES: dict[str, dict[str, Any]] = {
    "kafka-stateless": {
        "description": "Kafka topic 'events' (3 partitions) -> select -> noop; two Trigger.Once runs: "
        "offsets 0 (next 10 per partition) and 1 (next 15); the topic then grows to 20 per partition.",
        "query": gf._q("kafka_stateless"),
    },
    "kafka-stateful": {
        "description": "Kafka topic 'events' (3 partitions) -> groupBy(partition).count, update, HDFS "
        "state; two Trigger.Once runs: offsets 0 (next 10) and 1 (next 15), state versions 1..2; the "
        "topic then grows to 20 per partition.",
        "query": gf._q("kafka_count", stateful=True),
    },
}

#: World damage after the base was written (its checkpoint's next offsets are 15 per partition).
KAFKA_DAMAGE: dict[str, dict[str, Any]] = {
    "records-deleted": {
        "description": "retention deleted records below the checkpoint's positions: log start 18 on every "
        "partition (AdminClient.deleteRecords), next offsets 15",
        "steps": [
            {"op": "delete_records", "topic": TOPIC, "partition": p, "before": 18} for p in range(PARTITIONS)
        ],
    },
    "topic-recreated": {
        "description": "topic deleted and recreated with 3 partitions of 5 records: the checkpoint's "
        "next offsets (15) are above the new latest (5)",
        "steps": [
            {"op": "delete_topic", "topic": TOPIC},
            {"op": "create_topic", "topic": TOPIC, "partitions": PARTITIONS},
            *_produce_all(5),
        ],
    },
    "topic-recreated-grown": {
        "description": "topic deleted and recreated, then grown to 25 records per partition: the "
        "checkpoint's next offsets (15) fall inside the new topic, records 0..14 of it are never read",
        "steps": [
            {"op": "delete_topic", "topic": TOPIC},
            {"op": "create_topic", "topic": TOPIC, "partitions": PARTITIONS},
            *_produce_all(25),
        ],
    },
    "partitions-added": {
        "description": "two partitions added (5 in all), 3 records in each new one",
        "steps": [{"op": "add_partitions", "topic": TOPIC, "total": 5}, *_produce_all(3, range(3, 5))],
    },
    "partitions-added-trimmed": {
        "description": "two partitions added with 3 records each, then their first record deleted: the new "
        "partitions start at offset 1, not 0",
        "steps": [
            {"op": "add_partitions", "topic": TOPIC, "total": 5},
            *_produce_all(3, range(3, 5)),
            *({"op": "delete_records", "topic": TOPIC, "partition": p, "before": 1} for p in range(3, 5)),
        ],
    },
    "partitions-lost": {
        "description": "topic deleted and recreated with 2 partitions of 25 records: partition 2 is gone",
        "steps": [
            {"op": "delete_topic", "topic": TOPIC},
            {"op": "create_topic", "topic": TOPIC, "partitions": 2},
            *_produce_all(25, range(2)),
        ],
    },
    "topic-deleted": {
        "description": "topic deleted",
        "steps": [{"op": "delete_topic", "topic": TOPIC}],
    },
}

FAIL_ON_DATA_LOSS = ("true", "false")


def _world_argv(steps_path: Path, bootstrap: str) -> list[str]:
    return [sys.executable, str(WORLD_PY), bootstrap, str(steps_path)]


def _spark_env(version: str) -> dict[str, str]:
    pyspark_jars = None
    python = gf.spark_envs.ensure_spark_python(version)
    for cand in sorted(python.parent.parent.glob("lib/python3*/site-packages/pyspark/jars")):
        pyspark_jars = cand
    chosen = jars.spark_jars(version, pyspark_jars)
    return {SPARK_JARS_ENV: ",".join(str(j) for j in chosen)}


def _job(version: str, name: str, checkpoint: Path, bootstrap: str, args: dict[str, Any]) -> dict[str, Any]:
    q = KAFKA_BASES[name]["query"]
    return {
        "query": q["name"],
        "query_args": {"topic": TOPIC, **args},
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


def _steps_file(work: Path, label: str, steps: list[dict[str, Any]]) -> Path:
    path = work / f"{label}.world.json"
    gf.write_json(path, steps)
    return path


def write_line(version: str, names: list[str] | None) -> None:
    """Write the bases of one line, derive the damaged scenarios and restart every one of them."""
    bases = [n for n in KAFKA_BASES if not names or n in names or any(n in s for s in names)]
    work = gf.SCRATCH / "kafka" / f"spark-{version}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = _spark_env(version)
    base_world = [s for run in BASE_RUNS for s in run] + BASE_AFTER
    with kafka_broker.running() as broker:
        gf.log(f"== kafka broker {broker.version} at {broker.bootstrap}, ready in {broker.started_in_s} s")
        # 1. bases: run r replays the steps of runs 0..r (fresh topic), then reads.
        jobs = []
        for name in bases:
            for r in range(len(BASE_RUNS)):
                steps = [s for run in BASE_RUNS[: r + 1] for s in run]
                job = _job(version, name, work / name / "checkpoint", broker.bootstrap, {})
                job.update(id=f"kafka-base/{version}/{name}/run{r}", op="run")
                job["before_argv"] = _world_argv(_steps_file(work, f"{name}-run{r}", steps), broker.bootstrap)
                jobs.append(job)
        results = gf.run_sparklab(version, jobs, "kafka-base", env)
        problems = {
            n: [
                f"{r['id']}: {r['error']['message'].splitlines()[0]}"
                for r in results
                if r.get("error") and n in r["id"]
            ]
            for n in bases
        }
        # 2. scenarios: the base and every damage, restarted with failOnDataLoss true and false.
        cases: list[tuple[Path, int, dict[str, Any]]] = []
        restart_jobs = []
        for name in bases:
            cp = work / name / "checkpoint"
            gf.remove_stray_outputs(cp)
            for damage, spec in [("", {"description": "", "steps": []}), *KAFKA_DAMAGE.items()]:
                scen_name = name if not damage else f"{name}-{damage}"
                dest = KAFKA_FIXTURES / f"spark-{version}" / scen_name
                if dest.exists():
                    shutil.rmtree(dest)
                dest.mkdir(parents=True)
                gf.copy_tree(cp, dest / "checkpoint")
                world = base_world + spec["steps"]
                kafka_world.replay(broker.bootstrap, world)
                scenario = {
                    "schema_version": gf.SCHEMA_VERSION,
                    "name": scen_name,
                    "spark_version": version,
                    "kind": "damaged" if damage else "base",
                    "base": name if damage else None,
                    "description": (
                        KAFKA_BASES[name]["description"]
                        + (f" Damage: {spec['description']}." if damage else "")
                    ),
                    "query": KAFKA_BASES[name]["query"],
                    "written_with": {
                        "trigger": "once",
                        "runs": len(BASE_RUNS),
                        "kafka_connector": jars.CONNECTOR_FOR[version][1],
                        "kafka_broker": broker.version,
                        "world_steps_per_run": [len(run) for run in BASE_RUNS],
                    },
                    "world": world,
                    "world_damage_steps": len(spec["steps"]),
                    "topic_positions": kafka_world.positions(broker.bootstrap, TOPIC),
                    "facts": gf.compute_facts(dest, KAFKA_BASES[name]["query"]),
                    "fingerprint": gf.fingerprint(dest),
                    "restarts": [],
                }
                if problems[name]:
                    scenario["generation_problems"] = problems[name]
                world_path = _steps_file(work, scen_name, world)
                for fol in FAIL_ON_DATA_LOSS:
                    entry = {
                        "spark": version,
                        "mode": "micro-batch",
                        "query": KAFKA_BASES[name]["query"]["name"],
                        "options": {"failOnDataLoss": fol},
                        "fingerprint": scenario["fingerprint"],
                        "result": None,
                    }
                    scenario["restarts"].append(entry)
                    tmp = work / "oracle" / f"{scen_name}-fol-{fol}"
                    gf.copy_tree(dest / "checkpoint", tmp / "checkpoint")
                    job = _job(version, name, tmp / "checkpoint", broker.bootstrap, {"failOnDataLoss": fol})
                    job.update(id=f"kafka/{version}/{scen_name}#fol={fol}", op="restart")
                    job["before_argv"] = _world_argv(world_path, broker.bootstrap)
                    restart_jobs.append(job)
                    cases.append((dest / "scenario.json", len(scenario["restarts"]) - 1, job))
                gf.write_json(dest / "scenario.json", scenario)
        results = gf.run_sparklab(version, restart_jobs, "kafka-oracle", env)
        for (sfile, idx, _), result in zip(cases, results, strict=True):
            scen = gf.load_json(sfile)
            scen["restarts"][idx]["result"] = result
            gf.write_json(sfile, scen)
            err = result.get("error")
            gf.log(
                f"   {result['id']}: started={result['started']} batches={[b['batchId'] for b in result['batches']]}"
                f" timed_out={result['timed_out']} error={(err['message'].splitlines() or [''])[0][:160] if err else None}"
            )
    shutil.rmtree(work, ignore_errors=True)


#: fixtures/kafka-loss/ (issue 32 items 4 and 5): the stateless base with its newest batch uncommitted
#: (``commits/1`` deleted, as a driver that died between writing ``offsets/1`` and ``commits/1`` leaves
#: it: batch 1 planned [10, 15) per partition) over deleted records, and a committed one whose topic
#: was recreated unevenly (one partition grown past the positions, the others below them).
KAFKA_LOSS_FIXTURES = gf.FIXTURES / "kafka-loss"
LOSS_BASE = "kafka-stateless"
UNCOMMITTED = ("commits/1", "commits/.1.crc")
KAFKA_LOSS: dict[str, dict[str, Any]] = {
    "uncommitted": {
        "description": "commits/1 deleted (the driver died between offsets/1 and commits/1): a restart "
        "re-runs batch 1, [10, 15) per partition; the topic holds every record",
        "uncommitted": True,
        "steps": [],
    },
    "uncommitted-records-deleted": {
        "description": "commits/1 deleted, and retention deleted records inside batch 1's range: log start "
        "12 on every partition (batch 1 planned [10, 15))",
        "uncommitted": True,
        "steps": [
            {"op": "delete_records", "topic": TOPIC, "partition": p, "before": 12} for p in range(PARTITIONS)
        ],
    },
    "uncommitted-records-deleted-past": {
        "description": "commits/1 deleted, and retention deleted all of batch 1's range and beyond: log "
        "start 17 on every partition (batch 1 planned [10, 15))",
        "uncommitted": True,
        "steps": [
            {"op": "delete_records", "topic": TOPIC, "partition": p, "before": 17} for p in range(PARTITIONS)
        ],
    },
    "topic-recreated-uneven": {
        "description": "topic deleted and recreated with 3 partitions, 25 records in partition 0 and 5 in "
        "partitions 1 and 2: events-1 and events-2 are below the positions (15), events-0 was grown past "
        "it (records 0..14 of the new topic are new)",
        "uncommitted": False,
        "steps": [
            {"op": "delete_topic", "topic": TOPIC},
            {"op": "create_topic", "topic": TOPIC, "partitions": PARTITIONS},
            {"op": "produce", "topic": TOPIC, "partition": 0, "count": 25},
            *_produce_all(5, range(1, PARTITIONS)),
        ],
    },
}


def write_loss_line(version: str) -> None:
    """fixtures/kafka-loss/spark-<v>/: write the stateless base (two runs), derive each KAFKA_LOSS
    scenario (commits/1 deleted where it says so; the world damaged on the broker) and restart each with
    failOnDataLoss true and false in one Spark process."""
    work = gf.SCRATCH / "kafka-loss" / f"spark-{version}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = _spark_env(version)
    base_world = [s for run in BASE_RUNS for s in run] + BASE_AFTER
    cp = work / LOSS_BASE / "checkpoint"
    with kafka_broker.running() as broker:
        gf.log(f"== kafka broker {broker.version} at {broker.bootstrap}")
        jobs = []
        for r in range(len(BASE_RUNS)):
            steps = [s for run in BASE_RUNS[: r + 1] for s in run]
            job = _job(version, LOSS_BASE, cp, broker.bootstrap, {})
            job.update(id=f"kafka-loss-base/{version}/run{r}", op="run")
            job["before_argv"] = _world_argv(_steps_file(work, f"run{r}", steps), broker.bootstrap)
            jobs.append(job)
        results = gf.run_sparklab(version, jobs, "kafka-loss-base", env)
        problems = [f"{r['id']}: {r['error']['message'].splitlines()[0]}" for r in results if r.get("error")]
        if problems:
            raise RuntimeError(f"kafka-loss base on {version}: {problems}")
        gf.remove_stray_outputs(cp)
        cases: list[tuple[Path, int]] = []
        restart_jobs = []
        for damage, spec in KAFKA_LOSS.items():
            name = f"{LOSS_BASE}-{damage}"
            dest = KAFKA_LOSS_FIXTURES / f"spark-{version}" / name
            if dest.exists():
                shutil.rmtree(dest)
            dest.mkdir(parents=True)
            gf.copy_tree(cp, dest / "checkpoint")
            if spec["uncommitted"]:
                for rel in UNCOMMITTED:
                    (dest / "checkpoint" / rel).unlink(missing_ok=True)
            world = base_world + spec["steps"]
            kafka_world.replay(broker.bootstrap, world)
            scenario: dict[str, Any] = {
                "schema_version": gf.SCHEMA_VERSION,
                "name": name,
                "spark_version": version,
                "kind": "damaged",
                "base": LOSS_BASE,
                "description": KAFKA_BASES[LOSS_BASE]["description"] + f" Damage: {spec['description']}.",
                "query": KAFKA_BASES[LOSS_BASE]["query"],
                "written_with": {
                    "trigger": "once",
                    "runs": len(BASE_RUNS),
                    "kafka_connector": jars.CONNECTOR_FOR[version][1],
                    "kafka_broker": broker.version,
                    "world_steps_per_run": [len(run) for run in BASE_RUNS],
                },
                "damage": [{"op": "delete", "path": rel} for rel in UNCOMMITTED]
                if spec["uncommitted"]
                else [],
                "world": world,
                "world_damage_steps": len(spec["steps"]),
                "topic_positions": kafka_world.positions(broker.bootstrap, TOPIC),
                "facts": gf.compute_facts(dest, KAFKA_BASES[LOSS_BASE]["query"]),
                "fingerprint": gf.fingerprint(dest),
                "restarts": [],
            }
            world_path = _steps_file(work, name, world)
            for fol in FAIL_ON_DATA_LOSS:
                scenario["restarts"].append(
                    {
                        "spark": version,
                        "mode": "micro-batch",
                        "query": KAFKA_BASES[LOSS_BASE]["query"]["name"],
                        "options": {"failOnDataLoss": fol},
                        "fingerprint": scenario["fingerprint"],
                        "result": None,
                    }
                )
                tmp = work / "oracle" / f"{name}-fol-{fol}"
                gf.copy_tree(dest / "checkpoint", tmp / "checkpoint")
                job = _job(version, LOSS_BASE, tmp / "checkpoint", broker.bootstrap, {"failOnDataLoss": fol})
                job.update(id=f"kafka-loss/{version}/{name}#fol={fol}", op="restart")
                job["before_argv"] = _world_argv(world_path, broker.bootstrap)
                restart_jobs.append(job)
                cases.append((dest / "scenario.json", len(scenario["restarts"]) - 1))
            gf.write_json(dest / "scenario.json", scenario)
        results = gf.run_sparklab(version, restart_jobs, "kafka-loss-oracle", env)
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


def stage_kafka(versions: list[str], names: list[str] | None) -> None:
    import kafka_realtime_fixtures  # real-time mode scenarios (4.1+): fixtures/kafka-realtime/

    for version in versions:
        if version in gf.VERSIONS:
            if not names or any(b in names or any(b in s for s in names) for b in KAFKA_BASES):
                write_line(version, names)
            kafka_realtime_fixtures.write_line(version, names)


if __name__ == "__main__":  # pragma: no cover - run through generate_fixtures.py --stage kafka
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if sys.argv[1:2] == [
        "--loss"
    ]:  # fixtures/kafka-loss/ only: python scripts/kafka_fixtures.py --loss 4.3.0
        for v in sys.argv[2:] or list(gf.VERSIONS):
            write_loss_line(v)
    else:
        stage_kafka(sys.argv[1:] or list(gf.VERSIONS), None)
