"""Audit records are typed values: frozen, built once, changed only into new values, their JSON made
where it is written (in the key order ``audit-record.json``'s documents always had), and they travel
to Spark executors and back intact."""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions
from checkpoint_doctor.fleet.records import CheckpointRecord, SinkRecord, UnreadableRecord
from checkpoint_doctor.fleet.report import next_step
from checkpoint_doctor.fleet.run import RecordStream, audit
from checkpoint_doctor.render.hints import Hints
from tests.conftest import FIXTURES

OPTIONS = DiagnoseOptions(live_window_s=0)
HEAD = ["schema_version", "tool_version", "generated_at", "kind", "url", "root", "path", "verdict"]
HEAD += ["exit_code", "codes", "next_step"]


@pytest.fixture(scope="module")
def paired():
    """A checkpoint and the file sink output its logs prove is its own."""
    return audit([str(FIXTURES / "spark-4.3.0" / "file-sink-compact-missing")], options=OPTIONS)


def test_each_kind_writes_its_keys_in_the_documented_order(paired) -> None:
    checkpoint, sink = sorted(paired.records, key=lambda r: r.kind)
    assert isinstance(checkpoint, CheckpointRecord) and isinstance(sink, SinkRecord)
    assert list(checkpoint.to_json()) == [
        *HEAD,
        "checkpoint",
        "restart",
        "matrix",
        "lines",
        "stateful",
        "file_sink",
        "query_id",
        "files",
        "reads",
        "latest",
        "timeline",
        "diagnosis",
    ]
    assert list(sink.to_json()) == [
        *HEAD,
        "sink",
        "files",
        "reads",
        "timeline",
        "sink_log",
        "findings",
        "paired_with",
        "pairing",
    ]
    lost = UnreadableRecord.of(kind="root", url="/r", root="/r", path="", error_type="E", message="gone")
    assert list(lost.to_json()) == [*HEAD[:1], *HEAD[3:], "error"]  # not stamped: no envelope fields
    # The sink's record names the checkpoint checked with it; the checkpoint's says which sink.
    assert sink.paired_with == (checkpoint.url,) and checkpoint.file_sink.url == sink.url
    assert json.loads(json.dumps(paired.to_json()))["records"] == [r.to_json() for r in paired.records]


def test_records_are_frozen_and_the_stream_derives_new_ones(paired) -> None:
    checkpoint = next(r for r in paired.records if isinstance(r, CheckpointRecord))
    with pytest.raises(dataclasses.FrozenInstanceError):
        checkpoint.next_step = "rm -rf /"  # type: ignore[misc]
    bare = dataclasses.replace(checkpoint, next_step=None, stamp=None)
    stream = RecordStream(Hints(), lambda: 0)
    done = stream.add(bare)
    assert done is not bare and (bare.next_step, bare.stamp) == (None, None)  # the one added is unchanged
    assert done.next_step == next_step(bare, Hints()) and done.stamp is not None
    assert done.stamp.generated_at == "1970-01-01T00:00:00.000Z"
    assert stream.records == [done]


def test_a_record_survives_the_trip_to_a_spark_executor_and_back(paired) -> None:
    for record in paired.records:
        back = pickle.loads(pickle.dumps(record))
        assert back == record and back.to_json() == record.to_json()


def test_the_rules_a_renderer_needs_are_the_models(paired) -> None:
    checkpoint = next(r for r in paired.records if isinstance(r, CheckpointRecord))
    # "Counted and fails" is MatrixDiagnosis.failing_cells: the record holds the diagnosis whole.
    assert checkpoint.failing_cells == checkpoint.diagnosis.failing_cells
    written = checkpoint.to_json()
    counted_failing = [c for c in written["matrix"] if c["counted"] and c["outcome"] == "fails"]
    assert [(c.cell.spark, c.cell.mode) for c in checkpoint.failing_cells] == [
        (c["spark"], c["mode"]) for c in counted_failing
    ]
    assert written["restart"]["outcome"] == checkpoint.restart.outcome
    assert paired.summary.some_restart_fails == sum(
        1 for r in paired.records if isinstance(r, CheckpointRecord) and r.failing_cells
    )


def test_the_next_step_names_the_broker_only_for_a_checkpoint_that_reads_kafka() -> None:
    from checkpoint_doctor.fleet.kafka import NOT_CHECKED
    from checkpoint_doctor.fleet.records import KafkaPart

    result = audit(
        [str(FIXTURES / "spark-4.3.0" / "async-tail" / "checkpoint")],
        options=DiagnoseOptions(live_window_s=0),
    )
    (plain,) = result.records
    assert isinstance(plain, CheckpointRecord) and plain.kafka is None
    plain = dataclasses.replace(plain, url="/data/q1")
    reads_kafka = dataclasses.replace(
        plain, url="/data/q2", kafka=KafkaPart(topics=("events",), note=NOT_CHECKED)
    )
    hints = Hints(kafka_bootstrap="127.0.0.1:9092", kafka_options=("security.protocol=PLAINTEXT",))
    assert next_step(plain, hints) == "checkpoint-doctor plan /data/q1"
    assert next_step(reads_kafka, hints) == (
        "checkpoint-doctor plan /data/q2 --kafka-bootstrap-servers 127.0.0.1:9092"
        " --kafka-option security.protocol=PLAINTEXT"
    )
