"""plan, apply and undo against a real S3 API (moto server through s3fs), like on local disk,
including a fault at every storage operation."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.errors import PreconditionFailedError, StorageError
from checkpoint_doctor.execution.executor import apply_plan, default_backup_url, undo_journal
from checkpoint_doctor.execution.journal import JOURNAL
from checkpoint_doctor.loading import load_checkpoint
from checkpoint_doctor.planning import PlanOptions, plan_repair
from checkpoint_doctor.storage import open_store
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
    checkpoint = open_store(url, s3.options)
    backup = open_store(default_backup_url(checkpoint.url, plan.plan_id), s3.options)
    if injector is not None:
        return FailingStore(checkpoint, injector), FailingStore(backup, injector)
    return checkpoint, backup


@pytest.mark.s3
def test_bridge_apply_and_undo_on_s3(s3: S3, tmp_path: Path) -> None:
    url = upload(s3, "spark-4.3.0/async-tail", tmp_path)
    before = objects(s3, PREFIX)
    plan = make_plan(url, s3)
    assert plan.strategy == "bridge"
    checkpoint, backup = stores(url, plan, s3)
    result = apply_plan(plan, checkpoint, sink=None, backup=backup, now_ms=None)
    assert result.after is not None and result.after.prediction.starts
    after = objects(s3, PREFIX)
    assert set(after) - set(before) == {"offsets/30"}
    assert after["offsets/30"] == after["offsets/20"]
    assert backup.url.startswith(s3.url(PREFIX + ".checkpoint-doctor/"))
    with pytest.raises(PreconditionFailedError):
        apply_plan(plan, *stores(url, plan, s3)[:1], sink=None, backup=open_store(s3.url("elsewhere"), s3.options), now_ms=None)
    undo_journal(open_store(backup.url, s3.options), lambda u: open_store(u, s3.options))
    assert objects(s3, PREFIX) == before


@pytest.mark.s3
def test_quarantine_apply_and_undo_on_s3(s3: S3, tmp_path: Path) -> None:
    url = upload(s3, "spark-4.3.0/offsets-latest-empty", tmp_path)
    before = objects(s3, PREFIX)
    plan = make_plan(url, s3)
    checkpoint, backup = stores(url, plan, s3)
    apply_plan(plan, checkpoint, sink=None, backup=backup, now_ms=None)
    assert "offsets/3" not in objects(s3, PREFIX)
    assert s3.fs.cat_file(s3.key(PREFIX + f".checkpoint-doctor/{plan.plan_id}/files/checkpoint/offsets/3")) == b""
    undo_journal(open_store(backup.url, s3.options), lambda u: open_store(u, s3.options))
    assert objects(s3, PREFIX) == before


@pytest.mark.s3
def test_a_fault_at_every_operation_on_s3_never_loses_anything(s3: S3, tmp_path: Path, subtests) -> None:
    url = upload(s3, "spark-4.3.0/metadata-unreadable", tmp_path)
    before = objects(s3, PREFIX)
    plan = make_plan(url, s3)
    assert [s.kind for s in plan.steps] == ["quarantine", "write"]
    counter = FaultInjector()
    checkpoint, backup = stores(url, plan, s3, counter)
    apply_plan(plan, checkpoint, sink=None, backup=backup, now_ms=None)
    total = counter.count
    undo_journal(open_store(default_backup_url(url, plan.plan_id), s3.options), lambda u: open_store(u, s3.options))
    s3.fs.rm(s3.key(PREFIX + ".checkpoint-doctor"), recursive=True)
    assert objects(s3, PREFIX) == before
    for n in range(1, total + 1):
        with subtests.test(fail_at=n):
            checkpoint, backup = stores(url, plan, s3, FaultInjector(n))
            with pytest.raises(StorageError, match="injected fault"):
                apply_plan(plan, checkpoint, sink=None, backup=backup, now_ms=None)
            backup_prefix = PREFIX + f".checkpoint-doctor/{plan.plan_id}"
            saved = objects(s3, backup_prefix + "/files/checkpoint") if s3.fs.exists(s3.key(backup_prefix + "/files")) else {}
            now = objects(s3, PREFIX)
            for path, digest in before.items():
                assert now.get(path) == digest or saved.get(path) == digest, f"{path} lost at fault {n}"
            if now != before:
                assert s3.fs.exists(s3.key(backup_prefix + "/" + JOURNAL))
                undo_journal(open_store(s3.url(backup_prefix), s3.options), lambda u: open_store(u, s3.options))
                assert objects(s3, PREFIX) == before, f"undo did not restore after fault {n}"
            if s3.fs.exists(s3.key(PREFIX + ".checkpoint-doctor")):
                s3.fs.rm(s3.key(PREFIX + ".checkpoint-doctor"), recursive=True)

