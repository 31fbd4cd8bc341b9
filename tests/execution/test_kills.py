"""A killed or failed apply or undo can always be finished: a fault at every storage operation of
undo, and a real SIGKILL at every file system change of apply and of undo (link, rename, unlink,
mkdir, rmdir, utime, chmod, chown, create), each followed by one undo that restores the checkpoint
exactly, with no temp file of the tool's left, and a history that says what happened."""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import pytest

from checkpoint_doctor.errors import CheckpointDoctorError, UndoFailedError, UndoRefusedError
from checkpoint_doctor.execution.journal import JOURNAL, tool_url
from checkpoint_doctor.execution.undo import undo_journal
from checkpoint_doctor.reading.history import apply_history
from checkpoint_doctor.reading.storage import open_storage
from tests.execution.test_apply import _first_repairable, apply, failure_of, prepared, undo
from tests.faults import FailingStore, FaultInjector

#: The file system calls a kill is injected before (what ``strace -e inject=...:signal=KILL`` hits).
CHANGES = ("link", "replace", "rename", "unlink", "mkdir", "rmdir", "utime", "chmod", "chown", "open")

#: A quarantine, a bridge (a new file) and a rewrite (quarantine, then write the same path).
KILL_CASES = ["offsets-latest-empty", "missing-prev-offsets", "metadata-unreadable"]


def state_of(cp: Path) -> dict[str, tuple[int, int | str | None]]:
    """Every file with its size and mtime (ms), as the checkpoint's fingerprint sees it."""
    return {f.path: (f.size, f.etag or f.mtime_ms) for f in open_storage(str(cp)).list_tree().files}


def temps(cp: Path) -> list[str]:
    return sorted(str(p.relative_to(cp)) for p in cp.rglob("*.cdtmp"))


def states(cp: Path) -> list[str]:
    return [r["state"] for r in apply_history(str(cp), open_storage)]


def _faulty_undo(journal_url: str, injector: FaultInjector):
    location = journal_url[: -len(JOURNAL)].rstrip("/")
    return undo_journal(
        FailingStore(open_storage(location), injector),
        lambda url: FailingStore(open_storage(url), injector),
    )


@pytest.mark.parametrize("name", KILL_CASES)
def test_a_fault_at_every_operation_of_undo_is_finished_by_undo_again(name, tmp_path, subtests):
    scenario, _, restart = _first_repairable(name)
    cp, plan = prepared(scenario, restart, tmp_path / "probe")
    counter = FaultInjector()
    _faulty_undo(apply(cp, plan).journal_url, counter)
    total = counter.count
    clean = 0
    for n in range(1, total + 1):
        with subtests.test(fail_at=n):
            cp, plan = prepared(scenario, restart, tmp_path / f"n{n}")
            before = state_of(cp)
            result = apply(cp, plan)
            exc = failure_of(lambda: _faulty_undo(result.journal_url, FaultInjector(n)))  # noqa: B023
            if isinstance(exc, UndoFailedError):
                assert "PARTLY restored" in str(
                    exc
                ) and f"checkpoint-doctor undo {result.journal_url}" in str(exc)
                assert states(cp) == ["partly undone"]
            if exc is not None:
                assert "injected fault" in str(exc)
                undo(result.journal_url)
            else:
                # Only releasing the lock can fail without failing the undo (the next one takes it over).
                assert n > total - 2
            assert state_of(cp) == before and temps(cp) == [] and states(cp) == ["undone"]
            clean += 1
    assert clean == total


def _killing(n: int, count_file: str) -> None:
    """In a child process: SIGKILL this process before its ``n``-th file system change (0: never);
    every change is counted into ``count_file`` (the probe's total)."""
    calls = [0]
    for name in CHANGES:
        original = getattr(os, name)

        def hooked(*args, __original=original, __name=name, **kw):
            if __name == "open" and not (len(args) > 1 and args[1] & os.O_CREAT):
                return __original(*args, **kw)
            calls[0] += 1
            with open(count_file, "w") as fh:  # the builtin open does not go through os.open
                fh.write(str(calls[0]))
            if calls[0] == n:
                os.kill(os.getpid(), signal.SIGKILL)
            return __original(*args, **kw)

        setattr(os, name, hooked)


def _child(n: int, count_file: str, what: str, arg: str) -> None:
    from checkpoint_doctor.planning.plan import RepairPlan

    _killing(n, count_file)
    try:
        if what == "undo":
            undo(arg)
        else:
            plan = RepairPlan.from_json(arg)
            apply(Path(plan.checkpoint), plan)
    except CheckpointDoctorError:
        os._exit(3)
    os._exit(0)


def _run(n: int, tmp_path: Path, what: str, arg: str) -> tuple[int | None, int]:
    count_file = tmp_path / f"count-{what}-{n}"
    child = multiprocessing.get_context("fork").Process(target=_child, args=(n, str(count_file), what, arg))
    child.start()
    child.join(300)
    return child.exitcode, int(count_file.read_text()) if count_file.exists() else 0


@pytest.mark.parametrize("name", KILL_CASES)
def test_a_kill_at_every_change_of_undo_is_finished_by_undo_again(name, tmp_path, subtests):
    scenario, _, restart = _first_repairable(name)
    cp, plan = prepared(scenario, restart, tmp_path / "probe")
    code, total = _run(0, tmp_path, "undo", apply(cp, plan).journal_url)
    assert code == 0 and total > 5
    killed = 0
    for n in range(1, total + 1):
        with subtests.test(kill_at=n):
            cp, plan = prepared(scenario, restart, tmp_path / f"n{n}")
            before = state_of(cp)
            result = apply(cp, plan)
            code, _ = _run(n, tmp_path, "undo", result.journal_url)
            assert code == -signal.SIGKILL
            killed += 1
            assert states(cp)[0] in ("applied", "partly undone", "undone")
            refused = failure_of(lambda: undo(result.journal_url))  # noqa: B023
            assert refused is None or (
                isinstance(refused, UndoRefusedError) and "already undone" in str(refused)
            ), refused
            assert state_of(cp) == before and temps(cp) == [] and states(cp) == ["undone"]
    assert killed == total


@pytest.mark.parametrize("name", KILL_CASES)
def test_a_kill_at_every_change_of_apply_is_undone(name, tmp_path, subtests):
    scenario, _, restart = _first_repairable(name)
    cp, plan = prepared(scenario, restart, tmp_path / "probe")
    code, total = _run(0, tmp_path, "apply", plan.to_json())
    assert code == 0 and total > 5
    for n in range(1, total + 1):
        with subtests.test(kill_at=n):
            cp, plan = prepared(scenario, restart, tmp_path / f"n{n}")
            before = state_of(cp)
            code, _ = _run(n, tmp_path, "apply", plan.to_json())
            assert code == -signal.SIGKILL
            journals = sorted(Path(tool_url(str(cp))).glob(f"*/{JOURNAL}"))
            for journal in journals:
                refused = failure_of(lambda: undo(str(journal)))  # noqa: B023
                assert refused is None or "stopped before it changed anything" in str(refused), refused
            assert state_of(cp) == before and temps(cp) == []
            assert set(states(cp)) <= {"undone", "interrupted"}


def test_an_undo_that_fails_part_way_says_so_records_it_and_is_finished_by_undo_again(tmp_path):
    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    before = state_of(cp)
    result = apply(cp, plan)
    # The restoring fails at its second change (an immutable directory, a full disk).
    probe = FaultInjector()
    changes: list[int] = []

    class Recorder(FaultInjector):
        def tick(self, url: str, op: str) -> None:
            super().tick(url, op)
            if op in ("delete", "write_exclusive") and "checkpoint-doctor" not in url:
                changes.append(self.count)

    cp2, plan2 = prepared(scenario, restart, tmp_path / "probe")
    _faulty_undo(apply(cp2, plan2).journal_url, Recorder())
    assert len(changes) >= 2 and probe.count == 0
    with pytest.raises(UndoFailedError) as info:
        _faulty_undo(result.journal_url, FaultInjector(changes[1]))
    text = str(info.value)
    assert "PARTLY restored (1 of" in text and f"checkpoint-doctor undo {result.journal_url}" in text
    rows = apply_history(str(cp), open_storage)
    assert rows[0]["state"] == "partly undone" and "injected fault" in rows[0]["note"]
    assert undo(result.journal_url).restored
    assert state_of(cp) == before and states(cp) == ["undone"]
