"""Fleet audit: every checkpoint and file sink output under one or more roots, diagnosed at once.

:mod:`~checkpoint_doctor.audit.discovery` finds targets in one listing (pure),
:mod:`~checkpoint_doctor.audit.runner` lists each root once and audits targets concurrently,
:mod:`~checkpoint_doctor.audit.report` builds records, the summary and text/JSON (pure),
:mod:`~checkpoint_doctor.audit.html` renders the self-contained HTML page (pure), and
:mod:`~checkpoint_doctor.audit.spark` runs the same per-target audit on a Spark cluster.
"""

from checkpoint_doctor.audit.discovery import Discovery, Note, Target, TreeIndex, discover
from checkpoint_doctor.audit.runner import DEFAULT_JOBS, AuditResult, AuditTask, audit, plan_fleet, run_tasks

__all__ = [
    "DEFAULT_JOBS",
    "AuditResult",
    "AuditTask",
    "Discovery",
    "Note",
    "Target",
    "TreeIndex",
    "audit",
    "discover",
    "plan_fleet",
    "run_tasks",
]
