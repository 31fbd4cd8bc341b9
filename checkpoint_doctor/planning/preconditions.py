"""Check a plan's preconditions against a fresh snapshot. Pure: every failure is returned, none raised."""

from __future__ import annotations

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.diagnosis.model import LIVE_WRITER_CODES
from checkpoint_doctor.model import FileStat
from checkpoint_doctor.planning.plan import CHECKPOINT, Precondition, RepairPlan
from checkpoint_doctor.snapshot import CheckpointSnapshot


def _stat(snapshot: CheckpointSnapshot, area: str, path: str) -> FileStat | None:
    if area == CHECKPOINT:
        return snapshot.file(path)
    if snapshot.sink is None:
        return None
    name = path.rpartition("/")[2]
    return next((e.file for e in snapshot.sink.log.entries if e.file.path == name), None)


def _check(pre: Precondition, snapshot: CheckpointSnapshot, now_ms: int | None) -> str | None:
    if pre.kind == "query_id":
        if snapshot.query_id != pre.value:
            return f"query id is {snapshot.query_id!r}, the plan was made for {pre.value!r}"
        return None
    if pre.kind == "latest_batches":
        o, c = snapshot.offsets.latest_id, snapshot.commits.latest_id
        if (o, c) != (pre.offsets, pre.commits):
            return f"newest offsets/commit are {o}/{c}, the plan was made for {pre.offsets}/{pre.commits}"
        return None
    if pre.kind == "file_absent":
        if _stat(snapshot, pre.area, pre.path) is not None:
            return f"{pre.path} exists now; the plan creates it"
        return None
    if pre.kind == "file_unchanged":
        stat = _stat(snapshot, pre.area, pre.path)
        if stat is None:
            return f"{pre.path} is gone"
        if pre.size is not None and stat.size != pre.size:
            return f"{pre.path} changed size ({stat.size} bytes, the plan expects {pre.size})"
        if pre.etag is not None and stat.etag != pre.etag:
            return f"{pre.path} changed (ETag {stat.etag}, the plan expects {pre.etag})"
        if pre.etag is None and pre.mtime_ms is not None and stat.mtime_ms != pre.mtime_ms:
            return f"{pre.path} was modified since the plan was made"
        return None
    if pre.kind == "no_live_writer":
        if not pre.window_s or now_ms is None:
            return None
        live = [
            f
            for f in diagnose(snapshot, DiagnoseOptions(live_window_s=pre.window_s, now_ms=now_ms)).findings
            if f.code in LIVE_WRITER_CODES
        ]
        if live:
            return f"a writer may be live ({live[0].code}: {live[0].message})"
        return None
    return f"unknown precondition {pre.kind}"


def check_preconditions(plan: RepairPlan, snapshot: CheckpointSnapshot, now_ms: int | None) -> tuple[str, ...]:
    """Return every precondition of ``plan`` that ``snapshot`` violates (empty: all hold)."""
    failures = []
    if snapshot.root.rstrip("/") != plan.checkpoint.rstrip("/"):
        failures.append(f"the plan is for {plan.checkpoint}, not {snapshot.root}")
    for pre in plan.preconditions:
        problem = _check(pre, snapshot, now_ms)
        if problem is not None:
            failures.append(problem)
    return tuple(failures)
