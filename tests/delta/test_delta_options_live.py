"""A live sample of ``--job`` with Delta reader options, end to end as an operator runs it, on the jar set
CI installs (Spark 3.5.9 + delta-spark 3.3.3): the job probe (a real Spark, delta-spark on its classpath
and Delta's session confs through ``PYSPARK_SUBMIT_ARGS``) describes ``fixtures/jobs/delta_options.py``'s jobs, whose Delta
source options then decide the verdict: ``skipChangeCommits`` over the whole-file delete starts where
Delta's defaults fail (CD210), and the change data feed over a position where the feed is off fails
with DELTA_MISSING_CHANGE_DATA. The recorded restarts (fixtures/delta/spark-3.5.9) are what Spark did."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.scenarios import run_cli
from tests.sparkrun import spark_python

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import delta_fixtures  # noqa: E402

VERSION = "3.5.9"
LINE = REPO / "fixtures" / "delta" / f"spark-{VERSION}"
JOBS = REPO / "fixtures" / "jobs" / "delta_options.py"


def _copy(name: str, tmp_path: Path) -> Path:
    for part in ("checkpoint", "source"):
        shutil.copytree(LINE / name / part, tmp_path / part)
    return tmp_path


def _probe_env(monkeypatch: pytest.MonkeyPatch, source: Path) -> None:
    env = delta_fixtures._spark_env(VERSION)
    jars = env[delta_fixtures.SPARK_JARS_ENV]
    # What an operator's Delta session has (Delta's quickstart): the jars, the SQL extension and the
    # catalog (without them the probe's Spark refuses the Delta read: DELTA_CONFIGURE_SPARK_SESSION_...)
    confs = " ".join(f"--conf {k}={v}" for k, v in delta_fixtures.DELTA_SESSION_CONFS.items())
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", f"--jars {jars} {confs} pyspark-shell")
    monkeypatch.setenv("CHECKPOINT_DOCTOR_JOB_INPUT", str(source))


def _recorded(name: str, options: dict[str, str]) -> dict:
    scen = json.loads((LINE / name / "scenario.json").read_text(encoding="utf-8"))
    (entry,) = [r for r in scen["restarts"] if r["source_options"] == options]
    return entry["result"]


@pytest.mark.spark
def test_the_jobs_options_decide_the_delta_verdicts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = str(spark_python(VERSION))
    # A whole-file DELETE: refused with Delta's defaults, started with the job's skipChangeCommits.
    deleted = _copy("delta-source-stateless-rows-deleted", tmp_path / "deleted")
    _probe_env(monkeypatch, deleted / "source")
    verdicts = {}
    for job in ("plain", "skip_change_commits", "ignore_deletes", "starting_version"):
        code, out, err = run_cli(
            capsys,
            "diagnose",
            str(deleted / "checkpoint"),
            "--job",
            f"{JOBS}:{job}",
            "--job-python",
            python,
            "--live-window",
            "0",
            "--format",
            "json",
        )
        assert "result" in json.loads(out), out + err
        doc = json.loads(out)["result"]
        verdicts[job] = (code, doc["restart"]["outcome"], sorted({f["code"] for f in doc["findings"]}))
    assert verdicts["plain"][:2] == (4, "fails") and "CD210" in verdicts["plain"][2]
    assert not _recorded("delta-source-stateless-rows-deleted", {})["started"]
    for job, options in (
        ("skip_change_commits", {"skipChangeCommits": "true"}),
        ("ignore_deletes", {"ignoreDeletes": "true"}),
    ):
        assert verdicts[job][1] == "starts" and "CD210" not in verdicts[job][2], verdicts
        assert _recorded("delta-source-stateless-rows-deleted", options)["started"]
    # startingVersion changes nothing on a restart (CD247 says so)
    assert verdicts["starting_version"][:2] == (4, "fails") and "CD247" in verdicts["starting_version"][2]

    # The change data feed at a position where the feed is off.
    off = _copy("delta-source-cdf-cdf-disabled-read", tmp_path / "off")
    _probe_env(monkeypatch, off / "source")
    code, out, err = run_cli(
        capsys,
        "diagnose",
        str(off / "checkpoint"),
        "--job",
        f"{JOBS}:change_feed",
        "--job-python",
        python,
        "--live-window",
        "0",
        "--format",
        "json",
    )
    assert "result" in json.loads(out), out + err
    doc = json.loads(out)["result"]
    assert code == 4 and "CD245" in {f["code"] for f in doc["findings"]}, out + err
    recorded = _recorded("delta-source-cdf-cdf-disabled-read", {"readChangeFeed": "true"})
    assert not recorded["started"] and doc["restart"]["error"]["search"] in recorded["error"]["message"]
    assert os.environ["CHECKPOINT_DOCTOR_JOB_INPUT"] == str(off / "source")
