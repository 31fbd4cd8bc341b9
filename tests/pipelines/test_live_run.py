"""A live sample of the pipeline fixtures: real ``spark-pipelines run`` on 4.3.0 (the recorded runs of
every scenario are replayed without a JVM in test_recorded_runs.py). One run writes the pipeline; a
flow's ``metadata`` is deleted; the tool predicts the next run from the storage root; a second run
does what it said: the flow FAILED after 3 tries, the run failed, the other flows completed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from checkpoint_doctor.api import diagnose_pipeline
from checkpoint_doctor.pipelines.verdict import TRIES

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import sdp_fixtures  # noqa: E402

VERSION = "4.3.0"
#: The failing run's retries, sooner: Spark waits minRetryTime, then twice that, before a flow's 2nd and
#: 3rd tries (TriggeredGraphExecution's ExponentialBackoffStrategy, stepSize
#: spark.sql.pipelines.execution.watchdog.minRetryTime, 5 s by default, at least 1). The tries and
#: the outcome are the same (maxFlowRetryAttempts decides them); the run waits 3 s instead of 15.
SOONER = ["--conf", "spark.sql.pipelines.execution.watchdog.minRetryTime=1"]


@pytest.mark.spark
def test_a_flow_without_metadata_fails_the_next_run_as_predicted(tmp_path: Path) -> None:
    project = tmp_path / "project"
    sdp_fixtures.write_project(project)
    first = sdp_fixtures.run_pipeline(project, VERSION, [], "live-run0")
    assert first["outcome"] == "COMPLETED", first
    sdp_fixtures.damage(project, "metadata-deleted", VERSION)
    (report,) = diagnose_pipeline(str(project / "storage"), spark=["4.3"])
    second = sdp_fixtures.run_pipeline(project, VERSION, SOONER, "live-run1")
    assert report.verdict.run_outcome == second["outcome"] == "FAILED", second
    for flow, seen in second["flows"].items():
        verdict = report.verdict.flow(flow)
        assert verdict is not None and verdict.next_run == seen["state"], (flow, verdict, seen)
    merged_a = report.verdict.flow("merged_a")
    assert merged_a is not None and merged_a.restart is not None and merged_a.restart.search is not None
    assert any(merged_a.restart.search in e for e in second["flows"]["merged_a"]["errors"])
    assert second["flows"]["merged_a"]["attempts"] == TRIES  # the sooner retries are as many
