"""Discovery is a pure function of one listing: what is a checkpoint, a sink output, a Delta table,
or neither; nesting; globs; and the per-target slice equals the target's own listing."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkpoint_doctor.fleet.discovery import (
    NOTE_DELTA,
    NOTE_EMPTY,
    NOTE_EXCLUDED,
    NOTE_NEITHER,
    NOTE_STRAY,
    TargetKind,
    TreeIndex,
    discover,
)
from checkpoint_doctor.model import FileStat, Listing
from checkpoint_doctor.reading.storage import open_storage
from tests.fleet.conftest import CHECKPOINTS, DELTA_TABLE, GARBAGE_CHECKPOINT, GARBAGE_DIR, SINKS, Fleet

CHECKPOINT, SINK = TargetKind.CHECKPOINT, TargetKind.SINK


def listing(paths: list[str], extra_dirs: tuple[str, ...] = ()) -> Listing:
    files = tuple(sorted((FileStat(p, len(p), 1) for p in paths), key=lambda f: f.path))
    dirs = {p.rsplit("/", i)[0] for p in paths for i in range(1, p.count("/") + 1)} | set(extra_dirs)
    return Listing(files, tuple(sorted(dirs)))


def targets(found) -> set[tuple[str, str]]:
    return {(t.kind, t.path) for t in found.targets}


def test_each_marker_makes_a_checkpoint_and_spark_metadata_a_sink() -> None:
    found = discover(
        listing(
            [
                "by-metadata/metadata",
                "by-offsets/offsets/0",
                "by-commits/commits/0",
                "out/_spark_metadata/0",
                "out/part-0000.json",
            ]
        )
    )
    assert targets(found) == {
        (CHECKPOINT, "by-metadata"),
        (CHECKPOINT, "by-offsets"),
        (CHECKPOINT, "by-commits"),
        (SINK, "out"),
    }
    by_path = {t.path: t.evidence for t in found.targets}
    assert by_path["by-metadata"] == ("metadata",)
    assert by_path["by-offsets"] == ("offsets/",)


def test_an_empty_log_directory_is_enough_on_local_disk() -> None:
    found = discover(listing(["x/readme"], extra_dirs=("fresh", "fresh/commits")))
    assert (CHECKPOINT, "fresh") in targets(found)


def test_the_root_itself_can_be_the_checkpoint() -> None:
    found = discover(
        listing(["metadata", "offsets/0", "commits/0", "state/0/_metadata/metadata", "state/0/0/1.delta"])
    )
    assert targets(found) == {(CHECKPOINT, "")}
    assert found.notes == ()


def test_what_a_checkpoint_owns_never_makes_a_target() -> None:
    found = discover(
        listing(
            [
                "ckpt/metadata",
                "ckpt/offsets/0",
                "ckpt/offsets/offsets/0",  # a directory inside a log: Spark ignores it
                "ckpt/state/0/_metadata/metadata",  # operator metadata
                "ckpt/state/0/0/commits/1",
                "ckpt/sources/0/metadata",
                "sink/_spark_metadata/0",
                "sink/_spark_metadata/metadata",
                "lone/_metadata/metadata",  # a _metadata directory is never a checkpoint
            ]
        )
    )
    assert targets(found) == {(CHECKPOINT, "ckpt"), (SINK, "sink")}


def test_nested_checkpoints_and_a_checkpoint_inside_a_sink_output_are_found() -> None:
    found = discover(
        listing(
            [
                "a/metadata",
                "a/offsets/0",
                "a/old run/metadata",
                "a/old run/commits/0",
                "a/old run/older/offsets/3",
                "out/_spark_metadata/0",
                "out/part-0.parquet",
                "out/_checkpoint/metadata",
                "out/_checkpoint/offsets/0",
                "tbl/_delta_log/0.json",
                "tbl/_checkpoints/q1/metadata",
            ]
        )
    )
    assert targets(found) == {
        (CHECKPOINT, "a"),
        (CHECKPOINT, "a/old run"),
        (CHECKPOINT, "a/old run/older"),
        (SINK, "out"),
        (CHECKPOINT, "out/_checkpoint"),
        (CHECKPOINT, "tbl/_checkpoints/q1"),
    }
    assert [(n.path, n.kind) for n in found.notes] == [("tbl", NOTE_DELTA)]


def test_skipped_directories_and_stray_files_get_one_note_each() -> None:
    found = discover(
        listing(
            [
                "README",
                "team/ckpt/metadata",
                "team/notes.txt",
                "team/junk/a",
                "team/junk/deeper/b",
                "team/junk/deeper/c",
                "other/x/y",
                "events/_delta_log/00.json",
                "events/part-0.parquet",
                "events/_delta_log/_commits/x",
            ]
        )
    )
    notes = {(n.path, n.kind): n.message for n in found.notes}
    assert set(notes) == {
        ("", NOTE_STRAY),
        ("team", NOTE_STRAY),
        ("team/junk", NOTE_NEITHER),
        ("other", NOTE_NEITHER),
        ("events", NOTE_DELTA),
    }
    assert "3 files" in notes[("team/junk", NOTE_NEITHER)]
    assert "Delta table" in notes[("events", NOTE_DELTA)]
    assert targets(found) == {(CHECKPOINT, "team/ckpt")}


def test_a_listing_without_targets_says_so() -> None:
    found = discover(listing(["a/b", "c"]))
    assert found.targets == ()
    assert [(n.path, n.kind) for n in found.notes] == [("", NOTE_EMPTY)]
    assert "2 files" in found.notes[0].message


def test_include_and_exclude_match_the_relative_path_or_the_url() -> None:
    paths = ["prod/q1/metadata", "prod/q2/metadata", "dev/q1/metadata", "prod/out/_spark_metadata/0"]
    root = "s3://bkt/fleet"

    only_prod = discover(listing(paths), root_url=root, include=["prod/*"])
    assert targets(only_prod) == {(CHECKPOINT, "prod/q1"), (CHECKPOINT, "prod/q2"), (SINK, "prod/out")}
    assert {(n.path, n.kind) for n in only_prod.notes} == {("dev/q1", NOTE_EXCLUDED)}

    no_q1 = discover(listing(paths), root_url=root, exclude=["s3://bkt/fleet/*/q1"])
    assert targets(no_q1) == {(CHECKPOINT, "prod/q2"), (SINK, "prod/out")}
    excluded = {n.path: n.message for n in no_q1.notes if n.kind == NOTE_EXCLUDED}
    assert set(excluded) == {"prod/q1", "dev/q1"}
    assert "--exclude 's3://bkt/fleet/*/q1'" in excluded["dev/q1"]


def test_paths_with_spaces_and_unicode() -> None:
    found = discover(listing(["my checkpoints/ckpt é/metadata", "my checkpoints/ckpt é/offsets/0"]))
    assert targets(found) == {(CHECKPOINT, "my checkpoints/ckpt é")}


def test_discovery_does_not_depend_on_the_listing_order() -> None:
    paths = ["a/metadata", "a/b/offsets/1", "a/b/commits/1", "s/_spark_metadata/0", "d/_delta_log/0", "x/y"]
    expected = discover(listing(paths))
    files = list(listing(paths).files)
    random.Random(7).shuffle(files)
    shuffled = Listing(tuple(files), tuple(reversed(listing(paths).dirs)))
    assert discover(shuffled) == expected


names = st.sampled_from(
    ["a", "b c", "metadata", "offsets", "commits", "state", "0", "_spark_metadata", "_delta_log", "é"]
)
trees = st.lists(st.lists(names, min_size=1, max_size=5).map("/".join), min_size=1, max_size=25, unique=True)


@given(trees)
def test_slices_hold_exactly_the_files_below_each_directory(paths: list[str]) -> None:
    # A path that is also a directory of another path cannot exist: keep the files that are leaves.
    leaves = [p for p in paths if not any(q.startswith(p + "/") for q in paths)]
    tree = listing(leaves)
    index = TreeIndex(tree)
    for d in ("", *tree.dirs):
        sliced = index.slice(d)
        below = sorted(p[len(d) + 1 :] if d else p for p in leaves if not d or p.startswith(d + "/"))
        assert [f.path for f in sliced.files] == below
        assert index.count(d) == len(below)
        expected_dirs = sorted(
            x[len(d) + 1 :] if d else x for x in tree.dirs if not d or x.startswith(d + "/")
        )
        assert list(sliced.dirs) == expected_dirs
    found = discover(tree)
    # Every target is a directory of the listing (or the root), found once per kind.
    assert all(t.path == "" or t.path in tree.dirs for t in found.targets)
    assert len(targets(found)) == len(found.targets)


@pytest.mark.parametrize("backend", ["local", "memory", "s3"])
def test_one_listing_of_the_fleet_finds_every_target_and_slices_like_their_own_listing(
    backend: str, tmp_path, request: pytest.FixtureRequest
) -> None:
    from tests.fleet.conftest import place_fleet

    fleet: Fleet = place_fleet(backend, tmp_path, request)
    store = open_storage(fleet.root, fleet.options)
    whole = store.list_tree()
    found = discover(whole, root_url=store.url)

    assert targets(found) == {(CHECKPOINT, p) for p in [*CHECKPOINTS, GARBAGE_CHECKPOINT]} | {
        (SINK, p) for p in SINKS
    }
    kinds = {(n.path, n.kind) for n in found.notes}
    assert {("", NOTE_STRAY), (DELTA_TABLE, NOTE_DELTA), (GARBAGE_DIR, NOTE_NEITHER)} <= kinds
    index = TreeIndex(whole)
    for target in found.targets:
        own = open_storage(fleet.url(target.path), fleet.options).list_tree()
        assert index.slice(target.path) == own, target.path
