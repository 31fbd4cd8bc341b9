"""Record, per Spark release, what the plan does on every two-source Kafka restart that release refused.

    flock /tmp/checkpoint-doctor-spark.lock python scripts/record_kafka_sources_repairs.py 3.5.9 4.3.0

For each refused restart recorded in ``fixtures/kafka-sources/spark-<v>/`` (scripts/kafka_sources_fixtures.py,
issue 32 item 2): rebuild its world on a broker (scripts/kafka_broker.py), read every topic's positions
through the tool's I/O edge (``checkpoint_doctor.world.kafka``, both sources' offsets), plan with
``--accept-data-loss`` (the plan asks for it: records are skipped), apply to a copy, restart the copy
with real Spark and the connector (the world rebuilt again, the same ``failOnDataLoss``), undo and
check the bytes are back. Written to ``fixtures/repairs/kafka-sources-spark-<v>.json``, keyed
``<name>#<restart index>``: the positions each source's line holds after the plan, the consented
loss, and what Spark did (each source's start and end offsets and rows); tests/kafka/test_two_sources.py
replays them. One JVM for Spark and one for the broker: run it under the Spark lock.
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
import kafka_sources_fixtures as ksf
import kafka_world

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.execution.apply import apply_plan
from checkpoint_doctor.execution.journal import JOURNAL, tool_url
from checkpoint_doctor.execution.undo import undo_journal
from checkpoint_doctor.model import KafkaOffset
from checkpoint_doctor.planning import PlanOptions, plan_repair
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.storage import open_storage
from checkpoint_doctor.world.kafka import read_positions
from tests.repair_proof import RECORDS, plan_key, tree_bytes


def records_path(version: str) -> Path:
    return RECORDS / f"kafka-sources-spark-{version}.json"


def _offsets(cp: Path) -> list[KafkaOffset]:
    snapshot = load_checkpoint(str(cp))
    entry = snapshot.offsets.get(snapshot.offsets.ids[-1])
    if entry is None or entry.record is None:
        raise SystemExit(f"{cp}: no readable newest offsets file")
    return [s.decoded for s in entry.record.sources if isinstance(s.decoded, KafkaOffset)]


def _lines(cp: Path) -> list[Any]:
    last = max(int(p.name) for p in (cp / "offsets").iterdir() if p.name.isdigit())
    return [
        json.loads(line) for line in (cp / "offsets" / str(last)).read_text(encoding="utf-8").split("\n")[2:]
    ]


def record_line(version: str) -> Path:
    cases = []
    for path in sorted((ksf.KAFKA_SOURCES_FIXTURES / f"spark-{version}").glob("*/scenario.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        cases += [
            (path.parent, data, i) for i, r in enumerate(data["restarts"]) if not r["result"]["started"]
        ]
    records: dict[str, Any] = {}
    env = kf._spark_env(version)
    line = ".".join(version.split(".")[:2])
    with tempfile.TemporaryDirectory(prefix="record-kafka-sources-") as tmp, kafka_broker.running() as broker:
        jobs, pending = [], []
        for n, (folder, data, idx) in enumerate(cases):
            work = Path(tmp) / f"{n:03d}"
            cp = work / "checkpoint"
            shutil.copytree(folder / "checkpoint", cp)
            before = tree_bytes(cp)
            kafka_world.replay(broker.bootstrap, data["world"])
            live = read_positions(broker.bootstrap, _offsets(cp))
            snapshot = load_checkpoint(str(cp))
            plain = PlanOptions(
                diagnose=DiagnoseOptions(spark=line, mode="micro-batch", live_window_s=0, kafka=live)
            )
            diagnosis = diagnose(snapshot, plain.diagnose)
            plan = plan_repair(snapshot, diagnosis, replace(plain, accept_data_loss=True))
            fol = data["restarts"][idx]["options"]["failOnDataLoss"]
            rec: dict[str, Any] = {
                "fingerprint": data["fingerprint"],
                "failOnDataLoss": fol,
                "plan_key": plan_key(plan),
                "strategy": plan.strategy,
                "loss": list((plan.expected.get("consequences") or {}).get("loss") or []),
            }
            key = f"{data['name']}#{idx}"
            records[key] = rec
            if not plan.executable_steps:
                rec["outcome"] = "no-plan"
                continue
            store = open_storage(str(cp))
            result = apply_plan(
                plan, store, sink=None, tool=open_storage(tool_url(store.url)), now_ms=None, kafka=live
            )
            rec["positions"] = _lines(cp)
            spark_copy = work / "spark" / "checkpoint"
            shutil.copytree(cp, spark_copy)
            journal = result.journal_url or ""
            if journal:
                undo_journal(open_storage(journal[: -len(JOURNAL)].rstrip("/")), open_storage)
            rec["undo_restored"] = bool(journal) and tree_bytes(cp) == before
            world = kf._steps_file(work, "world", data["world"])
            job = ksf._job(spark_copy, broker.bootstrap, {"failOnDataLoss": fol})
            job.update(id=key, op="restart", before_argv=kf._world_argv(world, broker.bootstrap))
            jobs.append(job)
            pending.append(key)
        results = gf.run_sparklab(version, jobs, "kafka-sources-repairs", env) if jobs else []
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
