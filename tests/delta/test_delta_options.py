"""A Delta source's options are the job's (issue 33 items 3 and 4): ``ignoreDeletes``,
``skipChangeCommits``, ``readChangeFeed``, ``startingVersion`` and ``failOnDataLoss`` are reader
options the checkpoint does not hold, so with ``--job`` the job's options decide the verdict.

Every restart recorded in ``fixtures/delta/`` with options (scripts/delta_fixtures.py: real Spark +
delta-spark restarted the checkpoint with them) is diagnosed here with a job that reads the table with
the same options, and the verdict is held to what Spark did: the options of ``rows-deleted``,
``row-deleted`` and ``merged`` (whole-file and one-row deletes, a MERGE), and the change data feed
sources (``delta-source-cdf*``: CDF turned off after the position, a cleaned log, a MERGE).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.diagnosis.changes.facts import JobFacts, job_facts_from_dict
from checkpoint_doctor.reading.delta import read_table
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.delta.test_recorded_restarts import SOURCE_CASES, _id, _line, _load
from tests.scenarios import FIXTURES, run_cli

#: Restarts Spark ran with reader options (the job's), over every line with Delta.
OPTION_CASES = [c for c in SOURCE_CASES if _load(*c)[1].get("source_options")]
#: The codes of a refused Delta source restart.
REFUSALS = {"CD208", "CD209", "CD210", "CD245"}


def _facts(version: str, path: str, options: dict[str, str], stateful: bool = False) -> dict:
    return {
        "spark_version": version,
        "sources": [{"name": "delta", "options": {"path": path, **options}}],
        "operators": [],
        "confs": {},
        "sink": {
            "format": "noop",
            "output_mode": "Update" if stateful else "Append",
            "trigger": "ProcessingTimeTrigger(0)",
            "options": {},
        },
    }


def _job(version: str, path: str, options: dict[str, str]) -> JobFacts:
    return job_facts_from_dict("jobs.delta:build", _facts(version, path, options), 1.0)


def _diagnose(scen_dir: Path, scen: dict, options: dict[str, str]):
    table = read_table(str(scen_dir / "source"))
    snapshot = load_checkpoint(str(scen_dir / "checkpoint"))
    job = _job(scen["spark_version"], str(scen_dir / "source"), options)
    return diagnose(
        snapshot,
        DiagnoseOptions(
            spark=_line(scen), stateful=scen["query"]["stateful"], live_window_s=0, delta=(table,), job=job
        ),
    )


def test_the_recorded_restarts_have_option_variants_on_every_line() -> None:
    lines = {p.parent.parent.name for p, _ in OPTION_CASES}
    assert lines == {"spark-3.5.9", "spark-4.0.5", "spark-4.1.4", "spark-4.2.1"}


@pytest.mark.parametrize(("path", "idx"), OPTION_CASES, ids=[_id(c) for c in OPTION_CASES])
def test_with_the_job_its_options_decide_the_verdict_as_spark_did(path: Path, idx: int) -> None:
    scen, entry, result = _load(path, idx)
    got = _diagnose(path.parent, scen, entry["source_options"])
    if result["error"] is None:
        assert got.prediction.starts, (entry["source_options"], got.prediction.summary)
        assert not REFUSALS & set(got.codes), got.codes
    else:
        message = result["error"]["message"]
        assert not got.prediction.starts, f"Spark failed: {message[:300]}"
        assert got.prediction.error is not None and got.prediction.error.matches(message), (
            got.prediction.error and got.prediction.error.search,
            message[:400],
        )
        assert REFUSALS & set(got.codes)


LINE = FIXTURES / "delta" / "spark-4.1.4"


def _python(tmp_path: Path, version: str, path: str, options: dict[str, str]) -> str:
    script = tmp_path / "python"
    entry = {"job": "jobs.delta:build", "facts": {**_facts(version, path, options), "elapsed_s": 1.0}}
    script.write_text("#!/bin/sh\ncat <<'EOF'\n" + json.dumps([entry]) + "\nEOF\n")
    script.chmod(0o755)
    return str(script)


def _cli(capsys, tmp_path: Path, scen: Path, options: dict[str, str], *extra: str):
    python = _python(tmp_path, "4.1.4", str(scen / "source"), options)
    args = [
        "--job",
        "jobs.delta:build",
        "--job-python",
        python,
        "--live-window",
        "0",
        "--format",
        "json",
        *extra,
    ]
    code, out, err = run_cli(capsys, "diagnose", str(scen / "checkpoint"), *args)
    return code, json.loads(out)["result"], err


@pytest.mark.parametrize(
    "options",
    [{"ignoreDeletes": "true"}, {"skipChangeCommits": "true"}],
    ids=["ignoreDeletes", "skipChangeCommits"],
)
def test_a_whole_file_delete_under_the_jobs_option_is_no_error(options, capsys, tmp_path) -> None:
    """The CLI with --job: Spark started (recorded), so no CD210 and no exit 4."""
    scen = LINE / "delta-source-stateless-rows-deleted"
    recorded = [
        r
        for r in json.loads((scen / "scenario.json").read_text())["restarts"]
        if r["source_options"] == options
    ]
    assert recorded and recorded[0]["result"]["started"]
    code, doc, err = _cli(capsys, tmp_path, scen, options)
    codes = {f["code"] for f in doc["findings"]}
    assert code in (0, 1), (code, codes, err)
    assert "CD210" not in codes and doc["restart"]["outcome"] == "starts"
