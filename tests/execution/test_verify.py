"""Plans are verified, not trusted: apply requires the id, checks the fingerprint against the live
checkpoint and plans again; forged plans (with a correctly recomputed id) are refused untouched."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from checkpoint_doctor.digest import sha256_hex
from checkpoint_doctor.errors import PlanFormatError, PlanMismatchError, PreconditionFailedError
from checkpoint_doctor.planning.plan import RepairPlan, canonical_json
from tests.execution.test_apply import _first_repairable, apply, prepared, tree_bytes


def forged(plan: RepairPlan, edit) -> RepairPlan:
    """Return the plan edited by ``edit(doc)`` with its id recomputed, as anyone can."""
    doc = json.loads(plan.to_json())
    doc.pop("plan_id")
    edit(doc)
    doc["plan_id"] = sha256_hex(canonical_json(doc).encode())[:16]
    return RepairPlan.from_dict(doc)


@pytest.fixture
def case(tmp_path):
    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    return cp, plan, tree_bytes(cp)


def refused(cp: Path, plan: RepairPlan, before: dict[str, str], match: str) -> None:
    with pytest.raises(PlanMismatchError, match=match):
        apply(cp, plan)
    assert tree_bytes(cp) == before


def test_a_plan_without_an_id_is_refused(case):
    _, plan, _ = case
    doc = json.loads(plan.to_json())
    doc.pop("plan_id")
    with pytest.raises(PlanFormatError, match="no plan_id"):
        RepairPlan.from_dict(doc)


def test_removed_preconditions_are_refused(case):
    cp, plan, before = case
    bad = forged(
        plan,
        lambda d: d.update(preconditions=[p for p in d["preconditions"] if p["kind"] != "file_unchanged"]),
    )
    refused(cp, bad, before, "not what checkpoint-doctor plans")


def test_a_changed_fingerprint_is_refused(case):
    cp, plan, before = case
    bad = forged(plan, lambda d: d.update(snapshot_fingerprint="0" * 64))
    refused(cp, bad, before, "changed since the plan was made")


def test_an_added_quarantine_of_metadata_is_refused(case):
    cp, plan, before = case

    def add(doc):
        doc["steps"].append({"kind": "quarantine", "area": "checkpoint", "path": "metadata", "reason": "x"})
        doc["preconditions"].insert(
            2,
            {
                "kind": "file_unchanged",
                "area": "checkpoint",
                "path": "metadata",
                "size": None,
                "mtime_ms": None,
                "etag": None,
            },
        )

    refused(cp, forged(plan, add), before, "step 3 is 'quarantine checkpoint:metadata'|the plan has 3 steps")


def test_a_retargeted_plan_is_refused(case, tmp_path):
    cp, plan, before = case
    other = tmp_path / "other"
    # Another checkpoint with the same files (copied at another time): the plan was not made for it.
    # (A copy identical down to every mtime would get exactly this plan from the planner.)
    shutil.copytree(cp, other, copy_function=shutil.copy)
    bad = forged(plan, lambda d: d.update(checkpoint=str(other)))
    other_before = tree_bytes(other)
    with pytest.raises(PreconditionFailedError, match="changed since the plan was made"):
        apply(other, bad)
    assert tree_bytes(other) == other_before and tree_bytes(cp) == before


def test_duplicated_steps_are_refused_before_anything_changes(case):
    cp, plan, before = case
    refused(cp, forged(plan, lambda d: d.update(steps=d["steps"] + d["steps"][:1])), before, "appears twice")


def test_writing_metadata_where_a_directory_is_is_refused(tmp_path):
    scenario, _, restart = _first_repairable("metadata-unreadable")
    cp, plan = prepared(scenario, restart, tmp_path)
    (cp / "metadata").unlink()
    (cp / "metadata").mkdir()
    (cp / "metadata" / "x").write_text("a directory, not the query id")
    before = tree_bytes(cp)
    refused(cp, plan, before, "writes metadata, which is a directory here")


def test_the_cli_refuses_a_forged_plan_with_exit_32(case, tmp_path, capsys):
    from checkpoint_doctor.cli import main

    cp, plan, before = case
    bad = forged(plan, lambda d: d.update(preconditions=d["preconditions"][:2]))
    plan_file = tmp_path / "forged.json"
    plan_file.write_text(bad.to_json())
    assert main(["apply", str(plan_file), "--yes"]) == 32
    _, err = capsys.readouterr()
    assert "not what checkpoint-doctor plans" in err and err.count("\n") == 1
    assert tree_bytes(cp) == before
