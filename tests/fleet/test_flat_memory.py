"""Issue 40 item 4: a local audit's memory does not grow with the number of checkpoints. Its first
listing leaves out the directories checkpoints own (each checkpoint is listed when it is audited),
the records of ``--format jsonl`` are not kept once written (the summary is counted as they go),
and only a few file sinks' logs are kept once read. The tests count what is alive (freed by reference counting as soon as nothing holds it), never
time."""

from __future__ import annotations

import gc
import shutil
import weakref
from collections.abc import Callable
from pathlib import Path

from checkpoint_doctor.diagnosis import DiagnoseOptions
from checkpoint_doctor.fleet.discovery import TreeIndex, prune_rule
from checkpoint_doctor.fleet.records import Record
from checkpoint_doctor.fleet.run import (
    AuditTask,
    RecordStream,
    SinkReads,
    as_matrix_options,
    audit_hints,
    audit_plan,
    finish,
    finish_tallied,
    plan_fleet,
)
from checkpoint_doctor.reading.storage import Storage, open_storage
from tests.conftest import FIXTURES
from tests.fleet.conftest import SPARK

OPTIONS = as_matrix_options(DiagnoseOptions(live_window_s=0, now_ms=1_900_000_000_000))


def _entries(roots: list[str], pruned: bool) -> int:
    counted: list[int] = []
    plan_fleet(roots, on_listing=lambda _r, done, n: counted.append(n) if done else None, pruned=pruned)
    return sum(counted)


def test_a_local_audit_lists_the_fleet_without_the_checkpoints_own_directories() -> None:
    whole = plan_fleet([str(SPARK)])
    pruned = plan_fleet([str(SPARK)], pruned=True)

    # The same targets, each given exactly the listing the whole listing's slice gives it, when
    # it is audited; until then a checkpoint's task holds no file.
    assert [(t.kind, t.url) for t in pruned.tasks] == [(t.kind, t.url) for t in whole.tasks]
    assert pruned.notes == whole.notes and pruned.tables == whole.tables
    later = [t for t in pruned.tasks if t.resolve is not None]
    assert len(later) > 100 and all(t.listing.file_count == 0 for t in later)
    for lazy, full in zip(pruned.tasks, whole.tasks, strict=True):
        done = lazy.resolved()
        assert done.resolve is None
        assert done.listing == full.listing, lazy.url
        assert done.sinks == full.sinks, lazy.url
    # The first listing holds a fraction of the fleet's files and directories.
    assert _entries([str(SPARK)], pruned=True) * 3 < _entries([str(SPARK)], pruned=False)


def test_the_pruned_listing_follows_what_discovery_owns(tmp_path: Path) -> None:
    # A checkpoint's offsets/, commits/, state/ and sources/ are left out; a sink's log, a Delta
    # table's log, a left-out checkpoint's directories and checkpoint-doctor's own are listed
    # whole (the audit reads the logs, and notes what lies below the others).
    files = [
        "a/checkpoint/metadata",
        "a/checkpoint/offsets/0",
        "a/checkpoint/state/0/0/1.delta",
        "a/out/_spark_metadata/0",
        "a/out/part-0.parquet",
        "a/out/_checkpoint/commits/0",
        "t/_delta_log/00000000000000000000.json",
        "skip/commits/0",
        "a/checkpoint.checkpoint-doctor/p1/backup/offsets/0",
    ]
    for rel in files:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    store = open_storage(str(tmp_path))
    listing, subtree, pruned, _ = store.list_pruned(prune_rule(store.url, exclude=["skip"]))  # type: ignore[attr-defined]

    assert pruned == ("a/checkpoint/offsets", "a/checkpoint/state", "a/out/_checkpoint/commits")
    listed = {f.path for f in listing.files}
    assert listed == set(files) - {
        "a/checkpoint/offsets/0",
        "a/checkpoint/state/0/0/1.delta",
        "a/out/_checkpoint/commits/0",
    }
    assert set(listing.dirs) >= {"a/checkpoint/offsets", "a/checkpoint/state"}  # named, not listed
    full = store.list_tree()
    for rel in ("a/checkpoint", "a/out", "a/out/_checkpoint"):  # the targets
        assert subtree(rel) == TreeIndex(full).slice(rel), rel


def test_jsonl_keeps_no_record_and_counts_the_summary_as_records_finish() -> None:
    for root in (SPARK, FIXTURES / "delta" / "spark-4.2.1"):
        kept = RecordStream(audit_hints(OPTIONS, None), lambda: 0)
        plan = plan_fleet([str(root)], pruned=True)
        audit_plan(plan, OPTIONS, kept, jobs=1, release=True)
        expected = finish(plan.roots, plan.notes, kept.records, delta_reads=plan.delta_reads)

        streamed = RecordStream(audit_hints(OPTIONS, None), lambda: 0, keep=False)
        plan = plan_fleet([str(root)], pruned=True)
        refs: list[weakref.ref[Record]] = []
        alive: list[int] = []

        def on_record(
            record: Record, refs: list[weakref.ref[Record]] = refs, alive: list[int] = alive
        ) -> None:
            refs.append(weakref.ref(record))
            alive.append(sum(1 for r in refs if r() is not None))

        audit_plan(plan, OPTIONS, streamed, jobs=1, on_record=on_record, release=True)
        result = finish_tallied(plan.roots, plan.notes, streamed, delta_reads=plan.delta_reads)

        assert streamed.records == [] and len(refs) == len(kept.records) > 20
        # The record being handed over, and at most the one before it: none is kept to the end.
        assert max(alive) <= 2, alive
        assert result.summary == expected.summary
        assert result.summary.to_json() == expected.summary.to_json()
        assert result.notes == expected.notes


def test_a_local_audit_lists_each_checkpoint_when_it_audits_it_and_lets_it_go() -> None:
    plan = plan_fleet([str(SPARK)], pruned=True)
    # The tasks given their listing (a Listing has no weak references: the task holding it).
    listings: list[weakref.ref[AuditTask]] = []
    resolve = AuditTask.resolved

    def resolved(task: AuditTask) -> AuditTask:
        done = resolve(task)
        listings.append(weakref.ref(done))
        return done

    alive: list[int] = []

    def on_record(_record: Record) -> None:
        count = sum(1 for r in listings if r() is not None)
        if count > 1:
            # A failure's traceback is a reference cycle: freed by the next collection, not held.
            gc.collect()
            count = sum(1 for r in listings if r() is not None)
        alive.append(count)

    AuditTask.resolved = resolved  # type: ignore[method-assign]
    try:
        audit_plan(
            plan,
            OPTIONS,
            RecordStream(audit_hints(OPTIONS, None), lambda: 0, keep=False),
            jobs=1,
            on_record=on_record,
            release=True,
        )
    finally:
        AuditTask.resolved = resolve  # type: ignore[method-assign]
    assert len(listings) == len(alive) > 100
    # One checkpoint's listing alive at a time (the one whose record is being handed over).
    assert max(alive) <= 1, [(i, n) for i, n in enumerate(alive) if n]


def test_a_local_audit_keeps_a_few_sink_logs_and_counts_each_once() -> None:
    sink = FIXTURES / "spark-4.3.0" / "file_to_file" / "sink"
    store = open_storage(str(sink))
    log = TreeIndex(store.list_tree()).slice("_spark_metadata")
    calls: list[str] = []

    def opened(url: str) -> Callable[[], Storage]:
        def open_it() -> Storage:
            calls.append(url)  # called when the sink's log is read
            return store

        return open_it

    reads = SinkReads(keep=2)
    counts = [reads.read(url, opened(url), log)[2] for url in ("s1", "s2", "s3", "s1", "s1")]

    # s1 was let go when s3 was read (two kept), read again when asked for again, and its files
    # counted in one record only; the last ask finds it kept.
    assert calls == ["s1", "s2", "s3", "s1"]
    assert counts[0] == counts[1] == counts[2] > 0 and counts[3:] == [0, 0]
    assert len(reads._entries) == 2


def _whole_audit(root: str) -> list[Record]:
    """The records of an audit from the whole listing (``pruned=False``: every file listed)."""
    stream = RecordStream(audit_hints(OPTIONS, None), lambda: 0)
    audit_plan(plan_fleet([root]), OPTIONS, stream, jobs=1)
    return sorted(stream.records, key=lambda r: (r.url, r.kind))


def test_a_local_audit_counts_a_sinks_data_files_without_holding_their_names(tmp_path: Path) -> None:
    # A job of Spark 4.3.0 writing a file sink, the sink grown with date partitions of part files
    # (copies of the ones it wrote), one of them holding a checkpoint (``metadata`` only: its task
    # is its slice of the first listing, unless something below it was left out).
    job = tmp_path / "job"
    shutil.copytree(FIXTURES / "spark-4.3.0" / "file_to_file", job)
    parts = sorted((job / "sink").glob("part-*"))
    for day in range(10):
        partition = job / "sink" / f"date=2024-01-{day + 1:02d}"
        partition.mkdir()
        for i in range(30):
            shutil.copyfile(parts[i % len(parts)], partition / f"part-{i:05d}-{day}.c000.json")
    nested = job / "sink" / "date=2024-01-01" / "_checkpoint"
    nested.mkdir()
    shutil.copyfile(job / "checkpoint" / "metadata", nested / "metadata")
    (nested / "extra").mkdir()
    (nested / "extra" / "x").write_text("x")
    root = str(tmp_path)

    store = open_storage(root)
    listing, _subtree, _pruned, counted = store.list_pruned(prune_rule(store.url))  # type: ignore[attr-defined]
    # The data files are counted per directory, not listed: their names are not held.
    assert not any("date=" in f.path and "_checkpoint" not in f.path for f in listing.files)
    assert sum(n for _, n in counted) == 300 + 1  # and the nested checkpoint's extra/x
    assert [p for p, _ in counted if "_checkpoint" in p] == ["job/sink/date=2024-01-01/_checkpoint/extra"]

    # The audit says what the audit of the whole listing says: the sink's files counted, the
    # nested checkpoint listed whole when audited.
    pruned_plan = plan_fleet([root], pruned=True)
    sink_task = next(t for t in pruned_plan.tasks if t.kind == "sink")
    assert sink_task.listing.file_count < 100 and sink_task.file_count > 300
    stream = RecordStream(audit_hints(OPTIONS, None), lambda: 0)
    audit_plan(pruned_plan, OPTIONS, stream, jobs=1)
    records = sorted(stream.records, key=lambda r: (r.url, r.kind))
    whole = _whole_audit(root)
    assert [r.to_json() for r in records] == [r.to_json() for r in whole]
    assert {r.path: r.files for r in records}["job/sink"] == sink_task.file_count
