"""The tables found beside a checkpoint are the ones its plan works from: a Delta refusal gets its way
back with no --delta-table, and an audit points a silent loss (CD407) at the plan."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.scenarios import run_cli

LINES = sorted(p.name for p in (FIXTURES / "delta").glob("spark-*"))


@pytest.mark.parametrize("line", LINES)
def test_a_cleaned_log_beside_the_checkpoint_is_planned_without_a_flag(
    line: str, tmp_path: Path, capsys
) -> None:
    copy = tmp_path / "orders"
    shutil.copytree(FIXTURES / "delta" / line / "delta-source-count-log-cleaned", copy)
    ckpt = str(copy / "checkpoint")
    code, out, _ = run_cli(capsys, "plan", ckpt, "--live-window", "0", "-o", str(tmp_path / "p.json"))
    assert code == 4 and "delta-versions" in out and not (tmp_path / "p.json").exists()
    assert f"checkpoint-doctor plan {ckpt} --live-window 0 --accept-data-loss -o " in out
    code, out, _ = run_cli(
        capsys, "plan", ckpt, "--live-window", "0", "--accept-data-loss", "-o", str(tmp_path / "p.json")
    )
    assert code == 0, out
    plan = json.loads((tmp_path / "p.json").read_text())
    assert plan["strategy"] == "delta-versions"
    code, out, _ = run_cli(capsys, "apply", str(tmp_path / "p.json"), "--yes")
    assert code == 0 and "STARTS new batch 2" in out, out


def test_the_audit_record_of_a_sink_that_skips_batches_says_plan(tmp_path: Path) -> None:
    from checkpoint_doctor.diagnosis import DiagnoseOptions
    from checkpoint_doctor.fleet.records import CheckpointRecord
    from checkpoint_doctor.fleet.report import next_step
    from checkpoint_doctor.fleet.run import audit
    from checkpoint_doctor.render.hints import Hints

    copy = tmp_path / "q"
    shutil.copytree(FIXTURES / "delta" / "spark-3.5.9" / "delta-sink-rolled-back", copy)
    records = audit([str(tmp_path)], options=DiagnoseOptions(live_window_s=0)).records
    (record,) = [r for r in records if isinstance(r, CheckpointRecord)]
    assert "CD407" in {str(f.code) for f in record.findings} and not record.failing_cells
    step = next_step(record, Hints())
    assert step is not None and step.startswith(f"checkpoint-doctor plan {copy / 'checkpoint'}")
