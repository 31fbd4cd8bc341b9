"""Issue 36, fewer false alarms: a copy's file times are judged the same way whatever its size or
however long it took, the tool's own apply is never a live writer, and a plan names the Delta sink
it paired rather than saying the sink was not checked."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from checkpoint_doctor.cli import main
from tests.delta.test_recorded_restarts import DELTA_FIXTURES

ROLLED_BACK = DELTA_FIXTURES / "spark-3.5.9" / "delta-sink-rolled-back"  # 3 checkpoint files
LOG_CLEANED = DELTA_FIXTURES / "spark-3.5.9" / "delta-source-count-log-cleaned"  # 30 and more


def codes(capsys: pytest.CaptureFixture[str], checkpoint: Path) -> tuple[int, list[str]]:
    """diagnose with the default live window: its exit code and finding codes."""
    code = main(["diagnose", str(checkpoint), "--format", "json"])
    doc = json.loads(capsys.readouterr()[0])
    return code, [f["code"] for f in doc["result"]["findings"]]


def copied(scenario: Path, dest: Path, spread_s: float = 0.0) -> Path:
    """Copy a scenario as ``cp -r`` does, its files written now, the last ``spread_s`` seconds
    apart from the first (a slow copy of a large checkpoint)."""
    shutil.copytree(scenario, dest)
    files = sorted(p for p in dest.rglob("*") if p.is_file())
    now = time.time()
    for i, path in enumerate(files):
        at = now - spread_s + spread_s * i / max(len(files) - 1, 1)
        os.utime(path, (at, at))
    return dest / "checkpoint"


def test_a_fresh_copy_is_no_live_writer_whatever_its_size(tmp_path, capsys) -> None:
    small = copied(ROLLED_BACK, tmp_path / "small", 1.5)
    large = copied(LOG_CLEANED, tmp_path / "large", 1.5)

    def logs(cp: Path) -> int:
        # the files CD501 reads the times of: logs and state, no hidden side file
        return len(
            [p for p in cp.rglob("*") if p.is_file() and not p.name.startswith(".") and p.parent != cp]
        )

    assert logs(small) < 4 < logs(large)  # the old rule called only a copy of 4 files and more a copy
    # both copies made at the same moment, within the copy spread: neither is a query writing now
    assert "CD501" not in codes(capsys, small)[1]
    assert "CD501" not in codes(capsys, large)[1]


@pytest.mark.parametrize("scenario", [ROLLED_BACK, LOG_CLEANED])
def test_a_file_written_after_the_copy_is_still_a_writer(tmp_path, capsys, scenario) -> None:
    cp = copied(scenario, tmp_path / "q", 7200)  # copied two hours ago
    os.utime(cp / "commits" / "0")  # a query re-running a batch wrote its commit now
    assert "CD501" in codes(capsys, cp)[1]


def test_diagnose_after_the_tools_own_apply_is_clean(tmp_path, capsys) -> None:
    cp = copied(ROLLED_BACK, tmp_path / "job")
    plan = tmp_path / "plan.json"
    main(["plan", str(cp), "--live-window", "0", "--accept-data-loss", "-o", str(plan)])
    assert main(["apply", str(plan), "--yes"]) == 0
    capsys.readouterr()
    # the repair wrote offsets/commits a moment ago: the journal knows they are its own
    assert codes(capsys, cp) == (0, [])


def test_a_plan_header_names_the_delta_sink_it_paired(tmp_path, capsys) -> None:
    cp = copied(ROLLED_BACK, tmp_path / "job")
    main(["plan", str(cp), "--live-window", "0"])
    out = capsys.readouterr()[0]
    flat = " ".join(out.split())
    assert "Sink not checked" not in flat
    assert f"Sink Delta table {tmp_path / 'job' / 'sink'}, paired by txn appId = query id" in flat
