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
    FAILED,
    INTERRUPTED,
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
        note = ""
        if journal.state == PARTLY_UNDONE:
            failed = journal.last(Event.UNDO_FAILED)
            why = f"failed: {failed.get('error')}" if failed is not None else "was interrupted"
            note = f"an undo began and {why}; run undo again to finish it"
        elif journal.state in (FAILED, INTERRUPTED):
            note = unfinished_note(journal)
        rows.append({**row, "state": journal.state, "steps_done": steps_done(journal), "note": note})
    return rows


def steps_done(journal: Journal) -> int | None:
    """Return how many steps the apply did, as its journal counts them: its end event's, else (a
    process killed mid-apply says nothing) the last progress it recorded, at least that many."""
    for kind in (Event.APPLIED, Event.FAILED, Event.INTERRUPTED, Event.PROGRESS):
        event = journal.last(kind)
        if event is not None:
            value = event.get("done" if kind == Event.PROGRESS else "steps_done")
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return 0 if journal.first(Event.BACKED_UP) is not None else None


def unfinished_note(journal: Journal) -> str:
    """Say how an apply that did not finish stopped and what it changed (issue 31: history showed
    "interrupted -" of an apply that had moved all 1,600 files)."""
    done = steps_done(journal)
    end = journal.last(Event.FAILED) or journal.last(Event.INTERRUPTED)
    ran = end.get("ran") if end is not None else None
    if end is None:
        how = "the process was killed part way" + (f" (after at least {done} step(s))" if done else "")
    elif end.get("event") == Event.INTERRUPTED:
        how = f"it was interrupted (Ctrl-C) after {done} step(s)"
    else:
        how = f"it failed after {done} step(s): {end.get('error')}"
    if ran == 0 or journal.first(Event.BACKED_UP) is None:
        return f"the apply did not finish: {how}; it changed nothing"
    return f"the apply did not finish: {how}; the checkpoint was changed: undo it, then apply the plan again"


def _when(entry: dict[str, Any]) -> int:
    at = entry.get("at_ms")
    return at if isinstance(at, int) and not isinstance(at, bool) else 0


def own_writes(tool: Storage) -> frozenset[tuple[str, int | str]]:
    """Return the checkpoint files the applies still in place created (see :func:`tool_record`)."""
    return tool_record(tool)[0]


def tool_record(tool: Storage) -> tuple[frozenset[tuple[str, int | str]], tuple[dict[str, Any], ...]]:
    """Return what the applies in the tool directory say to a verdict, each journal read once:

    * the checkpoint files the applies still in place created, as (path, ETag or mtime) right
      after each apply: what the live-writer check must not take for a running query (an apply
      undone, or one that did not finish, wrote nothing that stays);
    * the applies that changed the checkpoint and did not finish (failed, interrupted, killed, or
      an undo that stopped part way): plan id, journal, state, steps done and what to do
      (issue 31: diagnose was silent about an apply interrupted after all its moves).

    Only applies in the tool directory count (their journal, plan and listing are read, bounded).
    """
    out: set[tuple[str, int | str]] = set()
    unfinished: list[dict[str, Any]] = []
    for entry in list_applies(tool):
        location = _default_location(tool, str(entry.get("journal", "")))
        if location is None:
            continue
        with contextlib.suppress(CheckpointDoctorError):
            journal = Journal.load(location)
            if journal.state != APPLIED:
                row = _unfinished(journal, entry)
                if row is not None:
                    unfinished.append(row)
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
    return frozenset(out), tuple(unfinished)


def _unfinished(journal: Journal, entry: dict[str, Any]) -> dict[str, Any] | None:
    """Return the row of an apply that changed the checkpoint and did not finish, or None."""
    state = journal.state
    if state == PARTLY_UNDONE:
        note = "an undo began and did not finish; run undo again to finish it"
    elif state in (FAILED, INTERRUPTED):
        note = unfinished_note(journal)
        if note.endswith("it changed nothing"):
            return None
    else:
        return None
    return {
        "plan_id": entry.get("plan_id"),
        "journal": journal.url,
        "state": state,
        "steps_done": steps_done(journal),
        "note": note,
    }


def _default_location(tool: Storage, journal_url: str) -> Storage | None:
    """Return the backup location of a journal below the tool directory, or None."""
    prefix = tool.url_of("") + "/"
    if not journal_url.startswith(prefix) or not journal_url.endswith("/" + JOURNAL):
        return None
    return tool.child(journal_url[len(prefix) : -len(JOURNAL) - 1])
