"""Replay of the recorded real-Spark proofs (``scripts/record_repairs.py``): for every Spark release
with records, every fixture restart that release refused has a record; the planner still makes the
recorded plan for it; and the recorded restart started, skipped no source range, and undo restored
the damaged bytes (or, without a plan, the planner still says why)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.repair_proof import case_id, load_records, plan_case, plan_key, recorded_versions, refused
from tests.scenarios import restart_cases

VERSIONS = recorded_versions()


def test_every_line_with_refused_restarts_has_records():
    lines = {r["spark"] for _, _, r in restart_cases() if not r["result"]["started"]}
    assert lines <= set(VERSIONS), (
        f"record them: scripts/record_repairs.py --spark {sorted(lines - set(VERSIONS))}"
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_recorded_repairs_still_hold(version, subtests):
    records = load_records(version)
    cases = refused(version)
    rerecord = f"re-record: flock /work/coord/spark.lock python scripts/record_repairs.py --spark {version}"
    assert sorted(case_id(s, i) for s, i, _ in cases) == sorted(records), rerecord
    with tempfile.TemporaryDirectory() as tmp:
        for n, (scenario, index, restart) in enumerate(cases):
            key = case_id(scenario, index)
            record = records[key]
            with subtests.test(msg=key):
                assert record["fingerprint"] == restart["fingerprint"], f"the fixture changed; {rerecord}"
                plan, consent = plan_case(scenario, restart, scenario.load(Path(tmp) / str(n)))
                assert plan_key(plan) == record["plan_key"], f"the plan changed; {rerecord}"
                assert consent == record["consent"]
                if record["outcome"] == "no-plan":
                    assert not plan.executable_steps and plan.unresolved
                    continue
                assert record["outcome"] == "started", record["error"]
                assert record["problems"] == [] and record["undo_restored"] is True
