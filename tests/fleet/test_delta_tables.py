"""The fleet's Delta tables: found in the roots' one listing (their logs' names included), read once
to pair them on every backend, and a Delta job placed in the fleet paired with its checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions
from checkpoint_doctor.fleet.delta import table_tasks
from checkpoint_doctor.fleet.delta_report import PAIRED_NOTE, far_tables
from checkpoint_doctor.fleet.discovery import NOTE_DELTA
from checkpoint_doctor.fleet.records import AuditNote
from checkpoint_doctor.fleet.run import audit, plan_fleet
from checkpoint_doctor.model import FileStat, Listing
from tests.conftest import FIXTURES
from tests.fleet.conftest import DELTA_TABLE, Fleet, place_fleet
from tests.storage.builders import read_files, write_files

OPTIONS = DiagnoseOptions(live_window_s=0)
DELTA_JOB = FIXTURES / "delta" / "spark-4.2.1" / "delta-source-stateless-rows-deleted"


def test_the_tables_and_their_log_names_come_from_the_one_listing() -> None:
    paths = [
        "a/_delta_log/00000000000000000000.json",
        "a/_delta_log/00000000000000000001.json",
        "a/_delta_log/00000000000000000001.crc",
        "a/part-0.parquet",
        "b/_delta_log/_commits/x",  # no commit, no checkpoint: not a table
    ]
    files = tuple(FileStat(p, 1, 1) for p in paths)
    dirs = ("a", "a/_delta_log", "b", "b/_delta_log", "b/_delta_log/_commits")
    notes = [
        AuditNote("/r/a", "/r", "a", NOTE_DELTA, "a Delta table"),
        AuditNote("/r/b", "/r", "b", NOTE_DELTA, "a Delta table"),
        AuditNote("/other/a", "/other", "a", NOTE_DELTA, "a Delta table"),
    ]
    (task,) = table_tasks("/r", Listing(files, dirs), notes)
    assert (task.url, task.path) == ("/r/a", "a")
    assert sorted(task.log_names) == [
        "00000000000000000000.json",
        "00000000000000000001.crc",
        "00000000000000000001.json",
    ]


def test_every_backend_reads_the_fleet_table_once_and_says_so(fleet: Fleet) -> None:
    result = audit([fleet.root], fleet.options, options=OPTIONS, jobs=4)
    assert result.summary.delta.to_json() == {
        "tables": 1,
        "paired_sources": 0,
        "paired_sinks": 0,
        "unpaired_sources": 0,
        "reads": 1,  # its one commit (it has no checksum)
    }
    (note,) = [n for n in result.notes if n.kind == NOTE_DELTA]
    assert note.url == fleet.url(DELTA_TABLE) and note.message == PAIRED_NOTE


@pytest.mark.parametrize("backend", ["local", "memory", "s3"])
def test_a_delta_job_in_the_fleet_is_paired_and_judged(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    fleet = place_fleet(backend, tmp_path, request)
    files = {
        f"team d/job/{part}/{p}": d
        for part in ("checkpoint", "source")
        for p, d in read_files(DELTA_JOB / part).items()
    }
    _put(fleet, files)
    assert len(plan_fleet([fleet.root], fleet.options).tables) == 2
    result = audit([fleet.root], fleet.options, options=OPTIONS, jobs=4)
    (typed,) = [r for r in result.records if r.path == "team d/job/checkpoint"]
    record = typed.to_json()
    assert [(p["role"], p["how"], p["table"]) for p in record["delta"]["pairs"]] == [
        ("source", "table-id", fleet.url("team d/job/source"))
    ]
    assert record["restart"]["outcome"] == "fails" and "CD210" in record["codes"]
    assert far_tables(typed) == ()  # beside it: diagnose finds it too


def _put(fleet: Fleet, files: dict[str, bytes]) -> None:
    from tests.fleet.conftest import PREFIX
    from tests.s3.server import seed_objects
    from tests.storage.builders import write_files

    if fleet.local is not None:
        write_files(fleet.local, files)
    elif fleet.s3 is not None:
        seed_objects(fleet.s3.bucket, PREFIX, files)
    else:
        assert fleet.memory is not None
        for rel, data in files.items():
            fleet.memory.put(f"{PREFIX}/{rel}", data)


def test_a_checkpoint_inside_its_sink_table_is_audited_and_paired_with_it(tmp_path: Path) -> None:
    job = FIXTURES / "delta" / "spark-4.2.1" / "delta-sink-rolled-back"
    table = tmp_path / "root" / "sink"
    write_files(table, read_files(job / "sink"))
    write_files(table / "_checkpoint", read_files(job / "checkpoint"))
    result = audit([str(tmp_path / "root")], options=OPTIONS)
    (typed,) = result.records
    record = typed.to_json()
    assert record["path"] == "sink/_checkpoint"
    assert [(p["role"], p["table"]) for p in record["delta"]["pairs"]] == [("sink", str(table))]
    assert "CD407" in record["codes"] and far_tables(typed) == ()
