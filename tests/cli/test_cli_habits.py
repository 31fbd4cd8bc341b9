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


def test_history_and_undo_find_the_checkpoint_as_diagnose_does(tmp_path, capsys) -> None:
    import shutil

    from tests.delta.test_recorded_restarts import DELTA_FIXTURES

    shutil.copytree(DELTA_FIXTURES / "spark-3.5.9" / "delta-source-count-log-cleaned", tmp_path / "q")
    cp = tmp_path / "q" / "checkpoint"
    plan = tmp_path / "plan.json"
    run(capsys, "plan", str(cp), "--live-window", "0", "--accept-data-loss", "-o", str(plan))
    assert run(capsys, "apply", str(plan), "--yes")[0] == 0
    # a parent or offsets/ names the checkpoint and the command, as diagnose does (not "no apply")
    for named in (tmp_path / "q", cp / "offsets"):
        code, out, err = run(capsys, "history", str(named))
        assert (code, out) == (8, "") and f"checkpoint-doctor history {cp}" in err, err
    code, out, _ = run(capsys, "history", str(cp))
    assert code == 0 and " applied " in out
    # undo CHECKPOINT: its newest apply
    code, out, err = run(capsys, "undo", str(cp), "--yes")
    assert code == 0 and out.startswith("Undid ") and f"Undoing the newest apply to {cp}: " in err
    code, out, _ = run(capsys, "history", str(cp))
    assert " undone " in out
    code, _, err = run(capsys, "undo", str(cp), "--yes")
    assert code == 2 and "is left to undo" in err


def _stdout_on_terminal(*args: str, **env: str) -> bytes:
    """Run the CLI with stdout on a pseudo terminal; return what the terminal received."""
    import os
    import pty
    import select
    import subprocess
    import sys
    from pathlib import Path

    master, slave = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    environ.update(
        {
            "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
            "COLUMNS": "100",
            "PAGER": "cat",
            "TERM": "xterm",
        }
    )
    environ.update(env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "checkpoint_doctor", *args],
        stdin=slave,
        stdout=slave,
        stderr=subprocess.DEVNULL,
        env=environ,
    )
    os.close(slave)
    terminal = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError("no output on the terminal for 60 s")
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        terminal += chunk
    proc.wait(timeout=60)
    os.close(master)
    return terminal


def test_colour_on_a_terminal_and_never_with_no_color_never_or_off_a_terminal(tmp_path, capsys) -> None:
    cp = str(SCENARIOS["spark-4.3.0/commit-ahead"].copy_to(tmp_path))
    esc = b"\x1b["
    coloured = _stdout_on_terminal("diagnose", cp, "--live-window", "0")
    assert b"\x1b[31m\x1b[1mFAILS\x1b[0m" in coloured or b"\x1b[32m\x1b[1mSTARTS\x1b[0m" in coloured
    assert esc + b"31m" + esc + b"1mERROR" in coloured  # a finding's severity
    assert esc not in _stdout_on_terminal("diagnose", cp, "--live-window", "0", NO_COLOR="1")
    assert esc not in _stdout_on_terminal("diagnose", cp, "--live-window", "0", "--color", "never")
    _, out, _ = run(capsys, "diagnose", cp, "--live-window", "0")  # a pipe, not a terminal
    assert "\x1b[" not in out
    _, out, _ = run(capsys, "--color", "always", "diagnose", cp, "--live-window", "0")
    assert "\x1b[" in out
    _, out, _ = run(capsys, "diagnose", cp, "--live-window", "0", "--color", "always", "--format", "json")
    assert "\x1b[" not in out and json.loads(out)


def test_help_keeps_the_completion_command_whole(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    code, out, _ = run(capsys, "--help")
    line = 'eval "$(_CHECKPOINT_DOCTOR_COMPLETE=bash_source checkpoint-doctor)"'
    assert code == 0 and line in [row.strip() for row in out.splitlines()], out


def test_a_plan_of_1600_steps_is_summarised_by_kind_with_every_step_in_the_file(tmp_path, capsys) -> None:
    import shutil

    from checkpoint_doctor.errors import PlanFormatError
    from checkpoint_doctor.planning.plan import RepairPlan
    from checkpoint_doctor.render.layout import layout
    from checkpoint_doctor.render.plan import render_plan
    from tests.delta.test_recorded_restarts import DELTA_FIXTURES

    shutil.copytree(DELTA_FIXTURES / "spark-3.5.9" / "delta-source-count-log-cleaned", tmp_path / "q")
    written = tmp_path / "plan.json"
    run(
        capsys,
        "plan",
        str(tmp_path / "q" / "checkpoint"),
        "--accept-data-loss",
        "--live-window",
        "0",
        "-o",
        str(written),
    )
    data = json.loads(written.read_text())
    kinds = [s["kind"] for s in data["steps"]]  # 4 quarantine, 2 write: as many as 1,600 steps hold
    data["steps"] = (data["steps"] * 267)[:1600]
    data["preconditions"] = (data["preconditions"] * 400)[:1600]
    try:  # a plan is tamper-proof: the grown content gets the id its refusal names
        RepairPlan.from_dict(data)
    except PlanFormatError as exc:
        data["plan_id"] = str(exc).split("(")[1].split(")")[0]
    big = RepairPlan.from_dict(data)
    with layout(100):
        text = render_plan(big, "plan.json")
    steps = text.split("Steps, in order\n")[1].split("\n\n")[0]
    n_q = sum(1 for s in big.steps if s.kind == "quarantine")
    n_w = sum(1 for s in big.steps if s.kind == "write")
    assert set(kinds) == {"quarantine", "write"} and n_q + n_w == 1600
    assert steps.splitlines()[0] == (
        f"  1,600 steps: {n_q:,} quarantine, {n_w:,} write; the first 10, every one in plan.json:"
    )
    assert len(steps.splitlines()) < 40 and "  10. " in steps and "  11. " not in steps
    assert "... and 1,590 more, every one in plan.json" in text
    assert len(text.splitlines()) < 120


def test_long_output_on_a_terminal_goes_through_the_pager(tmp_path) -> None:
    cp = str(SCENARIOS["spark-4.3.0/commit-ahead"].copy_to(tmp_path))
    paged = _stdout_on_terminal("diagnose", cp, "--live-window", "0", PAGER="sed s/^/PAGED:/", LINES="10")
    assert b"PAGED:Checkpoint  " in paged and b"PAGED:Restart matrix" in paged
    tall = _stdout_on_terminal("diagnose", cp, "--live-window", "0", PAGER="sed s/^/PAGED:/", LINES="500")
    assert b"PAGED:" not in tall and b"Restart matrix" in tall  # it fits: no pager


def test_a_long_apply_shows_its_progress_on_a_terminal(tmp_path, capsys) -> None:
    import os
    import pty
    import select
    import subprocess
    import sys
    from pathlib import Path

    cp = SCENARIOS["spark-4.3.0/commit-ahead"].copy_to(tmp_path / "q")
    for i in range(100, 161):  # 61 orphan .crc side files: one quarantine step each
        (cp / "offsets" / f".{i}.crc").write_bytes(b"x")
    plan = tmp_path / "plan.json"
    run(capsys, "plan", str(cp), "--live-window", "0", "--accept-data-loss", "-o", str(plan))
    assert len(json.loads(plan.read_text())["steps"]) > 40
    master, slave = pty.openpty()
    environ = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "checkpoint_doctor", "apply", str(plan), "--yes"],
        stdout=subprocess.PIPE,
        stderr=slave,
        env=environ,
    )
    os.close(slave)
    terminal = b""
    while select.select([master], [], [], 60)[0]:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        terminal += chunk
    out = proc.stdout.read() if proc.stdout else b""
    # 4: commit-ahead still needs its batch re-run after the quarantine (the diagnosis after apply)
    assert proc.wait(timeout=60) in (0, 4) and out.startswith(b"Applied plan "), out
    os.close(master)
    assert b"apply  [" in terminal and b"100%" in terminal, terminal
    # the same apply on a pipe (and a short one anywhere) shows no bar: capsys's stderr
    code, _, err = run(capsys, "undo", str(cp), "--yes")
    assert code == 0 and "apply  [" not in err
