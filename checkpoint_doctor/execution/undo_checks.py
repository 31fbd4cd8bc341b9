"""What undo verifies before it changes anything: that the journal is the record of an apply to
this checkpoint, that the files beside it are the ones it recorded (by sha256), and which
checkpoint files changed since the apply.
"""

from __future__ import annotations

import contextlib
from typing import Any

from checkpoint_doctor.digest import sha256_hex
from checkpoint_doctor.errors import (
    CheckpointDoctorError,
    JournalError,
    PlanFormatError,
    StorageError,
    UndoRefusedError,
)
from checkpoint_doctor.execution.area_io import StoreOpener
from checkpoint_doctor.execution.journal import (
    JOURNAL,
    LISTING_AFTER,
    LISTING_BEFORE,
    MAX_RECORD_BYTES,
    PLAN,
    TOOL_SUFFIX,
    Event,
    Journal,
    list_applies,
    read_jsonl,
    tool_urls,
)
from checkpoint_doctor.planning import RepairPlan
from checkpoint_doctor.planning.steps import Area, Step
from checkpoint_doctor.reading.storage import Storage
from checkpoint_doctor.reading.storage.local import temp_of


def _touched(steps: tuple[Step, ...]) -> set[str]:
    return {s.key[1] for s in steps if s.key is not None and s.key[0] != Area.SINK}


def _temp_for(path: str) -> str | None:
    """Return the path a temp file of the tool was written for (``d/.n.<uuid>.cdtmp`` -> ``d/n``)."""
    base, _, name = path.rpartition("/")
    target = temp_of(name)
    return None if target is None else (f"{base}/{target}" if base else target)


def digest_checked(journal: Journal, name: str, digest: Any, what: str) -> None:
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


def changed_since(
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
    applied = journal.first(Event.APPLIED)
    if applied is not None and journal.store.exists(LISTING_AFTER):
        digest_checked(journal, LISTING_AFTER, applied.get("listing_sha256"), "listing after the apply")
        if resuming:
            ignore |= touched
        recorded = {p: (size, stamp) for p, size, stamp in read_jsonl(journal.store, LISTING_AFTER)}
    elif journal.store.exists(LISTING_BEFORE):
        ignore |= touched
        recorded = {p: (size, stamp) for p, size, stamp in listing_before(journal)}
    else:
        return []  # the apply died before recording anything: nothing was changed
    return [p for p in sorted(set(recorded) | set(now)) if p not in ignore and recorded.get(p) != now.get(p)]


def listing_before(journal: Journal) -> list[Any]:
    recorded = journal.first(Event.RECORDED) or {}
    digest_checked(journal, LISTING_BEFORE, recorded.get("listing_before_sha256"), "listing before the apply")
    return read_jsonl(journal.store, LISTING_BEFORE)


def applied_plan(journal: Journal) -> RepairPlan:
    """Return the plan beside the journal, refused unless it is the one the apply recorded."""
    begin = journal.first(Event.BEGIN)
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
    digest_checked(journal, PLAN, begin.get("plan_sha256"), "plan")
    return plan


def refuse_changes(
    changed: list[str], what: str, hint: str = "nothing was restored; pass --force to undo anyway"
) -> None:
    if changed:
        shown = ", ".join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else "")
        raise UndoRefusedError(f"{what}: {shown}", hint=hint)


def check_location(journal: Journal, checkpoint: Storage, open_storage: StoreOpener) -> None:
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


def check_moved(journal: Journal, checkpoint: Storage, open_storage: StoreOpener) -> None:
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
