"""``index_listing`` classifies every listed file exactly once, whatever the order of the listing,
with the per-directory shortcut for state store directories agreeing with the general rules."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from checkpoint_doctor.model import FileStat, Listing
from checkpoint_doctor.reading.layout import Layout, StateFileName, index_listing, orphan_crcs

UUID = "0a9b8c7d-6e5f-4a3b-9c2d-1e0f2a3b4c5d"


def listing(paths: list[str]) -> Listing:
    files = tuple(sorted((FileStat(p, len(p), 1) for p in paths), key=lambda f: f.path))
    dirs = {p.rsplit("/", i)[0] for p in paths for i in range(1, p.count("/") + 1)}
    return Listing(files, tuple(sorted(dirs)))


def placements(layout: Layout) -> int:
    """Count the files the index put somewhere (Spark checksums are only counted)."""
    n = len(layout.hadoop_crcs) + len(layout.temps) + len(layout.unknown) + len(layout.ignored)
    n += len(layout.delta_schema_logs)
    n += len(layout.state_other) + (layout.metadata is not None)
    for log in (layout.offsets, layout.commits, *layout.sources.values()):
        n += len(log.batches) + len(log.compacts) + len(log.other)
    for op in layout.operators.values():
        n += (op.metadata is not None) + len(op.metadata_v2) + len(op.state_schema_files) + len(op.other)
        n += op.store_crcs
        for store in op.stores.values():
            n += len(store.data) + len(store.ssts) + len(store.wal_logs) + (store.schema is not None)
            n += len(store.other) + store.spark_checksums
    return n


def summary(layout: Layout) -> dict[str, object]:
    """The index as order-independent data."""
    return {
        "crcs": sorted(layout.hadoop_crcs),
        "temps": sorted((f.path, t) for f, t in layout.temps),
        "unknown": sorted(f.path for f in layout.unknown),
        "state_other": sorted(f.path for f in layout.state_other),
        "ops": {
            op_id: (
                op.file_count,
                op.total_bytes,
                op.store_crcs,
                sorted(op.partition_dirs),
                sorted(f.path for f in op.other),
                {
                    key: (
                        s.path,
                        s.file_count,
                        s.total_bytes,
                        sorted((p.version, p.kind, p.unique_id, f"{s.path}/{name}") for p, name in s.data),
                        sorted(f.path for f in s.other),
                        s.spark_checksums,
                        sorted(f.path for f in s.wal_logs),
                    )
                    for key, s in op.stores.items()
                },
            )
            for op_id, op in layout.operators.items()
        },
        "orphans": sorted((f.path, t) for f, t in orphan_crcs(layout)),
    }


def test_state_store_directory_files_by_role() -> None:
    paths = [
        "state/0/_metadata/metadata",
        "state/0/0/1.delta",
        "state/0/0/.1.delta.crc",
        "state/0/0/10.snapshot",
        "state/0/0/2.zip",
        "state/0/0/2.zip.crc",  # Spark 4.1+ checksum file
        "state/0/0/3.changelog",
        f"state/0/0/4_{UUID}.zip",
        f"state/0/0/.5.delta.{UUID}.tmp",
        "state/0/0/.7.delta.crc",  # orphan: 7.delta is gone
        "state/0/0/notes.txt",
        "state/0/0/_metadata/schema",
        "state/0/0/SSTs/000001-abc.sst",
        "state/0/0/logs/000002-def.log",
        "state/0/1/left/1.delta",
        "state/0/1/left/_metadata/schema",
        "state/00/0/1.delta",  # not how Spark names operator 0
    ]

    layout = index_listing(listing(paths))

    op = layout.operators[0]
    default, left = op.stores[(0, "default")], op.stores[(1, "left")]
    assert sorted(((p, f"{default.path}/{name}") for p, name in default.data), key=lambda x: x[1]) == [
        (StateFileName(1, "delta"), "state/0/0/1.delta"),
        (StateFileName(10, "snapshot"), "state/0/0/10.snapshot"),
        (StateFileName(2, "zip"), "state/0/0/2.zip"),
        (StateFileName(3, "changelog"), "state/0/0/3.changelog"),
        (StateFileName(4, "zip", UUID), f"state/0/0/4_{UUID}.zip"),
    ]
    assert default.spark_checksums == 1
    assert [f.path for f in default.other] == ["state/0/0/notes.txt"]
    assert [f.path for f in default.ssts] == ["state/0/0/SSTs/000001-abc.sst"]
    assert [f.path for f in default.wal_logs] == ["state/0/0/logs/000002-def.log"]
    assert default.schema is not None and left.schema is not None
    assert (default.path, left.path) == ("state/0/0", "state/0/1/left")
    assert [(f.path, t) for f, t in layout.temps] == [(f"state/0/0/.5.delta.{UUID}.tmp", "state/0/0/5.delta")]
    assert sorted(layout.hadoop_crcs) == []  # store-directory checksums are counted per operator
    assert op.store_crcs == 2
    assert [t for _, t in orphan_crcs(layout)] == ["state/0/0/7.delta"]
    assert op.file_count == 16 and sorted(op.partition_dirs) == [0, 1]
    assert default.file_count == 10  # Hadoop .crc and temp files count for the operator only
    assert [f.path for f in layout.state_other] == ["state/00/0/1.delta"]
    assert placements(layout) == len(paths)


segments = st.sampled_from(
    ["state", "offsets", "commits", "sources", "0", "1", "00", "+1", "_metadata", "_stateSchema", "v2", "SSTs",
     "logs", "left", "metadata", "schema", "1.delta", "2.snapshot", "3.zip", "4.changelog", f"5_{UUID}.zip",
     "1.delta.crc", ".1.delta.crc", ".crc", "..crc", ".a.crc", ".x.tmp", f".1.delta.{UUID}.tmp", "a.sst",
     "1.compact", "x"]
)  # fmt: skip
state_paths = st.tuples(
    st.sampled_from(["0", "1", "00", "x"]),
    st.sampled_from(["0", "1", "01", "_metadata", "_stateSchema"]),
    st.sampled_from(["", "left/", "SSTs/", "_metadata/", "logs/", "v2/"]),
    segments,
).map(lambda t: f"state/{t[0]}/{t[1]}/{t[2]}{t[3]}")
path_lists = st.lists(
    st.one_of(state_paths, st.lists(segments, min_size=1, max_size=5).map("/".join)), max_size=30, unique=True
)


@given(path_lists, st.randoms(use_true_random=False))
def test_every_file_is_placed_once_whatever_the_order(paths: list[str], rnd: random.Random) -> None:
    ordered = index_listing(listing(paths))
    shuffled_paths = list(paths)
    rnd.shuffle(shuffled_paths)
    shuffled = index_listing(
        Listing(tuple(FileStat(p, len(p), 1) for p in shuffled_paths), listing(paths).dirs)
    )

    assert placements(ordered) == len(paths)
    assert summary(shuffled) == summary(ordered)
    assert ordered.present <= set(paths)  # files outside state store data directories


def test_delta_schema_tracking_log_files_are_delta_s_not_debris() -> None:
    """``schemaTrackingLocation`` must lie under the checkpoint (the plan for CD240/CD241 names
    ``<checkpoint>/_delta_schema_tracking``): Delta's ``_schema_log_<table id>`` files there are known."""
    paths = [
        f"_delta_schema_tracking/_schema_log_{UUID}/0",
        f"_delta_schema_tracking/_schema_log_{UUID}/.0.crc",
        f"offsets/_schema_log_{UUID}/1",
        "_delta_schema_tracking/notes.txt",
    ]
    layout = index_listing(listing(paths))
    assert sorted(f.path for f in layout.delta_schema_logs) == sorted(paths[:2])
    assert [f.path for f in layout.unknown] == ["_delta_schema_tracking/notes.txt"]
    assert placements(layout) == len(paths)
