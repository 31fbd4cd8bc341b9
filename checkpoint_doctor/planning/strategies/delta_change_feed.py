"""Resume a change data feed source where the feed is on again (CD245), with consent. Pure.

A Delta source read with ``readChangeFeed`` (``DeltaSourceCDCSupport``) builds each batch with
``CDCReader.changesToDF``, which refuses the batch's start version when the feed is off there
(``DELTA_MISSING_CHANGE_DATA``). The
versions written while the feed was off have no change data: no restart reads them as changes.
Where a later commit turned the feed on again (``delta.enableChangeDataFeed = true``), the plan writes
the source's line of offsets N-1 and N as ``{reservoirVersion: that commit, index: -1,
isStartingVersion: false}`` (see :mod:`.delta_offsets` for why both): the next batch reads the
changes from there, as ``startingVersion`` would. The versions passed over are named and counted
(their rows are in the table, never read as changes by this query). While the feed is still off
nothing in the checkpoint helps: the option says to turn it on again and plan. skipChangeCommits is
never proposed: a change data feed source does not read it (it reads every change).
"""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.diagnosis.sources.delta import feed_on_at
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, unavailable
from checkpoint_doctor.planning.strategies.delta_offsets import (
    counted,
    hold,
    locate,
    offset_json,
    rewrite_steps,
    versions_text,
)

NAME = "delta-change-feed"
#: What the operator does while the feed is off: the property ``CDCReader.isCDCEnabledOnTable`` reads.
TURN_ON = "ALTER TABLE delta.`<table>` SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Resume the source at the commit that turned the change data feed on again."""
    where = locate(finding, ctx)
    if where is None:
        return []
    if isinstance(where, str):
        return [unavailable(NAME, finding.code, where)]
    table = where.table
    resume = where.resume
    if feed_on_at(table, resume.reservoir_version) is not False:
        return []
    on = next(
        (c.version for c in table.commits if c.version > resume.reservoir_version and c.cdf is True), None
    )
    if on is None:
        why = (
            f"the change data feed of {table.url} is off from version {resume.reservoir_version} to the latest "
            f"({table.latest_version}): no position reads changes that were not recorded; turn it on again "
            f"({TURN_ON.replace('<table>', table.url)}) and plan again, or read the table without readChangeFeed "
            "from a new checkpoint"
        )
        return [unavailable(NAME, finding.code, why)]
    passed = [c for c in table.commits if resume.reservoir_version <= c.version < on]
    reads = [c for c in table.commits if c.version >= on]
    line = offset_json(resume.reservoir_id, on, snapshot=False)
    reason = f"Delta source {where.source} resumes at version {on}, where the change data feed is on again"
    steps = rewrite_steps(ctx, where, line, reason)
    note = (
        f"Delta source {where.source}: version {resume.reservoir_version} -> {on} in "
        f"offsets/{where.newest - 1} and offsets/{where.newest}"
    )
    loss = (
        f"Delta source {where.source} ({table.url}): {versions_text(range(resume.reservoir_version, on))} "
        f"skipped, never read as changes ({counted(passed)}; the change data feed was off there); "
        f"it reads the changes from version {on} on ({counted(reads)})"
    )
    return [Option(NAME, steps, (finding.code,), note=note, loss=loss, holds=(hold(table),))]


STRATEGY = Strategy(NAME, NAME, (Code.DELTA_CHANGE_DATA_MISSING,), propose)
