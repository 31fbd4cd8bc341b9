"""Repair planning: pure functions from a snapshot and its diagnosis to a RepairPlan."""

from checkpoint_doctor.planning.plan import Precondition, RepairPlan, Step
from checkpoint_doctor.planning.planner import STRATEGIES, PlanOptions, plan_repair

__all__ = ["STRATEGIES", "PlanOptions", "Precondition", "RepairPlan", "Step", "plan_repair"]
