"""Plan for the restart matrix: repair every counted restart that fails, keep the others starting,
and say what still fails. Pure.

With no ``--spark``/``--mode`` the operator's question is every plausible restart. The targets are
the as-configured cells that fail or have an error finding, then the other failing counted cells
(the synchronous restart of an async tail, a newer line); the guards are the counted cells that
start now. :func:`~checkpoint_doctor.planning.planner.plan_repair` searches for the smallest set of
options whose simulated restart starts in every target and breaks no guard (or, when that is not
possible, starts in as many targets as it can), and the plan's ``expected.cells`` lists each target
before and after in the matrix's words; a target that still fails is a warning naming it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from checkpoint_doctor.diagnosis.codes import ERROR
from checkpoint_doctor.diagnosis.matrix import AS_CONFIGURED, Cell, CellDiagnosis, MatrixDiagnosis
from checkpoint_doctor.diagnosis.writer_confs import with_confs
from checkpoint_doctor.exit_codes import ExitCode
from checkpoint_doctor.planning.plan import RepairPlan
from checkpoint_doctor.planning.planner import plan_repair
from checkpoint_doctor.planning.request import PlanOptions
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot


def repair_targets(matrix: MatrixDiagnosis) -> tuple[CellDiagnosis, ...]:
    """Return the cells a plan must repair, most important first: as-configured cells that fail or
    have an error finding, then the failing plausible cells."""
    configured = [
        c for c in matrix.as_configured if c.fails or any(f.severity == ERROR for f in c.diagnosis.findings)
    ]
    rest = [c for c in matrix.failing_cells if c not in configured]
    return tuple(configured + rest)


def plan_for_matrix(
    snapshot: CheckpointSnapshot,
    matrix: MatrixDiagnosis,
    options: PlanOptions,
    *,
    storage_options: dict[str, Any] | None = None,
) -> RepairPlan:
    """Return the repair plan for every counted cell that needs one (none: a plan for the primary
    cell, which addresses nothing when nothing is wrong)."""
    targets = repair_targets(matrix) or (matrix.primary,)
    first = targets[0]
    guards = tuple(c.cell for c in matrix.counted_cells if c not in targets and not c.fails)
    # The writer's session: the confs its logs prove are set as in every cell of the matrix.
    base = replace(with_confs(options.diagnose, matrix.proven), spark=first.cell.spark, mode=first.cell.mode)
    opts = replace(options, diagnose=base, cells=tuple(t.cell for t in targets), guards=guards)
    plan = plan_repair(snapshot, first.diagnosis, opts, storage_options=storage_options)
    by_cell = {t.cell: t for t in targets}
    cells = []
    warnings = list(plan.warnings)
    for doc in plan.expected.get("cells", []):
        target = by_cell[Cell(doc["spark"], doc["mode"])]
        cells.append({**doc, "label": target.label, "role": target.role})
        if plan.executable_steps and not doc["starts_after"]:
            warnings.append(
                f"after this plan a restart {target.label} still fails: {doc['after']}"
                + (" (as configured)" if target.role == AS_CONFIGURED else "")
            )
    gone = matrix.state_may_be_gone
    if gone is not None:
        # Unknown statefulness: the plan repairs the query as stateless; say what a stateful one
        # meets, as diagnose does (the plan exits 1 on it, like diagnose).
        warnings.append(f"stateful operators unknown: {gone.message}")
    expected = {**plan.expected, "cells": cells}
    # Unknown statefulness and nothing suggests state: the plan repairs the query as stateless, and
    # says what a stateful one meets as diagnose's assumptions do (not a warning: exit code unchanged).
    assumed = matrix.assumed_stateless
    return replace(
        plan,
        expected=expected,
        warnings=tuple(dict.fromkeys(warnings)),
        assumptions=(
            *matrix.job_assumptions,
            *((assumed,) if assumed is not None else ()),
            # Which Delta tables the plan was made against (found beside the checkpoint, named).
            *(matrix.delta_pairing.lines() if matrix.delta_pairing is not None else ()),
        ),
    )


def plan_exit_code(plan: RepairPlan, matrix: MatrixDiagnosis) -> int:
    """Return what ``plan`` exits with when something is left unresolved: what ``diagnose`` exits
    with for what is left, so the two commands agree on one checkpoint. 1 when every code left is
    one the matrix rates a warning (a rolled-back sink's CD407 waiting for consent); 4 when any is an
    error there or is new after the plan (an error the plan itself would meet). A plan without a
    step (a live writer stopped it) leaves the whole diagnosis as it is: ``diagnose``'s own code."""
    if not plan.unresolved:
        return ExitCode.OK
    errors = {f.code for f in matrix.findings if f.severity == ERROR}
    warnings = {f.code for f in matrix.findings if f.severity != ERROR}
    left = {u["code"] for u in plan.unresolved}
    code = ExitCode.ERRORS if left & errors or not left <= warnings else ExitCode.WARNINGS
    return code if plan.steps else max(code, matrix.exit_code)
