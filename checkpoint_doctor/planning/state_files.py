"""State files as the planner sees them: which version each file holds, which batch a rollback can
keep, and the bytes of an empty state. Pure.

State version = batch id + 1: batch ``B`` loads version ``B`` and commits ``B+1``
(``StateStoreId``, ``HDFSBackedStateStoreProvider.commit``).
"""

from __future__ import annotations

import io
import zipfile

from checkpoint_doctor.diagnosis.sources.files import FILE, source_kinds, source_logs
from checkpoint_doctor.diagnosis.state.chain import check_version
from checkpoint_doctor.reading.layout import parse_state_file_name
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot, StateStore

#: An empty HDFS state file as Spark writes it with the default lz4 codec (byte for byte what
#: 3.5.9 and 4.3.0 wrote as the ``1.delta`` of an empty first batch): ``LZ4BlockOutputStream``
#: framing ("LZ4Block", token 0x15 = raw block at level 5) around the end marker ``int -1``, with its
#: xxhash32 checksum (seed 0x9747b28c, 28 bits), then the empty end block.
EMPTY_LZ4_STATE = bytes.fromhex(
    "4c5a34426c6f636b150400000004000000db804d08ffffffff4c5a34426c6f636b15000000000000000000000000"
)

#: RocksDB checkpoint metadata of an empty store (``RocksDBCheckpointMetadata``, version line v1).
EMPTY_ROCKSDB_METADATA = b'v1\n{"sstFiles":[],"numKeys":0}'


def empty_rocksdb_zip() -> bytes:
    """Return a RocksDB checkpoint zip of an empty store: only Spark's ``metadata`` file.

    ``RocksDBFileManager.loadCheckpointFromDfs`` unzips it into an emptied working directory and
    RocksDB opens that directory with ``createIfMissing``, i.e. an empty database. Fixed timestamps
    keep plans deterministic.
    """
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        info = zipfile.ZipInfo("metadata", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        zf.writestr(info, EMPTY_ROCKSDB_METADATA)
    return buf.getvalue()


def file_version(name: str) -> int | None:
    """Return the state version a store file holds (data files and their ``.crc`` side files)."""
    parsed = parse_state_file_name(name)
    if parsed is None and name.endswith(".crc"):
        bare = name[1:-4] if name.startswith(".") else name[:-4]
        parsed = parse_state_file_name(bare)
        if parsed is None and bare.endswith(".crc"):
            parsed = parse_state_file_name(bare[:-4])
    return parsed.version if parsed is not None else None


def all_stores(snapshot: CheckpointSnapshot) -> list[StateStore]:
    """Return every state store of every operator."""
    return [s for op in snapshot.state.operators for s in op.stores]


def unique_id(snapshot: CheckpointSnapshot, store: StateStore, version: int) -> str | None:
    """Return the checkpoint-format-2 unique id of ``version`` from ``commits/(version-1)``."""
    commit = snapshot.commits.get(version - 1)
    if commit is None or commit.record is None or not commit.record.state_unique_ids:
        return None
    parts = dict(commit.record.state_unique_ids).get(store.operator_id)
    if parts is None or store.partition_id >= len(parts):
        return None
    op = next(o for o in snapshot.state.operators if o.operator_id == store.operator_id)
    idx = op.store_names.index(store.store_name) if store.store_name in op.store_names else 0
    per = parts[store.partition_id]
    return per[idx] if idx < len(per) else None


def unreadable(snapshot: CheckpointSnapshot) -> frozenset[str]:
    """Return the state files that were read and are damaged (a corrupt zip, delta or changelog)."""
    return frozenset(path for store in all_stores(snapshot) for path, _ in store.unreadable_files())


def loads(
    snapshot: CheckpointSnapshot, store: StateStore, version: int, damaged: frozenset[str] | None = None
) -> bool:
    """Whether a store loads ``version`` (the SSTs of its base zip present, no file of its chain
    damaged; no 4.3 auto repair)."""
    uid = unique_id(snapshot, store, version)
    bad = unreadable(snapshot) if damaged is None else damaged
    return check_version(store, version, unique_id=uid, unreadable=bad).ok


def _readable(entry: object) -> bool:
    return entry is not None and getattr(entry, "record", None) is not None


def rollback_target(snapshot: CheckpointSnapshot) -> tuple[int | None, str]:
    """Return R, the newest batch a rollback can keep, or None with why.

    R needs readable ``offsets/R``, ``offsets/(R-1)`` (a restart reads it) and ``commits/R``, state
    version R+1 loadable in every store, and the file sources' log entries a restart reads. Files that were not read count as unknown and are
    not relied on (``plan --deep`` reads every batch file).
    """
    offsets, commits = snapshot.offsets, snapshot.commits
    stores = all_stores(snapshot)
    damaged = unreadable(snapshot)
    unread = None
    for r in sorted(set(offsets.ids) & set(commits.ids), reverse=True):
        if not all(loads(snapshot, s, r + 1, damaged) for s in stores) or not file_source_logs_reach(
            snapshot, r
        ):
            continue
        needed = [offsets.get(r), commits.get(r)] + ([offsets.get(r - 1)] if r > 0 else [])
        if any(e is not None and e.record is None and e.failure is None for e in needed):
            unread = r if unread is None else unread
            continue
        if all(_readable(e) for e in needed):
            return r, ""
    if unread is not None:
        return None, f"batch {unread} and older were not read; run plan with --deep to consider them"
    if stores:
        return None, "no batch is consistent in offsets, commits and state"
    return None, "no batch has readable offsets, the offsets before it and a commit"


def file_source_logs_reach(snapshot: CheckpointSnapshot, r: int) -> bool:
    """Whether every file source's log holds what a restart after batch ``r`` reads: the newest
    compaction at or below ``r`` and every entry after it up to ``r``, none of them damaged
    (``FileStreamSource`` restores them when it is created)."""
    kinds = source_kinds(snapshot)
    for n, log in source_logs(snapshot).items():
        if kinds.get(n) != FILE:
            continue
        compacts = [e for e in log.entries if e.compact and e.batch_id <= r]
        base = max((e.batch_id for e in compacts), default=-1)
        needed = [e for e in log.entries if not e.compact and base < e.batch_id <= r] + compacts[-1:]
        present = {e.batch_id for e in needed if not e.compact}
        if any(e.failure is not None for e in needed) or present != set(range(base + 1, r + 1)):
            return False
    return True


def state_files_above(snapshot: CheckpointSnapshot, version: int) -> list[str]:
    """Return the data files (and side files) of every store holding a version above ``version``,
    and the operators' ``_metadata/v2/<batchId>`` files of batches at or above ``version``."""
    store_dirs = {store.path for store in all_stores(snapshot)}
    out: list[str] = []
    for f in snapshot.files:  # one pass: a store's files are the files directly in its directory
        if f.parent in store_dirs and (file_version(f.name) or -1) > version:
            out.append(f.path)
    for op in snapshot.state.operators:
        for batch in op.metadata_v2_batches:
            if batch >= version:
                out.append(f"state/{op.operator_id}/_metadata/v2/{batch}")
    return out


def damaged_zips(store: StateStore) -> list[str]:
    """Return the zip files of a store that cannot be loaded: unreadable, or naming missing SSTs."""
    present = set(store.sst_files)
    return [
        name
        for name, rec in store.zip_metadata
        if rec.failure is not None
        or (rec.record is not None and any(sst and sst not in present for sst in rec.record.sst_files))
    ]


def store_path(operator_id: int, partition: int, store_name: str) -> str:
    """Return ``state/<op>/<partition>[/<store>]`` (the default store has no subdirectory)."""
    base = f"state/{operator_id}/{partition}"
    return base if store_name == "default" else f"{base}/{store_name}"
