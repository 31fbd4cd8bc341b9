"""The code stays lint-clean (ruff, configured in ruff.toml) and type-checks (mypy, in setup.cfg)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.scenarios import REPO


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=600
    )


def test_ruff_finds_nothing():
    proc = run("ruff", "check", "checkpoint_doctor", "tests", "scripts", "examples")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_is_clean():
    proc = run("ruff", "format", "--check", "checkpoint_doctor", "tests", "scripts", "examples")
    assert proc.returncode == 0, proc.stdout + proc.stderr


# Ruff takes a tenth of a second; mypy without its cache (.mypy_cache) takes 10-15 s on a 2-core box.
@pytest.mark.slow
def test_mypy_finds_nothing():
    proc = run("mypy", "checkpoint_doctor")
    assert proc.returncode == 0, proc.stdout + proc.stderr
