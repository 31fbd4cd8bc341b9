"""``--job`` live: the runner asks real Spark (3.5.9 and 4.3.0, one process each) what the job
modules of fixtures/jobs/ run, and gets what ``scripts/generate_fixtures.py --stage jobs``
recorded (the fast tests replay the recordings on every line); then ``diagnose --job`` end to end
on one changed query, with its time printed."""

from __future__ import annotations

import json
import re

import pytest

from checkpoint_doctor.execution.job_facts import describe_jobs
from tests.scenarios import FIXTURES, REPO, job_facts_for, run_cli
from tests.sparkrun import SPARK_VERSIONS, spark_python

JOBS_FILE = "fixtures/jobs/changes.py"


def _without_times(data: dict) -> dict:
    """The facts without the time they took and without expression ids (``value#110L``: a
    session's counter, which names an unnamed grouping expression in the key schema)."""
    text = re.sub(r"#\d+L?", "#", json.dumps({k: v for k, v in data.items() if k != "elapsed_s"}))
    return json.loads(text)


@pytest.mark.spark
@pytest.mark.parametrize("version", SPARK_VERSIONS)
def test_the_runner_describes_each_job_as_recorded(version, monkeypatch):
    monkeypatch.chdir(REPO)
    recorded = json.loads((FIXTURES / "jobs" / f"facts-{version}.json").read_text())
    specs = [e["job"] for e in recorded]
    live = describe_jobs(specs, python=str(spark_python(version)))
    for spec, facts in zip(specs, live, strict=True):
        assert _without_times(facts.to_dict()) == _without_times(job_facts_for(spec, version).to_dict())


@pytest.mark.spark
def test_diagnose_with_the_changed_job_says_what_spark_says(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    code, out, err = run_cli(
        capsys,
        "diagnose",
        "fixtures/spark-4.3.0/job-grouping-key-added/checkpoint",
        "--job",
        f"{JOBS_FILE}:window_agg_key_added",
        "--job-python",
        str(spark_python("4.3.0")),
    )
    assert code == 4, out + err
    assert "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE" in out
    assert "CD312" in out
    assert f"query from --job {JOBS_FILE}:window_agg_key_added, as Spark 4.3.0 analysed it in" in " ".join(
        out.split()
    )
