"""Hypothesis runs its derandomized CI profile only in CI (``CI=true``, as CI services and ``.ci/run``
set it); a local run gets the quicker, random ``dev`` profile; ``HYPOTHESIS_PROFILE`` overrides both."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.scenarios import REPO

SHOW = "import tests.conftest; from hypothesis import settings; d = settings.default; print(d.max_examples)"


def profile_with(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE")}
    proc = subprocess.run(
        [sys.executable, "-c", SHOW],
        cwd=REPO,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.mark.parametrize(
    ("env", "shown"),
    [
        ({}, "100"),
        ({"CI": "false"}, "100"),
        ({"CI": "true"}, "300"),
        ({"CI": "true", "HYPOTHESIS_PROFILE": "dev"}, "100"),
    ],
)
def test_the_ci_profile_runs_only_in_ci(env: dict[str, str], shown: str) -> None:
    assert profile_with(**env) == shown
