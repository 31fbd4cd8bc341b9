"""Apply a repair plan safely (undo is :mod:`~checkpoint_doctor.execution.undo`). The I/O edge of repairs.

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
4. the steps, in order (journaled every few hundred, and once after the last); new files are created
   exclusively (temp name + link on file systems, ``If-None-Match: *`` on S3), so a file is never
   half written or clobbered; on file systems the temp name stays until the journal counts its
   step: after a kill, the same inode beside a created file proves it is the apply's, not a live
   writer's with the same bytes (undo removes no file it cannot prove; S3 has no such proof);
5. the ``applied`` event with the listing afterwards, then a fresh diagnosis.

A failure in stages 1-2 leaves the checkpoint untouched. A failure after the journal exists is
recorded (``failed``, with the steps done and whether the step that stopped changed its file; Ctrl-C:
``interrupted``) and reported as :class:`ApplyFailedError`, naming what changed and the undo
command: undo works from the plan's steps and the verified backups and checks the real state of
every file, so it also completes an apply that died between a change and its journal event. The
work grows linearly with the plan: one read, one write and one read-back per saved file, one change
per step, and a journal rewritten a bounded number of times.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from checkpoint_doctor.diagnosis import DiagnoseOptions, Diagnosis, diagnose
from checkpoint_doctor.digest import sha256_hex
from checkpoint_doctor.errors import (
    ApplyFailedError,
    CheckpointDoctorError,
    CheckpointNotFoundError,
    PlanFormatError,
    PlanMismatchError,
    PreconditionFailedError,
    StorageError,
    TargetExistsError,
)
from checkpoint_doctor.execution.area_io import AreaIO
from checkpoint_doctor.execution.backup import back_up
from checkpoint_doctor.execution.journal import (
    DIRS_BEFORE,
    LISTING_AFTER,
    LISTING_BEFORE,
    PLAN,
    PROGRESS_EVERY,
    Event,
    Journal,
    free_location,
    jsonl,
    listing_rows,
    record_apply,
    tool_url,
)
from checkpoint_doctor.execution.lock import CheckpointLock
from checkpoint_doctor.execution.verify import verify_plan, with_unfinished
from checkpoint_doctor.model import KafkaLive
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.planning import PlanOptions, RepairPlan
from checkpoint_doctor.planning.steps import Area, Step
from checkpoint_doctor.reading.history import own_writes
from checkpoint_doctor.reading.pipeline import load_snapshot
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.reading.storage import Storage
from checkpoint_doctor.version import __version__


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


@dataclass
class _Apply:
    """One apply in progress (mutable scratch)."""

    plan: RepairPlan
    io: AreaIO
    journal: Journal
    contents: dict[int, bytes] = field(default_factory=dict)
    skipped: set[int] = field(default_factory=set)
    done: int = 0
    #: The step that was running when the apply stopped (its index), and whether its file changed
    #: before it did (None: it cannot be told).
    stopped: int | None = None
    stopped_changed: bool | None = None
    #: Told (done, total) after each step: the CLI's progress bar on a long apply (issue 36).
    on_step: Callable[[int, int], None] | None = None

    def run_steps(self) -> None:
        total = len(self.plan.executable_steps)
        for i, step in enumerate(self.plan.executable_steps):
            # Marked running before it starts and until it is counted: a Ctrl-C between its change
            # and the count leaves it "may have changed" (undo then looks at its file), never lost.
            self.stopped, self.stopped_changed = i, None
            if i not in self.skipped:
                try:
                    step.execute(self.io, self.contents.get(i))
                except BaseException as exc:
                    self.stopped_changed = _step_changed(step, self.io, exc)
                    raise
            self.done = i + 1
            self.stopped = None
            if self.on_step is not None:
                self.on_step(self.done, total)
            if self.done % PROGRESS_EVERY == 0:
                self.progress()
        if self.done % PROGRESS_EVERY:
            # The journal counts every step done, not the last multiple of PROGRESS_EVERY (issue 31:
            # Ctrl-C after all 1,600 moves left "done: 1536").
            self.progress()

    def progress(self) -> None:
        """Record the steps done; the temp files that proved their creates are then not needed."""
        self.journal.append({"event": Event.PROGRESS, "done": self.done})
        self.io.drop_kept()

    def drop_kept(self) -> None:
        """Remove the kept temp files once the end event counts every step (a step that stopped
        not knowing whether it changed its file keeps its proof for undo)."""
        if self.stopped is None or self.stopped_changed is not None:
            self.io.drop_kept()

    @property
    def ran(self) -> int:
        """Return how many steps, from the first, may have changed the checkpoint: the done ones,
        and the one that stopped unless it is known not to have changed its file."""
        return self.done + (1 if self.stopped is not None and self.stopped_changed is not False else 0)

    def end_event(self, event: Event, exc: BaseException) -> dict[str, Any]:
        """Return the ``failed`` or ``interrupted`` event: what happened, counted (undo reverses the
        first ``ran`` steps only: a later step's file is not the apply's, whatever its bytes)."""
        return {
            "event": event,
            "error": str(exc) or type(exc).__name__,
            "steps_done": self.done,
            "ran": self.ran,
            "stopped_step": self.stopped,
            "stopped_changed": self.stopped_changed,
        }


def _step_changed(step: Step, io: AreaIO, exc: BaseException) -> bool | None:
    """Return whether a step that raised changed its file first (None: it cannot be told).

    A create refused because the name exists (``TargetExistsError``: ``link``'s EEXIST, S3's
    ``If-None-Match``) made nothing: the file there is another writer's, even with the very bytes
    the step would write (issue 31: a live writer's ``commits/1``, identical to ``commits/0`` as
    Spark's stateless commits are). Any other failure is looked at: a create whose file is there
    (the link succeeded, then removing its temp file failed), a removal whose file is gone."""
    if isinstance(exc, TargetExistsError) or step.key is None:
        return False if isinstance(exc, TargetExistsError) else None
    try:
        if step.creates:
            return io.exists(*step.key)
        if step.removes:
            return not io.exists(*step.key)
    except (CheckpointDoctorError, OSError):
        return None
    return None


def _begin(
    plan: RepairPlan, checkpoint: Storage, sink: Storage | None, tool: Storage,
    backup: Storage | None, now_ms: int | None,
) -> Journal:  # fmt: skip
    """Create the journal exclusively (an explicit location must not hold one)."""
    begin = {
        "event": Event.BEGIN,
        "plan_id": plan.plan_id,
        # Undo reverses the plan beside the journal only if it is this one (a replaced plan.json
        # with a recomputed plan_id would otherwise make undo remove files never backed up).
        "plan_sha256": sha256_hex(plan.to_json().encode()),
        "tool_version": __version__,
        "checkpoint": checkpoint.url,
        "sink": sink.url if sink is not None else None,
        "at_ms": now_ms,
        # Each create's temp file stays until the journal counts its step (local disk): after a
        # kill, undo asks that proof of a file it did not see counted (issue 31).
        "keeps_temps": True,
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
    work.journal.append(
        {"event": Event.RECORDED, "listing_before_sha256": listing, "dirs_before_sha256": dirs}
    )
    record_apply(tool, {"plan_id": work.plan.plan_id, "journal": work.journal.url, "at_ms": now_ms})


def _create_default(tool: Storage, plan_id: str, begin: dict[str, Any]) -> Journal:
    while True:
        location = free_location(tool, plan_id)
        try:
            return Journal.create(location, begin)
        except TargetExistsError:
            continue  # taken between the look and the create: the next free name


def _failed(work: _Apply, exc: BaseException) -> ApplyFailedError:
    # If even this fails, the journal's begin event and the backups manifest are what undo needs
    # (and the kept temp files stay: they prove the creates; undo removes them).
    with contextlib.suppress(StorageError):
        work.journal.append(work.end_event(Event.FAILED, exc))
        work.drop_kept()
    return ApplyFailedError(
        f"apply of plan {work.plan.plan_id} failed ({exc}); {_what_changed(work)}; the record is {work.journal.url}",
        hint=f"undo it with: checkpoint-doctor undo {work.journal.url}  (then apply the plan again to finish it)"
        if work.ran
        else "fix the cause and apply the plan again",
    )


def _what_changed(work: _Apply) -> str:
    """Say, truly, what the stopped apply changed: the steps done and the one that stopped part way
    (issue 31: "no step ran, so the checkpoint was not changed" was said of an offsets/1 created
    before removing its temp file failed)."""
    steps = work.plan.executable_steps
    if not work.ran:
        if work.stopped is not None:
            return (
                f"no step changed it, so the checkpoint was not changed (step {work.stopped + 1}, "
                f"{steps[work.stopped].describe()}, changed nothing)"
            )
        return "no step ran, so the checkpoint was not changed"
    done = [steps[i].describe() for i in range(work.done) if i not in work.skipped]
    was = "WAS" if done or work.stopped_changed else "MAY have been"
    words = f"the checkpoint {was} changed ({work.done} of {len(steps)} step(s) done"
    if work.stopped is not None:
        how = (
            "may have changed its file"
            if work.stopped_changed is None
            else "changed its file before it failed"
            if work.stopped_changed
            else "changed nothing"
        )
        words += f"; step {work.stopped + 1}, {steps[work.stopped].describe()}, {how}"
        if work.stopped_changed is not False:
            done.append(steps[work.stopped].describe())
    shown = "; ".join(done[:3]) + (f"; and {len(done) - 3} more" if len(done) > 3 else "")
    return f"{words}: {shown})"


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
    delta: tuple[DeltaTable, ...] | None = None,
    on_step: Callable[[int, int], None] | None = None,
) -> ApplyResult:
    """Apply a plan (see module docstring). ``tool`` is the checkpoint's tool directory (lock, history,
    default backups); ``backup`` an explicit backup location (default: a new one in ``tool``);
    ``kafka`` the positions of the plan's Kafka topics, read again from its broker by the caller;
    ``delta`` the Delta tables the plan relies on, read again by the caller; ``on_step`` is told
    (steps done, steps in all) as the checkpoint changes.

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
    if any(getattr(s, "area", None) == Area.SINK for s in plan.executable_steps) and sink is None:
        raise PlanFormatError(
            "the plan changes the file sink log but no sink is reachable",
            hint="the plan records the sink path",
        )
    depth = str(plan.request.get("depth") or "default")

    def verified() -> CheckpointSnapshot:
        snapshot = load_snapshot(checkpoint, sink_store=sink, depth=depth)
        try:
            # The files earlier applies wrote are no sign of a running query.
            verify_plan(plan, snapshot, now_ms, own_writes(tool), kafka, delta)
        except (PlanMismatchError, PreconditionFailedError) as exc:
            raise with_unfinished(exc, tool) from exc
        return snapshot

    if dry_run:
        # A dry run reads only: no lock, so no tool directory is made (issue 31).
        verified()
        return ApplyResult(plan.plan_id, True, None, None, 0, manual, would=_would(plan))
    # The lock makes the tool directory beside the checkpoint (and its parents): not for a
    # checkpoint that moved away (issue 31: '<old path>.checkpoint-doctor/' appeared, its missing
    # parent made again).
    if not checkpoint.exists(""):
        raise CheckpointNotFoundError(
            checkpoint.url, "list", "no such file or directory", hint="check the plan's checkpoint path"
        )
    with CheckpointLock.acquire(tool, f"apply {plan.plan_id}", now_ms):
        snapshot = verified()
        if confirm is not None and not confirm(plan):
            return ApplyResult(plan.plan_id, False, None, None, 0, manual, cancelled=True, would=_would(plan))
        journal = _begin(plan, checkpoint, sink, tool, backup, now_ms)
        work = _Apply(plan, AreaIO(checkpoint, sink), journal, on_step=on_step)
        work.io.keep_temps = True
        try:
            _record(work, tool, snapshot, now_ms)
            work.contents, work.skipped = back_up(plan, work.io, journal, snapshot)
            work.run_steps()
            after_snapshot = load_snapshot(checkpoint, sink_store=sink, depth=depth)
            digest = journal.write_once(LISTING_AFTER, jsonl(listing_rows(after_snapshot.listing)))
            journal.append({"event": Event.APPLIED, "steps_done": work.done, "listing_sha256": digest})
        except (CheckpointDoctorError, OSError) as exc:
            raise _failed(work, exc) from exc
        except BaseException as exc:
            # Ctrl-C (or SystemExit): the journal says what was done, and the apply is shown as
            # interrupted, with the command that undoes it (issue 31: "interrupted -").
            with contextlib.suppress(StorageError):
                journal.append(work.end_event(Event.INTERRUPTED, exc))
                work.drop_kept()
            raise
    # The restart the plan was made for (its recorded confs, sources, format version), not a bare one.
    request = PlanOptions.from_request(plan.request)
    asked = request.diagnose
    if request.reset_flow is not None:
        # A pipeline flow's reset: the plan's root is the flow directory; Spark reads the new version.
        after_snapshot = load_snapshot(checkpoint.child(request.reset_flow.version), depth=depth)
    opts = diagnose_options or replace(
        asked, spark=plan.spark, mode=plan.mode, now_ms=None, live_window_s=0, kafka=kafka, delta=delta
    )
    after = diagnose(after_snapshot, opts)
    return ApplyResult(plan.plan_id, False, journal.store.url, journal.url, work.done, manual, after)
