"""Record, per Spark release, what the plan does on every refused restart of fixtures/kafka-shapes/.

    flock /tmp/checkpoint-doctor-spark.lock python scripts/record_kafka_shapes_repairs.py 3.5.9 4.3.0

For each refused restart recorded in ``fixtures/kafka-shapes/spark-<v>/`` (scripts/kafka_shapes_fixtures.py,
issue 32 item 1): rebuild its world on a broker (scripts/kafka_broker.py), read the topics' positions
through the tool's I/O edge (``checkpoint_doctor.world.kafka``), plan with the query's own job facts
(its subscription shape and failOnDataLoss, as ``--job`` gives them) and ``--accept-data-loss``, apply
to a copy, restart the copy with real Spark and the connector (the world rebuilt again, the same
query), undo and check the bytes are back. A plan that names an operator's step first (a deleted
topic under ``subscribe`` or ``assign``: "recreate the topic, then plan again") is followed: the
topic is recreated empty with its old partition count, and the plan made again is applied and
restarted. Written to ``fixtures/repairs/kafka-shapes-spark-<v>.json``, keyed ``<name>#<restart
index>``; tests/kafka/test_subscription_shapes_repairs.py replays them. One JVM for Spark and one for
the broker: run it under the Spark lock.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import generate_fixtures as gf
import kafka_broker
import kafka_fixtures as kf
import kafka_shapes_fixtures as ksh
import kafka_world
from record_kafka_sources_repairs import _lines, _offsets

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.execution.apply import apply_plan
from checkpoint_doctor.execution.journal import JOURNAL, tool_url
from checkpoint_doctor.execution.undo import undo_journal
from checkpoint_doctor.planning import PlanOptions, plan_repair
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.storage import open_storage
from checkpoint_doctor.world.kafka import read_positions
from tests.kafka.test_subscription_shapes import job_of
from tests.repair_proof import RECORDS, plan_key, tree_bytes


def records_path(version: str) -> Path:
    return RECORDS / f"kafka-shapes-spark-{version}.json"


def _plan(cp: Path, data: dict[str, Any], fol: str, bootstrap: str, line: str) -> tuple[Any, Any]:
    live = read_positions(bootstrap, _offsets(cp))
    snapshot = load_checkpoint(str(cp))
    plain = PlanOptions(
        diagnose=DiagnoseOptions(
            spark=line, mode="micro-batch", live_window_s=0, kafka=live, job=job_of(data, fol)
        )
    )
    diagnosis = diagnose(snapshot, plain.diagnose)
    return plan_repair(snapshot, diagnosis, replace(plain, accept_data_loss=True)), live


def record_line(version: str) -> Path:
    cases = []
    for path in sorted((ksh.KAFKA_SHAPES_FIXTURES / f"spark-{version}").glob("*/scenario.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        cases += [
            (path.parent, data, i) for i, r in enumerate(data["restarts"]) if not r["result"]["started"]
        ]
    records: dict[str, Any] = {}
    env = kf._spark_env(version)
    line = ".".join(version.split(".")[:2])
    with tempfile.TemporaryDirectory(prefix="record-kafka-shapes-") as tmp, kafka_broker.running() as broker:
        jobs, pending = [], []
        for n, (folder, data, idx) in enumerate(cases):
            work = Path(tmp) / f"{n:03d}"
            cp = work / "checkpoint"
            shutil.copytree(folder / "checkpoint", cp)
            before = tree_bytes(cp)
            world = list(data["world"])
            kafka_world.replay(broker.bootstrap, world)
            fol = data["restarts"][idx]["options"]["failOnDataLoss"]
            plan, live = _plan(cp, data, fol, broker.bootstrap, line)
            rec: dict[str, Any] = {
                "fingerprint": data["fingerprint"],
                "shape": data["shape"],
                "failOnDataLoss": fol,
                "plan_key": plan_key(plan),
                "strategy": plan.strategy,
                "loss": list((plan.expected.get("consequences") or {}).get("loss") or []),
            }
            if not plan.executable_steps:
                # The plan's own advice: recreate the deleted topic (empty, its old partition count), then plan again.
                gone = [t for t, parts in live.topics if parts is None]
                rec["first_plan"] = "no-plan"
                rec["unavailable"] = [
                    o["reason"]
                    for f in plan.to_dict().get("options", [])
                    for o in f.get("options", [])
                    if o.get("reason")
                ]
                if not gone:
                    rec["outcome"] = "no-plan"
                    records[f"{data['name']}#{idx}"] = rec
                    continue
                world += [{"op": "create_topic", "topic": t, "partitions": ksh.TOPICS[t]} for t in gone]
                kafka_world.replay(broker.bootstrap, world)
                rec["operator_steps"] = world[len(data["world"]) :]
                plan, live = _plan(cp, data, fol, broker.bootstrap, line)
                rec.update(plan_key=plan_key(plan), strategy=plan.strategy)
                rec["loss"] = list((plan.expected.get("consequences") or {}).get("loss") or [])
                if not plan.executable_steps and not plan.expected.get("starts"):
                    rec["outcome"] = "no-plan"
                    records[f"{data['name']}#{idx}"] = rec
                    continue
            key = f"{data['name']}#{idx}"
            records[key] = rec
            rec["expected"] = plan.expected.get("restart")
            rec["plan_steps"] = len(plan.executable_steps)
            spark_copy = work / "spark" / "checkpoint"
            if plan.executable_steps:
                store = open_storage(str(cp))
                result = apply_plan(
                    plan, store, sink=None, tool=open_storage(tool_url(store.url)), now_ms=None, kafka=live
                )
                rec["positions"] = _lines(cp)
                shutil.copytree(cp, spark_copy)
                journal = result.journal_url or ""
                if journal:
                    undo_journal(open_storage(journal[: -len(JOURNAL)].rstrip("/")), open_storage)
                rec["undo_restored"] = bool(journal) and tree_bytes(cp) == before
            else:  # the operator's step alone brings it back (failOnDataLoss=false): nothing to change
                rec["positions"] = _lines(cp)
                shutil.copytree(cp, spark_copy)
                rec["undo_restored"] = tree_bytes(cp) == before
            steps = kf._steps_file(work, "world", world)
            job = ksh._job(
                data["base"] or data["name"], spark_copy, broker.bootstrap, {"failOnDataLoss": fol}
            )
            job.update(id=key, op="restart", before_argv=kf._world_argv(steps, broker.bootstrap))
            jobs.append(job)
            pending.append(key)
        results = gf.run_sparklab(version, jobs, "kafka-shapes-repairs", env) if jobs else []
        for key, res in zip(pending, results, strict=True):
            err = (res.get("error") or {}).get("message", "")
            batch = (res.get("batches") or [{}])[0]
            records[key].update(
                outcome="started" if res.get("started") else "failed",
                error=err[:600],
                first_batch=batch.get("batchId"),
                num_input_rows=batch.get("numInputRows"),
                sources=[
                    {k: s.get(k) for k in ("description", "startOffset", "endOffset", "numInputRows")}
                    for s in batch.get("sources") or []
                ],
            )
            print(
                f"{version} {key}: {records[key]['outcome']} rows={records[key]['num_input_rows']} {err[:200]}"
            )
    path = records_path(version)
    doc = {"schema_version": 1, "spark": version, "records": dict(sorted(records.items()))}
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    for v in sys.argv[1:] or list(gf.VERSIONS):
        print(f"wrote {record_line(v)}")
