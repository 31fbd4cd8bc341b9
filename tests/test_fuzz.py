"""No crash on any input: hundreds of mutated copies of the real fixtures, a fixed seed,
every read-only command through the CLI entry point in this process; no exit 16, no traceback, no
hang. ``python -m tests.fuzz --count N --seed S`` runs more (see tests/fuzz.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.fuzz import crashes, mutated_copies, run_commands

SEED = 14
COPIES = 400
AUDITED = 60

# Hundreds of copies through every command: tens of seconds, so out of the quick local run (CI runs
# everything).
pytestmark = pytest.mark.slow


def test_mutated_fixtures_never_crash_a_command(tmp_path: Path) -> None:
    problems: list[str] = []
    seen = 0
    for m in mutated_copies(tmp_path, COPIES, SEED):
        problems += run_commands(m)
        shutil.rmtree(m.checkpoint.parent)
        seen += 1

    assert seen == COPIES
    assert problems == [], "\n".join(problems[:20])


def test_an_audit_of_mutated_fixtures_never_crashes(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    for m in mutated_copies(tmp_path / "copies", AUDITED, SEED + 1):
        m.checkpoint.parent.rename(fleet / m.checkpoint.parent.name)

    problems = [
        p
        for args in (
            ["audit", str(fleet), "--html", str(tmp_path / "audit.html"), "--live-window", "0"],
            ["audit", str(fleet), "--format", "jsonl"],
            ["audit", str(fleet), "--format", "json", "--jobs", "4"],
        )
        if (p := crashes(args)) is not None
    ]

    assert problems == []
    assert (tmp_path / "audit.html").stat().st_size > 0
