"""Checks on ``metadata``, ``offsets/`` and ``commits/``: readability and consistency. Pure."""

from __future__ import annotations

from collections.abc import Iterator

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.context import COMMITS, OFFSETS, Context
from checkpoint_doctor.diagnosis.detect import CONTINUOUS
from checkpoint_doctor.diagnosis.model import Finding, RestartPrediction
from checkpoint_doctor.ids import id_range, ids_text, range_text, span_text
from checkpoint_doctor.model import CommitRecord, LogEntry, OffsetSeq
from checkpoint_doctor.parsing.java_uuid import java_uuid_error
from checkpoint_doctor.parsing.text import java_parse_int


def check_metadata(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD001 missing ``metadata`` with batches in the logs; CD002 unreadable ``metadata``; CD014 an
    id ``UUID.fromString`` refuses."""
    snap = ctx.snapshot
    if snap.metadata is None:
        if ctx.offsets_ids or ctx.commit_ids:
            effect = (
                "Spark " + ctx.target.line + " refuses to start"
                if ctx.target.missing_metadata_fatal
                else "Spark " + ctx.target.line + " would silently start under a new query id"
            )
            yield Finding(
                Code.METADATA_MISSING,
                f"metadata is missing while offsets/ and commits/ hold batches; {effect}.",
                paths=("metadata",),
                details=(("crc_left_behind", ".metadata.crc" in snap.hadoop_crcs),),
            )
    elif snap.metadata.failure is not None:
        f = snap.metadata.failure
        yield Finding(
            Code.METADATA_UNREADABLE,
            f"metadata cannot be read: {f.reason}.",
            paths=("metadata",),
            details=(("kind", f.kind),),
        )
    elif snap.metadata.record is not None:
        error = java_uuid_error(snap.metadata.record.query_id)
        if error is not None:
            yield Finding(
                Code.METADATA_ID_INVALID,
                f"The metadata file holds the query id {snap.metadata.record.query_id!r}, which "
                f"java.util.UUID.fromString refuses ({error.text}).",
                paths=("metadata",),
                details=(("exception", error.exception),),
            )


def _restart_reads(ctx: Context) -> list[tuple[LogEntry[OffsetSeq] | LogEntry[CommitRecord], str]]:
    out: list[tuple[LogEntry[OffsetSeq] | LogEntry[CommitRecord], str]] = []
    if ctx.is_continuous:
        k = ctx.committed
        c, o = ctx.commit(k), ctx.offsets(k)
        if c is not None:
            out.append((c, COMMITS))
        if o is not None:
            out.append((o, OFFSETS))
        return out
    latest = ctx.offsets(ctx.latest)
    if latest is not None:
        out.append((latest, OFFSETS))
    if ctx.restart_start_entry is not None:
        out.append((ctx.restart_start_entry, OFFSETS))
    commit = ctx.commit(ctx.committed)
    if commit is not None:
        out.append((commit, COMMITS))
    return out


def check_restart_files(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD003/CD004/CD005/CD006/CD007: files the restart reads that the target cannot read."""
    restart_paths = set()
    for entry, log in _restart_reads(ctx):
        restart_paths.add(entry.file.path)
        problem = ctx.log_problem(entry, log)
        if problem is None:
            continue
        yield Finding(
            problem.code,
            f"{entry.file.path} cannot be read by Spark {ctx.target.line}: {problem.reason}.",
            paths=(entry.file.path,),
            batch_ids=(entry.batch_id,),
            details=(
                ("kind", entry.failure.kind if entry.failure else "version"),
                ("size", entry.file.size),
                ("committed", ctx.commit(entry.batch_id) is not None if log == OFFSETS else True),
            ),
        )
    for log_name, batch_log in ((OFFSETS, ctx.snapshot.offsets), (COMMITS, ctx.snapshot.commits)):
        for entry in batch_log.entries:
            if entry.failure is not None and entry.file.path not in restart_paths:
                yield Finding(
                    Code.LOG_FILE_UNREADABLE_HISTORY,
                    f"{entry.file.path} is damaged ({entry.failure.reason}); a restart does not read it.",
                    paths=(entry.file.path,),
                    batch_ids=(entry.batch_id,),
                    details=(("kind", entry.failure.kind), ("log", log_name)),
                )


def check_offsets_metadata(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD008 blank metadata line outside continuous mode; CD010 no pinned confs (2.1 style); CD013 a
    pinned shuffle partition count that is not an int."""
    if ctx.is_continuous:
        return
    blank = [
        e
        for e in ctx.snapshot.offsets.entries
        if e.record is not None and e.record.metadata is None and e.record.version == 1
    ]
    if len(blank) > 1 and ctx.detected.mode == CONTINUOUS:
        # One fact, one finding: continuous processing wrote every one of them (a micro-batch
        # restart of it fails once, on the newest; WatermarkTracker in MicroBatchExecution).
        names = [e.file.path for e in blank]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        yield Finding(
            Code.OFFSETS_METADATA_LINE_EMPTY,
            f"{shown} have an empty metadata line, as only continuous processing writes.",
            paths=tuple(names),
            batch_ids=tuple(e.batch_id for e in blank),
        )
        blank = []
    for entry in blank:
        yield Finding(
            Code.OFFSETS_METADATA_LINE_EMPTY,
            f"{entry.file.path} has an empty metadata line, as only continuous processing writes.",
            paths=(entry.file.path,),
            batch_ids=(entry.batch_id,),
        )
    latest = ctx.offsets(ctx.latest)
    seq = latest.record if latest is not None else None
    md = seq.metadata if seq is not None else None
    partitions = md.conf_value("spark.sql.shuffle.partitions") if md is not None else None
    if latest is not None and partitions is not None and java_parse_int(partitions) is None:
        yield Finding(
            Code.PINNED_CONF_INVALID,
            f"{latest.file.path} pins spark.sql.shuffle.partitions={partitions}, which is not an int; Spark "
            "sets the pinned confs on restart and refuses it.",
            paths=(latest.file.path,),
            batch_ids=(latest.batch_id,),
        )
    if latest is not None and seq is not None and md is not None and not md.has_conf:
        fatal_state = ctx.stateful is True and ctx.legacy_state_formats_differ(seq)
        fatal_43 = (
            ctx.target.repartition_check and ctx.committed is not None and latest.batch_id > ctx.committed
        )
        code = Code.OFFSETS_WITHOUT_CONF_FATAL if (fatal_state or fatal_43) else Code.OFFSETS_WITHOUT_CONF
        why = (
            "; the state was written with newer state formats than the legacy defaults Spark falls back to"
            if fatal_state
            else ("; Spark 4.3 reads spark.sql.shuffle.partitions from it" if fatal_43 else "")
        )
        yield Finding(
            code,
            f"{latest.file.path} pins no SQL confs (no 'conf' in its metadata line){why}.",
            paths=(latest.file.path,),
            batch_ids=(latest.batch_id,),
        )


def check_repartition_marker(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD012: 4.3 treats an uncommitted offsets/L pinning other shuffle partitions as a repartition."""
    latest, k = ctx.latest, ctx.committed
    if latest is None or k is None or latest <= k or latest == 0:
        return
    cur, prev = ctx.offsets(latest), ctx.offsets(latest - 1)
    if cur is None or prev is None or cur.record is None or prev.record is None:
        return
    if cur.record.metadata is None or prev.record.metadata is None:
        return
    a = prev.record.metadata.conf_value("spark.sql.shuffle.partitions")
    b = cur.record.metadata.conf_value("spark.sql.shuffle.partitions")
    if a is not None and b is not None and a != b and ctx.target.repartition_check:
        yield Finding(
            Code.UNFINISHED_REPARTITION,
            f"{cur.file.path} pins spark.sql.shuffle.partitions={b} but {prev.file.path} pins {a}, and batch "
            f"{latest} has no commit.",
            paths=(prev.file.path, cur.file.path),
            batch_ids=(latest,),
        )


def check_offsets_tail(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD101/CD102/CD103/CD109: the file below the newest offsets file."""
    latest = ctx.latest
    code = ctx.tail_gap_code()
    if latest is None:
        return
    if code is None:
        if ctx.async_pattern and ctx.is_async:
            code = Code.ASYNC_PROGRESS_LOG
        else:
            return
    prev = ctx.snapshot.offsets.newest_below(latest)
    prev_id = prev.batch_id if prev is not None else None
    paths = (f"offsets/{latest}",) + ((prev.file.path,) if prev is not None else ())
    offsets_text, commits_text = range_text(ctx.offsets_ids), range_text(ctx.commit_ids)
    details = (
        ("latest", latest),
        ("previous", prev_id),
        ("offsets", offsets_text),
        ("commits", commits_text),
        ("async_restart_works", True),
        ("sync_restart_works", ctx.offsets(latest - 1) is not None),
    )
    if code == Code.ASYNC_PROGRESS_LOG:
        # What the async restart runs first must say what the prediction says: a committed newest
        # batch is not re-run (AsyncProgressTrackingMicroBatchExecution resumes after it).
        then = (
            f"an async restart starts new batch {latest + 1}"
            if ctx.commit(latest) is not None
            else f"an async restart re-runs batch {latest} (from offsets/{prev_id} to offsets/{latest})"
        )
        yield Finding(
            code,
            f"offsets ({offsets_text}) and commits ({commits_text}) are the sparse "
            f"logs of async progress tracking; {then}.",
            paths=paths,
            batch_ids=(latest,),
            details=details,
        )
    elif code == Code.ASYNC_TAIL_SYNC_RESTART:
        yield Finding(
            code,
            f"offsets/{latest} exists but offsets/{latest - 1} does not: the logs were written by async "
            f"progress tracking, so a synchronous restart fails ('batch {latest - 1} doesn't exist') while an "
            "async restart works.",
            paths=paths,
            batch_ids=(latest - 1, latest),
            details=details,
        )
    elif code == Code.OFFSETS_PREDECESSOR_MISSING:
        yield Finding(
            code,
            f"offsets/{latest} exists but offsets/{latest - 1} does not, and the logs are not those of async "
            "progress tracking (the file was deleted or lost).",
            paths=paths,
            batch_ids=(latest - 1, latest),
            details=details,
        )
    else:
        yield Finding(
            code,
            f"offsets/{latest} jumps ahead of offsets/{prev_id} (missing {prev_id + 1 if prev_id is not None else 0}"
            f"..{latest - 1}) and no commit follows the gap.",
            paths=paths,
            batch_ids=(latest,),
            details=details,
        )


def check_commit_consistency(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD104 commit ahead; CD105 commits behind; CD106 uncommitted newest; CD110 commits, no offsets."""
    latest, k = ctx.latest, ctx.committed
    if latest is None:
        if k is not None:
            yield Finding(
                Code.COMMITS_WITHOUT_OFFSETS_LOG,
                f"commits/ holds {ids_text('batch', ctx.commit_ids)} but offsets/ holds none.",
                paths=tuple(f"commits/{c}" for c in ctx.commit_ids[-3:]),
                batch_ids=ctx.commit_ids[-3:],
            )
        return
    if ctx.is_continuous:
        return
    if k is not None and k > latest:
        ahead = tuple(c for c in ctx.commit_ids if c > latest)
        yield Finding(
            Code.COMMIT_AHEAD_OF_OFFSETS,
            f"commits/{k} exists but offsets/{k} is missing: the newest commit is ahead of the newest offsets "
            f"file offsets/{latest}.",
            paths=tuple(f"commits/{c}" for c in ahead),
            batch_ids=ahead,
            details=(("latest_offsets", latest), ("latest_commit", k)),
        )
    elif k is not None and k < latest - 1 and not (ctx.is_async and ctx.async_pattern):
        yield Finding(
            Code.COMMITS_BEHIND,
            f"the newest commit is commits/{k} but the newest offsets file is offsets/{latest}: "
            f"{span_text('batch', k + 1, latest - 1)} will not be re-run.",
            paths=(f"commits/{k}", f"offsets/{latest}"),
            batch_ids=id_range(k + 1, latest - 1),
            details=(("latest_offsets", latest), ("latest_commit", k)),
        )
    elif k is None or k < latest:
        yield Finding(
            Code.LATEST_BATCH_UNCOMMITTED,
            f"offsets/{latest} has no commit"
            + (" (no commits at all)" if k is None else f" (newest commit: commits/{k})")
            + (
                # MicroBatchExecution.initializeExecution: purgeAfter(K) with a RealTimeTrigger.
                f"; a real-time restart deletes offsets/{latest} and plans batch {latest} again from "
                + ("the initial offsets" if k is None else f"offsets/{k}")
                + " (it reads what its tasks reach, not the logged range)."
                if ctx.is_real_time
                else f"; Spark re-runs batch {latest} with its logged offsets."
            ),
            paths=(f"offsets/{latest}",),
            batch_ids=(latest,),
        )


def check_log_holes(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD107 holes in offsets below L-1; CD108 commits whose offsets are missing."""
    if ctx.async_pattern:
        return
    latest = ctx.latest
    if latest is None:
        return
    for a, b in ctx.snapshot.offsets.holes():
        if b >= latest - 1:
            continue
        yield Finding(
            Code.OFFSETS_HOLE,
            f"offsets/ has no files for batches {a}..{b} between offsets/{a - 1} and offsets/{b + 1}."
            if b > a
            else f"offsets/{a} is missing between offsets/{a - 1} and offsets/{a + 1}.",
            paths=(f"offsets/{a - 1}", f"offsets/{b + 1}"),
            batch_ids=id_range(a, b),
        )
    first = ctx.offsets_ids[0]
    orphans = tuple(c for c in ctx.commit_ids if first <= c < latest and ctx.offsets(c) is None)
    if ctx.is_continuous:
        orphans = tuple(c for c in orphans if c != ctx.committed)
    if orphans:
        yield Finding(
            Code.COMMIT_WITHOUT_OFFSETS,
            f"commits/{orphans[0]} exists but offsets/{orphans[0]} is missing"
            + (f" (also {len(orphans) - 1} more)" if len(orphans) > 1 else "")
            + ".",
            paths=tuple(f"commits/{c}" for c in orphans),
            batch_ids=orphans,
        )


def check_continuous(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD701 newest committed epoch without offsets; CD702 offsets beyond the newest commit."""
    if not ctx.is_continuous:
        return
    k = ctx.committed
    if k is None:
        return
    if ctx.offsets(k) is None:
        yield Finding(
            Code.CONTINUOUS_COMMIT_WITHOUT_OFFSETS,
            f"commits/{k} exists but offsets/{k} is missing; continuous processing resumes from offsets/{k}.",
            paths=(f"commits/{k}",),
            batch_ids=(k,),
        )
    ahead = tuple(o for o in ctx.offsets_ids if o > k)
    if ahead:
        yield Finding(
            Code.CONTINUOUS_EPOCHS_AHEAD,
            f"offsets/ holds {ids_text('epoch', ahead)} after the newest commit commits/{k}.",
            paths=tuple(f"offsets/{o}" for o in ahead),
            batch_ids=ahead,
        )
