"""checkpoint_doctor.world.delta_log: a Delta table's log read without a JVM, locally and on S3 (moto),
from tables real Spark + delta-spark wrote (fixtures/delta/)."""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkpoint_doctor.cli import main
from checkpoint_doctor.errors import MissingDependencyError, UsageError
from checkpoint_doctor.world.delta_log import chain, parse_commit, read_table
from tests.s3.conftest import S3

LINE = Path(__file__).resolve().parents[2] / "fixtures" / "delta" / "spark-3.5.9"


def _scenario(name: str) -> dict[str, Any]:
    return json.loads((LINE / name / "scenario.json").read_text(encoding="utf-8"))


def test_a_source_table_gives_its_id_versions_and_commits() -> None:
    table = read_table(str(LINE / "delta-source-stateless" / "source"))
    offset_line = (LINE / "delta-source-stateless" / "checkpoint" / "offsets" / "1").read_text(
        encoding="utf-8"
    )
    reservoir = json.loads(offset_line.split("\n")[2])
    assert table.table_id == reservoir["reservoirId"]
    # v0 create, v1..v4 one insert each; checkpointInterval 2: checkpoints at 2 and 4
    assert (table.earliest_version, table.latest_version, table.checkpoint_version) == (0, 4, 4)
    assert [c.operation for c in table.commits] == ["CREATE TABLE", "WRITE", "WRITE", "WRITE", "WRITE"]
    assert [(c.adds, c.removes) for c in table.commits] == [(0, 0)] + [(1, 0)] * 4
    assert table.schema is not None and '"name":"text"' in table.schema


def test_a_cleaned_log_starts_at_its_checkpoint_and_keeps_the_id() -> None:
    base = read_table(str(LINE / "delta-source-stateless" / "source"))
    table = read_table(str(LINE / "delta-source-stateless-log-cleaned" / "source"))
    assert (table.earliest_version, table.latest_version, table.checkpoint_version) == (6, 6, 6)
    assert table.table_id == base.table_id
    assert table.schema is not None


def test_a_sink_table_gives_the_query_txn_version() -> None:
    scen = _scenario("delta-sink")
    table = read_table(str(LINE / "delta-sink" / "sink"))
    assert table.txns == ((scen["facts"]["query_id"], 2),)
    assert table.txn_version(scen["facts"]["query_id"]) == 2
    assert [c.operation for c in table.commits] == ["STREAMING UPDATE"] * 3


def test_deletes_and_updates_are_counted_as_data_changes() -> None:
    deleted = read_table(str(LINE / "delta-source-stateless-rows-deleted" / "source")).commits[-1]
    updated = read_table(str(LINE / "delta-source-stateless-rows-updated" / "source")).commits[-1]
    assert (deleted.operation, deleted.adds, deleted.removes) == ("DELETE", 0, 1)
    assert updated.operation == "UPDATE" and updated.adds >= 1 and updated.removes == 1


def test_a_directory_without_a_log_is_a_one_line_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not a Delta table"):
        read_table(str(tmp_path))


def _without_checksum(tmp_path: Path) -> Path:
    """A copy of the cleaned-log scenario whose newest version checksum (<v>.crc) is gone: the
    table's id and txns are then in its Parquet checkpoint only."""
    scen = tmp_path / "delta-source-stateless-log-cleaned"
    shutil.copytree(LINE / scen.name, scen)
    for crc in (scen / "source" / "_delta_log").glob("*.crc"):
        crc.unlink()
    return scen


@pytest.mark.parametrize("line", ["spark-3.5.9", "spark-4.0.5", "spark-4.1.4", "spark-4.2.1"])
def test_a_cleaned_log_reads_its_state_from_the_version_checksum_without_deltalake(
    monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    # delta-rs reads the Parquet checkpoint; the checksum every recorded line writes says the same
    with_delta_rs = read_table(
        str(LINE.parent / line / "delta-source-stateless-log-cleaned" / "source"), None, ()
    )
    sink_with_delta_rs = read_table(str(LINE.parent / line / "delta-sink" / "sink"), None, ())
    monkeypatch.setitem(sys.modules, "deltalake", None)  # import deltalake raises ImportError
    table = read_table(str(LINE.parent / line / "delta-source-stateless-log-cleaned" / "source"))
    assert (table.table_id, table.schema, table.earliest_version) == (
        with_delta_rs.table_id,
        with_delta_rs.schema,
        6,
    )
    sink = read_table(str(LINE.parent / line / "delta-sink" / "sink"), commits=False)
    assert (sink.table_id, sink.txns, sink.commits) == (
        sink_with_delta_rs.table_id,
        sink_with_delta_rs.txns,
        (),
    )


def test_pairing_facts_cost_one_read_of_the_checksum(tmp_path: Path) -> None:
    """commits=False (pairing) reads the newest checksum only; without one, every commit."""
    sink = LINE / "delta-sink" / "sink"
    table = read_table(str(sink), commits=False)
    assert table.commits == () and table.txns and table.table_id
    copy = tmp_path / "sink"
    shutil.copytree(sink, copy)
    for crc in (copy / "_delta_log").glob("*.crc"):
        crc.unlink()
    full = read_table(str(copy), commits=False)
    assert (full.table_id, full.txns) == (table.table_id, table.txns) and len(full.commits) == 3


def test_a_cleaned_log_without_checksum_nor_deltalake_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    scen = _without_checksum(tmp_path)
    monkeypatch.setitem(sys.modules, "deltalake", None)  # import deltalake raises ImportError
    with pytest.raises(MissingDependencyError) as info:
        read_table(str(scen / "source"))
    assert "pip install 'checkpoint-doctor[delta]'" in str(info.value)


def test_the_cli_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    scen = _without_checksum(tmp_path)
    monkeypatch.setitem(sys.modules, "deltalake", None)
    code = main(
        ["diagnose", str(scen / "checkpoint"), "--spark", "3.5", "--delta-table", str(scen / "source")]
    )
    err = capsys.readouterr().err
    assert code != 0 and "checkpoint-doctor[delta]" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.s3
def test_a_table_on_s3_reads_as_it_does_locally(s3: S3) -> None:
    for name in ("delta-sink", "delta-source-stateless-log-cleaned"):
        sub = "sink" if name == "delta-sink" else "source"
        local = LINE / name / sub
        s3.fs.put(str(local), s3.key(f"{name}/{sub}"), recursive=True)
        got = read_table(s3.url(f"{name}/{sub}"), s3.options, ("nobody",))
        want = read_table(str(local), None, ("nobody",))
        assert (got.table_id, got.latest_version, got.earliest_version, got.txns, got.commits) == (
            want.table_id,
            want.latest_version,
            want.earliest_version,
            want.txns,
            want.commits,
        )


# --- the protocol parsers, for any input ---------------------------------------------------------


@given(st.sets(st.integers(0, 40)), st.sets(st.integers(0, 40)))
def test_chain_is_the_contiguous_tail_of_commits(commits: set[int], checkpoints: set[int]) -> None:
    if not commits and not checkpoints:
        with pytest.raises(ValueError):
            chain(commits, checkpoints)
        return
    latest, earliest, checkpoint = chain(commits, checkpoints)
    assert latest == max(commits | checkpoints)
    assert all(v in commits for v in range(earliest, latest + 1))
    assert earliest == latest + 1 or earliest - 1 not in commits
    assert checkpoint is None or checkpoint in checkpoints


ACTIONS = st.sampled_from(
    [
        {"add": {"path": "a", "dataChange": True}},
        {"add": {"path": "b", "dataChange": False}},
        {"remove": {"path": "a", "dataChange": True}},
        {"remove": {"path": "c", "dataChange": False}},
        {"txn": {"appId": "q", "version": 3}},
        {"commitInfo": {"operation": "WRITE"}},
        {"protocol": {"minReaderVersion": 1}},
    ]
)


@given(st.lists(ACTIONS, max_size=12))
def test_parse_commit_counts_only_data_changes(actions: list[dict[str, Any]]) -> None:
    data = "\n".join(json.dumps(a) for a in actions).encode()
    got = parse_commit(7, data)
    assert got.version == 7
    assert got.adds == sum(1 for a in actions if a.get("add", {}).get("dataChange"))
    assert got.removes == sum(1 for a in actions if a.get("remove", {}).get("dataChange"))
    assert got.txns == tuple(("q", 3) for a in actions if "txn" in a)


@given(st.binary(max_size=64))
def test_parse_commit_of_garbage_raises_value_error_only(data: bytes) -> None:
    with contextlib.suppress(ValueError, KeyError, TypeError):
        parse_commit(0, data)


def test_copies_of_a_table_read_alike(tmp_path: Path) -> None:
    dest = tmp_path / "t"
    shutil.copytree(LINE / "delta-sink" / "sink", dest)
    assert read_table(str(dest)).commits == read_table(str(LINE / "delta-sink" / "sink")).commits
