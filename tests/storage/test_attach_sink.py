"""Attaching a file sink's log to a snapshot already assembled (``reading.pipeline.attach_sink``): an
audit pairs each checkpoint with the sink its logs prove, and the result must be the snapshot a
load with ``--sink-path`` gives, whether the parsed log is handed over or parsed again."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from checkpoint_doctor.reading.pipeline import attach_sink, load_checkpoint, read_sink
from checkpoint_doctor.reading.snapshot import MAX_FILE_BYTES, CheckpointSnapshot
from checkpoint_doctor.reading.storage import open_storage
from tests.scenarios import FIXTURES

SINK_SCENARIOS = ("file_to_file", "file-sink-rollback", "file-sink-uncommitted", "file-sink-compact-missing")


def _same(a: CheckpointSnapshot, b: CheckpointSnapshot) -> None:
    assert a == b
    assert a.raw == b.raw
    assert a.sink_raw == b.sink_raw
    assert a.read_count == b.read_count


@pytest.mark.parametrize("name", SINK_SCENARIOS)
def test_the_parsed_log_is_attached_as_a_fresh_assembly_would_attach_it(name: str) -> None:
    src = FIXTURES / "spark-4.3.0" / name
    snapshot = load_checkpoint(str(src / "checkpoint"))
    parsed, arg, _ = read_sink(open_storage(str(src / "sink")))
    handed = attach_sink(snapshot, arg, parsed)
    assert handed.sink is parsed  # not parsed again
    _same(handed, attach_sink(snapshot, arg))
    _same(handed, load_checkpoint(str(src / "checkpoint"), sink_path=str(src / "sink")))


def test_a_snapshot_with_a_file_left_unread_is_assembled_again(tmp_path: Path) -> None:
    src = FIXTURES / "spark-4.3.0" / "file_to_file"
    shutil.copytree(src, tmp_path / "q")
    # The newest offsets file, listed over the read bound, is not read: it is not in ``raw``, so the shortcut (the
    # same snapshot with the sink's fields set) would not be what assembling from ``raw`` gives.
    newest = sorted((tmp_path / "q" / "checkpoint" / "offsets").glob("[0-9]*"), key=lambda p: int(p.name))[-1]
    os.truncate(newest, MAX_FILE_BYTES + 1)
    snapshot = load_checkpoint(str(tmp_path / "q" / "checkpoint"))
    assert snapshot.read_count == len(snapshot.raw) + 1
    parsed, arg, _ = read_sink(open_storage(str(tmp_path / "q" / "sink")))
    _same(attach_sink(snapshot, arg, parsed), attach_sink(snapshot, arg))
