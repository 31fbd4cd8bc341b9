"""plan, apply and undo against each object store (moto S3 through s3fs, Azurite through adlfs,
fake-gcs-server through gcsfs), like on local disk, including a fault at every storage operation."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.errors import LockHeldError, PreconditionFailedError
from checkpoint_doctor.execution.apply import apply_plan
from checkpoint_doctor.execution.journal import JOURNAL, tool_url
from checkpoint_doctor.execution.lock import CheckpointLock
from checkpoint_doctor.execution.undo import undo_journal
from checkpoint_doctor.planning import PlanOptions, plan_repair
from checkpoint_doctor.reading.history import apply_history
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.storage import open_storage
from tests.execution.test_apply import failure_of
from tests.faults import FailingStore, FaultInjector
from tests.s3.conftest import Store
from tests.scenarios import all_scenarios

PREFIX = "prod checkpoints/orders é"


def upload(store: Store, scenario_id: str, tmp_path: Path) -> str:
    """Copy a fixture to S3 as an object store holds it: no Hadoop .crc side files."""
    scenario = next(s for s in all_scenarios() if s.id == scenario_id)
    local = scenario.copy_to(tmp_path / "local")
    for crc in list(local.rglob(".*.crc")):
        crc.unlink()
    store.fs.put(str(local) + "/", store.key(PREFIX), recursive=True)
    return store.url(PREFIX)


def objects(store: Store, prefix: str) -> dict[str, str]:
    out = {}
    for key in store.fs.find(store.key(prefix)):
        out[key[len(store.key(prefix)) + 1 :]] = hashlib.sha256(store.fs.cat_file(key)).hexdigest()
    return out


def make_plan(url: str, store: Store, mode: str = "micro-batch"):
    snapshot = load_checkpoint(url, storage_options=store.options)
    opts = DiagnoseOptions(spark="4.3", mode=mode, live_window_s=0)
    return plan_repair(snapshot, diagnose(snapshot, opts), PlanOptions(diagnose=opts))


def stores(url: str, plan, store: Store, injector: FaultInjector | None = None):
    """Return (checkpoint, tool) stores; tool is the checkpoint's tool directory (lock, backups)."""
    checkpoint = open_storage(url, store.options)
    tool = open_storage(tool_url(checkpoint.url), store.options)
    if injector is not None:
        return FailingStore(checkpoint, injector), FailingStore(tool, injector)
    return checkpoint, tool


def opener(store: Store):
    return lambda u: open_storage(u, store.options)


def undo(journal_url: str, store: Store, **kw):
    return undo_journal(
        open_storage(journal_url[: -len(JOURNAL)].rstrip("/"), store.options), opener(store), **kw
    )


def test_bridge_apply_and_undo(store: Store, tmp_path: Path) -> None:
    url = upload(store, "spark-4.3.0/async-tail", tmp_path)
    before = objects(store, PREFIX)
    plan = make_plan(url, store)
    assert plan.strategy == "bridge"
    checkpoint, tool = stores(url, plan, store)
    result = apply_plan(plan, checkpoint, sink=None, tool=tool, now_ms=None)
    assert result.after is not None and result.after.prediction.starts
    after = objects(store, PREFIX)
    assert set(after) - set(before) == {"offsets/30"}
    assert after["offsets/30"] == after["offsets/20"]
    assert result.backup_url.startswith(store.url(PREFIX + ".checkpoint-doctor/"))
    backup = open_storage(store.url("elsewhere"), store.options)
    with pytest.raises(PreconditionFailedError, match="offsets/30 exists now"):
        apply_plan(plan, checkpoint, sink=None, tool=tool, backup=backup, now_ms=None)
    undo(result.journal_url, store)
    assert objects(store, PREFIX) == before


def test_apply_undo_apply(store: Store, tmp_path: Path) -> None:
    url = upload(store, "spark-4.3.0/offsets-latest-empty", tmp_path)
    before = objects(store, PREFIX)
    plan = make_plan(url, store)
    checkpoint, tool = stores(url, plan, store)
    first = apply_plan(plan, checkpoint, sink=None, tool=tool, now_ms=None)
    assert "offsets/3" not in objects(store, PREFIX)
    saved = store.key(PREFIX + f".checkpoint-doctor/{plan.plan_id}/files/checkpoint/offsets/3")
    assert store.fs.cat_file(saved) == b""
    undo(first.journal_url, store)
    assert objects(store, PREFIX) == before
    # Same bytes, same ETags: the plan still fits, and a second apply gets a new location.
    second = apply_plan(plan, checkpoint, sink=None, tool=tool, now_ms=None)
    assert second.backup_url.endswith(f"{plan.plan_id}-2") and "offsets/3" not in objects(store, PREFIX)
    rows = apply_history(url, opener(store))
    assert [r["state"] for r in rows] == ["undone", "applied"]


def test_the_lock_on_s3_refuses_a_second_writer(store: Store, tmp_path: Path) -> None:
    url = upload(store, "spark-4.3.0/offsets-latest-empty", tmp_path)
    plan = make_plan(url, store)
    checkpoint, tool = stores(url, plan, store)
    held = CheckpointLock.acquire(tool, "apply elsewhere", None)
    # Another host's lock is never taken over.
    tool.delete("lock")
    tool.write_exclusive("lock", json.dumps({"pid": 1, "host": "other-host", "what": "apply x"}).encode())
    with pytest.raises(LockHeldError, match="other-host") as info:
        apply_plan(plan, checkpoint, sink=None, tool=tool, now_ms=None)
    assert store.removal in str(info.value)
    assert "offsets/3" in objects(store, PREFIX)
    tool.delete("lock")
    held.release()
    apply_plan(plan, checkpoint, sink=None, tool=tool, now_ms=None)
    assert not tool.exists("lock")


def test_a_fault_at_every_operation_on_s3_never_loses_anything(
    store: Store, tmp_path: Path, subtests
) -> None:
    url = upload(store, "spark-4.3.0/metadata-unreadable", tmp_path)
    before = objects(store, PREFIX)
    plan = make_plan(url, store)
    assert [s.kind for s in plan.steps] == ["quarantine", "write"]
    counter = FaultInjector()
    checkpoint, tool = stores(url, plan, store, counter)
    result = apply_plan(plan, checkpoint, sink=None, tool=tool, now_ms=None)
    total = counter.count
    undo(result.journal_url, store)
    store.fs.rm(store.key(PREFIX + ".checkpoint-doctor"), recursive=True)
    assert objects(store, PREFIX) == before
    for n in range(1, total + 1):
        with subtests.test(fail_at=n):
            checkpoint, tool = stores(url, plan, store, FaultInjector(n))
            exc = failure_of(lambda: apply_plan(plan, checkpoint, sink=None, tool=tool, now_ms=None))  # noqa: B023
            # Only the lock's release (the last two operations) may fail without failing the apply.
            assert "injected fault" in str(exc) if exc is not None else n > total - 2
            for row in apply_history(url, opener(store)):
                refused = failure_of(lambda: undo(row["journal"], store))  # noqa: B023 - called at once
                assert refused is None or "stopped before it changed anything" in str(refused)
            assert objects(store, PREFIX) == before, f"undo did not restore after fault {n}"
            if store.fs.exists(store.key(PREFIX + ".checkpoint-doctor")):
                store.fs.rm(store.key(PREFIX + ".checkpoint-doctor"), recursive=True)


def printed_options(store: Store) -> tuple[str, dict, list[str]]:
    """Return a store's public option (kept in a plan and its printed commands), as typed and as a
    plan holds it, and secret options of its kind (never written, never printed)."""
    if store.name == "s3":
        public = f"endpoint_url={store.endpoint}"
        return (
            public,
            {"client_kwargs": {"endpoint_url": store.endpoint}},
            ["key=AKIDEXAMPLE", "secret=AKIDSECRET"],
        )
    if store.name == "azure":
        # The environment's connection string wins over an account key (adlfs's order).
        return (
            "read_timeout=30",
            {"read_timeout": "30"},
            ["account_key=QUtJRFNFQ1JFVA==", "sas_token=sv=2024&sig=AKIDSIG"],
        )
    return (
        f"endpoint_url={store.endpoint}",
        {"client_kwargs": {"endpoint_url": store.endpoint}},
        ["token=ya29.AKIDTOKEN"],
    )


def test_the_printed_apply_command_works_as_printed(store: Store, tmp_path: Path, capsys) -> None:
    from checkpoint_doctor.cli import main

    url = upload(store, "spark-4.3.0/offsets-latest-empty", tmp_path)
    before = objects(store, PREFIX)
    plan_file = tmp_path / "plan.json"
    public, kept, secret_pairs = printed_options(store)
    secrets = [arg for pair in secret_pairs for arg in ("--storage-option", pair)]
    options = ["--storage-option", public, *secrets]
    code = main(["plan", url, "-o", str(plan_file), "--live-window", "0", "--spark", "4.3", *options])
    out, err = capsys.readouterr()
    assert code == 0 and f"Apply it with: checkpoint-doctor apply {plan_file}" in out, err
    doc = json.loads(plan_file.read_text())
    assert doc["storage_options"] == kept
    for pair in secret_pairs:
        assert pair.partition("=")[2] not in plan_file.read_text() and pair.partition("=")[2] not in out
    assert main(["apply", str(plan_file), "--yes"]) == 0  # exactly as printed
    out, _ = capsys.readouterr()
    assert "offsets/3" not in objects(store, PREFIX)
    undo = out.split("Undo with: ")[1].splitlines()[0]
    assert undo.endswith(f"--storage-option {public}")
    assert main([*shlex.split(undo)[1:], "--yes"]) == 0  # the printed undo, confirmed as on a terminal
    assert objects(store, PREFIX) == before
