"""Facts of a snapshot that do not depend on the restart target, derived once and shared. Pure.

The restart matrix diagnoses one snapshot for every Spark line and mode; what the checkpoint *is*
(its mode, its writer, its statefulness, which state versions load) is the same in every cell, so
it is computed once here and handed to each cell's :class:`~checkpoint_doctor.diagnosis.context.Context`.
"""

from __future__ import annotations

from functools import cached_property

from checkpoint_doctor.diagnosis.detect import ModeGuess, WriterGuess, detect_mode, detect_writer
from checkpoint_doctor.diagnosis.state_chain import Restorability, check_version, newest_restorable_batch
from checkpoint_doctor.diagnosis.statefulness import Statefulness, infer_statefulness
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot, StateStore


class SnapshotFacts:
    """Target-independent facts of one snapshot (lazily computed, then cached)."""

    def __init__(self, snapshot: CheckpointSnapshot) -> None:
        self.snapshot = snapshot
        self._versions: dict[tuple[int, int, str, int, str | None, bool], Restorability] = {}

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
        """Return :func:`~checkpoint_doctor.diagnosis.state_chain.check_version`, memoized."""
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
