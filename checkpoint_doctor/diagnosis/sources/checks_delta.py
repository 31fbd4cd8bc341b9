"""The checkpoint's Delta sources against their tables' logs (CD208-CD210), and the tables that
could not be judged: unreadable (CD215) or copies of one table none is guessed of (CD216). Pure.

The tables come from the I/O edge (``checkpoint_doctor.world.delta_log``), paired with the checkpoint
there (found beside it, named with ``--delta-table``, or under an audit's roots:
``DiagnoseOptions.delta_pairing``, see :mod:`checkpoint_doctor.world.delta_pairing`), or named
only (``DiagnoseOptions.delta``, paired here by the same rule); without any nothing is judged and the
matrix says how to check. What a paired source's restart does is
:func:`checkpoint_doctor.diagnosis.sources.delta.predict`, proven by the restarts real Spark recorded
in ``fixtures/delta/``."""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence

from checkpoint_doctor.diagnosis.codes import WARNING, Code
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.model import NOT_JUDGED, TABLES_NOT_JUDGED, Finding, RestartPrediction
from checkpoint_doctor.diagnosis.sources.delta import DeltaSourceRestart, predict_worded, turned_off
from checkpoint_doctor.diagnosis.spark_line import SparkError
from checkpoint_doctor.model import DeltaOffset, SourceOffset
from checkpoint_doctor.model_delta import DeltaCommit, DeltaTable
from checkpoint_doctor.reading.positions import delta_sources, newest_sources
from checkpoint_doctor.world.delta_pairing import Candidate, DeltaPairing, pair_tables

#: The flag that names a Delta table, quoted wherever tables were not checked.
FLAG = "--delta-table PATH"

_CODES = {
    "table-replaced": Code.DELTA_SOURCE_TABLE_REPLACED,
    "versions-gone": Code.DELTA_SOURCE_VERSIONS_GONE,
    "data-changed": Code.DELTA_SOURCE_CHANGE_REFUSED,
    "schema-changed": Code.DELTA_SOURCE_SCHEMA_CHANGED,
    "type-widened": Code.DELTA_SOURCE_TYPE_WIDENED,
    "change-data-missing": Code.DELTA_CHANGE_DATA_MISSING,
}

#: The Delta source options read only by a query's first batch (DeltaSource.getStartingOffset).
_STARTING = ("startingversion", "startingtimestamp")


def job_source_options(ctx: Context, index: int) -> dict[str, str] | None:
    """The options the job (``--job``) gives its Delta source ``index`` (Spark's order of the
    sources, the offsets' order), or None: no job, or no Delta source there. None of them is in the
    checkpoint (``ignoreDeletes``, ``skipChangeCommits``, ``readChangeFeed``, ``startingVersion``,
    ``failOnDataLoss``): without a job Delta's defaults are assumed."""
    found = dict(ctx.options.delta_source_options()).get(index)
    return dict(found) if found is not None else None


def options_said(options: dict[str, str] | None) -> str:
    """The options that decide a Delta source's restart, as the job sets them (``k=v, ...``)."""
    decisive = ("readchangefeed", "ignoredeletes", "ignorechanges", "skipchangecommits", "failondataloss")
    return ", ".join(f"{k}={v}" for k, v in (options or {}).items() if k.lower() in decisive)


def pairing_of(
    sources: Sequence[SourceOffset] | None,
    tables: Sequence[DeltaTable] | None,
    query_id: str | None,
    pairing: DeltaPairing | None = None,
) -> DeltaPairing | None:
    """Return the pairing made at the edge, else that of the tables named with ``--delta-table``
    (:func:`~checkpoint_doctor.world.delta_pairing.pair_tables`), else None (nothing looked at)."""
    if pairing is not None:
        return pairing
    if tables is None:
        return None
    # A table read with its commits shows the ids it had before (CREATE OR REPLACE keeps the log), as
    # the edge's pairing sees them (world.delta.pair_beside): so a replaced source pairs by its old
    # id here too, whatever else is named. Without it ``apply``, which re-plans from the tables the
    # plan holds only (its delta_table preconditions), paired a replaced table only when it was the
    # one Delta source ("only named"), and refused its own plan of two sources (issue 33 item 7).
    candidates = [
        Candidate(
            t,
            named=True,
            former_ids=frozenset({c.table_id for c in t.commits if c.table_id} - {t.table_id}),
        )
        for t in tables
    ]
    return pair_tables(delta_sources(sources), query_id, candidates)


def context_pairing(ctx: Context) -> DeltaPairing | None:
    """Return the pairing of a diagnosis (made at the edge, or of the tables named only)."""
    if ctx.options.delta_pairing is not None:
        return ctx.options.delta_pairing
    if ctx.options.delta is None:
        return None
    return pairing_of(newest_sources(ctx.snapshot), ctx.options.delta, ctx.snapshot.query_id)


def pair(
    sources: Sequence[tuple[int, DeltaOffset]], pairing: DeltaPairing
) -> list[tuple[int, DeltaOffset, DeltaTable | None]]:
    """Pair each Delta source with its table, as the pairing says (by source index)."""
    return [(n, off, pairing.source_table(n)) for n, off in sources]


def restarts(
    ctx: Context,
    next_batch_id: int | None,
    rerun: bool,
    start: Sequence[SourceOffset] | None,
    end: Sequence[SourceOffset] | None,
) -> list[tuple[int, DeltaOffset, DeltaTable, DeltaSourceRestart]]:
    """Each paired Delta source's restart. A re-run batch reads (start, end]; a new batch after the
    newest offsets ``start`` first replays (offsets of the batch before, ``start``] (V1 sources)."""
    pairing = context_pairing(ctx)
    if pairing is None or not any(p.source is not None for p in pairing.pairs):
        return []
    target = ctx.target
    if not target.has_delta:
        return []
    if rerun:
        current, before = end, start
    else:
        current = start
        entry = ctx.offsets(next_batch_id - 2) if next_batch_id is not None and next_batch_id >= 2 else None
        before = entry.record.sources if entry is not None and entry.record is not None else None
    previous = dict(delta_sources(before))
    pairs = pair(delta_sources(current), pairing)
    return [
        (
            n,
            off,
            t,
            predict_worded(
                off,
                t,
                lambda: target.delta_new_wording,
                job_source_options(ctx, n),
                previous.get(n),
                lambda: target.delta_release,
            ),
        )
        for n, off, t in pairs
        if t is not None
    ]


def restart_error(
    ctx: Context,
    next_batch_id: int | None,
    rerun: bool,
    start: Sequence[SourceOffset] | None,
    end: Sequence[SourceOffset] | None,
) -> tuple[SparkError, Code] | None:
    """The error of the first Delta source that refuses the restart, with its code, or None. The
    source's options are the job's (``--job``); without one Delta's defaults (they are not in the
    checkpoint)."""
    for _, _, _, restart in restarts(ctx, next_batch_id, rerun, start, end):
        if restart.error is not None and restart.code is not None:
            return restart.error, _CODES[restart.code]
    return None


def reads_notes(
    ctx: Context,
    next_batch_id: int | None,
    rerun: bool,
    start: Sequence[SourceOffset] | None,
    end: Sequence[SourceOffset] | None,
) -> list[str]:
    """What each Delta source reads on restart, as the table's log says."""
    judged = ctx.options.delta or (ctx.options.delta_pairing is not None and ctx.options.delta_pairing.pairs)
    if judged and not ctx.target.has_delta:
        pairing = context_pairing(ctx)
        if delta_sources(start or end) or (pairing is not None and pairing.sink_tables):
            return [NOT_JUDGED.format(line=ctx.target.line)]
    out = []
    unjudged = tables_not_judged(context_pairing(ctx))
    if unjudged:
        out.append(TABLES_NOT_JUDGED.format(why=unjudged))
    for n, _, table, restart in restarts(ctx, next_batch_id, rerun, start, end):
        if restart.error is None and restart.versions is not None:
            first, last = restart.versions
            feed = " as its change data feed (readChangeFeed)" if restart.change_feed else ""
            out.append(f"Delta source {n} reads versions {first}..{last} of {table.url}{feed}")
        elif restart.error is None:
            out.append(
                f"Delta source {n} has read every version of {table.url} (latest {table.latest_version})"
            )
    return out


def check_delta_sources(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD208-CD210: a Delta source's table was replaced, its log cleaned past the checkpoint's
    version, or it changed in a way the source refuses (deleted or updated rows)."""
    p = prediction
    for n, off, table, restart in restarts(ctx, p.next_batch_id, p.rerun, p.start_offsets, p.end_offsets):
        if restart.error is None or restart.code is None:
            continue
        # The versions not read yet start at the newest offsets' (batch N's start when it is re-run).
        resume = restart.from_version if p.rerun or restart.from_version is None else off.reservoir_version
        if restart.code == "table-replaced":
            text = (
                f"Delta source {n} read table {off.reservoir_id}, but {table.url} is table {table.table_id} "
                "(replaced, deleted and written anew, or another table the query now reads): the restart fails with "
                "DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE."
            )
        elif restart.code == "versions-gone" and restart.change_feed:
            version = restart.from_version
            text = (
                f"Delta source {n} reads the change data feed of {table.url} (readChangeFeed, the job's option) "
                f"and resumes at version {version} (the newest offsets are at {off.reservoir_version}), but its "
                f"log starts at version {table.earliest_version} (log cleanup): the change data feed asks for the "
                f"table as of version {version} first and the restart fails with {restart.error.error_class}, "
                "whatever failOnDataLoss says."
            )
        elif restart.code == "versions-gone":
            version = restart.from_version
            # The versions the query has not read start at the newest offsets' (a committed batch's
            # replayed range is listed, not read again), at the batch's start when it is re-run.
            unread = version if p.rerun or version is None else off.reservoir_version
            text = (
                f"Delta source {n} resumes reading {table.url} at version {version} (the newest offsets are at "
                f"{off.reservoir_version}), but its log starts at version {table.earliest_version} (log cleanup): "
                f"the restart fails with DELTA_MISSING_FILES_UNEXPECTED_VERSION; with failOnDataLoss=false it "
                f"skips versions {unread}..{table.earliest_version - 1}, not read yet."
            )
        elif restart.code in ("schema-changed", "type-widened") and restart.schema_change is not None:
            text = (
                f"Delta source {n} resumes reading {table.url} at version {restart.from_version} (the newest "
                f"offsets are at {off.reservoir_version}), and since then {restart.schema_change.words()} (the table "
                f"is at version {table.latest_version}): the restart fails with {restart.error.error_class}."
            )
        elif restart.code == "change-data-missing":
            text = (
                f"Delta source {n} reads the change data feed of {table.url} (readChangeFeed, the job's option), "
                f"but the feed is off (delta.enableChangeDataFeed = false) at version {restart.refused_version}, "
                f"where the restart's batch starts: it fails with DELTA_MISSING_CHANGE_DATA for version "
                f"{restart.refused_version}; the versions written while the feed is off have no change data to read."
            )
        else:
            text = f"Delta source {n}: {restart.error.summary} in {table.url}; the restart fails planning the first batch."
            text += _options_words(job_source_options(ctx, n), table, restart.refused_version)
        yield Finding(
            _CODES[restart.code],
            text,
            paths=(prediction.start_from,) if prediction.start_from else (),
            batch_ids=(prediction.next_batch_id,) if prediction.next_batch_id is not None else (),
            details=(
                ("source", n),
                ("table", table.url),
                ("table_id", table.table_id),
                ("checkpoint_table_id", off.reservoir_id),
                ("earliest_version", table.earliest_version),
                *(
                    (
                        ("from_version", restart.from_version),
                        ("resume_version", resume),
                        ("latest_version", table.latest_version),
                        ("change", restart.schema_change.words()),
                        ("unread_rows", _rows(table, resume) if resume is not None else None),
                    )
                    if restart.schema_change is not None
                    else ()
                ),
            ),
        )


def _rows(table: DeltaTable, version: int) -> int | None:
    """The rows the data-change adds of ``table``'s commits from ``version`` on hold (None: not counted)."""
    rows = [c.rows for c in table.commits if c.version >= version]
    return None if None in rows else sum(r for r in rows if r is not None)


def _options_words(options: dict[str, str] | None, table: DeltaTable, version: int | None) -> str:
    """What the job's options do about a refused commit (ignoreDeletes tolerates whole-file deletes
    only: a DELETE that rewrites a file is an update to Delta, DeltaSource.validateCommitAndDecideSkipping)."""
    said = options_said(options)
    if options is None:
        return " (Delta's default options: pass the job with --job to judge the options it reads with)"
    commit = next((c for c in table.commits if c.version == version), None)
    if (
        commit is not None
        and commit.adds
        and any(k.lower() == "ignoredeletes" and str(v).lower() == "true" for k, v in options.items())
    ):
        return (
            f" The job reads with {said}: ignoreDeletes tolerates only deletes of whole files, and version "
            f"{version} ({commit.operation or 'a commit'}) removed {commit.removes} file(s) and added "
            f"{commit.adds} (rows deleted from a file rewrite it): Delta counts that as a data update."
        )
    return f" The job reads with {said or 'none of the options that decide it'}."


def check_delta_options(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD246: the job's skipChangeCommits passes over commits that add rows (an UPDATE's new values,
    a MERGE's inserted rows: data never read); CD247: the job's startingVersion or startingTimestamp,
    which a restart does not read."""
    p = prediction
    for n, off, table, restart in restarts(ctx, p.next_batch_id, p.rerun, p.start_offsets, p.end_offsets):
        known = job_source_options(ctx, n)
        options = known or {}
        turned = turned_off(table, off.reservoir_version)
        if known is None and restart.error is None and turned is not None:
            # Without the job the source is judged with Delta's defaults; a change data feed source
            # (readChangeFeed, not in the checkpoint) meets the commit that turned the feed off.
            yield Finding(
                Code.DELTA_CHANGE_DATA_MISSING,
                f"Delta source {n}: version {turned.version} of {table.url} turned the change data feed off "
                f"(delta.enableChangeDataFeed = false). Judged with Delta's default options the restart starts; "
                f"if the job reads the change data feed (readChangeFeed, a job option not in the checkpoint), a "
                f"batch that starts at a version where the feed is off fails with DELTA_MISSING_CHANGE_DATA: "
                "pass the job with --job to judge it.",
                paths=(table.url,),
                details=(("source", n), ("table", table.url), ("version", turned.version)),
                effective_severity=WARNING,
            )
        if restart.error is None and restart.feed_off_at is not None and restart.versions is not None:
            first, last = restart.versions
            yield Finding(
                Code.DELTA_CHANGE_DATA_MISSING,
                f"Delta source {n} reads the change data feed of {table.url} (readChangeFeed, the job's option), "
                f"and version {restart.feed_off_at} turned the feed off: the restart starts and reads versions "
                f"{first}..{last} (CDCReader checks the feed at a batch's start version only: the rows written "
                f"while it is off are read as inserts, their deletes and updates were not recorded), but the "
                f"next batch starts at version {last + 1}, where the feed is off, and fails with "
                f"DELTA_MISSING_CHANGE_DATA as soon as the table has a new version. Turn the feed on again.",
                paths=(table.url,),
                details=(("source", n), ("table", table.url), ("version", restart.feed_off_at)),
                effective_severity=WARNING,
            )
        starting = [f"{k}={v}" for k, v in options.items() if k.lower() in _STARTING]
        if starting:
            yield Finding(
                Code.DELTA_STARTING_OPTION_IGNORED,
                f"Delta source {n}: the job sets {', '.join(starting)}, which Delta reads only when the checkpoint "
                f"holds no offset for the source: this restart resumes at the checkpoint's version and reads "
                f"{table.url} from there.",
                details=(("source", n), ("table", table.url), ("options", tuple(starting))),
            )
        if restart.error is not None or not restart.skipped_changes:
            continue
        parts = [never_read(c) for c in restart.skipped_changes]
        yield Finding(
            Code.DELTA_CHANGE_COMMITS_SKIPPED,
            f"Delta source {n} reads {table.url} with skipChangeCommits (the job's option): commits that remove "
            f"files are skipped whole, the rows they add included: {'; '.join(parts)}. This query never reads "
            "them: data never read, not a delete the stream tolerates.",
            paths=(table.url,),
            batch_ids=(p.next_batch_id,) if p.next_batch_id is not None else (),
            details=(
                ("source", n),
                ("table", table.url),
                ("skipped_versions", tuple(c.version for c in restart.skipped_changes)),
                ("inserted_never_read", sum(c.inserted or 0 for c in restart.skipped_changes)),
                ("updated_never_read", sum(c.updated or 0 for c in restart.skipped_changes)),
            ),
        )


def never_read(commit: DeltaCommit) -> str:
    """What ``skipChangeCommits`` never reads of a commit that removes and adds files: its inserted
    and updated rows (``operationMetrics``), among the rows of the files it adds (the rest are copies
    of rows read before)."""
    what = [f"{n} {w}" for n, w in ((commit.inserted, "inserted"), (commit.updated, "updated")) if n]
    rows = f"{commit.rows} row(s) in the files it adds" if commit.rows is not None else "rows not counted"
    said = (
        f"{' and '.join(what)} row(s) never read ({rows}, the rest copies of rows read before)"
        if what
        else rows
    )
    return f"version {commit.version} ({commit.operation or 'a commit'}): {said}"


def assumption(
    ctx_sources: Sequence[SourceOffset] | None,
    tables: Sequence[DeltaTable] | None,
    query_id: str | None,
    pairing: DeltaPairing | None = None,
) -> str | None:
    """What the matrix says about Delta tables: which were paired and how, which Delta source was
    not and how to pair it, or that none was looked at and how to check."""
    found = delta_sources(ctx_sources)
    chosen = pairing_of(ctx_sources, tables, query_id, pairing)
    if chosen is None:
        if not found:
            return None
        names = ", ".join(f"source {n} (table {off.reservoir_id})" for n, off in found)
        return f"Delta tables not checked ({names}): pass {FLAG} (repeatable) to compare the checkpoint with each table's log"
    if tables and not chosen.lines():
        return "Delta tables named but none pairs with this checkpoint"
    return chosen.text or None


def _settle(root: str, urls: Sequence[str]) -> str:
    """The commands that settle which of ``urls`` the query reads or writes, as they run."""
    return " or ".join(shlex.join(["checkpoint-doctor", "diagnose", root, "--delta-table", u]) for u in urls)


def tables_not_judged(pairing: DeltaPairing | None) -> str:
    """The Delta tables a restart cannot be judged against though its line has a Delta release
    (CD215, CD216), in words; empty when there is none."""
    if pairing is None:
        return ""
    parts = [f"{url} cannot be read ({Code.DELTA_TABLE_UNREADABLE})" for url, _ in pairing.unread]
    parts += [
        f"{len(urls)} copies of one table, none guessed ({Code.DELTA_TABLE_COPIES})"
        for urls in [*(u for _, u in pairing.copies), *pairing.sink_copies]
    ]
    return "; ".join(parts)


def check_delta_tables(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD215: a Delta table paired with the checkpoint or found beside it could not be read (issue 31
    item 8: it was named under the pairing only, and the exit stayed 0 where Spark may fail on the
    commit); CD216: copies of one table, equally near, that the pairing guessed none of (issue 31
    item 1: named, but the exit stayed 0). Neither judges a restart: the finding says so."""
    del prediction  # the tables' facts, the same in every cell
    pairing = context_pairing(ctx)
    if pairing is None:
        return
    certain = dict(pairing.unread_paired)
    for url, why in pairing.unread:
        source = certain.get(url)
        if url in certain and source is None:
            whose = (
                f"The Delta table {url} named with --delta-table cannot be read: {why}. The restart is not "
                "judged against it: the query reads or writes this log, which Delta may fail on or read "
                "otherwise."
            )
        elif source is not None:
            whose = (
                f"Delta source {source}'s table {url} cannot be read: {why}. The "
                f"restart of source {source} is not judged: it reads this log, which Delta may fail on or "
                "read otherwise."
            )
        else:
            whose = (
                f"The Delta table {url} beside the checkpoint cannot be read: {why}. It may be this query's "
                "source or sink (its id and transactions are unread), and its restart is not judged."
            )
        yield Finding(
            Code.DELTA_TABLE_UNREADABLE,
            f"{whose} Restore the file from a backup of the table and diagnose again.",
            paths=(url,),
            details=(("table", url), ("reason", why), ("source", source)),
            effective_severity=None if url in certain else WARNING,
        )
    root = ctx.snapshot.root
    for n, urls in pairing.copies:
        table_id = dict(pairing.unpaired).get(n)
        yield Finding(
            Code.DELTA_TABLE_COPIES,
            f"Delta source {n} (table {table_id}): {len(urls)} tables have its id, equally near "
            f"({', '.join(urls)}): copies of one table (a backup?), and which one the query reads is not "
            f"guessed, so its restart is not judged and no plan changes the checkpoint for it. Name the table "
            f"it reads: {_settle(root, urls)}",
            paths=tuple(urls),
            details=(("source", n), ("table_id", table_id), ("tables", tuple(urls))),
        )
    for urls in pairing.sink_copies:
        yield Finding(
            Code.DELTA_TABLE_COPIES,
            f"Delta sink: {len(urls)} tables hold this query's transactions under one table id, equally near "
            f"({', '.join(urls)}): copies of one table (a backup?), and which one the query writes is not "
            f"guessed, so the sink is not judged and no plan changes the checkpoint for it. Name the table it "
            f"writes: {_settle(root, urls)}",
            paths=tuple(urls),
            details=(("source", None), ("tables", tuple(urls))),
        )
