"""Undo removes only what apply created, after a real SIGKILL too (issue 31): the apply is killed
before each of its file system changes, a live writer then creates every file the plan would
create that is not there, with the very bytes the plan would write (Spark's stateless commit
files are identical), and undo --force keeps every such file (same inode) and removes every file
the apply created, proven by the temp file each create is linked from (kept until the journal
counts the step)."""

from __future__ import annotations

import hashlib
import signal
from pathlib import Path

import pytest

from tests.execution.test_apply import _first_repairable, failure_of, prepared, undo
from tests.execution.test_kills import _run, temps
from tests.repair_proof import tree_bytes

#: A bridge (a copy creates offsets/2) and a rewrite (quarantine metadata, then write it again).
WRITER_CASES = ["missing-prev-offsets", "metadata-unreadable"]


def _planned(cp: Path, plan) -> dict[str, bytes]:
    """The files the plan creates, with the bytes it would write."""

    class Reader:
        def read(self, area, path):
            return (cp / path).read_bytes()

    return {s.path: s.content(Reader()) for s in plan.executable_steps if s.creates}


@pytest.mark.parametrize("name", WRITER_CASES)
def test_a_kill_then_a_writer_with_the_planned_bytes_undo_keeps_the_writers_files(name, tmp_path, subtests):
    from checkpoint_doctor.execution.journal import JOURNAL, tool_url

    scenario, _, restart = _first_repairable(name)
    cp, plan = prepared(scenario, restart, tmp_path / "probe")
    code, total = _run(0, tmp_path, "apply", plan.to_json())
    assert code == 0 and total > 5
    kept = refusals = 0
    for n in range(1, total + 1):
        with subtests.test(kill_at=n):
            cp, plan = prepared(scenario, restart, tmp_path / f"n{n}")
            planned = _planned(cp, plan)
            before = tree_bytes(cp)
            code, _ = _run(n, tmp_path, "apply", plan.to_json())
            assert code == -signal.SIGKILL
            writers = {}
            for path, data in planned.items():
                if not (cp / path).exists():
                    (cp / path).write_bytes(data)  # the live writer's, after the kill
                    writers[path] = (cp / path).stat().st_ino
            with_writers = tree_bytes(cp)
            for journal in sorted(Path(tool_url(str(cp))).glob(f"*/{JOURNAL}")):
                refused = failure_of(lambda: undo(str(journal)))  # noqa: B023
                if refused is not None and "stopped before it changed anything" not in str(refused):
                    # Refused for the writer's files: named, and nothing touched.
                    assert writers and any(p in str(refused) for p in writers), refused
                    assert tree_bytes(cp) == with_writers
                    refusals += 1
                    refused = failure_of(lambda: undo(str(journal), force=True))  # noqa: B023
                assert refused is None or "stopped before it changed anything" in str(refused), refused
            # --force puts back what the apply removed (a rewrite's original, over the writer's
            # file at that path); a file that was not there before is never removed for its bytes.
            created = {p: inode for p, inode in writers.items() if p not in before}
            for path, inode in created.items():
                assert (cp / path).stat().st_ino == inode, f"undo removed the writer's {path} (kill at {n})"
                kept += 1
            expected = {**before, **{p: hashlib.sha256(planned[p]).hexdigest() for p in created}}
            assert tree_bytes(cp) == expected and temps(cp) == []
    # Each case meets the writer somewhere: a new file kept, or a refusal naming the writer's file.
    assert kept > 0 if name == "missing-prev-offsets" else refusals > 0
