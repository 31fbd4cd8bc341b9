"""Replay of the recorded real-Spark proofs of the Delta way back (scripts/record_delta_repairs.py): for
every line with delta-spark, every Delta restart Spark refused has a record; the planner still makes
the recorded plan from the fixture's tables; after apply (or with the source option a plan without
steps names) real Spark started batch 2 from the position the plan wrote and read exactly the rows the
table's log says; undo restored the bytes. And against a Delta sink: a rollback's plan named the
re-planned batch the sink's txn version skips, and Spark left the table as it was; a checkpoint rolled
back below the sink's txn version, caught up by the plan, had its next batch written, nothing skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.delta.repair_proof import (
    LINES,
    ROLLBACK,
    SKIPPING,
    cases,
    copy_case,
    load_records,
    named_option,
    plan_case,
    recorded_versions,
)
from tests.repair_proof import plan_key

VERSIONS = recorded_versions()
#: Refused change data feed restarts that no plan brings back, with what the plan says instead.
NO_WAY = {
    "delta-source-cdf-cdf-disabled-read": "CD245",
    "delta-source-cdf-replaced": "CD208",
}


def test_every_line_has_its_delta_repairs_recorded() -> None:
    assert VERSIONS == LINES, "record them: scripts/record_delta_repairs.py --spark V"


@pytest.mark.parametrize("version", VERSIONS)
def test_recorded_delta_repairs_still_hold(version: str, tmp_path: Path) -> None:
    """What real Spark did after each plan was applied (recorded), for the plan made now."""
    records = load_records(version)
    every = cases(version)
    rerecord = (
        f"re-record: CHECKPOINT_DOCTOR_SPARK_LOCK=/tmp/cd-spark.lock python scripts/record_delta_repairs.py "
        f"--spark {version}"
    )
    assert sorted(c.key for c in every) == sorted(records), rerecord
    for n, case in enumerate(every):
        record = records[case.key]
        assert record["fingerprint"] == case.data["fingerprint"], f"the fixture changed; {rerecord}"
        plan, consent, _ = plan_case(case, copy_case(case, tmp_path / str(n)))
        assert plan_key(plan) == record["plan_key"], f"{case.key}: the plan changed; {rerecord}"
        assert consent == record["consent"] and plan.strategy == record["strategy"]
        assert {**case.source_options, **named_option(plan)} == record["source_options"]
        if case.data["name"] in NO_WAY:
            # No checkpoint change reads what the change data feed did not record: nothing applied,
            # nothing restarted, and the plan says what the operator does (turn the feed on again).
            assert record["outcome"] == "no-plan" and not plan.steps, record
            assert any(NO_WAY[case.data["name"]] in u for u in record["unresolved"]), record["unresolved"]
            continue
        assert record["outcome"] == "started", record["error"]
        assert record["first_batch"] == plan.expected["next_batch_id"] and record["problems"] == [], record
        if case.data["name"] == SKIPPING:
            # batch 3 was written (5 rows), the table one version on: nothing skipped
            assert plan.strategy == "delta-sink-txn" and record["first_batch"] == 3
            assert record["sink_table"] == case.data["tables"]["sink"]["version"] + 1
            assert record["num_input_rows"] == 5 and "2 file(s), 10 rows" in record["loss"][0]
        elif case.damage == ROLLBACK:
            # the plan named the batch the Delta sink skips, and the table stayed at its version
            assert record["loss"] and "1 batch(es) not written" in record["loss"][0]
            assert record["sink_table"] == case.data["tables"]["sink"]["version"]
        else:
            assert record["num_input_rows"] == record["expected_rows"]
        # undo ran where the plan changed bytes, and brought every byte back
        assert record["undo_restored"] is (True if plan.executable_steps else None)
