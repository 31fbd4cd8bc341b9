"""No flags, the operator's real question: every bundled fixture of every line shows its restart
matrix, every failing restart that counts is flagged in Spark's words, the exit code follows the
roles; plan and audit use the same matrix."""

from __future__ import annotations

import json
import re

import pytest

from checkpoint_doctor.render.documents import schema_version
from tests.scenarios import all_scenarios
from tests.scenarios import run_cli as run

SCENARIOS = all_scenarios()


def scenario(scenario_id: str):
    return next(s for s in SCENARIOS if s.id == scenario_id)


def expected_exit(result: dict) -> int:
    severities = {f["severity"] for f in result["findings"]}
    cells = result["matrix"]
    if "error" in severities or any(c["role"] == "as-configured" and c["outcome"] == "fails" for c in cells):
        return 4
    if "warning" in severities or any(c["counted"] and c["outcome"] == "fails" for c in cells):
        return 1
    return 0


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("s", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_no_flag_diagnose_shows_the_matrix_and_flags_every_failing_restart(s, tmp_path, capsys):
    cp = s.copy_to(tmp_path)
    code, out, err = run(capsys, "diagnose", str(cp), "--live-window", "0", "--format", "json")
    doc = json.loads(out)
    result = doc["result"]
    assert doc["schema_version"] == schema_version("diagnose") and err == ""
    assert [c["spark"] for c in result["matrix"]][:: len({c["mode"] for c in result["matrix"]})] == [
        "3.5",
        "4.0",
        "4.1",
        "4.2",
        "4.3",
    ]
    assert code == result["exit_code"] == expected_exit(result)
    text_code, text, _ = run(capsys, "diagnose", str(cp), "--live-window", "0")
    assert text_code == code and "Restart matrix" in text
    for cell in result["matrix"]:
        if not (cell["counted"] and cell["outcome"] == "fails"):
            continue
        search = cell["error"]["search"]
        flagged = [
            f
            for f in result["findings"]
            if {"spark": cell["spark"], "mode": cell["mode"]} in f["cells"]
            and f["severity"] in ("error", "warning")
            and search in f["message"]
        ]
        assert flagged, f"{cell['label']} fails ({search}) but no finding quotes Spark"
        assert search in flat(text), f"{cell['label']}: {search!r} not in the text output"


def test_async_tail_warns_about_the_synchronous_restart_and_plans_the_bridge(tmp_path, capsys):
    cp = scenario("spark-4.3.0/async-tail").copy_to(tmp_path)
    code, out, _ = run(capsys, "diagnose", str(cp), "--live-window", "0")
    assert code == 1
    block = out[out.index("WARNING  CD101") :]
    assert "asyncProgressTrackingEnabled off" in flat(block) and "batch 30 doesn't exist" in flat(block)
    code, out, _ = run(capsys, "plan", str(cp), "--live-window", "0", "--format", "json")
    plan = json.loads(out)["result"]
    assert code == 0
    assert plan["strategy"] == "bridge" and plan["addresses"] == ["CD101"]
    assert plan["mode"] == "micro-batch" and plan["spark"] == "4.3"
    assert [s["path"] for s in plan["steps"] if s["kind"] == "copy"] == ["offsets/30"]
    strategies = [o["strategy"] for o in plan["options"][0]["options"]]
    assert strategies[:2] == ["bridge", "catch-up"]


def test_a_plan_for_a_3_5_async_tail_repairs_every_failing_line(tmp_path, capsys):
    cp = scenario("spark-3.5.9/async-tail").copy_to(tmp_path)
    code, out, _ = run(capsys, "plan", str(cp), "--live-window", "0", "--format", "json")
    plan = json.loads(out)["result"]
    assert code == 0 and plan["strategy"] == "bridge"
    cells = plan["expected"]["cells"]
    assert [(c["spark"], c["mode"]) for c in cells] == [
        (line, "micro-batch") for line in ("3.5", "4.0", "4.1", "4.2", "4.3")
    ]
    assert all(c["starts_after"] for c in cells)


@pytest.mark.parametrize("line", ["spark-3.5.9", "spark-4.3.0"])
def test_state_deleted_is_not_ok_without_flags(line, tmp_path, capsys):
    cp = scenario(f"{line}/state-deleted").copy_to(tmp_path)
    code, out, _ = run(capsys, "diagnose", str(cp), "--live-window", "0")
    assert code == 1
    assert "CD310 state-may-be-gone" in out and "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY" in flat(
        out
    )


def test_spark_is_repeatable_and_takes_a_full_version(tmp_path, capsys):
    cp = scenario("spark-3.5.9/async-tail").copy_to(tmp_path)
    code, out, _ = run(
        capsys,
        "diagnose",
        str(cp),
        "--spark",
        "4.3.0",
        "--spark",
        "3.5",
        "--live-window",
        "0",
        "--format",
        "json",
    )
    result = json.loads(out)["result"]
    assert [(c["spark"], c["mode"], c["role"]) for c in result["matrix"]] == [
        ("3.5", "async", "as-configured"),
        ("3.5", "micro-batch", "plausible"),
        ("4.3", "async", "as-configured"),
        ("4.3", "micro-batch", "plausible"),
    ]
    assert code == 1
    code, _, err = run(capsys, "diagnose", str(cp), "--spark", "4.9.0")
    assert code == 2 and "4.9.0" in err


@pytest.mark.parametrize("line", ["spark-3.5.9", "spark-4.3.0"])
def test_audit_pairs_each_file_sink_with_its_checkpoint_and_reports_the_skip(line, tmp_path, capsys):
    for name in ("file-sink-rollback", "file-sink-uncommitted", "file_to_file", "window_agg"):
        scenario(f"{line}/{name}").copy_to(tmp_path / name)
    code, out, _ = run(capsys, "audit", str(tmp_path), "--live-window", "0", "--format", "jsonl")
    records = {r["path"]: r for r in map(json.loads, out.splitlines()) if r["kind"] != "summary"}
    rollback = records["file-sink-rollback/checkpoint"]
    assert rollback["file_sink"]["checked"] and rollback["file_sink"]["url"].endswith(
        "file-sink-rollback/sink"
    )
    assert "CD402" in rollback["codes"] and rollback["verdict"] == "error"
    skip = next(f for f in rollback["diagnosis"]["findings"] if f["code"] == "CD402")
    assert "skip" in skip["message"]
    assert "CD401" in records["file-sink-uncommitted/checkpoint"]["codes"]
    assert records["file-sink-rollback/sink"]["paired_with"] == [rollback["checkpoint"]]
    assert records["file_to_file/sink"]["paired_with"] == [records["file_to_file/checkpoint"]["checkpoint"]]
    window = records["window_agg/checkpoint"]
    assert not window["file_sink"]["checked"] and window["file_sink"]["note"].startswith("sink not checked")
    assert code == 4 | (1 if any(r["verdict"] == "warning" for r in records.values()) else 0)


def test_an_unpaired_sink_says_sink_not_checked(tmp_path, capsys):
    scenario("spark-4.3.0/file_to_file").copy_to(tmp_path / "job")
    (tmp_path / "job" / "checkpoint").rename(tmp_path / "elsewhere")
    # A checkpoint whose batches are not the sink's: window_agg has batches 0..3, the sink 0..11.
    scenario("spark-4.3.0/window_agg").copy_to(tmp_path / "other")
    code, out, _ = run(capsys, "audit", str(tmp_path / "job"), "--live-window", "0", "--format", "jsonl")
    records = [json.loads(line) for line in out.splitlines()]
    sink = next(r for r in records if r["kind"] == "sink")
    assert sink["paired_with"] == [] and sink["pairing"].startswith("sink not checked")
    assert code == 0
