"""A live case of the way back from a Delta schema change, as an operator runs it, on the jar set CI
installs (Spark 3.5.9 + delta-spark 3.3.3): ``diagnose`` on a copy of a checkpoint whose source table
had a column renamed under column mapping finds the table beside it and fails with CD240; ``plan``
names the restart (the Delta source option ``schemaTrackingLocation`` under the checkpoint and the SQL
conf) and changes nothing; real Spark restarted with exactly what the plan printed, as a job's retries
would, stops on purpose while Delta writes its schema log and then reads every row not read yet."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from checkpoint_doctor.planning.strategies.delta_schema import LOCATION, restart_settings
from tests import sparkrun
from tests.scenarios import run_cli

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import delta_fixtures  # noqa: E402
import delta_schema_fixtures  # noqa: E402

VERSION = "3.5.9"
NAME = "delta-source-mapped-renamed"


@pytest.mark.spark
def test_plan_names_schema_tracking_and_spark_reads_past_the_rename(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = REPO / "fixtures" / "delta-schema" / f"spark-{VERSION}" / NAME
    for part in ("checkpoint", "source"):
        shutil.copytree(folder / part, tmp_path / part)
    cp = tmp_path / "checkpoint"
    monkeypatch.chdir(tmp_path)

    code, out, _ = run_cli(capsys, "diagnose", str(cp), "--spark", "3.5", "--live-window", "0")
    assert code == 4 and "CD240" in out and "note renamed to remark" in out, out
    code, out, _ = run_cli(
        capsys, "plan", str(cp), "--spark", "3.5", "--live-window", "0", "--format", "json"
    )
    doc = json.loads(out)["result"]
    settings = restart_settings(doc, "3.5")
    assert settings is not None, doc["unresolved"]
    options, confs = settings
    assert options == {"schemaTrackingLocation": f"{cp}/{LOCATION}"}
    assert confs == {"spark.databricks.delta.streaming.allowSourceColumnRenameAndDrop": "always"}
    assert not doc["steps"]

    jobs = [
        delta_schema_fixtures._job(f"{NAME}#{n}", tmp_path, "restart", options, confs)
        for n in range(delta_schema_fixtures.REPAIR_RESTARTS)
    ]
    results = sparkrun.run_jobs(VERSION, jobs, tmp_path / "spark", env=delta_fixtures._spark_env(VERSION))
    for r in results:
        if r["error"] is not None:
            assert "DELTA_STREAMING_METADATA_EVOLUTION" in r["error"]["message"], r["error"]["message"][:400]
    # versions 4 (ids 15..19) and 6 (ids 20..24) were not read: every row once, none twice
    assert sum(b["numInputRows"] for r in results for b in r["batches"]) == 10
    assert (cp / LOCATION).is_dir()
