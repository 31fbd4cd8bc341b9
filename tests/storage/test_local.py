"""What only the local disk has: names that are not UTF-8, FIFOs, directories that cannot be listed,
symlinks and ``file://`` URLs."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from checkpoint_doctor.errors import AccessDeniedError, StorageError
from checkpoint_doctor.reading.storage import open_storage, printable_name


def test_printable_name_escapes_only_what_is_not_utf8() -> None:
    assert printable_name("offsets") == "offsets"
    assert printable_name("caf\u00e9 \u2603") == "caf\u00e9 \u2603"
    assert printable_name(os.fsdecode(b"a\xff\xfeb")) == "a\\xff\\xfeb"
    assert printable_name("\ud800x") == "\\ud800x"  # a lone surrogate no file system decoding made


def test_names_that_are_not_utf8_are_listed_escaped_and_stay_usable(tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    (root / "offsets").mkdir(parents=True)
    (root / "offsets" / "0").write_bytes(b"v1\n{}")
    os.mkdir(os.path.join(os.fsencode(root), b"d\xff"))
    with open(os.path.join(os.fsencode(root), b"d\xff", b"f\xfe"), "wb") as fh:
        fh.write(b"inner")
    with open(os.path.join(os.fsencode(root), b"offsets", b"\xff\xfe"), "wb") as fh:
        fh.write(b"odd")
    store = open_storage(str(root))

    listing = store.list_tree()

    assert [f.path for f in listing.files] == ["d\\xff/f\\xfe", "offsets/0", "offsets/\\xff\\xfe"]
    assert listing.dirs == ("d\\xff", "offsets")
    for f in listing.files:
        f.path.encode("utf-8")  # printable, hashable, serialisable: no surrogate left
    assert store.read("offsets/\\xff\\xfe") == b"odd"
    assert store.child("d\\xff").read("f\\xfe") == b"inner"
    assert store.stat("d\\xff/f\\xfe").size == 5
    store.delete("offsets/\\xff\\xfe")
    assert os.listdir(os.path.join(os.fsencode(root), b"offsets")) == [b"0"]


def test_a_fifo_where_a_file_was_listed_is_an_error_not_a_hang(tmp_path: Path) -> None:
    (tmp_path / "offsets").mkdir()
    os.mkfifo(tmp_path / "offsets" / "5")
    store = open_storage(str(tmp_path))

    assert store.list_tree().files == ()  # not a regular file: not part of a checkpoint
    with pytest.raises(StorageError) as info:
        store.read("offsets/5", max_bytes=100)

    assert (
        str(info.value) == f"cannot read {tmp_path}/offsets/5: not a regular file; remove it or move it away"
    )


def test_a_directory_that_cannot_be_listed_is_named_and_the_walk_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for rel in ("a/offsets/0", "a/state/0/0/1.delta", "b/metadata"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"x")
    denied = str(tmp_path / "a" / "state" / "0")
    real_scandir = os.scandir

    def scandir(path):  # injected fault: this process runs as root, so chmod cannot deny it
        # (an int is a directory fd: pytest's removal of tmp_path at teardown lists by fd)
        if not isinstance(path, int) and os.fspath(path) == denied:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    listing = open_storage(str(tmp_path)).list_tree()

    assert [f.path for f in listing.files] == ["a/offsets/0", "b/metadata"]
    assert listing.unlisted == (("a/state/0", errno.EACCES),)
    assert "a/state/0" in listing.dirs


def test_a_root_that_cannot_be_listed_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def scandir(path):  # injected fault
        raise PermissionError(errno.EACCES, "Permission denied", path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(AccessDeniedError) as info:
        open_storage(str(tmp_path)).list_tree()

    assert info.value.url == str(tmp_path)


def test_contains_sees_through_file_urls_and_symlinks(tmp_path: Path) -> None:
    (tmp_path / "ckpt" / "offsets").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "ckpt" / "offsets")
    checkpoint = open_storage(str(tmp_path / "ckpt"))

    assert checkpoint.contains(open_storage(f"file://{tmp_path}/ckpt/backup"))
    assert checkpoint.contains(open_storage(str(tmp_path / "link" / "x")))
    assert open_storage(f"file://{tmp_path}/ckpt").contains(open_storage(str(tmp_path / "ckpt" / "y")))
    assert not checkpoint.contains(open_storage(str(tmp_path / "elsewhere")))
    assert not checkpoint.contains(open_storage(str(tmp_path / "ckpt-2")))


def test_symlinks_are_followed_as_hadoop_follows_them_and_loops_are_not(tmp_path: Path) -> None:
    """A ``state/`` on another volume, a batch file linked in; a link back to an
    ancestor (and a loop through two links) is listed once, not forever."""
    elsewhere = tmp_path / "volume"
    (elsewhere / "state" / "0" / "0").mkdir(parents=True)
    (elsewhere / "state" / "0" / "0" / "1.delta").write_bytes(b"LZ4Block")
    (elsewhere / "batch").write_bytes(b"v1\n{}")
    root = tmp_path / "ckpt"
    (root / "offsets").mkdir(parents=True)
    (root / "offsets" / "0").write_bytes(b"v1\n{}")
    (root / "state").symlink_to(elsewhere / "state")
    (root / "offsets" / "1").symlink_to(elsewhere / "batch")
    (root / "offsets" / "up").symlink_to(root)  # a loop back to the root
    (root / "a").mkdir()
    (root / "b").mkdir()
    (root / "a" / "to-b").symlink_to(root / "b")  # a loop through two links
    (root / "b" / "to-a").symlink_to(root / "a")
    (root / "offsets" / "dangling").symlink_to(tmp_path / "nowhere")

    listing = open_storage(str(root)).list_tree()

    assert [(f.path, f.size) for f in listing.files] == [
        ("offsets/0", 5),
        ("offsets/1", 5),
        ("state/0/0/1.delta", 8),
    ]
    assert listing.dirs == ("a", "a/to-b", "b", "b/to-a", "offsets", "state", "state/0", "state/0/0")
    assert open_storage(str(root)).read("state/0/0/1.delta") == b"LZ4Block"
