"""The one severity rule: how severe a finding is in a diagnosis of the restart matrix. Pure.

A code has a severity in the registry (:mod:`~checkpoint_doctor.diagnosis.codes`): ``error`` for
a fact that makes a restart fail or puts data at risk, ``warning`` or ``info`` for the rest. In a
diagnosis the restarts it is met in decide (``diagnose``, ``plan``, ``audit`` and ``explain`` all
use :func:`effective_severity` or :data:`RULE`):

* a warning or info code keeps its severity;
* an error code that makes restarts fail is an **error** when a restart that counts as configured
  fails by it (the line and mode that wrote the checkpoint in the writer's session, or those named
  with ``--spark``/``--mode``), and a **warning** when only plausible restarts fail by it (a newer
  line, another mode, a session without a conf the writer had): that restart is not the one the
  operator runs, so it is named and quoted, not an error;
* an error code that makes no restart fail (data at risk: a sink log readers cannot read, a new
  query id) is an **error** when a restart as configured meets it, else a warning.

Downgrades (a line older than the writer) are shown and never counted. The exit code follows:
4 for an error or a failing restart as configured, 1 for a warning or a failing plausible restart.
"""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import CODES, ERROR, WARNING, Code, Severity

#: The rule in an operator's words (``explain`` prints it for every error code; docs/exit-codes.md quotes it).
RULE = (
    "error when the restart as configured (the Spark line and mode that wrote the checkpoint, or "
    "those named with --spark/--mode) fails by it or meets it with data at risk; a warning when only "
    "a plausible restart does (a newer line, another mode, a session without a conf the writer had)"
)


def effective_severity(
    code: str, *, fails_configured: bool, fails_plausible: bool, met_configured: bool
) -> Severity:
    """Return a finding's severity from the restarts it is met in.

    ``fails_configured``/``fails_plausible``: an as-configured / a plausible counted restart fails
    by this code; ``met_configured``: an as-configured restart meets it (failing or not).
    """
    severity = CODES[code].severity
    if severity != ERROR:
        return severity
    if fails_configured or fails_plausible:
        return ERROR if fails_configured else WARNING
    return ERROR if met_configured else WARNING


#: Codes whose severity is set by how certain their fact is, not by the restarts (their checks lower
#: it, and :func:`~checkpoint_doctor.diagnosis.matrix.merge_findings` keeps a lowered severity).
OWN_RULES: dict[str, str] = {
    Code.DELTA_TABLE_UNREADABLE: (
        "error when the table is certainly the query's (paired as a Delta source by its id, the --job's "
        "path or --delta-table before its log failed to read, or its log's first commit names a Delta "
        "source's table id); a warning when it only lies beside the checkpoint (maybe its source or sink)"
    ),
}


def rule_text(code: str) -> str:
    """Return the severity of a code as ``explain`` states it: the rule for an error code."""
    severity = CODES[code].severity
    return OWN_RULES.get(code) or (RULE if severity == ERROR else severity)
