"""Undo restores only what its journal proves the apply backed up, verified by hash, inside the
checkpoint the apply changed; one lock per real checkpoint location; owners and modes survive."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import stat
import time
from dataclasses import replace
from pathlib import Path

import pytest

from checkpoint_doctor.cli import main
from checkpoint_doctor.errors import UndoRefusedError
from checkpoint_doctor.execution.journal import JOURNAL, tool_url
from checkpoint_doctor.planning.plan import RepairPlan
from checkpoint_doctor.planning.steps import WriteStep
from checkpoint_doctor.reading.history import apply_history
from checkpoint_doctor.reading.storage import open_storage
from tests.execution.test_apply import _first_repairable, apply, prepared, undo
from tests.repair_proof import tree_bytes

FORGED = ("metadata", "offsets/1", "commits/1")


def _applied(tmp_path: Path, name: str = "missing-prev-offsets"):
    scenario, _, restart = _first_repairable(name)
    cp, plan = prepared(scenario, restart, tmp_path)
    before = tree_bytes(cp)
    result = apply(cp, plan)
    return cp, plan, before, result, Path(result.backup_url)


def _events(location: Path) -> list[dict]:
    return [json.loads(line) for line in (location / JOURNAL).read_text().splitlines()]


def _write_events(location: Path, events: list[dict]) -> None:
    (location / JOURNAL).write_text("".join(json.dumps(e) + "\n" for e in events))


def _forge_plan(cp: Path, plan: RepairPlan, location: Path) -> RepairPlan:
    """Replace plan.json by a self-consistent plan (its own plan_id) that also 'created' three
    files that were there before the apply, with their current bytes."""
    extra = tuple(WriteStep.of_bytes(p, (cp / p).read_bytes(), "forged") for p in FORGED)
    forged = replace(plan, steps=plan.steps + extra)
    assert forged.plan_id != plan.plan_id
    (location / "plan.json").write_text(forged.to_json())
    return forged


def test_undo_refuses_a_replaced_plan_and_removes_nothing(tmp_path):
    cp, plan, _, result, location = _applied(tmp_path)
    after = tree_bytes(cp)
    _forge_plan(cp, plan, location)
    with pytest.raises(UndoRefusedError, match=f"is plan .* but .* applied plan {plan.plan_id}"):
        undo(result.journal_url)
    assert tree_bytes(cp) == after


def test_undo_refuses_a_replaced_plan_even_with_the_journal_edited_to_match(tmp_path):
    cp, plan, _, result, location = _applied(tmp_path)
    after = tree_bytes(cp)
    forged = _forge_plan(cp, plan, location)
    events = _events(location)
    events[0]["plan_id"] = forged.plan_id
    _write_events(location, events)
    with pytest.raises(UndoRefusedError, match="not the plan this apply recorded"):
        undo(result.journal_url)
    # A journal of an older version has no plan digest: the listing before the apply still proves
    # that the forged steps' files were not the apply's to remove.
    del events[0]["plan_sha256"]
    _write_events(location, events)
    with pytest.raises(UndoRefusedError, match=r"created .*, which was there before the apply"):
        undo(result.journal_url)
    assert tree_bytes(cp) == after
    assert all((cp / p).exists() for p in FORGED)


def test_undo_refuses_a_swapped_backup_and_manifest_row(tmp_path):
    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    result = apply(cp, plan)
    location = Path(result.backup_url)
    after = tree_bytes(cp)
    rows = [json.loads(line) for line in (location / "backups.jsonl").read_text().splitlines()]
    evil = b"v1\n{}\n{}"
    saved = location / "files" / rows[0]["area"] / rows[0]["path"]
    saved.write_bytes(evil)
    rows[0].update(size=len(evil), sha256=hashlib.sha256(evil).hexdigest())
    (location / "backups.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    with pytest.raises(
        UndoRefusedError, match=r"backups\.jsonl is not the backups manifest this apply recorded"
    ):
        undo(result.journal_url)
    assert tree_bytes(cp) == after


@pytest.mark.parametrize("where", ["elsewhere", "usr-share-like"])
def test_undo_refuses_a_journal_naming_another_checkpoint_before_touching_it(tmp_path, where):
    cp, _, _, result, location = _applied(tmp_path / "a")
    other = tmp_path / where
    other.mkdir()
    (other / "keep").write_text("x")
    events = _events(location)
    events[0]["checkpoint"] = str(other)
    _write_events(location, events)
    after = tree_bytes(cp)
    with pytest.raises(
        UndoRefusedError, match=f"says it applied to {other}, but it is not that checkpoint's"
    ):
        undo(result.journal_url)
    assert not Path(tool_url(str(other))).exists(), "undo created a tool directory for the named path"
    assert tree_bytes(cp) == after and tree_bytes(other) == {"keep": hashlib.sha256(b"x").hexdigest()}


def test_a_journal_in_an_explicit_backup_dir_is_undone_when_the_checkpoint_lists_it(tmp_path):
    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    before = tree_bytes(cp)
    result = apply(cp, plan, backup=open_storage(str(tmp_path / "elsewhere")))
    assert result.journal_url == str(tmp_path / "elsewhere" / JOURNAL)
    undo(result.journal_url)
    assert tree_bytes(cp) == before


def test_an_explicit_backup_dir_not_in_the_checkpoints_list_is_refused(tmp_path):
    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    result = apply(cp, plan, backup=open_storage(str(tmp_path / "elsewhere")))
    applies = Path(tool_url(str(cp))) / "applies.jsonl"
    applies.write_text("")
    after = tree_bytes(cp)
    with pytest.raises(UndoRefusedError, match="not that checkpoint's record"):
        undo(result.journal_url)
    assert tree_bytes(cp) == after


# ----------------------------------------------------------------------------- one lock per checkpoint


def _cli_apply_stalled(plan_file: str, stall_url: str, ready: str, release: str) -> None:
    """Child process: the CLI's apply, whose first delete in the checkpoint at ``stall_url`` stalls."""
    import checkpoint_doctor.reading.storage as storage
    from tests.faults import StallingStore

    real = storage.open_storage

    def opener(url, *args, **kw):
        store = real(url, *args, **kw)
        return StallingStore(store, "delete", ready, release) if url == stall_url else store

    storage.open_storage = opener  # type: ignore[assignment]
    os._exit(main(["apply", plan_file, "--yes"]))


def test_a_checkpoint_reached_through_a_symlink_has_one_lock_and_one_history(tmp_path, capsys):
    scenario, _, _ = _first_repairable("offsets-latest-empty")
    cp = scenario.copy_to(tmp_path)
    link = tmp_path / "lnk"
    link.symlink_to(cp)
    via_link, via_real = tmp_path / "via-link.json", tmp_path / "via-real.json"
    assert main(["plan", str(link), "-o", str(via_link), "--live-window", "0"]) == 0
    assert main(["plan", str(cp), "-o", str(via_real), "--live-window", "0"]) == 0
    before = tree_bytes(cp)
    ready, release = tmp_path / "ready", tmp_path / "release"
    child = multiprocessing.get_context("fork").Process(
        target=_cli_apply_stalled, args=(str(via_link), str(link), str(ready), str(release))
    )
    child.start()
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and time.monotonic() < deadline and child.is_alive():
            time.sleep(0.05)
        assert ready.exists(), "the apply through the link never reached its first change"
        capsys.readouterr()
        assert main(["apply", str(via_real), "--yes"]) == 32
        assert "another checkpoint-doctor apply or undo holds" in capsys.readouterr().err
        assert tree_bytes(cp) == before
    finally:
        release.write_text("go")
        child.join(120)
    assert child.exitcode in (0, 1)  # applied (the after-diagnosis may warn)
    (journal,) = Path(tool_url(str(cp))).glob(f"*/{JOURNAL}")
    assert not Path(tool_url(str(link))).exists()
    for path in (link, cp):
        rows = apply_history(str(path), open_storage)
        assert [(r["state"], r["journal"]) for r in rows] == [("applied", str(journal))]


# ----------------------------------------------------------------------------- owners and modes

QUERY_USER = 1234


def _own(root: Path, uid: int) -> None:
    for p in [root, *root.rglob("*")]:
        os.chown(p, uid, uid, follow_symlinks=False)


def test_apply_and_undo_keep_owners_and_modes_and_backups_are_private(tmp_path):
    scenario, _, restart = _first_repairable("offsets-latest-empty")
    cp, plan = prepared(scenario, restart, tmp_path)
    _own(cp, QUERY_USER)
    quarantined = [s.path for s in plan.executable_steps if s.kind == "quarantine"]
    private = quarantined[0]
    os.chmod(cp / private, 0o600)
    modes = {str(p.relative_to(cp)): (stat.S_IMODE(p.stat().st_mode), p.stat().st_uid) for p in cp.rglob("*")}
    old = os.umask(0o077)
    try:
        result = apply(cp, plan)
    finally:
        os.umask(old)
    for path in (Path(result.backup_url) / "files").rglob("*"):
        if path.is_file():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    undo(result.journal_url)
    assert {
        str(p.relative_to(cp)): (stat.S_IMODE(p.stat().st_mode), p.stat().st_uid) for p in cp.rglob("*")
    } == modes


def test_created_files_and_directories_take_their_siblings_owner_and_mode(tmp_path):
    scenario, _, restart = _first_repairable("missing-prev-offsets")
    cp, plan = prepared(scenario, restart, tmp_path)
    _own(cp, QUERY_USER)
    os.chmod(cp / "offsets" / "3", 0o600)  # one file made private by hand is not the rule
    created = [s.path for s in plan.executable_steps if s.creates]
    assert created
    old = os.umask(0o077)
    try:
        apply(cp, plan)
    finally:
        os.umask(old)
    for path in created:
        siblings = [p for p in (cp / path).parent.iterdir() if p.is_file() and p.name != Path(path).name]
        modes = [stat.S_IMODE(p.stat().st_mode) for p in siblings]
        usual = max(set(modes), key=modes.count)
        assert usual != 0o600
        st = (cp / path).stat()
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (QUERY_USER, QUERY_USER, usual), path
