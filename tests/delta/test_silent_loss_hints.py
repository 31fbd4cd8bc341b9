"""A restart that starts but loses data silently (CD407: the Delta sink skips re-planned batch ids it
holds) points at the plan like a failing one: in diagnose's text and in an audit record's next step."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.scenarios import run_cli

ROLLED_BACK = FIXTURES / "delta" / "spark-3.5.9" / "delta-sink-rolled-back"


def test_diagnose_offers_the_plan_for_a_sink_that_skips_batches(capsys) -> None:
    sink = str(ROLLED_BACK / "sink")
    code, out, _ = run_cli(capsys, "diagnose", str(ROLLED_BACK / "checkpoint"), "--delta-table", sink)
    assert code == 1 and "CD407 delta-sink-skips-batches" in out
    assert "Repair options:\n  checkpoint-doctor plan " in out
    assert f"--delta-table {sink} -o plan-delta-sink-rolled-back-checkpoint.json" in out
