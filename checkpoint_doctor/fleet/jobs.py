"""``audit --job GLOB=MODULE:FUNCTION``: the changed query of each checkpoint, as ``diagnose --job``
judges it. Pure: the caller (the CLI, the API) asks Spark what each distinct job runs, once, in one
child process per job python (:func:`checkpoint_doctor.execution.job_facts.describe_jobs`), and hands
the answers here; each checkpoint whose path matches a glob is then diagnosed with its job's facts
(:func:`checkpoint_doctor.diagnosis.changes.options.with_job`, the function ``diagnose --job`` uses),
and its record says which job judged it (:func:`job_part`).

A glob is matched as ``--include`` matches: against the checkpoint's path relative to its root and
against its URL, ``*`` crossing ``/``; the first ``--job`` that matches is the checkpoint's. A
``--job`` without ``GLOB=`` applies to every checkpoint.

Everything an audit record gains from a job lives in this module (the record's ``job`` part).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from checkpoint_doctor.diagnosis.changes.facts import JobFacts
from checkpoint_doctor.diagnosis.changes.options import with_job
from checkpoint_doctor.diagnosis.matrix import MatrixOptions
from checkpoint_doctor.errors import UsageError
from checkpoint_doctor.fleet.discovery import matches
from checkpoint_doctor.fleet.records import AuditNote, JobPart, Record
from checkpoint_doctor.render.hints import Hints


class AuditTarget(Protocol):
    """What :func:`unmatched_notes` reads of an audit's task (:class:`~checkpoint_doctor.fleet.run.AuditTask`,
    which the run builds from these jobs: named by its fields, not imported back)."""

    @property
    def kind(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def path(self) -> str: ...


@dataclass(frozen=True)
class JobAssignment:
    """One ``--job``: the checkpoints it judges (``glob``) and the job (``MODULE:FUNCTION``)."""

    glob: str
    spec: str

    @property
    def text(self) -> str:
        """Return the flag's value as the operator wrote it."""
        return f"{self.glob}={self.spec}"


def parse_assignment(text: str) -> JobAssignment:
    """Return the assignment of one ``--job`` value: ``GLOB=MODULE:FUNCTION`` or ``MODULE:FUNCTION``
    (every checkpoint).

    Raises:
        UsageError: no job after ``=``, or no ``MODULE:FUNCTION``.
    """
    glob, sep, spec = text.partition("=")
    if not sep:
        glob, spec = "*", text
    glob, spec = glob.strip(), spec.strip()
    if not glob or ":" not in spec or spec.startswith(":") or spec.endswith(":"):
        raise UsageError(
            f"--job {text!r} is not GLOB=MODULE:FUNCTION",
            hint="e.g. --job 'orders/*=jobs.orders:build' (the function returns the job's DataStreamWriter)",
        )
    return JobAssignment(glob, spec)


def distinct_specs(assignments: Sequence[JobAssignment]) -> list[str]:
    """Return each job once, in the order given (each is analysed once, however many it judges)."""
    return list(dict.fromkeys(a.spec for a in assignments))


@dataclass(frozen=True)
class AuditJobs:
    """The audit's jobs: the assignments and what Spark said each job runs (by spec)."""

    assignments: tuple[JobAssignment, ...]
    facts: Mapping[str, JobFacts]

    def assignment_for(self, rel: str, url: str) -> JobAssignment | None:
        """Return the first assignment whose glob matches the checkpoint (None: no job)."""
        for assignment in self.assignments:
            if matches((assignment.glob,), rel, url) is not None:
                return assignment
        return None

    def options_for(self, options: MatrixOptions, rel: str, url: str) -> MatrixOptions:
        """Return the checkpoint's restart options: with its job's facts, or as given."""
        assignment = self.assignment_for(rel, url)
        if assignment is None:
            return options
        return with_job(options, self.facts[assignment.spec])

    def part(self, rel: str, url: str) -> JobPart | None:
        """Return the record's ``job`` part (None: no job judges this checkpoint)."""
        assignment = self.assignment_for(rel, url)
        return None if assignment is None else job_part(assignment, self.facts[assignment.spec])

    def unmatched(self, targets: Iterable[tuple[str, str]]) -> list[JobAssignment]:
        """Return the assignments no checkpoint (``(rel, url)``) falls to: a glob that matched
        nothing, or one every checkpoint it matches was taken by an earlier ``--job``."""
        used = {self.assignment_for(rel, url) for rel, url in targets}
        return [a for a in self.assignments if a not in used]


def audit_jobs(pairs: Sequence[tuple[str, JobFacts]]) -> AuditJobs:
    """Return the audit's jobs of ``(glob, facts)`` pairs (the Python API's form of ``--job``)."""
    assignments = tuple(JobAssignment(glob, facts.job) for glob, facts in pairs)
    return AuditJobs(assignments, {facts.job: facts for _, facts in pairs})


def job_part(assignment: JobAssignment, facts: JobFacts) -> JobPart:
    """Return what a record says of the job that judged it."""
    return JobPart(
        job=assignment.spec,
        glob=assignment.glob,
        spark_version=facts.spark_version,
        mode=facts.mode,
        elapsed_s=facts.elapsed_s,
        summary=facts.summary,
    )


def unmatched_note(assignment: JobAssignment) -> str:
    """Return the note of a ``--job`` that judged no checkpoint."""
    return f"--job {assignment.text} matched no checkpoint (or only ones an earlier --job took)"


def record_hints(hints: Hints, record: Record) -> Hints:
    """Return the hints of a record's next step: with its job (the audit's hints carry its
    ``--job-python``), so that the suggested command judges the same query."""
    part = getattr(record, "job", None)
    return hints if part is None else replace(hints, job=part.job)


def unmatched_notes(tasks: Iterable[AuditTarget], jobs: AuditJobs, roots: Sequence[str]) -> list[AuditNote]:
    """Return the audit's notes (``kind`` ``job``) of the ``--job`` values that judged no checkpoint
    (``tasks``: the plan's :class:`~checkpoint_doctor.fleet.run.AuditTask` values)."""
    targets = [(t.path, t.url) for t in tasks if t.kind == "checkpoint"]
    root = roots[0] if roots else ""
    return [
        AuditNote(url=root, root=root, path="", kind="job", message=unmatched_note(a))
        for a in jobs.unmatched(targets)
    ]


def jobs_text(jobs: AuditJobs, records: Sequence[Record]) -> str:
    """Return the text audit's lines on its jobs: each job, its Spark line, how long Spark took, and
    how many checkpoints it judged (their findings are in the records)."""
    judged: dict[str, int] = {}
    for record in records:
        part = getattr(record, "job", None)
        if part is not None:
            judged[part.job] = judged.get(part.job, 0) + 1
    first = next(iter(jobs.facts.values()), None)
    head = "Jobs (--job)"
    if first is not None:
        # One child process described them all: its time is every job's.
        head += (
            f": analysed by Spark {first.spark_version} in one process, {first.elapsed_s:g} s (not started)"
        )
    lines = [head]
    for assignment in jobs.assignments:
        facts = jobs.facts[assignment.spec]
        lines.append(
            f"  {assignment.text}: mode {facts.mode}, {judged.get(assignment.spec, 0)} checkpoint(s) judged"
        )
    return "\n".join(lines)
