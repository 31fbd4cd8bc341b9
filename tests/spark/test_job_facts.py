"""``--job`` live: the runner asks real Spark (3.5.9 and 4.3.0, one process each) what the job
modules of fixtures/jobs/ run, and gets what ``scripts/generate_fixtures.py --stage jobs``
recorded (the fast tests replay the recordings on every line); then ``diagnose --job`` end to end
on one changed query, with its time printed."""

from __future__ import annotations

import json
import re

import pytest

from checkpoint_doctor.execution.job_facts import describe_jobs
from tests.live import shared_among
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
def test_the_runner_describes_each_job_as_recorded(version, monkeypatch, tmp_path):
    """The jobs alternate between the lines (tests/live.shared_among): every job and both lines are
    asked each run; every job on both lines with CHECKPOINT_DOCTOR_ALL_LIVE=1 or -m live_all."""
    describe_and_compare(version, monkeypatch, tmp_path, every=False)


@pytest.mark.spark
@pytest.mark.live_all
@pytest.mark.parametrize("version", SPARK_VERSIONS)
def test_the_runner_describes_every_job_as_recorded_on_both_lines(version, monkeypatch, tmp_path):
    describe_and_compare(version, monkeypatch, tmp_path, every=True)


def describe_and_compare(version, monkeypatch, tmp_path, *, every: bool) -> None:
    monkeypatch.chdir(REPO)
    # The file jobs read their paths from the environment; Spark's file source wants its directory.
    paths = {"input": str(tmp_path / "input"), "sink": str(tmp_path / "sink")}
    for name in ("input", "input-moved"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("CHECKPOINT_DOCTOR_JOB_INPUT", paths["input"])
    monkeypatch.setenv("CHECKPOINT_DOCTOR_JOB_SINK", paths["sink"])
    # The Kafka jobs need the connector on the job python's classpath, as the probe of --stage jobs.
    import kafka_fixtures  # scripts/ is on sys.path (tests.sparkrun)

    jars = kafka_fixtures._spark_env(version)[kafka_fixtures.SPARK_JARS_ENV]
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", f"--jars {jars} pyspark-shell")
    recorded = json.loads((FIXTURES / "jobs" / f"facts-{version}.json").read_text())
    specs = [e["job"] for e in recorded]
    if not every:
        specs = shared_among(specs, version, SPARK_VERSIONS)
    live = describe_jobs(specs, python=str(spark_python(version)))
    for spec, facts in zip(specs, live, strict=True):
        want = job_facts_for(spec, version, paths)
        assert _without_times(facts.to_dict()) == _without_times(want.to_dict()), spec


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


@pytest.mark.spark
def test_audit_with_jobs_asks_spark_once_and_judges_as_diagnose(capsys, monkeypatch, tmp_path):
    """Two checkpoints, two jobs, one Spark process: each record is what diagnose --job says."""
    from tests.scenarios import scenario_at

    monkeypatch.chdir(REPO)
    root = tmp_path / "root"
    for rel, fixture in (("a", "job-source-kind-changed"), ("b", "job-output-mode-complete-stateless")):
        scenario_at(FIXTURES / "spark-4.3.0" / fixture).copy_to(root / rel)
    code, out, err = run_cli(
        capsys,
        "audit",
        str(root),
        "--job",
        f"a/*={JOBS_FILE}:stateless_rate_source",
        "--job",
        f"b/*={JOBS_FILE}:stateless_complete",
        "--job-python",
        str(spark_python("4.3.0")),
        "--format",
        "json",
    )
    assert code == 4, out + err
    records = {r["path"]: r for r in json.loads(out)["result"]["records"]}
    assert records["a/checkpoint"]["codes"] == ["CD220"]
    assert "For input string" in records["a/checkpoint"]["restart"]["summary"]
    assert records["b/checkpoint"]["codes"] == ["CD421"]
    assert "STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION" in records["b/checkpoint"]["restart"]["summary"]
    # One child described both jobs: the same analysis time is reported for each.
    assert records["a/checkpoint"]["job"]["elapsed_s"] == records["b/checkpoint"]["job"]["elapsed_s"]
