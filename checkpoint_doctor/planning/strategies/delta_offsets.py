"""Move a Delta source's position in the offsets files a restart reads: shared by the Delta way back
(``delta-versions`` for CD209, ``delta-table`` for CD208). Pure.

A restart reads two offsets files of a Delta source (delta-spark ``sources/DeltaSource.scala``):
the newest, ``offsets/N``, where the next batch starts (or where a re-run batch N ends), and the one
before, ``offsets/(N-1)``: on restart Spark calls ``getBatch(offsets N-1, offsets N)`` of every V1
source before it plans a new batch (``MicroBatchExecution.populateStartOffsets``), and re-runs an
uncommitted batch N from it. ``DeltaSource.getBatch`` checks the table id of both
(``DeltaSourceOffset.apply`` -> ``DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE``) and lists the
commits between them unless they are equal (``if (startOffsetOption.contains(endOffset)) return
emptyDataFrame``). So the same new line is written into both files: the replay lists nothing, a
re-run batch N reads nothing of this source, and the next batch starts from the new position. The
other lines of both files (the metadata line with the pinned confs, the other sources) keep their
bytes; nothing in the commit log or the state refers to a Delta position.

The line is written the way ``DeltaSourceOffset.Serializer`` writes a base index: ``sourceVersion``
1 and ``index`` -1 (version 3 with index -1 fails its assertion), ``isStartingVersion`` true to
read the table's snapshot at that version first (a new query's start), false to read the changes
from that version on (``startingVersion``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.model import DeltaOffset, OffsetSeq
from checkpoint_doctor.model_delta import DeltaCommit, DeltaTable
from checkpoint_doctor.planning.options import PlanContext, quarantine
from checkpoint_doctor.planning.preconditions import DeltaTablePre
from checkpoint_doctor.planning.steps import Step, WriteStep
from checkpoint_doctor.reading.snapshot import whole_content


def offset_json(table_id: str, version: int, snapshot: bool) -> str:
    """The offset JSON of a base index at ``version`` (``snapshot``: read the table as of it first)."""
    data = {
        "sourceVersion": 1,
        "reservoirId": table_id,
        "reservoirVersion": version,
        "index": -1,
        "isStartingVersion": snapshot,
    }
    return json.dumps(data, separators=(",", ":"))


@dataclass(frozen=True)
class Where:
    """The Delta source a finding names: its index, its table, the newest offset ``off`` (offsets N)
    and the one before ``prev`` (offsets N-1), and whether batch N is re-run."""

    source: int
    table: DeltaTable
    newest: int
    off: DeltaOffset
    prev: DeltaOffset
    rerun: bool

    @property
    def resume(self) -> DeltaOffset:
        """The offset the restart reads new data from: batch N's start when N is re-run, else N's end."""
        return self.prev if self.rerun else self.off


def _delta_line(record: OffsetSeq | None, source: int) -> DeltaOffset | None:
    if record is None or source >= len(record.sources):
        return None
    decoded = record.sources[source].decoded
    return decoded if isinstance(decoded, DeltaOffset) else None


def locate(finding: Finding, ctx: PlanContext) -> Where | str | None:
    """Return the Delta source of a CD208/CD209 finding, why its offsets cannot be moved, or None
    (no table named: nothing to plan from)."""
    details = dict(finding.details)
    tables = ctx.options.diagnose.delta_tables or ()
    table = next((t for t in tables if t.url == details.get("table")), None)
    source = details.get("source")
    newest = ctx.snapshot.offsets.latest_id
    if table is None or not isinstance(source, int) or newest is None:
        return None
    entry = ctx.snapshot.offsets.get(newest)
    off = _delta_line(entry.record if entry is not None else None, source)
    if off is None:
        return None
    before = ctx.snapshot.offsets.get(newest - 1) if newest > 0 else None
    prev = _delta_line(before.record if before is not None else None, source)
    newest_entry = ctx.snapshot.offsets.get(newest)
    # Both files are rewritten from their bytes: a large file abridged on reading (FileHead) is not.
    if (
        prev is None
        or before is None
        or whole_content(ctx.snapshot.raw, before.file.path) is None
        or newest_entry is None
        or whole_content(ctx.snapshot.raw, newest_entry.file.path) is None
    ):
        # Batch 0 (or a lost offsets/(N-1)): getBatch(None, offset) reads the table's snapshot just
        # before the offset's version, which a rewrite cannot make the query skip.
        return (
            f"no readable offsets/{newest - 1} with Delta source {source}: the restart replays batch {newest} "
            "from the table's snapshot, which no offsets rewrite controls"
        )
    return Where(source, table, newest, off, prev, ctx.diagnosis.prediction.rerun)


def rewrite_steps(ctx: PlanContext, where: Where, line: str, reason: str) -> tuple[Step, ...]:
    """Quarantine offsets N-1 and N (with their checksums) and write them again with the Delta
    source's line replaced by ``line``, every other byte kept."""
    steps: list[Step] = []
    for batch in (where.newest - 1, where.newest):
        entry = ctx.snapshot.offsets.get(batch)
        assert entry is not None  # locate() checked both
        assert entry.record is not None
        path = entry.file.path
        lines = ctx.snapshot.raw[path].decode("utf-8").split("\n")
        at = 2 + where.source  # "v1", the metadata line, then one line per source
        name = entry.record.sources[where.source].name
        lines[at] = f"{name}:{line}" if entry.record.version >= 2 else line
        steps += quarantine(ctx.snapshot, path, f"its Delta source {where.source} line is rewritten")
        steps.append(WriteStep.of_bytes(path, "\n".join(lines).encode("utf-8"), reason))
    return tuple(steps)


def versions_text(versions: Sequence[int]) -> str:
    """``version 4``, ``versions 4..5`` (consecutive versions)."""
    return f"version {versions[0]}" if len(versions) == 1 else f"versions {versions[0]}..{versions[-1]}"


def counted(commits: Sequence[DeltaCommit]) -> str:
    """The files and rows the data-change adds of ``commits`` hold, in words."""
    files = sum(c.adds for c in commits)
    rows = [c.rows for c in commits]
    row_text = f"{sum(r for r in rows if r is not None)} rows" if None not in rows else "rows not counted"
    return f"{files} file(s), {row_text}"


def hold(table: DeltaTable) -> DeltaTablePre:
    """What apply reads again: the table's id and the versions its log holds, as the plan saw them."""
    return DeltaTablePre(
        url=table.url,
        table_id=table.table_id or "",
        earliest=table.earliest_version,
        latest=table.latest_version,
    )
