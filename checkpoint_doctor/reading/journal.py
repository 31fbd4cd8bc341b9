"""The record ``apply`` leaves beside a checkpoint, as a reader sees it: its file names, its events
and states, and the journal read back. Reads only; :mod:`checkpoint_doctor.execution.journal`
writes it.

A backup location (by default ``<checkpoint>.checkpoint-doctor/<plan-id>/``) holds:

* ``journal.jsonl``: the events, JSON Lines: ``begin``, ``backed-up`` (the backups manifest's
  digest), ``progress``, ``applied`` or ``failed``, then ``undo-begin`` and ``undone``.
* ``plan.json``: the plan applied (its steps are what undo reverses).
* ``backups.jsonl``: one line per saved file (step index, area, path, size, sha256).
* ``listing-before.jsonl`` / ``listing-after.jsonl``: every checkpoint file (path, size, ETag or
  mtime) before the first change and after the last; ``dirs-before.jsonl``: the directories before.
* ``files/<area>/<path>``: the saved files.

The tool directory ``<checkpoint>.checkpoint-doctor/`` also holds ``applies.jsonl``, the list of every
apply of that checkpoint (wherever its backups went).

Below the world and the diagnosis (issue 35): a verdict reads the tool's own writes and its
unfinished applies (:mod:`checkpoint_doctor.reading.history`) without importing the executor or
the planner.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, TypeVar

from checkpoint_doctor.enums import TextEnum
from checkpoint_doctor.errors import JournalError, StorageError
from checkpoint_doctor.parsing.documents import MAX_DOCUMENT_BYTES, DocumentError, parse_json_document
from checkpoint_doctor.reading.storage import Storage
from checkpoint_doctor.valueclasses import mutable

JOURNAL = "journal.jsonl"
PLAN = "plan.json"
BACKUPS = "backups.jsonl"
LISTING_BEFORE = "listing-before.jsonl"
LISTING_AFTER = "listing-after.jsonl"
DIRS_BEFORE = "dirs-before.jsonl"
FILES = "files"
APPLIES = "applies.jsonl"
TOOL_SUFFIX = ".checkpoint-doctor"


class Event(TextEnum):
    """The events of a journal, in the order an apply and its undo write them."""

    BEGIN = "begin"
    RECORDED = "recorded"
    BACKED_UP = "backed-up"
    PROGRESS = "progress"
    APPLIED = "applied"
    FAILED = "failed"
    #: Ctrl-C: the process stopped mid-apply, saying how far it got (a kill says nothing).
    INTERRUPTED = "interrupted"
    UNDO_BEGIN = "undo-begin"
    UNDONE = "undone"
    UNDO_FAILED = "undo-failed"


#: The states of an apply, as ``history`` shows them (``partly undone``: an undo began and did not
#: finish, killed or failed; running undo again finishes it).
APPLIED, UNDONE, FAILED, INTERRUPTED = "applied", "undone", "failed", "interrupted"
PARTLY_UNDONE = "partly undone"


def backup_path(area: str, path: str) -> str:
    """Return where the backup of (area, path) lives below the backup root."""
    return f"{FILES}/{area}/{path}"


def tool_url(checkpoint_url: str) -> str:
    """Return the checkpoint's tool directory: a sibling of its root (never inside it)."""
    return checkpoint_url.rstrip("/") + TOOL_SUFFIX


def tool_urls(checkpoint: Storage) -> list[str]:
    """Return the checkpoint's tool directory, then (if it differs) the one beside the path as typed.

    The first is beside the checkpoint's real location (symlinks resolved on local disk; an object
    store's bucket and key are already one name), so every path to one checkpoint shares one lock
    and one history; the second is where applies through a link recorded themselves before.
    """
    protocol, real = checkpoint.resolved_root()
    first = real.rstrip("/") + TOOL_SUFFIX if protocol == "file" else tool_url(checkpoint.url)
    typed = tool_url(checkpoint.url)
    return [first] if typed == first else [first, typed]


#: The bound of a listing or backups manifest (a row per file: ~80 bytes for each of millions).
MAX_RECORD_BYTES = 1024 * 2**20


def numbered_rows(
    store: Storage, name: str, *, max_bytes: int = MAX_RECORD_BYTES, what: str = ""
) -> list[tuple[int, Any]]:
    """Read a JSON Lines file of a backup location, bounded, each line a bounded JSON document;
    return (line number, value) of every non-blank line.

    Raises:
        JournalError: missing, too large, or a line that is not JSON (named ``what`` + URL).
    """
    url = store.url_of(name)
    try:
        data = store.read(name, max_bytes=max_bytes)
    except StorageError as exc:
        raise JournalError(f"cannot read {what}{url}: {exc.reason}") from exc
    rows = []
    for n, line in enumerate(data.splitlines(), start=1):
        if line.strip():
            try:
                rows.append((n, parse_json_document(line)))
            except DocumentError as exc:
                raise JournalError(f"{what}{url} line {n} is not JSON: {exc.reason}") from exc
    return rows


def read_jsonl(store: Storage, name: str, *, max_bytes: int = MAX_RECORD_BYTES) -> list[Any]:
    """Return the values of a JSON Lines file of a backup location (see :func:`numbered_rows`)."""
    return [row for _, row in numbered_rows(store, name, max_bytes=max_bytes)]


def list_applies(tool: Storage) -> list[dict[str, Any]]:
    """Return the recorded applies of a checkpoint, oldest first (empty when there were none)."""
    try:
        return read_jsonl(tool, APPLIES) if tool.exists(APPLIES) else []
    except JournalError:
        return []


J = TypeVar("J", bound="JournalRecord")


@mutable
class JournalRecord:
    """A journal read back from a backup location: its events and the state they say.
    (:class:`checkpoint_doctor.execution.journal.Journal` is the one ``apply`` and ``undo`` write.)"""

    store: Storage
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def url(self) -> str:
        """Return the journal's URL."""
        return self.store.url_of(JOURNAL)

    def first(self, kind: Event) -> dict[str, Any] | None:
        """Return the first event of a kind."""
        return next((e for e in self.events if e.get("event") == kind), None)

    def last(self, kind: Event) -> dict[str, Any] | None:
        """Return the last event of a kind."""
        return next((e for e in reversed(self.events) if e.get("event") == kind), None)

    @property
    def state(self) -> str:
        """Return ``applied``, ``undone``, ``failed`` or ``interrupted`` (no end event: the process died)."""
        if self.last(Event.UNDONE) is not None:
            return UNDONE
        if self.last(Event.UNDO_BEGIN) is not None:
            return PARTLY_UNDONE
        if self.first(Event.APPLIED) is not None:
            return APPLIED
        if self.first(Event.FAILED) is not None:
            return FAILED
        return INTERRUPTED

    @classmethod
    def load(cls: type[J], store: Storage) -> J:
        """Read a journal from a backup location.

        Raises:
            JournalError: missing or unreadable journal.
        """
        if not store.exists(JOURNAL):
            raise JournalError(
                f"no journal at {store.url_of(JOURNAL)}",
                hint="pass the journal.jsonl that 'apply' printed (or see 'checkpoint-doctor history')",
            )
        url = store.url_of(JOURNAL)
        rows = numbered_rows(store, JOURNAL, max_bytes=MAX_DOCUMENT_BYTES, what="journal ")
        for n, event in rows:
            problem = _event_problem(event)
            if problem is not None:
                raise JournalError(f"journal {url} line {n} is not a journal event: {problem}")
        journal = cls(store, [event for _, event in rows])
        if journal.first(Event.BEGIN) is None:
            raise JournalError(f"journal {url} has no 'begin' event")
        return journal


#: The fields undo and history read, per event, and their JSON types (a journal is read back from
#: disk: a hand edit or a foreign file must be an error naming the event, never a crash).
_EVENT_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    Event.BEGIN: {"checkpoint": (str,), "sink": (str, type(None)), "plan_id": (str,)},
    Event.RECORDED: {"listing_before_sha256": (str,), "dirs_before_sha256": (str,)},
    Event.BACKED_UP: {"count": (int,), "sha256": (str,)},
    Event.APPLIED: {"steps_done": (int,)},
}


def _event_problem(event: Any) -> str | None:
    """Return what is wrong with one journal event, or None."""
    if not isinstance(event, dict) or not isinstance(event.get("event"), str):
        return "not an object with an 'event' name"
    for key, kinds in _EVENT_FIELDS.get(event["event"], {}).items():
        if not isinstance(event.get(key), kinds) or isinstance(event.get(key), bool):
            return f"{event['event']!r} without a valid {key!r}"
    return None


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
    "TOOL_SUFFIX",
    "UNDONE",
    "Event",
    "JournalRecord",
    "backup_path",
    "list_applies",
    "numbered_rows",
    "read_jsonl",
    "tool_url",
    "tool_urls",
]
