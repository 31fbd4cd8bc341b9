"""The Python API gives the command line's answer: for every fixture scenario the document of
``cd.diagnose()`` and ``cd.plan()`` is the one ``diagnose --format json`` and ``plan --format json``
print (the file sink next to the checkpoint paired alike), and ``cd.audit()``'s records are the
``audit --format json`` records, ``tool_version``, ``generated_at`` and ``next_step`` included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import checkpoint_doctor as cd
from checkpoint_doctor.errors import CheckpointDoctorError
from tests.scenarios import Scenario, all_scenarios, run_cli

#: The clock of both sides (a verdict reads it for the live-writer checks and ages).
NOW_MS = 1_900_000_000_000
SCENARIOS = all_scenarios()


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("checkpoint_doctor.cli.app.now_ms", lambda: NOW_MS)
    monkeypatch.setattr("checkpoint_doctor.cli.options.now_ms", lambda: NOW_MS)


def _checkpoint(scenario: Scenario, tmp_path: Path) -> str:
    """Return the scenario's checkpoint in place, or a copy where git dropped its empty directories
    (its sink and input copied beside it)."""
    if scenario.data.get("facts", {}).get("empty_dirs"):
        return str(scenario.copy_to(tmp_path))
    return str(scenario.path / "checkpoint")


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    _, out, _ = run_cli(capsys, *args, "--live-window", "0", "--format", "json")
    return json.loads(out)


def _api_or_error(call, *args, **kw):
    try:
        return call(*args, **kw), None
    except CheckpointDoctorError as exc:
        return None, exc


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_the_api_diagnoses_and_plans_every_fixture_as_the_cli_does(
    scenario: Scenario, tmp_path: Path, capsys: pytest.CaptureFixture[str], fixed_clock: None
) -> None:
    checkpoint = _checkpoint(scenario, tmp_path)
    doc = _cli(capsys, "diagnose", checkpoint)
    matrix, error = _api_or_error(cd.diagnose, checkpoint, live_window_s=0, now_ms=NOW_MS)
    if error is not None:
        assert doc["error"]["message"] == str(error)
        return
    assert matrix is not None
    assert (doc["exit_code"], doc["result"]) == (matrix.exit_code, json.loads(json.dumps(matrix.to_dict())))
    doc = _cli(capsys, "plan", checkpoint)
    plan = cd.plan(checkpoint, live_window_s=0, now_ms=NOW_MS)
    assert doc["result"] == json.loads(plan.to_json())


def _without_times(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "generated_at"} for r in records]


def test_the_api_audits_the_fixtures_as_the_cli_does(
    capsys: pytest.CaptureFixture[str], fixed_clock: None
) -> None:
    root = str(SCENARIOS[0].path.parent.parent)
    _, out, _ = run_cli(capsys, "audit", root, "--live-window", "0", "--format", "json")
    doc = json.loads(out)["result"]
    result = cd.audit(root, live_window_s=0, now_ms=NOW_MS)
    records = json.loads(json.dumps([r.to_json() for r in result.records]))

    assert all({"tool_version", "generated_at", "next_step"} <= set(r) for r in records)
    assert any(r["next_step"] for r in records) and any(r.get("paired_with") for r in records)
    assert _without_times(records) == _without_times(doc["records"])
    assert json.loads(json.dumps(result.summary.to_json())) == doc["summary"]
    assert [n.to_json() for n in result.notes] == doc["notes"]
    assert json.loads(json.dumps(result.to_json()))["records"] == records
