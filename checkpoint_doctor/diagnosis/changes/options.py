"""The restart matrix of a changed query: what ``--job`` settles. Pure.

One function for ``diagnose``/``plan --job`` and for ``audit --job``, so that a checkpoint audited
with a job gets the answer ``diagnose --job`` gives it.
"""

from __future__ import annotations

from dataclasses import replace

from checkpoint_doctor.diagnosis.changes.facts import JobFacts
from checkpoint_doctor.diagnosis.matrix import MatrixOptions
from checkpoint_doctor.diagnosis.versions import line_of


def with_job(options: MatrixOptions, job: JobFacts) -> MatrixOptions:
    """Return the options with the job's answers: the job's line (unless lines are named), the
    mode its trigger runs (unless modes are named), its sources and its stateful operators (the
    guesses ``--sources``/``--stateful`` stand for are then not needed)."""
    return replace(
        options,
        lines=options.lines or (line_of(job.spark_version),),
        modes=options.modes or (job.mode,),
        base=replace(options.base, sources=len(job.sources), stateful=job.stateful, job=job),
    )
