"""Spark is the judge of repairs: for every fixture real Spark refused to restart, plan (with consent
only where the plan asks for it), apply, restart with real Spark (3.5.9 and 4.3.0), and check that
the query starts and that no source range is skipped; then undo restores the damaged bytes. A
fixture without a plan must say why (the plan's unresolved entries).

Every case's proof is recorded (``scripts/record_repairs.py``, ``fixtures/repairs/spark-<v>.json``) and
replayed without a JVM by tests/planning/test_repair_records.py. The default run restarts one case per
recorded plan strategy on each line (tests/live.py); ``-m live_all`` or ``CHECKPOINT_DOCTOR_ALL_LIVE=1``
restarts every one of them (145 on 3.5.9, 143 on 4.3.0)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.live import all_live, one_per
from tests.repair_proof import case_id, judge, load_records, prepare, refused
from tests.sparkrun import SPARK_VERSIONS, restart_job, run_jobs

#: Every refused restart recorded (issue 34: job-aggregate-renamed refused on 3.5 only, job-dedup-added on both).
REFUSED = {"3.5.9": 145, "4.3.0": 143}


def sample(version: str, cases: list) -> list:
    """One case per plan strategy its record names (every case without a record: it was never restarted)."""
    records = load_records(version)

    def kind(case: tuple) -> object:
        record = records.get(case_id(case[0], case[1]))
        return case_id(case[0], case[1]) if record is None else (record["strategy"], record["consent"])

    return one_per(cases, kind)


def restart_repaired(version: str, cases: list, tmp_path: Path, subtests) -> None:
    prepared = [prepare(s, i, r, tmp_path / f"{n:03d}", restart_job) for n, (s, i, r) in enumerate(cases)]
    runnable = [p for p in prepared if p.job is not None]
    results = run_jobs(version, [p.job for p in runnable], tmp_path / "spark")
    by_key = dict(zip([p.key for p in runnable], results, strict=True))
    for p in prepared:
        with subtests.test(msg=f"{p.key} {p.plan.strategy}"):
            record = judge(p, by_key.get(p.key))
            if record["outcome"] == "no-plan":
                assert p.plan.unresolved, "a refused fixture without a plan must say why"
                continue
            assert record["outcome"] == "started", (
                f"plan {p.plan.strategy} did not make Spark start: {record['error']}"
            )
            assert record["problems"] == []
            assert record["undo_restored"]


@pytest.mark.spark
@pytest.mark.parametrize("version", SPARK_VERSIONS)
def test_repaired_checkpoints_restart_without_skipping_data(version, tmp_path, subtests):
    cases = refused(version)
    assert len(cases) == REFUSED[version]
    restart_repaired(version, cases if all_live() else sample(version, cases), tmp_path, subtests)


@pytest.mark.spark
@pytest.mark.live_all
@pytest.mark.parametrize("version", SPARK_VERSIONS)
def test_every_repaired_checkpoint_restarts_without_skipping_data(version, tmp_path, subtests):
    cases = refused(version)
    assert len(cases) == REFUSED[version]
    restart_repaired(version, cases, tmp_path, subtests)
