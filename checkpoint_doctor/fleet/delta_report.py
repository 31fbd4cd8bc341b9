"""An audit's Delta part: what a checkpoint record says of its Delta tables (``delta``), the
summary's counts and their words in the text and HTML outputs. Pure: dicts and strings out.

Kept apart from the records' other fields (``fleet/report.py``) so that each record gets its Delta
part in one place (:func:`delta_part`, called by ``fleet/run.py``), whatever shape the records take.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from checkpoint_doctor.diagnosis.delta_pairing import DeltaPairing
from checkpoint_doctor.fleet.discovery import NOTE_DELTA

#: The note of a Delta table the audit read for pairing.
PAIRED_NOTE = (
    "a Delta table (_delta_log/): read to pair it with the checkpoints by table id and txn appId "
    "(see their records), not a checkpoint"
)


def paired_table_note(note: Mapping[str, Any]) -> bool:
    """Whether a note is that of a Delta table the audit read to pair it (not a skipped directory)."""
    return note.get("kind") == NOTE_DELTA and note.get("message") == PAIRED_NOTE


def delta_summary(
    notes: Iterable[Mapping[str, Any]], records: Iterable[Mapping[str, Any]], reads: int = 0
) -> dict[str, Any]:
    """Return the audit summary's Delta counts: tables found (discovery's notes), paired as a source
    or a sink of an audited checkpoint, Delta sources no table pairs with, and the files read from
    the tables' logs to pair them (``reads``; a source table's commits are in its checkpoint's
    record). Pure."""
    found = sum(1 for n in notes if n["kind"] == NOTE_DELTA)
    sources: set[str] = set()
    sinks: set[str] = set()
    unpaired = 0
    for r in records:
        part = r.get("delta") or {}
        for p in part.get("pairs", []):
            (sources if p["role"] == "source" else sinks).add(p["table"])
        unpaired += len(part.get("unpaired_sources", []))
    return {
        "tables": found,
        "paired_sources": len(sources),
        "paired_sinks": len(sinks),
        "unpaired_sources": unpaired,
        "reads": reads,
    }


def delta_part(pairing: DeltaPairing | None) -> dict[str, Any] | None:
    """Return a checkpoint record's ``delta`` part: its pairs, its unpaired Delta sources, in words
    too (the JSON of ``diagnose``'s ``delta_pairing``); None: nothing Delta about it."""
    return pairing.to_dict() if pairing is not None else None


def delta_lines(record: Mapping[str, Any]) -> list[dict[str, str]]:
    """Return a checkpoint record's Delta pairing for the HTML page: one line per pair (``paired``)
    and per Delta source no table pairs with (``unpaired``), and the tables beside it that could
    not be read (``unread``). Pure."""
    part = record.get("delta") or {}
    out = [{"kind": "paired", "text": p["text"]} for p in part.get("pairs", [])]
    for u in part.get("unpaired_sources", []):
        where = part.get("looked_at") or "the tables looked at"
        out.append(
            {
                "kind": "unpaired",
                "text": f"Delta source {u['source']} (table {u['table_id']}) not paired: no Delta table looked "
                f"at ({where}) has its id; pass --delta-table to diagnose with the table it reads",
            }
        )
    out += [
        {"kind": "unread", "text": f"Delta table {u['table']} not read: {u['reason']}"}
        for u in part.get("unread", [])
    ]
    return out


def delta_headline(summary: Mapping[str, Any]) -> str | None:
    """Return the audit's Delta counts in words (None: no Delta table under the roots and no Delta
    source unpaired). Pure."""
    d = summary.get("delta") or {}
    if not d.get("tables") and not d.get("unpaired_sources"):
        return None
    words = (
        f"{d.get('tables', 0)} Delta table{'s' if d.get('tables', 0) != 1 else ''} under the roots: "
        f"{d.get('paired_sources', 0)} paired as a source, {d.get('paired_sinks', 0)} as a sink"
    )
    if d.get("unpaired_sources"):
        words += f"; {d['unpaired_sources']} Delta source(s) paired with no table"
    return words


def far_tables(record: Mapping[str, Any]) -> tuple[str, ...]:
    """Return the tables a checkpoint record is paired with that ``diagnose`` of it would not find
    beside it (neither its parent nor a sibling directory): its next command names them with
    ``--delta-table``, so that it gives the audit's answer. Pure."""
    url = str(record.get("url") or "").rstrip("/")
    parent = url.rpartition("/")[0]
    out = []
    for p in (record.get("delta") or {}).get("pairs", []):
        table = str(p["table"]).rstrip("/")
        if table != parent and table.rpartition("/")[0] != parent:
            out.append(table)
    return tuple(dict.fromkeys(out))
