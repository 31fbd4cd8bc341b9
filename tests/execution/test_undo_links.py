"""Undo keeps a symbolic link a link and never writes through one; a checkpoint moved with its tool
directory is undone where it is now (``undo --checkpoint``), only when its files are the journal's."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from checkpoint_doctor.cli import main
from checkpoint_doctor.errors import UndoRefusedError
from checkpoint_doctor.execution.journal import JOURNAL
from tests.execution.test_apply import _first_repairable, apply, prepared, undo
from tests.repair_proof import tree_bytes


def _linked(tmp_path: Path, relative: bool):
    """A checkpoint whose quarantined file is a link to a file on another 'volume' (same bytes and
    times, so the plan still fits): return (checkpoint, plan, path, target, link text)."""
    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    path = next(s.path for s in plan.executable_steps if s.kind == "quarantine")
    target = tmp_path / "volume" / path.replace("/", "-")
    target.parent.mkdir()
    os.rename(cp / path, target)
    os.chmod(target, 0o640)
    link = os.path.relpath(target, (cp / path).parent) if relative else str(target)
    os.symlink(link, cp / path)
    return cp, plan, path, target, link


def _state(target: Path) -> tuple[bytes, int, int]:
    st = target.stat()
    return target.read_bytes(), stat.S_IMODE(st.st_mode), st.st_mtime_ns


@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative"])
def test_apply_removes_the_link_not_its_target_and_undo_links_again(tmp_path, relative):
    cp, plan, path, target, link = _linked(tmp_path, relative)
    before, outside = tree_bytes(cp), _state(target)
    result = apply(cp, plan)
    assert not os.path.lexists(cp / path)
    assert _state(target) == outside  # the file on the other volume was not touched
    done = undo(result.journal_url)
    assert path in done.restored
    assert (cp / path).is_symlink() and os.readlink(cp / path) == link
    assert _state(target) == outside and tree_bytes(cp) == before


def test_undo_refuses_a_link_whose_target_changed_and_never_writes_through_it(tmp_path):
    cp, plan, path, target, link = _linked(tmp_path, relative=False)
    result = apply(cp, plan)
    target.write_bytes(b"another query's bytes\n")
    with pytest.raises(UndoRefusedError, match=f"files changed since the apply: {path} \\(a link to {link}"):
        undo(result.journal_url)
    with pytest.raises(UndoRefusedError, match=f"{path} was a link to {link}.*does not write through a link"):
        undo(result.journal_url, force=True)
    assert not os.path.lexists(cp / path) and target.read_bytes() == b"another query's bytes\n"


def _moved(tmp_path: Path):
    scenario, _, restart = _first_repairable("missing-prev-offsets")
    cp, plan = prepared(scenario, restart, tmp_path)
    before = tree_bytes(cp)
    result = apply(cp, plan)
    new = tmp_path / "moved" / "ckpt"
    new.parent.mkdir()
    os.rename(cp, new)
    os.rename(f"{cp}.checkpoint-doctor", f"{new}.checkpoint-doctor")
    journal = str(
        Path(f"{new}.checkpoint-doctor") / Path(result.journal_url).relative_to(f"{cp}.checkpoint-doctor")
    )
    return cp, new, before, journal


def test_a_moved_checkpoint_is_undone_where_it_is_now(tmp_path, capsys):
    cp, new, before, journal = _moved(tmp_path)
    code = main(["undo", journal, "--yes"])
    assert code == 32 and "not that checkpoint's record" in capsys.readouterr().err
    code = main(["undo", journal, "--yes", "--checkpoint", str(new), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["result"]["removed"] == ["offsets/2"], out
    assert tree_bytes(new) == before and not cp.exists()
    events = [json.loads(line) for line in Path(journal).read_text().splitlines()]
    assert events[-2]["event"] == "undo-begin" and events[-2]["checkpoint"] == str(new)


def test_a_moved_checkpoint_whose_files_differ_is_refused_even_with_force(tmp_path, capsys):
    _, new, _, journal = _moved(tmp_path)
    (new / "offsets" / "9").write_text("v1\n")
    after = tree_bytes(new)
    code = main(["undo", journal, "--yes", "--force", "--checkpoint", str(new)])
    err = capsys.readouterr().err
    assert code == 32 and "is not what" in err and "offsets/9" in err
    assert tree_bytes(new) == after


def test_a_checkpoint_named_without_the_journal_in_its_tool_directory_is_refused(tmp_path, capsys):
    _, new, _, journal = _moved(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(new, copy, symlinks=True)
    after = tree_bytes(copy)
    code = main(["undo", journal, "--yes", "--checkpoint", str(copy)])
    err = capsys.readouterr().err
    assert code == 32 and f"is not in the tool directory of {copy}" in err
    assert tree_bytes(copy) == after and JOURNAL in journal
