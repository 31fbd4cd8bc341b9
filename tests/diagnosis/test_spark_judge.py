"""Spark is the judge: every prediction matches what real Spark did on the recorded restarts.

``scripts/generate_fixtures.py`` restarted copies of the fixtures with PySpark 3.5.9, 4.0.5,
4.1.4, 4.2.1 and 4.3.0 (see fixtures/README.md for which restarts each scenario gets) and recorded
the outcome (started or failed, first batch id, start/end offsets, error text). This test
diagnoses each fixture for that Spark line and mode and compares: the verdict, the batch id, the
offsets, the error's search text and, when Spark's exception starts with an error class
(``[CLASS.SUBCLASS]``), the predicted error class. A second test (``tests/spark/``) re-runs Spark
3.5.9 and 4.3.0 on a sample to prove the recordings are still what Spark does.
"""

from __future__ import annotations

import json
import re

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


_QUERY_FAILED = re.compile(r"\[STREAM_FAILED\] Query \[[^\]]*\] terminated with exception: ")
_ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]")


def spark_error_class(message: str) -> str | None:
    """Return the error class Spark's exception text starts with (after the query wrapper), or None.

    ``[STREAM_FAILED] Query [id = ..] terminated with exception: [A.B] ...`` gives ``A.B``; an error
    raised at start() (no wrapper) starting with ``[A.B]`` too; ``Failed to read log file <f>. [A.B]``
    gives None (the class is not what the exception starts with).
    """
    match = _QUERY_FAILED.match(message)
    text = message[match.end() :] if match else message
    found = _ERROR_CLASS.match(text)
    return found.group(1) if found else None


def compare(prediction, result) -> list[str]:
    """Return the differences between a prediction and a recorded Spark restart."""
    problems = []
    if prediction.starts != result["started"]:
        err = (result.get("error") or {}).get("message", "")[:300]
        problems.append(
            f"predicted starts={prediction.starts} ({prediction.summary}); Spark started={result['started']} {err}"
        )
        return problems
    if not result["started"]:
        text = (result["error"] or {}).get("message", "") + "\n" + "\n".join(result.get("log") or [])
        if prediction.error.search not in text:
            problems.append(f"predicted error {prediction.error.search!r} not in Spark's: {text[:400]}")
        spark_class = spark_error_class((result["error"] or {}).get("message", ""))
        if spark_class is not None and prediction.error.error_class != spark_class:
            problems.append(f"predicted error class {prediction.error.error_class}, Spark's is {spark_class}")
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
    snapshot = scenario.read(tmp_path)
    result = diagnose(snapshot, options_for_restart(scenario, restart))
    assert restart["fingerprint"] == scenario.data["fingerprint"], (
        "recorded result is stale: re-run the oracle stage"
    )
    problems = compare(result.prediction, restart["result"])
    assert not problems, "\n".join(problems)
    for code in result.prediction.caused_by:
        assert code in result.codes, f"the failure's code {code} is not among the findings {result.codes}"


def test_error_class_of_a_spark_message():
    wrapped = "[STREAM_FAILED] Query [id = a, runId = b] terminated with exception: [CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error"
    assert spark_error_class(wrapped) == "CANNOT_LOAD_STATE_STORE.UNCATEGORIZED"
    assert spark_error_class("[STREAMING_CHECKPOINT_MISSING_METADATA_FILE] Checkpoint location") == (
        "STREAMING_CHECKPOINT_MISSING_METADATA_FILE"
    )
    assert (
        spark_error_class(
            "[STREAM_FAILED] Query [id = a, runId = b] terminated with exception: batch 2 doesn't exist"
        )
        is None
    )
    assert spark_error_class("Failed to read log file <cp>/offsets/3. [MALFORMED_LOG_FILE] Log file") is None


#: Recorded restarts per Spark line (scripts/generate_fixtures.py --stage oracle); a change to the
#: fixtures changes these on purpose.
RECORDED_PER_LINE = {"3.5.9": 290, "4.0.5": 204, "4.1.4": 204, "4.2.1": 205, "4.3.0": 292}


def test_every_fixture_has_recorded_restarts():
    per_line: dict[str, int] = {}
    for _, _, restart in CASES:
        per_line[restart["spark"]] = per_line.get(restart["spark"], 0) + 1
    assert per_line == RECORDED_PER_LINE
    # Only transplants of sources this machine cannot run (Kafka, Delta) have no real restart, and
    # they say so.
    from tests.scenarios import all_scenarios

    unjudged = [s for s in all_scenarios() if not s.data.get("restarts")]
    assert {s.name.split("-")[0] for s in unjudged} == {"kafka", "delta"}
    assert all("Not restarted with Spark" in s.data["description"] for s in unjudged)
