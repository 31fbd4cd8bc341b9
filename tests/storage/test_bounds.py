"""Reading is bounded by what Spark reads: bytes per file, lines per log file.

Memory is measured with ``tracemalloc`` (allocations of this process, deterministic for one input),
never with a clock.
"""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.errors import CheckpointParseError
from checkpoint_doctor.parsing.commits import parse_commit
from checkpoint_doctor.parsing.offsets import MAX_SOURCE_LINES, parse_offsets
from checkpoint_doctor.parsing.text import TOO_LARGE
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.snapshot import MAX_FILE_BYTES
from tests.storage.builders import checkpoint_files, offsets_file, write_files

HEADER = offsets_file(0).split(b"\n")[:2]


def peak_bytes(fn) -> tuple[object, int]:
    """Run ``fn``; return its result (or exception) and the peak of memory it allocated."""
    tracemalloc.start()
    try:
        try:
            result: object = fn()
        except CheckpointParseError as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_offsets_file_of_a_million_blank_lines_stops_at_the_source_bound() -> None:
    data = b"\n".join(HEADER) + b"\n" * 1_000_000

    error, peak = peak_bytes(lambda: parse_offsets(data, path="offsets/3"))

    assert isinstance(error, CheckpointParseError)
    assert (error.kind, error.line) == (TOO_LARGE, MAX_SOURCE_LINES + 3)
    assert (
        error.reason
        == f"more than {MAX_SOURCE_LINES} source lines (Spark writes one per source of the query)"
    )
    # The decoded text (1 MB) and the 10,000 source lines kept: never a million line objects.
    assert peak < 8 * len(data)


def test_the_source_bound_itself_is_read() -> None:
    data = b"\n".join([*HEADER, *([b"-"] * MAX_SOURCE_LINES)])

    seq = parse_offsets(data, path="offsets/3")

    assert len(seq.sources) == MAX_SOURCE_LINES and seq.sources[-1].raw is None


def test_a_commit_file_is_read_to_its_second_line_only() -> None:
    data = b'v1\n{"nextBatchWatermarkMs":5}' + b"\n" * 1_000_000

    record, peak = peak_bytes(lambda: parse_commit(data, path="commits/3"))

    assert record.next_batch_watermark_ms == 5  # type: ignore[union-attr]
    assert peak < 3 * len(data)


def _checkpoint(tmp_path: Path) -> Path:
    return write_files(tmp_path / "ckpt", checkpoint_files(range(4), range(3)))


def test_a_blank_line_offsets_file_is_a_finding_not_a_memory_blowup(tmp_path: Path) -> None:
    cp = _checkpoint(tmp_path)
    (cp / "offsets" / "3").write_bytes(b"\n".join(HEADER) + b"\n" * 3_000_000)

    snapshot, peak = peak_bytes(lambda: load_checkpoint(str(cp)))
    result = diagnose(snapshot, DiagnoseOptions(live_window_s=0))  # type: ignore[arg-type]

    failure = snapshot.offsets.get(3).failure  # type: ignore[union-attr]
    assert failure is not None and failure.kind == TOO_LARGE
    assert "CD003" in result.codes and result.exit_code == 4
    assert peak < 4 * 3_000_000  # the bytes read and their text; 3.6 GB before the bound


def test_a_file_listed_over_the_byte_bound_is_not_read(tmp_path: Path) -> None:
    cp = _checkpoint(tmp_path)
    big = cp / "offsets" / "3"
    with open(big, "r+b") as fh:  # sparse: the listing says 64 MiB + 1, the disk holds a few bytes
        fh.truncate(MAX_FILE_BYTES + 1)

    snapshot, peak = peak_bytes(lambda: load_checkpoint(str(cp)))

    failure = snapshot.offsets.get(3).failure  # type: ignore[union-attr]
    assert failure is not None and failure.kind == TOO_LARGE
    assert (
        failure.reason
        == f"{MAX_FILE_BYTES + 1} bytes or more, over the {MAX_FILE_BYTES}-byte bound for one file"
    )
    assert "offsets/3" not in snapshot.raw
    assert peak < MAX_FILE_BYTES // 16


def test_a_sink_compact_over_the_bound_is_not_called_damaged(tmp_path: Path) -> None:
    cp = _checkpoint(tmp_path)
    sink = write_files(
        tmp_path / "out",
        {
            "_spark_metadata/0": b'v1\n{"path":"file:///out/a.parquet","size":1,"action":"add"}',
            "_spark_metadata/1": b'v1\n{"path":"file:///out/b.parquet","size":1,"action":"add"}',
        },
    )
    compact = sink / "_spark_metadata" / "2"
    compact.write_bytes(b"v1\n")
    os.truncate(compact, MAX_FILE_BYTES + 1)

    snapshot = load_checkpoint(str(cp), sink_path=str(sink))
    result = diagnose(snapshot, DiagnoseOptions(live_window_s=0))

    assert [f.kind for f in snapshot.sink.log.failures()] == [TOO_LARGE]  # type: ignore[union-attr]
    assert "CD405" not in result.codes
    # ... and not silently fine either: the diagnosis says what it did not check.
    said = [a for a in result.assumptions if a.startswith("file sink log partly not checked")]
    assert said == [
        f"file sink log partly not checked: _spark_metadata/2 not read ({MAX_FILE_BYTES + 1} bytes or more, "
        f"over the {MAX_FILE_BYTES}-byte bound for one file); the data files it lists were not checked"
    ]
    from checkpoint_doctor.diagnosis.matrix import MatrixOptions, diagnose_matrix

    matrix = diagnose_matrix(snapshot, MatrixOptions(base=DiagnoseOptions(live_window_s=0)))
    assert said[0] in matrix.assumptions


@pytest.mark.parametrize("name", ["metadata", "commits/2", "state/0/_metadata/metadata"])
def test_every_file_a_snapshot_reads_is_bounded(tmp_path: Path, name: str) -> None:
    cp = write_files(
        tmp_path / "ckpt", checkpoint_files(range(4), range(3), partitions=1, state_versions=[1])
    )
    os.truncate(cp / name, MAX_FILE_BYTES + 1)

    snapshot = load_checkpoint(str(cp))

    assert "too-large" in {f["kind"] for f in _failures(snapshot)}


def _failures(snapshot) -> list[dict]:
    from checkpoint_doctor.diagnosis.inspection import inspect_report

    report = inspect_report(snapshot)
    out = [report["metadata"]["error"]] if report["metadata"]["error"] else []
    for log in ("offsets", "commits"):
        out += report[log]["failures"]
    for op in report["state"]["operators"]:
        if op.get("metadata_error"):
            out.append(op["metadata_error"])
    return [f for f in out if isinstance(f, dict)]


def test_a_state_data_file_is_read_by_its_head_only(tmp_path: Path) -> None:
    from checkpoint_doctor.reading.reads import DATA_HEAD_BYTES

    cp = write_files(
        tmp_path / "ckpt", checkpoint_files(range(3), range(2), partitions=1, state_versions=[1, 2, 3])
    )
    delta = cp / "state" / "0" / "0" / "2.delta"  # the version the restart loads (batch 2 re-runs)
    delta.write_bytes(b"LZ4Block" + b"\x00" * 10_000_000)

    snapshot, peak = peak_bytes(lambda: load_checkpoint(str(cp)))

    assert len(snapshot.raw["state/0/0/2.delta"]) == DATA_HEAD_BYTES
    (store,) = snapshot.state.operators[0].stores
    assert [(name, h.record.codec) for name, h in store.data_headers] == [("2.delta", "lz4")]  # type: ignore[union-attr]
    assert peak < 1_000_000
