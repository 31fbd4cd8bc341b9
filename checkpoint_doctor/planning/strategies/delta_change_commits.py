"""A Delta source refuses a commit that deleted or updated rows (CD210): the fix is a source option,
not the checkpoint. Pure.

``DeltaSource.validateCommitAndDecideSkipping`` fails on a commit with data-change removes
(``DELTA_SOURCE_IGNORE_DELETE``, ``DELTA_SOURCE_TABLE_IGNORE_CHANGES``) unless the query reads with
``skipChangeCommits`` (or ``ignoreDeletes`` for deletes only): then such a commit is skipped and every
other commit is read on. A checkpoint rewrite cannot do that: a Delta offset is one position, so
resuming past the refused commit also skips every version between the resume point and it (rows the
query never read). What an operator expects is the option, which skips exactly the refused commits,
now and later; the strategy says what resuming past the commit would cost and the manual action
(:data:`MANUAL`) names the option. Real Spark restarts the refused fixtures with it
(scripts/record_delta_repairs.py, fixtures/repairs/delta-spark-<v>.json).
"""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.diagnosis.sources.checks_delta import never_read
from checkpoint_doctor.diagnosis.sources.delta import adds_new_rows
from checkpoint_doctor.model_delta import DeltaCommit
from checkpoint_doctor.planning.manual import DELTA_CHANGE_MANUAL, SKIP_CHANGE_COMMITS
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, unavailable
from checkpoint_doctor.planning.strategies.delta_offsets import counted, locate, versions_text

NAME = "delta-change-commits"
#: The source option the manual action names, as the job sets it, and the action (planning.manual).
OPTION = SKIP_CHANGE_COMMITS
MANUAL = DELTA_CHANGE_MANUAL


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Say what resuming past the refused commit would skip, and that the option skips less."""
    where = locate(finding, ctx)
    if where is None:
        return []
    if isinstance(where, str):
        return [unavailable(NAME, finding.code, where)]
    start = where.resume.reservoir_version
    refused = next((c for c in where.table.commits if c.version >= start and c.removes), None)
    if refused is None:
        return []
    before = [c for c in where.table.commits if start <= c.version < refused.version]
    what = f"version {refused.version} ({refused.operation or 'a commit'}: {refused.removes} file(s) removed, {refused.adds} added)"
    cost = (
        f"would also skip {versions_text([c.version for c in before])} ({counted(before)}), never read"
        if before
        else "would skip exactly that commit, as the option does, but not the next one"
    )
    why = (
        f"a Delta offset is one position: resuming Delta source {where.source} past {what} {cost}; "
        f"{MANUAL.split(':')[0]} instead"
    )
    # What the option itself never reads: every commit that removes files, the rows it adds included
    # (an UPDATE's new values, a MERGE's inserted rows; DeltaSource.validateCommitAndDecideSkipping).
    changing = [
        c for c in where.table.commits if c.version >= start and c.removes and c.adds and adds_new_rows(c)
    ]
    if changing:
        never = "; ".join(never_read(c) for c in changing)
        why += (
            f". DATA NEVER READ with the option: it skips whole commits, the rows they add included: {never}"
        )
    if where.table.commits and _ignore_deletes_fails(refused):
        why += (
            ". ignoreDeletes does not do it: it tolerates only deletes of whole files, and this commit "
            "rewrote files (rows deleted from a file rewrite it: Delta counts that as a data update)"
        )
    return [unavailable(NAME, finding.code, why)]


def _ignore_deletes_fails(commit: DeltaCommit) -> bool:
    """Whether ``ignoreDeletes`` still refuses the commit: it removes files and adds others."""
    return commit.removes > 0 and commit.adds > 0


STRATEGY = Strategy(NAME, NAME, (Code.DELTA_SOURCE_CHANGE_REFUSED,), propose)
