#!/usr/bin/env python3
"""Delta fixtures with two Delta sources in one query, written and restarted by real Spark + delta-spark.

    CHECKPOINT_DOCTOR_SPARK_LOCK=/tmp/checkpoint-doctor-spark.lock python scripts/delta_union_fixtures.py 4.2.1
    python scripts/delta_union_fixtures.py --repair-only 4.2.1   # the repairs again, fixtures kept

Layout: ``fixtures/delta-union/spark-<v>/<name>/{checkpoint, source, source2, scenario.json}``: the
query (sparklab ``delta_two_sources``) unions the Delta table ``source`` (source 0) with ``source2``
(source 1) into noop. Kept apart from ``fixtures/delta/`` (whose layout has one source table and
whose per-line counts other tests pin). Scenarios:

* ``delta-two-sources``: both tables read by two Trigger.Once runs (source v1..v2 then v3; source2 v1
  then v2), then a commit on each that no batch has read;
* ``delta-two-sources-replaced``: the same, then ``source2`` replaced in place with CREATE OR REPLACE
  TABLE ... AS SELECT (a new table id, the log kept): the restart is refused
  (``DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE``) and the plan re-points source 1 only
  (issue 33 item 7: apply refused the tool's own plan of this checkpoint);
* ``delta-two-sources-recreated``: the same, then ``source2``'s directory deleted and a new table
  written at its path (new id, new log): refused alike, and ``source2`` pairs as the only table
  beside that pairs with nothing else, which the plan holds with ``source`` (apply refused the plan,
  "the plan has 6 steps, the planner makes 0": re-planned from ``source2`` alone, two sources were
  left to pair).

Each is restarted once (default options) in a copy; what Spark did is recorded under ``restarts``.
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

UNION_FIXTURES = gf.FIXTURES / "delta-union"
QUERY = gf._q("delta_two_sources", sink="noop")
PARTS = ("checkpoint", "source", "source2")
BASE = "delta-two-sources"
BASE_DESCRIPTION = (
    "Delta tables 'source' (source 0) and 'source2' (source 1) (id, key, text; checkpointInterval 2) "
    "unioned -> noop; source v0 create, v1 ids 0..4, v2 ids 5..9; source2 v0 create, v1 ids 50..54; "
    "run 0 (Trigger.Once) reads them, then source v3 ids 10..14 and source2 v2 ids 55..59, run 1 reads "
    "those; then source v4 ids 15..19 and source2 v3 ids 60..64 that no batch has read."
)
DAMAGE = {
    "replaced": {
        "description": "source2 replaced in place with CREATE OR REPLACE TABLE ... AS SELECT (ids 100..102)",
        "steps": lambda s2: [
            {
                "sql": f"CREATE OR REPLACE TABLE {df._t(s2)} USING delta "
                f"TBLPROPERTIES ('delta.checkpointInterval' = '{df.CHECKPOINT_INTERVAL}') AS SELECT "
                "/*+ COALESCE(1) */ id, CAST(id % 3 AS INT) AS key, concat('r', CAST(id AS STRING)) AS text "
                "FROM range(100, 103)"
            }
        ],
    },
    "recreated": {
        "description": "source2 directory deleted and a new table written at the same path (new table id): "
        "v0 create, v1 ids 100..102",
        "steps": lambda s2: [{"remove": [s2]}, df._create(s2), df._insert(s2, 100, 103)],
    },
}


def _world(name: str, root: Path, steps: list[dict[str, Any]]) -> dict[str, Any]:
    job = df._world(name, root, steps)
    job["describe_tables"] = [str(root / "source"), str(root / "source2")]
    return job


def _job(name: str, root: Path, op: str) -> dict[str, Any]:
    job = df._job(name, QUERY, root, op, {})
    job["describe_tables"] = [str(root / "source"), str(root / "source2")]
    return job


def write_line(version: str) -> None:
    if jars.delta_release(version) is None:
        gf.log(f"== delta-union {version}: skipped, {jars.DELTA_NOTE.get(version, 'no delta-spark release')}")
        return
    work = gf.SCRATCH / "delta-union" / f"spark-{version}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = df._spark_env(version)
    base = work / BASE
    s, s2 = str(base / "source"), str(base / "source2")
    jobs = [
        _world(
            f"union/{version}/world0",
            base,
            [
                df._create(s),
                df._insert(s, 0, 5),
                df._insert(s, 5, 10),
                df._create(s2),
                df._insert(s2, 50, 55),
            ],
        ),
        _job(f"union/{version}/run0", base, "run"),
        _world(f"union/{version}/world1", base, [df._insert(s, 10, 15), df._insert(s2, 55, 60)]),
        _job(f"union/{version}/run1", base, "run"),
        _world(f"union/{version}/world2", base, [df._insert(s, 15, 20), df._insert(s2, 60, 65)]),
    ]
    for damage, spec in DAMAGE.items():
        root = work / "damaged" / f"{BASE}-{damage}"
        steps: list[dict[str, Any]] = [{"copy": [str(base / sub), str(root / sub)]} for sub in PARTS]
        jobs.append(
            _world(f"union/{version}/{BASE}-{damage}", root, steps + spec["steps"](str(root / "source2")))
        )
    # One sparklab run a line: each scenario restarted on a copy made in the run, and every damage
    # (all refused: DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE) repaired on another copy by the
    # tool's plan, planned and applied by the CLI as sparklab's before_argv, then restarted.
    same = tuple((sub, sub) for sub in PARTS)
    scenarios = [(BASE, "", base, f"union/{version}/world2")] + [
        (f"{BASE}-{d}", spec["description"], work / "damaged" / f"{BASE}-{d}", f"union/{version}/{BASE}-{d}")
        for d, spec in DAMAGE.items()
    ]
    for name, damage, root, _ in scenarios:
        oracle = work / "oracle" / name
        jobs.append(kit.copy_job(f"union/{version}/{name}/oracle-copy", root, oracle, same))
        jobs.append(_job(f"delta-union/{version}/{name}#default", oracle, "restart"))
        if damage:
            repaired = work / "repaired" / name
            jobs.append(kit.copy_job(f"union/{version}/{name}/repair-copy", root, repaired, same))
            job = _job(f"delta-union/{version}/{name}#repaired", repaired, "restart")
            job["before_argv"] = kit.plan_apply_argv(repaired / "checkpoint", work / "plans" / f"{name}.json")
            jobs.append(job)
    (work / "plans").mkdir()
    results = gf.run_sparklab(version, jobs, "delta-union", env)
    by_id = {r["id"]: r for r in results}
    for result in results:
        result["tables"] = kit.tables(result)
    world = [r for r in results if not r["id"].startswith("delta-union/")]
    for name, damage, root, world_id in scenarios:
        dest = UNION_FIXTURES / f"spark-{version}" / name
        kit.install(root, dest, PARTS)
        data = kit.scenario(
            version,
            name,
            dest,
            QUERY,
            base=BASE if damage else None,
            description=BASE_DESCRIPTION + (f" Damage: {damage}." if damage else ""),
            query_id=by_id[f"union/{version}/run1"].get("query_id"),
            tables_now=by_id[world_id]["tables"],
            generation_problems=kit.problems(world),
        )
        data["restarts"][0]["result"] = by_id[f"delta-union/{version}/{name}#default"]
        kit.log_result(data["restarts"][0]["result"])
        repaired = by_id.get(f"delta-union/{version}/{name}#repaired")
        if repaired is not None:
            plan = kit.applied_plan(work / "plans" / f"{name}.json", repaired)
            data["repair"] = kit.repair_record(plan, repaired)
            kit.log_result(repaired, rows=True)
        gf.write_json(dest / "scenario.json", data)
    shutil.rmtree(work, ignore_errors=True)


def _repairs(
    version: str, work: Path, names: list[str]
) -> tuple[list[dict[str, Any]], Callable[[list[dict[str, Any]]], None]]:
    """Plan (``--accept-data-loss``: the plan skips and re-reads rows) and apply the tool's repair of
    each named (refused) scenario on a copy; return the jobs that restart the copies with real Spark
    and what records each result under the scenario's ``repair``: the plan's strategy and
    consequences and what Spark did (tests/delta/test_union_repairs.py replays it: batch and rows
    read per source as the plan says)."""
    jobs, plans = [], []
    for name in names:
        tmp = work / "repaired" / name
        kit.install(UNION_FIXTURES / f"spark-{version}" / name, tmp, PARTS)
        plans.append(kit.plan_and_apply(tmp / "checkpoint", work / "repaired" / f"{name}.plan.json"))
        jobs.append(_job(f"delta-union/{version}/{name}#repaired", tmp, "restart"))

    def finish(results: list[dict[str, Any]]) -> None:
        for name, plan, result in zip(names, plans, results, strict=True):
            sfile = UNION_FIXTURES / f"spark-{version}" / name / "scenario.json"
            data = gf.load_json(sfile)
            result["tables"] = kit.tables(result)
            data["repair"] = kit.repair_record(plan, result)
            gf.write_json(sfile, data)
            kit.log_result(result, rows=True)

    return jobs, finish


def repair_only(version: str) -> None:
    """Record the repairs again on the fixtures as written (a tool change), in one sparklab run."""
    work = gf.SCRATCH / "delta-union" / f"repair-{version}"
    shutil.rmtree(work, ignore_errors=True)
    names = [f"{BASE}-{d}" for d in DAMAGE if (UNION_FIXTURES / f"spark-{version}" / f"{BASE}-{d}").is_dir()]
    jobs, finish = _repairs(version, work, names)
    finish(gf.run_sparklab(version, jobs, "delta-union-repair", df._spark_env(version)))
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
