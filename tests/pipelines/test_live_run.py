"""A live sample of the pipeline fixtures: real ``spark-pipelines run`` on 4.3.0 (the recorded runs of
every scenario, and of every repair and reset, are replayed without a JVM in test_recorded_runs.py).
One run writes the pipeline; ``merged_a``'s ``metadata`` is deleted; the tool predicts the next run
fails it, then resets the flow into a new version (``plan <flow dir> --reset-flow``, ``apply``); a
second run does what it said: every flow completed, ``merged_a`` ran batch 1 in version 1 (not batch
0 again), and the table's sink log went on without a gap."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from checkpoint_doctor.api import diagnose_pipeline
from checkpoint_doctor.cli import main

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import sdp_fixtures  # noqa: E402

VERSION = "4.3.0"


@pytest.mark.spark
def test_a_flow_reset_into_a_new_version_runs_on_without_a_gap(tmp_path: Path) -> None:
    project = tmp_path / "project"
    sdp_fixtures.write_project(project)
    sdp_fixtures.write_input(project, 0)
    first = sdp_fixtures.run_pipeline(project, VERSION, [], "live-run0")
    assert first["outcome"] == "COMPLETED", first
    sdp_fixtures.damage(project, "metadata-deleted", VERSION)
    (report,) = diagnose_pipeline(str(project / "storage"), spark=["4.3"])
    merged_a = report.verdict.flow("merged_a")
    assert merged_a is not None and merged_a.next_run == "FAILED"
    flow = sdp_fixtures.flow_dir(project / "storage", "merged", "merged_a")
    plan = tmp_path / "reset.json"
    assert (
        main(["plan", str(flow), "--reset-flow", "--spark", "4.3", "--live-window", "0", "-o", str(plan)])
        == 0
    )
    assert main(["apply", str(plan), "--yes"]) == 0
    (report,) = diagnose_pipeline(str(project / "storage"), spark=["4.3"])
    sdp_fixtures.write_input(project, 1)
    second = sdp_fixtures.run_pipeline(project, VERSION, [], "live-run1")
    assert report.verdict.run_outcome == second["outcome"] == "COMPLETED", second
    for name, seen in second["flows"].items():
        verdict = report.verdict.flow(name)
        assert verdict is not None and verdict.next_run == seen["state"], (name, verdict, seen)
    assert second["flow_batches_after"]["merged_a"] == {"version": [1], "offsets": [0, 1], "commits": [0, 1]}
    assert second["sink_batches_before"]["merged"] == [0] and second["sink_batches_after"]["merged"] == [0, 1]
