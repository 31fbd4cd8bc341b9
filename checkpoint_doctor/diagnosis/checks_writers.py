"""Checks on writers and debris: live writers, interleaved runs, orphan .crc, temp and unknown files,
and the target's mode and version. Pure: the current time comes in through the options."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from checkpoint_doctor.detect import RELEASE_ORDER, detect_writer
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.model import Finding, RestartPrediction
from checkpoint_doctor.layout import crc_target, parse_state_file_name
from checkpoint_doctor.snapshot import DebrisFile

#: A checkpoint whose log files were all written within this spread was copied, not written live.
BULK_COPY_SPREAD_MS = 2_000


def _log_mtimes(ctx: Context) -> list[int]:
    snap = ctx.snapshot
    return [
        e.file.mtime_ms
        for log in (snap.offsets, snap.commits)
        for e in log.entries
        if e.file.mtime_ms is not None
    ]


def check_live_writer(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD501 recent newest batch; CD502 fresh temp files; both within ``--live-window``."""
    window_ms = int(ctx.options.live_window_s * 1000)
    now = ctx.options.now_ms
    if window_ms <= 0 or now is None:
        return
    entry = next((e for e in reversed(ctx.snapshot.offsets.entries) if e.record is not None), None)
    planned = None
    if entry is not None and entry.record is not None and entry.record.metadata is not None:
        planned = entry.record.metadata.batch_timestamp_ms
    if entry is not None and planned is not None and 0 <= now - planned <= window_ms:
        yield Finding(
            "CD501",
            f"batch {entry.batch_id} was planned {(now - planned) / 1000:.0f} s ago ({entry.file.path}), within "
            f"the live window of {ctx.options.live_window_s:.0f} s.",
            paths=(entry.file.path,),
            batch_ids=(entry.batch_id,),
            details=(("age_s", round((now - planned) / 1000, 1)), ("evidence", "batchTimestampMs")),
        )
    elif planned is None:
        mtimes = _log_mtimes(ctx)
        if mtimes and now - max(mtimes) <= window_ms and (len(mtimes) < 4 or max(mtimes) - min(mtimes) > BULK_COPY_SPREAD_MS):
            yield Finding(
                "CD501",
                f"log files were modified {(now - max(mtimes)) / 1000:.0f} s ago, within the live window of "
                f"{ctx.options.live_window_s:.0f} s.",
                details=(("age_s", round((now - max(mtimes)) / 1000, 1)), ("evidence", "mtime")),
            )
    fresh = [
        d.file.path
        for d in ctx.snapshot.debris
        if d.kind == "temp" and d.file.mtime_ms is not None and 0 <= now - d.file.mtime_ms <= window_ms
    ]
    if fresh:
        yield Finding(
            "CD502",
            f"temp file {fresh[0]} was written within the live window" + (f" (and {len(fresh) - 1} more)." if len(fresh) > 1 else "."),
            paths=tuple(fresh),
        )


def check_interleaved_runs(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD503: batchTimestampMs goes backwards between consecutive read offsets files."""
    timed = [
        (e, e.record.metadata.batch_timestamp_ms)
        for e in ctx.snapshot.offsets.entries
        if e.record is not None and e.record.metadata is not None
    ]
    for (prev, a), (cur, b) in itertools.pairwise(timed):
        if cur.batch_id == prev.batch_id + 1 and b < a:
            yield Finding(
                "CD503",
                f"{cur.file.path} was planned {(a - b) / 1000:.1f} s before {prev.file.path} (batchTimestampMs "
                f"{b} < {a}).",
                paths=(prev.file.path, cur.file.path),
                batch_ids=(prev.batch_id, cur.batch_id),
            )


def _written_at_or_after(path: str, next_batch: int | None, ctx: Context) -> bool:
    """Whether Spark will write ``path`` again from the next batch on."""
    if path == "metadata":
        # 3.5-4.1 write a new metadata file when it is missing; 4.2+ refuse to start first.
        return ctx.snapshot.metadata is None and not ctx.target.missing_metadata_fatal
    if next_batch is None:
        return False
    parts = path.split("/")
    name = parts[-1]
    if parts[0] in ("offsets", "commits") and len(parts) == 2 and name.isdigit():
        return int(name) >= next_batch
    if parts[0] == "state":
        parsed = parse_state_file_name(name)
        return parsed is not None and parsed.version >= next_batch + 1
    return False


def check_debris(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD504/CD505 orphan .crc; CD506 temp files; CD507 fresh checkpoint not empty; CD509; CD510."""
    snap = ctx.snapshot
    fresh = not ctx.offsets_ids
    blocking: list[DebrisFile] = []
    harmless: list[DebrisFile] = []
    temps: list[DebrisFile] = []
    unknown: list[DebrisFile] = []
    for d in snap.debris:
        if d.kind == "orphan-crc":
            (blocking if _written_at_or_after(d.target or "", prediction.next_batch_id, ctx) else harmless).append(d)
        elif d.kind == "temp":
            temps.append(d)
        elif d.kind in ("unknown", "ignored-dir-entry"):
            unknown.append(d)
    for d in blocking:
        yield Finding(
            "CD504",
            f"{d.file.path} remains although {d.target} is gone, and Spark writes {d.target} again.",
            paths=(d.file.path,),
            details=(("target", d.target),),
        )
    if harmless:
        yield Finding(
            "CD505",
            f"{harmless[0].file.path} remains although {harmless[0].target} is gone"
            + (f" (and {len(harmless) - 1} more orphan .crc files)." if len(harmless) > 1 else "."),
            paths=tuple(d.file.path for d in harmless),
        )
    if fresh and ctx.target.fresh_dir_must_be_empty and not ctx.is_continuous:
        listed = [
            f.path
            for f in snap.files
            if f.path.split("/")[0] in ("offsets", "commits", "state")
            and not (ctx.local_fs and f.name.startswith(".") and crc_target(f.name) is not None)
        ]
        if listed and not ctx.commit_ids:
            yield Finding(
                "CD507",
                f"no batch has run yet but {listed[0]} is present"
                + (f" (and {len(listed) - 1} more files)" if len(listed) > 1 else "")
                + f"; Spark {ctx.target.line} refuses to start a new query here.",
                paths=tuple(listed),
            )
            temps = [t for t in temps if t.file.path not in listed]
    if temps:
        yield Finding(
            "CD506",
            f"{temps[0].file.path} is a temp file of an interrupted write of {temps[0].target}"
            + (f" (and {len(temps) - 1} more)." if len(temps) > 1 else "."),
            paths=tuple(t.file.path for t in temps),
        )
    if unknown:
        yield Finding(
            "CD509",
            f"{unknown[0].file.path} is not a file Spark writes" + (f" (and {len(unknown) - 1} more)." if len(unknown) > 1 else "."),
            paths=tuple(u.file.path for u in unknown),
        )
    for log in (snap.offsets, snap.commits):
        for name, batch_id in log.noncanonical:
            yield Finding(
                "CD510",
                f"{log.path}/{name} is listed by Spark as batch {batch_id} but read from {log.path}/{batch_id}.",
                paths=(f"{log.path}/{name}",),
                batch_ids=(batch_id,),
            )
        if log.exists and not log.entries and (snap.offsets.entries or snap.commits.entries or snap.metadata):
            yield Finding("CD508", f"{log.path}/ exists but holds no batch files.", paths=(log.path,))


def check_target(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD601 restart on an older Spark than wrote it; CD602 async progress tracking on state."""
    writer = detect_writer(ctx.snapshot)
    if writer.line is not None and RELEASE_ORDER.index(writer.line) > RELEASE_ORDER.index(ctx.target.line):
        yield Finding(
            "CD601",
            f"the newest batch was written by Spark {writer.label} and the restart target is Spark {ctx.target.line}.",
            details=(("written_by", writer.line), ("target", ctx.target.line)),
        )
    if ctx.is_async and ctx.stateful is True:
        yield Finding(
            "CD602",
            "the query has state (state/ holds operators) and the restart uses async progress tracking.",
            paths=("state",),
        )
