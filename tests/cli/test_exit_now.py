"""A read-only command run as a process ends without the interpreter's teardown (start-up and
exit are most of a verdict's time): the same output and exit code as a call of ``main``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from checkpoint_doctor.cli import main
from tests.scenarios import FIXTURES


def _without_time(document: dict) -> dict:
    return {k: v for k, v in document.items() if k != "generated_at"}


@pytest.mark.parametrize("command", ["diagnose", "inspect"])
def test_a_verdict_process_prints_and_exits_as_main_returns(command, capsys):
    checkpoint = str(FIXTURES / "spark-4.3.0" / "async-tail" / "checkpoint")
    args = [
        command,
        checkpoint,
        "--format",
        "json",
        *(["--live-window", "0"] if command == "diagnose" else []),
    ]
    done = subprocess.run([sys.executable, "-m", "checkpoint_doctor", *args], capture_output=True, text=True)
    code = main(args)
    out = capsys.readouterr().out
    assert done.returncode == code == json.loads(out)["exit_code"]
    assert _without_time(json.loads(done.stdout)) == _without_time(json.loads(out))
    assert done.stderr == ""


def test_the_process_exits_as_usual_when_the_teardown_has_work(tmp_path):
    # An atexit callback (here: registered by the command's own imports, simulated) must run.
    marker = tmp_path / "ran"
    code = (
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(marker)!r}, 'w').close())\n"
        "from checkpoint_doctor.cli import main\n"
        f"sys.argv = ['checkpoint-doctor', 'explain', 'CD101']\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and "CD101" in done.stdout
    assert marker.exists()


def test_the_console_script_freezes_its_modules_for_the_collector_and_main_does_not():
    # Run as the console script (argv None), the command's modules, loaded once, are moved out of
    # the collector's generations (gc.freeze): its full collections during an audit walked them
    # again and again. Called in-process, main freezes nothing (the caller's garbage would stay).
    root = str(FIXTURES / "spark-4.3.0" / "window_agg")
    code = (
        "import gc, sys\n"
        "from checkpoint_doctor.cli import main\n"
        f"main(['audit', {root!r}, '--format', 'jsonl'])\n"
        "print('in-process', gc.get_freeze_count(), file=sys.stderr)\n"
        f"sys.argv = ['checkpoint-doctor', 'audit', {root!r}, '--format', 'jsonl', '--live-window', '0']\n"
        "main()\n"
        "print('process', gc.get_freeze_count(), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    counts = dict(
        line.split() for line in done.stderr.splitlines() if line.split()[0] in ("in-process", "process")
    )
    assert counts["in-process"] == "0", done.stderr
    assert int(counts["process"]) > 10_000, done.stderr
