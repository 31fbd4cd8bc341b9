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


def _repaired(name: str, query: dict[str, Any], root: Path, ckpt: Path, plan: Path) -> dict[str, Any]:
    """A restart of ``root`` after the tool's plan, planned and applied by sparklab's ``before_argv``
    (the CLI as an operator runs it) in the same JVM run: one Spark process a line."""
    job = df._job(name, query, root, "restart", {})
    job["before_argv"] = kit.plan_apply_argv(ckpt, plan)
    return job


def write_line(version: str) -> None:
    """Write, damage, restart and repair every scenario of one line in ONE sparklab run (one JVM a
    line: the machine runs one at a time); install the fixtures and record what Spark did."""
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
    same = tuple((sub, sub) for sub in PARTS)
    for base, name, spec in _scenarios():
        root = work / "damaged" / name
        steps: list[dict[str, Any]] = [{"copy": [str(work / base / sub), str(root / sub)]} for sub in PARTS]
        steps += spec["steps"](str(root / "checkpoint"))
        jobs.append(df._world(f"txn/{version}/{name}", root, steps))
        if spec.get("rerun"):
            jobs.append(df._job(f"txn/{version}/{name}/rerun", BASES[base]["query"], root, "run", {}))
    for base, name, spec in _scenarios():
        query, damaged = BASES[base]["query"], work / "damaged" / name
        oracle, repaired = work / "oracle" / name, work / "repaired" / name
        jobs.append(kit.copy_job(f"txn/{version}/{name}/oracle-copy", damaged, oracle, same))
        jobs += [
            df._job(f"delta-txn/{version}/{name}#default{'+' * i}", query, oracle, "restart", {})
            for i in range(spec.get("restarts", 1))
        ]
        if spec.get("repair") and base == FOREACH:
            jobs.append(kit.copy_job(f"txn/{version}/{name}/repair-copy", damaged, repaired, same))
            plan = work / "plans" / f"{name}.json"
            jobs.append(
                _repaired(
                    f"delta-txn/{version}/{name}#repaired", query, repaired, repaired / "checkpoint", plan
                )
            )
    nested, scen = work / "nested", df.DELTA_FIXTURES / f"spark-{version}" / "delta-sink-rolled-back"
    table, ckpt = nested / "table", nested / "table" / "_checkpoints" / "q1"
    jobs.append(
        kit.copy_job(
            f"txn/{version}/nested-copy",
            scen,
            nested,
            (("sink", "table"), ("checkpoint", "table/_checkpoints/q1")),
        )
    )
    job = _repaired(
        f"delta-txn/{version}/nested-rolled-back#repaired",
        BASES["delta-sink"]["query"],
        nested,
        ckpt,
        work / "plans" / "nested.json",
    )
    job.update(checkpoint=str(ckpt), sink=str(table), describe_tables=[str(table)])
    jobs.append(job)
    (work / "plans").mkdir()
    results = gf.run_sparklab(version, jobs, "delta-txn", env)
    by_id = {r["id"]: r for r in results}
    for result in results:
        result["tables"] = kit.tables(result)
    world = [r for r in results if not r["id"].startswith("delta-txn/")]
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
            tables_now=(rerun or by_id[f"txn/{version}/{name}"])["tables"],
            restarts=spec.get("restarts", 1),
            generation_problems=kit.problems(world),
        )
        for i, entry in enumerate(data["restarts"]):
            entry["result"] = by_id[f"delta-txn/{version}/{name}#default{'+' * i}"]
            kit.log_result(entry["result"])
        repaired = by_id.get(f"delta-txn/{version}/{name}#repaired")
        if repaired is not None:
            data["repair"] = kit.repair_record(
                kit.applied_plan(work / "plans" / f"{name}.json", repaired), repaired
            )
            kit.log_result(repaired)
        gf.write_json(dest / "scenario.json", data)
    result = by_id[f"delta-txn/{version}/nested-rolled-back#repaired"]
    kit.log_result(result)
    record = {
        "scenario": f"delta/spark-{version}/delta-sink-rolled-back",
        "layout": "table/_checkpoints/q1",
        "fingerprint": gf.load_json(scen / "scenario.json")["fingerprint"],
        **kit.repair_record(kit.applied_plan(work / "plans" / "nested.json", result), result),
    }
    gf.write_json(TXN_FIXTURES / f"spark-{version}" / "nested-rolled-back-repair.json", record)
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
