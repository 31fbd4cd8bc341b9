"""Move a Delta source to the earliest version still in its table's log (CD209), with consent.

What ``failOnDataLoss=false`` does silently, made explicit, counted and undoable: log cleanup
(``delta.logRetentionDuration``) removed the commits from the version the query resumes at, and
``DeltaLog.getChangeLogFiles`` refuses a first commit above it (``DELTA_MISSING_FILES_UNEXPECTED_VERSION``).
The plan writes the source's line of offsets N-1 and N as ``{reservoirVersion: earliest, index: -1,
isStartingVersion: false}`` (see :mod:`.delta_offsets` for why both): the next batch reads the
changes of every version from the earliest on, as ``startingVersion = earliest`` would. The versions
between the resume point and the earliest are skipped; their commits are gone, so only their
number is known (the table's rows of those versions are still in its snapshot, unread by the query).
The table's id and earliest version are checked again at apply time
(:class:`~checkpoint_doctor.planning.preconditions.DeltaTablePre`).
"""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, unavailable
from checkpoint_doctor.planning.strategies.delta_offsets import (
    counted,
    hold,
    locate,
    offset_json,
    rewrite_steps,
    versions_text,
)

NAME = "delta-versions"


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Resume the Delta source at its table's earliest version."""
    where = locate(finding, ctx)
    if where is None:
        return []
    if isinstance(where, str):
        return [unavailable(NAME, finding.code, where)]
    table = where.table
    earliest = table.earliest_version
    resume = where.resume
    if resume.reservoir_version >= earliest:
        return []
    first = resume.reservoir_version
    skipped = range(first, earliest)  # a range, never listed: a version is any long
    # An index >= 0: files 0..index of that version were read already, the rest of it is skipped.
    partly = f"(the files after index {resume.index} of version {first}) " if resume.index >= 0 else ""
    reads = [c for c in table.commits if c.version >= earliest]
    line = offset_json(resume.reservoir_id, earliest, snapshot=False)
    # No table path in a step: the steps are what the plan does, wherever the table lives.
    reason = (
        f"Delta source {where.source} resumes at version {earliest}, the earliest left in its table's log"
    )
    steps = rewrite_steps(ctx, where, line, reason)
    note = (
        f"Delta source {where.source}: version {resume.reservoir_version} -> {earliest} in "
        f"offsets/{where.newest - 1} and offsets/{where.newest}"
    )
    loss = (
        f"Delta source {where.source} ({table.url}): {versions_text(skipped)} {partly}skipped "
        f"({len(skipped)} version(s); log cleanup removed their commits: files and rows not counted); it reads "
        f"on from version {earliest} ({versions_text([c.version for c in reads] or [earliest])}: "
        f"{counted(reads)})"
    )
    return [Option(NAME, steps, (finding.code,), note=note, loss=loss, holds=(hold(table),))]


STRATEGY = Strategy(NAME, NAME, (Code.DELTA_SOURCE_VERSIONS_GONE,), propose)
