"""``audit --job GLOB=MODULE:FUNCTION`` (repeatable), ``--job-python``, ``--job-timeout``: the options,
and asking Spark once for every distinct job (one child process, one JVM start) before the audit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from checkpoint_doctor.cli.options import job_python_option, job_timeout_option
from checkpoint_doctor.errors import UsageError
from checkpoint_doctor.fleet.jobs import AuditJobs, distinct_specs, jobs_text, parse_assignment
from checkpoint_doctor.fleet.jobs import unmatched_notes as _unmatched_notes
from checkpoint_doctor.fleet.records import AuditNote
from checkpoint_doctor.fleet.run import FleetPlan

__all__ = ["audit_job_options", "audit_jobs_for", "jobs_text", "unmatched_notes"]


def audit_job_options(func: Any) -> Any:
    """Add ``--job``, ``--job-python`` and ``--job-timeout`` to ``audit``."""
    for opt in reversed(
        [
            click.option(
                "--job",
                "job_assignments",
                multiple=True,
                metavar="GLOB=MODULE:FUNCTION",
                help="The query that will restart the checkpoints whose path (relative to its root) or URL "
                "matches GLOB, repeatable (the first match wins; without GLOB= every checkpoint). Each "
                "distinct job is analysed once by Spark (nothing is run or read) and its checkpoints are "
                "judged as 'diagnose --job' judges them.",
            ),
            job_python_option(
                "the --job queries (default: this one); its Spark line is the default --spark of their "
                "checkpoints"
            ),
            job_timeout_option(
                "Give up describing the --job queries after this long (all of them: one Spark start)."
            ),
        ]
    ):
        func = opt(func)
    return func


def audit_jobs_for(assignments: Sequence[str], python: str | None, timeout_s: float) -> AuditJobs | None:
    """Return the audit's jobs with what Spark said each runs (None without ``--job``).

    Raises:
        UsageError: a bad ``--job``, ``--job-python`` without ``--job``, or Spark could not describe a job.
        MissingDependencyError: no pyspark here and no ``--job-python``.
    """
    if not assignments:
        if python:
            raise UsageError("--job-python needs --job", hint="name the jobs too: --job GLOB=MODULE:FUNCTION")
        return None
    from checkpoint_doctor.execution.catch_up.job import parse_job_spec
    from checkpoint_doctor.execution.job_facts import describe_jobs

    parsed = tuple(parse_assignment(a) for a in assignments)
    specs = distinct_specs(parsed)
    for spec in specs:
        parse_job_spec(spec)
    facts = describe_jobs(specs, python=python, timeout_s=timeout_s)
    return AuditJobs(parsed, dict(zip(specs, facts, strict=True)))


def unmatched_notes(plan: FleetPlan, jobs: AuditJobs) -> list[AuditNote]:
    """Return the notes of the ``--job`` values that judged no checkpoint of the plan."""
    return _unmatched_notes(plan.tasks, jobs, plan.roots)
