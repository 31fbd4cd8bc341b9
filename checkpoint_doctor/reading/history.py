"""The applies made to a checkpoint, with their state, read from its tool directory (as Hudi's CLI
lists its actions): ``applied``, ``undone``, ``failed`` (the apply stopped with an error after it
began) or ``interrupted`` (the process died mid-apply; undo it); and what a verdict needs of them
(the files the applies still in place created, the applies that did not finish).

Reads only what ``apply`` wrote (:mod:`checkpoint_doctor.reading.journal`): the world
(:mod:`checkpoint_doctor.world.load`), ``history`` and ``apply`` itself read it from here, below
the planner and the executor (issue 35: no step back up).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from checkpoint_doctor.digest import sha256_hex
from checkpoint_doctor.errors import CheckpointDoctorError, JournalError
from checkpoint_doctor.parsing.documents import MAX_DOCUMENT_BYTES
from checkpoint_doctor.reading.journal import (
    APPLIED,
    FAILED,
    INTERRUPTED,
    JOURNAL,
    LISTING_AFTER,
    PARTLY_UNDONE,
    PLAN,
    Event,
    JournalRecord,
    list_applies,
    read_jsonl,
    tool_urls,
)
from checkpoint_doctor.reading.layout import Area
from checkpoint_doctor.reading.storage import Storage

#: The plan format this version reads back (``checkpoint_doctor.planning.plan.FORMAT_VERSION``;
#: tests/execution/test_history_reader.py holds the two equal).
PLAN_FORMAT_VERSION = 2

#: The step kinds that create a file (``Step.creates`` of ``checkpoint_doctor.planning.steps``:
#: ``copy`` and ``write``; tests/execution/test_history_reader.py holds the two equal).
CREATING_KINDS = frozenset({"copy", "write"})


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
            journal = JournalRecord.load(open_storage(url[: -len(JOURNAL)].rstrip("/")))
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


def steps_done(journal: JournalRecord) -> int | None:
    """Return how many steps the apply did, as its journal counts them: its end event's, else (a
    process killed mid-apply says nothing) the last progress it recorded, at least that many."""
    for kind in (Event.APPLIED, Event.FAILED, Event.INTERRUPTED, Event.PROGRESS):
        event = journal.last(kind)
        if event is not None:
            value = event.get("done" if kind == Event.PROGRESS else "steps_done")
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return 0 if journal.first(Event.BACKED_UP) is not None else None


def unfinished_note(journal: JournalRecord) -> str:
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
            journal = JournalRecord.load(location)
            if journal.state != APPLIED:
                row = _unfinished(journal, entry)
                if row is not None:
                    unfinished.append(row)
                continue
            created = created_paths(location.read(PLAN, max_bytes=MAX_DOCUMENT_BYTES))
            for row in read_jsonl(location, LISTING_AFTER):
                if isinstance(row, list) and len(row) == 3 and row[0] in created and row[2] is not None:
                    out.add((str(row[0]), row[2]))
    return frozenset(out), tuple(unfinished)


def created_paths(data: bytes) -> frozenset[str]:
    """Return the checkpoint paths the steps of an applied plan file create (``copy`` and
    ``write`` steps on the checkpoint's area). Pure.

    The plan is the one ``apply`` wrote beside its journal: of this version's format and with the
    id its content hashes to (as :meth:`checkpoint_doctor.planning.plan.RepairPlan.from_dict`
    checks: its body's canonical JSON, sorted keys, no spaces), else it says nothing.

    Raises:
        JournalError: not UTF-8 JSON, another format version, an id that does not match, or a
            step that is not an object.
    """
    try:
        plan = json.loads(data.decode("utf-8"))
    except ValueError as exc:
        raise JournalError(f"plan is not JSON: {exc}") from exc
    if not isinstance(plan, dict) or plan.get("format_version") != PLAN_FORMAT_VERSION:
        raise JournalError("not a plan of this version's format")
    body = {k: v for k, v in plan.items() if k != "plan_id"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if plan.get("plan_id") != sha256_hex(canonical.encode())[:16]:
        raise JournalError("plan_id does not match the plan's content")
    steps = plan.get("steps", ())
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise JournalError("malformed plan: its steps are not objects")
    return frozenset(
        str(s.get("path"))
        for s in steps
        if s.get("kind") in CREATING_KINDS and s.get("area", Area.CHECKPOINT) == Area.CHECKPOINT
    )


def _unfinished(journal: JournalRecord, entry: dict[str, Any]) -> dict[str, Any] | None:
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


__all__ = [
    "CREATING_KINDS",
    "PLAN_FORMAT_VERSION",
    "apply_history",
    "created_paths",
    "own_writes",
    "steps_done",
    "tool_record",
    "unfinished_note",
]
