"""The local walk reads names; a file's size and mtime are stat'ed when first asked for, except in
the metadata logs (``offsets/``, ``commits/``, ``sources/<n>/``, ``_spark_metadata/``), whose sizes
and mtimes are evidence and are stat'ed as listed. Either way the listing says what ``os.stat`` says."""

from __future__ import annotations

import errno
import os
import pickle
from collections.abc import Sequence
from pathlib import Path

import pytest

from checkpoint_doctor.model import DirEntries
from checkpoint_doctor.reading.storage import local as local_storage
from checkpoint_doctor.reading.storage import open_storage

FILES = {
    "metadata": b'{"id":"q"}',
    "offsets/0": b"v1\n{}\n{}",
    "offsets/.0.crc": b"crc",
    "commits/0": b"v1\n{}",
    "sources/0/0": b"v1\n{}",
    "state/0/0/1.delta": b"LZ4Block delta",
    "state/0/0/.1.delta.crc": b"crc",
    "state/0/0/2.snapshot": b"snapshot!",
    "state/0/_metadata/metadata": b"v1\n{}",
    "out/_spark_metadata/0": b"v1\n{}",
    "out/date=2024-01-01/part-00000.parquet": b"PAR1" + bytes(100) + b"PAR1",
    "out/date=2024-01-01/part-00001.parquet": b"PAR1" + bytes(200) + b"PAR1",
}


def build(root: Path) -> None:
    for i, (rel, data) in enumerate(sorted(FILES.items())):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        ns = (1_700_000_000_000 + i * 1_500) * 1_000_000  # distinct mtimes, to the millisecond
        os.utime(path, ns=(ns, ns))


def column(listing_columns: tuple[DirEntries, ...], path: str) -> DirEntries:
    return next(d for d in listing_columns if d.path == path)


def test_the_listing_says_what_os_stat_says_whether_stat_eagerly_or_lazily(tmp_path: Path) -> None:
    build(tmp_path)

    listing = open_storage(str(tmp_path)).list_tree()

    expected = []
    for rel in sorted(FILES):
        st = os.stat(tmp_path / rel)
        expected.append((rel, st.st_size, st.st_mtime_ns // 1_000_000))
    assert [(f.path, f.size, f.mtime_ms) for f in listing.files] == expected
    assert listing.total_bytes == sum(len(data) for data in FILES.values())


def test_state_and_data_files_are_stat_ed_when_asked_log_files_as_listed(tmp_path: Path) -> None:
    build(tmp_path)
    listing = open_storage(str(tmp_path)).list_tree()
    # A live query writes on after the listing: a state file grows, a batch file is rewritten.
    (tmp_path / "state/0/0/1.delta").write_bytes(b"LZ4Block delta, longer now")
    (tmp_path / "offsets/0").write_bytes(b"v1\n{}\n{} and more")
    (tmp_path / "out/date=2024-01-01/part-00001.parquet").unlink()

    state = column(listing.columns, "state/0/0")
    offsets = column(listing.columns, "offsets")
    data = column(listing.columns, "out/date=2024-01-01")

    assert state.stat(state.names.index("1.delta")).size == len(b"LZ4Block delta, longer now")
    assert offsets.stat(offsets.names.index("0")).size == len(FILES["offsets/0"])  # as listed
    # Gone since its name was read: listed (reading it says it is gone), with no size or mtime.
    assert data.names == ("part-00000.parquet", "part-00001.parquet")
    assert (data.sizes[1], data.mtimes_ms[1]) == (0, None)


def test_a_file_stat_ed_alone_keeps_its_stat_when_its_directory_is_stat_ed(tmp_path: Path) -> None:
    build(tmp_path)
    state = column(open_storage(str(tmp_path)).list_tree().columns, "state/0/0")
    first = state.stat(state.names.index("2.snapshot"))
    (tmp_path / "state/0/0/2.snapshot").write_bytes(b"rewritten, longer")

    assert state.sizes[state.names.index("2.snapshot")] == first.size == len(FILES["state/0/0/2.snapshot"])


def test_a_slice_and_a_pickled_copy_carry_the_same_stats(tmp_path: Path) -> None:
    build(tmp_path)
    state = column(open_storage(str(tmp_path)).list_tree().columns, "state/0/0")
    moved = state.rerooted("0/0")

    copy = pickle.loads(pickle.dumps(moved))  # an audit task sent to a Spark executor

    assert (moved.path, moved.names, moved.sizes, moved.mtimes_ms) == (
        "0/0",
        state.names,
        state.sizes,
        state.mtimes_ms,
    )
    assert copy == moved and copy.sizes == state.sizes


def test_a_directory_whose_files_cannot_be_stat_ed_is_named_and_the_walk_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory readable but not searchable (``r--``): its names can be read, its files not
    stat'ed. It is unlisted, as when every file was stat'ed while listed."""
    build(tmp_path)
    denied = str(tmp_path / "state" / "0" / "0")
    real_stat = os.stat

    def stat(path, *args, **kwargs):  # injected fault: this process runs as root
        if os.fspath(path).startswith(denied + "/"):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    listing = open_storage(str(tmp_path)).list_tree()

    assert listing.unlisted == (("state/0/0", errno.EACCES),)
    assert not any(f.path.startswith("state/0/0/") for f in listing.files)


def test_names_that_are_not_utf8_are_stat_ed_by_their_real_name(tmp_path: Path) -> None:
    state = tmp_path / "state" / "0" / "0"
    state.mkdir(parents=True)
    with open(os.path.join(os.fsencode(state), b"1.delta\xff"), "wb") as fh:
        fh.write(b"odd name")
    (state / "1.delta").write_bytes(b"delta")

    listing = open_storage(str(tmp_path)).list_tree()

    assert [(f.path, f.size) for f in listing.files] == [
        ("state/0/0/1.delta", 5),
        ("state/0/0/1.delta\\xff", 8),
    ]


def test_every_directory_stat_ed_as_listed_gives_the_same_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build(tmp_path)
    lazy = open_storage(str(tmp_path)).list_tree()
    monkeypatch.setattr(local_storage, "_stat_eagerly", lambda rel: True)

    eager = open_storage(str(tmp_path)).list_tree()

    assert eager == lazy and eager.columns == lazy.columns


@pytest.mark.parametrize(
    "known",
    [{}, {0: (9, 90)}, {2: (7, 70)}, {0: (9, 90), 3: (6, 60)}],
    ids=["nothing-known", "the-probe", "one-file", "two-files"],
)
def test_a_directory_stat_ed_at_once_asks_each_file_once_and_keeps_what_was_known(
    known: dict[int, tuple[int, int | None]],
) -> None:
    asked: list[int] = []

    def stat_files(indexes: Sequence[int]) -> list[tuple[int, int | None]]:
        got = list(indexes)
        asked.extend(got)
        return [(i, i * 10) for i in got]

    names = tuple(f"{i}.delta" for i in range(5))
    entries = DirEntries.unstatted("state/0/0", names, stat_files, known)

    expected = [known.get(i, (i, i * 10)) for i in range(5)]
    assert list(zip(entries.sizes, entries.mtimes_ms, strict=True)) == expected
    assert sorted(asked) == [i for i in range(5) if i not in known]
    assert entries.mtimes_ms == tuple(m for _, m in expected)  # kept: not asked again
    assert len(asked) == 5 - len(known)
