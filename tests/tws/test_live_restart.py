"""A live sample of the transformWithState fixtures, restarted by real Spark 4.3.0 with the pandas
processor: a moved checkpoint fails as predicted, and once planned and applied it starts (the
recorded runs of every line are replayed in test_recorded_restarts.py and test_moved_repair.py)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from checkpoint_doctor import api
from checkpoint_doctor.execution.apply import apply_plan
from checkpoint_doctor.execution.journal import tool_url
from checkpoint_doctor.reading.storage import open_storage
from tests import sparkrun

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import tws_fixtures  # noqa: E402

VERSION = "4.3.0"
FIXTURE = REPO / "fixtures" / "tws" / f"spark-{VERSION}" / "tws_pandas-moved"


@pytest.mark.spark
def test_a_moved_checkpoint_fails_as_predicted_and_starts_once_repaired(tmp_path: Path) -> None:
    scen = json.loads((FIXTURE / "scenario.json").read_text(encoding="utf-8"))
    moved = tmp_path / "moved" / "checkpoint"
    repaired = tmp_path / "repaired" / "checkpoint"
    for at in (moved, repaired):
        shutil.copytree(FIXTURE / "checkpoint", at)
    (cell,) = api.diagnose(str(moved), spark=["4.3"], live_window_s=0).cells
    predicted = cell.diagnosis.prediction
    assert not predicted.starts and predicted.error is not None
    plan = api.plan(str(repaired), spark=["4.3"], live_window_s=0)
    storage = open_storage(str(repaired))
    applied = apply_plan(plan, storage, sink=None, tool=open_storage(tool_url(storage.url)), now_ms=None)
    assert applied.after is not None and applied.after.prediction.starts
    jobs = [
        tws_fixtures._job("moved", scen["query"], moved, "restart"),
        tws_fixtures._job("repaired", scen["query"], repaired, "restart"),
    ]
    failed, started = sparkrun.run_jobs(
        VERSION, jobs, tmp_path / "spark", env=tws_fixtures._python_env(VERSION)
    )
    assert not failed["started"] and predicted.error.matches(failed["error"]["message"]), failed["error"]
    assert started["error"] is None and [b["batchId"] for b in started["batches"]] == [3]


@pytest.mark.spark
def test_a_changed_processor_restarts_as_predicted(tmp_path: Path) -> None:
    """Two changed processors restarted live on 4.3.0 against the healthy pandas checkpoint: a new
    timeMode fails as the recorded job facts predict, a renamed state variable starts."""
    from tests.tws.test_job_changes import job_facts

    base = REPO / "fixtures" / "tws" / f"spark-{VERSION}" / "tws_pandas-healthy"
    at = Path(json.loads((base / "scenario.json").read_text(encoding="utf-8"))["written_at"])
    specs = [tws_fixtures.job_spec("tws_pandas", c) for c in ("time-mode", "variable-renamed")]
    predicted = []
    for spec in specs:
        tws_fixtures.install(base, at)
        job = job_facts(f"spark-{VERSION}", spec)
        (cell,) = api.diagnose(str(at), spark=["4.3"], live_window_s=0, job=job).cells
        predicted.append(cell.diagnosis.prediction)
    jobs = []
    for spec in specs:
        job = tws_fixtures._job(spec, "job:" + spec, at, "restart")
        job["before_argv"] = tws_fixtures._install_argv(base, at)
        jobs.append(job)
    try:
        failed, started = sparkrun.run_jobs(
            VERSION, jobs, tmp_path / "spark", env=tws_fixtures._python_env(VERSION)
        )
    finally:
        shutil.rmtree(at.parent, ignore_errors=True)
    assert not predicted[0].starts and predicted[0].error is not None
    assert not failed["started"] and predicted[0].error.matches(failed["error"]["message"]), failed["error"]
    assert predicted[1].starts
    assert started["error"] is None and [b["batchId"] for b in started["batches"]] == [3]
