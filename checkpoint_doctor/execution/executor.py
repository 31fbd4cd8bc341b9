"""Apply a repair plan safely, and undo it. The I/O edge of repairs.

Order of work in :func:`apply_plan` (each stage finishes before the next starts):

1. a fresh snapshot; **every** precondition checked; all failures reported together and nothing
   touched if any fails (``--dry-run`` stops here);
2. the journal's ``begin`` event and a copy of the plan in the backup location (outside the
   checkpoint root, by default ``<root>.checkpoint-doctor/<plan-id>/``);
3. a backup of every file the plan removes (Hadoop ``.crc`` side files are steps of their own), each
   read back and verified by size and sha256; copy sources are verified against the plan's sha256;
4. the steps, in order, each journaled when done; new files are created exclusively (temp name +
   link on file systems, ``If-None-Match: *`` on S3), so a file is never half written or clobbered;
5. the ``applied`` event with the new listing, then a fresh diagnosis.

A failure at any point leaves either the untouched checkpoint (stages 1-3) or one that
:func:`undo_journal` restores: undo works from the plan's steps and the verified backups and checks
the real state of every file, so it also completes an apply that died between a change and its
journal event.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from checkpoint_doctor import __version__
from checkpoint_doctor.diagnosis import DiagnoseOptions, Diagnosis, diagnose
from checkpoint_doctor.errors import JournalError, PlanFormatError, PreconditionFailedError, StorageError
from checkpoint_doctor.execution.journal import JOURNAL, PLAN, Journal, backup_path
from checkpoint_doctor.loading import load_snapshot
from checkpoint_doctor.planning.plan import SINK, RepairPlan, Step
from checkpoint_doctor.planning.preconditions import check_preconditions
from checkpoint_doctor.storage import CheckpointStore

StoreOpener = Callable[[str], CheckpointStore]


def sha256(data: bytes) -> str:
    """Return the hex sha256 of bytes."""
    return hashlib.sha256(data).hexdigest()


def default_backup_url(checkpoint_url: str, plan_id: str) -> str:
    """Return the default backup location: a sibling of the checkpoint root."""
    return f"{checkpoint_url.rstrip('/')}.checkpoint-doctor/{plan_id}"


def _inside(child: str, parent: str) -> bool:
    c, p = child.rstrip("/"), parent.rstrip("/")
    return c == p or c.startswith(p + "/")


@dataclass(frozen=True)
class ApplyResult:
    """What apply did."""

    plan_id: str
    dry_run: bool
    backup_url: str | None
    journal_url: str | None
    steps_done: int
    manual_steps: tuple[str, ...]
    after: Diagnosis | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "plan_id": self.plan_id,
            "dry_run": self.dry_run,
            "backup": self.backup_url,
            "journal": self.journal_url,
            "steps_done": self.steps_done,
            "manual_steps": list(self.manual_steps),
            "after": self.after.to_dict() if self.after is not None else None,
        }


class _Areas:
    def __init__(self, checkpoint: CheckpointStore, sink: CheckpointStore | None) -> None:
        self.checkpoint = checkpoint
        self.sink = sink

    def store(self, area: str) -> CheckpointStore:
        if area == SINK:
            if self.sink is None:
                raise PlanFormatError("the plan changes a sink log but has no sink path")
            return self.sink
        return self.checkpoint


def _content(step: Step, areas: _Areas) -> bytes:
    if step.kind == "write":
        return (step.content or "").encode()
    assert step.source is not None
    data = areas.store(step.area).read(step.source)
    if sha256(data) != step.source_sha256:
        raise PreconditionFailedError((f"{step.source} changed since the plan was made (sha256 differs)",))
    return data


def apply_plan(
    plan: RepairPlan,
    checkpoint: CheckpointStore,
    *,
    sink: CheckpointStore | None,
    backup: CheckpointStore,
    now_ms: int | None,
    dry_run: bool = False,
    confirm: Callable[[RepairPlan], bool] | None = None,
    diagnose_options: DiagnoseOptions | None = None,
) -> ApplyResult:
    """Apply a plan (see module docstring).

    Raises:
        PreconditionFailedError: with every failed precondition; nothing was changed.
        PlanFormatError: the backup location is inside the checkpoint, or the plan needs a sink.
        JournalError: the backup location already holds a journal.
        StorageError: a storage failure during the apply (the journal says how far it got).
    """
    manual = tuple(s.command or "" for s in plan.steps if s.kind == "run")
    if _inside(backup.url, checkpoint.url) or (sink is not None and _inside(backup.url, sink.url)):
        raise PlanFormatError(f"backup location {backup.url} is inside the checkpoint or sink", hint="choose --backup-dir outside them")
    executable = plan.executable_steps
    if not executable:
        return ApplyResult(plan.plan_id, dry_run, None, None, 0, manual)
    if any(s.area == SINK for s in executable) and sink is None:
        raise PlanFormatError("the plan changes the file sink log but no sink is reachable", hint="the plan records the sink path")
    snapshot = load_snapshot(checkpoint, sink_store=sink)
    failures = check_preconditions(plan, snapshot, now_ms)
    if failures:
        raise PreconditionFailedError(failures)
    if dry_run:
        return ApplyResult(plan.plan_id, True, backup.url, None, 0, manual)
    if confirm is not None and not confirm(plan):
        return ApplyResult(plan.plan_id, True, backup.url, None, 0, manual)
    if backup.exists(JOURNAL):
        raise JournalError(
            f"{backup.url_of(JOURNAL)} already exists: this plan was applied before",
            hint=f"undo it with 'checkpoint-doctor undo {backup.url_of(JOURNAL)}' or choose another --backup-dir",
        )
    areas = _Areas(checkpoint, sink)
    journal = Journal(backup)
    journal.append(
        {
            "event": "begin",
            "plan_id": plan.plan_id,
            "tool_version": __version__,
            "checkpoint": checkpoint.url,
            "sink": sink.url if sink is not None else None,
            "steps": [s.to_dict() for s in executable],
        }
    )
    backup.write(PLAN, plan.to_json().encode())
    contents: dict[int, bytes] = {}
    for i, step in enumerate(executable):
        if step.kind == "quarantine":
            data = areas.store(step.area).read(step.path)
            target = backup_path(step.area, step.path)
            backup.write(target, data)
            copy = backup.read(target)
            if len(copy) != len(data) or sha256(copy) != sha256(data):
                raise StorageError(backup.url_of(target), "verify", "the backup copy differs from the original")
            journal.append({"event": "backup", "index": i, "area": step.area, "path": step.path, "size": len(data), "sha256": sha256(data)})
        else:
            contents[i] = _content(step, areas)
    journal.append({"event": "backed-up"})
    for i, step in enumerate(executable):
        store = areas.store(step.area)
        if step.kind == "quarantine":
            store.delete(step.path)
            journal.append({"event": "step", "index": i, "kind": step.kind, "area": step.area, "path": step.path})
        else:
            store.write_exclusive(step.path, contents[i])
            journal.append({"event": "step", "index": i, "kind": step.kind, "area": step.area, "path": step.path, "sha256": sha256(contents[i])})
    after_snapshot = load_snapshot(checkpoint, sink_store=sink)
    journal.append(
        {
            "event": "applied",
            "listing": [[f.path, f.size, f.etag or f.mtime_ms] for f in after_snapshot.files],
        }
    )
    opts = diagnose_options or DiagnoseOptions(spark=plan.spark, mode=plan.mode, live_window_s=0)
    after = diagnose(after_snapshot, opts)
    return ApplyResult(plan.plan_id, False, backup.url, journal.url, len(executable), manual, after)


# ------------------------------------------------------------------------------------------- undo


@dataclass(frozen=True)
class UndoResult:
    """What undo did."""

    journal_url: str
    restored: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {"journal": self.journal_url, "restored": list(self.restored), "removed": list(self.removed), "already_as_before": list(self.unchanged)}


def _changed_since_apply(journal: Journal, checkpoint: CheckpointStore) -> list[str]:
    applied = journal.first("applied")
    if applied is None:
        return []
    recorded = {p: (size, stamp) for p, size, stamp in applied["listing"]}
    current = {f.path: (f.size, f.etag or f.mtime_ms) for f in checkpoint.list_tree().files}
    changed = [p for p in sorted(set(recorded) | set(current)) if recorded.get(p) != current.get(p)]
    return changed


def undo_journal(
    journal_store: CheckpointStore,
    open_store: StoreOpener,
    *,
    force: bool = False,
) -> UndoResult:
    """Restore exactly what an apply changed, from its journal and backups.

    Raises:
        JournalError: the journal is unreadable; or (without ``force``) the checkpoint changed
            since the apply, naming the files; or a backup is missing or corrupt.
    """
    journal = Journal.load(journal_store)
    begin = journal.first("begin")
    assert begin is not None
    if journal.first("undone") is not None:
        raise JournalError(f"{journal.url} was already undone", hint="nothing to do")
    checkpoint = open_store(begin["checkpoint"])
    sink = open_store(begin["sink"]) if begin.get("sink") else None
    areas = _Areas(checkpoint, sink)
    steps = [Step.from_dict(s) for s in begin["steps"]]
    backups = {e["index"]: e for e in journal.all("backup")}
    if not force:
        changed = _changed_since_apply(journal, checkpoint)
        if changed:
            shown = ", ".join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else "")
            raise JournalError(f"the checkpoint changed since the apply: {shown}", hint="nothing was restored; pass --force to undo anyway")
    actions: list[tuple[str, int, Step, bytes | None]] = []
    conflicts: list[str] = []
    unchanged: list[str] = []
    # What each touched path holds as the undo proceeds backwards (a path may be quarantined
    # and then rewritten by one plan: undo removes the rewrite, then restores the original).
    state: dict[tuple[str, str], bytes | None] = {}

    def current_of(step: Step) -> bytes | None:
        key = (step.area, step.path)
        if key not in state:
            store = areas.store(step.area)
            state[key] = store.read(step.path) if store.exists(step.path) else None
        return state[key]

    for i in reversed(range(len(steps))):
        step = steps[i]
        current = current_of(step)
        if step.kind == "quarantine":
            info = backups.get(i)
            if info is None:
                # The backup was never made, so this step never ran.
                unchanged.append(step.path)
                continue
            saved = journal_store.read(backup_path(step.area, step.path))
            if sha256(saved) != info["sha256"]:
                raise JournalError(f"backup of {step.path} is corrupt (sha256 differs)", hint="nothing was restored")
            if current is None:
                actions.append(("restore", i, step, saved))
                state[(step.area, step.path)] = saved
            elif sha256(current) == info["sha256"]:
                unchanged.append(step.path)
            else:
                conflicts.append(step.path)
                if force:
                    actions.append(("replace", i, step, saved))
                    state[(step.area, step.path)] = saved
        else:
            written = step.content.encode() if step.kind == "write" and step.content is not None else None
            expected = sha256(written) if written is not None else step.source_sha256
            if current is None:
                unchanged.append(step.path)
            elif sha256(current) == expected:
                actions.append(("remove", i, step, None))
                state[(step.area, step.path)] = None
            else:
                conflicts.append(step.path)
                if force:
                    actions.append(("remove", i, step, None))
                    state[(step.area, step.path)] = None
    if conflicts and not force:
        raise JournalError(f"files changed since the apply: {', '.join(conflicts)}", hint="nothing was restored; pass --force to undo anyway")
    journal.append({"event": "undo-begin", "force": force})
    restored, removed = [], []
    for action, i, step, data in actions:
        store = areas.store(step.area)
        if action == "remove":
            store.delete(step.path)
            removed.append(step.path)
            journal.append({"event": "removed", "index": i, "path": step.path})
        else:
            if action == "replace":
                store.delete(step.path)
            assert data is not None
            store.write_exclusive(step.path, data)
            restored.append(step.path)
            journal.append({"event": "restored", "index": i, "path": step.path})
    journal.append({"event": "undone"})
    return UndoResult(journal.url, tuple(restored), tuple(removed), tuple(unchanged))
