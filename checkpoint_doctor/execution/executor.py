"""Apply a repair plan safely, and undo it. The I/O edge of repairs.

Order of work in :func:`apply_plan` (each stage finishes before the next starts), all under the
checkpoint's lock (:mod:`~checkpoint_doctor.execution.lock`, one writer at a time):

1. the plan is verified against a fresh snapshot, not trusted (:func:`verify_plan`): its fingerprint
   must be the live checkpoint's, the planner run again with the plan's recorded request must make
   exactly its steps and preconditions, and every precondition must hold; all problems are reported
   together and nothing is touched (``--dry-run`` stops here, listing every step and file);
2. the journal is created exclusively with its ``begin`` event, beside a copy of the plan and the
   listing before any change, in the backup location (outside the checkpoint root, by default
   ``<root>.checkpoint-doctor/<plan-id>/``), and the apply is added to the checkpoint's history;
3. a backup of every file the plan removes (Hadoop ``.crc`` side files are steps of their own), each
   read back and verified by size and sha256; copy sources are verified against the plan's sha256;
4. the steps, in order (journaled every few hundred); new files are created exclusively (temp name +
   link on file systems, ``If-None-Match: *`` on S3), so a file is never half written or clobbered;
5. the ``applied`` event with the listing afterwards, then a fresh diagnosis.

A failure in stages 1-2 leaves the checkpoint untouched. A failure after the journal exists is
recorded (``failed``) and reported as :class:`ApplyFailedError`, naming the journal and the undo
command: undo works from the plan's steps and the verified backups and checks the real state of
every file, so it also completes an apply that died between a change and its journal event. The
work grows linearly with the plan: one read, one write and one read-back per saved file, one change
per step, and a journal rewritten a bounded number of times.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from checkpoint_doctor import __version__
from checkpoint_doctor.diagnosis import DiagnoseOptions, Diagnosis, diagnose
from checkpoint_doctor.digest import sha256_hex
from checkpoint_doctor.errors import (
    ApplyFailedError,
    CheckpointDoctorError,
    CheckpointNotFoundError,
    JournalError,
    PlanFormatError,
    PlanMismatchError,
    PreconditionFailedError,
    RefusedError,
    StorageError,
    TargetExistsError,
    UndoFailedError,
    UndoRefusedError,
)
from checkpoint_doctor.execution.history import own_writes
from checkpoint_doctor.execution.journal import (
    BACKUPS,
    DIRS_BEFORE,
    FAILED,
    INTERRUPTED,
    JOURNAL,
    LISTING_AFTER,
    LISTING_BEFORE,
    MAX_RECORD_BYTES,
    PARTLY_UNDONE,
    PLAN,
    PROGRESS_EVERY,
    TOOL_SUFFIX,
    Journal,
    backup_path,
    free_location,
    jsonl,
    list_applies,
    listing_rows,
    read_jsonl,
    record_apply,
    tool_url,
    tool_urls,
)
from checkpoint_doctor.execution.lock import CheckpointLock, local_path
from checkpoint_doctor.model import KafkaLive
from checkpoint_doctor.planning import PlanOptions, RepairPlan, plan_repair
from checkpoint_doctor.planning.preconditions import Own, check_kafka, check_preconditions, file_stat
from checkpoint_doctor.planning.steps import CHECKPOINT, SINK, Step, follows
from checkpoint_doctor.reading.pipeline import load_snapshot
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.reading.storage import Storage, translate_error
from checkpoint_doctor.reading.storage.local import Ownership, ownership_of, temp_of

StoreOpener = Callable[[str], Storage]


def default_backup_url(checkpoint_url: str, plan_id: str) -> str:
    """Return the first default backup location of a plan: ``<root>.checkpoint-doctor/<plan-id>``."""
    return f"{tool_url(checkpoint_url)}/{plan_id}"


@dataclass(frozen=True)
class ApplyResult:
    """What apply did (or, for a dry run or a cancelled prompt, would do)."""

    plan_id: str
    dry_run: bool
    backup_url: str | None
    journal_url: str | None
    steps_done: int
    manual_steps: tuple[str, ...]
    after: Diagnosis | None = None
    cancelled: bool = False
    would: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "plan_id": self.plan_id,
            "dry_run": self.dry_run,
            "cancelled": self.cancelled,
            "backup": self.backup_url,
            "journal": self.journal_url,
            "steps_done": self.steps_done,
            "would": list(self.would),
            "manual_steps": list(self.manual_steps),
            "after": self.after.to_dict() if self.after is not None else None,
        }


class _AreaIO:
    """The :class:`~checkpoint_doctor.planning.steps.StepIO` over the checkpoint and sink stores."""

    def __init__(self, checkpoint: Storage, sink: Storage | None) -> None:
        self.checkpoint = checkpoint
        self.sink = sink

    def store(self, area: str) -> Storage:
        if area == SINK:
            if self.sink is None:
                raise PlanFormatError("the plan changes a sink log but has no sink path")
            return self.sink
        return self.checkpoint

    def read(self, area: str, path: str) -> bytes:
        return self.store(area).read(path)

    def exists(self, area: str, path: str) -> bool:
        return self.store(area).stat(path) is not None

    def current(self, area: str, path: str) -> bytes | None:
        store = self.store(area)
        return store.read(path) if store.stat(path) is not None else None

    def delete(self, area: str, path: str) -> None:
        self.store(area).delete(path)

    def create(self, area: str, path: str, data: bytes) -> None:
        # A new file belongs to whoever owns the files beside it (the query's user), with their
        # mode, not to a repair run as root under its umask (issue: root 0600 offsets/30).
        self.store(area).write_exclusive(path, data, like_siblings=True)

    def restore(self, area: str, path: str, data: bytes, owner: Ownership | None) -> None:
        """Create a saved file again with the mode and owner it had (local disk)."""
        if owner is None:
            self.create(area, path, data)
        else:
            self.store(area).write_exclusive(path, data, owner=owner)

    def link_of(self, area: str, path: str) -> str | None:
        """Return what a local path that is a symbolic link points to (as written), or None."""
        full = local_path(self.store(area), path)
        if full is None or not os.path.islink(full):
            return None
        return os.readlink(full)

    def link_holds(self, area: str, path: str, link: str, data: bytes) -> bool:
        """Return whether the file a link at ``path`` would point to holds exactly ``data``."""
        full = local_path(self.store(area), path)
        if full is None:
            return False
        try:
            with open(os.path.join(os.path.dirname(full), link), "rb") as fh:
                return sha256_hex(fh.read(len(data) + 1)) == sha256_hex(data)
        except OSError:
            return False

    def relink(self, area: str, path: str, link: str) -> None:
        """Create the symbolic link ``path`` -> ``link`` again (fails if the name exists)."""
        store = self.store(area)
        full = local_path(store, path)
        assert full is not None
        try:
            os.symlink(link, full)
        except OSError as exc:
            raise translate_error(exc, store.url_of(path), "link") from exc

    def ownership(self, area: str, path: str) -> Ownership | None:
        """Return the mode and owner of a local file (None on object stores)."""
        full = local_path(self.store(area), path)
        return ownership_of(full) if full is not None else None

    def remove_temps(self, area: str, path: str) -> list[str]:
        """Delete the temp files a killed apply or undo left beside a path it changed (the tool's
        own: ``.<name>.<uuid>.cdtmp``, local disk only); return them."""
        store = self.store(area)
        temps = getattr(store, "temps_beside", None)
        if temps is None or local_path(store, path) is None:
            return []
        found = list(temps(path))
        for temp in found:
            with contextlib.suppress(CheckpointNotFoundError):
                store.delete(temp)
        return found

    def set_mtime(self, area: str, path: str, mtime_ms: int | None) -> None:
        """Give a restored local file back its modification time (object stores: the ETag of the
        same bytes is the same), so the checkpoint's fingerprint is as before the apply."""
        store = self.store(area)
        full = local_path(store, path)
        # A link's target was never changed by the apply (it removed the link): not touched here.
        if full is not None and mtime_ms is not None and not os.path.islink(full):
            ns = mtime_ms * 1_000_000
            try:
                os.utime(full, ns=(ns, ns))
            except OSError as exc:
                raise translate_error(exc, store.url_of(path), "set the time of") from exc

    def set_owner(self, area: str, path: str, owner: Ownership | None) -> None:
        """Give a restored local file back its mode and owner."""
        store = self.store(area)
        full = local_path(store, path)
        # os.chmod follows a link: it would change a file outside the checkpoint.
        if full is not None and owner is not None and not os.path.islink(full):
            mode, uid, gid = owner
            try:
                with contextlib.suppress(PermissionError):
                    os.chown(full, uid, gid, follow_symlinks=False)
                os.chmod(full, mode)
            except OSError as exc:
                raise translate_error(exc, store.url_of(path), "set the owner of") from exc

    def remove_dir(self, area: str, path: str) -> None:
        store = self.store(area)
        full = local_path(store, path)
        if full is not None:
            try:
                os.rmdir(full)
            except OSError as exc:
                raise translate_error(exc, store.url_of(path), "remove directory") from exc

    def make_dir(self, area: str, path: str) -> None:
        store = self.store(area)
        if local_path(store, path) is not None:
            store.makedirs(path)


# ------------------------------------------------------------------------------------ verification


def _structure_problems(plan: RepairPlan, snapshot: CheckpointSnapshot) -> list[str]:
    """Duplicate or conflicting steps, and files planned where a directory is."""
    problems: list[str] = []
    seen: dict[tuple[str, str], list[Step]] = {}
    for step in plan.executable_steps:
        key = step.key
        if key is None:
            continue
        before = seen.setdefault(key, [])
        if step in before:
            problems.append(f"step '{step.describe()}' appears twice")
        elif not follows(before, step):
            problems.append(
                f"steps conflict on {key[0]}:{key[1]} ({before[-1].describe()}, then {step.describe()})"
            )
        before.append(step)
        if step.creates and key[0] != SINK and key[1] in snapshot.dirs:
            problems.append(f"step '{step.describe()}' writes {key[1]}, which is a directory here")
    return problems


def _first_difference(mine: tuple[Any, ...], theirs: tuple[Any, ...], what: str) -> str | None:
    for i, (a, b) in enumerate(zip(mine, theirs, strict=False)):
        if a != b:
            return f"{what} {i + 1} is '{a.describe()}', the planner makes '{b.describe()}'"
    if len(mine) != len(theirs):
        return f"the plan has {len(mine)} {what}s, the planner makes {len(theirs)}"
    return None


def verify_plan(
    plan: RepairPlan,
    snapshot: CheckpointSnapshot,
    now_ms: int | None,
    own: Own = frozenset(),
    kafka: KafkaLive | None = None,
) -> None:
    """Refuse a plan unless it is what the planner makes for this live snapshot, and every
    precondition holds. ``kafka``: the topics' positions read again from the broker the plan's
    Kafka preconditions name (checked first: a topic that moved on says so, not "the plan differs").

    Raises:
        PlanMismatchError: the fingerprint differs, or the steps/preconditions are not the planner's.
        PreconditionFailedError: with every failed precondition.
    """
    problems = _structure_problems(plan, snapshot)
    if snapshot.root.rstrip("/") != plan.checkpoint.rstrip("/"):
        problems.append(f"the plan is for {plan.checkpoint}, not {snapshot.root}")
    if snapshot.fingerprint() != plan.snapshot_fingerprint:
        # The failed preconditions say what changed; the fingerprint also catches the rest.
        changed = check_preconditions(plan.preconditions, snapshot, None)
        if changed and not problems:
            raise PreconditionFailedError(("the checkpoint changed since the plan was made", *changed))
        detail = "; ".join(changed) if changed else "files were added, removed or modified"
        problems.append(f"the checkpoint changed since the plan was made ({detail})")
    if problems:
        raise PlanMismatchError(
            "the plan does not fit the live checkpoint, nothing was changed: " + "; ".join(problems),
            hint="re-run 'checkpoint-doctor plan' on the current checkpoint",
        )
    moved = check_kafka(plan.preconditions, kafka)
    if moved:
        raise PreconditionFailedError(moved)
    opts = PlanOptions.from_request(plan.request)
    calm = replace(opts.diagnose, now_ms=None, kafka=kafka)
    again = plan_repair(
        snapshot, diagnose(snapshot, replace(calm, live_window_s=0)), replace(opts, diagnose=calm)
    )
    difference = _first_difference(plan.steps, again.steps, "step") or _first_difference(
        plan.preconditions, again.preconditions, "precondition"
    )
    if difference is not None:
        raise PlanMismatchError(
            f"the plan is not what checkpoint-doctor plans for this checkpoint now ({difference}); nothing was changed",
            hint="apply only plans written by 'checkpoint-doctor plan -o', unedited; re-run plan",
        )
    failures = check_preconditions(plan.preconditions, snapshot, now_ms, own)
    if failures:
        raise PreconditionFailedError(failures)


def _with_unfinished(exc: RefusedError, tool: Storage) -> RefusedError:
    """Name an earlier apply that did not finish (it is why the checkpoint changed, most likely)."""
    for entry in reversed(list_applies(tool)):
        url = str(entry.get("journal", ""))
        prefix = tool.url_of("")
        if not url.startswith(prefix + "/"):
            continue
        location = url[len(prefix) + 1 :].rpartition("/")[0]
        with contextlib.suppress(CheckpointDoctorError):
            journal = Journal.load(tool.child(location))
            if journal.state in (FAILED, INTERRUPTED, PARTLY_UNDONE):
                exc.message += (
                    f"; an earlier apply of plan {entry.get('plan_id')} did not finish "
                    f"({journal.state}; the checkpoint was changed by it; the record is {url})"
                )
                exc.args = (exc.message,)
                exc.hint = f"undo it with: checkpoint-doctor undo {url}, then apply the plan again"
                return exc
    return exc


def _would(plan: RepairPlan) -> tuple[dict[str, Any], ...]:
    return tuple(
        {
            "step": i,
            "kind": s.kind,
            "area": getattr(s, "area", None),
            "path": getattr(s, "path", None),
            "what": s.describe(),
        }
        for i, s in enumerate(plan.executable_steps, 1)
    )


# ------------------------------------------------------------------------------------------- apply


@dataclass
class _Apply:
    """One apply in progress (mutable scratch)."""

    plan: RepairPlan
    io: _AreaIO
    backup: Storage
    journal: Journal
    snapshot: CheckpointSnapshot
    contents: dict[int, bytes] = field(default_factory=dict)
    skipped: set[int] = field(default_factory=set)
    done: int = 0

    def back_up(self) -> None:
        rows = []
        for i, step in enumerate(self.plan.executable_steps):
            if step.needs_backup():
                area, path = step.key  # type: ignore[misc]
                if step.optional() and not self.io.exists(area, path):
                    self.skipped.add(i)  # absent: nothing to save, nothing to remove
                    continue
                data = self.io.read(area, path)
                # A symbolic link (Hadoop's local file system follows it; operators link files onto
                # other volumes): the delete removes the link, never its target; undo links again.
                link = self.io.link_of(area, path)
                owner = self.io.ownership(area, path) if link is None else None
                target = backup_path(area, path)
                # A copy of a file that may be private is readable by this user only.
                self.backup.write(target, data, private=True)
                copy = self.backup.read(target)
                if len(copy) != len(data) or sha256_hex(copy) != sha256_hex(data):
                    raise StorageError(
                        self.backup.url_of(target), "verify", "the backup copy differs from the original"
                    )
                stat = file_stat(self.snapshot, area, path)
                rows.append(
                    {
                        "index": i,
                        "area": area,
                        "path": path,
                        "size": len(data),
                        "sha256": sha256_hex(data),
                        "mtime_ms": stat.mtime_ms if stat is not None else None,
                        **(dict(zip(("mode", "uid", "gid"), owner, strict=True)) if owner else {}),
                        **({"link": link} if link is not None else {}),
                    }
                )
            content = step.content(self.io)
            if content is not None:
                self.contents[i] = content
        digest = self.journal.write_once(BACKUPS, jsonl(rows))
        self.journal.append({"event": "backed-up", "count": len(rows), "sha256": digest})

    def run_steps(self) -> None:
        for i, step in enumerate(self.plan.executable_steps):
            if i not in self.skipped:
                step.execute(self.io, self.contents.get(i))
            self.done = i + 1
            if self.done % PROGRESS_EVERY == 0:
                self.journal.append({"event": "progress", "done": self.done})


def _begin(
    plan: RepairPlan, checkpoint: Storage, sink: Storage | None, tool: Storage,
    backup: Storage | None, now_ms: int | None,
) -> Journal:  # fmt: skip
    """Create the journal exclusively (an explicit location must not hold one)."""
    begin = {
        "event": "begin",
        "plan_id": plan.plan_id,
        # Undo reverses the plan beside the journal only if it is this one (a replaced plan.json
        # with a recomputed plan_id would otherwise make undo remove files never backed up).
        "plan_sha256": sha256_hex(plan.to_json().encode()),
        "tool_version": __version__,
        "checkpoint": checkpoint.url,
        "sink": sink.url if sink is not None else None,
        "at_ms": now_ms,
    }
    if backup is None:
        return _create_default(tool, plan.plan_id, begin)
    try:
        return Journal.create(backup, begin)
    except TargetExistsError as exc:
        raise PlanMismatchError(
            f"{backup.url} already holds a journal (an earlier apply); nothing was changed",
            hint="choose another --backup-dir, or leave it out to use a new default location",
        ) from exc


def _record(work: _Apply, tool: Storage, snapshot: CheckpointSnapshot, now_ms: int | None) -> None:
    """Keep the plan and the listing before any change beside the journal; list the apply."""
    work.journal.write_once(PLAN, work.plan.to_json().encode())
    listing = work.journal.write_once(LISTING_BEFORE, jsonl(listing_rows(snapshot.listing)))
    dirs = work.journal.write_once(DIRS_BEFORE, jsonl(list(snapshot.dirs)))
    work.journal.append({"event": "recorded", "listing_before_sha256": listing, "dirs_before_sha256": dirs})
    record_apply(tool, {"plan_id": work.plan.plan_id, "journal": work.journal.url, "at_ms": now_ms})


def _create_default(tool: Storage, plan_id: str, begin: dict[str, Any]) -> Journal:
    while True:
        location = free_location(tool, plan_id)
        try:
            return Journal.create(location, begin)
        except TargetExistsError:
            continue  # taken between the look and the create: the next free name


def _failed(work: _Apply, exc: BaseException) -> ApplyFailedError:
    # If even this fails, the journal's begin event and the backups manifest are what undo needs.
    with contextlib.suppress(StorageError):
        work.journal.append({"event": "failed", "error": str(exc), "steps_done": work.done})
    total = len(work.plan.executable_steps)
    if work.done:
        changed = f"the checkpoint WAS changed ({work.done} of {total} step(s) done)"
        hint = f"undo it with: checkpoint-doctor undo {work.journal.url}  (then apply the plan again to finish it)"
    else:
        changed = "no step ran, so the checkpoint was not changed"
        hint = "fix the cause and apply the plan again"
    return ApplyFailedError(
        f"apply of plan {work.plan.plan_id} failed ({exc}); {changed}; the record is {work.journal.url}",
        hint=hint,
    )


def apply_plan(
    plan: RepairPlan,
    checkpoint: Storage,
    *,
    sink: Storage | None,
    tool: Storage,
    backup: Storage | None = None,
    now_ms: int | None,
    dry_run: bool = False,
    confirm: Callable[[RepairPlan], bool] | None = None,
    diagnose_options: DiagnoseOptions | None = None,
    kafka: KafkaLive | None = None,
) -> ApplyResult:
    """Apply a plan (see module docstring). ``tool`` is the checkpoint's tool directory (lock, history,
    default backups); ``backup`` an explicit backup location (default: a new one in ``tool``);
    ``kafka`` the positions of the plan's Kafka topics, read again from its broker by the caller.

    Raises:
        PlanMismatchError / PreconditionFailedError / LockHeldError: refused; nothing was changed.
        PlanFormatError: the backup location is inside the checkpoint, or the plan needs a sink.
        ApplyFailedError: a failure after the checkpoint began to change (names the journal).
        StorageError: a storage failure before anything changed.
    """
    manual = tuple(getattr(s, "command", "") for s in plan.steps if not s.executable)
    # Resolved locations, not URL text: file:// URLs and symlinks lead inside too.
    for location in (tool, backup):
        if location is not None and (
            checkpoint.contains(location) or (sink is not None and sink.contains(location))
        ):
            raise PlanFormatError(
                f"backup location {location.url} is inside the checkpoint or sink",
                hint="choose --backup-dir outside them",
            )
    if not plan.executable_steps:
        return ApplyResult(plan.plan_id, dry_run, None, None, 0, manual)
    if any(getattr(s, "area", None) == SINK for s in plan.executable_steps) and sink is None:
        raise PlanFormatError(
            "the plan changes the file sink log but no sink is reachable",
            hint="the plan records the sink path",
        )
    with CheckpointLock.acquire(tool, f"apply {plan.plan_id}", now_ms):
        depth = str(plan.request.get("depth") or "default")
        snapshot = load_snapshot(checkpoint, sink_store=sink, depth=depth)
        try:
            # The files earlier applies wrote are no sign of a running query.
            verify_plan(plan, snapshot, now_ms, own_writes(tool), kafka)
        except (PlanMismatchError, PreconditionFailedError) as exc:
            raise _with_unfinished(exc, tool) from exc
        if dry_run or (confirm is not None and not confirm(plan)):
            return ApplyResult(
                plan.plan_id, dry_run, None, None, 0, manual, cancelled=not dry_run, would=_would(plan)
            )
        journal = _begin(plan, checkpoint, sink, tool, backup, now_ms)
        work = _Apply(plan, _AreaIO(checkpoint, sink), journal.store, journal, snapshot)
        try:
            _record(work, tool, snapshot, now_ms)
            work.back_up()
            work.run_steps()
            after_snapshot = load_snapshot(checkpoint, sink_store=sink, depth=depth)
            digest = journal.write_once(LISTING_AFTER, jsonl(listing_rows(after_snapshot.listing)))
            journal.append({"event": "applied", "steps_done": work.done, "listing_sha256": digest})
        except (CheckpointDoctorError, OSError) as exc:
            raise _failed(work, exc) from exc
    # The restart the plan was made for (its recorded confs, sources, format version), not a bare one.
    asked = PlanOptions.from_request(plan.request).diagnose
    opts = diagnose_options or replace(
        asked, spark=plan.spark, mode=plan.mode, now_ms=None, live_window_s=0, kafka=kafka
    )
    after = diagnose(after_snapshot, opts)
    return ApplyResult(plan.plan_id, False, journal.store.url, journal.url, work.done, manual, after)


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
        return {
            "journal": self.journal_url,
            "restored": list(self.restored),
            "removed": list(self.removed),
            "already_as_before": list(self.unchanged),
        }


def _touched(steps: tuple[Step, ...]) -> set[str]:
    return {s.key[1] for s in steps if s.key is not None and s.key[0] != SINK}


def _temp_for(path: str) -> str | None:
    """Return the path a temp file of the tool was written for (``d/.n.<uuid>.cdtmp`` -> ``d/n``)."""
    base, _, name = path.rpartition("/")
    target = temp_of(name)
    return None if target is None else (f"{base}/{target}" if base else target)


def _digest_checked(journal: Journal, name: str, digest: Any, what: str) -> None:
    """Refuse a file beside the journal whose sha256 is not the one the journal recorded for it."""
    if digest is None:
        return  # a journal written before the digest was recorded
    try:
        data = journal.store.read(name, max_bytes=MAX_RECORD_BYTES)
    except StorageError as exc:
        raise JournalError(f"cannot read {journal.store.url_of(name)}: {exc.reason}") from exc
    if sha256_hex(data) != digest:
        raise UndoRefusedError(
            f"{journal.store.url_of(name)} is not the {what} this apply recorded (its sha256 differs "
            "from the journal's); nothing was restored",
            hint="put back the file the apply wrote; undo trusts nothing beside the journal it cannot verify",
        )


def _changed_since(
    journal: Journal, checkpoint: Storage, steps: tuple[Step, ...], resuming: bool
) -> list[str]:
    """Return the checkpoint files that differ from the journal's record.

    After a completed apply: every file against the listing after it. After a failed or interrupted
    apply, or an undo that did not finish: every file the plan does not touch against the listing
    before (after) it; the touched ones are checked one by one against the plan and the backups.
    The tool's own temp files beside a touched path (left by a killed apply or undo) are no change:
    undo removes them.
    """
    now = {f.path: (f.size, f.etag or f.mtime_ms) for f in checkpoint.list_tree().files}
    touched = _touched(steps)
    ignore = {p for p in now if _temp_for(p) in touched}
    applied = journal.first("applied")
    if applied is not None and journal.store.exists(LISTING_AFTER):
        _digest_checked(journal, LISTING_AFTER, applied.get("listing_sha256"), "listing after the apply")
        if resuming:
            ignore |= touched
        recorded = {p: (size, stamp) for p, size, stamp in read_jsonl(journal.store, LISTING_AFTER)}
    elif journal.store.exists(LISTING_BEFORE):
        ignore |= touched
        recorded = {p: (size, stamp) for p, size, stamp in _listing_before(journal)}
    else:
        return []  # the apply died before recording anything: nothing was changed
    return [p for p in sorted(set(recorded) | set(now)) if p not in ignore and recorded.get(p) != now.get(p)]


def _listing_before(journal: Journal) -> list[Any]:
    recorded = journal.first("recorded") or {}
    _digest_checked(
        journal, LISTING_BEFORE, recorded.get("listing_before_sha256"), "listing before the apply"
    )
    return read_jsonl(journal.store, LISTING_BEFORE)


def _applied_plan(journal: Journal) -> RepairPlan:
    """Return the plan beside the journal, refused unless it is the one the apply recorded."""
    begin = journal.first("begin")
    assert begin is not None
    try:
        data = journal.store.read(PLAN)
        plan = RepairPlan.from_json(data.decode("utf-8"))
    except (StorageError, PlanFormatError, UnicodeDecodeError) as exc:
        raise JournalError(f"cannot read the plan beside {journal.url}: {exc}") from exc
    if plan.plan_id != begin["plan_id"]:
        raise UndoRefusedError(
            f"{journal.store.url_of(PLAN)} is plan {plan.plan_id}, but {journal.url} applied plan "
            f"{begin['plan_id']}; nothing was restored",
            hint="put back the plan.json the apply wrote",
        )
    _digest_checked(journal, PLAN, begin.get("plan_sha256"), "plan")
    return plan


def _load_backups(journal: Journal, steps: tuple[Step, ...]) -> dict[int, dict[str, Any]]:
    """Return the backups manifest by step index: verified against the ``backed-up`` event's digest,
    and every row the backup of a step of the plan that saves its file."""
    event = journal.first("backed-up")
    if event is None:
        return {}  # no change is made before every backup is verified and recorded
    _digest_checked(journal, BACKUPS, event["sha256"], "backups manifest")
    out: dict[int, dict[str, Any]] = {}
    for row in read_jsonl(journal.store, BACKUPS):
        index = row.get("index") if isinstance(row, dict) else None
        step = steps[index] if isinstance(index, int) and 0 <= index < len(steps) else None
        if (
            step is None
            or not step.needs_backup()
            or step.key != (row.get("area"), row.get("path"))
            or not isinstance(row.get("sha256"), str)
        ):
            raise UndoRefusedError(
                f"{journal.store.url_of(BACKUPS)} has a row that is no backup of the plan's steps "
                f"({str(row)[:200]}); nothing was restored",
                hint="put back the backups.jsonl the apply wrote",
            )
        out[int(index)] = row  # type: ignore[arg-type]
    return out


def _saved(journal: Journal, info: dict[str, Any] | None) -> bytes | None:
    if info is None:
        return None
    data = journal.store.read(backup_path(info["area"], info["path"]))
    if sha256_hex(data) != info["sha256"]:
        raise UndoRefusedError(
            f"backup of {info['path']} is corrupt (sha256 differs)", hint="nothing was restored"
        )
    return data


def _ownership(info: dict[str, Any] | None) -> Ownership | None:
    """Return the mode and owner a backup row recorded (local disk), or None."""
    values = [info.get(k) for k in ("mode", "uid", "gid")] if info is not None else []
    ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
    return (ints[0] & 0o7777, ints[1], ints[2]) if len(ints) == 3 else None


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
    journal: Journal, key: tuple[str, str], info: dict[str, Any], saved: bytes, force: bool, io: _AreaIO
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
    io: _AreaIO,
    force: bool,
) -> tuple[list[_Undo], list[str], list[str]]:
    """Decide, backwards, what undo does for every step; returns (actions, conflicts, unchanged).
    ``existed``: the checkpoint files before the apply (a created file is removed only if the
    apply made it: it was not there before, or the plan saved it first)."""
    # The first backup of each path: what a later step that recreates the path replaced.
    originals: dict[tuple[str, str], dict[str, Any]] = {}
    for index in sorted(backups):
        originals.setdefault((backups[index]["area"], backups[index]["path"]), backups[index])
    # What each touched path holds as the undo proceeds backwards (a path may be quarantined and
    # then rewritten by one plan: undo removes the rewrite, then restores the original).
    state: dict[tuple[str, str], bytes | None] = {}
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
        saved = _saved(journal, info)
        decision = step.undo_action(state[key], saved, force)
        if decision.conflict:
            conflicts.append(key[1])
        if decision.action == "remove" and key[0] == CHECKPOINT and key[1] in existed and info is None:
            raise UndoRefusedError(
                f"the plan beside {journal.url} created {key[1]}, which was there before the apply "
                "and was never saved; nothing was restored",
                hint="undo only with the plan.json the apply wrote",
            )
        mtime = info.get("mtime_ms") if info is not None and step.needs_backup() else None
        owner = _ownership(info) if step.needs_backup() else None
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


def _perform(actions: list[_Undo], io: _AreaIO, progress: _Progress) -> None:
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


def _remove_created_dirs(journal: Journal, steps: tuple[Step, ...], io: _AreaIO) -> None:
    """Remove the directories the apply created for new files, now empty again (local disk)."""
    if not journal.store.exists(DIRS_BEFORE):
        return
    recorded = journal.first("recorded") or {}
    _digest_checked(journal, DIRS_BEFORE, recorded.get("dirs_before_sha256"), "directory listing")
    before = set(read_jsonl(journal.store, DIRS_BEFORE))
    created: set[str] = set()
    for step in steps:
        if step.creates and step.key is not None and step.key[0] != SINK:
            parent = step.key[1].rpartition("/")[0]
            while parent and parent not in before:
                created.add(parent)
                parent = parent.rpartition("/")[0]
    for path in sorted(created, key=lambda d: (-d.count("/"), d)):
        with contextlib.suppress(StorageError):  # not empty: something else is there now, keep it
            io.remove_dir(CHECKPOINT, path)


def _refuse_changes(
    changed: list[str], what: str, hint: str = "nothing was restored; pass --force to undo anyway"
) -> None:
    if changed:
        shown = ", ".join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else "")
        raise UndoRefusedError(f"{what}: {shown}", hint=hint)


def _check_location(journal: Journal, checkpoint: Storage, open_storage: StoreOpener) -> None:
    """Refuse a journal that is not the record of an apply to the checkpoint its ``begin`` names,
    before anything of that checkpoint is touched (an edited ``begin.checkpoint`` must not make undo
    create a tool directory or contact a bucket it names). A journal in a default location proves
    its checkpoint by where it is (``<checkpoint>.checkpoint-doctor/<id>/``); one in a ``--backup-dir``
    must be in the checkpoint's list of applies."""
    protocol, where = journal.store.resolved_root()
    parent = where.rstrip("/").rpartition("/")[0]
    tools = tool_urls(checkpoint)
    own = {open_storage(url).resolved_root() for url in tools}
    if (protocol, parent) in own:
        return
    if not parent.endswith(TOOL_SUFFIX):
        for url in tools:
            for entry in list_applies(open_storage(url)):
                recorded = str(entry.get("journal", ""))
                if not recorded.endswith("/" + JOURNAL):
                    continue
                with contextlib.suppress(CheckpointDoctorError):
                    if open_storage(recorded[: -len(JOURNAL) - 1]).resolved_root() == (protocol, where):
                        return
    raise UndoRefusedError(
        f"{journal.url} says it applied to {checkpoint.url}, but it is not that checkpoint's record "
        f"(neither in its {TOOL_SUFFIX} directory nor in its list of applies); nothing was restored",
        hint="undo only a journal written by apply, unedited (see 'checkpoint-doctor history')",
    )


def _check_moved(journal: Journal, checkpoint: Storage, open_storage: StoreOpener) -> None:
    """Refuse to undo into a checkpoint the operator named (moved since the apply) unless the journal
    sits in that checkpoint's own tool directory (``<real path>.checkpoint-doctor/<id>/``: moved with
    it); its files are then compared with the journal's recorded listing before anything changes."""
    protocol, where = journal.store.resolved_root()
    parent = where.rstrip("/").rpartition("/")[0]
    if (protocol, parent) not in {open_storage(url).resolved_root() for url in tool_urls(checkpoint)}:
        raise UndoRefusedError(
            f"{journal.url} is not in the tool directory of {checkpoint.url} "
            f"({tool_urls(checkpoint)[0]}); nothing was restored",
            hint=f"move {TOOL_SUFFIX} with its checkpoint (the journal proves the checkpoint by where it is)",
        )
    if not (journal.store.exists(LISTING_AFTER) or journal.store.exists(LISTING_BEFORE)):
        raise UndoRefusedError(
            f"{journal.url} recorded no listing to compare {checkpoint.url} with; nothing was restored",
            hint="undo it at the path it was applied to",
        )


def _undo_failed(journal: Journal, exc: BaseException, progress: _Progress, total: int) -> UndoFailedError:
    # If even this fails, the undo-begin event already says an undo started (history: partly undone).
    with contextlib.suppress(StorageError):
        journal.append({"event": "undo-failed", "error": str(exc), "done": progress.done, "of": total})
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
    begin = journal.first("begin")
    assert begin is not None
    if moved_to is None:
        checkpoint = open_storage(begin["checkpoint"])
        _check_location(journal, checkpoint, open_storage)
    else:
        checkpoint = open_storage(moved_to)
        _check_moved(journal, checkpoint, open_storage)
    sink = open_storage(begin["sink"]) if begin.get("sink") else None
    with CheckpointLock.acquire(open_storage(tool_urls(checkpoint)[0]), f"undo {journal.url}", now_ms):
        journal = Journal.load(journal_store)  # as it is now that no one else writes it
        if journal.last("undone") is not None:
            raise UndoRefusedError(f"{journal.url} was already undone", hint="nothing to do")
        if journal.first("backed-up") is None:
            # No change is made before every backup is verified and recorded.
            raise UndoRefusedError(
                f"{journal.url}: the apply stopped before it changed anything", hint="nothing to do"
            )
        steps = _applied_plan(journal).executable_steps
        backups = _load_backups(journal, steps)
        resuming = journal.last("undo-begin") is not None
        if not force or moved_to is not None:
            # A moved checkpoint is proven the apply's by its files: even --force needs that proof.
            changed = _changed_since(journal, checkpoint, steps, resuming)
            if moved_to is None:
                _refuse_changes(changed, "the checkpoint changed since the apply")
            else:
                _refuse_changes(
                    changed,
                    f"{checkpoint.url} is not what {begin['checkpoint']} was after the apply (files differ)",
                    "nothing was restored; name the checkpoint the journal's tool directory was moved with",
                )
        existed = {row[0] for row in _listing_before(journal) if isinstance(row, list) and row}
        io = _AreaIO(checkpoint, sink)
        actions, conflicts, unchanged = _undo_actions(journal, steps, backups, existed, io, force)
        if not force:
            _refuse_changes(conflicts, "files changed since the apply")
        moved = {"checkpoint": checkpoint.url} if moved_to is not None else {}
        journal.append({"event": "undo-begin", "force": force, "at_ms": now_ms, **moved})
        progress = _Progress()
        try:
            _perform(actions, io, progress)
            for key in sorted({s.key for s in steps if s.key is not None}):
                io.remove_temps(*key)
            _remove_created_dirs(journal, steps, io)
            journal.append(
                {"event": "undone", "restored": len(progress.restored), "removed": len(progress.removed)}
            )
        except (CheckpointDoctorError, OSError) as exc:
            raise _undo_failed(journal, exc, progress, len(actions)) from exc
    return UndoResult(journal.url, tuple(progress.restored), tuple(progress.removed), tuple(unchanged))
