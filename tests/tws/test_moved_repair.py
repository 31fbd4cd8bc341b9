"""A moved transformWithState checkpoint: the plan points its operator metadata at its own schema
files, apply rewrites it with a backup, undo puts it back, and real Spark restarted the repaired copy
(``repair`` in each ``*-moved`` fixture's scenario.json, scripts/tws_fixtures.py --repair-only)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from checkpoint_doctor import api
from checkpoint_doctor.execution.apply import apply_plan
from checkpoint_doctor.execution.journal import JOURNAL, tool_url
from checkpoint_doctor.execution.undo import undo_journal
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.storage import open_storage

TWS = Path(__file__).resolve().parents[2] / "fixtures" / "tws"
MOVED = sorted(TWS.glob("spark-*/*-moved/scenario.json"))


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("path", MOVED, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_the_plan_points_the_metadata_at_this_checkpoint_and_undo_restores_it(
    path: Path, tmp_path: Path
) -> None:
    scen = json.loads(path.read_text(encoding="utf-8"))
    cp = tmp_path / "moved-here" / "checkpoint"
    shutil.copytree(path.parent / "checkpoint", cp)
    before = _tree(cp)
    line = ".".join(scen["spark_version"].split(".")[:2])
    (cell,) = api.diagnose(str(cp), spark=[line], live_window_s=0).cells
    assert not cell.diagnosis.prediction.starts
    plan = api.plan(str(cp), spark=[line], live_window_s=0)
    assert plan.addresses == ("CD321",)
    assert [s.kind for s in plan.steps] == ["quarantine", "quarantine", "write"]
    storage = open_storage(str(cp))
    result = apply_plan(plan, storage, sink=None, tool=open_storage(tool_url(storage.url)), now_ms=None)
    assert result.after is not None and result.after.prediction.starts
    meta = load_checkpoint(str(cp)).state.operators[0].metadata_v2
    assert meta is not None and meta.record is not None
    assert meta.record.schema_file_paths == tuple(
        f"file:{cp}/state/0/_stateSchema/default/{p.name}"
        for p in sorted((cp / "state/0/_stateSchema/default").iterdir())
        if not p.name.startswith(".")
    )
    # Only the newest metadata v2 changed (and its checksum went to the backup).
    after = _tree(cp)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    newest = f"state/0/_metadata/v2/{max(int(p.name) for p in (cp / 'state/0/_metadata/v2').iterdir() if p.name.isdigit())}"
    assert changed == {newest, f"state/0/_metadata/v2/.{newest.rpartition('/')[2]}.crc"}
    assert result.journal_url is not None
    undo_journal(open_storage(result.journal_url[: -len(JOURNAL)].rstrip("/")), open_storage)
    assert _tree(cp) == before


@pytest.mark.parametrize("path", MOVED, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_spark_restarted_the_repaired_copy(path: Path) -> None:
    repair = json.loads(path.read_text(encoding="utf-8"))["repair"]
    assert repair["plan_steps"] == ["quarantine", "quarantine", "write"]
    assert repair["apply_exit"] == 0
    assert repair["result"]["error"] is None and repair["result"]["started"], repair["result"]["error"]
    assert [b["batchId"] for b in repair["result"]["batches"]] == [3]
