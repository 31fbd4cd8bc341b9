"""The storage contract, alike on local disk, ``memory://`` and S3 (a real moto server).

Every test runs on the three backends; file names include spaces and non-ASCII characters, and
one test runs everything under a root that has both (``my checkpoints/ckpt é``).
"""

from __future__ import annotations

import os
import time

import pytest

from checkpoint_doctor.errors import (
    CheckpointNotFoundError,
    FileTooLargeError,
    StorageError,
    TargetExistsError,
)
from checkpoint_doctor.model import FileStat
from checkpoint_doctor.reading.storage import open_storage
from tests.storage.conftest import Backend

FILES = {
    "metadata": b'{"id":"q"}',
    "offsets/0": b"v1\n{}\n0",
    "offsets/.0.crc": b"crc\x00\x00\x00\x02\x00\x01\x02\x03\x04",
    "offsets/1 b": b"v1\n{}\n1 and more",
    "state/0/0/1.delta": b"",
    "state/0/0/_metadata/schema": b"\x00\x02v2",
    "caf\u00e9/na\u00efve \u00e9": b"unicode",
}
ROOT = "ckpt"
UNICODE_ROOT = "my checkpoints/ckpt \u00e9"


@pytest.fixture
def root() -> str:
    return ROOT


@pytest.fixture
def populated(backend: Backend, root: str) -> str:
    """Put FILES under the root, plus siblings whose names share the root's prefix."""
    backend.put(f"{root}-sibling/x", b"not mine")
    backend.put(f"{root}2", b"not mine either")
    return backend.put_files(root, FILES)


def test_list_tree_gives_relative_posix_paths_sizes_mtimes_and_dirs(backend: Backend, root: str) -> None:
    before_ms = int(time.time() * 1000)
    backend.put(f"{root}-sibling/x", b"not mine")
    url = backend.put_files(root, FILES)
    after_ms = int(time.time() * 1000)

    listing = open_storage(url, backend.options).list_tree()

    assert [f.path for f in listing.files] == sorted(FILES)
    assert {f.path: f.size for f in listing.files} == {p: len(d) for p, d in FILES.items()}
    for f in listing.files:
        # S3 LastModified has a resolution of one second.
        assert f.mtime_ms is not None and before_ms - 2000 <= f.mtime_ms <= after_ms + 2000, f
    # Object stores have no directories: they are derived from the keys, like on disk.
    assert listing.dirs == ("caf\u00e9", "offsets", "state", "state/0", "state/0/0", "state/0/0/_metadata")


def test_list_tree_etag_on_s3_only(backend: Backend, populated: str) -> None:
    listing = open_storage(populated, backend.options).list_tree()

    etags = {f.etag for f in listing.files}
    if backend.name == "s3":
        assert None not in etags and len(etags) == len(set(FILES.values()))
    else:
        assert etags == {None}


def test_an_empty_directory_lists_empty_where_directories_exist(backend: Backend, root: str) -> None:
    backend.put(f"{root}/x", b"1")
    open_storage(backend.url(root), backend.options).makedirs("empty")
    empty = open_storage(backend.url(f"{root}/empty"), backend.options)

    if backend.name == "s3":
        # An S3 "directory" is a key prefix: with no key below it, it does not exist.
        with pytest.raises(CheckpointNotFoundError):
            empty.list_tree()
    else:
        listing = empty.list_tree()
        assert listing.files == () and listing.dirs == ()


def test_read_returns_the_bytes(backend: Backend, populated: str) -> None:
    store = open_storage(populated, backend.options)

    for rel, data in FILES.items():
        assert store.read(rel) == data


def test_read_of_a_missing_file_names_its_url(backend: Backend, populated: str) -> None:
    store = open_storage(populated, backend.options)

    with pytest.raises(CheckpointNotFoundError) as info:
        store.read("offsets/7")

    assert info.value.url == f"{store.url}/offsets/7"
    assert str(info.value) == f"cannot read {store.url}/offsets/7: no such file or directory; check the path"


def test_read_many_maps_a_missing_file_to_its_error_and_reads_the_others(
    backend: Backend, populated: str
) -> None:
    store = open_storage(populated, backend.options)

    out = store.read_many(
        ["offsets/0", "offsets/9", "caf\u00e9/na\u00efve \u00e9", "offsets/0", "state/0/0/1.delta"]
    )

    assert list(out) == ["offsets/0", "offsets/9", "caf\u00e9/na\u00efve \u00e9", "state/0/0/1.delta"]
    assert out["offsets/0"] == FILES["offsets/0"]
    assert out["caf\u00e9/na\u00efve \u00e9"] == b"unicode"
    assert out["state/0/0/1.delta"] == b""
    missing = out["offsets/9"]
    assert isinstance(missing, CheckpointNotFoundError)
    assert missing.url == f"{store.url}/offsets/9"
    assert store.read_many([]) == {}


def test_stat_and_exists(backend: Backend, populated: str) -> None:
    store = open_storage(populated, backend.options)

    st = store.stat("offsets/1 b")
    assert isinstance(st, FileStat)
    assert (st.path, st.size) == ("offsets/1 b", len(FILES["offsets/1 b"]))
    assert st.mtime_ms is not None
    assert store.stat("offsets/9") is None
    assert store.stat("state/0") is None  # a directory is not a file
    assert store.exists("offsets/1 b") and store.exists("state/0/0") and store.exists("")
    assert not store.exists("offsets/9") and not store.exists("nothing/here")


def test_write_exclusive_creates_then_refuses(backend: Backend, root: str, populated: str) -> None:
    store = open_storage(populated, backend.options)

    store.write_exclusive("commits/2", b"v1\n{}")
    store.write_exclusive("new dir/\u00e9/file", b"x")

    assert backend.get(f"{root}/commits/2") == b"v1\n{}"
    assert backend.get(f"{root}/new dir/\u00e9/file") == b"x"
    with pytest.raises(TargetExistsError) as info:
        store.write_exclusive("commits/2", b"other")
    assert info.value.url == f"{store.url}/commits/2"
    assert "already exists" in str(info.value)
    assert backend.get(f"{root}/commits/2") == b"v1\n{}"
    assert store.read("commits/2") == b"v1\n{}"
    listed = [f.path for f in store.list_tree().files]
    assert sorted(listed) == sorted([*FILES, "commits/2", "new dir/\u00e9/file"])


def test_write_exclusive_leaves_no_temp_file_on_local_disk(backend: Backend, populated: str) -> None:
    store = open_storage(populated, backend.options)
    store.write_exclusive("commits/2", b"v1\n{}")
    with pytest.raises(TargetExistsError):
        store.write_exclusive("commits/2", b"other")
    with pytest.raises(TargetExistsError):
        store.write_exclusive("offsets/0", b"other")

    assert sorted(f.path for f in store.list_tree().files if f.path.startswith(("commits/", "offsets/"))) == [
        "commits/2",
        "offsets/.0.crc",
        "offsets/0",
        "offsets/1 b",
    ]
    if backend.name == "local":
        assert sorted(os.listdir(os.path.join(store.root, "commits"))) == ["2"]


def test_write_exclusive_failing_midway_leaves_nothing_on_local_disk(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ckpt/commits").mkdir(parents=True)
    store = open_storage(str(tmp_path / "ckpt"))

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)  # injected fault
    with pytest.raises(StorageError) as info:
        store.write_exclusive("commits/2", b"v1\n{}")

    assert info.value.url == f"{store.url}/commits/2"
    assert "No space left on device" in str(info.value)
    assert os.listdir(tmp_path / "ckpt/commits") == []


def test_write_creates_or_replaces_and_leaves_no_temp_file(
    backend: Backend, root: str, populated: str
) -> None:
    store = open_storage(populated, backend.options)

    store.write("journal/plan 1.json", b"{}")
    store.write("journal/plan 1.json", b'{"step":2}')

    assert backend.get(f"{root}/journal/plan 1.json") == b'{"step":2}'
    assert [f.path for f in store.list_tree().files if f.path.startswith("journal/")] == [
        "journal/plan 1.json"
    ]


def test_delete_removes_one_file(backend: Backend, root: str, populated: str) -> None:
    store = open_storage(populated, backend.options)

    store.delete("offsets/1 b")

    assert backend.get(f"{root}/offsets/1 b") is None
    assert backend.get(f"{root}/offsets/0") == FILES["offsets/0"]
    assert not store.exists("offsets/1 b")
    with pytest.raises(CheckpointNotFoundError) as info:
        store.delete("offsets/1 b")
    assert info.value.url == f"{store.url}/offsets/1 b"


def test_delete_tree_removes_a_subtree_and_nothing_else(backend: Backend, root: str, populated: str) -> None:
    store = open_storage(populated, backend.options)
    store.write_exclusive("state/0/00", b"prefix-sharing sibling")

    store.delete_tree("state/0/0")

    paths = [f.path for f in store.list_tree().files]
    assert not any(p.startswith("state/0/0/") for p in paths)
    assert "state/0/00" in paths and "offsets/0" in paths
    assert backend.get(f"{root}/state/0/0/1.delta") is None
    assert backend.get(f"{root}/state/0/00") == b"prefix-sharing sibling"


def test_store_urls_and_children(backend: Backend, populated: str) -> None:
    store = open_storage(populated, backend.options)
    child = store.child("state/0")

    assert child.url == f"{store.url}/state/0"
    assert child.url_of("0/1.delta") == f"{store.url}/state/0/0/1.delta"
    assert child.read("0/1.delta") == b""
    assert [f.path for f in child.list_tree().files] == ["0/1.delta", "0/_metadata/schema"]


def test_everything_works_under_a_root_with_a_space_and_unicode(backend: Backend) -> None:
    url = backend.put_files(UNICODE_ROOT, FILES)
    store = open_storage(url, backend.options)

    assert store.url.endswith("my checkpoints/ckpt \u00e9")
    assert [f.path for f in store.list_tree().files] == sorted(FILES)
    assert store.read("caf\u00e9/na\u00efve \u00e9") == b"unicode"
    out = store.read_many(["offsets/1 b", "offsets/9"])
    assert out["offsets/1 b"] == FILES["offsets/1 b"] and isinstance(
        out["offsets/9"], CheckpointNotFoundError
    )
    assert store.stat("offsets/1 b").size == len(FILES["offsets/1 b"])
    assert store.exists("state/0/0") and not store.exists("state/9")
    store.write_exclusive("commits/\u00e9 0", b"v1")
    assert backend.get(f"{UNICODE_ROOT}/commits/\u00e9 0") == b"v1"
    with pytest.raises(TargetExistsError):
        store.write_exclusive("commits/\u00e9 0", b"v2")
    store.delete("commits/\u00e9 0")
    store.delete_tree("state")
    assert backend.get(f"{UNICODE_ROOT}/commits/\u00e9 0") is None
    assert [f.path for f in store.list_tree().files] == sorted(p for p in FILES if not p.startswith("state/"))


def test_atomic_create_where_the_backend_gives_it(backend: Backend, populated: str) -> None:
    store = open_storage(populated, backend.options)

    # Local disk (link) and S3 (If-None-Match) create atomically; the generic fsspec path checks first.
    assert store.atomic_create is (backend.name != "memory")


def test_contains_sees_its_own_subtree_only(backend: Backend, root: str, populated: str) -> None:
    store = open_storage(populated, backend.options)

    assert store.contains(store)
    assert store.contains(store.child("state/0"))
    assert store.contains(open_storage(backend.url(f"{root}/offsets/"), backend.options))
    assert not store.contains(open_storage(backend.url(f"{root}-sibling"), backend.options))
    assert not store.contains(open_storage(backend.url(f"{root}2"), backend.options))
    assert not store.child("state").contains(store)


def test_reads_stop_at_max_bytes(backend: Backend, populated: str) -> None:
    store = open_storage(populated, backend.options)
    size = len(FILES["offsets/1 b"])

    assert store.read("offsets/1 b", max_bytes=size) == FILES["offsets/1 b"]
    with pytest.raises(FileTooLargeError) as info:
        store.read("offsets/1 b", max_bytes=size - 1)
    out = store.read_many(["offsets/1 b", "offsets/0", "offsets/9"], max_bytes=size - 1)

    assert info.value.url == f"{store.url}/offsets/1 b"
    assert info.value.limit == size - 1 and info.value.size >= size
    assert str(info.value).startswith(f"cannot read {store.url}/offsets/1 b: ")
    assert isinstance(out["offsets/1 b"], FileTooLargeError)
    assert out["offsets/0"] == FILES["offsets/0"]
    assert isinstance(out["offsets/9"], CheckpointNotFoundError)


def test_read_heads_reads_the_first_bytes_only(backend: Backend, populated: str) -> None:
    store = open_storage(populated, backend.options)

    out = store.read_heads(["offsets/1 b", "state/0/0/1.delta", "metadata", "offsets/9"], 4)

    assert out["offsets/1 b"] == FILES["offsets/1 b"][:4]
    assert out["state/0/0/1.delta"] == b""  # an empty file (S3 answers its range with 416)
    assert out["metadata"] == FILES["metadata"][:4]
    assert isinstance(out["offsets/9"], CheckpointNotFoundError)


def test_subdirs_names_the_directories_directly_below_and_nothing_else(
    backend: Backend, populated: str
) -> None:
    store = open_storage(populated, backend.options)

    assert store.subdirs() == sorted(["café", "offsets", "state"])
    assert store.subdirs("state") == ["0"]
    assert store.subdirs("offsets") == []
    assert store.subdirs("no such directory") == []
