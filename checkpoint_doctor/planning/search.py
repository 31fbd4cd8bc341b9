"""Combined plans: the smallest set of options whose simulated restart starts in every target cell.
Pure, deterministic and bounded.

Independent damage (an orphan ``.crc`` in both logs, temp files in two logs, a hole plus a torn
tail) has one option per finding, none of which makes the restart start alone. The search tries
sets of options, smallest first (breadth-first), and within one size in rank order (the order of
the findings, then of the strategies in the registry), simulating each set with
:func:`~checkpoint_doctor.reading.assembly.simulate_changes` and diagnosing every target cell.

The bound: at most :data:`MAX_CANDIDATES` options (the best ranked) and sets of at most
:data:`MAX_SIZE`, i.e. C(10,1) + C(10,2) + C(10,3) = 175 simulations in the worst case, each one
listing-sized (no I/O). Damage needing more than three independent repairs is left to a second
plan after the first is applied (the plan says what remains).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from checkpoint_doctor.diagnosis import DiagnoseOptions, Diagnosis, diagnose
from checkpoint_doctor.diagnosis.codes import ERROR
from checkpoint_doctor.diagnosis.facts import SnapshotFacts
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.planning.consequences import SinkFacts, consequences, data_loss
from checkpoint_doctor.planning.options import Option
from checkpoint_doctor.planning.request import Cell
from checkpoint_doctor.planning.steps import Key, Step, follows
from checkpoint_doctor.planning.strategies import WARNING_REPAIRS
from checkpoint_doctor.reading.assembly import simulate_changes
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot

MAX_CANDIDATES = 10
MAX_SIZE = 3


def merge(options: tuple[Option, ...]) -> tuple[Step, ...] | None:
    """Return the steps of several options in order, identical steps once; None on a conflict.

    A path may be quarantined and then created (a rewrite); any other second change to a path that
    a step already changes is a conflict.
    """
    steps: list[Step] = []
    seen: set[Step] = set()
    touched: dict[Key, list[Step]] = {}
    for option in options:
        for step in option.steps:
            if step in seen:
                continue
            key = step.key
            if key is not None:
                before = touched.setdefault(key, [])
                if not follows(before, step):
                    return None
                before.append(step)
            seen.add(step)
            steps.append(step)
    return tuple(steps)


def simulate(snapshot: CheckpointSnapshot, steps: tuple[Step, ...]) -> CheckpointSnapshot:
    """Return the snapshot as it would be after the steps (no I/O)."""
    removed: list[Key] = []
    added: dict[Key, bytes] = {}
    for step in steps:
        if not step.executable:
            continue
        effect = step.effect(snapshot.raw)
        removed += effect.removed + effect.removed_dirs
        for key in effect.removed:
            added.pop(key, None)
        added.update(dict(effect.added))
    if not removed and not added:
        return snapshot
    return simulate_changes(snapshot, removed=removed, added=added)


@dataclass(frozen=True)
class Trial:
    """One simulated set of options: the steps, each target cell's diagnosis afterwards, the error
    codes left, the data-loss reasons (consent needed when any), and the consequences."""

    combo: tuple[int, ...]
    steps: tuple[Step, ...]
    after: tuple[Diagnosis, ...]
    remaining: frozenset[str]
    losses: tuple[str, ...]
    consequences: dict[str, Any]
    breaks: tuple[Cell, ...] = ()

    @property
    def starts(self) -> bool:
        """Whether the restart starts in every target cell."""
        return all(d.prediction.starts for d in self.after)

    @property
    def started(self) -> int:
        """How many target cells start."""
        return sum(d.prediction.starts for d in self.after)


def _blocks(finding: Finding) -> bool:
    """Whether a finding is one a plan must clear: an error, or a warning with a repair (data lost silently)."""
    return finding.severity == ERROR or finding.code in WARNING_REPAIRS


class Search:
    """Evaluates sets of candidate options (cached), and finds the preferred one."""

    def __init__(
        self,
        snapshot: CheckpointSnapshot,
        cells: tuple[Cell, ...],
        dopts: DiagnoseOptions,
        sink_kind: str | None,
        candidates: list[Option],
        guards: tuple[Cell, ...] = (),
    ) -> None:
        self.snapshot = snapshot
        self.cells = cells
        self.guards = guards
        self.dopts = replace(dopts, now_ms=None, live_window_s=0)
        self.sink_kind = sink_kind
        self.candidates = candidates[:MAX_CANDIDATES]
        self.addressable = {c for o in self.candidates for c in o.addresses}
        self._trials: dict[tuple[int, ...], Trial | None] = {}
        before = [self.diagnose_cell(snapshot, c) for c in cells]
        self.baseline = sum(d.prediction.starts for d in before)
        #: The error codes of the target cells as they are: a trial that starts as many cells and
        #: clears one of them (a file sink's log ahead of the offsets, CD402) is a repair too.
        self.errors_before = frozenset(f.code for d in before for f in d.findings if _blocks(f))

    def diagnose_cell(
        self, snapshot: CheckpointSnapshot, cell: Cell, facts: SnapshotFacts | None = None
    ) -> Diagnosis:
        """Diagnose a (simulated) snapshot for one cell, without live-writer checks."""
        return diagnose(snapshot, replace(self.dopts, spark=cell.spark, mode=cell.mode), facts)

    def trial(self, combo: tuple[int, ...]) -> Trial | None:
        """Simulate a set of candidates (by index); None when their steps conflict."""
        if combo in self._trials:
            return self._trials[combo]
        options = tuple(self.candidates[i] for i in combo)
        steps = merge(options)
        result = None
        if steps is not None:
            after_snapshot = simulate(self.snapshot, steps)
            facts = SnapshotFacts(after_snapshot)  # one derivation for every cell
            after = tuple(self.diagnose_cell(after_snapshot, c, facts) for c in self.cells)
            remaining = frozenset(f.code for d in after for f in d.findings if _blocks(f))
            sink = SinkFacts.of(self.snapshot, steps, self.sink_kind, self.dopts.delta_tables)
            inherent = tuple(dict.fromkeys(o.loss for o in options if o.loss))
            replans = tuple(
                r
                for d in after
                if d.prediction.starts
                for r in [data_loss(self.snapshot, steps, d, sink)[0]]
                if r
            )
            losses = tuple(dict.fromkeys(inherent + replans))
            doc = consequences(self.snapshot, steps, after[0], sink, inherent)
            started = sum(d.prediction.starts for d in after)
            # The restarts that start now must keep starting (checked only for a trial worth it).
            breaks: tuple[Cell, ...] = ()
            if started > self.baseline or (started == self.baseline and self._clears(remaining)):
                breaks = tuple(
                    g
                    for g in self.guards
                    if not self.diagnose_cell(after_snapshot, g, facts).prediction.starts
                )
            result = Trial(combo, steps, after, remaining, losses, doc, breaks)
        self._trials[combo] = result
        return result

    def combos(self, prefer: str | None) -> Iterator[tuple[int, ...]]:
        """Yield candidate sets smallest first, those with the preferred strategy first, in rank order."""
        n = len(self.candidates)
        every = [c for k in range(1, min(MAX_SIZE, n) + 1) for c in itertools.combinations(range(n), k)]

        def key(c: tuple[int, ...]) -> tuple[int, bool, tuple[int, ...]]:
            return (len(c), not any(self.candidates[i].strategy == prefer for i in c), c)

        yield from sorted(every, key=key)

    def complete(self, trial: Trial) -> bool:
        """Whether a starting trial also leaves no error that some candidate addresses."""
        return trial.starts and not (trial.remaining & self.addressable)

    def rank(self, trial: Trial) -> tuple[bool, bool, int]:
        """Return how good a trial is: starts in every cell, leaves no addressable error, cells started."""
        return (trial.starts, self.complete(trial), trial.started)

    def _clears(self, remaining: frozenset[str]) -> bool:
        """Whether the errors left are fewer than before and none is new."""
        return bool(self.errors_before - remaining) and remaining <= self.errors_before

    def useful(self, trial: Trial) -> bool:
        """Whether a trial makes more target cells start than start now, or as many while clearing
        an error, breaking no other."""
        if trial.breaks:
            return False
        return trial.started > self.baseline or (
            trial.started == self.baseline and self._clears(trial.remaining)
        )

    def first_with(self, strategy: str) -> Trial | None:
        """Return the best trial using ``strategy`` (first in :meth:`combos` order among the best
        ranked): what ``--strategy`` asks for, whether or not it needs consent."""
        trials = []
        for combo in self.combos(strategy):
            if any(self.candidates[i].strategy == strategy for i in combo):
                trial = self.trial(combo)
                if trial is not None and self.useful(trial):
                    trials.append(trial)
        return _pick(trials, self)

    def best(self) -> tuple[Trial | None, Trial | None]:
        """Return (the preferred trial needing no consent, the preferred one needing consent).

        Preference: starting in every cell and leaving no addressable error, then starting in every
        cell, then starting in the most cells (when no set makes all of them start, the plan makes
        as many as it can start and says why the others cannot); the first in :meth:`combos` order
        among equals. Stops at the first complete trial that needs no consent.
        """
        free: list[Trial] = []
        consented: list[Trial] = []
        for combo in self.combos(None):
            trial = self.trial(combo)
            if trial is None or not self.useful(trial):
                continue
            (consented if trial.losses else free).append(trial)
            if not trial.losses and self.complete(trial):
                break
        return _pick(free, self), _pick(consented, self)


def _pick(trials: list[Trial], search: Search) -> Trial | None:
    """Return the best ranked trial, the first of them in enumeration order."""
    if not trials:
        return None
    best = max(search.rank(t) for t in trials)
    return next(t for t in trials if search.rank(t) == best)
