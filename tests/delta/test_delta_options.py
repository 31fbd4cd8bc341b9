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
from checkpoint_doctor.diagnosis.sources.checks_delta import never_read
from checkpoint_doctor.diagnosis.sources.delta import predict as predict_source
from checkpoint_doctor.model import DeltaOffset
from checkpoint_doctor.model_delta import DeltaCommit, DeltaTable
from checkpoint_doctor.planning import PlanOptions
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.world.delta_log import read_table
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
        errors = {f.code for f in got.findings if f.severity == "error"}
        assert not REFUSALS & errors, got.codes
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


# ------------------------------------------------------------------ the pure rules, edges included

OFFSET = DeltaOffset("t-1", 4, -1, 1, False)
BEFORE = DeltaOffset("t-1", 3, -1, 1, False)
CDF = {"readChangeFeed": "true"}


def _table(*commits: DeltaCommit, earliest: int = 0) -> DeltaTable:
    latest = max(c.version for c in commits)
    return DeltaTable("/t", "t-1", latest, earliest, None, None, (), commits)


def test_a_change_feed_batch_fails_where_its_start_version_has_the_feed_off() -> None:
    """CDCReader.changesToDF checks the snapshot at the batch's start: off at the position (recorded:
    cdf-disabled-read) fails naming that version; turned off inside the batch (cdf-disabled) is read
    through, and the finding says the next batch fails."""
    on, off = (
        DeltaCommit(0, "CREATE TABLE", 0, 0, cdf=True),
        DeltaCommit(3, "SET TBLPROPERTIES", 0, 0, cdf=False),
    )
    rows = DeltaCommit(4, "WRITE", 1, 0, rows=5)
    refused = predict_source(OFFSET, _table(on, off, rows), "4.1", CDF, BEFORE)
    assert refused.code == "change-data-missing" and refused.refused_version == 3
    assert refused.error is not None and "recorded for version [3]" in refused.error.message
    later = DeltaCommit(5, "SET TBLPROPERTIES", 0, 0, cdf=False)
    through = predict_source(
        OFFSET, _table(on, rows, later, DeltaCommit(6, "WRITE", 1, 0, rows=5)), "3.5", CDF, BEFORE
    )
    assert through.error is None and through.versions == (3, 6) and through.feed_off_at == 5
    # Delta's defaults (no job): the plain source reads it all
    assert predict_source(OFFSET, _table(on, off, rows), "4.1", {}, BEFORE).error is None


def test_a_change_feed_source_on_a_cleaned_log_fails_in_each_release_words_whatever_failOnDataLoss() -> None:
    table = _table(DeltaCommit(6, "WRITE", 1, 0, rows=5), earliest=6)
    for line, cls in (
        ("3.5", "DELTA_EMPTY_DIRECTORY"),
        ("4.0", "DELTA_EMPTY_DIRECTORY"),
        ("4.2", "DELTA_LOG_FILE_NOT_FOUND_FOR_STREAMING_SOURCE"),
    ):
        for extra in ({}, {"failOnDataLoss": "false"}):
            got = predict_source(OFFSET, table, line, {**CDF, **extra}, BEFORE)
            assert got.error is not None and got.error.error_class == cls and got.code == "versions-gone"


def test_skip_change_commits_names_what_it_never_reads() -> None:
    merge = DeltaCommit(5, "MERGE", 1, 1, rows=8, inserted=3, updated=1)
    delete = DeltaCommit(6, "DELETE", 1, 1, rows=4, inserted=None, updated=None)
    got = predict_source(OFFSET, _table(merge, delete), "4.1", {"skipChangeCommits": "true"}, BEFORE)
    assert got.error is None and got.skipped_versions == (5, 6)
    assert [c.version for c in got.skipped_changes] == [5]  # the DELETE's added file holds rows kept
    assert never_read(merge) == (
        "version 5 (MERGE): 3 inserted and 1 updated row(s) never read (8 row(s) in the files it adds, the "
        "rest copies of rows read before)"
    )
    # ignoreDeletes passes a whole-file delete only: a rewritten file is an update to Delta
    one_row = predict_source(OFFSET, _table(delete), "3.5", {"ignoreDeletes": "true"}, BEFORE)
    assert one_row.error is not None and one_row.error.error_class == "DELTA_SOURCE_TABLE_IGNORE_CHANGES"
    whole = DeltaCommit(6, "DELETE", 0, 1)
    assert predict_source(OFFSET, _table(whole), "3.5", {"ignoreDeletes": "true"}, BEFORE).error is None


def test_a_plan_records_the_jobs_delta_options_and_apply_reads_them_back() -> None:
    job = _job("4.1.4", "/t", CDF)
    opts = PlanOptions(diagnose=DiagnoseOptions(spark="4.1", job=job))
    request = opts.to_request()
    assert request["diagnose"]["delta_source_options"] == {"0": {"path": "/t", "readChangeFeed": "true"}}
    again = PlanOptions.from_request(request)
    assert dict(again.diagnose.delta_source_options()) == {0: (("path", "/t"), ("readChangeFeed", "true"))}
    # a plan without a job keeps its request (and id) as before
    assert (
        "delta_source_options"
        not in PlanOptions(diagnose=DiagnoseOptions(spark="4.1")).to_request()["diagnose"]
    )
