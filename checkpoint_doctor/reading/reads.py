"""The read plan: which files of a checkpoint to read at a depth, and which to read after a first
look (:func:`follow_up_reads`). Pure: it takes the index of a listing and returns paths; the
pipeline (:mod:`checkpoint_doctor.reading.pipeline`) reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from checkpoint_doctor.reading.layout import (
    Layout,
    LogIndex,
    StateFileName,
    StoreIndex,
    parse_state_file_name,
)
from checkpoint_doctor.reading.snapshot import DEEP, DEFAULT_DEPTH, NEWEST_FEW, CheckpointSnapshot

T = TypeVar("T")


def _newest(ids: list[int], n: int) -> list[int]:
    return sorted(ids)[-n:] if n > 0 else []


def _expected_next_batch(layout: Layout) -> int:
    offsets = layout.offsets.batches
    commits = layout.commits.batches
    if not offsets:
        return 0
    latest = max(offsets)
    if commits and max(commits) == latest:
        return latest + 1
    return latest


#: Bytes read of a state data file (``.delta``, ``.snapshot``, ``.changelog``): only its compression
#: stream header is checked (8 bytes at most), and a snapshot can be gigabytes.
DATA_HEAD_BYTES = 64


def head_only(path: str) -> bool:
    """Return whether a planned read needs only the file's head (a state data file)."""
    if not path.startswith("state/"):
        return False
    parsed = parse_state_file_name(path.rpartition("/")[2])
    return parsed is not None and parsed.kind != "zip"


def _store_reads(
    store: StoreIndex,
    kind: str,
    names_of: Callable[[Sequence[tuple[StateFileName, str]], int], tuple[str, ...]],
    version: int,
) -> list[str]:
    """The paths of a store's files that ``names_of`` picks for ``version``: derived once per name
    set when stores share their roles (a fleet's partitions list the same names), else per store."""
    roles = store.shared_roles()
    names = (
        roles.derived((kind, version), lambda data: names_of(data, version))
        if roles is not None
        else names_of(store.data, version)
    )
    return [f"{store.path}/{name}" for name in names]


def _state_data_reads(store: StoreIndex, version: int) -> list[str]:
    """The data files of the version the next batch loads (its delta, snapshot or changelog): the
    files a crash mid-write or an overwrite damages, checked for their stream header."""
    return _store_reads(store, "data", _data_names, version)


def _data_names(data: Sequence[tuple[StateFileName, str]], version: int) -> tuple[str, ...]:
    return tuple(name for p, name in data if p.kind != "zip" and p.version == version)


def _rocksdb_zip_reads(store: StoreIndex, version: int) -> list[str]:
    return _store_reads(store, "zips", _zip_names, version)


def _zip_names(data: Sequence[tuple[StateFileName, str]], version: int) -> tuple[str, ...]:
    """The zips a RocksDB restart loads: the newest at or below ``version`` and the newest of all."""
    zips = [(p.version, name) for p, name in data if p.kind == "zip"]
    if not zips:
        return ()
    newest_at = max((v for v, _ in zips if v <= version), default=None)
    wanted = {newest_at, max(v for v, _ in zips)} - {None}
    return tuple(name for v, name in zips if v in wanted)


def _log_reads(log: LogIndex, other: LogIndex, deep: bool) -> list[str]:
    """``offsets/`` or ``commits/``: the newest few, the one below the newest, and the id the
    other log ends at (a restart compares them)."""
    ids = sorted(log.batches)
    if deep:
        return [log.batches[i].path for i in ids]
    chosen = set(_newest(ids, NEWEST_FEW))
    if ids:
        latest = ids[-1]
        below = [i for i in ids[-NEWEST_FEW - 1 :] if i < latest]
        if below:
            chosen.add(below[-1])
        if other.batches:
            k = max(other.batches)
            if k in log.batches:
                chosen.add(k)
    return [log.batches[i].path for i in sorted(chosen)]


def _source_reads(src: LogIndex, deep: bool) -> list[str]:
    """``sources/<n>/``: batch 0 (initial offsets, rate start), the newest file and newest compact."""
    if deep:
        return [src.batches[i].path for i in sorted(src.batches)] + [
            src.compacts[i].path for i in sorted(src.compacts)
        ]
    paths = [src.batches[0].path] if 0 in src.batches else []
    for i in _newest(sorted(set(src.batches) | set(src.compacts)), 1):
        if i in src.batches and i != 0:
            paths.append(src.batches[i].path)
        if i in src.compacts:
            paths.append(src.compacts[i].path)
    if src.compacts:
        paths.append(src.compacts[max(src.compacts)].path)
    return paths


def _state_reads(layout: Layout) -> list[str]:
    """Operator metadata, schema headers, the RocksDB zips a restart loads and the heads of the
    data files of the version it loads."""
    load_version = _expected_next_batch(layout)
    paths: list[str] = []
    for op in layout.operators.values():
        if op.metadata is not None:
            paths.append(op.metadata.path)
        if op.metadata_v2:
            # transformWithState: the newest operator metadata v2 and the schema files (a few
            # hundred bytes each) a restart reads through it (TransformWithStateExec).
            paths.append(op.metadata_v2[max(op.metadata_v2)].path)
            paths.extend(f.path for f in op.state_schema_files)
        for store in op.stores.values():
            if store.schema is not None:
                paths.append(store.schema.path)
            paths.extend(_rocksdb_zip_reads(store, load_version))
            paths.extend(_state_data_reads(store, load_version))
    return paths


def _sink_reads(sink: LogIndex, deep: bool) -> list[str]:
    """``_spark_metadata/``: every file, or the newest batch file and the newest compact."""
    ids, compacts = sorted(sink.batches), sorted(sink.compacts)
    if not deep:
        ids, compacts = _newest(ids, 1), _newest(compacts, 1)
    return [sink.batches[i].path for i in ids] + [sink.compacts[i].path for i in compacts]


def plan_reads(
    layout: Layout, depth: str = DEFAULT_DEPTH, sink: LogIndex | None = None
) -> tuple[list[str], list[str]]:
    """Return (checkpoint paths, sink-log paths) to read for a snapshot of this depth.

    Default depth reads what a restart reads (``metadata``; ``offsets/L``, ``offsets/L-1`` or the
    newest file below ``L``; ``commits/K``; ``offsets/K`` for continuous mode), the newest few of
    each log, the newest files of each source log, operator metadata and schema headers, and for
    RocksDB the zips a restart would load. The count does not grow with retained batches.
    ``deep`` reads every batch file of every log.
    """
    deep = depth == DEEP
    paths = ["metadata"] if layout.metadata is not None else []
    paths += _log_reads(layout.offsets, layout.commits, deep)
    paths += _log_reads(layout.commits, layout.offsets, deep)
    for src in layout.sources.values():
        paths += _source_reads(src, deep)
    paths += _state_reads(layout)
    sink_paths = _sink_reads(sink, deep) if sink is not None else []
    return list(dict.fromkeys(paths)), list(dict.fromkeys(sink_paths))


def follow_up_reads(snapshot: CheckpointSnapshot) -> list[str]:
    """Return files worth reading after a first assembly: older RocksDB zips of a store whose
    newest zip names missing SSTs (Spark 4.3's auto snapshot repair falls back to them)."""
    paths: list[str] = []
    for op in snapshot.state.operators:
        for store in op.stores:
            present = set(store.sst_files)
            damaged = any(
                rec.record is not None and any(sst not in present for sst in rec.record.sst_files)
                for _, rec in store.zip_metadata
            )
            if not damaged:
                continue
            read = {name for name, _ in store.zip_metadata}
            paths.extend(f"{store.path}/{v}.zip" for v in store.zips if f"{v}.zip" not in read)
    return paths
