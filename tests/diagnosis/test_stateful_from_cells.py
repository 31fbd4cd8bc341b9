"""What a restart does if the query is stateful (``stateful_by_line``) is taken from the matrix's own
cells where their restart starts (only the state step is asked again, of a stateful query): every
line's answer must be the one a full prediction of that line alone gives, on every fixture."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.facts import SnapshotFacts
from checkpoint_doctor.diagnosis.matrix import MatrixOptions, diagnose_cells, opts_proven, plan_cells
from checkpoint_doctor.diagnosis.state import checks_statefulness
from checkpoint_doctor.diagnosis.state.checks_statefulness import if_stateful, stateful_by_line
from checkpoint_doctor.diagnosis.versions import target
from checkpoint_doctor.diagnosis.writer_confs import with_confs
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from tests.diagnosis.test_line_rules import CHECKPOINTS, QUIET
from tests.scenarios import FIXTURES

#: Options the matrix passes on (the hypothesis is asked only when statefulness is not named).
BASES = (QUIET, replace(QUIET, sources=1), replace(QUIET, sources=2))


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lines whose answer came from a cell (the shortcut taken, not the full prediction)."""
    lines: list[str] = []
    real = checks_statefulness._CellSteps.state_step

    def counted(self, target):  # type: ignore[no-untyped-def]
        found = real(self, target)
        if found is not None:
            lines.append(target.line)
        return found

    monkeypatch.setattr(checks_statefulness._CellSteps, "state_step", counted)
    return lines


def _compare(path: Path, snapshot: CheckpointSnapshot, base: DiagnoseOptions) -> int:
    """Diagnose the matrix's cells as diagnose_matrix does, then ask the hypothesis per line from
    them; compare each line with the line predicted alone (fresh facts, no cell). Return the count."""
    facts = SnapshotFacts(snapshot)
    opts = MatrixOptions(base=base)
    configured = with_confs(base, opts_proven(opts, snapshot))
    planned = plan_cells(facts, opts)
    diagnose_cells(snapshot, planned, configured, facts)
    lines = list(dict.fromkeys(cell.spark for cell, *_ in planned))
    shared = stateful_by_line(snapshot, facts, configured, lines)
    alone = tuple(
        (
            line,
            if_stateful(
                Context(
                    snapshot,
                    target(line),
                    replace(configured, spark=line, mode=None),
                    SnapshotFacts(snapshot),
                )
            ).summary,
        )
        for line, _ in shared
    )
    assert shared == alone, (str(path), base)
    # Without the matrix's cells (another caller): the full prediction, the same answer.
    assert stateful_by_line(snapshot, SnapshotFacts(snapshot), configured, lines) == shared, str(path)
    return len(shared)


def test_every_fixture_answers_as_the_full_prediction(taken: list[str]) -> None:
    compared = 0
    for path in CHECKPOINTS:
        snapshot = load_checkpoint(str(path))
        for base in BASES:
            compared += _compare(path, snapshot, base)
    assert compared > 500
    # The shortcut is the common case (most fixtures restart), not a path no fixture takes.
    assert len(taken) > compared // 2, (len(taken), compared)


@pytest.mark.parametrize("line", sorted(p.name for p in (FIXTURES / "delta").glob("spark-*")))
def test_with_its_delta_tables_paired_as_the_full_prediction(line: str, taken: list[str]) -> None:
    # A paired Delta source makes 4.3 (no Delta release) another prediction than 3.5-4.2: each
    # line's cell must still tell its own hypothesis.
    from checkpoint_doctor.world.load import load_for_verdict

    compared = 0
    for path in sorted((FIXTURES / "delta" / line).glob("*/checkpoint")):
        loaded = load_for_verdict(str(path), None, lambda path=path: load_checkpoint(str(path)))
        base = replace(QUIET, delta_pairing=loaded.delta, delta=loaded.delta_named)
        compared += _compare(path, loaded.snapshot, base)
    assert compared > 0
    assert taken
