"""A Delta source's table whose schema changed under the query (issue 33 items 1 and 2): what real Spark +
delta-spark did on restart, recorded in ``fixtures/delta-schema/`` (scripts/delta_schema_fixtures.py),
is what the tool predicts, and the restart its plan names (Delta's schema tracking log) is the one
real Spark ran past the change, reading every row once.

Replayed without a JVM: the predictions from the checkpoint and the table's log, the findings of the
whole diagnosis (CD240 for a column renamed or dropped under column mapping, CD241 for a widened type),
and the plan's named option and SQL confs against those the recorded repair restarts ran with.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import checkpoint_doctor.api as cd
from checkpoint_doctor.diagnosis.sources.delta import predict
from checkpoint_doctor.planning.strategies.delta_schema import LOCATION, restart_settings
from checkpoint_doctor.world.delta_log import read_table
from tests.delta.test_recorded_restarts import last_offsets

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "delta-schema"
LINES = ("3.5.9", "4.0.5", "4.1.4", "4.2.1")
SCENARIOS = sorted(FIXTURES.glob("spark-*/*/scenario.json"))
CODE = {"renamed": "CD240", "dropped": "CD240", "widened": "CD241"}


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _line(scen: dict) -> str:
    return ".".join(scen["spark_version"].split(".")[:2])


def _id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}"


def _damage(scen: dict) -> str | None:
    return scen["name"].rsplit("-", 1)[-1] if scen["kind"] == "damaged" else None


def test_every_delta_line_has_the_base_and_its_three_schema_changes() -> None:
    got = {(p.parent.parent.name, p.parent.name) for p in SCENARIOS}
    names = {"delta-source-mapped", *(f"delta-source-mapped-{d}" for d in CODE)}
    assert got == {(f"spark-{v}", n) for v in LINES for n in names}


@pytest.mark.parametrize("path", SCENARIOS, ids=[_id(p) for p in SCENARIOS])
def test_prediction_equals_the_recorded_restart(path: Path) -> None:
    scen = _load(path)
    result = scen["restarts"][0]["result"]
    table = read_table(str(path.parent / "source"))
    offset, previous = last_offsets(path.parent / "checkpoint")
    got = predict(offset, table, _line(scen), {}, previous)
    if got.error is None:
        assert result["error"] is None, result["error"]["message"][:400]
        assert result["batches"], "Spark started no batch"
    else:
        assert result["error"] is not None, f"Spark started: {result['batches']}"
        assert got.error.matches(result["error"]["message"]), (
            got.error.search,
            result["error"]["message"][:600],
        )
        assert got.error.error_class in result["error"]["message"]


@pytest.mark.parametrize("path", SCENARIOS, ids=[_id(p) for p in SCENARIOS])
def test_diagnose_finds_the_table_beside_and_names_the_change(path: Path) -> None:
    """The whole diagnosis through the Python API (the CLI's loading: the table found beside the
    checkpoint, no flag), on the line that wrote it."""
    scen = _load(path)
    result = scen["restarts"][0]["result"]
    got = cd.diagnose(
        str(path.parent / "checkpoint"),
        spark=[_line(scen)],
        mode=["micro-batch"],
        stateful=False,
        live_window_s=0,
    )
    cell = got.cell(_line(scen), "micro-batch")
    assert cell is not None
    prediction = cell.diagnosis.prediction
    codes = {f.code for f in got.findings}
    if result["error"] is None:
        assert prediction.starts, prediction.summary
        assert not {"CD240", "CD241"} & codes and got.exit_code == 0
        return
    assert not prediction.starts and got.exit_code == 4
    assert prediction.error is not None and prediction.error.matches(result["error"]["message"])
    damage = _damage(scen)
    assert damage is not None and CODE[damage] in codes
    finding = next(f for f in got.findings if f.code == CODE[damage])
    word = {"renamed": "note renamed to remark", "dropped": "note dropped", "widened": "small widened"}
    assert word[damage] in finding.message, finding.message


REFUSED = [p for p in SCENARIOS if _load(p)["restarts"][0]["result"]["error"] is not None]


@pytest.mark.parametrize("path", REFUSED, ids=[_id(p) for p in REFUSED])
def test_the_plan_names_the_restart_real_spark_ran_past_the_change(path: Path) -> None:
    """The plan (read-only, no step) names schemaTrackingLocation under the checkpoint and the SQL confs
    of the line's Delta release, and says what is read; the recorded restarts with exactly those ran
    past the change: Delta stopped some on purpose (DELTA_STREAMING_METADATA_EVOLUTION) while it wrote
    its schema log, and the batches read every row of the versions not read yet, once."""
    scen = _load(path)
    root = path.parent / "checkpoint"
    plan = cd.plan(str(root), spark=[_line(scen)], stateful=False, live_window_s=0)
    assert not plan.executable_steps
    doc = plan.to_dict()
    settings = restart_settings(doc, _line(scen))
    assert settings is not None, doc["unresolved"]
    options, confs = settings
    assert options == {"schemaTrackingLocation": f"{root}/{LOCATION}"}
    repair = scen["repair"]
    assert repair["settings"] == {
        "source_options": {"schemaTrackingLocation": f"<checkpoint>/{LOCATION}"},
        "confs": confs,
    }
    restarts = repair["restarts"]
    for r in restarts:
        if r["error"] is not None:
            assert "DELTA_STREAMING_METADATA_EVOLUTION" in r["error"]["message"], r["error"]["message"][:400]
    assert restarts[-1]["error"] is None and restarts[-1]["batches"], "the last restart did not read on"
    assert any(r["error"] is not None for r in restarts), "no restart wrote the schema log"
    assert repair["schema_log_files"], "no schema log under the checkpoint"
    table = read_table(str(path.parent / "source"))
    offset, _ = last_offsets(root)
    unread = sum(c.rows or 0 for c in table.commits if c.version >= offset.reservoir_version)
    assert sum(b["numInputRows"] for r in restarts for b in r["batches"]) == unread
    reasons = json.dumps(doc["options"])
    assert "nothing skipped or read twice" in reasons and f"not read yet ({unread} rows)" in reasons


@pytest.mark.parametrize("line", LINES)
def test_an_audit_names_the_schema_changes_as_diagnose_does(line: str) -> None:
    """An audit of a line's fixtures pairs each checkpoint with the table beside it (its one listing,
    the tables read on from each checkpoint's version) and gives each the codes diagnose gives."""
    result = cd.audit(str(FIXTURES / f"spark-{line}"), spark=[".".join(line.split(".")[:2])], live_window_s=0)
    got = {Path(r.to_json()["path"]).parent.name: set(r.to_json()["codes"]) for r in result.records}
    for path in sorted((FIXTURES / f"spark-{line}").glob("*/scenario.json")):
        scen = _load(path)
        damage = _damage(scen)
        refused = scen["restarts"][0]["result"]["error"] is not None
        expected = {CODE[damage]} if refused and damage else set()
        assert got[path.parent.name] & {"CD240", "CD241"} == expected, (path.parent.name, got)


def test_a_matrix_plan_names_the_restart_per_delta_release() -> None:
    """A widened type written on 3.5 fails on 3.5 (Delta 3.3) and 4.0 (Delta 4.0), which ask for
    different confs: the plan of the matrix names each line's restart (the cells' actions joined)."""
    root = FIXTURES / "spark-3.5.9" / "delta-source-mapped-widened" / "checkpoint"
    doc = cd.plan(str(root), stateful=False, live_window_s=0).to_dict()
    assert restart_settings(doc, "3.5") == ({"schemaTrackingLocation": f"{root}/{LOCATION}"}, {})
    assert restart_settings(doc, "4.0") == (
        {"schemaTrackingLocation": f"{root}/{LOCATION}"},
        {"spark.databricks.delta.streaming.allowSourceColumnTypeChange": "always"},
    )
    assert restart_settings(doc, "4.1") is None  # Delta 4.4 reads the widened type: nothing to do
