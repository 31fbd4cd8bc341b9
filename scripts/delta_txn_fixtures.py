#!/usr/bin/env python3
"""Delta sink fixtures on the table's txn, written and restarted by real Spark + delta-spark.

    CHECKPOINT_DOCTOR_SPARK_LOCK=/tmp/checkpoint-doctor-spark.lock python scripts/delta_txn_fixtures.py 4.2.1

Layout: ``fixtures/delta-txn/spark-<v>/<name>/{checkpoint, sink, scenario.json}``. Two bases, three
Trigger.Once runs each (batches 0..2, rate-micro-batch: batch b holds values 5b..5b+4):

* ``delta-sink``: ``fixtures/delta/``'s query (the Delta sink, DeltaSink: txn appId = query id,
  version = batch id; ``scripts/delta_fixtures.py``);
* ``delta-foreach-txn``: the same rows written by ``foreachBatch`` with the writer options
  ``txnAppId`` (a fixed name, sparklab ``TXN_APP_ID``) and ``txnVersion`` = batch id: Delta's
  idempotent writes (WriteIntoDelta, ``DeltaCommand.hasBeenExecuted``: a version at or below the
  table's txn version for the appId is skipped, "This will be skipped").

Kept apart from ``fixtures/delta/`` (whose per-line counts other tests pin). Scenarios:

* ``delta-sink-commit-lost``, ``delta-foreach-txn-commit-lost``: ``commits/2`` (and its .crc)
  removed, as a driver dying after the table's commit and before the commit log's: batch 2 re-runs
  with its own offsets and the txn skips it: the table holds its rows already, nothing is lost;
* ``delta-sink-rolled-back-commit-lost``: ``offsets/2`` and ``commits/1..2`` removed: batch 1 re-runs
  (skipped, nothing lost), batch 2 is planned anew and skipped (the silent skip, CD407, names it alone);
* ``delta-foreach-txn-rolled-back``: ``offsets/1..2`` and ``commits/1..2`` removed: restarted TWICE in
  a row (Trigger.Once plans one batch a run): batch 1 then batch 2 re-planned and skipped by the txn;
* ``delta-sink-checkpoint-recreated``, ``delta-foreach-txn-checkpoint-recreated``: the checkpoint
  deleted and the query run once more on a new one (new query id, batch 0): DeltaSink's appId is the
  new query id, so batch 0 wrote values 0..4 again; the foreachBatch's appId is the same name, so
  batch 0 was skipped. The restart then runs batch 1: written again, or skipped.

Each is restarted (default options) in a copy; what Spark did is recorded under ``restarts``, with
the sink's rows per batch after each restart. Repairs, each planned with ``--accept-data-loss``,
applied by the tool and restarted by Spark: ``repair`` in the foreachBatch scenarios that skip
(``delta-sink-txn``), and ``nested-rolled-back-repair.json``: ``fixtures/delta/``'s
``delta-sink-rolled-back`` moved to ``table/_checkpoints/q1``.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import delta_fixture_kit as kit
import delta_fixtures as df
import generate_fixtures as gf
import jars

TXN_FIXTURES = gf.FIXTURES / "delta-txn"
PARTS = ("checkpoint", "sink")
FOREACH = "delta-foreach-txn"
BASES: dict[str, dict[str, Any]] = {
    "delta-sink": df.SINK_QUERIES["delta-sink"],
    FOREACH: {
        "description": "rate-micro-batch (5 rows a batch: batch b holds values 5b..5b+4) -> foreachBatch "
        "appending each batch to the Delta table 'sink' with txnAppId 'checkpoint-doctor-foreach-batch' and "
        "txnVersion = batch id, three Trigger.Once runs: batches 0..2, table versions 0..2, txn version 2.",
        "query": gf._q("rate_to_delta_txn", sink="delta"),
        "runs": 3,
    },
}


def _remove_batches(c: str, logs: dict[str, tuple[int, ...]]) -> list[dict[str, Any]]:
    return [
        {
            "remove": [
                f"{c}/{log}/{p}{b}{s}"
                for log, ids in logs.items()
                for b in ids
                for p, s in (("", ""), (".", ".crc"))
            ]
        }
    ]


#: Damage per base: description, world steps (``c`` the checkpoint), ``rerun``: the query runs once
#: more after them (on a new checkpoint), ``restarts``: restarts in a row of the same copy.
DAMAGE: dict[str, dict[str, Any]] = {
    "commit-lost": {
        "bases": ("delta-sink", FOREACH),
        "description": "commits/2 removed with its .crc file (the driver died after the table's commit of "
        "batch 2, before the commit log's): the table's txn version (2) equals the re-run batch",
        "steps": lambda c: _remove_batches(c, {"commits": (2,)}),
    },
    "rolled-back-commit-lost": {
        "bases": ("delta-sink",),
        "description": "offsets/2 and commits/1..2 removed with their .crc files: batch 1 is re-run with its "
        "own offsets (its rows are in the table), batch 2 is planned anew below the sink's txn version (2)",
        "steps": lambda c: _remove_batches(c, {"offsets": (2,), "commits": (1, 2)}),
    },
    "rolled-back": {
        "bases": (FOREACH,),
        "description": "offsets/1..2 and commits/1..2 removed with their .crc files: the table's txn version "
        "(2) is above the checkpoint's last batch (0); restarted twice in a row",
        "steps": lambda c: _remove_batches(c, {"offsets": (1, 2), "commits": (1, 2)}),
        "restarts": 2,
        "repair": True,
    },
    "checkpoint-recreated": {
        "bases": ("delta-sink", FOREACH),
        "description": "checkpoint deleted, then the query run once on a new checkpoint (new query id, "
        "batch 0, values 0..4) beside the table that holds the old run's txn (version 2)",
        "steps": lambda c: [{"remove": [c]}],
        "rerun": True,
        "repair": True,
    },
}


def _scenarios() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (base, f"{base}-{d}", spec) for base in BASES for d, spec in DAMAGE.items() if base in spec["bases"]
    ]


def write_line(version: str) -> None:
    if jars.delta_release(version) is None:
        gf.log(f"== delta-txn {version}: skipped, {jars.DELTA_NOTE.get(version, 'no delta-spark release')}")
        return
    work = gf.SCRATCH / "delta-txn" / f"spark-{version}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = df._spark_env(version)
    jobs = []
    for base, info in BASES.items():
        jobs += [
            df._job(f"txn/{version}/{base}/run{r}", info["query"], work / base, "run", {})
            for r in range(info["runs"])
        ]
    for base, name, spec in _scenarios():
        root = work / "damaged" / name
        steps: list[dict[str, Any]] = [{"copy": [str(work / base / sub), str(root / sub)]} for sub in PARTS]
        steps += spec["steps"](str(root / "checkpoint"))
        jobs.append(df._world(f"txn/{version}/{name}", root, steps))
        if spec.get("rerun"):
            jobs.append(df._job(f"txn/{version}/{name}/rerun", BASES[base]["query"], root, "run", {}))
    results = gf.run_sparklab(version, jobs, "delta-txn-world", env)
    by_id = {r["id"]: r for r in results}
    restart_jobs, cases = [], []
    for base, name, spec in _scenarios():
        info = BASES[base]
        dest = TXN_FIXTURES / f"spark-{version}" / name
        kit.install(work / "damaged" / name, dest, PARTS)
        rerun = by_id.get(f"txn/{version}/{name}/rerun")
        last = rerun or by_id[f"txn/{version}/{base}/run{info['runs'] - 1}"]
        data = kit.scenario(
            version,
            name,
            dest,
            info["query"],
            base=base,
            description=info["description"] + f" Damage: {spec['description']}.",
            query_id=last.get("query_id"),
            tables_now=kit.tables(rerun or by_id[f"txn/{version}/{name}"]),
            restarts=spec.get("restarts", 1),
            generation_problems=kit.problems(results),
        )
        gf.write_json(dest / "scenario.json", data)
        tmp = work / "oracle" / name
        kit.install(dest, tmp, PARTS)
        for i in range(len(data["restarts"])):
            restart_jobs.append(
                df._job(f"delta-txn/{version}/{name}#default{'+' * i}", info["query"], tmp, "restart", {})
            )
            cases.append((dest / "scenario.json", i))
    # The repairs are planned and applied on copies of the fixtures as written (a plan reads the
    # checkpoint and tables, not the restart), so Spark restarts them in the same JVM as the oracle.
    repair_jobs, finish = _repairs(version, work)
    results = gf.run_sparklab(version, restart_jobs + repair_jobs, "delta-txn-oracle", env)
    for (sfile, i), result in zip(cases, results[: len(cases)], strict=True):
        data = gf.load_json(sfile)
        result["tables"] = kit.tables(result)
        data["restarts"][i]["result"] = result
        gf.write_json(sfile, data)
        kit.log_result(result)
    finish(results[len(cases) :])
    shutil.rmtree(work, ignore_errors=True)


def _repairs(version: str, work: Path) -> tuple[list[dict[str, Any]], Callable[[list[dict[str, Any]]], None]]:
    """The tool's repairs, planned (``--accept-data-loss``) and applied on copies, with the sparklab
    jobs that restart them and what records their results: each foreachBatch scenario whose batches
    planned anew the txn skips (``repair`` in the spec), under its ``repair``; and the nested
    rollback (issue 33 item 5): ``fixtures/delta/``'s ``delta-sink-rolled-back`` with its checkpoint
    moved inside its sink table (``table/_checkpoints/q1``, Delta's documented layout; nothing in
    either names the other's path), planned with no flag but ``--accept-data-loss`` (the repair writes
    rows twice), recorded under ``fixtures/delta-txn/spark-<v>/nested-rolled-back-repair.json``."""
    jobs, records = [], []
    for base, name, spec in _scenarios():
        if not spec.get("repair") or base != FOREACH:
            continue
        sfile = TXN_FIXTURES / f"spark-{version}" / name / "scenario.json"
        tmp = work / "repaired" / name
        kit.install(sfile.parent, tmp, PARTS)
        plan = kit.plan_and_apply(tmp / "checkpoint", work / "repaired" / f"{name}.plan.json")
        jobs.append(df._job(f"delta-txn/{version}/{name}#repaired", BASES[base]["query"], tmp, "restart", {}))
        records.append((sfile, plan))
    scen = df.DELTA_FIXTURES / f"spark-{version}" / "delta-sink-rolled-back"
    root = work / "nested"
    table, ckpt = root / "table", root / "table" / "_checkpoints" / "q1"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(scen / "sink", table)
    shutil.copytree(scen / "checkpoint", ckpt)
    nested_plan = kit.plan_and_apply(ckpt, root / "plan.json")
    job = df._job(
        f"delta-txn/{version}/nested-rolled-back#repaired", BASES["delta-sink"]["query"], root, "restart", {}
    )
    job.update(checkpoint=str(ckpt), sink=str(table), describe_tables=[str(table)])
    jobs.append(job)

    def finish(results: list[dict[str, Any]]) -> None:
        for result in results:
            result["tables"] = kit.tables(result)
            kit.log_result(result)
        for (sfile, plan), result in zip(records, results[:-1], strict=True):
            data = gf.load_json(sfile)
            data["repair"] = kit.repair_record(plan, result)
            gf.write_json(sfile, data)
        record = {
            "scenario": f"delta/spark-{version}/delta-sink-rolled-back",
            "layout": "table/_checkpoints/q1",
            "fingerprint": gf.load_json(scen / "scenario.json")["fingerprint"],
            **kit.repair_record(nested_plan, results[-1]),
        }
        gf.write_json(TXN_FIXTURES / f"spark-{version}" / "nested-rolled-back-repair.json", record)

    return jobs, finish


def repair_only(version: str) -> None:
    """Record the repairs again on the fixtures as written (a tool change), in one sparklab run."""
    work = gf.SCRATCH / "delta-txn" / f"repair-{version}"
    shutil.rmtree(work, ignore_errors=True)
    jobs, finish = _repairs(version, work)
    finish(gf.run_sparklab(version, jobs, "delta-txn-repair", df._spark_env(version)))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":  # pragma: no cover - a fixture script
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    # ``--repair-only 4.2.1``: record the repairs of the fixtures already written (a tool change).
    only_repairs = "--repair-only" in sys.argv
    for v in [a for a in sys.argv[1:] if a != "--repair-only"] or list(df.gf.VERSIONS):
        if not only_repairs:
            write_line(v)
        elif jars.delta_release(v) is not None:
            repair_only(v)
