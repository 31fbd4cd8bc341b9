"""Checks on writers and debris: live writers, interleaved runs, orphan .crc, temp and unknown files,
and the target's mode and version. Pure: the current time comes in through the options."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator, Sequence

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.detect import WriterGuess
from checkpoint_doctor.diagnosis.model import Finding, RestartPrediction
from checkpoint_doctor.diagnosis.versions import SparkTarget
from checkpoint_doctor.reading.layout import crc_target, parse_state_file_name
from checkpoint_doctor.reading.snapshot import DebrisFile

#: A checkpoint whose log files were all written within this spread was copied, not written live.
BULK_COPY_SPREAD_MS = 2_000


#: Directories a running query writes every batch: a file changed in them is evidence of a writer.
_WRITTEN_EACH_BATCH = ("offsets", "commits", "state", "sources")


def _written_mtimes(ctx: Context) -> list[int]:
    """Return the modification times of the files a running query writes (logs and state; hidden
    files, the temp files CD502 judges, Hadoop .crc side files and the files checkpoint-doctor's own
    applies wrote, left out)."""
    out: list[int] = []
    own = ctx.options.own_writes
    for d in ctx.snapshot.listing.columns:
        if d.path.partition("/")[0] not in _WRITTEN_EACH_BATCH:
            continue
        # Hidden files (.crc side files, temp files: CD502) are not asked: their stat is half of a
        # state store's when the listing left sizes and mtimes to be fetched on demand. The names
        # are sorted as strings, so the hidden ones are one run: from "." up to "/", the character
        # after "." (which no file name holds).
        names = d.names
        lo = bisect.bisect_left(names, ".")
        hi = bisect.bisect_left(names, "/", lo)
        shown: Sequence[int] = range(len(names)) if lo == hi else [*range(lo), *range(hi, len(names))]
        mtimes = d.mtimes_of(shown)
        if not own:
            out += [m for m in mtimes if m is not None]
            continue
        etags = d.etags
        for i, m in zip(shown, mtimes, strict=True):
            if m is None:
                continue
            if own and (f"{d.path}/{d.names[i]}", (etags[i] if etags else None) or m) in own:
                continue  # written by checkpoint-doctor's own apply
            out.append(m)
    return out


#: How a checkpoint no query writes to is told from a live one (CD501): a copy just made has fresh
#: files too, and nothing in it says it is a copy.
NOT_LIVE = ": if no query writes to it (a copy just made looks the same), pass --live-window 0"


def _age_text(age_ms: int) -> str:
    if age_ms < 0:
        return f"{-age_ms / 1000:.0f} s in the future (a clock ahead of this machine's)"
    return f"{age_ms / 1000:.0f} s ago"


def _planned_recently(ctx: Context, window_ms: int, now: int) -> Finding | None:
    """CD501 from the newest batch's ``batchTimestampMs``: within the window, or in the future
    (the driver's clock is ahead of this machine's: its age cannot prove the query stopped)."""
    entry = next((e for e in reversed(ctx.snapshot.offsets.entries) if e.record is not None), None)
    if entry is None or entry.record is None or entry.record.metadata is None:
        return None
    age = now - entry.record.metadata.batch_timestamp_ms
    if age > window_ms:
        return None
    return Finding(
        Code.LIVE_WRITER,
        f"batch {entry.batch_id} was planned {_age_text(age)} ({entry.file.path}), within the live window "
        f"of {ctx.options.live_window_s:.0f} s{NOT_LIVE}.",
        paths=(entry.file.path,),
        batch_ids=(entry.batch_id,),
        details=(("age_s", round(age / 1000, 1)), ("evidence", "batchTimestampMs")),
    )


def _changed_recently(ctx: Context, window_ms: int, now: int) -> Finding | None:
    """CD501 from file modification times: a log or state file changed within the window (or in
    the future), unless every such file was written within two seconds (a copy, not a query)."""
    mtimes = _written_mtimes(ctx)
    if not mtimes:
        return None
    newest = max(mtimes)
    if now - newest > window_ms:
        return None
    # A copy is judged the same way whatever its size (issue 36: a copy of three files was a live
    # query, one of thirty was not): a query that just wrote every file it has has just planned its
    # batch too, which _planned_recently sees in batchTimestampMs.
    if newest - min(mtimes) <= BULK_COPY_SPREAD_MS:
        return None
    return Finding(
        Code.LIVE_WRITER,
        f"files of the checkpoint were modified {_age_text(now - newest)}, within the live window of "
        f"{ctx.options.live_window_s:.0f} s{NOT_LIVE}.",
        details=(("age_s", round((now - newest) / 1000, 1)), ("evidence", "mtime")),
    )


def check_live_writer(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD501 a batch planned or a file changed recently; CD502 fresh temp files; both within
    ``--live-window`` (times in the future count: a clock ahead proves nothing stopped)."""
    window_ms = int(ctx.options.live_window_s * 1000)
    now = ctx.options.now_ms
    if window_ms <= 0 or now is None:
        return
    live = _planned_recently(ctx, window_ms, now) or _changed_recently(ctx, window_ms, now)
    if live is not None:
        yield live
    fresh = [
        d.file.path
        for d in ctx.snapshot.debris
        if d.kind == "temp" and d.file.mtime_ms is not None and now - d.file.mtime_ms <= window_ms
    ]
    if fresh:
        yield Finding(
            Code.FRESH_TEMP_FILE,
            f"temp file {fresh[0]} was written within the live window"
            + (f" (and {len(fresh) - 1} more)." if len(fresh) > 1 else "."),
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
                Code.INTERLEAVED_RUNS,
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
            (
                blocking if _written_at_or_after(d.target or "", prediction.next_batch_id, ctx) else harmless
            ).append(d)
        elif d.kind == "temp":
            temps.append(d)
        elif d.kind in ("unknown", "ignored-dir-entry"):
            unknown.append(d)
    # One finding per directory, naming every blocking orphan in it: one finding per file made the
    # planner search sets of a thousand one-file options (quadratic in the orphans),
    # and one quarantine of the whole group is the repair anyway.
    by_dir: dict[str, list[DebrisFile]] = {}
    for d in blocking:
        by_dir.setdefault(d.file.path.rpartition("/")[0], []).append(d)
    for group in by_dir.values():
        first = group[0]
        more = f" (and {len(group) - 1} more blocking orphan .crc files)" if len(group) > 1 else ""
        yield Finding(
            Code.ORPHAN_CRC_BLOCKS_WRITE,
            f"{first.file.path} remains although {first.target} is gone, and Spark writes {first.target} "
            f"again{more}.",
            paths=tuple(d.file.path for d in group),
            details=(("target", first.target),),
        )
    if harmless:
        yield Finding(
            Code.ORPHAN_CRC,
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
                Code.FRESH_CHECKPOINT_NOT_EMPTY,
                f"no batch has run yet but {listed[0]} is present"
                + (f" (and {len(listed) - 1} more files)" if len(listed) > 1 else "")
                + f"; Spark {ctx.target.line} refuses to start a new query here.",
                paths=tuple(listed),
            )
            temps = [t for t in temps if t.file.path not in listed]
    if temps:
        yield Finding(
            Code.TEMP_FILES,
            f"{temps[0].file.path} is a temp file of an interrupted write of {temps[0].target}"
            + (f" (and {len(temps) - 1} more)." if len(temps) > 1 else "."),
            paths=tuple(t.file.path for t in temps),
        )
    if unknown:
        yield Finding(
            Code.UNKNOWN_FILES,
            f"{unknown[0].file.path} is not a file Spark writes"
            + (f" (and {len(unknown) - 1} more)." if len(unknown) > 1 else "."),
            paths=tuple(u.file.path for u in unknown),
        )
    for log in (snap.offsets, snap.commits):
        for name, batch_id in log.noncanonical:
            yield Finding(
                Code.NONCANONICAL_BATCH_NAME,
                f"{log.path}/{name} is listed by Spark as batch {batch_id} but read from {log.path}/{batch_id}.",
                paths=(f"{log.path}/{name}",),
                batch_ids=(batch_id,),
            )
        if log.exists and not log.entries and (snap.offsets.entries or snap.commits.entries or snap.metadata):
            yield Finding(
                Code.EMPTY_LOG_DIRECTORY, f"{log.path}/ exists but holds no batch files.", paths=(log.path,)
            )


def check_older_target(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD601 restart on an older Spark than wrote it: :func:`older_target`."""
    return iter(older_target(ctx.facts.writer, ctx.target))


def older_target(writer: WriterGuess, target: SparkTarget) -> tuple[Finding, ...]:
    """CD601 restart on an older Spark than wrote it. Apart from :func:`check_target` and a function
    of the writer and the line only: it names the line, so a restart matrix adds it to each line's
    cell instead of diagnosing every line's cell anew (``diagnosis.diagnose_cell``)."""
    if writer.line is not None and target.older_than(writer.line):
        return (
            Finding(
                Code.WRITTEN_BY_NEWER_SPARK,
                f"the newest batch was written by Spark {writer.label} and the restart target is Spark {target.line}.",
                details=(("written_by", writer.line), ("target", target.line)),
            ),
        )
    return ()


def check_target(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD602 async progress tracking on state; CD603 source evolution on a v1 offsets log (4.3);
    CD620 real-time mode on checkpoint format 1 (4.3); CD290 a re-run Kafka batch on 4.1."""
    if ctx.is_async and ctx.stateful is True:
        yield Finding(
            Code.ASYNC_STATEFUL,
            "the query has state (state/ holds operators) and the restart uses async progress tracking.",
            paths=("state",),
        )
    if Code.REAL_TIME_CHECKPOINT_V1 in prediction.caused_by:
        commit = next((e for e in reversed(ctx.snapshot.commits.entries) if e.record is not None), None)
        path = commit.file.path if commit is not None else "commits"
        yield Finding(
            Code.REAL_TIME_CHECKPOINT_V1,
            f"{path} is commit log v1 (state store checkpoint format 1) and Spark {ctx.target.line} refuses "
            "real-time mode on format 1.",
            paths=(path,),
        )
    if Code.KAFKA_RERUN_METRICS_NPE in prediction.caused_by:
        yield Finding(
            Code.KAFKA_RERUN_METRICS_NPE,
            f"the restart re-runs batch {prediction.next_batch_id} (offsets/{ctx.latest} has no commit) from a "
            f"Kafka source; Spark {ctx.target.line}'s connector fails it in its progress metrics once it has run.",
            paths=(f"offsets/{ctx.latest}",),
            batch_ids=(ctx.latest,) if ctx.latest is not None else (),
        )
    if Code.SOURCE_EVOLUTION_NEEDS_V2_OFFSETS in prediction.caused_by:
        yield Finding(
            Code.SOURCE_EVOLUTION_NEEDS_V2_OFFSETS,
            f"the restart enables source evolution but offsets/{ctx.latest} is a v1 (positional) offsets "
            f"file; Spark {ctx.target.line} keeps the existing log version and refuses.",
            paths=(f"offsets/{ctx.latest}",),
        )
