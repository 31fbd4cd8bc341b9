"""What an apply that stopped says, and what its undo touches, are true (issue 31):

* a create whose temp file could not be removed after the link made the file: the apply says the
  checkpoint WAS changed, names the step, and prints the undo command;
* a live writer that put the very bytes of a planned create in place first: the create fails on
  EEXIST, and undo never removes that file (identity by content alone is not the apply's);
* Ctrl-C at any storage operation of an apply: the journal counts the steps done, history shows
  the apply interrupted with that count, and undo restores the checkpoint exactly.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from checkpoint_doctor.errors import ApplyFailedError, StorageError, UndoRefusedError
from checkpoint_doctor.execution.journal import JOURNAL, Event, Journal, tool_url
from checkpoint_doctor.reading.history import apply_history
from checkpoint_doctor.reading.storage import Storage, open_storage
from tests.execution.test_apply import _first_repairable, apply, failure_of, prepared, undo
from tests.faults import FaultInjector
from tests.repair_proof import tree_bytes


def _journal_of(exc: BaseException) -> str:
    return str(exc).split("the record is ")[1].split(";")[0]


class _LostReply:
    """A checkpoint store whose create of ``path`` fails after the file was made (a reply lost
    after the PUT, a temp file that could not be removed after the link)."""

    def __init__(self, inner: Storage, path: str) -> None:
        self._inner, self._path = inner, path

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name != "write_exclusive":
            return attr

        def create(rel: str, data: bytes, **kw: Any) -> Any:
            made = attr(rel, data, **kw)
            if rel == self._path:
                raise StorageError(self._inner.url_of(rel), "write", "connection reset (after the create)")
            return made

        return create


@pytest.mark.parametrize("how", ["reply-lost-after-the-create", "temp-not-removable"])
def test_a_failure_after_the_create_is_a_change_and_undo_is_printed(tmp_path, monkeypatch, how):
    from checkpoint_doctor.execution.apply import apply_plan
    from checkpoint_doctor.execution.journal import tool_urls

    scenario, _, restart = _first_repairable("missing-prev-offsets")
    cp, plan = prepared(scenario, restart, tmp_path)
    assert [(s.kind, s.path) for s in plan.executable_steps] == [("copy", "offsets/2")]
    before = tree_bytes(cp)
    real_unlink = os.unlink

    def unlink(path: Any, *args: Any, **kw: Any) -> None:
        # The temp of the created offsets/2 cannot be removed (after the link made the file).
        if str(path).endswith(".cdtmp") and os.path.exists(cp / "offsets" / "2"):
            raise PermissionError(13, "Permission denied", str(path))
        real_unlink(path, *args, **kw)

    checkpoint = open_storage(str(cp))
    tool = open_storage(tool_urls(checkpoint)[0])
    if how == "temp-not-removable":
        monkeypatch.setattr(os, "unlink", unlink)
    else:
        checkpoint = _LostReply(checkpoint, "offsets/2")
    with pytest.raises(ApplyFailedError) as info:
        apply_plan(plan, checkpoint, sink=None, tool=tool, now_ms=None)
    monkeypatch.setattr(os, "unlink", real_unlink)

    text, journal = str(info.value), _journal_of(info.value)
    assert (cp / "offsets" / "2").exists()
    assert "not changed" not in text and "no step ran" not in text
    if how == "temp-not-removable":  # the temp goes once the journal counts the step
        assert "the checkpoint WAS changed (1 of 1 step(s) done: copy " in text
        steps = 1
    else:
        assert "the checkpoint WAS changed (0 of 1 step(s) done; step 1, copy " in text
        assert "changed its file before it failed" in text
        steps = 0
    assert f"checkpoint-doctor undo {journal}" in info.value.hint
    assert [(r["state"], r["steps_done"]) for r in apply_history(str(cp), open_storage)] == [
        ("failed", steps)
    ]
    undo(journal)
    assert tree_bytes(cp) == before and not list(cp.rglob("*.cdtmp"))


class _WriterFirst:
    """A checkpoint store where a live writer creates ``path`` (with ``data``) just before the
    apply's own create of it: Spark's stateless commit files are byte-identical."""

    def __init__(self, inner: Storage, path: str, data: bytes) -> None:
        self._inner, self._path, self._data = inner, path, data

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name != "write_exclusive":
            return attr

        def create(rel: str, data: bytes, **kw: Any) -> None:
            if rel == self._path and not self._inner.exists(rel):
                self._inner.write_exclusive(rel, self._data)  # the writer's, before ours
            attr(rel, data, **kw)

        return create


def _apply_with_writer(cp: Path, plan, path: str, data: bytes):
    from checkpoint_doctor.execution.apply import apply_plan
    from checkpoint_doctor.execution.journal import tool_urls

    checkpoint = open_storage(str(cp))
    tool = open_storage(tool_urls(checkpoint)[0])
    return apply_plan(plan, _WriterFirst(checkpoint, path, data), sink=None, tool=tool, now_ms=None)


def test_undo_never_removes_a_file_a_live_writer_created_with_the_planned_bytes(tmp_path):
    scenario, _, restart = _first_repairable("missing-prev-offsets")
    cp, plan = prepared(scenario, restart, tmp_path)
    (step,) = plan.executable_steps
    planned = (cp / "offsets" / "1").read_bytes()  # the copy's source: the bytes the step writes
    assert step.content(type("IO", (), {"read": lambda self, a, p: (cp / p).read_bytes()})()) == planned

    with pytest.raises(ApplyFailedError) as info:
        _apply_with_writer(cp, plan, "offsets/2", planned)

    text, journal = str(info.value), _journal_of(info.value)
    assert "the checkpoint was not changed" in text and "WAS changed" not in text
    writer = (cp / "offsets" / "2").stat()
    with pytest.raises(UndoRefusedError, match="stopped before it changed anything"):
        undo(journal)
    with pytest.raises(UndoRefusedError, match="stopped before it changed anything"):
        undo(journal, force=True)
    after = (cp / "offsets" / "2").stat()
    assert (after.st_ino, after.st_dev) == (writer.st_ino, writer.st_dev)
    assert (cp / "offsets" / "2").read_bytes() == planned


def test_undo_of_a_rewrite_whose_create_met_a_live_writer_refuses_and_keeps_its_file(tmp_path):
    scenario, _, restart = _first_repairable("commit-too-new")
    cp, plan = prepared(scenario, restart, tmp_path)
    assert [(s.kind, s.path) for s in plan.executable_steps] == [
        ("quarantine", "commits/3"),
        ("quarantine", "commits/.3.crc"),
        ("write", "commits/3"),
    ]
    planned = plan.executable_steps[2].data

    with pytest.raises(ApplyFailedError) as info:
        _apply_with_writer(cp, plan, "commits/3", planned)

    text, journal = str(info.value), _journal_of(info.value)
    assert "the checkpoint WAS changed (2 of 3 step(s) done; step 3, write " in text
    assert "changed nothing" in text
    writer = (cp / "commits" / "3").stat()
    with pytest.raises(UndoRefusedError, match="commits/3"):
        undo(journal)
    after = (cp / "commits" / "3").stat()
    assert (after.st_ino, (cp / "commits" / "3").read_bytes()) == (writer.st_ino, planned)
    events = Journal.load(open_storage(journal[: -len(JOURNAL) - 1])).events
    assert events[-1]["event"] == Event.FAILED
    assert (events[-1]["steps_done"], events[-1]["ran"], events[-1]["stopped_changed"]) == (2, 2, False)


class _CtrlC(FaultInjector):
    """Ctrl-C (KeyboardInterrupt) at the ``fail_at``-th storage operation."""

    def tick(self, url: str, op: str) -> None:
        self.count += 1
        if self.fail_at is not None and self.count == self.fail_at:
            self.failed = True
            raise KeyboardInterrupt


PROGRESS_CASES = ["metadata-unreadable", "offsets-latest-empty"]


@pytest.mark.parametrize("name", PROGRESS_CASES)
def test_ctrl_c_at_every_operation_is_counted_shown_and_undone(name, tmp_path, monkeypatch, subtests):
    import checkpoint_doctor.execution.apply as apply_module

    # Progress every 2 steps: a 3-step plan stopped after its last step said "done: 2" (issue 31:
    # "done: 1536" of 1,600 moves).
    monkeypatch.setattr(apply_module, "PROGRESS_EVERY", 2)
    scenario, _, restart = _first_repairable(name)
    cp, plan = prepared(scenario, restart, tmp_path / "probe")
    counter = FaultInjector()
    apply(cp, plan, counter)
    total, steps, applied = counter.count, len(plan.executable_steps), tree_bytes(cp)
    clean = 0
    for n in range(1, total + 1):
        with subtests.test(interrupt_at=n):
            cp, plan = prepared(scenario, restart, tmp_path / f"n{n}")
            before = tree_bytes(cp)
            try:
                apply(cp, plan, _CtrlC(n))
                interrupted = False
            except KeyboardInterrupt:
                interrupted = True
            journals = sorted(Path(tool_url(str(cp))).glob(f"*/{JOURNAL}"))
            if not interrupted:
                assert n > total - 2  # only the lock's release: the apply is done
                continue
            rows = apply_history(str(cp), open_storage)
            if journals:
                journal = Journal.load(open_storage(str(journals[0].parent)))
                if not rows:  # stopped before the apply was listed: before any change
                    assert journal.last(Event.INTERRUPTED)["ran"] == 0
                    assert tree_bytes(cp) == before
                    clean += 1
                    continue
                (row,) = rows
                if journal.state == "interrupted":
                    end = journal.last(Event.INTERRUPTED)
                    assert end is not None, "Ctrl-C is recorded"
                    assert row["steps_done"] == end["steps_done"]
                    if tree_bytes(cp) == applied:  # stopped after every step: the journal says so
                        assert end["steps_done"] == steps and row["steps_done"] == steps
                    assert "the apply did not finish: it was interrupted (Ctrl-C)" in row["note"]
                else:
                    assert journal.state == "applied"  # stopped after its applied event
                refused = failure_of(lambda: undo(str(journals[0])))  # noqa: B023 - called at once
                assert refused is None or "stopped before it changed anything" in str(refused)
            assert tree_bytes(cp) == before, f"undo did not restore after Ctrl-C at {n}"
            clean += 1
    assert clean >= total - 2


def test_a_dry_run_and_an_apply_of_a_moved_checkpoint_create_nothing(tmp_path):
    """Issue 31: both made ``<old path>.checkpoint-doctor/`` (the second its missing parent too)."""
    from checkpoint_doctor.errors import CheckpointNotFoundError

    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path / "team")
    before = tree_bytes(cp)

    result = apply(cp, plan, dry_run=True)

    assert result.dry_run and len(result.would) == 2
    assert sorted(p.name for p in (tmp_path / "team").iterdir()) == ["checkpoint"]
    assert tree_bytes(cp) == before

    (tmp_path / "team").rename(tmp_path / "moved")
    with pytest.raises(CheckpointNotFoundError, match="no such file or directory"):
        apply(cp, plan)
    with pytest.raises(CheckpointNotFoundError):
        apply(cp, plan, dry_run=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["moved"]
    assert sorted(p.name for p in (tmp_path / "moved").iterdir()) == ["checkpoint"]


def test_diagnose_plan_and_history_say_an_apply_was_interrupted_and_how_to_undo_it(tmp_path, capsys):
    """Issue 31: after Ctrl-C the journal said "done: 1536" of 1,600 moves, history "interrupted -",
    and diagnose nothing. Ctrl-C here comes after every step, in the listing after the apply."""
    import json

    from checkpoint_doctor.cli import main
    from tests.cli.test_schemas import validate

    scenario, _, restart = _first_repairable("metadata-unreadable")
    cp, plan = prepared(scenario, restart, tmp_path)
    before = tree_bytes(cp)

    class AfterSteps(FaultInjector):
        armed = False

        def tick(self, url: str, op: str) -> None:
            super().tick(url, op)
            if op == "write_exclusive" and "checkpoint-doctor" not in url:
                self.armed = True  # the last step (write metadata) ran: next, the listing after
            elif op == "list_tree" and self.armed:
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        apply(cp, plan, AfterSteps())
    (journal,) = Path(tool_url(str(cp))).glob(f"*/{JOURNAL}")
    undo_command = f"checkpoint-doctor undo {journal}"

    code = main(["history", str(cp)])
    out = capsys.readouterr().out
    assert code == 0
    assert [w for w in out.splitlines()[2].split() if w in ("interrupted", "3")] == ["interrupted", "3"]
    assert "it was interrupted (Ctrl-C) after 3 step(s); the checkpoint was changed" in out
    assert undo_command in out

    for command in (["diagnose"], ["plan"]):
        main([*command, str(cp), "--live-window", "0"])
        out = capsys.readouterr().out
        assert (
            f"WARNING: an apply of plan {plan.plan_id} to this checkpoint did not finish (interrupted, 3 step(s) done)"
            in out
        ), command
        assert f"undo it with: {undo_command}" in out

    main(["plan", str(cp), "--live-window", "0", "--format", "json"])
    printed = capsys.readouterr()
    assert json.loads(printed.out)["command"] == "plan"
    assert "did not finish (interrupted, 3 step(s) done)" in printed.err and undo_command in printed.err

    code = main(["diagnose", str(cp), "--live-window", "0", "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    validate("diagnose", document)
    (row,) = document["result"]["unfinished_applies"]
    assert (row["plan_id"], row["journal"], row["state"], row["steps_done"]) == (
        plan.plan_id,
        str(journal),
        "interrupted",
        3,
    )
    # A half-repaired checkpoint is never "ok": at least a warning, and the Python API says the same.
    assert code >= 1 and document["result"]["exit_code"] == code
    from checkpoint_doctor import api

    matrix = api.diagnose(str(cp), live_window_s=0)
    assert [dict(r) for r in matrix.unfinished_applies] == document["result"]["unfinished_applies"]
    assert matrix.exit_code == code

    undo(str(journal))
    assert tree_bytes(cp) == before
    main(["diagnose", str(cp), "--live-window", "0"])
    assert "did not finish" not in capsys.readouterr().out
