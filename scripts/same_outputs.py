#!/usr/bin/env python3
"""Write every output of ``diagnose`` and ``audit`` over the bundled fixtures (and over extra audit
roots) to one file, with the CLI's clock fixed: run it with two packages and ``cmp`` the files to
show a change left the outputs alone (issue 40: the speed work changed no output).

    PYTHONPATH=/tmp/main-pkg python scripts/same_outputs.py /tmp/before.txt ROOT...
    PYTHONPATH=$PWD          python scripts/same_outputs.py /tmp/after.txt ROOT...
    cmp /tmp/before.txt /tmp/after.txt

Per checkpoint under ``fixtures/``: ``diagnose --format json`` and ``diagnose --live-window 0``; per
fixture root (``fixtures/spark-*``, ``fixtures/*/spark-*``): ``audit --format jsonl`` and ``audit
--live-window 0``. Per extra ROOT: ``audit --format jsonl`` with the clock a minute after its newest
directory changed (the live window sees a fleet just built: CD501 and CD502 fire), ``audit --format
json --live-window 0`` and the text audit. Every other command runs at a fixed clock (2027-01-15).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

import checkpoint_doctor.cli.app as app
from checkpoint_doctor.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FIXED_MS = 1_800_000_000_000


def run(out: io.TextIOBase, args: list[str]) -> None:
    """Run the CLI in this process; write its exit code, stdout and stderr."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code: object = main(args)
        except SystemExit as exc:
            code = exc.code
    out.write(f"=== {' '.join(args)} -> {code}\n{stdout.getvalue()}\n--- stderr\n{stderr.getvalue()}\n")


def set_clock(ms: int) -> None:
    app.now_ms = lambda: ms  # type: ignore[assignment]  # the CLI's one clock


def main_(argv: list[str]) -> int:
    target, roots = argv[0], argv[1:]
    with open(target, "w", encoding="utf-8") as out:
        set_clock(FIXED_MS)
        for cp in sorted(str(p) for p in FIXTURES.glob("**/checkpoint")):
            run(out, ["diagnose", cp, "--format", "json"])
            run(out, ["diagnose", cp, "--live-window", "0"])
        for root in sorted(str(p) for p in FIXTURES.glob("*/spark-*")) + sorted(
            str(p) for p in FIXTURES.glob("spark-*")
        ):
            run(out, ["audit", root, "--format", "jsonl"])
            run(out, ["audit", root, "--live-window", "0"])
        for root in roots:
            newest = max(os.stat(d).st_mtime for d, _, _ in os.walk(root))
            set_clock(int(newest * 1000) + 60_000)
            run(out, ["audit", root, "--format", "jsonl"])
            set_clock(FIXED_MS)
            run(out, ["audit", root, "--format", "json", "--live-window", "0"])
            run(out, ["audit", root])
    return 0


if __name__ == "__main__":
    raise SystemExit(main_(sys.argv[1:]))
