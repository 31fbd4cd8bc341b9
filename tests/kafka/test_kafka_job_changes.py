"""The changed Kafka query (``diagnose --job``): the Kafka base restarted on a real broker by jobs that
subscribe to other topics, on every line (``scripts/generate_fixtures.py --stage kafka-jobs``,
fixtures/kafka-jobs/); what each line's Spark said the jobs run is in fixtures/jobs/facts-<v>.json.
Every prediction equals the recorded restart, and the codes are the change's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.diagnosis.test_spark_judge import compare
from tests.scenarios import FIXTURES, JOB_PREFIX, job_facts_for

KAFKA_JOB_FIXTURES = FIXTURES / "kafka-jobs"
CASES = sorted(KAFKA_JOB_FIXTURES.glob("spark-*/*/scenario.json"))
LINES = ("3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0")

#: The codes each change gives with --job (Spark's own outcome is in the fixture); CD212: diagnosed
#: here without a broker, the positions are not checked.
EXPECTED = {
    "kafka-job-unchanged": ["CD212"],
    "kafka-job-topic-changed": ["CD212", "CD223"],
    "kafka-job-topic-changed-lenient": ["CD212", "CD223"],
    "kafka-job-topic-added": ["CD212"],
}


def test_every_line_restarted_every_kafka_change() -> None:
    per_line: dict[str, set[str]] = {}
    for path in CASES:
        scen = json.loads(path.read_text())
        assert scen["restarts"][0]["result"] is not None
        per_line.setdefault(scen["spark_version"], set()).add(scen["name"])
    assert per_line == {line: set(EXPECTED) for line in LINES}


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.parent.name}/{p.parent.name}" for p in CASES])
def test_the_kafka_job_gives_its_codes_and_spark_agrees(path: Path) -> None:
    scen = json.loads(path.read_text())
    restart = scen["restarts"][0]
    job = job_facts_for(restart["query"][len(JOB_PREFIX) :], restart["spark"])
    opts = DiagnoseOptions(
        spark=".".join(restart["spark"].split(".")[:2]),
        mode=job.mode,
        sources=len(job.sources),
        stateful=job.stateful,
        live_window_s=0,
        job=job,
    )
    result = diagnose(load_checkpoint(str(path.parent / "checkpoint")), opts)
    assert list(result.codes) == EXPECTED[scen["name"]], result.prediction.summary
    assert not compare(result.prediction, restart["result"]), (
        result.prediction.summary,
        (restart["result"].get("error") or {}).get("message", "")[:400],
    )
