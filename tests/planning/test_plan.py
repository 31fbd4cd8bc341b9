"""Plans are deterministic, serializable artifacts that refuse unsafe content."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checkpoint_doctor.errors import PlanFormatError
from checkpoint_doctor.planning.plan import RepairPlan, check_relative_path
from tests.repair_cases import failing_restarts, plan_for

CASES = failing_restarts()


@pytest.mark.parametrize(("scenario", "index", "restart"), CASES, ids=[f"{s.id}#{i}" for s, i, _ in CASES])
def test_plan_is_deterministic_and_round_trips(scenario, index, restart, tmp_path):
    snapshot = scenario.load(tmp_path)
    _, first = plan_for(scenario, restart, snapshot)
    _, second = plan_for(scenario, restart, snapshot)
    assert first.to_json() == second.to_json()
    parsed = RepairPlan.from_json(first.to_json())
    assert parsed.to_json() == first.to_json()
    assert parsed.plan_id == first.plan_id
    assert first.snapshot_fingerprint == snapshot.fingerprint()
    kinds = {p.kind for p in first.preconditions}
    assert {"query_id", "latest_batches", "no_live_writer"} <= kinds
    if first.executable_steps:
        assert first.expected["starts"] is True, first.expected
        assert not any(u["code"] in first.addresses for u in first.unresolved)
    else:
        assert first.unresolved, "a failing restart without steps must say why"


@pytest.mark.parametrize(
    "path", ["../x", "/etc/passwd", "a/../../b", "s3://other-bucket/k", "a//b", "./a", "a\\b", "C:/x", ""]
)
def test_unsafe_paths_are_rejected(path):
    with pytest.raises(PlanFormatError):
        check_relative_path(path)


def _plan_doc(tmp_path, scenario_name="missing-prev-offsets"):
    from tests.scenarios import all_scenarios

    scenario = next(s for s in all_scenarios() if s.name == scenario_name and "4.3.0" in s.id)
    restart = next(r for r in scenario.data["restarts"] if not r["result"]["started"])
    _, plan = plan_for(scenario, restart, scenario.load(tmp_path))
    return json.loads(plan.to_json())


def test_plan_with_path_outside_root_is_rejected(tmp_path):
    doc = _plan_doc(tmp_path)
    doc["steps"][0]["path"] = "../outside/offsets/2"
    doc.pop("plan_id")
    with pytest.raises(PlanFormatError, match="leaves or obscures"):
        RepairPlan.from_dict(doc)


def test_plan_from_newer_format_is_rejected(tmp_path):
    doc = _plan_doc(tmp_path)
    doc["format_version"] = 99
    with pytest.raises(PlanFormatError, match="newer"):
        RepairPlan.from_dict(doc)


def test_edited_plan_fails_its_id_check(tmp_path):
    doc = _plan_doc(tmp_path)
    doc["steps"][0]["source"] = "offsets/0"
    with pytest.raises(PlanFormatError, match="does not match"):
        RepairPlan.from_dict(doc)


def test_unknown_step_kind_is_rejected(tmp_path):
    doc = _plan_doc(tmp_path)
    doc["steps"][0]["kind"] = "shell"
    doc.pop("plan_id")
    with pytest.raises(PlanFormatError, match="unknown plan step kind"):
        RepairPlan.from_dict(doc)


def test_bridge_is_the_default_for_the_async_tail(tmp_path):
    from tests.scenarios import all_scenarios

    scenario = next(s for s in all_scenarios() if s.id == "spark-3.5.9/async-tail")
    restart = next(
        r for r in scenario.data["restarts"] if r["mode"] == "micro-batch" and r["spark"] == "3.5.9"
    )
    _, plan = plan_for(scenario, restart, scenario.load(tmp_path))
    assert plan.strategy == "bridge"
    (step,) = plan.steps
    assert (step.kind, step.path, step.source) == ("copy", "offsets/31", "offsets/21")
    options = {o["strategy"]: o for o in plan.options[0]["options"]}
    assert set(options) >= {"bridge", "catch-up"}
    assert options["bridge"]["consequences"]["data_loss"] is False
    assert "checkpoint-doctor catch-up" in options["catch-up"]["steps"][0]["command"]


def test_rollback_across_committed_batches_needs_accept_data_loss(tmp_path):
    from tests.scenarios import all_scenarios

    scenario = next(s for s in all_scenarios() if s.id == "spark-4.3.0/state-delta-missing")
    restart = scenario.data["restarts"][0]
    _, refused = plan_for(scenario, restart, scenario.load(tmp_path / "a"))
    assert not refused.executable_steps and refused.unresolved[0]["code"] == "CD302"
    _, accepted = plan_for(scenario, restart, scenario.load(tmp_path / "b"), accept_data_loss=True)
    assert accepted.strategy == "rollback" and accepted.executable_steps
    assert accepted.expected["starts"] is True


@pytest.mark.parametrize(
    ("scenario_id", "args"),
    [
        ("spark-3.5.9/async-tail", []),
        ("spark-4.3.0/state-deleted", ["--stateful", "--accept-data-loss"]),
        ("spark-4.3.0/rocksdb_v2", ["--spark", "3.5"]),
        ("spark-4.3.0/offsets-dir-deleted", ["--accept-data-loss"]),
        ("spark-4.3.0/rate-start-garbage", ["--accept-data-loss", "--sink", "noop"]),
        ("spark-4.3.0/commit-ahead", []),
    ],
)
def test_plan_documents_validate_against_the_schema(scenario_id, args, tmp_path, capsys):
    from checkpoint_doctor.cli import main
    from tests.cli.test_schemas import validate
    from tests.scenarios import all_scenarios

    scenario = next(s for s in all_scenarios() if s.id == scenario_id)
    cp = scenario.copy_to(tmp_path)
    main(["plan", str(cp), "--live-window", "0", "--format", "json", *args])
    doc = json.loads(capsys.readouterr()[0])
    validate("plan", doc)
    assert doc["result"]["options"], "a refused fixture gets options"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20,
)
KIND_NAMES = st.sampled_from(["quarantine", "copy", "write", "remove-dir", "run", "query_id", "latest_batches",
                              "file_unchanged", "file_absent", "no_live_writer", "shell"])  # fmt: skip


FIELDS = ["kind", "area", "path", "source", "source_sha256", "content", "encoding", "if_present", "command",
          "reason", "value", "offsets", "commits", "size", "mtime_ms", "etag", "window_s"]  # fmt: skip


@settings(max_examples=400)
@given(st.one_of(JSON, st.dictionaries(st.sampled_from(FIELDS), JSON | KIND_NAMES, max_size=8)))
def test_step_and_precondition_parsers_raise_only_plan_format_errors(data):
    from checkpoint_doctor.planning.preconditions import parse_precondition
    from checkpoint_doctor.planning.steps import parse_step

    for parse in (parse_step, parse_precondition):
        try:
            parsed = parse(data)
        except PlanFormatError:
            continue
        assert parse(parsed.to_dict()) == parsed  # whatever parses round-trips


@given(JSON)
def test_a_plan_document_of_any_shape_is_a_plan_format_error_or_a_plan(data):
    try:
        RepairPlan.from_dict(data)
    except PlanFormatError:
        return
    raise AssertionError("arbitrary JSON made a plan")


@pytest.mark.parametrize(
    "scenario_id",
    ["spark-4.3.0/unfinished-repartition", "spark-3.5.9/async-tail", "spark-4.3.0/offsets-latest-empty"],
)
def test_plans_are_identical_across_processes_with_different_hash_seeds(scenario_id, tmp_path):
    # apply verifies a plan by planning again in its own process: any set or dict iteration order
    # leaking into a plan would make that verification refuse a good plan.
    import os
    import subprocess
    import sys

    from tests.scenarios import all_scenarios

    scenario = next(s for s in all_scenarios() if s.id == scenario_id)
    cp = scenario.copy_to(tmp_path / "cp")
    documents, codes = [], []
    for seed in ("1", "4242"):
        out = tmp_path / f"plan-{seed}.json"
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "checkpoint_doctor",
                "plan",
                str(cp),
                "--live-window",
                "0",
                "-o",
                str(out),
            ],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.exists(), run.stderr
        documents.append(out.read_text())
        codes.append(run.returncode)
    assert documents[0] == documents[1] and codes[0] == codes[1]
    assert json.loads(documents[0])["steps"], "a plan with steps, so the comparison covers them"
