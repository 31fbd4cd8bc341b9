"""Replay of the recorded real-Spark proofs of the Kafka way back (scripts/record_kafka_repairs.py): for
every line, every Kafka restart Spark refused has a record; the planner still makes the recorded plan
from the recorded positions; after apply real Spark started batch 2 from exactly the positions the plan
wrote and read to the latest offsets; undo restored the bytes (or, for a deleted topic, no plan and why)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kafka.repair_proof import (
    LINES,
    load_records,
    plan_case,
    recorded_live,
    recorded_versions,
    refused,
    snapshot_of,
    written_positions,
)
from tests.repair_proof import plan_key

VERSIONS = recorded_versions()


def test_every_line_has_its_kafka_repairs_recorded() -> None:
    assert VERSIONS == LINES, "record them: scripts/record_kafka_repairs.py --spark V"


@pytest.mark.parametrize("version", VERSIONS)
def test_recorded_kafka_repairs_still_hold(version: str, tmp_path: Path) -> None:
    """What real Spark did after each plan was applied (recorded), for the plan made now."""
    records = load_records(version)
    cases = refused(version)
    rerecord = f"re-record: flock /tmp/cd-spark.lock python scripts/record_kafka_repairs.py --spark {version}"
    assert sorted(c.key for c in cases) == sorted(records), rerecord
    for n, case in enumerate(cases):
        record = records[case.key]
        assert record["fingerprint"] == case.data["fingerprint"], f"the fixture changed; {rerecord}"
        plan, consent = plan_case(case, snapshot_of(case, tmp_path / str(n)), recorded_live(case))
        assert plan_key(plan) == record["plan_key"], f"{case.key}: the plan changed; {rerecord}"
        assert consent == record["consent"] and written_positions(plan) == record["positions"]
        if record["outcome"] == "no-plan":
            assert not plan.executable_steps and plan.unresolved
            continue
        assert record["outcome"] == "started", record["error"]
        assert record["first_batch"] == 2 and record["problems"] == [] and record["undo_restored"] is True
