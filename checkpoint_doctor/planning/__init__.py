"""Repair planning: pure functions from a snapshot and its diagnosis to a RepairPlan.

The names below load on first use (PEP 562): reading a plan or a journal
(``planning.plan``, ``planning.steps``) does not import the planner and its strategies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from checkpoint_doctor.planning.plan import RepairPlan
    from checkpoint_doctor.planning.planner import STRATEGIES, plan_repair
    from checkpoint_doctor.planning.preconditions import Precondition
    from checkpoint_doctor.planning.request import Cell, PlanOptions
    from checkpoint_doctor.planning.steps import Step

_WHERE = {
    "RepairPlan": "checkpoint_doctor.planning.plan",
    "STRATEGIES": "checkpoint_doctor.planning.planner",
    "plan_repair": "checkpoint_doctor.planning.planner",
    "Precondition": "checkpoint_doctor.planning.preconditions",
    "Cell": "checkpoint_doctor.planning.request",
    "PlanOptions": "checkpoint_doctor.planning.request",
    "Step": "checkpoint_doctor.planning.steps",
}


def __getattr__(name: str) -> Any:
    """Load a public name from its module the first time it is asked for."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = ["STRATEGIES", "Cell", "PlanOptions", "Precondition", "RepairPlan", "Step", "plan_repair"]
