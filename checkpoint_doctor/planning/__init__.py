"""Repair planning: pure functions from a snapshot and its diagnosis to a RepairPlan."""

from checkpoint_doctor.planning.plan import RepairPlan
from checkpoint_doctor.planning.planner import STRATEGIES, plan_repair
from checkpoint_doctor.planning.preconditions import Precondition
from checkpoint_doctor.planning.request import Cell, PlanOptions
from checkpoint_doctor.planning.steps import Step

__all__ = ["STRATEGIES", "Cell", "PlanOptions", "Precondition", "RepairPlan", "Step", "plan_repair"]
