#!/usr/bin/env python3
"""Record, for one Spark release, what the Delta plans do on every Delta fixture that release refused.

    CHECKPOINT_DOCTOR_SPARK_LOCK=/tmp/cd-spark.lock python scripts/record_delta_repairs.py --spark 3.5.9
    python scripts/record_delta_repairs.py --spark 4.2.1 --scenario delta-source-stateless-replaced

For each refused restart recorded in ``fixtures/delta/spark-<v>/``, and a rollback against the
line's Delta sink (``delta-sink`` with a torn ``offsets/2``, see ``tests/delta/repair_proof.py``): copy its checkpoint and tables,
read the tables through ``checkpoint_doctor.world.delta_log``, plan (``--accept-data-loss`` only where
the plan asks for it), apply to the copy (the tables read again), restart a copy of the result with
real Spark + delta-spark (the scenario's query and source options, plus the option a plan without
steps names), check that batch 2 starts from the position the plan wrote and reads exactly the rows
the table's log says, undo, check the bytes are back. The outcomes go to
``fixtures/repairs/delta-spark-<v>.json`` (see ``tests/delta/repair_proof.py``);
``tests/delta/test_delta_repair_records.py`` replays them without Spark. One sparklab process (one
JVM) per run, under the Spark lock when ``CHECKPOINT_DOCTOR_SPARK_LOCK`` names one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import delta_fixtures

from tests.delta.repair_proof import cases as all_cases
from tests.delta.repair_proof import judge, load_records, prepare, save_records
from tests.sparkrun import run_jobs


def _relative(record: dict, root: str) -> dict:
    """The record with the copy's location replaced by ``<copy>`` (records do not depend on it)."""
    return {
        k: [x.replace(root, "<copy>") for x in v] if k in ("loss", "unresolved") else v
        for k, v in record.items()
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spark", required=True, help="the Spark release, e.g. 4.2.1")
    parser.add_argument("--scenario", action="append", default=[], help="only this scenario (repeatable)")
    args = parser.parse_args(argv)
    lock = os.environ.get("CHECKPOINT_DOCTOR_SPARK_LOCK")
    if lock and os.environ.get("_DELTA_REPAIRS_LOCKED") != lock:
        # One JVM at a time on a shared machine: the whole run holds the Spark lock.
        env = {**os.environ, "_DELTA_REPAIRS_LOCKED": lock}
        return subprocess.call(["flock", lock, sys.executable, __file__, *argv], env=env)
    cases = [c for c in all_cases(args.spark) if not args.scenario or c.data["name"] in args.scenario]
    if not cases:
        print(f"no refused Delta restart recorded for Spark {args.spark}", file=sys.stderr)
        return 2
    records = load_records(args.spark) if args.scenario else {}
    with tempfile.TemporaryDirectory(prefix="record-delta-repairs-") as tmp:
        prepared = [prepare(case, Path(tmp) / f"{n:03d}") for n, case in enumerate(cases)]
        runnable = [p for p in prepared if p.job is not None]
        jobs = [p.job for p in runnable if p.job is not None]
        env = delta_fixtures._spark_env(args.spark)
        results = run_jobs(args.spark, jobs, Path(tmp) / "spark", env=env) if jobs else []
        by_key = {p.case.key: res for p, res in zip(runnable, results, strict=True)}
        for p in prepared:
            r = _relative(judge(p, by_key.get(p.case.key)), str(p.root))
            records[p.case.key] = r
            print(
                f"{p.case.key:50} {r['outcome']:8} {r['strategy'] or '-':16} consent={r['consent']} "
                f"options={r['source_options']} rows={r.get('num_input_rows')}/{r.get('expected_rows')} "
                f"undo={r.get('undo_restored')} {r.get('problems') or ''} {r.get('error', '')[:200]}",
                flush=True,
            )
    print(f"wrote {save_records(args.spark, records)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
