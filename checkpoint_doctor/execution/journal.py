"""The apply journal: a JSON Lines record of every step, kept beside the backups.

Object stores cannot append, so the journal object is rewritten whole after every event (it is
small); on local disk the rewrite is a temp file plus ``os.replace``, so a crash never leaves a
torn journal. Events, in order: ``begin`` (the plan's steps), ``backup`` (one per saved file, with
size and sha256, after a read-back check), ``backed-up``, ``step`` (one per change made),
``applied`` (the listing after the change, for undo's "changed since" check), then ``undo-begin``,
``restored``/``removed``, ``undone``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from checkpoint_doctor.errors import JournalError, StorageError
from checkpoint_doctor.storage import CheckpointStore

JOURNAL = "journal.jsonl"
PLAN = "plan.json"
FILES = "files"


def backup_path(area: str, path: str) -> str:
    """Return where the backup of (area, path) lives below the backup root."""
    return f"{FILES}/{area}/{path}"


@dataclass
class Journal:
    """An open journal in a backup location."""

    store: CheckpointStore
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def url(self) -> str:
        """Return the journal's URL."""
        return self.store.url_of(JOURNAL)

    def append(self, event: dict[str, Any]) -> None:
        """Record one event durably (rewrites the journal object).

        Raises:
            StorageError: the journal could not be written.
        """
        self.events.append(event)
        text = "".join(json.dumps(e, sort_keys=True) + "\n" for e in self.events)
        self.store.write(JOURNAL, text.encode())

    def first(self, kind: str) -> dict[str, Any] | None:
        """Return the first event of a kind."""
        return next((e for e in self.events if e.get("event") == kind), None)

    def all(self, kind: str) -> list[dict[str, Any]]:
        """Return every event of a kind."""
        return [e for e in self.events if e.get("event") == kind]

    @staticmethod
    def load(store: CheckpointStore) -> Journal:
        """Read a journal from a backup location.

        Raises:
            JournalError: missing or unreadable journal.
        """
        try:
            data = store.read(JOURNAL)
        except StorageError as exc:
            raise JournalError(f"cannot read the journal {store.url_of(JOURNAL)}: {exc.reason}", hint="pass the journal.jsonl that 'apply' printed") from exc
        events = []
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                events.append(json.loads(line))
            except ValueError as exc:
                raise JournalError(f"journal {store.url_of(JOURNAL)} line {n} is not JSON") from exc
        journal = Journal(store, events)
        if journal.first("begin") is None:
            raise JournalError(f"journal {store.url_of(JOURNAL)} has no 'begin' event")
        return journal
