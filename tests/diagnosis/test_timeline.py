"""The timeline: one shape for inspect, audit and the HTML picture, damage shown as damage (issue
13.3 and 13.6), on real Spark checkpoints damaged by scripts/generate_fixtures.py."""

from __future__ import annotations

import pytest

from checkpoint_doctor.diagnosis.detect import detect_mode
from checkpoint_doctor.diagnosis.timeline import sink_timeline, timeline
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.conftest import FIXTURES

SPARK = FIXTURES / "spark-4.3.0"


def rows(name: str, depth: str = "default"):
    snapshot = load_checkpoint(str(SPARK / name / "checkpoint"), depth=depth)
    return {r.batch_id: r for r in timeline(snapshot, detect_mode(snapshot).mode)}


@pytest.mark.parametrize(
    ("name", "batch", "offsets"),
    [
        ("offsets-latest-empty", 3, "empty"),
        ("offsets-latest-header-only", 3, "empty"),
        ("offsets-latest-truncated", 3, "truncated"),
        ("offsets-too-new", 3, "too-new"),
        ("offsets-java-serialized", 3, "damaged"),
        ("missing-prev-offsets", 2, "missing"),
    ],
)
def test_damaged_offsets_files_show_their_damage(name, batch, offsets):
    row = rows(name)[batch]
    assert row.offsets == offsets
    assert row.to_dict()["offsets"] == offsets


def test_commit_damage_and_the_batch_in_flight():
    assert rows("commit-latest-empty")[max(rows("commit-latest-empty"))].commit == "empty"
    assert rows("commit-too-new")[max(rows("commit-too-new"))].commit == "too-new"
    uncommitted = rows("uncommitted-tail")
    newest = uncommitted[max(uncommitted)]
    assert (newest.offsets, newest.commit) == ("present", "pending")


def test_state_cells_count_stores_and_a_stateless_query_has_none():
    window = rows("window_agg")
    newest = window[max(window)]
    assert newest.state == "present" and newest.state_stores is not None
    assert newest.state_stores[0] == newest.state_stores[1] > 0
    stateless = rows("stateless")
    assert {r.state for r in stateless.values()} == {"none"}
    assert all(r.to_dict()["state_stores"] is None for r in stateless.values())
    deleted = rows("state-delta-missing")
    assert any(r.state in ("partial", "missing") for r in deleted.values())


def test_async_gaps_are_expected_not_missing():
    tail = rows("async-tail")
    assert tail[30].offsets == tail[30].commit == "absent"
    assert tail[31].offsets == "present"


def test_sink_timeline_states():
    sink = sink_timeline([10, 11, 12], [9], ["_spark_metadata/13"], length=6)
    assert [(c.batch_id, c.sink) for c in sink] == [
        (12, "present"),
        (11, "present"),
        (10, "present"),
        (9, "compact"),
        (8, "folded"),
        (7, "folded"),
    ]
