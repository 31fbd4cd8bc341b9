#!/usr/bin/env python3
"""Record, for one Spark release, what the Kafka plans do on every Kafka fixture that release refused.

    flock /tmp/cd-spark.lock python scripts/record_kafka_repairs.py --spark 4.3.0
    python scripts/record_kafka_repairs.py --spark 4.3.0 --scenario kafka-stateless-records-deleted

Starts one broker (scripts/kafka_broker.py). For each refused restart recorded in
``fixtures/kafka/spark-<v>/``: rebuild its world on the broker, read the topic's positions through
``checkpoint_doctor.world.kafka``, plan (``--accept-data-loss`` only where the plan asks for it),
apply to a copy, restart the copy with real Spark and the connector (the world rebuilt again, the
same ``failOnDataLoss``), check that batch 2 starts from exactly the positions the plan wrote and
reads up to the latest offsets, undo, check the bytes are back. The outcomes go to
``fixtures/repairs/kafka-spark-<v>.json`` (see ``tests/kafka/repair_proof.py``);
``tests/kafka/test_kafka_plans.py`` replays them without Spark or a broker. One JVM for Spark and
one for the broker: run it under the Spark lock.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import kafka_broker
import kafka_fixtures
import kafka_world

from checkpoint_doctor.model import KafkaOffset
from checkpoint_doctor.world.kafka import read_positions
from tests.kafka.repair_proof import judge, load_records, prepare, refused, save_records
from tests.sparkrun import run_jobs


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spark", required=True, help="the Spark release, e.g. 4.3.0")
    parser.add_argument("--scenario", action="append", default=[], help="only this scenario (repeatable)")
    args = parser.parse_args(argv)
    cases = [c for c in refused(args.spark) if not args.scenario or c.data["name"] in args.scenario]
    if not cases:
        print(f"no refused Kafka restart recorded for Spark {args.spark}", file=sys.stderr)
        return 2
    records = load_records(args.spark) if args.scenario else {}
    with tempfile.TemporaryDirectory(prefix="record-kafka-repairs-") as tmp, kafka_broker.running() as broker:
        prepared = []
        for n, case in enumerate(cases):
            kafka_world.replay(broker.bootstrap, case.data["world"])
            # the whole topic is described; no record is fetched (the plan needs earliest/latest only)
            live = read_positions(broker.bootstrap, [KafkaOffset(((kafka_fixtures.TOPIC, 0, 0),))])
            prepared.append(prepare(case, Path(tmp) / f"{n:03d}", live, broker.bootstrap))
        runnable = [p for p in prepared if p.job is not None]
        env = kafka_fixtures._spark_env(args.spark)
        jobs = [p.job for p in runnable if p.job is not None]
        results = run_jobs(args.spark, jobs, Path(tmp) / "spark", env=env) if jobs else []
        by_key = {p.case.key: res for p, res in zip(runnable, results, strict=True)}
        for p in prepared:
            records[p.case.key] = r = judge(p, by_key.get(p.case.key))
            print(
                f"{p.case.key:50} {r['outcome']:8} {r['strategy'] or '-':16} consent={r['consent']} "
                f"rows={r.get('num_input_rows')} {r.get('problems') or ''} {r.get('error', '')[:200]}",
                flush=True,
            )
    print(f"wrote {save_records(args.spark, records)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
