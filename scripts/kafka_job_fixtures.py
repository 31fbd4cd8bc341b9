"""Kafka changed-query fixtures (issue 23): the Kafka base restarted by job modules that subscribe to
other topics, on a real broker, on every line.

Used by ``scripts/generate_fixtures.py --stage kafka-jobs`` (stdlib + confluent-kafka in the calling
python, as ``--stage kafka``). Per line: one broker (``scripts/kafka_broker.py``); the base
``kafka-stateless`` is written as ``scripts/kafka_fixtures.py`` writes it (topic ``events``, 3
partitions, two Trigger.Once runs: next offsets 15), then a second topic ``orders`` (3 partitions of
5 records) is created, and each change of :data:`KAFKA_JOB_CHANGES` restarts a copy of the checkpoint
with its job (``fixtures/jobs/changes.py``, the broker given in ``CHECKPOINT_DOCTOR_JOB_KAFKA``).
Layout: ``fixtures/kafka-jobs/spark-<v>/<name>/{checkpoint,scenario.json}``; ``world`` rebuilds both
topics on any broker. What each line's Spark says the jobs run is recorded with the other jobs
(``--stage jobs``, fixtures/jobs/facts-<v>.json).
"""

from __future__ import annotations

import shutil
from typing import Any

import generate_fixtures as gf
import jars
import kafka_broker
import kafka_fixtures as kf
import kafka_world

KAFKA_JOB_FIXTURES = gf.FIXTURES / "kafka-jobs"
BASE = "kafka-stateless"
OTHER = "orders"
#: After the base: a second topic the changed jobs subscribe to.
OTHER_TOPIC = [
    {"op": "create_topic", "topic": OTHER, "partitions": kf.PARTITIONS},
    *({"op": "produce", "topic": OTHER, "partition": p, "count": 5} for p in range(kf.PARTITIONS)),
]
#: name -> (job function in fixtures/jobs/changes.py, what changed)
KAFKA_JOB_CHANGES: dict[str, tuple[str, str]] = {
    "kafka-job-unchanged": ("kafka_events", "the same query as a job module (no change)"),
    "kafka-job-topic-changed": ("kafka_orders", "subscribe events -> orders (failOnDataLoss true)"),
    "kafka-job-topic-changed-lenient": (
        "kafka_orders_lenient",
        "subscribe events -> orders, failOnDataLoss false",
    ),
    "kafka-job-topic-added": ("kafka_events_orders", "subscribe events -> events,orders"),
}


def job_specs() -> list[str]:
    """The Kafka job specs, for the job probe (``--stage jobs``)."""
    return [f"{gf.JOBS_FILE}:{function}" for function, _ in KAFKA_JOB_CHANGES.values()]


def write_line(version: str) -> None:
    """Write the base of one line and restart a copy with each changed job."""
    work = gf.SCRATCH / "kafka-jobs" / f"spark-{version}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = kf._spark_env(version)
    base_world = [s for run in kf.BASE_RUNS for s in run] + kf.BASE_AFTER
    world = base_world + OTHER_TOPIC
    with kafka_broker.running() as broker:
        gf.log(f"== kafka broker {broker.version} at {broker.bootstrap}, ready in {broker.started_in_s} s")
        jobs = []
        for r in range(len(kf.BASE_RUNS)):
            steps = [s for run in kf.BASE_RUNS[: r + 1] for s in run]
            job = kf._job(version, BASE, work / BASE / "checkpoint", broker.bootstrap, {})
            job.update(id=f"kafka-jobs-base/{version}/run{r}", op="run")
            job["before_argv"] = kf._world_argv(kf._steps_file(work, f"base-run{r}", steps), broker.bootstrap)
            jobs.append(job)
        results = gf.run_sparklab(version, jobs, "kafka-jobs-base", env)
        problems = [f"{r['id']}: {r['error']['message'].splitlines()[0]}" for r in results if r.get("error")]
        cp = work / BASE / "checkpoint"
        gf.remove_stray_outputs(cp)
        kafka_world.replay(broker.bootstrap, world)
        positions = {t: kafka_world.positions(broker.bootstrap, t) for t in (kf.TOPIC, OTHER)}
        world_path = kf._steps_file(work, "world", world)
        cases: list[tuple[Any, dict[str, Any]]] = []
        for name, (function, what) in KAFKA_JOB_CHANGES.items():
            dest = KAFKA_JOB_FIXTURES / f"spark-{version}" / name
            if dest.exists():
                shutil.rmtree(dest)
            dest.mkdir(parents=True)
            gf.copy_tree(cp, dest / "checkpoint")
            query = f"job:{gf.JOBS_FILE}:{function}"
            scenario: dict[str, Any] = {
                "schema_version": gf.SCHEMA_VERSION,
                "name": name,
                "spark_version": version,
                "kind": "damaged",
                "base": BASE,
                "description": f"{kf.KAFKA_BASES[BASE]['description']} Restarted by {query[4:]}: {what}; "
                f"topic {OTHER} (3 partitions of 5 records) exists beside it.",
                "query": kf.KAFKA_BASES[BASE]["query"],
                "written_with": {
                    "trigger": "once",
                    "runs": len(kf.BASE_RUNS),
                    "kafka_connector": jars.CONNECTOR_FOR[version][1],
                    "kafka_broker": broker.version,
                },
                "world": world,
                "topic_positions": positions,
                "facts": gf.compute_facts(dest, kf.KAFKA_BASES[BASE]["query"]),
                "fingerprint": gf.fingerprint(dest),
                "restarts": [
                    {"spark": version, "mode": "micro-batch", "query": query, "confs": {}, "result": None}
                ],
            }
            if problems:
                scenario["generation_problems"] = problems
            scenario["restarts"][0]["fingerprint"] = scenario["fingerprint"]
            gf.write_json(dest / "scenario.json", scenario)
            tmp = work / "oracle" / name
            gf.copy_tree(dest / "checkpoint", tmp / "checkpoint")
            job = kf._job(version, BASE, tmp / "checkpoint", broker.bootstrap, {})
            job.update(id=f"kafka-jobs/{version}/{name}", op="restart", query=query)
            job["before_argv"] = kf._world_argv(world_path, broker.bootstrap)
            cases.append((dest / "scenario.json", job))
        results = gf.run_sparklab(version, [job for _, job in cases], "kafka-jobs-oracle", env)
        for (sfile, _), result in zip(cases, results, strict=True):
            scen = gf.load_json(sfile)
            scen["restarts"][0]["result"] = result
            gf.write_json(sfile, scen)
            err = result.get("error")
            gf.log(
                f"   {result['id']}: started={result['started']} batches={[b['batchId'] for b in result['batches']]}"
                f" error={(err['message'].splitlines() or [''])[0][:160] if err else None}"
            )
    shutil.rmtree(work, ignore_errors=True)


def stage_kafka_jobs(versions: list[str]) -> None:
    for version in versions:
        if version in gf.VERSIONS:
            write_line(version)
