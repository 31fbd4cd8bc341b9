"""The Python API returns typed values and gives the CLI's answers; the notebook example
runs (its code cells executed in order, no Jupyter needed)."""

from __future__ import annotations

import contextlib
import io
import json
import os

import checkpoint_doctor as cd
from checkpoint_doctor.cli import main
from checkpoint_doctor.diagnosis.matrix import MatrixDiagnosis
from checkpoint_doctor.diagnosis.timeline import TimelineRow
from checkpoint_doctor.fleet.run import AuditResult
from checkpoint_doctor.planning.plan import RepairPlan
from tests.conftest import FIXTURES, REPO

ASYNC_TAIL = FIXTURES / "spark-4.3.0" / "async-tail" / "checkpoint"


def test_the_api_returns_typed_values_with_the_cli_answers(capsys) -> None:
    inspection = cd.inspect(f"file:{ASYNC_TAIL}")
    assert isinstance(inspection, cd.Inspection) and inspection.mode == "async"
    assert all(isinstance(r, TimelineRow) for r in inspection.timeline)
    matrix = cd.diagnose(str(ASYNC_TAIL), live_window_s=0)
    assert isinstance(matrix, MatrixDiagnosis)
    code = main(["diagnose", str(ASYNC_TAIL), "--live-window", "0", "--format", "json"])
    doc = json.loads(capsys.readouterr()[0])
    assert matrix.exit_code == code == doc["exit_code"] == 1
    assert [c.to_dict()["outcome"] for c in matrix.cells] == [c["outcome"] for c in doc["result"]["matrix"]]
    narrowed = cd.diagnose(inspection.snapshot, spark=["4.3.0"], mode=["micro-batch"], live_window_s=0)
    assert [c.cell for c in narrowed.cells] == [("4.3", "micro-batch")] and narrowed.exit_code == 4
    plan = cd.plan(inspection.snapshot, live_window_s=0)
    assert isinstance(plan, RepairPlan) and plan.strategy == "bridge"
    result = cd.audit([str(ASYNC_TAIL.parent)], live_window_s=0)
    assert isinstance(result, AuditResult) and result.exit_code == 1


def test_the_notebook_example_runs() -> None:
    notebook = json.loads((REPO / "examples" / "python-api.ipynb").read_text())
    cells = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    assert len(cells) == 4
    namespace: dict = {}
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            for source in cells:
                exec(compile(source, "python-api.ipynb", "exec"), namespace)  # the example's own code
    finally:
        os.chdir(cwd)
    assert namespace["matrix"].exit_code == 1
    assert namespace["failing"]
    assert namespace["result"].summary.total > 10
    assert "exit code" in out.getvalue()
