"""The fleet runner on local disk, ``memory://`` and S3: the same diagnosis as ``diagnose`` for every
checkpoint, the exit code OR, failures recorded per checkpoint, and on S3 one listing for the fleet."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from urllib.parse import unquote

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions
from checkpoint_doctor.diagnosis.matrix import diagnose_matrix
from checkpoint_doctor.fleet.records import AuditNote, Record, SinkLogPart, SinkRecord, UnreadableRecord
from checkpoint_doctor.fleet.report import combined_exit_code, summarize, verdict_of
from checkpoint_doctor.fleet.run import (
    DEFAULT_JOBS,
    as_matrix_options,
    audit,
    default_jobs,
    fleet_storage_options,
    plan_fleet,
)
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.conftest import FIXTURES
from tests.fleet.conftest import (
    CHECKPOINTS,
    EXPECTED_EXIT,
    GARBAGE_CHECKPOINT,
    PREFIX,
    SINKS,
    SPARK,
    Fleet,
    fleet_files,
    place_fleet,
)
from tests.fleet.records import checkpoint_record, json_records
from tests.s3.conftest import S3
from tests.s3.server import seed_objects
from tests.storage.builders import checkpoint_files, read_files, write_files

OPTIONS = DiagnoseOptions(live_window_s=600, now_ms=1_900_000_000_000)


PAIRED_SINKS = {"team b/out/_checkpoint": "team b/out"}


def by_path(result) -> dict[str, dict]:
    return {
        (r["path"] if r["kind"] == "checkpoint" else f"sink:{r['path']}"): r for r in json_records(result)
    }


def test_every_checkpoint_gets_the_diagnosis_diagnose_gives(fleet: Fleet) -> None:
    result = audit([fleet.root], fleet.options, options=OPTIONS, jobs=4)
    records = by_path(result)

    assert set(records) == {*CHECKPOINTS, GARBAGE_CHECKPOINT, *(f"sink:{p}" for p in SINKS)}
    for rel in [*CHECKPOINTS, GARBAGE_CHECKPOINT]:
        record = records[rel]
        # The sink output around "out/_checkpoint" is paired by its logs and checked with it.
        sink = fleet.url(PAIRED_SINKS[rel]) if rel in PAIRED_SINKS else None
        snapshot = load_checkpoint(fleet.url(rel), storage_options=fleet.options, sink_path=sink)
        alone = diagnose_matrix(snapshot, as_matrix_options(OPTIONS))
        assert record["checkpoint"] == fleet.url(rel)
        assert record["diagnosis"] == alone.to_dict(), rel
        assert record["exit_code"] == alone.exit_code == EXPECTED_EXIT[rel], rel
        assert record["codes"] == sorted({f.code for f in alone.findings})
        assert record["verdict"] == verdict_of(alone.exit_code)
        assert record["restart"]["summary"] == alone.primary.diagnosis.prediction.summary
        assert record["file_sink"]["checked"] == (sink is not None), rel
        if sink is not None:
            assert record["file_sink"]["url"] == sink
    assert result.exit_code == 0 | 1 | 4
    assert result.summary.to_json()["verdicts"] == {"ok": 4, "warning": 1, "error": 2, "unreadable": 0}
    assert result.summary.to_json()["kinds"] == {"checkpoint": 6, "sink": 1, "root": 0}
    assert result.summary.to_json()["restart_fails"] == 2  # the broken tail and the garbage checkpoint
    garbage = records[GARBAGE_CHECKPOINT]
    assert {"CD002", "CD003"} <= set(garbage["codes"])


def test_a_sink_output_is_audited_on_its_own(fleet: Fleet) -> None:
    result = audit([fleet.root], fleet.options, options=OPTIONS)
    sink = by_path(result)["sink:team b/out"]

    assert sink["kind"] == "sink"
    assert sink["verdict"] == "ok"
    assert "restart" not in sink and sink["sink"] == sink["url"]
    assert sink["sink_log"]["latest"] == 11
    assert sink["sink_log"]["compacts"] == [9]
    assert sink["sink_log"]["missing_for_readers"] == []
    assert [c["batch_id"] for c in sink["timeline"]][:3] == [11, 10, 9]
    assert [c["sink"] for c in sink["timeline"]][:3] == ["present", "present", "compact"]


def test_a_sink_missing_the_compact_readers_need_is_an_error(tmp_path) -> None:
    sink = read_files(FIXTURES / "spark-4.3.0" / "file-sink-compact-missing" / "sink")
    root = write_files(tmp_path / "fleet", {f"out/{p}": d for p, d in sink.items()})
    result = audit([str(root)], options=OPTIONS)
    (record,) = json_records(result)
    assert (record["kind"], record["verdict"], record["exit_code"], record["codes"]) == (
        "sink",
        "error",
        4,
        ["CD404"],
    )
    assert record["sink_log"]["missing_for_readers"] == ["_spark_metadata/9.compact"]
    assert {c["batch_id"]: c["sink"] for c in record["timeline"]}[9] == "missing"


def _record(exit_code: int) -> Record:
    return Record(kind="root", url="/x", root="/x", path="", exit_code=exit_code)


def test_exit_code_is_the_or_of_the_records() -> None:
    records = [_record(c) for c in (0, 1, 4, 1, 0)]
    assert combined_exit_code(records) == 5
    assert combined_exit_code([*records, _record(8)]) == 13
    assert combined_exit_code([]) == 0
    assert [verdict_of(c) for c in (0, 1, 4, 5, 8, 12, 16)] == [
        "ok",
        "warning",
        "error",
        "error",
        "unreadable",
        "unreadable",
        "unreadable",
    ]


def test_summary_counts_by_verdict_and_code() -> None:
    healthy = checkpoint_record("/h")
    fails = replace(healthy.restart, starts=False)
    records = [
        checkpoint_record("/a", exit_code=4, codes=("CD103", "CD108"), restart=fails),
        checkpoint_record("/b", exit_code=4, codes=("CD103",), restart=fails),
        checkpoint_record("/c", exit_code=1, codes=("CD108",)),
        SinkRecord(url="/s", root="/s", path="", exit_code=0, sink_log=SinkLogPart(latest=1, entries=2)),
        UnreadableRecord.of(kind="root", url="/r", root="/r", path="", error_type="E", message="m"),
    ]
    summary = summarize(records, [AuditNote("x", "x", "", "skipped", "why")])
    assert summary.verdicts == {"error": 2, "unreadable": 1, "warning": 1, "ok": 1}
    assert list(summary.verdicts) == ["error", "unreadable", "warning", "ok"]  # the worst first
    assert summary.kinds == {"checkpoint": 3, "sink": 1, "root": 1}
    assert summary.restart_fails == 2
    assert [(c.code, c.count, c.severity) for c in summary.codes] == [
        ("CD103", 2, "error"),
        ("CD108", 2, "warning"),
    ]
    assert (summary.exit_code, summary.note_count, summary.total) == (13, 1, 5)


def test_a_checkpoint_that_vanishes_mid_audit_is_recorded_and_the_audit_goes_on(fleet: Fleet) -> None:
    gone = "team c/commits two behind"
    removed = []

    def progress(record: Record) -> None:
        # After the first record (tasks run in path order with one job), someone deletes a
        # checkpoint the listing already holds.
        if not removed:
            fleet.remove(gone)
            removed.append(gone)

    result = audit([fleet.root], fleet.options, options=OPTIONS, jobs=1, on_record=progress)
    records = by_path(result)

    assert removed == [gone]
    lost = records[gone]
    assert (lost["verdict"], lost["exit_code"]) == ("unreadable", 8)
    assert lost["error"]["type"] == "CheckpointNotFoundError"
    assert fleet.url(gone) in lost["error"]["message"]
    assert "diagnosis" not in lost
    assert len(result.records) == len(CHECKPOINTS) + 1 + len(SINKS)
    assert records["team b/broken tail"]["exit_code"] == 4
    assert result.exit_code == 4 | 8


def test_a_root_that_cannot_be_listed_is_recorded_and_the_other_roots_audited(
    local_fleet: Fleet, tmp_path
) -> None:
    missing = str(tmp_path / "no such prefix")
    result = audit([missing, local_fleet.root], options=OPTIONS)
    roots = [r for r in json_records(result) if r["kind"] == "root"]

    assert [(r["url"], r["verdict"], r["exit_code"], r["error"]["type"]) for r in roots] == [
        (missing, "unreadable", 8, "CheckpointNotFoundError")
    ]
    assert "no such file or directory" in roots[0]["error"]["message"]
    assert len(result.records) == len(CHECKPOINTS) + 2 + len(SINKS)
    assert result.exit_code == 1 | 4 | 8


def test_overlapping_roots_audit_each_directory_once(local_fleet: Fleet) -> None:
    result = audit([local_fleet.root, local_fleet.url("team b")], options=OPTIONS)
    urls = [(r["kind"], r["url"]) for r in json_records(result)]
    assert len(urls) == len(set(urls)) == len(CHECKPOINTS) + 1 + len(SINKS)


def test_default_jobs_is_one_on_local_disk_and_sixteen_on_object_stores(local_fleet: Fleet, s3: S3) -> None:
    assert default_jobs(plan_fleet([local_fleet.root])) == 1
    assert default_jobs(plan_fleet([s3.url("nothing-here")], s3.options)) == DEFAULT_JOBS == 16
    assert default_jobs(plan_fleet([local_fleet.root, s3.url("nothing-here")], s3.options)) == 16


def test_the_s3_connection_pool_is_sized_to_the_jobs_unless_the_operator_set_it() -> None:
    given = {"client_kwargs": {"endpoint_url": "http://127.0.0.1:1"}}
    sized = fleet_storage_options(["s3://bkt/fleet"], given, 16)
    assert sized == {
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:1"},
        "config_kwargs": {"max_pool_connections": 128},
    }
    assert given == {"client_kwargs": {"endpoint_url": "http://127.0.0.1:1"}}  # not changed in place
    assert fleet_storage_options(["s3a://bkt/x"], None, 1)["config_kwargs"] == {"max_pool_connections": 10}
    mine = {"config_kwargs": {"max_pool_connections": 7, "connect_timeout": 2}}
    assert fleet_storage_options(["s3://bkt"], mine, 16) == mine
    assert fleet_storage_options(["/data/fleet", "memory://x"], {"a": 1}, 16) == {"a": 1}


def test_jobs_do_not_change_the_records(local_fleet: Fleet) -> None:
    # One clock for both: each record is stamped when it finishes.
    one = audit([local_fleet.root], options=OPTIONS, jobs=1, clock=lambda: 0)
    many = audit([local_fleet.root], options=OPTIONS, jobs=8, clock=lambda: 0)
    assert one.records == many.records
    assert one.summary == many.summary


@pytest.mark.s3
def test_on_s3_a_sink_log_is_read_once_however_many_checkpoints_it_may_belong_to(
    s3: S3, tmp_path, request
) -> None:
    fleet = place_fleet("s3", tmp_path, request)
    # A second run of the same job, checkpointed beside the first: two checkpoints whose batch ids
    # meet the sink's.
    replay = read_files(SPARK / "file_to_file" / "checkpoint")
    seed_objects(s3.bucket, PREFIX, {f"team b/replay/_checkpoint/{p}": d for p, d in replay.items()})
    s3.server.log.clear()

    result = audit([fleet.root], fleet.options, options=OPTIONS, jobs=8)

    gets = Counter(r.target for r in s3.server.log.requests if r.kind == "GetObject")
    sink_log = {target: n for target, n in gets.items() if "/_spark_metadata/" in unquote(target)}
    # The sink's batch ids meet those of several checkpoints: each of them asks for its log...
    asking = [t.path for t in plan_fleet([fleet.root], fleet.options).tasks if t.sinks]
    assert len(asking) >= 2, asking
    # ...and every object of the audit, the sink's log files included, is fetched once.
    assert sink_log
    assert max(gets.values()) == 1, {unquote(t): n for t, n in gets.items() if n > 1}
    # the Delta table's log, read once to pair it, is counted in the summary
    assert sum(gets.values()) == sum(r["reads"] for r in json_records(result)) + result.summary.delta.reads


@pytest.mark.s3
def test_on_s3_the_fleet_is_listed_once_and_each_checkpoint_costs_only_its_reads(
    s3: S3, tmp_path, request
) -> None:
    fleet = place_fleet("s3", tmp_path, request)
    keys = len(fleet_files())

    result = audit([fleet.root], fleet.options, options=OPTIONS, jobs=8)

    kinds = s3.server.log.kinds()
    assert kinds["ListObjectsV2"] == math.ceil(keys / 1000) == 1
    assert kinds["GetObject"] == sum(r["reads"] for r in json_records(result)) + result.summary.delta.reads
    assert result.summary.delta.reads == 1  # the one commit of the Delta table (no checksum)
    assert set(kinds) == {"ListObjectsV2", "GetObject"}
    # A few GETs per checkpoint, not one per file.
    assert max(r["reads"] for r in json_records(result)) <= 12
    assert sum(r["reads"] for r in json_records(result)) < keys / 4


@pytest.mark.s3
@pytest.mark.slow
def test_listing_requests_grow_with_keys_not_checkpoints(s3: S3) -> None:
    # 170 small checkpoints of 6 keys: 1,020 keys, two ListObjectsV2 pages for the whole fleet.
    count = 170
    files = {}
    for i in range(count):
        for rel, data in checkpoint_files(range(3), range(2)).items():
            files[f"q{i:04d}/{rel}"] = data
    seed_objects(s3.bucket, "many", files)
    s3.server.log.clear()

    result = audit([s3.url("many")], s3.options, options=OPTIONS, jobs=16)

    kinds = s3.server.log.kinds()
    assert len(result.records) == count
    assert kinds["ListObjectsV2"] == math.ceil(len(files) / 1000) == 2
    assert (
        kinds["GetObject"] == sum(r["reads"] for r in json_records(result)) == count * 6
    )  # every file of so small a checkpoint
    assert "HeadObject" not in kinds


def _deny(monkeypatch: pytest.MonkeyPatch, *denied) -> None:
    """Injected fault: scandir of these directories fails with EACCES (this process runs as root,
    so chmod cannot deny it)."""
    import errno
    import os

    real = os.scandir
    blocked = {str(d) for d in denied}

    def scandir(path):
        # (an int is a directory fd: pytest's removal of tmp_path at teardown lists by fd)
        if not isinstance(path, int) and os.fspath(path) in blocked:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def test_one_unreadable_directory_is_recorded_where_it_belongs_and_the_audit_goes_on(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_files(
        tmp_path / "fleet",
        {
            **{f"a/{p}": d for p, d in checkpoint_files(partitions=2, state_versions=[1, 2]).items()},
            **{f"b/{p}": d for p, d in checkpoint_files().items()},
            "secret/notes.txt": b"x",
        },
    )
    _deny(monkeypatch, root / "a" / "state" / "0", root / "secret")

    result = audit([str(root)], options=OPTIONS)
    records = {r["path"]: r for r in json_records(result)}

    assert set(records) == {"a", "b", "secret"}
    assert records["b"]["verdict"] in ("ok", "warning")
    a = records["a"]
    assert (a["kind"], a["verdict"], a["exit_code"]) == ("checkpoint", "unreadable", 8)
    assert a["error"] == {
        "type": "AccessDeniedError",
        "message": f"cannot list {root}/a/state/0: access denied; check the permissions or bucket policy for this path",
    }
    secret = records["secret"]
    assert (secret["kind"], secret["url"], secret["verdict"]) == (
        "root",
        f"{root}/secret",
        "unreadable",
    )
    assert secret["error"]["message"].startswith(f"cannot list {root}/secret: access denied")
    assert result.exit_code & 8


def test_exclude_leaves_an_unreadable_directory_out(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_files(
        tmp_path / "fleet",
        {**{f"b/{p}": d for p, d in checkpoint_files().items()}, "secret/notes.txt": b"x"},
    )
    _deny(monkeypatch, root / "secret")

    result = audit([str(root)], options=OPTIONS, exclude=["secret"])

    assert [r["path"] for r in json_records(result)] == ["b"]
    assert not result.exit_code & 8
    assert {(n.path, n.kind) for n in result.notes} >= {("secret", "excluded")}


def test_audit_follows_a_symlinked_checkpoint_and_a_symlinked_state_dir(tmp_path) -> None:
    """Checkpoints linked into a fleet directory and a state/ on another volume are
    audited like real ones; a link back up the tree is not followed round and round."""
    volume = write_files(tmp_path / "volume", checkpoint_files(partitions=2, state_versions=[1, 2, 3]))
    linked = write_files(tmp_path / "elsewhere" / "ckpt", checkpoint_files())
    fleet = write_files(tmp_path / "fleet", {f"real/{p}": d for p, d in checkpoint_files().items()})
    (fleet / "team").mkdir()
    (fleet / "team" / "linked").symlink_to(linked)
    (fleet / "team" / "loop").symlink_to(fleet)
    stateful = write_files(
        fleet / "stateful",
        {p: d for p, d in checkpoint_files(partitions=2).items() if not p.startswith("state/")},
    )
    (stateful / "state").symlink_to(volume / "state")

    result = audit([str(fleet)], options=OPTIONS)
    records = {r["path"]: r for r in json_records(result)}

    assert set(records) == {"real", "stateful", "team/linked"}
    assert records["team/linked"]["verdict"] == records["real"]["verdict"]
    assert "CD301" not in records["stateful"]["codes"]  # its state is found through the link
    alone = diagnose_matrix(
        load_checkpoint(str(volume)), as_matrix_options(OPTIONS)
    )  # the same files, unlinked
    assert records["stateful"]["exit_code"] == alone.exit_code
    assert records["stateful"]["codes"] == sorted({f.code for f in alone.findings})


def test_summary_counts_a_paired_sink_finding_once_with_its_effective_severity() -> None:
    # The sink is checked together with its checkpoint, so CD404 is in both records: one place.
    sink_case = audit([str(FIXTURES / "spark-3.5.9" / "file-sink-compact-missing")], options=OPTIONS)
    assert sorted(r["kind"] for r in json_records(sink_case)) == ["checkpoint", "sink"]
    assert all("CD404" in r["codes"] for r in json_records(sink_case))
    assert [(c["code"], c["count"]) for c in sink_case.summary.to_json()["codes"]] == [("CD404", 1)]
    # CD101 is an error in the registry, a warning where only the plausible synchronous restart
    # fails (the async checkpoint as configured starts): the summary says what the records say.
    tail = audit([str(FIXTURES / "spark-4.3.0" / "async-tail")], options=OPTIONS)
    (cd101,) = [c for c in tail.summary.to_json()["codes"] if c["code"] == "CD101"]
    assert cd101["severity"] == "warning" and tail.summary.to_json()["verdicts"]["warning"] == 1


def test_an_audit_lets_go_of_each_target_once_it_is_audited() -> None:
    # Issue 40 item 4 (bench: memory): a target's slice of the fleet's listing is most of what an
    # audit holds; with release=True (the CLI's and audit()'s) the plan gives its tasks up and each
    # is freed when its record is done, not at the end of the audit.
    import gc
    import weakref

    from checkpoint_doctor.fleet.run import RecordStream, audit_hints, audit_plan, finish

    # The objects alive before the audit (the test session's: every module, fixture and cached
    # snapshot) are frozen out of the collector's sight, so each collection below scans what the
    # audit made, not the whole heap (78 s of a 2-core CI run went to 149 full collections).
    gc.collect()
    gc.freeze()
    try:
        plan = plan_fleet([str(SPARK)])
        refs = [weakref.ref(t) for t in plan.tasks]
        assert len(refs) > 100
        options = as_matrix_options(DiagnoseOptions(live_window_s=0))
        stream = RecordStream(audit_hints(options, None), lambda: 0)
        alive_at: list[int] = []

        def on_record(_record: Record) -> None:
            gc.collect()
            alive_at.append(sum(1 for r in refs if r() is not None))

        audit_plan(plan, options, stream, jobs=1, on_record=on_record, release=True)
    finally:
        gc.unfreeze()
    assert plan.tasks == []
    # One more task freed with every record (the one just audited): none is kept to the end.
    assert alive_at == list(range(len(refs) - 1, -1, -1))
    result = finish(plan.roots, plan.notes, stream.records)
    assert len(result.records) == len(refs)
