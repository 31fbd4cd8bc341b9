"""Verify a plan against the live checkpoint before anything changes: its fingerprint, the planner's
steps and preconditions made again from its recorded request, and every precondition.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any

from checkpoint_doctor.diagnosis import diagnose
from checkpoint_doctor.errors import (
    CheckpointDoctorError,
    PlanMismatchError,
    PreconditionFailedError,
    RefusedError,
)
from checkpoint_doctor.execution.journal import (
    FAILED,
    INTERRUPTED,
    PARTLY_UNDONE,
    Journal,
    list_applies,
)
from checkpoint_doctor.model import KafkaLive
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.planning import PlanOptions, RepairPlan, plan_repair
from checkpoint_doctor.planning.preconditions import Own, check_delta, check_kafka, check_preconditions
from checkpoint_doctor.planning.steps import Area, Key, Step, follows
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.reading.storage import Storage


def _structure_problems(plan: RepairPlan, snapshot: CheckpointSnapshot) -> list[str]:
    """Duplicate or conflicting steps, and files planned where a directory is."""
    problems: list[str] = []
    seen: dict[Key, list[Step]] = {}
    for step in plan.executable_steps:
        key = step.key
        if key is None:
            continue
        before = seen.setdefault(key, [])
        if step in before:
            problems.append(f"step '{step.describe()}' appears twice")
        elif not follows(before, step):
            problems.append(
                f"steps conflict on {key[0]}:{key[1]} ({before[-1].describe()}, then {step.describe()})"
            )
        before.append(step)
        if step.creates and key[0] != Area.SINK and key[1] in snapshot.dirs:
            problems.append(f"step '{step.describe()}' writes {key[1]}, which is a directory here")
    return problems


def _first_difference(mine: tuple[Any, ...], theirs: tuple[Any, ...], what: str) -> str | None:
    for i, (a, b) in enumerate(zip(mine, theirs, strict=False)):
        if a != b:
            return f"{what} {i + 1} is '{a.describe()}', the planner makes '{b.describe()}'"
    if len(mine) != len(theirs):
        return f"the plan has {len(mine)} {what}s, the planner makes {len(theirs)}"
    return None


def verify_plan(
    plan: RepairPlan,
    snapshot: CheckpointSnapshot,
    now_ms: int | None,
    own: Own = frozenset(),
    kafka: KafkaLive | None = None,
    delta: tuple[DeltaTable, ...] | None = None,
) -> None:
    """Refuse a plan unless it is what the planner makes for this live snapshot, and every
    precondition holds. ``kafka``: the topics' positions read again from the broker the plan's
    Kafka preconditions name (checked first: a topic that moved on says so, not "the plan differs");
    ``delta``: the Delta tables the plan's Delta preconditions name, read again (checked first too).

    Raises:
        PlanMismatchError: the fingerprint differs, or the steps/preconditions are not the planner's.
        PreconditionFailedError: with every failed precondition.
    """
    problems = _structure_problems(plan, snapshot)
    if snapshot.root.rstrip("/") != plan.checkpoint.rstrip("/"):
        problems.append(f"the plan is for {plan.checkpoint}, not {snapshot.root}")
    if snapshot.fingerprint() != plan.snapshot_fingerprint:
        # The failed preconditions say what changed; the fingerprint also catches the rest.
        changed = check_preconditions(plan.preconditions, snapshot, None)
        if changed and not problems:
            raise PreconditionFailedError(("the checkpoint changed since the plan was made", *changed))
        detail = "; ".join(changed) if changed else "files were added, removed or modified"
        problems.append(f"the checkpoint changed since the plan was made ({detail})")
    if problems:
        raise PlanMismatchError(
            "the plan does not fit the live checkpoint, nothing was changed: " + "; ".join(problems),
            hint="re-run 'checkpoint-doctor plan' on the current checkpoint",
        )
    moved = check_kafka(plan.preconditions, kafka) + check_delta(plan.preconditions, delta)
    if moved:
        raise PreconditionFailedError(moved)
    opts = PlanOptions.from_request(plan.request)
    calm = replace(opts.diagnose, now_ms=None, kafka=kafka, delta=delta)
    again = plan_repair(
        snapshot, diagnose(snapshot, replace(calm, live_window_s=0)), replace(opts, diagnose=calm)
    )
    difference = _first_difference(plan.steps, again.steps, "step") or _first_difference(
        plan.preconditions, again.preconditions, "precondition"
    )
    if difference is not None:
        raise PlanMismatchError(
            f"the plan is not what checkpoint-doctor plans for this checkpoint now ({difference}); nothing was changed",
            hint="apply only plans written by 'checkpoint-doctor plan -o', unedited; re-run plan",
        )
    failures = check_preconditions(plan.preconditions, snapshot, now_ms, own)
    if failures:
        raise PreconditionFailedError(failures)


def with_unfinished(exc: RefusedError, tool: Storage) -> RefusedError:
    """Name an earlier apply that did not finish (it is why the checkpoint changed, most likely)."""
    for entry in reversed(list_applies(tool)):
        url = str(entry.get("journal", ""))
        prefix = tool.url_of("")
        if not url.startswith(prefix + "/"):
            continue
        location = url[len(prefix) + 1 :].rpartition("/")[0]
        with contextlib.suppress(CheckpointDoctorError):
            journal = Journal.load(tool.child(location))
            if journal.state in (FAILED, INTERRUPTED, PARTLY_UNDONE):
                exc.message += (
                    f"; an earlier apply of plan {entry.get('plan_id')} did not finish "
                    f"({journal.state}; the checkpoint was changed by it; the record is {url})"
                )
                exc.args = (exc.message,)
                exc.hint = f"undo it with: checkpoint-doctor undo {url}, then apply the plan again"
                return exc
    return exc
