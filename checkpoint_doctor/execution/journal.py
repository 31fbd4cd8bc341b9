"""The apply journal and what sits beside it in a backup location: its writer. The record's names
and its reader are :mod:`checkpoint_doctor.reading.journal` (a verdict reads them from below).

A backup location (by default ``<checkpoint>.checkpoint-doctor/<plan-id>/``) holds:

* ``journal.jsonl``: the events, JSON Lines. Created exclusively (a second apply of the same plan
  can never overwrite a first one's record), then rewritten whole after each event (object stores
  cannot append; on local disk the rewrite is a temp file plus ``os.replace``, so a crash never
  leaves a torn journal). Events are few whatever the plan's size, so the rewrites stay linear:
  ``begin``, ``backed-up`` (the backups manifest's digest), ``progress`` (every
  :data:`PROGRESS_EVERY` steps), ``applied`` or ``failed``, then ``undo-begin`` and ``undone``.
* ``plan.json``: the plan applied (its steps are what undo reverses).
* ``backups.jsonl``: one line per saved file (step index, area, path, size, sha256), written once
  after every backup was read back and verified.
* ``listing-before.jsonl`` / ``listing-after.jsonl``: every checkpoint file (path, size, ETag or
  mtime) before the first change and after the last, for undo's "changed since" check;
  ``dirs-before.jsonl``: the directories before (undo removes those the apply created).
* ``files/<area>/<path>``: the saved files.

The tool directory ``<checkpoint>.checkpoint-doctor/`` also holds ``applies.jsonl``, the list of every
apply of that checkpoint (wherever its backups went), rewritten only under the checkpoint's lock.
"""

from __future__ import annotations

import json
from typing import Any

from checkpoint_doctor.digest import sha256_hex
from checkpoint_doctor.errors import TargetExistsError
from checkpoint_doctor.model import Listing
from checkpoint_doctor.reading.journal import (
    APPLIED,
    APPLIES,
    BACKUPS,
    DIRS_BEFORE,
    FAILED,
    FILES,
    INTERRUPTED,
    JOURNAL,
    LISTING_AFTER,
    LISTING_BEFORE,
    MAX_RECORD_BYTES,
    PARTLY_UNDONE,
    PLAN,
    TOOL_SUFFIX,
    UNDONE,
    Event,
    JournalRecord,
    backup_path,
    list_applies,
    numbered_rows,
    read_jsonl,
    tool_url,
    tool_urls,
)
from checkpoint_doctor.reading.storage import Storage

PROGRESS_EVERY = 256


def jsonl(rows: list[Any]) -> bytes:
    """Return rows as JSON Lines."""
    return "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows).encode()


def listing_rows(listing: Listing) -> list[list[Any]]:
    """Return a listing as rows ``[path, size, ETag or mtime]``."""
    return [[f.path, f.size, f.etag or f.mtime_ms] for f in listing.files]


class Journal(JournalRecord):
    """An open journal in a backup location, written by ``apply`` and ``undo`` (read back with
    :meth:`~checkpoint_doctor.reading.journal.JournalRecord.load`)."""

    @staticmethod
    def create(store: Storage, begin: dict[str, Any]) -> Journal:
        """Create the journal with its ``begin`` event, exclusively.

        Raises:
            TargetExistsError: the location already holds a journal.
            StorageError: it could not be written.
        """
        journal = Journal(store, [begin])
        store.write_exclusive(JOURNAL, jsonl(journal.events))
        return journal

    def append(self, event: dict[str, Any]) -> None:
        """Record one event durably (rewrites the journal object).

        Raises:
            StorageError: the journal could not be written.
        """
        # Kept only once written: an event whose write failed must not ride along with the next
        # one (an 'undone' that failed, then 'undo-failed', would read as undone).
        events = [*self.events, event]
        self.store.write(JOURNAL, jsonl(events))
        self.events = events

    def write_once(self, name: str, data: bytes) -> str:
        """Write a tool-owned file of this backup location and return its sha256 (the journal
        records it: undo trusts no file beside the journal whose digest differs)."""
        self.store.write(name, data)
        return sha256_hex(data)


def record_apply(tool: Storage, entry: dict[str, Any]) -> None:
    """Add an apply to the checkpoint's list (call only while holding the checkpoint's lock)."""
    rows = read_jsonl(tool, APPLIES) if tool.exists(APPLIES) else []
    tool.write(APPLIES, jsonl([*rows, entry]))


def free_location(tool: Storage, plan_id: str) -> Storage:
    """Return the first default backup location of a plan without a journal: ``<plan-id>``, then
    ``<plan-id>-2``, ... (an apply, undone, may be applied again)."""
    n = 1
    while True:
        name = plan_id if n == 1 else f"{plan_id}-{n}"
        if not tool.exists(f"{name}/{JOURNAL}"):
            return tool.child(name)
        n += 1


__all__ = [
    "APPLIED",
    "APPLIES",
    "BACKUPS",
    "DIRS_BEFORE",
    "FAILED",
    "FILES",
    "INTERRUPTED",
    "JOURNAL",
    "LISTING_AFTER",
    "LISTING_BEFORE",
    "MAX_RECORD_BYTES",
    "PARTLY_UNDONE",
    "PLAN",
    "PROGRESS_EVERY",
    "TOOL_SUFFIX",
    "UNDONE",
    "Event",
    "Journal",
    "TargetExistsError",
    "backup_path",
    "free_location",
    "jsonl",
    "list_applies",
    "listing_rows",
    "numbered_rows",
    "read_jsonl",
    "record_apply",
    "tool_url",
    "tool_urls",
]
