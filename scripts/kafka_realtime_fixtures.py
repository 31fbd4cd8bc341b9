"""Kafka checkpoints written in real-time mode, restarted in every mode on every line that has it.

Used by ``scripts/generate_fixtures.py --stage kafka`` (``--scenario kafka-realtime`` for these alone).
Layout: ``fixtures/kafka-realtime/spark-<v>/<name>/{checkpoint,scenario.json}``, as ``fixtures/kafka/``.

Real-time mode (``Trigger.RealTime``, SPARK-53736; the trigger SPARK-53737, the Kafka source
SPARK-54027) exists from Spark 4.1.0: 4.1 has it in the JVM only (``Trigger.RealTime`` /
``RealTimeTrigger``; PySpark 4.1 has no ``trigger(realTime=...)``, sparklab calls the JVM), 4.2 and
4.3 in PySpark too. A batch runs for the trigger's duration (at least
``spark.sql.streaming.realTimeMode.minBatchDuration``, 5 s) with one long-running task per Kafka
partition, and its end offsets are what the tasks reached: ``offsets/N`` is written at the END of
batch N, then ``commits/N`` (SPARK-53915), not before it runs as in micro-batch. 4.3 runs a stateless
real-time query with async progress tracking by default
(``spark.sql.streaming.realTimeMode.asyncProgressTrackingByDefault.enabled``, interval 0: every batch
is written); 4.1/4.2 refuse async progress tracking in real-time mode.

On restart with ``L > K`` a real-time query deletes the offsets files above the newest commit
(``MicroBatchExecution.initializeExecution``: "Deleting extra entries in offset log to sync up with
commit log.", on 4.1, 4.2 and 4.3) and plans batch K+1 afresh from ``offsets/K``; a micro-batch or
async restart re-runs batch L with its logged range.

* Base ``kafka-realtime``: topic ``events`` (2 partitions: one task slot each under ``local[2]``) of
  10 records each -> Kafka topic ``out``, one real-time run of two batches (batch 0 ends where it
  started, batch 1 reads 0..10); the topic then grows to 15.
* ``kafka-realtime-uncommitted-tail``: ``commits/1`` deleted, as a driver that died between writing
  ``offsets/1`` and ``commits/1`` leaves it (the two writes are hundreds of ms apart).
* ``kafka-realtime-micro-batch`` (and its ``-uncommitted-tail``): the same query written by two
  Trigger.Once micro-batch runs (batch 0 reads 0..10, batch 1 10..15, the topic then grows to 20),
  for the switch the other way: a micro-batch checkpoint restarted in real-time mode.

Each scenario is restarted on its own line and every newer line with real-time mode, in real-time,
async micro-batch and synchronous micro-batch mode, on a broker rebuilt from ``world``. One Spark
process per line writes that line's bases and runs every restart on it, so generate the lines oldest
first (``--spark 4.1.4``, then 4.2.1, then 4.3.0): a line restarts the scenarios older lines wrote.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import generate_fixtures as gf
import jars
import kafka_broker
import kafka_fixtures as kf
import kafka_world

FIXTURES_RT = gf.FIXTURES / "kafka-realtime"
#: The lines whose Spark has the real-time trigger, oldest first.
RT_VERSIONS = ("4.1.4", "4.2.1", "4.3.0")
TOPIC = "events"
SINK_TOPIC = "out"
PARTITIONS = 2
TRIGGER = "5 seconds"
MODES = ("real-time", "async", "micro-batch")
#: How each mode's restart is triggered (micro-batch: Trigger.Once, as the other Kafka restarts).
TRIGGER_OF = {"real-time": "real-time", "async": "processing", "micro-batch": "once"}

BASE_WORLD: list[dict[str, Any]] = [
    {"op": "create_topic", "topic": TOPIC, "partitions": PARTITIONS},
    {"op": "create_topic", "topic": SINK_TOPIC, "partitions": 1},
    *({"op": "produce", "topic": TOPIC, "partition": p, "count": 10} for p in range(PARTITIONS)),
]
AFTER = [{"op": "produce", "topic": TOPIC, "partition": p, "count": 5} for p in range(PARTITIONS)]

BASE = "kafka-realtime"
MB_BASE = "kafka-realtime-micro-batch"
QUERY = gf._q("kafka_to_kafka", mode="real-time", sink="kafka")
MB_QUERY = gf._q("kafka_to_kafka", sink="kafka")
DESCRIPTION = (
    f"Kafka topic '{TOPIC}' ({PARTITIONS} partitions, 10 records each) -> Kafka topic '{SINK_TOPIC}', "
    f"one run with Trigger.RealTime('{TRIGGER}') stopped after two batches; the topic then grows to 15."
)
MB_RUNS: list[list[dict[str, Any]]] = [
    BASE_WORLD,
    [{"op": "produce", "topic": TOPIC, "partition": p, "count": 5} for p in range(PARTITIONS)],
]
MB_DESCRIPTION = (
    f"Kafka topic '{TOPIC}' ({PARTITIONS} partitions) -> Kafka topic '{SINK_TOPIC}', two Trigger.Once "
    "micro-batch runs: offsets 0 (next 10 per partition) and 1 (next 15); the topic then grows to 20."
)
DAMAGE: dict[str, dict[str, Any]] = {
    "uncommitted-tail": {
        "description": "commits/1 deleted: the driver died between writing offsets/1 and commits/1",
        "ops": [{"op": "delete", "path": "commits/1"}],
    },
}


def wanted(names: list[str] | None) -> bool:
    """Whether ``--scenario`` names select these scenarios (none named: all)."""
    return not names or any(n.startswith(BASE) for n in names)


def _job(checkpoint: Path, bootstrap: str, mode: str) -> dict[str, Any]:
    return {
        "query": QUERY["name"],
        "query_args": {"topic": TOPIC, "sink_topic": SINK_TOPIC},
        "checkpoint": str(checkpoint),
        "sink": None,
        "input": None,
        "mode": mode,
        "trigger": TRIGGER_OF[mode],
        "trigger_interval": TRIGGER if mode == "real-time" else None,
        "batches": 1,
        "timeout_s": gf.RESTART_TIMEOUT_S + 30,
        "confs": {},
        "options": {},
        "kafka_bootstrap": bootstrap,
    }


def written_after_ms(checkpoint: Path) -> dict[str, int]:
    """Per offsets file: how long after its batch's ``batchTimestampMs`` it was written (file mtime).

    Real-time mode writes ``offsets/N`` when batch N ends (at least the trigger's duration after it
    started); micro-batch writes it before the batch runs. Kept in scenario.json because git does
    not keep the files' times.
    """
    out = {}
    for n in gf.batch_ids(checkpoint / "offsets"):
        path = checkpoint / "offsets" / str(n)
        lines = path.read_text(encoding="utf-8").split("\n")
        stamp = int(json.loads(lines[1])["batchTimestampMs"])
        out[str(n)] = round(path.stat().st_mtime * 1000) - stamp
    return out


def _scenario(version: str, base: str, damage: str | None, broker: kafka_broker.Broker) -> dict[str, Any]:
    spec = DAMAGE.get(damage or "", {})
    rt = base == BASE
    runs = [BASE_WORLD] if rt else MB_RUNS
    return {
        "schema_version": gf.SCHEMA_VERSION,
        "name": f"{base}-{damage}" if damage else base,
        "spark_version": version,
        "kind": "damaged" if damage else "base",
        "base": base if damage else None,
        "description": (DESCRIPTION if rt else MB_DESCRIPTION)
        + (f" Damage: {spec['description']}." if damage else ""),
        "query": QUERY if rt else MB_QUERY,
        "written_with": {
            "trigger": f"real-time {TRIGGER}" if rt else "once",
            "runs": len(runs),
            "kafka_connector": jars.CONNECTOR_FOR[version][1],
            "kafka_broker": broker.version,
            "world_steps_per_run": [len(run) for run in runs],
        },
        "world": [s for run in runs for s in run] + AFTER,
        "world_damage_steps": 0,
        "damage": spec.get("ops", []),
        "restarts": [],
    }


def _base_jobs(version: str, work: Path, bootstrap: str) -> list[dict[str, Any]]:
    """The real-time base's run and the two micro-batch runs of the other base."""
    rt = _job(work / BASE / "checkpoint", bootstrap, "real-time")
    rt.update(id=f"kafka-realtime-base/{version}", op="run", batches=2, timeout_s=120)
    rt["before_argv"] = kf._world_argv(kf._steps_file(work, "base", BASE_WORLD), bootstrap)
    jobs = [rt]
    for r in range(len(MB_RUNS)):
        job = _job(work / MB_BASE / "checkpoint", bootstrap, "micro-batch")
        job.update(id=f"kafka-realtime-base/{version}/micro-batch/run{r}", op="run")
        steps = [s for run in MB_RUNS[: r + 1] for s in run]
        job["before_argv"] = kf._world_argv(kf._steps_file(work, f"mb-run{r}", steps), bootstrap)
        jobs.append(job)
    return jobs


def _prepare_argv(
    source: Path, dest: Path, damage: list[dict[str, Any]], world: Path, bootstrap: str
) -> list[str]:
    """Copy a checkpoint for one restart, apply the scenario's damage, rebuild the world: the job's
    ``before_argv``, so that the scenarios of the line being written are restarted in the same Spark
    process that writes them (one JVM per line on a shared machine)."""
    rm = " ".join(
        f"rm -f {dest}/{op['path']} {dest}/{_crc(op['path'])}" for op in damage if op["op"] == "delete"
    )
    world_cmd = " ".join(shlex.quote(a) for a in kf._world_argv(world, bootstrap))
    script = f"rm -rf {dest} && mkdir -p {dest.parent} && cp -rp {source} {dest}" + (
        f" && {rm}" if rm else ""
    )
    return ["sh", "-c", f"{script} && {world_cmd}"]


def _crc(path: str) -> str:
    parent, _, name = path.rpartition("/")
    return f"{parent}/.{name}.crc" if parent else f".{name}.crc"


def _restart_entry(line: str, mode: str, fingerprint: str | None) -> dict[str, Any]:
    return {
        "spark": line,
        "mode": mode,
        "query": QUERY["name"],
        "options": {},
        "fingerprint": fingerprint,
        "result": None,
    }


def write_line(version: str, names: list[str] | None) -> None:
    """In ONE Spark process of this line: write its real-time and micro-batch bases, then restart in
    every mode its own scenarios and those older lines wrote (``fixtures/kafka-realtime/``)."""
    if version not in RT_VERSIONS or not wanted(names):
        return
    work = gf.SCRATCH / "kafka-realtime" / f"spark-{version}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    older = [
        p.parent
        for v in RT_VERSIONS[: RT_VERSIONS.index(version)]
        for p in sorted((FIXTURES_RT / f"spark-{v}").glob("*/scenario.json"))
    ]
    with kafka_broker.running() as broker:
        gf.log(f"== kafka broker {broker.version} at {broker.bootstrap} (real-time, {version})")
        jobs = _base_jobs(version, work, broker.bootstrap)
        n_base = len(jobs)
        own = [
            (_scenario(version, base, damage or None, broker), work / base / "checkpoint")
            for base in (BASE, MB_BASE)
            for damage in ["", *DAMAGE]
        ]
        cases: list[tuple[str, str, str]] = []  # (scenario dir or own name, mode)
        for scen, source in own:
            world = kf._steps_file(work, scen["name"], scen["world"])
            for mode in MODES:
                tmp = work / "oracle" / f"{scen['name']}-{mode}" / "checkpoint"
                job = _job(tmp, broker.bootstrap, mode)
                job.update(id=f"kafka-realtime/{version}/{scen['name']}@{version}#{mode}", op="restart")
                job["before_argv"] = _prepare_argv(source, tmp, scen["damage"], world, broker.bootstrap)
                jobs.append(job)
                cases.append(("own", scen["name"], mode))
        for dest in older:
            scen = gf.load_json(dest / "scenario.json")
            world = kf._steps_file(work, f"{scen['spark_version']}-{scen['name']}", scen["world"])
            for mode in MODES:
                tmp = work / "oracle" / f"{scen['spark_version']}-{scen['name']}-{mode}" / "checkpoint"
                job = _job(tmp, broker.bootstrap, mode)
                job.update(
                    id=f"kafka-realtime/{scen['spark_version']}/{scen['name']}@{version}#{mode}", op="restart"
                )
                job["before_argv"] = _prepare_argv(dest / "checkpoint", tmp, [], world, broker.bootstrap)
                jobs.append(job)
                cases.append((str(dest), scen["name"], mode))
        results = gf.run_sparklab(version, jobs, "kafka-realtime", kf._spark_env(version))
        for result in results[:n_base]:
            if result.get("error") or not result["batches"]:
                raise RuntimeError(f"a base run on {version} failed: {result['id']}: {result.get('error')}")
        if len(results[0]["batches"]) < 2:
            raise RuntimeError(
                f"the real-time base on {version} ran {len(results[0]['batches'])} batch(es), not 2"
            )
        lags = {b: written_after_ms(work / b / "checkpoint") for b in (BASE, MB_BASE)}
        written: dict[str, Path] = {}
        for scen, source in own:
            dest = FIXTURES_RT / f"spark-{version}" / scen["name"]
            if dest.exists():
                shutil.rmtree(dest)
            dest.mkdir(parents=True)
            gf.copy_tree(source, dest / "checkpoint")
            for op in scen["damage"]:
                gf.apply_op(dest, op)
            kafka_world.replay(broker.bootstrap, scen["world"])
            scen["written_with"]["offsets_written_after_ms"] = lags[scen["base"] or scen["name"]]
            scen["topic_positions"] = kafka_world.positions(broker.bootstrap, TOPIC)
            scen["facts"] = gf.compute_facts(dest, scen["query"])
            scen["fingerprint"] = gf.fingerprint(dest)
            gf.write_json(dest / "scenario.json", scen)
            written[scen["name"]] = dest
    for (where, name, mode), result in zip(cases, results[n_base:], strict=True):
        dest = written[name] if where == "own" else Path(where)
        sfile = dest / "scenario.json"
        scen = gf.load_json(sfile)
        scen["restarts"] = [r for r in scen["restarts"] if (r["spark"], r["mode"]) != (version, mode)]
        entry = _restart_entry(version, mode, scen["fingerprint"])
        entry["result"] = result
        scen["restarts"].append(entry)
        scen["restarts"].sort(key=lambda r: (r["spark"], MODES.index(r["mode"])))
        gf.write_json(sfile, scen)
        err = result.get("error")
        gf.log(
            f"   {result['id']}: started={result['started']} batches={[b['batchId'] for b in result['batches']]}"
            f" error={(err['message'].splitlines() or [''])[0][:160] if err else None}"
        )
    shutil.rmtree(work, ignore_errors=True)
