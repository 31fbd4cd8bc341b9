#!/usr/bin/env python3
"""Delta sink fixtures on the sink's txn, written and restarted by real Spark + delta-spark.

    CHECKPOINT_DOCTOR_SPARK_LOCK=/tmp/checkpoint-doctor-spark.lock python scripts/delta_txn_fixtures.py 4.2.1

Layout: ``fixtures/delta-txn/spark-<v>/<name>/{checkpoint, sink, scenario.json}``, the query and
base of ``fixtures/delta/``'s ``delta-sink`` (rate-micro-batch -> Delta sink, three Trigger.Once
runs: batches 0..2, txn appId = query id, version 2; ``scripts/delta_fixtures.py``). Kept apart from
``fixtures/delta/`` (whose per-line counts other tests pin). Scenarios:

* ``delta-sink-commit-lost``: ``commits/2`` (and its .crc) removed, as a driver dying after the sink's
  commit and before the commit log's: Spark re-runs batch 2 with its own offsets and DeltaSink skips
  it (txn version 2): the table holds its rows already, nothing is lost (issue 33 item 6);
* ``delta-sink-rolled-back-commit-lost``: ``offsets/2`` and ``commits/1..2`` removed: batch 1 re-runs
  (skipped, nothing lost), batch 2 is planned anew and skipped (the silent skip, CD407, names it alone).

Each is restarted once (default options) in a copy; what Spark did is recorded under ``restarts``,
with the sink's rows per batch after the restart.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import delta_fixtures as df
import generate_fixtures as gf
import jars

TXN_FIXTURES = gf.FIXTURES / "delta-txn"
BASE = "delta-sink"
PARTS = ("checkpoint", "sink")
DAMAGE: dict[str, dict[str, Any]] = {
    "commit-lost": {
        "description": "commits/2 removed with its .crc file (the driver died after the sink's commit of "
        "batch 2, before the commit log's): the sink's txn version (2) equals the re-run batch",
        "steps": lambda k, c: [{"remove": [f"{c}/commits/2", f"{c}/commits/.2.crc"]}],
    },
    "rolled-back-commit-lost": {
        "description": "offsets/2 and commits/1..2 removed with their .crc files: batch 1 is re-run with its "
        "own offsets (its rows are in the table), batch 2 is planned anew below the sink's txn version (2)",
        "steps": lambda k, c: [
            {
                "remove": [f"{c}/{d}{f}" for d in ("offsets/", "commits/") for f in ("2", ".2.crc")]
                + [f"{c}/commits/1", f"{c}/commits/.1.crc"]
            }
        ],
    },
}


def _install(src: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for sub in PARTS:
        if (src / sub).exists():
            shutil.copytree(src / sub, dest / sub)


def _tables(result: dict[str, Any]) -> dict[str, Any]:
    return {
        k.replace("<input>", "source").replace("<sink>", "sink"): v
        for k, v in (result.get("tables") or {}).items()
    }


def write_line(version: str) -> None:
    if jars.delta_release(version) is None:
        gf.log(f"== delta-txn {version}: skipped, {jars.DELTA_NOTE.get(version, 'no delta-spark release')}")
        return
    work = gf.SCRATCH / "delta-txn" / f"spark-{version}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = df._spark_env(version)
    info = df.SINK_QUERIES[BASE]
    base = work / BASE
    jobs = [df._job(f"txn/{version}/run{r}", info["query"], base, "run", {}) for r in range(info["runs"])]
    for damage, spec in DAMAGE.items():
        root = work / "damaged" / f"{BASE}-{damage}"
        steps: list[dict[str, Any]] = [{"copy": [str(base / sub), str(root / sub)]} for sub in PARTS]
        steps += spec["steps"](str(root / "sink"), str(root / "checkpoint"))
        jobs.append(df._world(f"txn/{version}/{BASE}-{damage}", root, steps))
    results = gf.run_sparklab(version, jobs, "delta-txn-world", env)
    by_id = {r["id"]: r for r in results}
    problems = [f"{r['id']}: {r['error']['message'].splitlines()[0]}" for r in results if r.get("error")]
    release = jars.delta_release(version)
    assert release is not None
    last_run = by_id[f"txn/{version}/run{info['runs'] - 1}"]
    restart_jobs, files = [], []
    for damage, spec in DAMAGE.items():
        name = f"{BASE}-{damage}"
        dest = TXN_FIXTURES / f"spark-{version}" / name
        _install(work / "damaged" / name, dest)
        fp = df.fingerprint(dest)
        scenario = {
            "schema_version": gf.SCHEMA_VERSION,
            "name": name,
            "spark_version": version,
            "kind": "damaged",
            "base": BASE,
            "description": info["description"] + f" Damage: {spec['description']}.",
            "query": info["query"],
            "written_with": {"trigger": "once", "delta_spark": f"io.delta:{release[0]}:{release[1]}"},
            "query_id": last_run.get("query_id"),
            "tables": _tables(by_id[f"txn/{version}/{name}"]),
            "facts": gf.compute_facts(dest, info["query"]),
            "fingerprint": fp,
            "restarts": [
                {
                    "spark": version,
                    "mode": "micro-batch",
                    "query": info["query"]["name"],
                    "source_options": {},
                    "fingerprint": fp,
                    "result": None,
                }
            ],
        }
        if problems:
            scenario["generation_problems"] = problems
        gf.write_json(dest / "scenario.json", scenario)
        tmp = work / "oracle" / name
        _install(dest, tmp)
        restart_jobs.append(df._job(f"delta-txn/{version}/{name}#default", info["query"], tmp, "restart", {}))
        files.append(dest / "scenario.json")
    for sfile, result in zip(
        files, gf.run_sparklab(version, restart_jobs, "delta-txn-oracle", env), strict=True
    ):
        data = gf.load_json(sfile)
        result["tables"] = _tables(result)
        data["restarts"][0]["result"] = result
        gf.write_json(sfile, data)
        err = result.get("error")
        gf.log(
            f"   {result['id']}: started={result['started']} batches={[b['batchId'] for b in result['batches']]}"
            f" error={(err['message'].splitlines() or [''])[0][:160] if err else None}"
        )
    _record_nested_repair(version, work, env)
    shutil.rmtree(work, ignore_errors=True)


def _record_nested_repair(version: str, work: Path, env: dict[str, str]) -> None:
    """``fixtures/delta/``'s ``delta-sink-rolled-back`` with its checkpoint moved inside its sink table
    (``table/_checkpoints/q1``, Delta's documented layout; nothing in either names the other's path):
    plan with no flag (``--accept-data-loss``: the repair writes rows twice), apply, restart with real
    Spark, record under ``fixtures/delta-txn/spark-<v>/nested-rolled-back-repair.json`` the plan's
    strategy and consequences and what Spark did (issue 33 item 5)."""
    import subprocess

    scen = df.DELTA_FIXTURES / f"spark-{version}" / "delta-sink-rolled-back"
    root = work / "nested"
    table, ckpt = root / "table", root / "table" / "_checkpoints" / "q1"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(scen / "sink", table)
    shutil.copytree(scen / "checkpoint", ckpt)
    plan_file = root / "plan.json"
    py = [sys.executable, "-m", "checkpoint_doctor"]
    run_env = {**os.environ, "PYTHONPATH": str(gf.REPO)}
    for argv in (
        [*py, "plan", str(ckpt), "--live-window", "0", "--accept-data-loss", "-o", str(plan_file)],
        [*py, "apply", str(plan_file), "--yes"],
    ):
        proc = subprocess.run(argv, capture_output=True, text=True, env=run_env, cwd=str(gf.REPO))
        if proc.returncode != 0:
            raise RuntimeError(
                f"{' '.join(argv)} exited {proc.returncode}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
            )
    plan = gf.load_json(plan_file)
    job = df._job(
        f"delta-txn/{version}/nested-rolled-back#repaired",
        df.SINK_QUERIES[BASE]["query"],
        root,
        "restart",
        {},
    )
    job.update(checkpoint=str(ckpt), sink=str(table), describe_tables=[str(table)])
    (result,) = gf.run_sparklab(version, [job], "delta-txn-nested", env)
    result["tables"] = _tables(result)
    record = {
        "scenario": f"delta/spark-{version}/delta-sink-rolled-back",
        "layout": "table/_checkpoints/q1",
        "fingerprint": gf.load_json(scen / "scenario.json")["fingerprint"],
        "strategy": plan["strategy"],
        "expected": plan["expected"],
        "result": result,
    }
    gf.write_json(TXN_FIXTURES / f"spark-{version}" / "nested-rolled-back-repair.json", record)
    err = result.get("error")
    gf.log(
        f"   {result['id']}: started={result['started']} batches={[b['batchId'] for b in result['batches']]}"
        f" tables={result['tables']} error={(err['message'].splitlines() or [''])[0][:160] if err else None}"
    )


if __name__ == "__main__":  # pragma: no cover - a fixture script
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    for v in sys.argv[1:] or list(df.gf.VERSIONS):
        write_line(v)
