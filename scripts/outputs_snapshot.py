"""Every output of the read-only commands over every fixture, in one directory, to prove that a
move of modules changed no byte (issue 35: "every output byte-identical before and after the
moves over all fixtures").

Runs, in one process through the CLI's own entry point (``checkpoint_doctor.cli.main``, as the console script), for every
checkpoint under ``fixtures/`` (a directory named ``checkpoint``): ``inspect``, ``diagnose`` and
``plan``, each as text and as JSON; ``explain --list`` and ``explain CODE`` (text and JSON) for
every code; and ``audit`` over each fixture family (text and JSONL). Each output is written to
``OUT/<fixture>/<command>.<format>``: its exit code, stdout, then stderr (the CLI's clock is
fixed, :data:`NOW_MS`; the document's ``generated_at`` is replaced by ``<now>``).

Run it with the package to compare on ``PYTHONPATH`` (the fixtures stay the same directory):

    git archive main checkpoint_doctor | tar -x -C /tmp/main-package
    PYTHONPATH=/tmp/main-package .venv/bin/python scripts/outputs_snapshot.py /tmp/outputs-main
    PYTHONPATH=$PWD .venv/bin/python scripts/outputs_snapshot.py /tmp/outputs-branch
    diff -r /tmp/outputs-main /tmp/outputs-branch && echo byte-identical

Reading never writes (the package's rule), so the fixtures are not changed by the run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
#: The clock of every run (2026-12-01T00:00:00Z): a checkpoint's age is then a property of the fixture.
NOW_MS = 1_796_083_200_000
GENERATED_AT = re.compile(r'("generated_at(?:_ms)?": ?)("[^"]*"|\d+)')

#: (name, arguments after the checkpoint) of each command run on each checkpoint
PER_CHECKPOINT = [
    ("inspect.text", ["inspect"], []),
    ("inspect.json", ["inspect"], ["--format", "json"]),
    ("diagnose.text", ["diagnose"], []),
    ("diagnose.json", ["diagnose"], ["--format", "json"]),
    ("plan.text", ["plan"], []),
    ("plan.json", ["plan"], ["--format", "json"]),
]


def checkpoints(fixtures: Path) -> list[Path]:
    return sorted(
        p for p in fixtures.rglob("checkpoint") if p.is_dir() and (p.parent / "scenario.json").exists()
    )


def families(fixtures: Path) -> list[Path]:
    return sorted(p for p in fixtures.iterdir() if p.is_dir())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="directory to write the outputs to (must not exist)")
    parser.add_argument("--fixtures", type=Path, default=FIXTURES)
    parser.add_argument("--limit", type=int, default=0, help="only the first N checkpoints (a quick check)")
    args = parser.parse_args()
    os.environ["NO_COLOR"] = "1"
    os.environ["COLUMNS"] = "120"
    os.environ.pop("CHECKPOINT_DOCTOR_KAFKA_BOOTSTRAP_SERVERS", None)
    sys.argv = [sys.argv[0]]

    import checkpoint_doctor
    from checkpoint_doctor.cli import app
    from checkpoint_doctor.cli import main as cli_main

    # The CLI's one clock (tests patch it the same way): "stopped 4 d ago" is the same in both runs.
    app.now_ms = lambda: NOW_MS

    print(f"package: {Path(checkpoint_doctor.__file__).parent}", file=sys.stderr)
    out: Path = args.out
    out.mkdir(parents=True)
    fixtures = args.fixtures.resolve()
    count = 0

    def invoke(argv: list[str]) -> tuple[int, str, str]:
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = cli_main(argv)
        return code, stdout.getvalue(), stderr.getvalue()

    def run(target: Path, argv: list[str]) -> None:
        nonlocal count
        code, stdout, stderr = invoke(argv)
        text = f"exit {code}\n{stdout}\n--- stderr\n{stderr}"
        # the one value that is the time of the run, not of the checkpoint
        text = GENERATED_AT.sub(r"\1<now>", text)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        count += 1

    started = time.monotonic()
    run(out / "explain" / "list.text", ["explain", "--list"])
    run(out / "explain" / "list.json", ["explain", "--list", "--format", "json"])
    # the codes as ``explain --list`` names them (the module that holds them may move)
    listed = invoke(["explain", "--list", "--format", "json"])[1]
    codes = sorted(set(re.findall(r'"(CD\d{3})"', listed)))
    for code in codes:
        run(out / "explain" / f"{code}.text", ["explain", code])
        run(out / "explain" / f"{code}.json", ["explain", code, "--format", "json"])
    found = checkpoints(fixtures)
    if args.limit:
        found = found[: args.limit]
    for i, checkpoint in enumerate(found):
        rel = checkpoint.parent.relative_to(fixtures)
        for name, command, extra in PER_CHECKPOINT:
            run(out / "checkpoints" / rel / name, [*command, str(checkpoint), *extra])
        if i % 50 == 0:
            print(f"{i}/{len(found)} {rel} {time.monotonic() - started:.0f}s", file=sys.stderr)
    if not args.limit:
        for family in families(fixtures):
            rel = family.relative_to(fixtures)
            run(out / "audit" / rel / "audit.text", ["audit", str(family)])
            run(out / "audit" / rel / "audit.jsonl", ["audit", str(family), "--format", "jsonl"])
    print(
        f"{count} outputs of {len(found)} checkpoints in {time.monotonic() - started:.0f}s -> {out}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
