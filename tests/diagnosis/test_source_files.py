"""The sources' own files under ``sources/<n>/``: what each line reads on restart, and its texts.

The rate and file-source rules are judged by real Spark (fixtures rate-start-*, file-source-log-*,
replayed by test_spark_judge.py). Kafka cannot run here (no connector), so its transplanted
fixtures are checked against ``KafkaSourceInitialOffsetWriter``/``KafkaMicroBatchStream`` as read
in Spark's source: the initial offsets are read only for a batch without start offsets.
"""

from __future__ import annotations

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.diagnosis.sources.files import derive_compact_interval, source_kinds
from checkpoint_doctor.diagnosis.versions import LINES
from checkpoint_doctor.model import KafkaInitialOffsets
from tests.scenarios import all_scenarios

KAFKA = {s.name: s for s in all_scenarios() if s.name.startswith("kafka-initial-offsets") and "4.3.0" in s.id}


def _diagnose(name, line, tmp_path):
    snapshot = KAFKA[name].read(tmp_path)
    return snapshot, diagnose(
        snapshot, DiagnoseOptions(spark=line, sources=1, stateful=False, live_window_s=0)
    )


@pytest.mark.parametrize("line", LINES)
def test_kafka_initial_offsets_newer_than_v1_fail_the_first_batch(line, tmp_path):
    _, result = _diagnose("kafka-initial-offsets-too-new-fresh", line, tmp_path)
    error = result.prediction.error
    assert not result.prediction.starts and result.prediction.next_batch_id == 0
    assert error is not None and error.phase == "batch"
    assert error.message.startswith("Failed to read log file <cp>/sources/0/0. ")
    assert "maximum supported log version is v1, but encountered v99999" in error.message
    expected_class = "INVALID_LOG_VERSION.MAX_SUPPORTED_VERSION" if line != "3.5" else None
    assert error.error_class == expected_class
    assert "CD205" in result.codes


@pytest.mark.parametrize("line", LINES)
def test_kafka_initial_offsets_are_not_read_by_a_restart_from_offsets(line, tmp_path):
    _, result = _diagnose("kafka-initial-offsets-too-new", line, tmp_path)
    assert result.prediction.starts and result.prediction.next_batch_id == 4
    assert "CD206" in result.codes and "CD205" not in result.codes  # (CD601: a 4.3.0 fixture on older lines)


@pytest.mark.parametrize("name", ["kafka-initial-offsets-2.1", "kafka-initial-offsets-v1"])
def test_kafka_initial_offsets_of_both_eras_read_alike(name, tmp_path):
    snapshot, result = _diagnose(name, "4.3", tmp_path)
    record = snapshot.sources[0].get(0).record
    assert isinstance(record, KafkaInitialOffsets)
    assert record.legacy_format == (name == "kafka-initial-offsets-2.1")
    assert record.offset is not None and record.offset.topic_partitions() == {("events", 0), ("events", 1)}
    assert source_kinds(snapshot) == {0: "kafka"}
    # nothing but CD212: the positions are not checked without a broker
    assert result.prediction.starts and list(result.codes) == ["CD212"]


@pytest.mark.parametrize(
    ("default", "latest_compact", "interval"),
    [(10, 9, 10), (10, 2, 3), (10, 29, 10), (10, 44, 15), (10, 12, 13)],
)
def test_compact_interval_derived_from_the_newest_compaction(default, latest_compact, interval):
    # CompactibleFileStreamLog.deriveCompactInterval
    assert derive_compact_interval(default, latest_compact) == interval
