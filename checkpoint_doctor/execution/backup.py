"""The copies of the files a plan removes: saved and read back before any change (apply), and
read again, verified, for undo. They live beside the journal under ``files/<area>/<path>``.
"""

from __future__ import annotations

from typing import Any

from checkpoint_doctor.digest import sha256_hex
from checkpoint_doctor.errors import (
    StorageError,
    UndoRefusedError,
)
from checkpoint_doctor.execution.area_io import AreaIO
from checkpoint_doctor.execution.journal import (
    BACKUPS,
    Event,
    Journal,
    backup_path,
    jsonl,
    read_jsonl,
)
from checkpoint_doctor.execution.undo_checks import digest_checked
from checkpoint_doctor.planning import RepairPlan
from checkpoint_doctor.planning.preconditions import file_stat
from checkpoint_doctor.planning.steps import Step
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.reading.storage.base import Ownership


def back_up(
    plan: RepairPlan, io: AreaIO, journal: Journal, snapshot: CheckpointSnapshot
) -> tuple[dict[int, bytes], set[int]]:
    """Save every file the plan removes beside the journal, each read back and verified by size and
    sha256, and record the manifest (``backed-up``); take each step's new bytes before any change.
    Return (the new bytes by step index, the indexes of optional steps whose file is absent)."""
    backup = journal.store
    contents: dict[int, bytes] = {}
    skipped: set[int] = set()
    rows = []
    for i, step in enumerate(plan.executable_steps):
        if step.needs_backup():
            area, path = step.key  # type: ignore[misc]
            if step.optional() and not io.exists(area, path):
                skipped.add(i)  # absent: nothing to save, nothing to remove
                continue
            data = io.read(area, path)
            # A symbolic link (Hadoop's local file system follows it; operators link files onto
            # other volumes): the delete removes the link, never its target; undo links again.
            link = io.link_of(area, path)
            owner = io.ownership(area, path) if link is None else None
            target = backup_path(area, path)
            # A copy of a file that may be private is readable by this user only.
            backup.write(target, data, private=True)
            copy = backup.read(target)
            if len(copy) != len(data) or sha256_hex(copy) != sha256_hex(data):
                raise StorageError(
                    backup.url_of(target), "verify", "the backup copy differs from the original"
                )
            stat = file_stat(snapshot, area, path)
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
        content = step.content(io)
        if content is not None:
            contents[i] = content
    digest = journal.write_once(BACKUPS, jsonl(rows))
    journal.append({"event": Event.BACKED_UP, "count": len(rows), "sha256": digest})
    return contents, skipped


def load_backups(journal: Journal, steps: tuple[Step, ...]) -> dict[int, dict[str, Any]]:
    """Return the backups manifest by step index: verified against the ``backed-up`` event's digest,
    and every row the backup of a step of the plan that saves its file."""
    event = journal.first(Event.BACKED_UP)
    if event is None:
        return {}  # no change is made before every backup is verified and recorded
    digest_checked(journal, BACKUPS, event["sha256"], "backups manifest")
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


def saved_bytes(journal: Journal, info: dict[str, Any] | None) -> bytes | None:
    if info is None:
        return None
    data = journal.store.read(backup_path(info["area"], info["path"]))
    if sha256_hex(data) != info["sha256"]:
        raise UndoRefusedError(
            f"backup of {info['path']} is corrupt (sha256 differs)", hint="nothing was restored"
        )
    return data


def saved_ownership(info: dict[str, Any] | None) -> Ownership | None:
    """Return the mode and owner a backup row recorded (local disk), or None."""
    values = [info.get(k) for k in ("mode", "uid", "gid")] if info is not None else []
    ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
    return (ints[0] & 0o7777, ints[1], ints[2]) if len(ints) == 3 else None
