"""``diagnose --job`` with a Delta source: the table the job reads is compared with the checkpoint's as
``--delta-table``'s is. Another table at the job's path is, to Spark, what a replaced table is
(``DeltaSource`` checks the offsets' table id against the table it reads now): the recorded restart of
``delta-source-stateless-replaced`` (the base's checkpoint, byte for byte, and another table at the
path it reads) is what the prediction is held to. The job python is a stand-in answering with the
facts a Spark line gives a Delta job (a ``delta`` relation with its ``path``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis.changes.facts import job_facts_from_dict
from checkpoint_doctor.diagnosis.changes.sources import delta_source_paths
from tests.scenarios import FIXTURES, run_cli

LINE = FIXTURES / "delta" / "spark-4.1.4"
BASE = LINE / "delta-source-stateless"
REPLACED = LINE / "delta-source-stateless-replaced"


def _facts(path: str) -> dict:
    return {
        "spark_version": "4.1.4",
        "sources": [{"name": "delta", "options": {"path": path}}],
        "operators": [],
        "confs": {},
        "sink": {
            "format": "noop",
            "output_mode": "Append",
            "trigger": "ProcessingTimeTrigger(0)",
            "options": {},
        },
    }


def _python(tmp_path: Path, path: str) -> str:
    script = tmp_path / "python"
    entry = {"job": "jobs.delta:build", "facts": {**_facts(path), "elapsed_s": 1.0}}
    script.write_text("#!/bin/sh\ncat <<'EOF'\n" + json.dumps([entry]) + "\nEOF\n")
    script.chmod(0o755)
    return str(script)


def test_the_delta_paths_of_a_job():
    job = job_facts_from_dict("jobs.delta:build", _facts("/data/orders"), 1.0)
    assert delta_source_paths(job) == ("/data/orders",)


@pytest.mark.parametrize("table", [REPLACED / "source", BASE / "source"], ids=["another-table", "same-table"])
def test_a_job_reading_another_delta_table_fails_as_a_replaced_table_does(table, tmp_path, capsys):
    args = ["--job", "jobs.delta:build", "--job-python", _python(tmp_path, str(table)), "--format", "json"]
    code, out, err = run_cli(capsys, "diagnose", str(BASE / "checkpoint"), *args)
    doc = json.loads(out)["result"]
    codes = {f["code"] for f in doc["findings"]}
    if table == BASE / "source":
        assert code == 0, out + err
        assert "CD208" not in codes and doc["restart"]["outcome"] == "starts"
        return
    assert code == 4, out + err
    assert "CD208" in codes
    # The job's path decides, though the checkpoint's own table (its id) lies beside it.
    (pair,) = [p for p in doc["delta_pairing"]["pairs"] if p["role"] == "source"]
    assert pair["how"] == "job-path" and pair["table"] == str(table)
    recorded = json.loads((REPLACED / "scenario.json").read_text())["restarts"][0]["result"]
    assert not recorded["started"]
    search = doc["restart"]["error"]["search"]
    assert search in recorded["error"]["message"], (search, recorded["error"]["message"][:300])
