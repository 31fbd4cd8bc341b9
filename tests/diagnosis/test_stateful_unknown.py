"""Unknown statefulness with nothing that suggests state: one honest line, not a warning.

A checkpoint whose query may or may not be stateful, with no ``state/`` and no watermark (the
``stateless`` fixtures of every line, a rate -> noop query), is diagnosed as stateless and stays
healthy (exit 0, no finding). What a stateful query meets on it is then said once, as an assumption,
in Spark's words per line, by diagnose (table and JSON), plan, audit (table, JSON, HTML) and explain:
the same words as ``--stateful`` predicts, which the recorded restarts of ``state-deleted`` and
``rocksdb-state-deleted`` prove on every line (``tests/diagnosis/test_trust_verdicts.py``).
"""

from __future__ import annotations

import json

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, checks_statefulness
from checkpoint_doctor.diagnosis.matrix import MatrixOptions, diagnose_matrix
from checkpoint_doctor.exit_codes import ExitCode
from tests.scenarios import all_scenarios
from tests.scenarios import run_cli as run

SCENARIOS = all_scenarios()
LINES = ("3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0")
QUIET = MatrixOptions(base=DiagnoseOptions(live_window_s=0))
SPARK_35 = "FAILS in the tasks of batch 4: 1.delta does not exist"
# 4.0 and 4.1 name the condition (issue 34): the quote carries it, as Spark's message starts with it.
SPARK_40_41 = "FAILS in the tasks of batch 4: CANNOT_LOAD_STATE_STORE.CANNOT_READ_DELTA_FILE_NOT_EXISTS: 1.delta does not exist"
SPARK_42_43 = "FAILS in batch 4: STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY"
EXPECTED = {
    "3.5": SPARK_35,
    "4.0": SPARK_40_41,
    "4.1": SPARK_40_41,
    "4.2": SPARK_42_43,
    "4.3": SPARK_42_43,
}


def scenario(scenario_id: str):
    return next(s for s in SCENARIOS if s.id == scenario_id)


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("version", LINES)
def test_diagnose_says_what_a_stateful_query_meets_and_stays_healthy(version, tmp_path, capsys):
    cp = scenario(f"spark-{version}/stateless").copy_to(tmp_path)
    code, out, _ = run(capsys, "diagnose", str(cp), "--live-window", "0", "--format", "json")
    result = json.loads(out)["result"]
    assert code == ExitCode.OK and result["findings"] == []
    stateful = result["stateful"]
    assert stateful["verdict"] == "unknown" and not stateful["suspected"]
    assert {o["spark"]: o["restart"] for o in stateful["if_stateful"]} == EXPECTED
    line = next(a for a in result["assumptions"] if a.startswith("stateful operators:"))
    assert "assumed stateless (pass --stateful or --stateless)" in line
    assert f"Spark 3.5: {SPARK_35}; Spark 4.0, 4.1: {SPARK_40_41}; Spark 4.2, 4.3: {SPARK_42_43}" in line

    code, out, _ = run(capsys, "diagnose", str(cp), "--live-window", "0")
    assert code == ExitCode.OK and "Findings: none" in out
    assert _flat(line) in _flat(out)
    assert " ?" not in out  # no cell is marked: the restart of this checkpoint starts


@pytest.mark.parametrize("version", LINES)
def test_the_line_is_what_stateful_predicts(version, tmp_path):
    snapshot = scenario(f"spark-{version}/stateless").read(tmp_path)
    assumed = diagnose_matrix(snapshot, QUIET)
    stateful = diagnose_matrix(snapshot, MatrixOptions(base=DiagnoseOptions(live_window_s=0, stateful=True)))
    said = dict(assumed.if_stateful)
    assert said == {c.cell.spark: c.diagnosis.prediction.summary for c in stateful.cells}
    assert all(c.fails for c in stateful.cells)


def test_computed_once_per_line_not_per_cell(tmp_path, monkeypatch):
    # A named second mode doubles the cells; the hypothesis is asked once per line at most. Each
    # line's micro-batch cell starts, so only its state step is asked again, of a stateful query
    # (test_stateful_from_cells: the answer is the full prediction's); no restart is predicted anew.
    snapshot = scenario("spark-4.3.0/stateless").read(tmp_path)
    asked, stepped = [], []
    real = checks_statefulness.if_stateful
    monkeypatch.setattr(
        checks_statefulness, "if_stateful", lambda ctx: asked.append(ctx.target.line) or real(ctx)
    )
    step = checks_statefulness._CellSteps.state_step
    monkeypatch.setattr(
        checks_statefulness._CellSteps,
        "state_step",
        lambda self, target: stepped.append(target.line) or step(self, target),
    )
    matrix = diagnose_matrix(snapshot, MatrixOptions(modes=("micro-batch", "async"), base=QUIET.base))
    assert len(matrix.cells) == 10
    assert asked == []
    assert stepped == ["3.5", "4.0", "4.1", "4.2", "4.3"]  # each line says it in its own words here
    assert [line for line, _ in matrix.if_stateful] == ["3.5", "4.0", "4.1", "4.2", "4.3"]


@pytest.mark.parametrize(
    ("scenario_id", "options"),
    [
        ("spark-4.3.0/stateless", DiagnoseOptions(live_window_s=0, stateful=False)),
        ("spark-4.3.0/stateless", DiagnoseOptions(live_window_s=0, stateful=True)),
        ("spark-4.3.0/window_agg", DiagnoseOptions(live_window_s=0)),  # stateful: known
        ("spark-4.3.0/async", DiagnoseOptions(live_window_s=0)),  # async: stateless, known
        ("spark-4.3.0/continuous", DiagnoseOptions(live_window_s=0)),  # continuous: stateless, known
        ("spark-4.3.0/fresh-empty-commits-dir", DiagnoseOptions(live_window_s=0)),  # no batch yet
    ],
)
def test_no_line_where_statefulness_is_known_named_or_nothing_is_missing(scenario_id, options, tmp_path):
    matrix = diagnose_matrix(scenario(scenario_id).read(tmp_path), MatrixOptions(base=options))
    assert matrix.if_stateful == () and matrix.assumed_stateless is None
    assert not any("if the query has stateful operators" in a for a in matrix.assumptions)


def test_with_cd310_the_json_carries_its_per_line_words_and_the_assumption_does_not_repeat_them(tmp_path):
    matrix = diagnose_matrix(scenario("spark-4.0.5/state-deleted").read(tmp_path), QUIET)
    cd310 = matrix.state_may_be_gone
    assert cd310 is not None and matrix.assumed_stateless is None
    said = dict(matrix.if_stateful)
    assert said == EXPECTED
    assert all(f"{what}" in cd310.message for what in said.values())
    assert not any("if the query has stateful operators" in a for a in matrix.assumptions)
    assert matrix.to_dict()["stateful"]["if_stateful"] == [
        {"spark": k, "restart": v} for k, v in said.items()
    ]


def test_plan_says_it_as_an_assumption_not_a_warning(tmp_path, capsys):
    cp = scenario("spark-3.5.9/stateless").copy_to(tmp_path)
    code, out, _ = run(capsys, "plan", str(cp), "--live-window", "0", "--format", "json")
    plan = json.loads(out)["result"]
    assert code == ExitCode.OK and plan["warnings"] == []
    [line] = plan["assumptions"]
    assert (
        SPARK_42_43 in line
        and SPARK_40_41 in line
        and SPARK_35 in line
        and "--stateful or --stateless" in line
    )

    code, out, _ = run(capsys, "plan", str(cp), "--live-window", "0")
    assert code == ExitCode.OK and "Assumptions" in out and "WARNING" not in out
    assert _flat(line) in _flat(out)

    code, out, _ = run(capsys, "plan", str(cp), "--live-window", "0", "--stateless", "--format", "json")
    assert code == ExitCode.OK and "assumptions" not in json.loads(out)["result"]


def test_a_plan_file_with_the_assumption_applies(tmp_path, capsys):
    # Nothing to repair: the assumption is in the plan's document, and no plan file is written.
    cp = scenario("spark-4.2.1/stateless").copy_to(tmp_path / "c")
    code, out, _ = run(capsys, "plan", str(cp), "--live-window", "0", "--format", "json")
    assert code == ExitCode.OK and json.loads(out)["result"]["assumptions"]
    # Something to repair (a v3 commit without sinkMetadataMap, rewritten as v1): the written plan
    # carries the assumption, and apply takes it as what plan makes now.
    cp = scenario("spark-4.2.1/commit-v3-without-sink-map").copy_to(tmp_path / "d")
    plan_file = tmp_path / "plan.json"
    code, _, _ = run(capsys, "plan", str(cp), "--live-window", "0", "-o", str(plan_file))
    assert json.loads(plan_file.read_text())["assumptions"], code
    _, out, err = run(capsys, "apply", str(plan_file), "--dry-run")
    assert "the plan is what checkpoint-doctor plans for the live checkpoint" in " ".join(out.split()), (
        out + err
    )


def test_audit_counts_the_assumed_stateless_checkpoints_without_a_warning(tmp_path, capsys):
    fleet = tmp_path / "fleet"
    for name in ("stateless", "window_agg"):
        scenario(f"spark-4.1.4/{name}").copy_to(fleet / name)
    html = tmp_path / "audit.html"
    code, out, _ = run(capsys, "audit", str(fleet), "--live-window", "0", "--html", str(html))
    assert code == ExitCode.OK
    assert "Stateful unknown 1 assumed stateless" in _flat(
        out
    ) and "diagnose --stateful or --stateless" in _flat(out)
    assert "assumed stateless" in html.read_text(encoding="utf-8")

    code, out, _ = run(capsys, "audit", str(fleet), "--live-window", "0", "--format", "json")
    audit = json.loads(out)["result"]
    assert audit["summary"]["assumed_stateless"] == 1 and audit["summary"]["verdicts"]["ok"] == 2
    record = next(r for r in audit["records"] if "/stateless/" in r["url"])
    assert {o["spark"]: o["restart"] for o in record["stateful"]["if_stateful"]}["4.1"] == SPARK_40_41


def test_audit_does_not_count_cd310_twice(tmp_path, capsys):
    scenario("spark-4.3.0/state-deleted").copy_to(tmp_path / "fleet" / "cp")
    code, out, _ = run(capsys, "audit", str(tmp_path / "fleet"), "--live-window", "0", "--format", "json")
    summary = json.loads(out)["result"]["summary"]
    assert code == ExitCode.WARNINGS  # CD310's warning, as before
    assert summary["restart_fails_if_stateful"] == 1 and summary["assumed_stateless"] == 0


def test_explain_cd310_says_where_the_assumption_is_said(capsys):
    code, out, _ = run(capsys, "explain", "CD310", "--format", "json")
    result = json.loads(out)["result"]
    assert code == 0
    assert "no state/, no watermark" in json.dumps(result) and "assumed stateless" in json.dumps(result)
