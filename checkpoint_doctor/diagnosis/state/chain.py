"""Which state versions can be loaded, from file names alone. Pure.

State version = batch id + 1: batch ``B`` loads version ``B`` and commits ``B+1``
(``StateStoreId``, ``HDFSBackedStateStoreProvider.commit``).

* HDFS provider (``HDFSBackedStateStoreProvider.loadMap``): if ``<v>.snapshot`` exists it is used;
  otherwise the newest snapshot below ``v`` (or the empty map at version 0) plus every
  ``<s+1..v>.delta``. Hence ``ok(v) = snapshot(v) or (delta(v) and ok(v-1))``, ``ok(0) = True``,
  and the first missing delta, ascending, is the one Spark names in its error.
* RocksDB, checkpoint format 1 (``RocksDB.load``): the newest ``<s>.zip`` with ``s <= v``
  (``getLatestSnapshotVersion``) and the changelogs ``s+1..v``; every SST the zip's metadata names
  must be in ``SSTs/``. Same recurrence with zip/changelog.
* A file of the chain that was read and is not what its name says (a zip that is not one, a
  delta or changelog without its compression header) fails the load like a missing one; 4.2+'s
  auto snapshot repair skips such a zip as it skips one whose SSTs are missing.
* RocksDB, checkpoint format 2: files are ``<v>_<uniqueId>.zip``/``.changelog`` and the unique id of
  version ``v`` is recorded in ``commits/(v-1)``; a version is loadable when that file exists (a
  changelog also needs an older zip of the lineage, approximated by any older v2 zip).
"""

from __future__ import annotations

from checkpoint_doctor.ids import missing_in
from checkpoint_doctor.reading.snapshot import StateDir, StateStore
from checkpoint_doctor.valueclasses import frozen


@frozen
class Restorability:
    """Whether one store can load one state version, and what is missing if not."""

    operator_id: int
    partition_id: int
    store_name: str
    version: int
    ok: bool
    missing: tuple[str, ...] = ()
    basis: str = ""
    #: files of the chain that were read and cannot be loaded (the first one is Spark's failure)
    corrupt: tuple[str, ...] = ()


def _file(store: StateStore, name: str) -> str:
    return f"{store.path}/{name}"


def _first_gap(step: set[int], base: int, version: int) -> int | None:
    """Return the first version of ``base + 1..version`` without a step file, or None.

    Proportional to the files, not to the versions: a version is any Java long.
    """
    gap = missing_in(base + 1, version, step, limit=1)
    return gap[0] if gap else None


def _chain(full: set[int], step: set[int], version: int) -> tuple[bool, int | None, int | None]:
    """Return (ok, base version used, first missing step version) for the full/step recurrence."""
    base = max((v for v in full if 0 < v <= version), default=0)
    gap = _first_gap(step, base, version)
    return gap is None, base, gap


#: RocksDB autoSnapshotRepair replays at most this many changelog files (maxChangeFileReplay).
MAX_CHANGE_FILE_REPLAY = 500


def _rocksdb(store: StateStore, version: int, auto_repair: bool, unreadable: frozenset[str]) -> Restorability:
    head = (store.operator_id, store.partition_id, store.store_name, version)
    changelogs = set(store.changelogs)
    bases = [z for z in sorted(store.zips, reverse=True) if z <= version]

    def chain(base: int) -> int | None:
        return _first_gap(changelogs, base, version)

    def corrupt(base: int) -> tuple[str, ...]:
        # Only changelogs that exist can be unreadable: visit those, never every version number.
        files = ([_file(store, f"{base}.zip")] if base else []) + [
            _file(store, f"{v}.changelog") for v in sorted(changelogs) if base < v <= version
        ]
        return tuple(f for f in files if f in unreadable)

    def basis(base: int) -> str:
        head_text = f"{base}.zip" if base else "empty state"
        return head_text + (f" + changelogs {base + 1}..{version}" if base < version else "")

    if not (auto_repair and changelogs):
        base = bases[0] if bases else 0
        missing_ssts = _missing_ssts(store, base) if base else ()
        if missing_ssts:
            return Restorability(*head, ok=False, missing=missing_ssts, basis=basis(base))
        gap = chain(base)
        if gap is not None:
            return Restorability(
                *head, ok=False, missing=(_file(store, f"{gap}.changelog"),), basis=basis(base)
            )
        bad = corrupt(base)
        if bad:
            return Restorability(*head, ok=False, corrupt=bad, basis=basis(base))
        return Restorability(*head, ok=True, basis=basis(base))
    # RocksDBStateStoreProvider + AutoSnapshotLoader (4.3): skip snapshots that fail to load and
    # fall back to older ones, down to the empty version 0, replaying changelogs on top.
    skipped = []
    for base in [*bases, 0]:
        if base and (_missing_ssts(store, base) or _file(store, f"{base}.zip") in unreadable):
            skipped.append(base)
            continue
        if version - base > MAX_CHANGE_FILE_REPLAY:
            continue
        if chain(base) is None and not corrupt(base):
            note = f" (auto snapshot repair skips {', '.join(map(str, skipped))}.zip)" if skipped else ""
            return Restorability(*head, ok=True, basis=basis(base) + note)
    bad = tuple(f for f in corrupt(0) if f.endswith(".changelog"))
    if bad:
        return Restorability(
            *head, ok=False, corrupt=bad, basis="a changelog every snapshot needs cannot be read"
        )
    gap = chain(0)
    return Restorability(
        *head,
        ok=False,
        missing=(_file(store, f"{gap}.changelog"),) if gap is not None else _missing_ssts(store, bases[0]),
        basis="auto snapshot repair found no loadable snapshot with changelogs up to the version",
    )


def check_version(
    store: StateStore,
    version: int,
    *,
    unique_id: str | None = None,
    auto_repair: bool = False,
    unreadable: frozenset[str] = frozenset(),
) -> Restorability:
    """Return whether ``store`` can load state ``version`` (``auto_repair``: 4.2+ RocksDB fallback;
    ``unreadable``: paths of files read and found damaged)."""
    head = (store.operator_id, store.partition_id, store.store_name, version)
    if version <= 0:
        return Restorability(*head, ok=True, basis="empty state (version 0)")
    if store.zips_v2 or store.changelogs_v2:
        return _check_v2(store, version, unique_id)
    if store.provider == "rocksdb":
        return _rocksdb(store, version, auto_repair, unreadable)
    ok, base, gap = _chain(set(store.snapshots), set(store.deltas), version)
    start = (base or 0) + 1
    basis = (f"{base}.snapshot" if base else "empty map") + (
        f" + deltas {start}..{version}" if start <= version else ""
    )
    if not ok:
        return Restorability(*head, ok=False, missing=(_file(store, f"{gap}.delta"),), basis=basis)
    files = ([_file(store, f"{base}.snapshot")] if base else []) + [
        _file(store, f"{v}.delta") for v in sorted(store.deltas) if start <= v <= version
    ]
    bad = tuple(f for f in files if f in unreadable)
    if bad:
        return Restorability(*head, ok=False, corrupt=bad, basis=basis)
    return Restorability(*head, ok=True, basis=basis)


def _missing_ssts(store: StateStore, zip_version: int) -> tuple[str, ...]:
    wanted = f"{zip_version}.zip"
    for name, record in store.zip_metadata:
        if name == wanted and record.record is not None:
            present = set(store.sst_files)
            return tuple(
                _file(store, f"SSTs/{sst}") for sst in record.record.sst_files if sst and sst not in present
            )
    return ()


def _check_v2(store: StateStore, version: int, unique_id: str | None) -> Restorability:
    head = (store.operator_id, store.partition_id, store.store_name, version)
    zips = {(v, u) for v, u in store.zips_v2}
    logs = {(v, u) for v, u in store.changelogs_v2}
    candidates = [u for v, u in zips | logs if v == version]
    if unique_id is not None:
        if (version, unique_id) in zips:
            return Restorability(*head, ok=True, basis=f"{version}_{unique_id}.zip")
        if (version, unique_id) in logs and any(v < version for v, _ in zips):
            return Restorability(*head, ok=True, basis=f"changelog {version}_{unique_id} on an older zip")
        # Without the zip Spark looks for the version's changelog, and names it in the error.
        return Restorability(
            *head,
            ok=False,
            missing=(_file(store, f"{version}_{unique_id}.changelog"),),
            basis=f"checkpoint format 2: neither {version}_{unique_id}.zip nor its changelog exists",
        )
    if candidates:
        return Restorability(*head, ok=True, basis=f"version {version} files present (unique id not checked)")
    return Restorability(
        *head, ok=False, missing=(_file(store, f"{version}_<uniqueId>.zip"),), basis="checkpoint format 2"
    )


def restorable_versions(store: StateStore, up_to: int) -> set[int]:
    """Return every version in ``0..up_to`` that the store can load (checkpoint format 1)."""
    if store.provider == "rocksdb":
        full, step = set(store.zips), set(store.changelogs)
    else:
        full, step = set(store.snapshots), set(store.deltas)
    # v loads from a full file of v, or from a step file of v on top of a loadable v - 1: only
    # versions with a file can load, so only they are visited (never every number up to up_to).
    ok = {0}
    for v in sorted(x for x in full | step if 0 < x <= up_to):
        if v in full or (v - 1 in ok and v in step):
            ok.add(v)
    return ok


def version_present(store: StateStore, version: int) -> bool:
    """Return whether any data file of ``version`` exists in the store."""
    return (
        version in store.deltas
        or version in store.snapshots
        or version in store.zips
        or version in store.changelogs
        or any(v == version for v, _ in store.zips_v2)
        or any(v == version for v, _ in store.changelogs_v2)
    )


def skipped_snapshot_ssts(store: StateStore, version: int) -> tuple[str, ...]:
    """Return the missing SSTs of the newest zip at or below ``version`` (what auto repair skips)."""
    bases = [z for z in store.zips if z <= version]
    return _missing_ssts(store, max(bases)) if bases else ()


def newest_restorable_batch(state: StateDir) -> int | None:
    """Return the newest batch id whose committed state version (id + 1) loads in every store.

    None when there is no state, no batch qualifies, or checkpoint format 2 is in use (its
    lineage lives in the commit log, not in file names).
    """
    stores = [s for op in state.operators for s in op.stores]
    if not stores or any(s.zips_v2 or s.changelogs_v2 for s in stores):
        return None
    top = max(max(s.versions(), default=0) for s in stores)
    best = max(set.intersection(*(restorable_versions(s, top) for s in stores)))
    return best - 1 if best > 0 else None
