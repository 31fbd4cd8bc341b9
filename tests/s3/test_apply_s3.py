"""plan, apply and undo against a real S3 API (moto server through s3fs), like on local disk,
including a fault at every storage operation."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.errors import LockHeldError, PreconditionFailedError
from checkpoint_doctor.execution.apply import apply_plan
from checkpoint_doctor.execution.history import apply_history
from checkpoint_doctor.execution.journal import JOURNAL, tool_url
from checkpoint_doctor.execution.lock import CheckpointLock
from checkpoint_doctor.execution.undo import undo_journal
from checkpoint_doctor.planning import PlanOptions, plan_repair
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.storage import open_storage
from tests.execution.test_apply import failure_of
from tests.faults import FailingStore, FaultInjector
from tests.s3.conftest import S3
from tests.scenarios import all_scenarios

PREFIX = "prod checkpoints/orders é"


def upload(s3: S3, scenario_id: str, tmp_path: Path) -> str:
    """Copy a fixture to S3 as an object store holds it: no Hadoop .crc side files."""
    scenario = next(s for s in all_scenarios() if s.id == scenario_id)
    local = scenario.copy_to(tmp_path / "local")
    for crc in list(local.rglob(".*.crc")):
        crc.unlink()
    s3.fs.put(str(local) + "/", s3.key(PREFIX), recursive=True)
    return s3.url(PREFIX)


def objects(s3: S3, prefix: str) -> dict[str, str]:
    out = {}
    for key in s3.fs.find(s3.key(prefix)):
        out[key[len(s3.key(prefix)) + 1 :]] = hashlib.sha256(s3.fs.cat_file(key)).hexdigest()
    return out


def make_plan(url: str, s3: S3, mode: str = "micro-batch"):
    snapshot = load_checkpoint(url, storage_options=s3.options)
    opts = DiagnoseOptions(spark="4.3", mode=mode, live_window_s=0)
    return plan_repair(snapshot, diagnose(snapshot, opts), PlanOptions(diagnose=opts))


def stores(url: str, plan, s3: S3, injector: FaultInjector | None = None):
    """Return (checkpoint, tool) stores; tool is the checkpoint's tool directory (lock, backups)."""
    checkpoint = open_storage(url, s3.options)
    tool = open_storage(tool_url(checkpoint.url), s3.options)
    if injector is not None:
        return FailingStore(checkpoint, injector), FailingStore(tool, injector)
    return checkpoint, tool


def opener(s3: S3):
    return lambda u: open_storage(u, s3.options)


def undo(journal_url: str, s3: S3, **kw):
    return undo_journal(open_storage(journal_url[: -len(JOURNAL)].rstrip("/"), s3.options), opener(s3), **kw)


@pytest.mark.s3
def test_bridge_apply_and_undo_on_s3(s3: S3, tmp_path: Path) -> None:
    url = upload(s3, "spark-4.3.0/async-tail", tmp_path)
    before = objects(s3, PREFIX)
    plan = make_plan(url, s3)
    assert plan.strategy == "bridge"
    checkpoint, tool = stores(url, plan, s3)
    result = apply_plan(plan, checkpoint, sink=None, tool=tool, now_ms=None)
    assert result.after is not None and result.after.prediction.starts
    after = objects(s3, PREFIX)
    assert set(after) - set(before) == {"offsets/30"}
    assert after["offsets/30"] == after["offsets/20"]
    assert result.backup_url.startswith(s3.url(PREFIX + ".checkpoint-doctor/"))
    backup = open_storage(s3.url("elsewhere"), s3.options)
    with pytest.raises(PreconditionFailedError, match="offsets/30 exists now"):
        apply_plan(plan, checkpoint, sink=None, tool=tool, backup=backup, now_ms=None)
    undo(result.journal_url, s3)
    assert objects(s3, PREFIX) == before


@pytest.mark.s3
def test_apply_undo_apply_on_s3(s3: S3, tmp_path: Path) -> None:
    url = upload(s3, "spark-4.3.0/offsets-latest-empty", tmp_path)
    before = objects(s3, PREFIX)
    plan = make_plan(url, s3)
    checkpoint, tool = stores(url, plan, s3)
    first = apply_plan(plan, checkpoint, sink=None, tool=tool, now_ms=None)
    assert "offsets/3" not in objects(s3, PREFIX)
    saved = s3.key(PREFIX + f".checkpoint-doctor/{plan.plan_id}/files/checkpoint/offsets/3")
    assert s3.fs.cat_file(saved) == b""
    undo(first.journal_url, s3)
    assert objects(s3, PREFIX) == before
    # Same bytes, same ETags: the plan still fits, and a second apply gets a new location.
    second = apply_plan(plan, checkpoint, sink=None, tool=tool, now_ms=None)
    assert second.backup_url.endswith(f"{plan.plan_id}-2") and "offsets/3" not in objects(s3, PREFIX)
    rows = apply_history(url, opener(s3))
    assert [r["state"] for r in rows] == ["undone", "applied"]


@pytest.mark.s3
def test_the_lock_on_s3_refuses_a_second_writer(s3: S3, tmp_path: Path) -> None:
    url = upload(s3, "spark-4.3.0/offsets-latest-empty", tmp_path)
    plan = make_plan(url, s3)
    checkpoint, tool = stores(url, plan, s3)
    held = CheckpointLock.acquire(tool, "apply elsewhere", None)
    # Another host's lock is never taken over.
    tool.delete("lock")
    tool.write_exclusive("lock", json.dumps({"pid": 1, "host": "other-host", "what": "apply x"}).encode())
    with pytest.raises(LockHeldError, match="other-host") as info:
        apply_plan(plan, checkpoint, sink=None, tool=tool, now_ms=None)
    assert "aws s3 rm" in str(info.value)
    assert "offsets/3" in objects(s3, PREFIX)
    tool.delete("lock")
    held.release()
    apply_plan(plan, checkpoint, sink=None, tool=tool, now_ms=None)
    assert not tool.exists("lock")


@pytest.mark.s3
def test_a_fault_at_every_operation_on_s3_never_loses_anything(s3: S3, tmp_path: Path, subtests) -> None:
    url = upload(s3, "spark-4.3.0/metadata-unreadable", tmp_path)
    before = objects(s3, PREFIX)
    plan = make_plan(url, s3)
    assert [s.kind for s in plan.steps] == ["quarantine", "write"]
    counter = FaultInjector()
    checkpoint, tool = stores(url, plan, s3, counter)
    result = apply_plan(plan, checkpoint, sink=None, tool=tool, now_ms=None)
    total = counter.count
    undo(result.journal_url, s3)
    s3.fs.rm(s3.key(PREFIX + ".checkpoint-doctor"), recursive=True)
    assert objects(s3, PREFIX) == before
    for n in range(1, total + 1):
        with subtests.test(fail_at=n):
            checkpoint, tool = stores(url, plan, s3, FaultInjector(n))
            exc = failure_of(lambda: apply_plan(plan, checkpoint, sink=None, tool=tool, now_ms=None))  # noqa: B023
            # Only the lock's release (the last two operations) may fail without failing the apply.
            assert "injected fault" in str(exc) if exc is not None else n > total - 2
            for row in apply_history(url, opener(s3)):
                refused = failure_of(lambda: undo(row["journal"], s3))  # noqa: B023 - called at once
                assert refused is None or "stopped before it changed anything" in str(refused)
            assert objects(s3, PREFIX) == before, f"undo did not restore after fault {n}"
            if s3.fs.exists(s3.key(PREFIX + ".checkpoint-doctor")):
                s3.fs.rm(s3.key(PREFIX + ".checkpoint-doctor"), recursive=True)


@pytest.mark.s3
def test_the_printed_apply_command_works_on_s3_as_printed(s3: S3, tmp_path: Path, capsys) -> None:
    from checkpoint_doctor.cli import main

    url = upload(s3, "spark-4.3.0/offsets-latest-empty", tmp_path)
    before = objects(s3, PREFIX)
    plan_file = tmp_path / "plan.json"
    endpoint = s3.options["client_kwargs"]["endpoint_url"]
    secrets = ["--storage-option", "key=AKIDEXAMPLE", "--storage-option", "secret=AKIDSECRET"]
    options = ["--storage-option", f"endpoint_url={endpoint}", *secrets]
    code = main(["plan", url, "-o", str(plan_file), "--live-window", "0", "--spark", "4.3", *options])
    out, _ = capsys.readouterr()
    assert code == 0 and f"Apply it with: checkpoint-doctor apply {plan_file}" in out
    doc = json.loads(plan_file.read_text())
    assert doc["storage_options"] == {"client_kwargs": {"endpoint_url": endpoint}}
    assert "AKIDSECRET" not in plan_file.read_text() and "AKIDEXAMPLE" not in plan_file.read_text()
    assert main(["apply", str(plan_file), "--yes"]) == 0  # exactly as printed
    out, _ = capsys.readouterr()
    assert "offsets/3" not in objects(s3, PREFIX)
    undo = out.split("Undo with: ")[1].splitlines()[0]
    assert undo.endswith(f"--storage-option endpoint_url={endpoint}")
    assert main([*shlex.split(undo)[1:], "--yes"]) == 0  # the printed undo, confirmed as on a terminal
    assert objects(s3, PREFIX) == before
