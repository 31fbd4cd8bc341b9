"""Fixture scenarios that real Spark refused to restart and that have a default repair plan."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from checkpoint_doctor.diagnosis import diagnose
from checkpoint_doctor.planning import PlanOptions, plan_repair
from tests.scenarios import options_for_restart, restart_cases


def failing_restarts() -> list[tuple]:
    """Return (scenario, index, restart) for every recorded restart that failed."""
    return [(s, i, r) for s, i, r in restart_cases() if not r["result"]["started"]]


def plan_for(scenario, restart, snapshot, **plan_kw):
    """Diagnose for the recorded restart and plan the default repair."""
    options = options_for_restart(scenario, restart)
    diagnosis = diagnose(snapshot, options)
    return diagnosis, plan_repair(snapshot, diagnosis, PlanOptions(diagnose=options, **plan_kw))


@functools.lru_cache(maxsize=1)
def repairable_restarts() -> tuple[tuple, ...]:
    """Return the failing restarts whose default plan has executable steps (computed once)."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, (scenario, index, restart) in enumerate(failing_restarts()):
            snapshot = scenario.load(Path(tmp) / str(n))
            _, plan = plan_for(scenario, restart, snapshot)
            if plan.executable_steps:
                out.append((scenario, index, restart))
    return tuple(out)
