"""scripts/bench.py's field fleet (issue 40 item 1): the real-world shapes it promises are there, made
of files real Spark wrote, and the audit reads them as what they are (no figure is timed here)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import bench  # noqa: E402

from checkpoint_doctor.diagnosis import DiagnoseOptions  # noqa: E402
from checkpoint_doctor.fleet.records import CheckpointRecord  # noqa: E402
from checkpoint_doctor.fleet.run import audit  # noqa: E402


def test_the_field_fleet_has_the_shapes_of_the_real_world_corpus(tmp_path: Path) -> None:
    root = tmp_path / "field"
    files, checkpoints = bench.build_field_fleet(root, 6_000)
    assert files == bench.scandir_walk(str(root))
    result = audit([str(root)], options=DiagnoseOptions(live_window_s=0))
    kinds = Counter(r.kind for r in result.records)
    assert kinds == {"checkpoint": checkpoints, "sink": 5}
    by_path = {r.path: r for r in result.records}
    # A parent holding 12 checkpoints, some a level deeper.
    assert sum(1 for p in by_path if p.startswith("streaming/")) == 12
    # The huge HDFS store: every version kept, a snapshot every 10, createAtomic temp files, and
    # the logs purged to their last 100 batches.
    sessions = root / "team-payments" / "sessions" / "checkpoint"
    part = sessions / "state" / "0" / "0"
    versions = sorted(int(p.name.split(".")[0]) for p in part.glob("*.delta"))
    assert versions == list(range(1, versions[-1] + 1)) and len(versions) > 500
    assert {int(p.name.split(".")[0]) for p in part.glob("*.snapshot")} == set(
        range(10, versions[-1] + 1, 10)
    )
    assert len(list(part.glob(".*.tmp"))) == 3
    assert sorted(int(p.name) for p in (sessions / "offsets").iterdir() if p.name.isdigit()) == list(
        range(versions[-1] - 100, versions[-1])
    )
    record = by_path["team-payments/sessions/checkpoint"]
    assert record.verdict == "ok" and tuple(record.codes) == ("CD506",)  # the temp files, nothing else
    # RocksDB zips per version and a changelog store with a zip now and then.
    fraud = root / "team-payments" / "fraud" / "checkpoint" / "state" / "0" / "0"
    assert len(list(fraud.glob("*.zip"))) > 100
    ledger = root / "team-payments" / "ledger" / "checkpoint" / "state" / "0" / "0"
    assert len(list(ledger.glob("*.changelog"))) > 100 > len(list(ledger.glob("*.zip")))
    # Old writers' layouts, read as Spark reads them.
    assert by_path["legacy/spark-4.0.5/offsets-java-serialized"].codes == ("CD007",)
    assert "CD212" in by_path["legacy/spark-4.0.5/kafka-initial-offsets-2.1"].codes
    assert {p for p in by_path if p.startswith("legacy/spark-3.3.4/")} == {
        "legacy/spark-3.3.4/rocksdb",
        "legacy/spark-3.3.4/stateless",
        "legacy/spark-3.3.4/window_agg",
    }
    # File sinks with their data (and a Hadoop _temporary attempt) beside their checkpoints, each
    # proven to be its checkpoint's.
    for line in ("3.3.4", "3.5.9", "4.0.5", "4.2.1", "4.3.0"):
        sink = by_path[f"team-exports/export-{line}/sink"]
        assert sink.verdict == "ok" and sink.files > 12
        assert (root / "team-exports" / f"export-{line}" / "sink" / "_temporary").is_dir()
        checkpoint = by_path[f"team-exports/export-{line}/checkpoint"]
        assert isinstance(checkpoint, CheckpointRecord)
        assert (checkpoint.file_sink.url or "").endswith(f"export-{line}/sink")
    # Many tiny checkpoints.
    assert sum(1 for p in by_path if p.startswith("adhoc/")) == 15
