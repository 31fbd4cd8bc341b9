"""What apply and undo ask before they change a checkpoint, what a second apply of the same plan
says, and how ``history`` shows when each apply happened."""

from __future__ import annotations

import json
import sys
from datetime import datetime

from checkpoint_doctor.exit_codes import ExitCode
from tests.scenarios import run_cli as run
from tests.scenarios import scenario


def on_a_terminal(monkeypatch, answer: bool) -> list[str]:
    """Pretend stdin is a terminal; record each question asked and give ``answer``."""
    asked: list[str] = []

    def confirm(text, *a, **k):
        asked.append(text)
        return answer

    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr("click.confirm", confirm)
    return asked


def test_the_prompt_of_a_plan_that_loses_data_names_the_loss(tmp_path, capsys, monkeypatch):
    # commit-ahead: quarantining commits/3 re-plans a committed batch; an unknown sink may skip it.
    lossy = scenario("spark-4.3.0/commit-ahead").copy_to(tmp_path / "lossy")
    harmless = scenario("spark-4.3.0/offsets-latest-empty").copy_to(tmp_path / "harmless")
    for cp, extra in ((lossy, ["--accept-data-loss"]), (harmless, [])):
        code, _, _ = run(
            capsys, "plan", str(cp), "-o", str(cp.parent / "plan.json"), "--live-window", "0", *extra
        )
        assert code == 0
    asked = on_a_terminal(monkeypatch, answer=False)

    assert run(capsys, "apply", str(lossy.parent / "plan.json"))[0] == ExitCode.REFUSED
    assert run(capsys, "apply", str(harmless.parent / "plan.json"))[0] == ExitCode.REFUSED

    assert asked[0].startswith("This plan LOSES DATA (batch(es) 3 were committed and are planned again")
    assert asked[0].endswith(
        f"Apply plan {json.loads((lossy.parent / 'plan.json').read_text())['plan_id']} to {lossy}?"
    )
    assert asked[1].startswith("Apply plan ") and "LOSES" not in asked[1]
    assert (lossy / "commits" / "3").exists()  # declined: nothing changed


def test_undo_asks_like_apply_and_a_no_changes_nothing(tmp_path, capsys, monkeypatch):
    cp = scenario("spark-4.3.0/offsets-latest-empty").copy_to(tmp_path)
    plan_file = tmp_path / "plan.json"
    run(capsys, "plan", str(cp), "-o", str(plan_file), "--live-window", "0")
    code, out, _ = run(capsys, "apply", str(plan_file), "--yes", "--format", "json")
    journal = json.loads(out)["result"]["journal"]
    plan_id = json.loads(out)["result"]["plan_id"]
    asked = on_a_terminal(monkeypatch, answer=False)

    code, out, _ = run(capsys, "undo", journal)

    assert code == ExitCode.REFUSED and out == f"Cancelled: {journal} was not undone; nothing was changed.\n"
    assert asked == [f"Undo the apply of plan {plan_id} to {cp} (restore what it changed)?"]
    assert not (cp / "offsets" / "3").exists()
    monkeypatch.setattr("click.confirm", lambda *a, **k: True)
    code, out, _ = run(capsys, "undo", journal)
    assert code == 0 and "restored offsets/3" in out and (cp / "offsets" / "3").exists()


def test_history_shows_readable_times_and_json_adds_iso(tmp_path, capsys, monkeypatch):
    cp = scenario("spark-4.3.0/offsets-latest-empty").copy_to(tmp_path)
    plan_file = tmp_path / "plan.json"
    run(capsys, "plan", str(cp), "-o", str(plan_file), "--live-window", "0")
    monkeypatch.setattr("checkpoint_doctor.cli.repair.now_ms", lambda: 1_764_028_800_123)  # 2025-11-25
    assert run(capsys, "apply", str(plan_file), "--yes")[0] == 0

    code, out, _ = run(capsys, "history", str(cp))
    assert code == 0
    header, row = out.splitlines()[1:3]
    assert header.split()[:4] == ["plan", "state", "steps", "at"]
    local = datetime.fromtimestamp(1_764_028_800.123).astimezone()
    assert local.strftime("%Y-%m-%d %H:%M:%S %z") in row and "1764028800123" not in row
    code, out, _ = run(capsys, "history", str(cp), "--format", "json")
    applies = json.loads(out)["result"]["applies"]
    assert applies[0]["at_ms"] == 1_764_028_800_123  # unchanged type: readers of at_ms keep working
    assert applies[0]["at"] == "2025-11-25T00:00:00.123Z"
