"""Spark is still the judge: re-run real Spark on a sample of fixtures and compare with the
outcomes recorded in their scenario files (which test_spark_judge.py compares with predictions).

Live restarts run on the CI lines only (3.5.9 and 4.3.0); the sample takes the bases written by every
line (3.3.4 to 4.3.0, so the cross-version restarts are re-checked) and one scenario of each damage
family. The default run restarts the bases on both lines and each damage family on one of them (the
families alternate, in name order: every family and every line is restarted each run, tests/live.py);
``-m live_all`` or ``CHECKPOINT_DOCTOR_ALL_LIVE=1`` restart every family on both lines. The other
lines' recordings are replayed by test_spark_judge.py and re-recorded with
``scripts/generate_fixtures.py --stage oracle --spark <version> --force``.
"""

from __future__ import annotations

import pytest

from checkpoint_doctor.diagnosis import diagnose
from tests.diagnosis.test_spark_judge import spark_error_class
from tests.live import shared_among
from tests.scenarios import options_for_restart, restart_cases
from tests.sparkrun import SPARK_VERSIONS, error_text, restart_job, run_jobs

SAMPLE = {
    "stateless",
    "window_agg",
    "async-tail",
    "missing-prev-offsets",
    "missing-prev-offsets-uncommitted",
    "offsets-latest-empty",
    "commit-latest-empty",
    "commit-ahead",
    "metadata-missing",
    "orphan-crc",
    "state-delta-missing",
    "offsets-too-new",
    "continuous-commit-without-offsets",
    "fresh-temp-only",
    "file-sink-uncommitted",
    "rocksdb-sst-missing",
    "offsets-blank-metadata",
    # damage families Spark refused, and damage Spark reads that must not read as healthy
    "orphan-crc-both-same",
    "offsets-dir-deleted",
    "rate-start-garbage",
    "file-source-log-missing",
    "state-delta-corrupt",
    "rocksdb-zip-truncated",
    "rocksdb-state-deleted",
}


#: The bases: restarted on both lines by every run (the cross-version restarts).
BASES = {"stateless", "window_agg"}


def families(version: str) -> set[str]:
    """The names of SAMPLE a default run restarts on ``version``: the bases, and every other damage
    family in name order from this line's index on, one line in turn (all of them with
    ``CHECKPOINT_DOCTOR_ALL_LIVE=1``)."""
    return BASES | set(shared_among(sorted(SAMPLE - BASES), version, SPARK_VERSIONS))


def restart_and_compare(version: str, names: set[str], tmp_path, subtests) -> None:
    every = [(s, i, r) for s, i, r in restart_cases() if r["spark"] == version and s.name in SAMPLE]
    assert len(every) == {"3.5.9": 60, "4.3.0": 61}[version]  # the sample, recorded on both lines
    cases = [case for case in every if case[0].name in names]
    jobs = [restart_job(s.path, s.data, i, r, tmp_path / f"{n:03d}") for n, (s, i, r) in enumerate(cases)]
    results = run_jobs(version, jobs, tmp_path)
    for (scenario, index, restart), result in zip(cases, results, strict=True):
        with subtests.test(msg=f"{scenario.id}#{index}"):
            recorded = restart["result"]
            assert result["started"] == recorded["started"], error_text(result)[:500]
            if result["started"] and result["batches"] and recorded["batches"]:
                assert result["batches"][0]["batchId"] == recorded["batches"][0]["batchId"]
            if not result["started"]:
                snapshot = scenario.read(
                    tmp_path / f"diag-{scenario.path.parent.name}-{scenario.name}-{index}"
                )
                prediction = diagnose(snapshot, options_for_restart(scenario, restart)).prediction
                assert prediction.error is not None and prediction.error.matches(error_text(result))
                spark_class = spark_error_class((result["error"] or {}).get("message", ""))
                assert spark_class is None or prediction.error.error_class == spark_class


@pytest.mark.spark
@pytest.mark.parametrize("version", SPARK_VERSIONS)
def test_recorded_outcomes_are_still_what_spark_does(version, tmp_path, subtests):
    restart_and_compare(version, families(version), tmp_path, subtests)


@pytest.mark.spark
@pytest.mark.live_all
@pytest.mark.parametrize("version", SPARK_VERSIONS)
def test_every_sampled_family_is_still_what_spark_does_on_both_lines(version, tmp_path, subtests):
    restart_and_compare(version, set(SAMPLE), tmp_path, subtests)
