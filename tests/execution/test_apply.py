"""apply and undo on local disk: backups, journal, preconditions, and faults at every operation."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from checkpoint_doctor.errors import JournalError, PlanFormatError, PreconditionFailedError, StorageError
from checkpoint_doctor.execution.executor import apply_plan, default_backup_url, undo_journal
from checkpoint_doctor.execution.journal import JOURNAL
from checkpoint_doctor.loading import load_checkpoint
from checkpoint_doctor.storage import open_store
from tests.faults import FailingStore, FaultInjector
from tests.repair_cases import plan_for, repairable_restarts

REPAIRABLE = list(repairable_restarts())


def tree_bytes(root: Path) -> dict[str, str]:
    """Return relative path -> sha256 of every file below root."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def stores(cp: Path, plan, injector: FaultInjector | None = None):
    checkpoint = open_store(str(cp))
    sink = open_store(plan.sink) if plan.sink else None
    backup = open_store(default_backup_url(checkpoint.url, plan.plan_id))
    if injector is not None:
        checkpoint = FailingStore(checkpoint, injector)
        sink = FailingStore(sink, injector) if sink else None
        backup = FailingStore(backup, injector)
    return checkpoint, sink, backup


def prepared(scenario, restart, tmp_path):
    snapshot = scenario.load(tmp_path)
    _, plan = plan_for(scenario, restart, snapshot)
    return tmp_path / "checkpoint", plan


@pytest.mark.parametrize(("scenario", "index", "restart"), REPAIRABLE, ids=[f"{s.id}#{i}" for s, i, _ in REPAIRABLE])
def test_apply_changes_exactly_the_plan_and_undo_restores_bytes(scenario, index, restart, tmp_path):
    cp, plan = prepared(scenario, restart, tmp_path)
    assert plan.executable_steps
    before = tree_bytes(cp)
    sink_before = tree_bytes(tmp_path / "sink") if (tmp_path / "sink").exists() else {}
    checkpoint, sink, backup = stores(cp, plan)
    result = apply_plan(plan, checkpoint, sink=sink, backup=backup, now_ms=None)
    assert result.steps_done == len(plan.executable_steps)
    assert result.after is not None and result.after.prediction.starts, result.after.prediction.summary
    assert result.after.prediction.summary == plan.expected["restart"]
    after = tree_bytes(cp)
    quarantined = {s.path for s in plan.executable_steps if s.kind == "quarantine" and s.area == "checkpoint"}
    created = {s.path for s in plan.executable_steps if s.kind in ("copy", "write")}
    assert set(before) - set(after) == quarantined - created
    assert set(after) - set(before) == created - quarantined
    for path in quarantined:
        saved = Path(backup.url) / "files" / "checkpoint" / path
        assert hashlib.sha256(saved.read_bytes()).hexdigest() == before[path]
    undo = undo_journal(open_store(backup.url), open_store)
    assert tree_bytes(cp) == before
    if sink_before:
        assert tree_bytes(tmp_path / "sink") == sink_before
    assert set(undo.restored) | set(undo.removed) >= quarantined | created


def _first_repairable(name: str, version: str = "spark-4.3.0"):
    return next((s, i, r) for s, i, r in REPAIRABLE if s.name == name and s.path.parent.name == version)


def test_apply_twice_fails_cleanly_on_preconditions(tmp_path):
    scenario, _, restart = _first_repairable("missing-prev-offsets")
    cp, plan = prepared(scenario, restart, tmp_path)
    apply_plan(plan, *stores(cp, plan)[:1], sink=None, backup=stores(cp, plan)[2], now_ms=None)
    snapshot_before = tree_bytes(cp)
    checkpoint, sink, _ = stores(cp, plan)
    with pytest.raises(PreconditionFailedError) as info:
        apply_plan(plan, checkpoint, sink=sink, backup=open_store(str(tmp_path / "other-backup")), now_ms=None)
    assert any("offsets/2 exists now" in f for f in info.value.failures)
    assert tree_bytes(cp) == snapshot_before


def test_all_failed_preconditions_are_reported_together(tmp_path):
    scenario, _, restart = _first_repairable("missing-prev-offsets")
    cp, plan = prepared(scenario, restart, tmp_path)
    (cp / "metadata").write_text('{"id":"someone-else"}')
    (cp / "offsets" / "2").write_text("v1\n")
    (cp / "offsets" / "9").write_text("v1\n")
    before = tree_bytes(cp)
    checkpoint, sink, backup = stores(cp, plan)
    with pytest.raises(PreconditionFailedError) as info:
        apply_plan(plan, checkpoint, sink=sink, backup=backup, now_ms=None)
    text = " | ".join(info.value.failures)
    assert "query id" in text and "offsets/2 exists now" in text and "newest offsets" in text
    assert tree_bytes(cp) == before
    assert not Path(backup.url).exists()


def test_dry_run_checks_and_touches_nothing(tmp_path):
    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    before = tree_bytes(cp)
    checkpoint, sink, backup = stores(cp, plan)
    result = apply_plan(plan, checkpoint, sink=sink, backup=backup, now_ms=None, dry_run=True)
    assert result.dry_run and result.steps_done == 0
    assert tree_bytes(cp) == before and not Path(backup.url).exists()


def test_backup_inside_the_checkpoint_is_refused(tmp_path):
    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    checkpoint, sink, _ = stores(cp, plan)
    with pytest.raises(PlanFormatError, match="inside the checkpoint"):
        apply_plan(plan, checkpoint, sink=sink, backup=open_store(str(cp / "backup")), now_ms=None)


def test_live_writer_precondition_blocks_apply(tmp_path):
    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    plan_live = plan.__class__.from_dict({**plan.body(), "preconditions": [
        {**p.to_dict(), "window_s": 600.0} if p.kind == "no_live_writer" else p.to_dict() for p in plan.preconditions
    ]})
    checkpoint, sink, backup = stores(cp, plan_live)
    newest = load_checkpoint(str(cp)).offsets.entries[-2].record.metadata.batch_timestamp_ms
    with pytest.raises(PreconditionFailedError, match="a writer may be live"):
        apply_plan(plan_live, checkpoint, sink=sink, backup=backup, now_ms=newest + 1_000)


def test_undo_refuses_when_the_checkpoint_changed_and_force_overrides(tmp_path):
    scenario, _, restart = _first_repairable("missing-prev-offsets")
    cp, plan = prepared(scenario, restart, tmp_path)
    before = tree_bytes(cp)
    checkpoint, sink, backup = stores(cp, plan)
    apply_plan(plan, checkpoint, sink=sink, backup=backup, now_ms=None)
    (cp / "offsets" / "4").write_text("v1\nfrom a later run")
    with pytest.raises(JournalError, match="offsets/4"):
        undo_journal(open_store(backup.url), open_store)
    assert (cp / "offsets" / "2").exists()
    undo_journal(open_store(backup.url), open_store, force=True)
    (cp / "offsets" / "4").unlink()
    assert tree_bytes(cp) == before
    with pytest.raises(JournalError, match="already undone"):
        undo_journal(open_store(backup.url), open_store)


def test_repairable_cases_cover_the_strategies(tmp_path):
    strategies = set()
    for n, (scenario, _, restart) in enumerate(REPAIRABLE):
        _, plan = prepared(scenario, restart, tmp_path / str(n))
        strategies.update((plan.strategy or "").split(","))
    assert {"bridge", "quarantine", "recreate-metadata", "rollback"} <= strategies
    assert len(REPAIRABLE) >= 40


FAULT_CASES = ["missing-prev-offsets", "offsets-latest-empty", "metadata-unreadable", "commit-latest-empty"]


@pytest.mark.parametrize("name", FAULT_CASES)
def test_a_fault_at_every_operation_never_loses_anything(name, tmp_path, subtests):
    scenario, _, restart = _first_repairable(name)
    probe_dir = tmp_path / "probe"
    cp, plan = prepared(scenario, restart, probe_dir)
    counter = FaultInjector()
    apply_plan(plan, *stores(cp, plan, counter)[:1], sink=None, backup=stores(cp, plan, counter)[2], now_ms=None)
    total = counter.count
    assert total > 5
    for n in range(1, total + 1):
        with subtests.test(fail_at=n):
            work = tmp_path / f"n{n}"
            cp, plan = prepared(scenario, restart, work)
            before = tree_bytes(cp)
            injector = FaultInjector(n)
            checkpoint, sink, backup = stores(cp, plan, injector)
            with pytest.raises(StorageError, match="injected fault"):
                apply_plan(plan, checkpoint, sink=sink, backup=backup, now_ms=None)
            backup_root = Path(default_backup_url(str(cp), plan.plan_id))
            saved = tree_bytes(backup_root / "files" / "checkpoint") if (backup_root / "files").exists() else {}
            now = tree_bytes(cp)
            for path, digest in before.items():
                assert now.get(path) == digest or saved.get(path) == digest, f"{path} lost at fault {n}"
            if now != before:
                assert (backup_root / JOURNAL).exists()
                undo_journal(open_store(str(backup_root)), open_store)
                assert tree_bytes(cp) == before, f"undo did not restore after fault {n}"
