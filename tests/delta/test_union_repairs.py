"""Two Delta sources in one query (``fixtures/delta-union/``, written and restarted by real Spark +
delta-spark: ``scripts/delta_union_fixtures.py``), one of the tables replaced: the verdict is the
recorded restart's, and ``apply`` takes the tool's own plan (issue 33 item 7: it refused it, "the
plan has 6 steps, the planner makes 0", since its re-plan paired the replaced table only when it was
the one Delta source)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import checkpoint_doctor as cd
from checkpoint_doctor.cli import main

UNION = Path(__file__).resolve().parents[2] / "fixtures" / "delta-union"
LINES = sorted(p.name.removeprefix("spark-") for p in UNION.glob("spark-*"))


def _copy(tmp_path: Path, line: str, name: str) -> Path:
    root = tmp_path / "job"
    scen = UNION / f"spark-{line}" / name
    for part in ("checkpoint", "source", "source2"):
        shutil.copytree(scen / part, root / part)
    return root


def _recorded(line: str, name: str) -> dict:
    scen = json.loads((UNION / f"spark-{line}" / name / "scenario.json").read_text(encoding="utf-8"))
    return scen["restarts"][0]["result"]


@pytest.mark.parametrize("line", LINES)
def test_two_sources_are_paired_and_the_verdict_is_the_recorded_restart(line: str, tmp_path: Path) -> None:
    for name in ("delta-two-sources", "delta-two-sources-replaced"):
        root = _copy(tmp_path / name, line, name)
        got = cd.diagnose(str(root / "checkpoint"), spark=[line], live_window_s=0)
        doc = got.to_dict()
        pairs = {p["source"]: (p["how"], p["table"]) for p in doc["delta_pairing"]["pairs"]}
        assert pairs[0] == ("table-id", str(root / "source"))
        assert pairs[1][1] == str(root / "source2")
        recorded = _recorded(line, name)
        prediction = got.primary.diagnosis.prediction
        if recorded["error"] is None:
            assert prediction.starts, (name, prediction.summary)
        else:
            assert not prediction.starts, name
            assert prediction.error is not None and prediction.error.matches(recorded["error"]["message"])
            assert "CD208" in {f["code"] for f in doc["findings"]}


@pytest.mark.parametrize("line", LINES)
def test_the_plan_for_one_replaced_source_of_two_is_made_the_same_twice_and_applied(
    line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _copy(tmp_path, line, "delta-two-sources-replaced")
    ckpt = str(root / "checkpoint")
    plans = []
    for i in (1, 2):
        out = tmp_path / f"plan{i}.json"
        code = main(["plan", ckpt, "--live-window", "0", "--accept-data-loss", "-o", str(out)])
        text = capsys.readouterr().out
        assert code == 0, text
        plans.append(json.loads(out.read_text(encoding="utf-8")))
    assert plans[0] == plans[1]
    plan = plans[0]
    assert plan["strategy"] == "delta-table"
    # Only source 1 is re-pointed: the preconditions hold source2 alone, the steps rewrite its line.
    held = [p["url"] for p in plan["preconditions"] if p["kind"] == "delta_table"]
    assert held == [str(root / "source2")]
    loss = " ".join(plan["expected"]["consequences"]["loss"])
    assert f"Delta source 1 ({root / 'source2'})" in loss and "Delta source 0" not in loss
    code = main(["apply", str(tmp_path / "plan1.json"), "--yes"])
    text = capsys.readouterr().out
    assert code == 0, text
    after = cd.diagnose(ckpt, spark=[line], live_window_s=0)
    assert after.primary.diagnosis.prediction.starts, after.primary.diagnosis.prediction.summary
    doc = after.to_dict()
    assert not {"CD208", "CD209", "CD210"} & {f["code"] for f in doc["findings"]}
    pairs = {p["source"]: (p["how"], p["table"]) for p in doc["delta_pairing"]["pairs"]}
    assert pairs == {0: ("table-id", str(root / "source")), 1: ("table-id", str(root / "source2"))}


def _paths_out(doc: object, root: Path | None = None) -> str:
    """The JSON text with the tables' locations (a copy's, the recording's scratch) said alike."""
    text = json.dumps(doc, sort_keys=True)
    if root is not None:
        text = text.replace(str(root), "<copy>")
    return re.sub(r"/[^\s\"()]*/(source2?)\b", r"<copy>/\1", text)


@pytest.mark.parametrize("line", LINES)
def test_the_repair_was_restarted_by_spark_and_read_what_the_plan_says(
    line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The recording (scripts/delta_union_fixtures.py) applied the tool's plan to a copy and restarted
    it with real Spark: batch 2 started, source 0 read its unread version 4 (ids 15..19), source 1 the
    replacing table as of its first version (ids 100..102), as the plan's consequences say; the plan
    made today is the one recorded."""
    scen = json.loads((UNION / f"spark-{line}" / "delta-two-sources-replaced" / "scenario.json").read_text())
    repair = scen["repair"]
    result = repair["result"]
    assert repair["strategy"] == "delta-table" and result["error"] is None and result["started"]
    (batch,) = result["batches"]
    assert batch["batchId"] == repair["expected"]["next_batch_id"] == 2
    assert [s["numInputRows"] for s in batch["sources"]] == [5, 3]
    loss = " ".join(repair["expected"]["consequences"]["loss"])
    assert "reads table" in loss and "as of version 4 (1 file(s), 3 rows)" in loss
    root = _copy(tmp_path, line, "delta-two-sources-replaced")
    out = tmp_path / "plan.json"
    code = main(
        ["plan", str(root / "checkpoint"), "--live-window", "0", "--accept-data-loss", "-o", str(out)]
    )
    assert code == 0, capsys.readouterr().out
    plan = json.loads(out.read_text(encoding="utf-8"))
    assert _paths_out(plan["expected"], root) == _paths_out(repair["expected"])


RECREATED = "delta-two-sources-recreated"
RECREATED_LINES = sorted(
    p.parent.parent.name.removeprefix("spark-") for p in UNION.glob(f"spark-*/{RECREATED}/scenario.json")
)


@pytest.mark.parametrize("line", RECREATED_LINES)
def test_the_plan_for_one_recreated_source_of_two_is_applied_and_was_restarted_by_spark(
    line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """source2 deleted and written anew (a new id, a new log) pairs as the only table beside that
    pairs with nothing else: apply re-plans from the tables the plan holds, so the plan holds source
    too (source 0's table by id, what made source2 the only one left). Without it apply refused the
    tool's own plan: "the plan has 6 steps, the planner makes 0" (issue 33 item 7)."""
    recorded = _recorded(line, RECREATED)
    assert recorded["error"] is not None and "DIFFERENT_DELTA_TABLE" in recorded["error"]["message"]
    root = _copy(tmp_path, line, RECREATED)
    ckpt = str(root / "checkpoint")
    plans = []
    for i in (1, 2):
        out = tmp_path / f"plan{i}.json"
        code = main(["plan", ckpt, "--live-window", "0", "--accept-data-loss", "-o", str(out)])
        assert code == 0, capsys.readouterr().out
        plans.append(json.loads(out.read_text(encoding="utf-8")))
    assert plans[0] == plans[1] and plans[0]["strategy"] == "delta-table"
    held = [p["url"] for p in plans[0]["preconditions"] if p["kind"] == "delta_table"]
    assert held == [str(root / "source2"), str(root / "source")]
    code = main(["apply", str(tmp_path / "plan1.json"), "--yes"])
    assert code == 0, capsys.readouterr().out
    after = cd.diagnose(ckpt, spark=[line], live_window_s=0)
    assert after.primary.diagnosis.prediction.starts, after.primary.diagnosis.prediction.summary
    # The recording applied the same plan to a copy; Spark ran batch 2: source 0 its unread version 4
    # (5 rows), source 1 the new table as of its version 1 (ids 100..102).
    repair = json.loads((UNION / f"spark-{line}" / RECREATED / "scenario.json").read_text())["repair"]
    (batch,) = repair["result"]["batches"]
    assert (
        repair["strategy"] == "delta-table" and batch["batchId"] == repair["expected"]["next_batch_id"] == 2
    )
    assert [s["numInputRows"] for s in batch["sources"]] == [5, 3]
    assert _paths_out(plans[0]["expected"], root) == _paths_out(repair["expected"])
