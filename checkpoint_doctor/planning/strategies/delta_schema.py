"""A Delta source refuses a schema change of its table (CD240: a column renamed or dropped under column
mapping; CD241: a type widened): the way back is Delta's own, a schema tracking log, not a checkpoint
change. Pure.

Delta's documented recovery (``DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG``: "Please
provide a 'schemaTrackingLocation' to enable non-additive schema evolution") is to restart with the
Delta source option ``schemaTrackingLocation``, a directory under the checkpoint
(``DELTA_STREAMING_SCHEMA_LOCATION_NOT_UNDER_CHECKPOINT`` otherwise). ``DeltaSourceMetadataTrackingLog``
then keeps the schema the source reads with: the first restart writes the schema of the version it
resumes from and stops the stream on purpose (``DeltaSourceMetadataEvolutionSupport
.initializeMetadataTrackingAndExitStream``: ``DELTA_STREAMING_METADATA_EVOLUTION``), the next reads the
versions before the change with that schema and, at the commit of the batch that reaches the change,
writes the new schema and stops again (``updateMetadataTrackingLogAndFailTheStreamIfNeeded``); the one
after reads on with the new schema once the SQL conf that acknowledges the change is set
(``validateIfSchemaChangeCanBeUnblocked``, else ``DELTA_STREAMING_CANNOT_CONTINUE_PROCESSING_POST_SCHEMA_EVOLUTION``):
``spark.databricks.delta.streaming.allowSourceColumnRenameAndDrop`` for renames and drops (every
release), ``allowSourceColumnTypeChange`` for a widened type on Delta 4.0 (Delta 3.3 asks for none: its
check knows renames and drops only; Delta 4.4 reads the widened type without a schema log). Every version
is read once: nothing is skipped or read twice, and the plan says so. Real Spark restarts the refused
fixtures so (scripts/delta_schema_fixtures.py, fixtures/delta-schema/, tests/delta/test_schema_changes.py).

The printed action is one line an operator copies into the job (``.option(...)`` on the Delta source,
``spark.conf.set(...)`` in its session); :func:`restart_settings` reads it back from a plan document,
as the recorder restarts it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.diagnosis.sources.delta import WIDENING_SCHEMA_LOG, delta_release, widening
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy

NAME = "delta-schema-tracking"
#: The directory under the checkpoint the plan names for Delta's schema log (one per checkpoint: Delta
#: keeps each source's log in ``_schema_log_<table id>`` below it).
LOCATION = "_delta_schema_tracking"
OPTION = "schemaTrackingLocation"
CONF_PREFIX = "spark.databricks.delta.streaming."
#: How each line's action begins (a matrix's plan names one per Delta release, joined).
ON = "on Spark"
RENAME_DROP_CONF = CONF_PREFIX + "allowSourceColumnRenameAndDrop"
TYPE_CHANGE_CONF = CONF_PREFIX + "allowSourceColumnTypeChange"


def location(root: str) -> str:
    """The schema tracking location the plan names for the checkpoint at ``root``."""
    return root.rstrip("/") + "/" + LOCATION


def confs(code: str, release: str) -> dict[str, str]:
    """The SQL confs Delta ``release`` asks for to read on past the change of ``code``."""
    if code == Code.DELTA_SOURCE_SCHEMA_CHANGED:
        return {RENAME_DROP_CONF: "always"}
    return {TYPE_CHANGE_CONF: "always"} if widening(release) == WIDENING_SCHEMA_LOG else {}


def action(root: str, source: int, code: str, line: str, release: str) -> str:
    """The restart an operator makes on Spark ``line`` (Delta ``release``), in the words the plan prints."""
    conf_text = "".join(f'; spark.conf.set("{k}", "{v}")' for k, v in confs(code, release).items())
    also = (
        "; or restart on a Spark line whose Delta release reads a widened type (Delta 4.4: Spark 4.1, 4.2)"
        if code == Code.DELTA_SOURCE_TYPE_WIDENED
        else ""
    )
    return (
        f'{ON} {line} (Delta {release}): restart with .option("{OPTION}", "{location(root)}") on Delta source '
        f"{source}{conf_text}: Delta writes its schema log there and stops the stream on purpose with "
        "DELTA_STREAMING_METADATA_EVOLUTION, twice (restart it again each time, as a job's retries do), then "
        f"reads on; every version is read once, the versions before the change with the old schema{also}"
    )


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Name the restart with a schema tracking location: no checkpoint change repairs a schema change."""
    details = dict(finding.details)
    source = details.get("source")
    release = delta_release(ctx.diagnosis.spark)
    if not isinstance(source, int) or release is None:
        return []
    resume, latest, rows = (
        details.get("resume_version"),
        details.get("latest_version"),
        details.get("unread_rows"),
    )
    what = details.get("change") or "the schema changed"
    counted = f" ({rows} rows)" if isinstance(rows, int) else ""
    reads = (
        f"versions {resume}..{latest} of {details.get('table')}, not read yet{counted}, are read once each"
        if isinstance(resume, int) and isinstance(latest, int) and resume <= latest
        else "every version not read yet is read once"
    )
    why = (
        f"no checkpoint change makes Delta source {source} read past a schema change ({what}): Delta reads "
        f"it with a schema tracking log; {reads}, nothing skipped or read twice; the rows after the change "
        "reach the sink with the new schema, which it must take"
    )
    manual = action(ctx.snapshot.root, source, finding.code, ctx.diagnosis.spark, release)
    return [Option(NAME, (), (finding.code,), unavailable=why, manual=manual)]


STRATEGY = Strategy(NAME, NAME, (Code.DELTA_SOURCE_SCHEMA_CHANGED, Code.DELTA_SOURCE_TYPE_WIDENED), propose)

_OPTION_RE = re.compile(r'\.option\("' + OPTION + r'", "([^"]+)"\)')
_CONF_RE = re.compile(r'spark\.conf\.set\("([^"]+)", "([^"]+)"\)')


def restart_settings(
    plan: Mapping[str, Any], line: str | None = None
) -> tuple[dict[str, str], dict[str, str]] | None:
    """Return (source options, SQL confs) of the restart a plan document (``plan --format json``'s
    ``result``) names for a schema change on Spark ``line`` (None: the first it names), or None."""
    for left in plan.get("unresolved") or ():
        if left.get("code") not in (Code.DELTA_SOURCE_SCHEMA_CHANGED, Code.DELTA_SOURCE_TYPE_WIDENED):
            continue
        text = str(left.get("manual") or "")
        for part in text.split(f"{ON} ")[1:]:
            if line is not None and not part.startswith(f"{line} "):
                continue
            found = _OPTION_RE.search(part)
            if found is not None:
                return {OPTION: found.group(1)}, dict(_CONF_RE.findall(part))
    return None
