"""An audit's Delta part: the summary's Delta counts, and the words the text, HTML and metrics
outputs say of a checkpoint record's Delta tables (its ``delta``: the
:class:`~checkpoint_doctor.world.delta_pairing.DeltaPairing` the audit made, kept whole on the
:class:`~checkpoint_doctor.fleet.records.CheckpointRecord`). Pure.

Kept apart from the records' other parts so that the Delta additions live in one place.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from checkpoint_doctor.fleet.discovery import NOTE_DELTA
from checkpoint_doctor.fleet.records import AuditNote, CheckpointRecord, DeltaCounts, Record
from checkpoint_doctor.world.delta_pairing import SOURCE

#: The note of a Delta table the audit read for pairing.
PAIRED_NOTE = (
    "a Delta table (_delta_log/): read to pair it with the checkpoints by table id and txn appId "
    "(see their records), not a checkpoint"
)


def paired_table_note(note: AuditNote) -> bool:
    """Whether a note is that of a Delta table the audit read to pair it (not a skipped directory)."""
    return note.kind == NOTE_DELTA and note.message == PAIRED_NOTE


def _delta(record: Record) -> CheckpointRecord | None:
    return record if isinstance(record, CheckpointRecord) and record.delta is not None else None


def delta_counts(notes: Iterable[AuditNote], records: Iterable[Record], reads: int = 0) -> DeltaCounts:
    """Return the summary's Delta counts of the notes (each table found has one) and the records."""
    sources: set[str] = set()
    sinks: set[str] = set()
    unpaired = 0
    for r in records:
        checkpoint = _delta(r)
        if checkpoint is None or checkpoint.delta is None:
            continue
        for p in checkpoint.delta.pairs:
            (sources if p.role == SOURCE else sinks).add(p.table.url)
        unpaired += len(checkpoint.delta.unpaired)
    return DeltaCounts(
        tables=sum(1 for n in notes if n.kind == NOTE_DELTA),
        paired_sources=len(sources),
        paired_sinks=len(sinks),
        unpaired_sources=unpaired,
        reads=reads,
    )


@dataclass(frozen=True)
class DeltaLine:
    """One line of a record's Delta pairing on the HTML page: ``paired``, ``unpaired`` or ``unread``."""

    kind: str
    text: str


def delta_lines(record: Record) -> tuple[DeltaLine, ...]:
    """Return a checkpoint record's Delta pairing for the HTML page: one line per pair (``paired``),
    per Delta source no table pairs with (``unpaired``) and per table beside it that could not be
    read (``unread``)."""
    checkpoint = _delta(record)
    if checkpoint is None or checkpoint.delta is None:
        return ()
    pairing = checkpoint.delta
    out = [DeltaLine("paired", p.text) for p in pairing.pairs]
    where = pairing.looked_at or "the tables looked at"
    for n, table_id in pairing.unpaired:
        out.append(
            DeltaLine(
                "unpaired",
                f"Delta source {n} (table {table_id}) not paired: no Delta table looked at ({where}) has its "
                "id; pass --delta-table to diagnose with the table it reads",
            )
        )
    out += [DeltaLine("unread", f"Delta table {url} not read: {why}") for url, why in pairing.unread]
    return tuple(out)


def delta_headline(counts: DeltaCounts) -> str | None:
    """Return the audit's Delta counts in words (None: no Delta table under the roots and no Delta
    source unpaired)."""
    if not counts.tables and not counts.unpaired_sources:
        return None
    words = (
        f"{counts.tables} Delta table{'s' if counts.tables != 1 else ''} under the roots: "
        f"{counts.paired_sources} paired as a source, {counts.paired_sinks} as a sink"
    )
    if counts.unpaired_sources:
        words += f"; {counts.unpaired_sources} Delta source(s) paired with no table"
    return words


def far_tables(record: Record) -> tuple[str, ...]:
    """Return the tables a checkpoint record is paired with that ``diagnose`` of it would not find
    beside it (neither its parent nor a sibling directory): its next command names them with
    ``--delta-table``, so that it gives the audit's answer."""
    checkpoint = _delta(record)
    if checkpoint is None or checkpoint.delta is None:
        return ()
    parent = record.url.rstrip("/").rpartition("/")[0]
    out = []
    for p in checkpoint.delta.pairs:
        table = p.table.url.rstrip("/")
        if table != parent and table.rpartition("/")[0] != parent:
            out.append(table)
    return tuple(dict.fromkeys(out))
