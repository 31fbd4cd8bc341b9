"""Predicted Kafka restarts (checkpoint_doctor.diagnosis.sources.kafka_positions) equal what real Spark did:
every restart recorded in fixtures/kafka/, from the checkpoint's last offsets and the topic's positions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.diagnosis.sources.kafka_positions import predict
from checkpoint_doctor.diagnosis.spark_line import SparkLine
from checkpoint_doctor.model import KafkaLive, KafkaOffset
from checkpoint_doctor.parsing.source_offsets import decode_offset
from checkpoint_doctor.reading.pipeline import load_checkpoint

KAFKA_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "kafka"
CASES = [
    (path, idx)
    for path in sorted(KAFKA_FIXTURES.glob("spark-*/*/scenario.json"))
    for idx in range(len(json.loads(path.read_text(encoding="utf-8"))["restarts"]))
]


def next_offsets(checkpoint: Path) -> KafkaOffset:
    last = max(int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit())
    lines = (checkpoint / "offsets" / str(last)).read_text(encoding="utf-8").split("\n")
    decoded = decode_offset(lines[2])  # v1, metadata, then one line per source
    assert isinstance(decoded, KafkaOffset)
    return decoded


def test_there_are_recorded_kafka_restarts() -> None:
    assert len(CASES) >= 32


@pytest.mark.parametrize(
    ("path", "idx"), CASES, ids=[f"{p.parent.parent.name}/{p.parent.name}#{i}" for p, i in CASES]
)
def test_prediction_equals_the_recorded_restart(path: Path, idx: int) -> None:
    scen = json.loads(path.read_text(encoding="utf-8"))
    entry = scen["restarts"][idx]
    result = entry["result"]
    positions = scen["topic_positions"]
    live = {"events": None if positions is None else {int(p): (lo, hi) for p, (lo, hi) in positions.items()}}
    line = SparkLine(".".join(scen["spark_version"].split(".")[:2]))
    got = predict(
        next_offsets(path.parent / "checkpoint"), live, line, entry["options"]["failOnDataLoss"] == "true"
    )
    if got.error is None:
        assert result["error"] is None, result["error"]["message"][:300]
        assert got.rows == result["batches"][0]["numInputRows"]
        end = result["batches"][0]["sources"][0]["endOffset"]
        end = json.loads(end) if isinstance(end, str) else end
        assert {str(r.partition): r.end for r in got.reads} == end["events"]
    else:
        assert result["error"] is not None and not result["batches"]
        message = result["error"]["message"]
        assert got.error.matches(message), (got.error.search, message[:400])
        if line.line == "3.5":
            # 3.5 wraps a refusal in the batch's tasks in the job's failure; one planned on the driver is bare
            assert ("Job aborted due to stage failure" in message) == (got.error.phase == "task")
        else:
            # 4.x surfaces the task's own exception, caused by the consumer's out-of-range fetch
            assert ("OffsetOutOfRangeException" in message) == (got.error.phase == "task")


#: The recorded restarts with failOnDataLoss=true (Spark's default), which the diagnosis judges.
STRICT = [
    (path, idx)
    for path, idx in CASES
    if json.loads(path.read_text(encoding="utf-8"))["restarts"][idx]["options"]["failOnDataLoss"] == "true"
]


def _recorded_live(scen: dict) -> KafkaLive:
    positions = scen["topic_positions"]
    parts = (
        None if positions is None else tuple(sorted((int(p), lo, hi) for p, (lo, hi) in positions.items()))
    )
    return KafkaLive("recorded", (("events", parts),))


@pytest.mark.parametrize(
    ("path", "idx"), STRICT, ids=[f"{p.parent.parent.name}/{p.parent.name}#{i}" for p, i in STRICT]
)
def test_diagnose_with_the_recorded_positions_gives_the_recorded_restart(path: Path, idx: int) -> None:
    """The whole diagnosis (restart prediction and CD207), not only the predictor, with the
    positions recorded beside the checkpoint; the diagnosis assumes failOnDataLoss=true."""
    scen = json.loads(path.read_text(encoding="utf-8"))
    entry = scen["restarts"][idx]
    result = entry["result"]
    line = ".".join(scen["spark_version"].split(".")[:2])
    snapshot = load_checkpoint(str(path.parent / "checkpoint"))
    got = diagnose(
        snapshot,
        DiagnoseOptions(
            spark=line, stateful=scen["query"]["stateful"], live_window_s=0, kafka=_recorded_live(scen)
        ),
    )
    if result["error"] is None:
        assert got.prediction.starts, got.prediction.summary
        assert "CD207" not in got.codes
        rows = result["batches"][0]["numInputRows"]
        assert any(f"reads {rows} records" in n for n in got.prediction.notes), got.prediction.notes
    else:
        assert not got.prediction.starts
        assert got.prediction.caused_by == ("CD207",) and "CD207" in got.codes
        assert got.prediction.error is not None and got.prediction.error.matches(result["error"]["message"])
