"""The bytes of Delta commits in flight are bounded in aggregate, not per file only (issue 31, item
12): a table whose commits are large is read a batch at a time, each batch parsed and let go before
the next, and every thread of an audit holds its reads in one process-wide byte budget."""

from __future__ import annotations

import shutil
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

import checkpoint_doctor as cd
from checkpoint_doctor.reading.budget import ByteBudget
from checkpoint_doctor.world import delta_log as reading_delta
from checkpoint_doctor.world.delta_log import read_table

LINE = Path(__file__).resolve().parents[2] / "fixtures" / "delta" / "spark-3.5.9"
STATELESS = LINE / "delta-source-stateless"  # source table at version 4 with its checksums
MIB = 2**20


def _large_commits(table: Path, count: int, size: int = MIB) -> None:
    """Commits after the table's newest, each one valid action of ``size`` bytes (a commitInfo with
    a long field; a real log's commits are small, a hostile one's are not), without checksums: a
    reader replays them all."""
    log = table / "_delta_log"
    pad = "x" * size
    for version in range(5, 5 + count):
        (log / f"{version:020d}.json").write_text(
            f'{{"commitInfo":{{"operation":"WRITE","pad":"{pad}"}}}}\n', encoding="utf-8"
        )


def test_large_commits_are_read_a_batch_at_a_time(tmp_path: Path) -> None:
    """40 commits of 1 MiB: main read them in one batch (42 MiB traced at the peak)."""
    table = tmp_path / "source"
    shutil.copytree(STATELESS / "source", table)
    _large_commits(table, 40)
    tracemalloc.start()
    try:
        got = read_table(str(table))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [c.version for c in got.commits] == list(range(45))
    assert peak < 24 * MIB, peak  # a batch of 16 small-bounded commits and one line parsed


def test_one_budget_bounds_the_bytes_every_thread_holds() -> None:
    budget = ByteBudget(10)
    held: list[int] = []
    now = [0]
    lock = threading.Lock()

    def reader(n: int) -> None:
        with budget.hold(n):
            with lock:
                now[0] += n
                held.append(now[0])
            time.sleep(0.001)  # holds a while: others must wait, whatever the speed
            with lock:
                now[0] -= n

    threads = [threading.Thread(target=reader, args=(n,)) for n in (4, 6, 3, 7, 5, 2) * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert max(held) <= 10 and budget.peak <= 10
    with budget.hold(50):  # more than the budget: it proceeds alone, never waits for ever
        assert budget.peak == 10


def test_an_audits_workers_hold_their_delta_reads_in_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = ByteBudget(3 * MIB)
    monkeypatch.setattr(reading_delta, "BUDGET", budget, raising=False)
    for i in range(3):
        job = tmp_path / f"job{i}"
        shutil.copytree(STATELESS / "checkpoint", job / "checkpoint")
        shutil.copytree(STATELESS / "source", job / "source")
        _large_commits(job / "source", 8)
    result = cd.audit(str(tmp_path), live_window_s=0, jobs=3).to_json()
    records = [r for r in result["records"] if r["kind"] == "checkpoint"]
    assert len(records) == 3
    for r in records:
        assert [p["table"] for p in r["delta"]["pairs"]] == [
            str(tmp_path / r["path"].split("/")[0] / "source")
        ]
    assert 0 < budget.peak <= 3 * MIB
