"""Shared test configuration: hypothesis profiles, environment isolation, fixture discovery."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"

settings.register_profile(
    "ci", deadline=None, derandomize=True, max_examples=300, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None, max_examples=100)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _isolate_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keep the user's AWS config and log level out of every test."""
    for key in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "CHECKPOINT_DOCTOR_LOG_LEVEL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("BOTO_CONFIG", "/dev/null")


def all_scenarios() -> list[Path]:
    """Return every fixture scenario directory (holding scenario.json), sorted."""
    return sorted(p.parent for p in FIXTURES.glob("spark-*/*/scenario.json"))


def load_scenario(path: Path) -> dict:
    """Return a scenario.json as a dict."""
    return json.loads((path / "scenario.json").read_text())


def scenario_id(path: Path) -> str:
    """Return a short test id for a scenario directory."""
    return f"{path.parent.name}/{path.name}"


def copy_scenario(path: Path, dest: Path) -> Path:
    """Copy a scenario's checkpoint (and sink/input) to ``dest``; return the checkpoint copy."""
    for part in ("checkpoint", "sink", "input"):
        if (path / part).exists():
            shutil.copytree(path / part, dest / part)
    return dest / "checkpoint"
