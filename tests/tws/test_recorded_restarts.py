"""Predicted transformWithState restarts equal what real Spark did (fixtures/tws/, scripts/tws_fixtures.py).

The operator metadata v2 records its schema files by absolute path, so where a checkpoint lies is
part of what a restart does: each fixture is put back where Spark restarted it (``restarted_at``;
``copied`` also at ``written_at``, the old place it still reads) before it is diagnosed, as an
operator diagnoses the checkpoint where it lies.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.diagnosis.inspection import inspect_report
from checkpoint_doctor.reading.pipeline import load_checkpoint

TWS = Path(__file__).resolve().parents[2] / "fixtures" / "tws"
CASES = sorted(TWS.glob("spark-*/*/scenario.json"))
LINES = ("4.0.5", "4.1.4", "4.2.1", "4.3.0")


def _id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}"


def _install(fixture: Path, at: Path) -> None:
    if at.exists():
        shutil.rmtree(at)
    at.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(fixture / "checkpoint", at)


@pytest.fixture
def placed(request: pytest.FixtureRequest) -> Iterator[tuple[dict, Path]]:
    """The fixture at the path Spark restarted it (the old place emptied or filled as it was)."""
    path: Path = request.param
    scen = json.loads(path.read_text(encoding="utf-8"))
    at, written = Path(scen["restarted_at"]), Path(scen["written_at"])
    # Each fixture is written under its own scenario directory: nothing else lives there.
    base = written.parent
    if base.exists():
        shutil.rmtree(base)
    _install(path.parent, at)
    if scen["scenario"] == "copied":
        _install(path.parent, written)
    try:
        yield scen, at
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_every_line_has_its_recorded_restarts() -> None:
    per_line: dict[str, int] = {}
    for path in CASES:
        per_line[path.parent.parent.name] = per_line.get(path.parent.parent.name, 0) + 1
    # 4.0 has the pandas processor only; 4.1+ also the Row-based one (8 scenarios each).
    assert per_line == {"spark-4.0.5": 8, "spark-4.1.4": 16, "spark-4.2.1": 16, "spark-4.3.0": 16}


@pytest.mark.parametrize("placed", CASES, ids=[_id(p) for p in CASES], indirect=True)
def test_prediction_equals_the_recorded_restart(placed: tuple[dict, Path]) -> None:
    scen, at = placed
    result = scen["restarts"][0]["result"]
    line = ".".join(scen["spark_version"].split(".")[:2])
    # The query is stateful (as --stateful says): with state/ deleted nothing else in it says so.
    got = diagnose(load_checkpoint(str(at)), DiagnoseOptions(spark=line, stateful=True, live_window_s=0))
    if result["error"] is None:
        assert result["started"]
        assert got.prediction.starts, got.prediction.summary
    else:
        message = result["error"]["message"]
        assert not got.prediction.starts, f"Spark failed: {message[:300]}"
        assert got.prediction.error is not None and got.prediction.error.matches(message), (
            got.prediction.error,
            message[:600],
        )
        assert got.prediction.caused_by and got.prediction.caused_by[0] in got.codes


@pytest.mark.parametrize(
    "placed", [p for p in CASES if p.parent.name.endswith("-copied")], ids=_id, indirect=True
)
def test_a_copied_checkpoint_starts_but_is_tied_to_the_old_place(placed: tuple[dict, Path]) -> None:
    scen, at = placed
    got = diagnose(load_checkpoint(str(at)), DiagnoseOptions(spark="4.3", live_window_s=0))
    assert got.prediction.starts
    finding = next(f for f in got.findings if f.code == "CD321")
    assert "still there" in finding.message and str(Path(scen["written_at"])) in finding.message


@pytest.mark.parametrize(
    "placed", [p for p in CASES if p.parent.name.endswith("-healthy")], ids=_id, indirect=True
)
def test_inspect_shows_the_state_variables(placed: tuple[dict, Path]) -> None:
    _, at = placed
    report = inspect_report(load_checkpoint(str(at)))
    (op,) = report["result"]["state"]["operators"] if "result" in report else report["state"]["operators"]
    tws = op["transform_with_state"]
    assert (tws["time_mode"], tws["output_mode"], tws["encoding"]) == ("NoTime", "Update", "unsaferow")
    kinds = {v["name"]: (v["kind"], v["value"]) for v in tws["variables"]}
    assert kinds == {
        "count": ("ValueState", "n long"),
        "seen": ("ListState", "v long"),
        "last": ("MapState", "v long"),
    }
    assert tws["internal_column_families"] == ["$rowCounter_seen"]
    assert tws["schema_files"] and all(
        p.startswith(f"file:{at}/state/0/_stateSchema/") for p in tws["schema_files"]
    )
