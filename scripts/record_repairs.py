#!/usr/bin/env python3
"""Record, for one Spark release, what the repairs do on every fixture that release refused to restart.

    flock /work/coord/spark.lock python scripts/record_repairs.py --spark 4.1.4
    python scripts/record_repairs.py --spark 4.1.4 --scenario state-deleted   # only some scenarios

For each recorded restart of that release that failed: plan (with ``--accept-data-loss`` only where
the plan asks for it), apply to a copy, restart the copy with real Spark exactly as the fixture's
oracle did, check that the query started and skipped no source range, undo, check that the damaged
bytes are back. The outcomes go to ``fixtures/repairs/spark-<version>.json`` (see
``tests/repair_proof.py``); ``tests/planning/test_repair_records.py`` replays them without Spark.
Starts a JVM: run it under the Spark CPU lock.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.repair_proof import judge, load_records, prepare, refused, save_records
from tests.sparkrun import restart_job, run_jobs


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spark", required=True, help="the Spark release, e.g. 4.1.4")
    parser.add_argument(
        "--scenario", action="append", default=[], help="only scenarios of this name (repeatable)"
    )
    args = parser.parse_args(argv)
    cases = [c for c in refused(args.spark) if not args.scenario or c[0].name in args.scenario]
    if not cases:
        print(f"no refused restart recorded for Spark {args.spark}", file=sys.stderr)
        return 2
    records = load_records(args.spark) if args.scenario else {}
    with tempfile.TemporaryDirectory(prefix="record-repairs-") as tmp:
        prepared = [
            prepare(s, i, r, Path(tmp) / f"{n:03d}", restart_job) for n, (s, i, r) in enumerate(cases)
        ]
        runnable = [p for p in prepared if p.job is not None]
        results = run_jobs(args.spark, [p.job for p in runnable], Path(tmp) / "spark") if runnable else []
        by_key = {p.key: res for p, res in zip(runnable, results, strict=True)}
        for p in prepared:
            records[p.key] = judge(p, by_key.get(p.key))
            r = records[p.key]
            print(
                f"{p.key:60} {r['outcome']:8} {r['strategy'] or '-':24} consent={r['consent']} {r.get('problems') or ''}"
            )
    path = save_records(args.spark, records)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
