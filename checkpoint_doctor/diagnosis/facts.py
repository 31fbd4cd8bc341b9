"""Facts of a snapshot that do not depend on the restart target, derived once and shared. Pure.

The restart matrix diagnoses one snapshot for every Spark line and mode; what the checkpoint *is*
(its mode, its writer, its statefulness, which state versions load) is the same in every cell, so
it is computed once here and handed to each cell's :class:`~checkpoint_doctor.diagnosis.context.Context`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any, NamedTuple

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.detect import ModeGuess, WriterGuess, detect_mode, detect_writer
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.diagnosis.sources.files import source_kinds
from checkpoint_doctor.diagnosis.state.chain import (
    Restorability,
    check_version,
    newest_restorable_batch,
    skipped_snapshot_ssts,
)
from checkpoint_doctor.diagnosis.state.statefulness import Statefulness, infer_statefulness
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot, StateStore


class StoreVerdict(NamedTuple):
    """Whether one store loads the version a restart needs: the code when it cannot, and the files
    RocksDB auto snapshot repair skips over when it can only without its newest snapshot."""

    store: StateStore
    result: Restorability
    code: Code | None
    skipped: tuple[str, ...] = ()


class SnapshotFacts:
    """Target-independent facts of one snapshot (lazily computed, then cached)."""

    def __init__(self, snapshot: CheckpointSnapshot) -> None:
        self.snapshot = snapshot
        self._versions: dict[tuple[int, int, str, int, str | None, bool], Restorability] = {}
        self._notable: dict[tuple[int, bool], tuple[StoreVerdict, ...]] = {}
        #: Findings of the checks that depend on the restart mode and options only (not the line), by
        #: (mode, options without line and mode), then by check: see ``diagnosis.MODE_CHECKS``.
        self.mode_findings: dict[tuple[str, object], dict[object, tuple[Finding, ...]]] = {}
        #: The cells diagnosed so far, by their options but the line: what a next line may take over
        #: (:class:`~checkpoint_doctor.diagnosis.line_rules.CellMemo`, kept by ``diagnose``).
        self.cells: dict[object, Any] = {}
        #: The findings that name a line (``diagnosis.LINE_CHECKS``: a function of the writer and
        #: the line), by line, for every mode's cells.
        self.per_line: dict[str, tuple[Finding, ...]] = {}
        #: The notes on the world outside the checkpoint, by the options they read
        #: (:func:`checkpoint_doctor.diagnosis.outside.shared_outside_notes`).
        self.outside: dict[object, tuple[str, ...]] = {}
        #: Findings of the checks that read neither the mode nor the prediction, by (line, options
        #: without line and mode), then by check, with the questions they asked of the line's rules:
        #: see ``diagnosis.MODE_FREE_CHECKS``.
        self.mode_free: dict[
            tuple[str, object], dict[object, tuple[tuple[Any, ...], tuple[Finding, ...]]]
        ] = {}

    @cached_property
    def mode(self) -> ModeGuess:
        """Return the mode that wrote the logs."""
        return detect_mode(self.snapshot)

    @cached_property
    def writer(self) -> WriterGuess:
        """Return the Spark line that wrote the newest batch."""
        return detect_writer(self.snapshot)

    @cached_property
    def statefulness(self) -> Statefulness:
        """Return whether the query had stateful operators, from the checkpoint alone."""
        return infer_statefulness(self.snapshot, self.mode)

    @cached_property
    def source_kinds(self) -> Mapping[int, str]:
        """Return the kind (rate, file, kafka) of every source that keeps files, by source index:
        asked several times by every cell of a restart matrix (the prediction and the checks)."""
        return source_kinds(self.snapshot)

    @cached_property
    def newest_restorable_batch(self) -> int | None:
        """Return the newest batch whose state loads in every store."""
        return newest_restorable_batch(self.snapshot.state)

    @cached_property
    def unreadable_state_files(self) -> frozenset[str]:
        """State files that were read and cannot be what their name says (zips, deltas, changelogs)."""
        return frozenset(
            path
            for op in self.snapshot.state.operators
            for store in op.stores
            for path, _ in store.unreadable_files()
        )

    def check_version(
        self, store: StateStore, version: int, *, unique_id: str | None, auto_repair: bool
    ) -> Restorability:
        """Return :func:`~checkpoint_doctor.diagnosis.state.chain.check_version`, memoized."""
        key = (store.operator_id, store.partition_id, store.store_name, version, unique_id, auto_repair)
        found = self._versions.get(key)
        if found is None:
            found = check_version(
                store,
                version,
                unique_id=unique_id,
                auto_repair=auto_repair,
                unreadable=self.unreadable_state_files,
            )
            self._versions[key] = found
        return found

    def store_unique_id(self, store: StateStore, version: int) -> str | None:
        """Return the checkpoint-format-2 unique id of a store's ``version`` from commits/(version-1)."""
        commit = self.snapshot.commits.get(version - 1)
        if commit is None or commit.record is None or not commit.record.state_unique_ids:
            return None
        parts = dict(commit.record.state_unique_ids).get(store.operator_id)
        if parts is None or store.partition_id >= len(parts):
            return None
        op = next(o for o in self.snapshot.state.operators if o.operator_id == store.operator_id)
        idx = op.store_names.index(store.store_name) if store.store_name in op.store_names else 0
        per = parts[store.partition_id]
        return per[idx] if idx < len(per) else None

    def restorability(self, store: StateStore, version: int, auto_repair: bool) -> StoreVerdict:
        """Return whether a restart loads ``version`` in ``store``, and the code if it cannot."""
        uid = self.store_unique_id(store, version)
        result = self.check_version(store, version, unique_id=uid, auto_repair=auto_repair)
        if result.ok:
            return StoreVerdict(store, result, None, self._skipped_snapshot(store, version))
        if result.corrupt:
            return StoreVerdict(store, result, Code.STATE_FILE_UNREADABLE)
        missing = result.missing[0] if result.missing else ""
        code = (
            Code.ROCKSDB_SST_MISSING
            if "/SSTs/" in missing
            else (Code.STATE_UNIQUE_IDS_MISSING if uid else Code.STATE_VERSION_NOT_RESTORABLE)
        )
        return StoreVerdict(store, result, code)

    def notable_stores(self, version: int, auto_repair: bool) -> tuple[StoreVerdict, ...]:
        """Return, in operator then store order, the stores that cannot load ``version`` or load it
        only by skipping their newest snapshot; memoized, since every line of a restart matrix asks
        the same question of thousands of stores (one per operator, partition and store name)."""
        if auto_repair and not self.rocksdb:
            auto_repair = False  # only RocksDB stores fall back to older snapshots: same answer
        key = (version, auto_repair)
        found = self._notable.get(key)
        if found is None:
            found = tuple(
                verdict
                for op in self.snapshot.state.operators
                for store in op.stores
                if (verdict := self.restorability(store, version, auto_repair)).code is not None
                or verdict.skipped
            )
            self._notable[key] = found
        return found

    @cached_property
    def rocksdb(self) -> bool:
        """Whether any state store is a RocksDB one (the only ones auto snapshot repair concerns)."""
        return any(store.provider == "rocksdb" for op in self.snapshot.state.operators for store in op.stores)

    def _skipped_snapshot(self, store: StateStore, version: int) -> tuple[str, ...]:
        """The files of the newest zip at or below ``version`` that auto snapshot repair skips over."""
        if store.provider != "rocksdb":
            return ()
        missing = skipped_snapshot_ssts(store, version)
        if missing:
            return missing
        zips = [z for z in store.zips if z <= version]
        newest = f"{store.path}/{max(zips)}.zip" if zips else None
        return (newest,) if newest is not None and newest in self.unreadable_state_files else ()
