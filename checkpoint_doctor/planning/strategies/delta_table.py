"""Re-point a Delta source to the table that replaced the one it read (CD208), with consent.

The path the query reads now holds a table with another id (``CREATE OR REPLACE TABLE``, or the
directory deleted and a table written anew), and ``DeltaSourceOffset.apply`` refuses every offset
naming the old id (``DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE``). The plan writes the source's
line of offsets N-1 and N (see :mod:`.delta_offsets`) as the new table's id at the replacement's
first version ``F`` with ``isStartingVersion`` true: the next batch reads the table as of ``F`` (its
snapshot, what a new query reads first: ``DeltaSource.getFileChanges`` ``getSnapshotAt``) and then
the changes of every later version (``plan --delta-version N``: the changes from version N on, with
``isStartingVersion`` false, what ``startingVersion`` reads). ``F`` is the commit whose ``metaData`` first carries the new id:
version 0 of a new log, or the replacing commit, which removes every file of the old table, so the
snapshot at ``F`` is that commit's own adds. Reading ``F`` as changes instead would fail on that
commit's removes (``DELTA_SOURCE_TABLE_IGNORE_CHANGES``).

What is skipped: the old table's versions the query had not read (counted from their commits when
the replace kept the log, not countable when the log was deleted). What may be read twice: the
replacement's rows, when it holds rows the query read from the old table. Both need consent.
"""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.diagnosis.sources.checks_delta import pairing_of
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, unavailable
from checkpoint_doctor.planning.strategies.delta_offsets import (
    counted,
    hold,
    locate,
    offset_json,
    rewrite_steps,
    versions_text,
)
from checkpoint_doctor.reading.positions import newest_sources
from checkpoint_doctor.world.delta_pairing import BY_TABLE_ID, ONLY_BESIDE, ONLY_NAMED, SOURCE

NAME = "delta-table"


def replacement_start(table: DeltaTable) -> int | None:
    """Return the version where the table's current id begins (None: not in the log any more)."""
    first = None
    for commit in table.commits:
        if commit.table_id is None:
            continue
        if commit.table_id != table.table_id:
            first = None
        elif first is None:
            first = commit.version
    return first


def relied_on(ctx: PlanContext, source: int) -> tuple[DeltaTable, ...]:
    """Return the other Delta sources' tables that Delta source ``source``'s pairing relied on.

    A table paired as the only one that pairs with nothing else (beside the checkpoint, or named) is
    the source's only because every other Delta source paired with its own table by id. ``apply``
    re-plans from the tables the plan holds alone (its delta_table preconditions): holding only the
    re-pointed table, its re-plan had two sources and one table left, paired none, and refused the
    tool's own plan of a recreated table ("the plan has 6 steps, the planner makes 0", issue 33
    item 7). So such a plan holds those tables too: the pairing is made again from them, and a table
    replaced since refuses the plan by its precondition."""
    d = ctx.options.diagnose
    pairing = pairing_of(newest_sources(ctx.snapshot), d.delta, ctx.snapshot.query_id, d.delta_pairing)
    if pairing is None:
        return ()
    mine = next((p for p in pairing.pairs if p.role == SOURCE and p.source == source), None)
    if mine is None or mine.how not in (ONLY_BESIDE, ONLY_NAMED):
        return ()
    others = sorted(
        (p for p in pairing.pairs if p.role == SOURCE and p.source != source and p.how == BY_TABLE_ID),
        key=lambda p: p.source or 0,
    )
    return tuple(p.table for p in others)


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Read the replacing table from its first version on."""
    where = locate(finding, ctx)
    if where is None:
        return []
    if isinstance(where, str):
        return [unavailable(NAME, finding.code, where)]
    table = where.table
    start = replacement_start(table)
    if start is None or table.table_id is None:
        why = (
            f"the version where table {table.table_id} replaced the old one is no longer in {table.url}'s log; "
            "start a new checkpoint with startingVersion set deliberately"
        )
        return [unavailable(NAME, finding.code, why)]
    resume = where.resume
    old_id = resume.reservoir_id
    # The old table's commits still in the same log (an in-place replace keeps them).
    old_unread = [c for c in table.commits if resume.reservoir_version <= c.version < start]
    first_read = next(c for c in table.commits if c.version == start)
    later = [c for c in table.commits if c.version > start]
    if old_unread:
        skipped = (
            f"old table {old_id}: {versions_text([c.version for c in old_unread])}, not read yet, skipped "
            f"({counted(old_unread)})"
        )
    elif any(c.version < start for c in table.commits):
        skipped = f"old table {old_id}: every version of it was read"
    else:  # a new log (the directory was deleted) or one cleaned up to the replacement
        skipped = (
            f"old table {old_id}: whatever it held from version {resume.reservoir_version} on is not read "
            "(its log is gone: not counted)"
        )
    chosen = ctx.options.delta_version
    if chosen is None:
        reads = (
            f"reads table {table.table_id} as of version {start} ({counted([first_read])})"
            + (f" and {versions_text([c.version for c in later])} ({counted(later)})" if later else "")
            + ": rows it holds that the query read from the old table are written again"
        )
        line = offset_json(table.table_id, start, snapshot=True)
        reason = f"Delta source {where.source} reads table {table.table_id} from its first version {start}"
    else:
        # plan --delta-version N: the changes from N on, as startingVersion reads them.
        if not start <= chosen <= table.latest_version + 1:
            why = (
                f"--delta-version {chosen} is not a version of table {table.table_id}: it begins at version "
                f"{start} and its latest is {table.latest_version}"
            )
            return [unavailable(NAME, finding.code, why)]
        passed = [c for c in table.commits if start <= c.version < chosen]
        read = [c for c in table.commits if c.version >= chosen]
        skipped += (
            f"; table {table.table_id}: {versions_text([c.version for c in passed])} passed over ({counted(passed)})"
            if passed
            else ""
        )
        reads = f"reads the changes of table {table.table_id} from version {chosen} on" + (
            f" ({versions_text([c.version for c in read])}: {counted(read)})" if read else " (none yet)"
        )
        line = offset_json(table.table_id, chosen, snapshot=False)
        reason = f"Delta source {where.source} reads table {table.table_id}'s changes from version {chosen} (--delta-version)"
    steps = rewrite_steps(ctx, where, line, reason)
    at = f"as of version {start}" if chosen is None else f"changes from version {chosen}"
    note = (
        f"Delta source {where.source}: table {old_id} version {resume.reservoir_version} -> table "
        f"{table.table_id} {at} in offsets/{where.newest - 1} and offsets/{where.newest}"
    )
    loss = f"Delta source {where.source} ({table.url}): {skipped}; {reads}"
    holds = (hold(table), *(hold(t) for t in relied_on(ctx, where.source)))
    return [Option(NAME, steps, (finding.code,), note=note, loss=loss, holds=holds)]


STRATEGY = Strategy(NAME, NAME, (Code.DELTA_SOURCE_TABLE_REPLACED,), propose)
