"""The applies made to a checkpoint, with their state, from its tool directory (as Hudi's CLI lists
its actions): ``applied``, ``undone``, ``failed`` (the apply stopped with an error after it began) or
``interrupted`` (the process died mid-apply; undo it)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from checkpoint_doctor.errors import CheckpointDoctorError
from checkpoint_doctor.execution.journal import (
    APPLIED,
    JOURNAL,
    LISTING_AFTER,
    PARTLY_UNDONE,
    PLAN,
    Event,
    Journal,
    list_applies,
    read_jsonl,
    tool_urls,
)
from checkpoint_doctor.parsing.documents import MAX_DOCUMENT_BYTES
from checkpoint_doctor.planning.plan import RepairPlan
from checkpoint_doctor.planning.steps import Area
from checkpoint_doctor.reading.storage import Storage


def apply_history(checkpoint_url: str, open_storage: Callable[[str], Storage]) -> list[dict[str, Any]]:
    """Return one row per recorded apply, oldest first: plan id, journal, time, state, steps done.

    The applies of the checkpoint's real location, by whichever path they were made (a symlink or
    the real path: :func:`tool_urls`)."""
    rows = []
    entries: dict[str, dict[str, Any]] = {}
    for url in tool_urls(open_storage(checkpoint_url)):
        for entry in list_applies(open_storage(url)):
            entries.setdefault(str(entry.get("journal", "")), entry)
    for url, entry in sorted(entries.items(), key=lambda item: _when(item[1])):
        row = {"plan_id": entry.get("plan_id"), "journal": url, "at_ms": entry.get("at_ms")}
        try:
            journal = Journal.load(open_storage(url[: -len(JOURNAL)].rstrip("/")))
        except CheckpointDoctorError as exc:
            rows.append({**row, "state": "unreadable", "steps_done": None, "note": str(exc)})
            continue
        applied = journal.last(Event.APPLIED) or journal.last(Event.FAILED) or {}
        note = ""
        if journal.state == PARTLY_UNDONE:
            failed = journal.last(Event.UNDO_FAILED)
            why = f"failed: {failed.get('error')}" if failed is not None else "was interrupted"
            note = f"an undo began and {why}; run undo again to finish it"
        rows.append({**row, "state": journal.state, "steps_done": applied.get("steps_done"), "note": note})
    return rows


def _when(entry: dict[str, Any]) -> int:
    at = entry.get("at_ms")
    return at if isinstance(at, int) and not isinstance(at, bool) else 0


def own_writes(tool: Storage) -> frozenset[tuple[str, int | str]]:
    """Return the checkpoint files the applies still in place created, as (path, ETag or mtime)
    right after each apply: what the live-writer check must not take for a running query.

    Only applies in the tool directory count (their journal, plan and listing are read, bounded);
    an apply undone, or one that did not finish, wrote nothing that stays.
    """
    out: set[tuple[str, int | str]] = set()
    for entry in list_applies(tool):
        location = _default_location(tool, str(entry.get("journal", "")))
        if location is None:
            continue
        with contextlib.suppress(CheckpointDoctorError):
            if Journal.load(location).state != APPLIED:
                continue
            plan = RepairPlan.from_json(location.read(PLAN, max_bytes=MAX_DOCUMENT_BYTES).decode("utf-8"))
            created = {
                s.key[1]
                for s in plan.executable_steps
                if s.creates and s.key is not None and s.key[0] == Area.CHECKPOINT
            }
            for row in read_jsonl(location, LISTING_AFTER):
                if isinstance(row, list) and len(row) == 3 and row[0] in created and row[2] is not None:
                    out.add((str(row[0]), row[2]))
    return frozenset(out)


def _default_location(tool: Storage, journal_url: str) -> Storage | None:
    """Return the backup location of a journal below the tool directory, or None."""
    prefix = tool.url_of("") + "/"
    if not journal_url.startswith(prefix) or not journal_url.endswith("/" + JOURNAL):
        return None
    return tool.child(journal_url[len(prefix) : -len(JOURNAL) - 1])
