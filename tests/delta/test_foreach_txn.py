"""A Delta table's txn against the restart, for the two writers that commit one per batch
(``fixtures/delta-txn/``, written and restarted by real Spark + delta-spark on each Delta line:
``scripts/delta_txn_fixtures.py``), issue 33 item 6:

* a ``foreachBatch`` writing with ``txnAppId``/``txnVersion`` (its own appId, the batch id): a
  rolled-back checkpoint's re-planned batches are skipped by Delta (WriteIntoDelta,
  ``DeltaCommand.hasBeenExecuted``), nothing written twice (the tool said nothing, or CD408
  "written again" when the table was named), one id a Trigger.Once restart; a recreated checkpoint
  keeps the appId, so its batches from 0 are skipped too;
* DeltaSink (appId = the query id) beside a table an old query id wrote: a recreated checkpoint's
  batches are written again (the tool said nothing).

Each skip is repaired by the tool's plan (delta-sink-txn), applied and restarted by Spark in the
recording: the batch above the txn version is written, the rows written again named in the plan.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import checkpoint_doctor as cd
from checkpoint_doctor.cli import main

TXN = Path(__file__).resolve().parents[2] / "fixtures" / "delta-txn"
APP = "checkpoint-doctor-foreach-batch"


def _lines(name: str) -> list[str]:
    return sorted(
        p.parent.parent.name.removeprefix("spark-") for p in TXN.glob(f"spark-*/{name}/scenario.json")
    )


def _copy(tmp_path: Path, line: str, name: str) -> tuple[Path, dict]:
    scen = TXN / f"spark-{line}" / name
    for part in ("checkpoint", "sink"):
        shutil.copytree(scen / part, tmp_path / part)
    return tmp_path, json.loads((scen / "scenario.json").read_text(encoding="utf-8"))


def _rows(tables: dict) -> dict:
    return tables["sink"]["rows_per_batch"]


def _ran(result: dict) -> list[int]:
    assert result["error"] is None, result["error"]
    return [b["batchId"] for b in result["batches"]]


def _findings(root: Path, line: str, code: str) -> list[dict]:
    doc = cd.diagnose(str(root / "checkpoint"), spark=[line], live_window_s=0).to_dict()
    return [f for f in doc["findings"] if f["code"] == code]


def test_the_foreach_batch_fixtures_are_written_on_every_delta_line() -> None:
    lines = _lines("delta-foreach-txn-rolled-back")
    assert (
        lines == _lines("delta-foreach-txn-checkpoint-recreated") == _lines("delta-sink-checkpoint-recreated")
    )
    assert lines == ["3.5.9", "4.0.5", "4.1.4", "4.2.1"]


@pytest.mark.parametrize("line", _lines("delta-foreach-txn-rolled-back"))
def test_a_rolled_back_foreach_batch_is_skipped_by_its_txn_one_id_a_restart_and_named_whole(
    line: str, tmp_path: Path
) -> None:
    root, scen = _copy(tmp_path / "rolled", line, "delta-foreach-txn-rolled-back")
    first, second = (r["result"] for r in scen["restarts"])
    # What Spark did: two Trigger.Once restarts in a row ran batch 1, then batch 2; Delta skipped both
    # writes (the table's version and rows as before: no duplicates).
    assert _ran(first) == [1] and _ran(second) == [2]
    before = scen["tables"]["sink"]
    assert first["tables"]["sink"] == second["tables"]["sink"] == before
    assert _rows(scen["tables"]) == {"0": 5, "1": 5, "2": 5}
    (cd407,) = _findings(root, line, "CD407")
    assert f"appId '{APP}'" in cd407["message"]
    assert "runs batch ids 1..2" in cd407["message"] and "2 batch(es) are not written" in cd407["message"]
    assert "runs batch 1 alone and the next restart batch 2" in cd407["message"]
    assert cd407["batch_ids"] == [1, 2]
    assert not _findings(root, line, "CD408")  # the tool's old verdict, named: "written again"
    # A batch re-run after its commit was lost is skipped with nothing lost: no finding there.
    root, scen = _copy(tmp_path / "lost", line, "delta-foreach-txn-commit-lost")
    assert _ran(scen["restarts"][0]["result"]) == [2]
    assert scen["restarts"][0]["result"]["tables"]["sink"] == scen["tables"]["sink"]
    assert not _findings(root, line, "CD407") and not _findings(root, line, "CD408")


@pytest.mark.parametrize("line", _lines("delta-foreach-txn-checkpoint-recreated"))
def test_a_recreated_checkpoint_keeps_the_foreach_batch_app_id_and_its_batches_are_skipped(
    line: str, tmp_path: Path
) -> None:
    root, scen = _copy(tmp_path, line, "delta-foreach-txn-checkpoint-recreated")
    # The new query's batch 0 was skipped (the old run's txn version is 2), then the restart's batch 1.
    assert _rows(scen["tables"]) == {"0": 5, "1": 5, "2": 5}
    result = scen["restarts"][0]["result"]
    assert _ran(result) == [1] and result["tables"]["sink"] == scen["tables"]["sink"]
    (cd407,) = _findings(root, line, "CD407")
    assert "runs batch ids 1..2" in cd407["message"] and f"'{APP}'" in cd407["message"]


@pytest.mark.parametrize("line", _lines("delta-sink-checkpoint-recreated"))
def test_a_recreated_checkpoint_beside_an_old_query_s_delta_sink_table_writes_its_batches_again(
    line: str, tmp_path: Path
) -> None:
    root, scen = _copy(tmp_path, line, "delta-sink-checkpoint-recreated")
    # The new query id's batch 0 wrote values 0..4 again; the restart's batch 1 writes 5..9 again.
    assert _rows(scen["tables"]) == {"0": 10, "1": 5, "2": 5}
    result = scen["restarts"][0]["result"]
    assert _ran(result) == [1] and _rows(result["tables"]) == {"0": 10, "1": 10, "2": 5}
    (cd408,) = _findings(root, line, "CD408")
    assert "batch 1 on restart" in cd408["message"] and "up to 2" in cd408["message"]
    assert not _findings(root, line, "CD407")


@pytest.mark.parametrize(
    ("line", "name"),
    [
        (line, n)
        for n in ("delta-foreach-txn-rolled-back", "delta-foreach-txn-checkpoint-recreated")
        for line in _lines(n)
    ],
)
def test_the_foreach_batch_skip_is_repaired_by_the_plan_and_spark_wrote_the_next_batch(
    line: str, name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The recording planned (--accept-data-loss), applied and restarted a copy: batch 3 ran and was
    written (txnVersion 3, above the txn's 2), reading from the end of batch 0: batch 1's rows
    (values 5..9) written again, as the plan's consequences say; the plan made today is that one."""
    root, scen = _copy(tmp_path, line, name)
    repair = scen["repair"]
    assert repair["strategy"] == "delta-sink-txn" and repair["expected"]["next_batch_id"] == 3
    result = repair["result"]
    assert _ran(result) == [3]
    assert result["tables"]["sink"]["version"] == scen["tables"]["sink"]["version"] + 1
    assert _rows(result["tables"]) == {"0": 5, "1": 10, "2": 5}
    loss = " ".join(repair["expected"]["consequences"]["loss"])
    assert "writes again what batch(es) 1..2 wrote" in loss
    out = tmp_path / "plan.json"
    code = main(
        ["plan", str(root / "checkpoint"), "--live-window", "0", "--accept-data-loss", "-o", str(out)]
    )
    assert code == 0, capsys.readouterr().out
    plan = json.loads(out.read_text(encoding="utf-8"))
    assert plan["strategy"] == repair["strategy"]
    assert plan["expected"]["next_batch_id"] == 3
    assert main(["apply", str(out), "--yes"]) == 0, capsys.readouterr().out
    assert not _findings(root, line, "CD407")


@pytest.mark.spark
def test_live_a_rolled_back_foreach_batch_is_skipped_as_predicted(tmp_path: Path) -> None:
    """A live sample (one line, 4.0.5): Spark restarts a copy of the rolled-back foreachBatch twice,
    each restart runs the next id CD407 names and Delta skips its write; the third writes batch 3."""
    import sys

    scripts = Path(__file__).resolve().parents[2] / "scripts"
    if str(scripts) not in sys.path:
        sys.path.insert(0, str(scripts))
    import delta_fixtures
    import delta_txn_fixtures

    from tests import sparkrun

    line = "4.0.5"
    root, scen = _copy(tmp_path / "copy", line, "delta-foreach-txn-rolled-back")
    (cd407,) = _findings(root, line, "CD407")
    query = delta_txn_fixtures.BASES[delta_txn_fixtures.FOREACH]["query"]
    jobs = [delta_fixtures._job(f"live#{i}", query, root, "restart", {}) for i in range(3)]
    results = sparkrun.run_jobs(line, jobs, tmp_path / "spark", env=delta_fixtures._spark_env(line))
    ran = [_ran(r) for r in results]
    assert ran == [[b] for b in cd407["batch_ids"]] + [[3]]
    tables = [r["tables"]["<sink>"] for r in results]
    assert tables[0] == tables[1] == scen["tables"]["sink"]  # both skipped: nothing written
    assert tables[2]["version"] == scen["tables"]["sink"]["version"] + 1  # batch 3 above the txn: written
