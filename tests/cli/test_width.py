"""Text fits the terminal: ``COLUMNS`` is respected by every text command; only a path or a command
to copy (never broken) may run past it, and a conf key is never broken mid-name."""

from __future__ import annotations

import json

import pytest

from checkpoint_doctor.cli import main
from checkpoint_doctor.diagnosis.codes import CODES
from tests.scenarios import all_scenarios

SCENARIOS = {s.id: s for s in all_scenarios()}


def run(capsys, *args):
    main(list(args))
    out, _ = capsys.readouterr()
    return out


def too_wide(text: str, width: int, whole: tuple[str, ...] = ()) -> list[str]:
    """Return the lines wider than ``width`` that are not so only because of a word that must stay
    whole (a path, a ``checkpoint-doctor`` command)."""
    out = []
    for line in text.splitlines():
        if len(line) <= width:
            continue
        if "checkpoint-doctor " in line or any(w in line for w in whole):
            continue
        if len(line.split()) == 1:
            continue
        out.append(line)
    return out


@pytest.mark.parametrize("width", [60, 100])
def test_explain_wraps_every_paragraph_to_the_terminal(width, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", str(width))
    for code in CODES:
        text = run(capsys, "explain", code)
        assert not too_wide(text, width), (code, too_wide(text, width))


@pytest.mark.parametrize(
    "sid",
    ["spark-4.3.0/commit-ahead", "spark-4.3.0/file-source-log-missing", "spark-3.5.9/async-tail"],
)
@pytest.mark.parametrize("width", [70, 100])
def test_plan_respects_columns_and_wraps_unresolved_lines(sid, width, tmp_path, monkeypatch, capsys):
    cp = SCENARIOS[sid].copy_to(tmp_path)
    monkeypatch.setenv("COLUMNS", str(width))
    text = run(capsys, "plan", str(cp), "--live-window", "0")
    wide = too_wide(text, width, whole=(str(cp.parent),))  # the checkpoint and the sink beside it
    assert not wide, wide
    if sid != "spark-3.5.9/async-tail":
        assert "Unresolved" in text


def test_inspect_never_breaks_a_conf_key(tmp_path, monkeypatch, capsys):
    cp = SCENARIOS["spark-4.3.0/window_agg"].copy_to(tmp_path)
    monkeypatch.setenv("COLUMNS", "70")
    keys = json.loads(run(capsys, "inspect", str(cp), "--format", "json"))["result"]["pinned_conf"]
    words = run(capsys, "inspect", str(cp)).split()
    assert len(keys) > 10 and all(key in words for key in keys), [k for k in keys if k not in words]
