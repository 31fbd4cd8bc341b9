"""The Delta sink's txn against a re-run batch (``fixtures/delta-txn/``, written and restarted by real
Spark + delta-spark: ``scripts/delta_txn_fixtures.py``): a commit lost after the sink's write re-runs
the same batch, DeltaSink skips it and nothing is lost, so no CD407 (issue 33 item 6: the tool warned
of a silent skip there); a batch planned anew below the txn version is still named, alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import checkpoint_doctor as cd

TXN = Path(__file__).resolve().parents[2] / "fixtures" / "delta-txn"
DELTA = TXN.parent / "delta"
LINES = sorted(p.name.removeprefix("spark-") for p in TXN.glob("spark-*"))


def _copy(tmp_path: Path, line: str, name: str) -> tuple[Path, dict]:
    scen = TXN / f"spark-{line}" / name
    for part in ("checkpoint", "sink"):
        shutil.copytree(scen / part, tmp_path / part)
    return tmp_path, json.loads((scen / "scenario.json").read_text(encoding="utf-8"))


def _rows(tables: dict) -> dict:
    return tables["sink"]["rows_per_batch"]


@pytest.mark.parametrize("line", LINES)
def test_a_batch_re_run_after_its_commit_was_lost_is_skipped_with_nothing_lost(
    line: str, tmp_path: Path
) -> None:
    root, scen = _copy(tmp_path, line, "delta-sink-commit-lost")
    recorded = scen["restarts"][0]["result"]
    # What Spark did: re-ran batch 2 and wrote nothing (DeltaSink skipped it), every batch's rows kept.
    assert recorded["error"] is None and [b["batchId"] for b in recorded["batches"]] == [2]
    assert _rows(recorded["tables"]) == _rows(scen["tables"]) == {"0": 5, "1": 5, "2": 5}
    got = cd.diagnose(str(root / "checkpoint"), spark=[line], live_window_s=0)
    prediction = got.primary.diagnosis.prediction
    assert prediction.starts and prediction.rerun and prediction.next_batch_id == 2
    doc = got.to_dict()
    assert [p["table"] for p in doc["delta_pairing"]["pairs"]] == [str(root / "sink")]
    assert "CD407" not in {f["code"] for f in doc["findings"]}


@pytest.mark.parametrize("line", LINES)
def test_after_a_re_run_batch_the_skip_names_only_the_batches_planned_anew(line: str, tmp_path: Path) -> None:
    root, scen = _copy(tmp_path, line, "delta-sink-rolled-back-commit-lost")
    recorded = scen["restarts"][0]["result"]
    assert recorded["error"] is None and [b["batchId"] for b in recorded["batches"]] == [1]
    assert _rows(recorded["tables"]) == _rows(scen["tables"])  # batch 1 skipped: its rows already there
    got = cd.diagnose(str(root / "checkpoint"), spark=[line], live_window_s=0)
    prediction = got.primary.diagnosis.prediction
    assert prediction.rerun and prediction.next_batch_id == 1
    (cd407,) = [f for f in got.to_dict()["findings"] if f["code"] == "CD407"]
    # Batch 1 re-runs with its own offsets (nothing lost); batch 2 is planned anew and skipped.
    assert "runs batch ids 2 again" in cd407["message"] and "1 batch(es) are not written" in cd407["message"]


@pytest.mark.parametrize("line", LINES)
def test_a_nested_rollback_planned_with_no_flag_was_restarted_by_spark_as_the_plan_says(
    line: str, tmp_path: Path
) -> None:
    """Issue 33 item 5: delta-sink-rolled-back moved into ``table/_checkpoints/q1``, planned with no
    flag (the table holding ``_checkpoints`` paired by txn appId), applied and restarted by Spark
    (scripts/delta_txn_fixtures.py): batch 3 ran and was written (above the txn version 2, nothing
    skipped), reading from the end of batch 0: batch 1's rows written again, as the plan says."""
    record = json.loads(
        (TXN / f"spark-{line}" / "nested-rolled-back-repair.json").read_text(encoding="utf-8")
    )
    source = DELTA / f"spark-{line}" / "delta-sink-rolled-back"
    scen = json.loads((source / "scenario.json").read_text(encoding="utf-8"))
    assert record["fingerprint"] == scen["fingerprint"]  # recorded on the fixture as it is
    assert record["strategy"] == "delta-sink-txn" and record["expected"]["next_batch_id"] == 3
    result = record["result"]
    assert result["error"] is None and [b["batchId"] for b in result["batches"]] == [3]
    sink = result["tables"]["sink"]
    assert sink["version"] == scen["tables"]["sink"]["version"] + 1  # batch 3 committed to the table
    assert sink["rows_per_batch"] == {"0": 5, "1": 10, "2": 5}  # values 5..9 (batch 1's) written again
    loss = " ".join(record["expected"]["consequences"]["loss"])
    assert "writes again what batch(es) 1..2 wrote" in loss
    # The plan made today, with no flag, is the one that was applied.
    table = tmp_path / "table"
    shutil.copytree(source / "sink", table)
    shutil.copytree(source / "checkpoint", table / "_checkpoints" / "q1")
    from checkpoint_doctor.cli import main

    out = tmp_path / "plan.json"
    ckpt = str(table / "_checkpoints" / "q1")
    assert main(["plan", ckpt, "--live-window", "0", "--accept-data-loss", "-o", str(out)]) == 0
    plan = json.loads(out.read_text(encoding="utf-8"))
    assert plan["strategy"] == record["strategy"]
    assert plan["expected"]["next_batch_id"] == record["expected"]["next_batch_id"]
