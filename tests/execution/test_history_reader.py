"""The tool's own record read from below the planner (issue 35): ``reading/history.py`` reads what
``apply`` wrote (journal, plan, listing) as the planner's own parser did, so the world
(``world/load.py``) reads a checkpoint's own writes and unfinished applies without importing the
executor or the planner."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from checkpoint_doctor.errors import JournalError, PlanFormatError
from checkpoint_doctor.planning.plan import FORMAT_VERSION, RepairPlan
from checkpoint_doctor.planning.steps import KINDS, Area, CopyStep, QuarantineStep, RunStep, WriteStep
from checkpoint_doctor.reading.history import CREATING_KINDS, PLAN_FORMAT_VERSION, created_paths
from checkpoint_doctor.reading.storage import open_storage
from checkpoint_doctor.world.load import tool_records_for
from tests.execution.test_apply import _first_repairable, apply, prepared

ROOT = Path(__file__).resolve().parents[2]


def test_the_reader_knows_the_planners_format_and_its_creating_kinds():
    assert PLAN_FORMAT_VERSION == FORMAT_VERSION
    assert {kind for kind, cls in KINDS.items() if cls.creates and cls.executable} == CREATING_KINDS


def _plan(**kw) -> RepairPlan:
    steps = (
        QuarantineStep(path="offsets/9", reason="q"),
        CopyStep(path="offsets/8", source="offsets/7", source_sha256="ab" * 32, reason="c"),
        WriteStep(path="commits/8", content_text="v1\n{}", reason="w"),
        WriteStep(path="_spark_metadata/8", area=Area.SINK, content_text="v1", reason="sink"),
        RunStep(command="spark-submit job.py", reason="r"),
    )
    plan = RepairPlan(
        checkpoint="file:///cp",
        snapshot_fingerprint="f" * 64,
        spark="4.3",
        mode="micro-batch",
        strategy="bridge",
        addresses=("CD101",),
        preconditions=(),
        steps=steps,
    )
    return replace(plan, **kw)


def test_the_created_paths_are_the_planners_creates_on_the_checkpoint():
    plan = _plan()
    expected = {
        s.key[1]
        for s in plan.executable_steps
        if s.creates and s.key is not None and s.key[0] == Area.CHECKPOINT
    }
    assert expected == {"offsets/8", "commits/8"}
    assert created_paths(plan.to_json().encode()) == expected
    assert created_paths(_plan(steps=()).to_json().encode()) == frozenset()


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.update(steps=[*d["steps"], {"kind": "write", "path": "offsets/99", "content": "x"}]),
        lambda d: d.update(format_version=1),
        lambda d: d.pop("plan_id"),
        lambda d: d.update(steps="none"),
    ],
    ids=["a-step-added", "older-format", "no-id", "steps-not-a-list"],
)
def test_a_plan_file_edited_after_the_apply_says_nothing_as_the_planner_refuses_it(edit):
    data = json.loads(_plan().to_json())
    edit(data)
    text = json.dumps(data).encode()
    with pytest.raises(JournalError):
        created_paths(text)
    with pytest.raises(PlanFormatError):
        RepairPlan.from_json(text.decode())


@pytest.mark.parametrize("data", [b"\xff\xfe", b"{not json", b"[]"])
def test_a_plan_file_that_is_not_a_plan_is_a_journal_error_not_a_crash(data):
    with pytest.raises(JournalError):
        created_paths(data)


def test_the_world_reads_an_apply_without_the_planner_or_the_executor(tmp_path):
    """The files an apply created are the tool's own writes, read by ``world/load.py`` in a fresh
    process that imports neither ``planning`` nor ``execution`` (on main it imported both)."""
    scenario, _, restart = _first_repairable("missing-prev-offsets")
    cp, plan = prepared(scenario, restart, tmp_path)
    apply(cp, plan)
    own, unfinished = tool_records_for(str(cp), None)
    assert {path for path, _ in own} == {"offsets/2"} and unfinished == ()
    code = (
        "import json, sys\n"
        "from checkpoint_doctor.world.load import tool_records_for\n"
        f"own, unfinished = tool_records_for({str(cp)!r}, None)\n"
        "mods = sorted(m for m in sys.modules if m.startswith(('checkpoint_doctor.planning', "
        "'checkpoint_doctor.execution')))\n"
        "print(json.dumps([sorted(p for p, _ in own), len(unfinished), mods]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert json.loads(out.stdout) == [["offsets/2"], 0, []]
    assert open_storage(str(cp)).exists("offsets/2")
