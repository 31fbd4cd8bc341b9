"""Fleet audit: every checkpoint and file sink output under one or more roots, diagnosed at once.

:mod:`~checkpoint_doctor.fleet.discovery` finds targets in one listing (pure),
:mod:`~checkpoint_doctor.fleet.run` lists each root once and audits targets concurrently,
:mod:`~checkpoint_doctor.fleet.records` holds the typed records (their JSON made only where it is
written), :mod:`~checkpoint_doctor.fleet.report` builds, links and summarizes them and renders the text (pure),
:mod:`~checkpoint_doctor.fleet.pairing` pairs each file sink output with the checkpoint whose logs
prove it (pure), :mod:`~checkpoint_doctor.fleet.html` renders the self-contained HTML page from its
Jinja2 template (pure), :mod:`~checkpoint_doctor.fleet.metrics` writes Prometheus text for
node_exporter, and :mod:`~checkpoint_doctor.fleet.spark` runs the same per-target audit on a Spark
cluster. The CLI command is ``audit``; the package is named for what it audits.
"""

from checkpoint_doctor.fleet.discovery import Discovery, Note, Target, TreeIndex, discover
from checkpoint_doctor.fleet.run import DEFAULT_JOBS, AuditResult, AuditTask, audit, plan_fleet, run_tasks

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
