"""Undo an apply: restore exactly what it changed, from its journal and verified backups.

Undo works from the plan's steps and the verified backups and checks the real state of every file
(:mod:`~checkpoint_doctor.execution.undo_checks`), so it also completes an apply that died between a
change and its journal event, and an undo that was killed: running it again finishes it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from checkpoint_doctor.errors import (
    CheckpointDoctorError,
    StorageError,
    UndoFailedError,
    UndoRefusedError,
)
from checkpoint_doctor.execution.area_io import AreaIO, StoreOpener
from checkpoint_doctor.execution.backup import load_backups, saved_bytes, saved_ownership
from checkpoint_doctor.execution.journal import (
    DIRS_BEFORE,
    Event,
    Journal,
    backup_path,
    read_jsonl,
    tool_urls,
)
from checkpoint_doctor.execution.lock import CheckpointLock
from checkpoint_doctor.execution.undo_checks import (
    applied_plan,
    changed_since,
    check_location,
    check_moved,
    digest_checked,
    listing_before,
    refuse_changes,
)
from checkpoint_doctor.planning.steps import Area, Key, Step
from checkpoint_doctor.reading.storage import Storage
from checkpoint_doctor.reading.storage.base import Ownership


@dataclass(frozen=True)
class UndoResult:
    """What undo did."""

    journal_url: str
    restored: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "journal": self.journal_url,
            "restored": list(self.restored),
            "removed": list(self.removed),
            "already_as_before": list(self.unchanged),
        }


@dataclass(frozen=True)
class _Undo:
    """One thing undo does: ``restore``/``replace`` (write ``data`` back, with its old mtime, mode
    and owner), ``settle`` (the bytes are back: give back the mtime, mode and owner), ``remove``
    (a created file) or ``make-dir``. ``link``: the saved file was a symbolic link to this target,
    which still holds the saved bytes: ``restore``/``replace`` create the link again."""

    action: str
    step: Step
    data: bytes | None = None
    mtime_ms: int | None = None
    owner: Ownership | None = None
    link: str | None = None


def _link_back(
    journal: Journal, key: Key, info: dict[str, Any], saved: bytes, force: bool, io: AreaIO
) -> str | None:
    """Return the link to create again for a saved symbolic link, or None when its target no longer
    holds the saved bytes (a conflict; with ``force``, refused: undo never writes through a link,
    whose target may be no file of this query)."""
    link = str(info["link"])
    if io.link_holds(*key, link, saved):
        return link
    if force:
        raise UndoRefusedError(
            f"{key[1]} was a link to {link}, which no longer holds what the apply saved; undo does not "
            f"write through a link (its target may be another query's file); nothing was restored",
            hint=f"put back {link} from {journal.store.url_of(backup_path(*key))}, then undo again",
        )
    return None


def _undo_actions(
    journal: Journal,
    steps: tuple[Step, ...],
    backups: dict[int, dict[str, Any]],
    existed: set[str],
    io: AreaIO,
    force: bool,
    certain: int | None = None,
) -> tuple[list[_Undo], list[str], list[str]]:
    """Decide, backwards, what undo does for every step; returns (actions, conflicts, unchanged).
    ``existed``: the checkpoint files before the apply (a created file is removed only if the
    apply made it: it was not there before, or the plan saved it first). ``certain``: the steps
    before it are the journal's; a file a later step would have created is removed only if it is
    proven the apply's (:meth:`AreaIO.created_here`), never for its bytes alone (None: no proof is
    asked, a journal of an older version)."""
    # The first backup of each path: what a later step that recreates the path replaced.
    originals: dict[Key, dict[str, Any]] = {}
    for index in sorted(backups):
        originals.setdefault((backups[index]["area"], backups[index]["path"]), backups[index])
    # What each touched path holds as the undo proceeds backwards (a path may be quarantined and
    # then rewritten by one plan: undo removes the rewrite, then restores the original).
    state: dict[Key, bytes | None] = {}
    actions: list[_Undo] = []
    conflicts: list[str] = []
    unchanged: list[str] = []
    for i in reversed(range(len(steps))):
        step = steps[i]
        key = step.key
        if key is None:
            continue
        if key not in state:
            state[key] = None if step.on_directory else io.current(*key)
        info = backups.get(i) or originals.get(key)
        saved = saved_bytes(journal, info)
        decision = step.undo_action(state[key], saved, force)
        if decision.conflict:
            conflicts.append(key[1])
        if decision.action == "remove" and key[0] == Area.CHECKPOINT and key[1] in existed and info is None:
            raise UndoRefusedError(
                f"the plan beside {journal.url} created {key[1]}, which was there before the apply "
                "and was never saved; nothing was restored",
                hint="undo only with the plan.json the apply wrote",
            )
        # A kill left no word of this step: the file's bytes may be a live writer's with the same
        # content (Spark's stateless commits are identical), so only a temp file of the create with
        # its inode proves it is the apply's (issue 31). On an object store nothing can prove it:
        # the bytes decide there, as before.
        unproven = decision.action == "remove" and step.creates and certain is not None and i >= certain
        if unproven and io.created_here(*key) is False:
            conflicts.append(f"{key[1]} (not provably the apply's: kept)")
            continue
        mtime = info.get("mtime_ms") if info is not None and step.needs_backup() else None
        owner = saved_ownership(info) if step.needs_backup() else None
        if decision.action == "none":
            unchanged.append(key[1])
            if saved is not None and step.needs_backup() and state[key] == saved:
                # The bytes are back (an undo killed after restoring them): their time and owner too.
                actions.append(_Undo("settle", step, None, mtime, owner))
            continue
        link = None
        if (
            decision.action in ("restore", "replace")
            and info is not None
            and isinstance(info.get("link"), str)
        ):
            assert saved is not None
            link = _link_back(journal, key, info, saved, force, io)
            if link is None:
                conflicts.append(f"{key[1]} (a link to {info['link']}, which no longer holds what was saved)")
                continue
        actions.append(_Undo(decision.action, step, decision.data, mtime, owner, link))
        state[key] = decision.data if decision.action in ("restore", "replace") else None
    return actions, conflicts, unchanged


@dataclass
class _Progress:
    """What an undo did so far (a failure names it)."""

    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    done: int = 0


def _perform(actions: list[_Undo], io: AreaIO, progress: _Progress) -> None:
    for undo in actions:
        area, path = undo.step.key  # type: ignore[misc]
        if undo.action == "make-dir":
            io.make_dir(area, path)
        elif undo.action == "settle":
            io.set_mtime(area, path, undo.mtime_ms)
            io.set_owner(area, path, undo.owner)
        elif undo.action == "remove":
            io.delete(area, path)
            progress.removed.append(path)
        else:
            assert undo.data is not None
            if undo.action == "replace":
                io.delete(area, path)
            if undo.link is not None:
                io.relink(area, path, undo.link)  # the target was never changed: the link is back
            else:
                io.restore(area, path, undo.data, undo.owner)
                io.set_mtime(area, path, undo.mtime_ms)
            progress.restored.append(path)
        progress.done += 1


def _remove_created_dirs(journal: Journal, steps: tuple[Step, ...], io: AreaIO) -> None:
    """Remove the directories the apply created for new files, now empty again (local disk)."""
    if not journal.store.exists(DIRS_BEFORE):
        return
    recorded = journal.first(Event.RECORDED) or {}
    digest_checked(journal, DIRS_BEFORE, recorded.get("dirs_before_sha256"), "directory listing")
    before = set(read_jsonl(journal.store, DIRS_BEFORE))
    created: set[str] = set()
    for step in steps:
        if step.creates and step.key is not None and step.key[0] != Area.SINK:
            parent = step.key[1].rpartition("/")[0]
            while parent and parent not in before:
                created.add(parent)
                parent = parent.rpartition("/")[0]
    for path in sorted(created, key=lambda d: (-d.count("/"), d)):
        with contextlib.suppress(StorageError):  # not empty: something else is there now, keep it
            io.remove_dir(Area.CHECKPOINT, path)


def ran_steps(journal: Journal, total: int) -> int:
    """Return how many of the plan's steps, from the first, the apply may have carried out: all
    after ``applied``, or after an apply killed without a word (undo then checks every file's real
    state); the count its ``failed`` or ``interrupted`` event gives otherwise (an older journal's
    event without it: all)."""
    if journal.first(Event.APPLIED) is not None:
        return total
    end = journal.last(Event.FAILED) or journal.last(Event.INTERRUPTED)
    ran = end.get("ran") if end is not None else None
    if isinstance(ran, int) and not isinstance(ran, bool) and ran >= 0:
        return min(ran, total)
    return total


def certain_steps(journal: Journal, total: int) -> int | None:
    """Return how many steps, from the first, the journal proves the apply carried out (their
    files are its own): all once applied; those its failed or interrupted event counts (not a
    step that stopped without knowing whether it changed its file); the last progress count after
    a kill. None: the journal is older than the kept temp files that prove a create (no proof is
    asked of it)."""
    begin = journal.first(Event.BEGIN) or {}
    if journal.first(Event.APPLIED) is not None or not begin.get("keeps_temps"):
        return None if journal.first(Event.APPLIED) is None else total
    end = journal.last(Event.FAILED) or journal.last(Event.INTERRUPTED)
    if end is not None and isinstance(end.get("ran"), int):
        if end.get("stopped_step") is not None and end.get("stopped_changed") is None:
            return int(end.get("steps_done") or 0)
        return int(end["ran"])
    progress = journal.last(Event.PROGRESS)
    done = progress.get("done") if progress is not None else None
    return done if isinstance(done, int) and not isinstance(done, bool) else 0


def _undo_failed(journal: Journal, exc: BaseException, progress: _Progress, total: int) -> UndoFailedError:
    # If even this fails, the undo-begin event already says an undo started (history: partly undone).
    with contextlib.suppress(StorageError):
        journal.append({"event": Event.UNDO_FAILED, "error": str(exc), "done": progress.done, "of": total})
    return UndoFailedError(
        f"undo of {journal.url} failed part way ({exc}); the checkpoint is PARTLY restored "
        f"({progress.done} of {total} change(s) undone)",
        hint=f"fix the cause, then run again: checkpoint-doctor undo {journal.url}  (it finishes what this one started)",
    )


def undo_journal(
    journal_store: Storage,
    open_storage: StoreOpener,
    *,
    force: bool = False,
    now_ms: int | None = None,
    moved_to: str | None = None,
) -> UndoResult:
    """Restore exactly what an apply changed, from its journal and backups (see module docstring).

    Undo trusts nothing beside the journal it cannot verify: the journal must be in the tool
    directory of the checkpoint it names (or in its list of applies), the plan, the backups manifest
    and the listings must have the sha256 the journal recorded, every backup row must be a step's,
    and every saved file its recorded sha256. An undo that was killed or failed is finished by
    running it again (its own temp files, and an apply's, are removed).

    ``moved_to``: the checkpoint was moved (with its tool directory) since the apply; undo restores
    into it only if the journal sits in its tool directory and its files are the ones the journal
    recorded (``--force`` does not lift that check).

    Raises:
        JournalError: the journal or its plan is unreadable.
        UndoRefusedError: already undone; a file beside the journal is not what the apply wrote;
            or (without ``force``) the checkpoint changed since the apply, naming the files; or a
            backup is corrupt. Nothing was restored.
        UndoFailedError: a failure after the restoring began (the checkpoint is partly restored).
        LockHeldError: another apply or undo of the checkpoint is running.
    """
    journal = Journal.load(journal_store)
    begin = journal.first(Event.BEGIN)
    assert begin is not None
    if moved_to is None:
        checkpoint = open_storage(begin["checkpoint"])
        check_location(journal, checkpoint, open_storage)
    else:
        checkpoint = open_storage(moved_to)
        check_moved(journal, checkpoint, open_storage)
    sink = open_storage(begin["sink"]) if begin.get("sink") else None
    with CheckpointLock.acquire(open_storage(tool_urls(checkpoint)[0]), f"undo {journal.url}", now_ms):
        journal = Journal.load(journal_store)  # as it is now that no one else writes it
        if journal.last(Event.UNDONE) is not None:
            raise UndoRefusedError(f"{journal.url} was already undone", hint="nothing to do")
        if journal.first(Event.BACKED_UP) is None:
            # No change is made before every backup is verified and recorded.
            raise UndoRefusedError(
                f"{journal.url}: the apply stopped before it changed anything", hint="nothing to do"
            )
        every = applied_plan(journal).executable_steps
        # Only the steps the apply may have carried out are undone: a later step's file is not the
        # apply's, whatever its bytes (issue 31: a live writer's commits/1, identical to commits/0,
        # made the apply's create fail, and undo removed it as the apply's own).
        steps = every[: ran_steps(journal, len(every))]
        if not steps:
            raise UndoRefusedError(
                f"{journal.url}: the apply stopped before it changed anything", hint="nothing to do"
            )
        backups = {i: row for i, row in load_backups(journal, every).items() if i < len(steps)}
        resuming = journal.last(Event.UNDO_BEGIN) is not None
        if not force or moved_to is not None:
            # A moved checkpoint is proven the apply's by its files: even --force needs that proof.
            changed = changed_since(journal, checkpoint, steps, resuming)
            if moved_to is None:
                refuse_changes(changed, "the checkpoint changed since the apply")
            else:
                refuse_changes(
                    changed,
                    f"{checkpoint.url} is not what {begin['checkpoint']} was after the apply (files differ)",
                    "nothing was restored; name the checkpoint the journal's tool directory was moved with",
                )
        existed = {row[0] for row in listing_before(journal) if isinstance(row, list) and row}
        io = AreaIO(checkpoint, sink)
        certain = certain_steps(journal, len(every))
        actions, conflicts, unchanged = _undo_actions(journal, steps, backups, existed, io, force, certain)
        if not force:
            refuse_changes(conflicts, "files changed since the apply")
        moved = {"checkpoint": checkpoint.url} if moved_to is not None else {}
        journal.append({"event": Event.UNDO_BEGIN, "force": force, "at_ms": now_ms, **moved})
        progress = _Progress()
        try:
            _perform(actions, io, progress)
            for key in sorted({s.key for s in every if s.key is not None}):
                io.remove_temps(*key)
            _remove_created_dirs(journal, steps, io)
            journal.append(
                {"event": Event.UNDONE, "restored": len(progress.restored), "removed": len(progress.removed)}
            )
        except (CheckpointDoctorError, OSError) as exc:
            raise _undo_failed(journal, exc, progress, len(actions)) from exc
    return UndoResult(journal.url, tuple(progress.restored), tuple(progress.removed), tuple(unchanged))
