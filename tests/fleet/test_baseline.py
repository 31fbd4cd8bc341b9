"""Audit over audit (issue 36 item 8): ``audit --baseline previous.jsonl`` says what changed since
the last scheduled run, in text, JSON (with its schema), HTML and metrics, and ORs exit code 64
(WORSE) when something got worse. The fleet is damaged in the world between the two runs: a file
deleted, a checkpoint deleted, one restored from a healthy copy, a broken one added."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis.sources.kafka_retention import Countdown
from checkpoint_doctor.exit_codes import ExitCode
from checkpoint_doctor.fleet.baseline import (
    APPEARED,
    GONE,
    LOSS_SOONER,
    NEW_FAILURE,
    RESOLVED,
    compare,
    parse_baseline,
)
from checkpoint_doctor.fleet.records import KafkaPart
from tests.cli.test_schemas import validate
from tests.fleet.records import checkpoint_record
from tests.scenarios import FIXTURES, copy_scenario, run_cli

SPARK = FIXTURES / "spark-4.3.0"


def place(scenario: str, dest: Path) -> None:
    """Copy a scenario's checkpoint (as Spark wrote it, empty directories too) to ``dest``."""
    staged = copy_scenario(SPARK / scenario, dest.parent / f".staging-{dest.name}")
    shutil.move(staged, dest)
    shutil.rmtree(dest.parent / f".staging-{dest.name}")


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    root = tmp_path / "fleet"
    for name, scenario in {
        "a-stateless": "stateless",
        "b-window": "window_agg",
        "c-broken": "missing-prev-offsets",
        "d-behind": "commits-two-behind",
    }.items():
        place(scenario, root / name)
    return root


def _baseline(capsys: pytest.CaptureFixture[str], fleet: Path, tmp_path: Path) -> Path:
    code, out, _ = run_cli(capsys, "audit", str(fleet), "--live-window", "0", "--format", "jsonl")
    assert code == ExitCode.ERRORS | ExitCode.WARNINGS
    path = tmp_path / "previous.jsonl"
    path.write_text(out, encoding="utf-8")
    return path


def _damage(fleet: Path, tmp_path: Path) -> None:
    """What happens to a fleet between two scheduled runs."""
    (fleet / "b-window" / "offsets" / "2").unlink()  # a file below the newest offsets is deleted
    shutil.rmtree(fleet / "a-stateless")  # a checkpoint is deleted
    shutil.rmtree(fleet / "c-broken")  # a broken one is restored from a healthy copy
    place("stateless", fleet / "c-broken")
    place("state-delta-missing", fleet / "e-new")  # a new query, broken


def test_what_changed_since_the_last_run_in_every_output(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    previous = _baseline(capsys, fleet, tmp_path)
    _damage(fleet, tmp_path)
    page, metrics = tmp_path / "audit.html", tmp_path / "audit.prom"

    code, out, _ = run_cli(
        capsys,
        "audit",
        str(fleet),
        "--live-window",
        "0",
        "--baseline",
        str(previous),
        "--format",
        "json",
        "--html",
        str(page),
        "--metrics",
        str(metrics),
    )
    doc = json.loads(out)
    validate("audit", doc)
    assert code == doc["exit_code"] and code & ExitCode.WORSE and code & ExitCode.ERRORS
    changes = doc["result"]["changes"]
    by_kind = {(c["kind"], c["url"].rsplit("/", 1)[-1]) for c in changes["changes"]}
    assert by_kind == {
        (NEW_FAILURE, "b-window"),
        (GONE, "a-stateless"),
        (RESOLVED, "c-broken"),
        (APPEARED, "e-new"),
    }
    assert changes["worse"] is True and changes["baseline"] == str(previous)
    assert changes["counts"] == {
        "new_failure": 1,
        "loss_sooner": 0,
        "gone": 1,
        "appeared": 1,
        "resolved": 1,
        "new_warning": 0,
    }
    b = next(c for c in changes["changes"] if c["url"].endswith("b-window"))
    assert b["before"] == "ok, restart starts" and b["after"] == "error, restart fails"

    # The Python API gives the same answer.
    from checkpoint_doctor.api import audit, audit_changes

    api = audit_changes(audit(str(fleet), live_window_s=0), str(previous))
    assert api.to_json() == changes and api.worse

    prom = metrics.read_text()
    assert 'checkpoint_doctor_audit_changes{change="new_failure"} 1' in prom
    assert 'checkpoint_doctor_audit_changes{change="gone"} 1' in prom
    assert "checkpoint_doctor_audit_worse 1" in prom
    assert f"checkpoint_doctor_audit_exit_code {code}" in prom

    html = page.read_text()
    assert 'id="changes"' in html and "1 new failure, 1 gone, 1 appeared, 1 resolved" in html
    assert html.count('class="change ') == 4

    # The text says the same, worst first.
    code_text, text, _ = run_cli(
        capsys, "audit", str(fleet), "--live-window", "0", "--baseline", str(previous)
    )
    assert code_text == code
    section = text[text.index("Changes since") :]
    assert section.splitlines()[0].endswith("1 new failure, 1 gone, 1 appeared, 1 resolved")
    lines = [line.split()[0:2] for line in section.splitlines()[1:5]]
    assert lines == [
        ["new", "failure"],
        ["gone", str(fleet / "a-stateless") + ":"],
        ["appeared", str(fleet / "e-new") + ":"],
        ["resolved", str(fleet / "c-broken") + ":"],
    ]


def test_nothing_changed_is_not_an_alert_and_json_baselines_work_too(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    previous = _baseline(capsys, fleet, tmp_path)
    code, out, _ = run_cli(capsys, "audit", str(fleet), "--live-window", "0", "--baseline", str(previous))
    assert code == ExitCode.ERRORS | ExitCode.WARNINGS  # no WORSE bit
    assert "nothing changed" in out
    # A --format json document is a baseline as well.
    code, out, _ = run_cli(capsys, "audit", str(fleet), "--live-window", "0", "--format", "json")
    as_json = tmp_path / "previous.json"
    as_json.write_text(out, encoding="utf-8")
    code, out, _ = run_cli(
        capsys, "audit", str(fleet), "--live-window", "0", "--baseline", str(as_json), "--format", "jsonl"
    )
    summary = json.loads(out.splitlines()[-1])
    validate("audit-summary", summary)
    assert summary["changes"]["worse"] is False and summary["changes"]["changes"] == []
    assert not code & ExitCode.WORSE


def test_an_interrupted_baseline_says_nothing_is_gone(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    previous = _baseline(capsys, fleet, tmp_path)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(previous.read_text().splitlines(keepends=True)[:-1]))  # no summary line
    shutil.rmtree(fleet / "a-stateless")
    code, out, _ = run_cli(capsys, "audit", str(fleet), "--live-window", "0", "--baseline", str(cut))
    assert not code & ExitCode.WORSE
    assert "gone not judged: the baseline audit was interrupted or cut" in out
    # What the cut baseline may not have reached is not new either.
    place("state-delta-missing", fleet / "e-new")
    code, out, _ = run_cli(capsys, "audit", str(fleet), "--live-window", "0", "--baseline", str(cut))
    assert not code & ExitCode.WORSE and "e-new" not in out.split("Changes since", 1)[1]
    assert (
        "1 directory not in the baseline is not called new: the baseline audit was interrupted or cut" in out
    )


def test_a_baseline_of_other_roots_says_nothing_appeared_or_gone(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    place("missing-prev-offsets", other / "q")
    code, out, _ = run_cli(capsys, "audit", str(other), "--live-window", "0", "--format", "jsonl")
    previous = tmp_path / "other.jsonl"
    previous.write_text(out, encoding="utf-8")
    code, out, _ = run_cli(capsys, "audit", str(fleet), "--live-window", "0", "--baseline", str(previous))
    assert not code & ExitCode.WORSE
    changes = out.split("Changes since", 1)[1]
    assert "nothing changed" in changes.splitlines()[0]
    assert "4 directories not in the baseline are not called new: outside its roots" in changes
    assert "1 directory of the baseline is outside this audit's roots (not compared)" in changes


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"kind": "checkpoint", "url": "/x", "verdict": "bad"}\n', "not a record of 'audit --format jsonl'"),
        ('{"kind": "summary", "roots": []}\nnot json\n', "line 2 is not JSON"),
        ("", "holds no audit record"),
        ('{"command": "diagnose", "result": {}}', "not one of 'audit --format json'"),
    ],
)
def test_a_bad_baseline_is_one_line_before_the_audit_starts(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content, encoding="utf-8")
    code, out, err = run_cli(capsys, "audit", str(fleet), "--baseline", str(bad))
    assert code == ExitCode.USAGE and out == ""
    assert len(err.strip().splitlines()) == 1 and str(bad) in err and message in err


HOUR = 3600


def _kafka_record(url: str, now_s: int, deadline_s: int):  # type: ignore[no-untyped-def]
    """A real record (the stateless fixture's) with a Kafka countdown as a broker gives it: at the
    audit's clock ``now_s``, retention may delete its first unread record at ``deadline_s``."""
    countdown = Countdown(
        "retention.ms",
        "retention.ms may delete unread records",
        deadline_ms=deadline_s * 1000,
        remaining_ms=(deadline_s - now_s) * 1000,
        topic="orders",
        partition=0,
        offset=42,
    )
    return checkpoint_record(url, kafka=KafkaPart(("orders",), bootstrap="b:9092", retention=countdown))


def test_time_to_loss_shrinking_is_worse_when_the_query_does_not_read_on() -> None:
    t0, t1 = 1_800_000_000, 1_800_000_000 + 3 * HOUR  # two scheduled runs, three hours apart
    before = [
        _kafka_record("/f/stopped", t0, t0 + 5 * HOUR),
        _kafka_record("/f/running", t0, t0 + 7 * 24 * HOUR - 40),
        _kafka_record("/f/retention-lowered", t0, t0 + 7 * 24 * HOUR),
    ]
    baseline = parse_baseline(
        [json.dumps(r.to_json()) for r in before] + ['{"kind": "summary", "roots": ["/f"]}'], "b"
    )
    now = [
        _kafka_record("/f/stopped", t1, t0 + 5 * HOUR),  # same record, same deadline: 2 h left
        # reads on: its first unread record is newer, the deadline later; 50 s less lag is jitter
        _kafka_record("/f/running", t1, t1 + 7 * 24 * HOUR - 90),
        _kafka_record("/f/retention-lowered", t1, t0 + 24 * HOUR),  # retention.ms cut to 1 day
    ]
    changes = compare(baseline, now, ["/f"], interrupted=False)
    assert [(c.kind, c.url, c.before, c.after) for c in changes.changes] == [
        (LOSS_SOONER, "/f/retention-lowered", "time to loss 7 d", "time to loss 21 h"),
        (LOSS_SOONER, "/f/stopped", "time to loss 5 h", "time to loss 2 h"),
    ]
    assert changes.worse
