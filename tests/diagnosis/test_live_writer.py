"""The live-writer check: a batch planned in the future, or a file changed within the
window, counts as live. The clock is the ``now_ms`` option; file times are set with ``os.utime``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.storage.builders import checkpoint_files, write_files

#: batchTimestampMs of offsets/2 in the builders' checkpoint.
PLANNED = 1795364925498 + 2 * 1000
HOUR = 3_600_000


def _checkpoint(tmp_path: Path, files_at_ms: int) -> Path:
    """offsets/0..2, commits/0..1 (and a state partition), every file modified at ``files_at_ms``
    and spread over a minute (so that it does not look like a fresh copy)."""
    cp = write_files(
        tmp_path / "ckpt", checkpoint_files(range(3), range(2), partitions=1, state_versions=[1, 2])
    )
    for i, path in enumerate(sorted(p for p in cp.rglob("*") if p.is_file())):
        stamp = (files_at_ms - 60_000 + i * 1000) / 1000
        os.utime(path, (stamp, stamp))
    return cp


def _live(cp: Path, now_ms: int, window_s: float = 600) -> list:
    result = diagnose(load_checkpoint(str(cp)), DiagnoseOptions(live_window_s=window_s, now_ms=now_ms))
    return [f for f in result.findings if f.code in ("CD501", "CD502")]


def test_a_batch_planned_in_the_future_counts_as_live(tmp_path: Path) -> None:
    cp = _checkpoint(tmp_path, files_at_ms=PLANNED - 10 * HOUR)

    (finding,) = _live(cp, now_ms=PLANNED - HOUR)  # the driver's clock is an hour ahead of ours

    assert finding.code == "CD501" and finding.detail("evidence") == "batchTimestampMs"
    assert finding.message.startswith(
        "batch 2 was planned 3600 s in the future (a clock ahead of this machine's)"
    )
    assert finding.detail("age_s") == -3600.0


def test_a_file_changed_within_the_window_counts_as_live(tmp_path: Path) -> None:
    now = PLANNED + 10 * HOUR  # the newest batch was planned long ago...
    cp = _checkpoint(tmp_path, files_at_ms=now - 10 * HOUR)
    stamp = (now - 30_000) / 1000
    os.utime(cp / "commits" / "1", (stamp, stamp))  # ...but a commit was written 30 s ago

    (finding,) = _live(cp, now_ms=now)

    assert finding.code == "CD501" and finding.detail("evidence") == "mtime"
    assert finding.message == (
        "files of the checkpoint were modified 30 s ago, within the live window of 600 s: if no query writes "
        "to it (a copy just made looks the same), pass --live-window 0."
    )


def test_a_file_changed_in_the_future_counts_as_live(tmp_path: Path) -> None:
    now = PLANNED + 10 * HOUR
    cp = _checkpoint(tmp_path, files_at_ms=now - 10 * HOUR)
    stamp = (now + 2 * HOUR) / 1000  # a file server's clock ahead of ours
    os.utime(cp / "state" / "0" / "0" / "2.delta", (stamp, stamp))

    (finding,) = _live(cp, now_ms=now)

    assert finding.detail("evidence") == "mtime" and "7200 s in the future" in finding.message


def test_a_temp_file_written_in_the_future_counts_as_live(tmp_path: Path) -> None:
    now = PLANNED + 10 * HOUR
    cp = _checkpoint(tmp_path, files_at_ms=now - 10 * HOUR)
    temp = cp / "offsets" / ".3.0b6d3c2e-5a5b-4f57-9d3c-1f2e3d4c5b6a.tmp"
    temp.write_text("v1\n")
    os.utime(temp, (now / 1000 + 60, now / 1000 + 60))

    assert [f.code for f in _live(cp, now_ms=now)] == ["CD502"]


@pytest.mark.parametrize("window_s", [600, 0])
def test_old_files_and_an_old_batch_are_not_live_and_the_window_switches_it_off(
    tmp_path: Path, window_s: float
) -> None:
    now = PLANNED + 10 * HOUR
    cp = _checkpoint(tmp_path, files_at_ms=now - 10 * HOUR)

    assert _live(cp, now_ms=now, window_s=window_s) == []
    assert _live(cp, now_ms=PLANNED - HOUR, window_s=0) == []


def test_a_fresh_copy_is_not_a_live_writer(tmp_path: Path) -> None:
    now = PLANNED + 10 * HOUR
    cp = _checkpoint(tmp_path, files_at_ms=now)
    for path in (p for p in cp.rglob("*") if p.is_file()):
        os.utime(path, (now / 1000 - 20, now / 1000 - 20))  # every file written in one go: a copy

    assert _live(cp, now_ms=now) == []
