"""apply and undo on local disk: backups, journal, verification, the lifecycle, and faults at
every operation."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from checkpoint_doctor.errors import (
    ApplyFailedError,
    CheckpointDoctorError,
    JournalError,
    PlanFormatError,
    PreconditionFailedError,
    StorageError,
    UndoRefusedError,
)
from checkpoint_doctor.execution.apply import apply_plan
from checkpoint_doctor.execution.journal import JOURNAL, tool_url, tool_urls
from checkpoint_doctor.execution.undo import undo_journal
from checkpoint_doctor.reading.history import apply_history
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.storage import open_storage
from tests.faults import FailingStore, FaultInjector
from tests.repair_cases import failing_restarts, plan_for, repairable_restarts
from tests.repair_proof import tree_bytes

REPAIRABLE = list(repairable_restarts())


def stores(cp: Path, plan, injector: FaultInjector | None = None):
    """Return (checkpoint, sink, tool) stores for a plan (tool: the checkpoint's tool directory)."""
    checkpoint = open_storage(str(cp))
    sink = open_storage(plan.sink) if plan.sink else None
    tool = open_storage(tool_urls(checkpoint)[0])
    if injector is not None:
        checkpoint = FailingStore(checkpoint, injector)
        sink = FailingStore(sink, injector) if sink else None
        tool = FailingStore(tool, injector)
    return checkpoint, sink, tool


def apply(cp: Path, plan, injector: FaultInjector | None = None, **kw):
    checkpoint, sink, tool = stores(cp, plan, injector)
    kw.setdefault("now_ms", None)
    return apply_plan(plan, checkpoint, sink=sink, tool=tool, **kw)


def undo(journal_url: str, **kw):
    return undo_journal(open_storage(journal_url[: -len(JOURNAL)].rstrip("/")), open_storage, **kw)


def failure_of(call) -> CheckpointDoctorError | None:
    """Run ``call`` and return the error it raised, or None."""
    try:
        call()
    except CheckpointDoctorError as exc:
        return exc
    return None


def prepared(scenario, restart, tmp_path, **plan_kw):
    snapshot = scenario.load(tmp_path)
    _, plan = plan_for(scenario, restart, snapshot, **plan_kw)
    return tmp_path / "checkpoint", plan


def _first_repairable(name: str, version: str = "spark-4.3.0"):
    return next((s, i, r) for s, i, r in REPAIRABLE if s.name == name and s.path.parent.name == version)


@pytest.mark.parametrize(
    ("scenario", "index", "restart"), REPAIRABLE, ids=[f"{s.id}#{i}" for s, i, _ in REPAIRABLE]
)
def test_apply_changes_exactly_the_plan_and_undo_restores_bytes(scenario, index, restart, tmp_path):
    cp, plan = prepared(scenario, restart, tmp_path)
    assert plan.executable_steps
    before = tree_bytes(cp)
    sink_before = tree_bytes(tmp_path / "sink") if (tmp_path / "sink").exists() else {}
    result = apply(cp, plan)
    assert result.steps_done == len(plan.executable_steps)
    assert result.after is not None and result.after.prediction.starts, result.after.prediction.summary
    assert result.after.prediction.summary == plan.expected["restart"]
    after = tree_bytes(cp)
    files = [s for s in plan.executable_steps if s.kind in ("quarantine", "copy", "write")]
    quarantined = {s.path for s in files if s.kind == "quarantine" and s.area == "checkpoint"}
    created = {s.path for s in files if s.kind in ("copy", "write")}
    assert set(before) - set(after) == quarantined - created
    assert set(after) - set(before) == created - quarantined
    for path in quarantined:
        saved = Path(result.backup_url) / "files" / "checkpoint" / path
        assert hashlib.sha256(saved.read_bytes()).hexdigest() == before[path]
    result_undo = undo(result.journal_url)
    assert tree_bytes(cp) == before
    if sink_before:
        assert tree_bytes(tmp_path / "sink") == sink_before
    assert set(result_undo.restored) | set(result_undo.removed) >= quarantined | created


def test_apply_twice_is_refused_because_the_checkpoint_changed(tmp_path):
    scenario, _, restart = _first_repairable("missing-prev-offsets")
    cp, plan = prepared(scenario, restart, tmp_path)
    apply(cp, plan)
    snapshot_before = tree_bytes(cp)
    with pytest.raises(PreconditionFailedError) as info:
        apply(cp, plan)
    assert "changed since the plan was made" in str(info.value) and "offsets/2 exists now" in str(info.value)
    assert tree_bytes(cp) == snapshot_before


def test_every_change_is_named_when_the_checkpoint_changed(tmp_path):
    scenario, _, restart = _first_repairable("missing-prev-offsets")
    cp, plan = prepared(scenario, restart, tmp_path)
    (cp / "metadata").write_text('{"id":"someone-else"}')
    (cp / "offsets" / "2").write_text("v1\n")
    (cp / "offsets" / "9").write_text("v1\n")
    before = tree_bytes(cp)
    with pytest.raises(PreconditionFailedError) as info:
        apply(cp, plan)
    text = str(info.value)
    assert "query id" in text and "offsets/2 exists now" in text and "newest offsets" in text
    assert tree_bytes(cp) == before
    assert not Path(tool_url(str(cp)), plan.plan_id).exists()


def test_dry_run_lists_every_step_and_touches_nothing(tmp_path):
    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    before = tree_bytes(cp)
    result = apply(cp, plan, dry_run=True)
    assert result.dry_run and result.steps_done == 0 and not result.cancelled
    assert [w["what"] for w in result.would] == [s.describe() for s in plan.executable_steps]
    assert {w["path"] for w in result.would} == {s.path for s in plan.executable_steps}
    assert tree_bytes(cp) == before and not Path(tool_url(str(cp)), plan.plan_id).exists()


def test_declining_the_prompt_cancels(tmp_path):
    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    before = tree_bytes(cp)
    result = apply(cp, plan, confirm=lambda p: False)
    assert result.cancelled and not result.dry_run and result.journal_url is None
    assert tree_bytes(cp) == before


@pytest.mark.parametrize("how", ["path", "file-url", "symlink", "file-url-of-checkpoint"])
def test_backup_inside_the_checkpoint_is_refused(tmp_path, how):
    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    checkpoint, sink, tool = stores(cp, plan)
    (tmp_path / "into-checkpoint").symlink_to(cp / "state")
    backup_url = {
        "path": str(cp / "backup"),
        "file-url": f"file://{cp}/backup",
        "symlink": str(tmp_path / "into-checkpoint" / "backup"),
        "file-url-of-checkpoint": str(cp / "backup"),
    }[how]
    if how == "file-url-of-checkpoint":
        checkpoint = open_storage(f"file://{cp}")
    before = tree_bytes(cp)
    with pytest.raises(PlanFormatError, match="inside the checkpoint"):
        apply_plan(plan, checkpoint, sink=sink, tool=tool, backup=open_storage(backup_url), now_ms=None)
    assert tree_bytes(cp) == before


def test_live_writer_precondition_blocks_apply(tmp_path):
    from dataclasses import replace

    from tests.scenarios import options_for_restart

    scenario, _, restart = _first_repairable("offsets-latest-empty")
    snapshot = scenario.load(tmp_path)
    options = replace(options_for_restart(scenario, restart), live_window_s=600.0)
    from checkpoint_doctor.diagnosis import diagnose
    from checkpoint_doctor.planning import PlanOptions, plan_repair

    plan = plan_repair(snapshot, diagnose(snapshot, options), PlanOptions(diagnose=options))
    assert any(p.to_dict() == {"kind": "no_live_writer", "window_s": 600.0} for p in plan.preconditions)
    cp = tmp_path / "checkpoint"
    newest = load_checkpoint(str(cp)).offsets.entries[-2].record.metadata.batch_timestamp_ms
    with pytest.raises(PreconditionFailedError, match="a writer may be live"):
        apply(cp, plan, now_ms=newest + 1_000)


def test_undo_refuses_when_the_checkpoint_changed_and_force_overrides(tmp_path):
    scenario, _, restart = _first_repairable("missing-prev-offsets")
    cp, plan = prepared(scenario, restart, tmp_path)
    before = tree_bytes(cp)
    result = apply(cp, plan)
    (cp / "offsets" / "4").write_text("v1\nfrom a later run")
    with pytest.raises(UndoRefusedError, match="offsets/4"):
        undo(result.journal_url)
    assert (cp / "offsets" / "2").exists()
    undo(result.journal_url, force=True)
    (cp / "offsets" / "4").unlink()
    assert tree_bytes(cp) == before
    with pytest.raises(UndoRefusedError, match="already undone"):
        undo(result.journal_url)


def test_apply_undo_apply_works_and_history_shows_each(tmp_path):
    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    before = tree_bytes(cp)
    first = apply(cp, plan)
    undo(first.journal_url)
    assert tree_bytes(cp) == before
    second = apply(cp, plan)
    assert second.journal_url != first.journal_url and second.steps_done == first.steps_done
    assert second.backup_url.endswith(f"{plan.plan_id}-2")
    rows = apply_history(str(cp), open_storage)
    assert [(r["plan_id"], r["state"], r["journal"]) for r in rows] == [
        (plan.plan_id, "undone", first.journal_url),
        (plan.plan_id, "applied", second.journal_url),
    ]


def test_repairable_cases_cover_the_strategies(tmp_path):
    strategies = set()
    for n, (scenario, _, restart) in enumerate(REPAIRABLE):
        _, plan = prepared(scenario, restart, tmp_path / str(n))
        strategies.update((plan.strategy or "").split(","))
    assert {"bridge", "quarantine", "recreate-metadata", "rollback", "rewrite"} <= strategies
    # 14 refused restarts of metadata-id-not-uuid and -not-hex; 5 of job-async-off (bridge)
    assert len(REPAIRABLE) == 314


def test_a_failed_apply_says_the_checkpoint_changed_and_undo_checks_changes_since(tmp_path):
    scenario, _, restart = _first_repairable("unfinished-repartition")
    cp, plan = prepared(scenario, restart, tmp_path)
    assert [s.kind for s in plan.executable_steps] == ["quarantine", "quarantine"]
    before = tree_bytes(cp)
    # Count the operations of a clean apply on a copy, then fail the last step's delete.
    probe = FaultInjector()
    cp2, plan2 = prepared(scenario, restart, tmp_path / "probe")
    apply(cp2, plan2, probe)
    fail_at = _op_index_of_step(scenario, restart, tmp_path / "count", len(plan.executable_steps))
    with pytest.raises(ApplyFailedError) as info:
        apply(cp, plan, FaultInjector(fail_at))
    text = str(info.value)
    assert "WAS changed" in text and "checkpoint-doctor undo" in text and JOURNAL in text
    journal_url = text.split("the record is ")[1].split(";")[0]
    with pytest.raises(PreconditionFailedError) as again:  # running apply again names the unfinished one
        apply(cp, plan)
    assert "did not finish (failed" in str(again.value) and f"checkpoint-doctor undo {journal_url}" in str(
        again.value
    )
    (cp / "commits" / "9").write_text("v1\n{}")  # written after the crash
    with pytest.raises(UndoRefusedError, match="commits/9"):
        undo(journal_url)
    (cp / "commits" / "9").unlink()
    undo(journal_url)
    assert tree_bytes(cp) == before


def _op_index_of_step(scenario, restart, work: Path, steps: int) -> int:
    """Return the storage operation number of the last step's change in a clean apply."""

    class Recorder(FaultInjector):
        def __init__(self) -> None:
            super().__init__()
            self.changes: list[int] = []

        def tick(self, url: str, op: str) -> None:
            super().tick(url, op)
            if op in ("delete", "write_exclusive") and "checkpoint-doctor" not in url:
                self.changes.append(self.count)

    cp, plan = prepared(scenario, restart, work)
    recorder = Recorder()
    apply(cp, plan, recorder)
    return recorder.changes[steps - 1]


FAULT_CASES = ["missing-prev-offsets", "offsets-latest-empty", "metadata-unreadable", "commit-latest-empty"]


@pytest.mark.parametrize("name", FAULT_CASES)
def test_a_fault_at_every_operation_never_loses_anything(name, tmp_path, subtests):
    scenario, _, restart = _first_repairable(name)
    probe_dir = tmp_path / "probe"
    cp, plan = prepared(scenario, restart, probe_dir)
    counter = FaultInjector()
    apply(cp, plan, counter)
    total = counter.count
    assert total > 5
    for n in range(1, total + 1):
        with subtests.test(fail_at=n):
            work = tmp_path / f"n{n}"
            cp, plan = prepared(scenario, restart, work)
            before = tree_bytes(cp)
            journals_at = Path(tool_url(str(cp)))
            exc = failure_of(lambda: apply(cp, plan, FaultInjector(n)))  # noqa: B023 - called at once
            journals = sorted(journals_at.glob(f"*/{JOURNAL}"))
            if exc is None:
                # Only releasing the lock (its read and delete, the last operations) can fail
                # without failing the apply; the lock is left and the next writer takes it over.
                assert n > total - 2 and (journals_at / "lock").exists()
            else:
                assert "injected fault" in str(exc)
                # Once a journal exists the failure names it; before, it is the storage error itself.
                assert isinstance(exc, ApplyFailedError if journals else StorageError)
                if tree_bytes(cp) != before:
                    assert "WAS changed" in str(exc) and "checkpoint-doctor undo" in str(exc)
            for journal in journals:
                refused = failure_of(lambda: undo(str(journal)))  # noqa: B023 - called at once
                assert refused is None or "stopped before it changed anything" in str(refused)
            assert tree_bytes(cp) == before, f"undo did not restore after fault {n}"


def test_undo_of_a_missing_journal_says_where_to_look(tmp_path):
    with pytest.raises(JournalError, match="history"):
        undo_journal(open_storage(str(tmp_path / "nothing")), open_storage)


def _apply_stalled(cp: str, plan_json: str, ready: str, release: str) -> None:
    """Child process: apply a plan whose first checkpoint delete stalls until ``release`` exists."""
    from checkpoint_doctor.planning.plan import RepairPlan
    from tests.faults import StallingStore

    plan = RepairPlan.from_json(plan_json)
    checkpoint = StallingStore(open_storage(cp), "delete", ready, release)
    apply_plan(plan, checkpoint, sink=None, tool=open_storage(tool_url(cp)), now_ms=None)


def test_one_writer_at_a_time_a_second_apply_or_undo_is_refused_while_one_runs(tmp_path):
    import multiprocessing
    import time

    from checkpoint_doctor.errors import LockHeldError

    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    before = tree_bytes(cp)
    ready, release = tmp_path / "ready", tmp_path / "release"
    child = multiprocessing.get_context("fork").Process(
        target=_apply_stalled, args=(str(cp), plan.to_json(), str(ready), str(release))
    )
    child.start()
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and time.monotonic() < deadline and child.is_alive():
            time.sleep(0.05)
        assert ready.exists(), "the first apply never reached its first change"
        # The first apply is inside its steps: its journal exists, it holds the lock.
        (journal,) = Path(tool_url(str(cp))).glob(f"*/{JOURNAL}")
        with pytest.raises(LockHeldError, match=f"pid {child.pid}") as info:
            apply(cp, plan)
        assert f"rm {Path(tool_url(str(cp))) / 'lock'}" in str(info.value)
        with pytest.raises(LockHeldError):
            undo(str(journal))
        assert tree_bytes(cp) == before
    finally:
        release.write_text("go")
        child.join(120)
    assert child.exitcode == 0
    rows = apply_history(str(cp), open_storage)
    assert [(r["state"], r["journal"]) for r in rows] == [("applied", str(journal))]
    undo(str(journal))
    assert tree_bytes(cp) == before


def test_the_journal_is_created_exclusively(tmp_path):
    from checkpoint_doctor.errors import TargetExistsError
    from checkpoint_doctor.execution.journal import Journal

    store = open_storage(str(tmp_path / "backup"))
    begin = {"event": "begin", "checkpoint": "/cp", "sink": None}
    Journal.create(store, {**begin, "plan_id": "a"})
    with pytest.raises(TargetExistsError):
        Journal.create(store, {**begin, "plan_id": "b"})
    assert Journal.load(store).first("begin")["plan_id"] == "a"


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path):
    import json
    import socket

    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    lock = Path(tool_url(str(cp))) / "lock"
    lock.parent.mkdir(parents=True)
    dead = 2**22 + 12345  # above the default pid_max of 4194304: no such process
    lock.write_text(json.dumps({"pid": dead, "host": socket.gethostname(), "what": "apply x"}))
    result = apply(cp, plan)
    assert result.steps_done == 2 and not lock.exists()


def _dirs(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir()}


@pytest.mark.parametrize(
    ("name", "strategy"), [("offsets-dir-deleted", "start-over"), ("state-deleted", "reset-state")]
)
def test_consented_repairs_apply_and_undo_exactly(name, strategy, tmp_path):
    scenario = next(s for s, _, _ in failing_restarts() if s.id == f"spark-4.3.0/{name}")
    restart = next(
        r for r in scenario.data["restarts"] if not r["result"]["started"] and r["spark"] == "4.3.0"
    )
    cp, plan = prepared(scenario, restart, tmp_path, accept_data_loss=True)
    assert plan.strategy == strategy and plan.expected["starts"] is True
    before, dirs = tree_bytes(cp), _dirs(cp)
    result = apply(cp, plan)
    assert result.after is not None and result.after.prediction.starts
    if strategy == "start-over":
        assert not any(d.startswith("state/") for d in _dirs(cp)) and "state" in _dirs(cp)
    undo(result.journal_url)
    assert tree_bytes(cp) == before and _dirs(cp) == dirs


def test_files_an_apply_wrote_are_not_a_live_writer(tmp_path, capsys):
    import json
    import time

    from checkpoint_doctor.cli import main

    scenario, _, _ = _first_repairable("missing-prev-offsets")
    cp = scenario.copy_to(tmp_path)
    old = time.time() - 7200
    for p in cp.rglob("*"):
        os.utime(p, (old, old))
    plan_file = tmp_path / "plan.json"
    assert main(["plan", str(cp), "-o", str(plan_file)]) == 0  # the default live window
    assert main(["apply", str(plan_file), "--yes"]) == 0
    capsys.readouterr()

    def live_codes() -> list[str]:
        main(["diagnose", str(cp), "--format", "json"])
        return [
            f["code"]
            for f in json.loads(capsys.readouterr()[0])["result"]["findings"]
            if f["code"] == "CD501"
        ]

    assert live_codes() == []  # offsets/2, written by the apply a moment ago, is the tool's own
    (cp / "offsets" / "9").write_text("v1\n{}")  # a write that is not
    assert live_codes() == ["CD501"]
