"""Issue 36, the habits of a well-made CLI: ``explain --list``, no epoch milliseconds in what an
operator reads, ``history`` and ``undo`` that find the checkpoint as ``diagnose`` does."""

from __future__ import annotations

import json
import re

from checkpoint_doctor.cli import main
from checkpoint_doctor.diagnosis.codes import CODES
from tests.cli.test_schemas import validate
from tests.scenarios import all_scenarios

SCENARIOS = {s.id: s for s in all_scenarios()}


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_explain_list_names_every_code_sorted_with_slug_and_severity(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run(capsys, "explain", "--list")
    rows = [line.split()[:3] for line in out.splitlines()[2:] if re.match(r"CD\d{3} ", line)]
    assert code == 0 and [r[0] for r in rows] == sorted(str(c) for c in CODES)
    assert all(r[1] == CODES[r[0]].slug and r[2] == CODES[r[0]].severity for r in rows)
    code, out, _ = run(capsys, "explain", "--list", "--format", "json")
    doc = json.loads(out)
    validate("explain", doc)
    assert [c["code"] for c in doc["result"]["codes"]] == sorted(str(c) for c in CODES)
    code, _, err = run(capsys, "explain")
    assert code == 2 and "explain --list" in err


def test_a_plan_shows_file_times_as_dates_not_epoch_millis(tmp_path, capsys) -> None:
    cp = SCENARIOS["spark-4.3.0/missing-prev-offsets"].copy_to(tmp_path)
    _, out, _ = run(capsys, "plan", str(cp), "--live-window", "0")
    assert "unchanged (" in out and not re.search(r"\b1\d{12}\b", out), out
    assert re.search(r"modified \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC\)", out)
