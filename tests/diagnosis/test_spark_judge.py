"""Spark is the judge: every prediction matches what real Spark did on the recorded restarts.

``scripts/generate_fixtures.py`` restarted a copy of every fixture with PySpark 3.5.9 and 4.3.0
and recorded the outcome (started or failed, first batch id, start/end offsets, error text).
This test diagnoses each fixture for that Spark line and mode and compares. A second test
(``tests/spark/``) re-runs Spark on a sample to prove the recordings are still what Spark does.
"""

from __future__ import annotations

import json

import pytest

from checkpoint_doctor.diagnosis import diagnose
from tests.scenarios import options_for_restart, restart_cases

CASES = restart_cases()


def _json(value):
    if value is None or isinstance(value, (dict, list, int)):
        return value
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value


def compare(prediction, result) -> list[str]:
    """Return the differences between a prediction and a recorded Spark restart."""
    problems = []
    if prediction.starts != result["started"]:
        err = (result.get("error") or {}).get("message", "")[:300]
        problems.append(f"predicted starts={prediction.starts} ({prediction.summary}); Spark started={result['started']} {err}")
        return problems
    if not result["started"]:
        text = (result["error"] or {}).get("message", "") + "\n" + "\n".join(result.get("log") or [])
        if prediction.error.search not in text:
            problems.append(f"predicted error {prediction.error.search!r} not in Spark's: {text[:400]}")
        return problems
    batches = result.get("batches") or []
    if batches:
        first = batches[0]
        if first["batchId"] != prediction.next_batch_id:
            problems.append(f"predicted batch {prediction.next_batch_id}, Spark ran {first['batchId']}")
        for i, src in enumerate(first.get("sources", [])):
            if prediction.start_offsets is not None and i < len(prediction.start_offsets):
                want = prediction.start_offsets[i].raw
                if _json(src.get("startOffset")) != _json(want):
                    problems.append(f"source {i} start: predicted {want}, Spark {src.get('startOffset')}")
            if prediction.rerun and prediction.end_offsets is not None and i < len(prediction.end_offsets):
                want = prediction.end_offsets[i].raw
                if _json(src.get("endOffset")) != _json(want):
                    problems.append(f"source {i} end: predicted {want}, Spark {src.get('endOffset')}")
    return problems


@pytest.mark.parametrize(
    ("scenario", "index", "restart"),
    CASES,
    ids=[f"{s.id}#{i}:{r['spark']}/{r['mode']}" for s, i, r in CASES],
)
def test_prediction_matches_recorded_spark_restart(scenario, index, restart, tmp_path):
    snapshot = scenario.load(tmp_path)
    result = diagnose(snapshot, options_for_restart(scenario, restart))
    assert restart["fingerprint"] == scenario.data["fingerprint"], "recorded result is stale: re-run the oracle stage"
    problems = compare(result.prediction, restart["result"])
    assert not problems, "\n".join(problems)
    for code in result.prediction.caused_by:
        assert code in result.codes, f"the failure's code {code} is not among the findings {result.codes}"


def test_every_fixture_has_recorded_restarts():
    assert len(CASES) >= 150
