"""The Delta tables of a verdict, for the CLI and the Python API alike: those found beside the
checkpoint (:mod:`checkpoint_doctor.world.delta_discovery`) and those named with ``--delta-table``,
paired with it (:func:`checkpoint_doctor.world.delta_pairing.pair_tables`), each table paired
as a source then read on from the checkpoint's version. The audit pairs from its one listing with
the same rule (:mod:`checkpoint_doctor.fleet.delta`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from checkpoint_doctor.errors import CheckpointDoctorError
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.reading.positions import delta_sources, newest_sources
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.world.delta_discovery import NearbyTables, first_table_id, read_on, source_versions
from checkpoint_doctor.world.delta_log import read_table
from checkpoint_doctor.world.delta_pairing import (
    ONLY_BESIDE,
    SOURCE,
    Candidate,
    DeltaPairing,
    pair_tables,
)

TableRead = Callable[[str, "int | None"], DeltaTable]


def _why(exc: CheckpointDoctorError) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def complete_sources(
    pairing: DeltaPairing,
    snapshot: CheckpointSnapshot,
    storage_options: Mapping[str, Any] | None,
    read: TableRead | None = None,
) -> DeltaPairing:
    """Return the pairing with each table paired as a source read on from the checkpoint's version
    (its commits since: what the restart reads and Delta checks; another table than the checkpoint's,
    every commit still in its log). ``read(url, from_version)`` reads
    a table (default: :func:`~checkpoint_doctor.world.delta_log.read_table` through the storage layer);
    a table already read with its commits is kept. A table that cannot be read is unpaired, named."""
    versions = source_versions(snapshot)
    sources = dict(delta_sources(newest_sources(snapshot)))
    query_ids = (snapshot.query_id,) if snapshot.query_id else ()

    def default_read(url: str, from_version: int | None) -> DeltaTable:
        return read_table(url, storage_options, query_ids, from_version=from_version)

    reader = read or default_read
    done: dict[str, DeltaTable | CheckpointDoctorError] = {}
    pairs = []
    unread = list(pairing.unread)
    unpaired = list(pairing.unpaired)
    unread_paired = list(pairing.unread_paired)
    for pair in pairing.pairs:
        table = pair.table
        if pair.role != SOURCE or table.commits or pair.source is None:
            pairs.append(pair)
            continue
        offset = sources.get(pair.source)
        # Another table at the source's path (replaced, recreated: CD208) is read whole, as a named
        # one is: the way back (delta-table) starts at the version where it begins, which the
        # checkpoint's version of the old table says nothing of (a recreated log starts at 0 again).
        same = offset is not None and offset.reservoir_id == table.table_id
        version = versions.get(offset.reservoir_id) if offset is not None and same else None
        if table.url not in done:
            try:
                done[table.url] = reader(table.url, version)
            except CheckpointDoctorError as exc:
                done[table.url] = exc
        got = done[table.url]
        if isinstance(got, CheckpointDoctorError):
            unread.append((table.url, _why(got)))
            if pair.how != ONLY_BESIDE:  # a guess by elimination is not certainly the query's (CD215)
                unread_paired.append((table.url, pair.source))
            if offset is not None:
                unpaired.append((pair.source, offset.reservoir_id))
            continue
        pairs.append(replace(pair, table=got))
    return replace(
        pairing,
        pairs=tuple(pairs),
        unread=tuple(dict.fromkeys(unread)),
        unpaired=tuple(unpaired),
        unread_paired=tuple(dict.fromkeys(unread_paired)),
    )


def own_unread(pairing: DeltaPairing, first_id: Callable[[str], str | None]) -> DeltaPairing:
    """Return the pairing with each table that could not be read marked certainly the query's when
    its log's first version (``first_id(url)``: its ``metaData.id`` when created, one read) names
    the table id of a Delta source no table pairs with: CD215 is then an error, not a warning (a
    table beside the checkpoint whose newer commit is damaged, with no checksum to pair it by)."""
    wanted = {table_id: n for n, table_id in pairing.unpaired}
    known = {url for url, _ in pairing.unread_paired}
    if not wanted:
        return pairing
    found = []
    for url, _ in pairing.unread:
        if url not in known:
            n = wanted.get(first_id(url) or "")
            if n is not None:
                found.append((url, n))
    return replace(pairing, unread_paired=pairing.unread_paired + tuple(found)) if found else pairing


def pair_beside(
    snapshot: CheckpointSnapshot,
    nearby: NearbyTables,
    named: Sequence[DeltaTable] = (),
    storage_options: Mapping[str, Any] | None = None,
    job_paths: Mapping[str, int] | None = None,
    named_unread: Sequence[tuple[str, str, int | None]] = (),
) -> DeltaPairing | None:
    """Pair the checkpoint with the tables found beside it and those named, and read the source
    tables on from its version. None: no Delta source, no table looked at, nothing to say.
    ``job_paths``: the named tables a ``--job``'s Delta sources read (URL -> source index)."""
    sources = delta_sources(newest_sources(snapshot))
    if not sources and not nearby.tables and not named and not nearby.unread and not named_unread:
        return None
    jobs = job_paths or {}
    by_url: dict[str, Candidate] = {
        t.url: Candidate(t, named=True, job_source=jobs.get(t.url)) for t in named
    }
    for t in nearby.tables:
        by_url.setdefault(t.url, Candidate(t, beside=True))
    logs = dict(nearby.logs)
    ids = {c.table.table_id for c in by_url.values()}
    if any(off.reservoir_id not in ids for _, off in sources):
        # A source no current id pairs: the tables' first versions may show it (replaced since).
        for url, c in list(by_url.items()):
            if c.table.commits:
                former = {m.table_id for m in c.table.commits if m.table_id}
            else:
                first = first_table_id(url, logs.get(url, ()), storage_options) if url in logs else None
                former = {first} if first else set()
            by_url[url] = replace(c, former_ids=frozenset(former - {c.table.table_id}))
    pairing = pair_tables(
        sources,
        snapshot.query_id,
        list(by_url.values()),
        looked_at=nearby.looked_at or "named with --delta-table",
        unread=(*((u, why) for u, why, _ in named_unread), *nearby.unread),
    )
    found = {t.url: t for t in nearby.tables}
    query_ids = (snapshot.query_id,) if snapshot.query_id else ()

    def read(url: str, from_version: int | None) -> DeltaTable:
        # A table found beside: its checksum was read and its log listed; only the commits now.
        if url in logs and url in found:
            return read_on(found[url], logs[url], storage_options, from_version)
        return read_table(url, storage_options, query_ids, from_version=from_version)

    pairing = complete_sources(pairing, snapshot, storage_options, read)
    if named_unread:
        # Named (or a --job's path): certainly the query's, for the source the job reads it as.
        certain = tuple((u, n) for u, _, n in named_unread)
        pairing = replace(pairing, unread_paired=tuple(dict.fromkeys(pairing.unread_paired + certain)))
    return own_unread(
        pairing, lambda url: first_table_id(url, logs[url], storage_options) if url in logs else None
    )
