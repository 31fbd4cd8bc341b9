"""What undo gives back besides bytes, through the storage: an empty directory removed, a file's
modification time, mode and owner, a symbolic link, the tool's temp files. Local disk has them all;
on ``memory://`` and S3 (a real moto server) they do nothing, and no object is a link.
"""

from __future__ import annotations

import os
import stat

import pytest

from checkpoint_doctor.errors import StorageError, TargetExistsError
from checkpoint_doctor.reading.storage import open_storage
from tests.storage.conftest import Backend

FILES = {"offsets/0": b"v1\n{}\n0", "offsets/1": b"v1\n{}\n1", "state/0/0/1.delta": b"delta"}


@pytest.fixture
def populated(backend: Backend) -> str:
    return backend.put_files("ckpt", FILES)


def test_remove_dir_removes_an_empty_directory_and_refuses_a_full_one(
    backend: Backend, populated: str
) -> None:
    store = open_storage(populated, backend.options)
    if backend.name == "local":
        store.makedirs("state/0/7")
        store.remove_dir("state/0/7")
        with pytest.raises(StorageError) as info:
            store.remove_dir("offsets")
        assert info.value.url == f"{store.url}/offsets"
    else:
        store.remove_dir("offsets")  # an object store has no directory to remove

    assert "state/0/7" not in store.list_tree().dirs
    assert [f.path for f in store.list_tree().files] == sorted(FILES)


def test_set_mtime_sets_a_local_files_time_and_leaves_an_object_as_it_is(
    backend: Backend, populated: str
) -> None:
    store = open_storage(populated, backend.options)
    before = store.stat("offsets/0")

    store.set_mtime("offsets/0", 1_600_000_000_123)

    after = store.stat("offsets/0")
    assert after is not None and before is not None
    assert after.mtime_ms == (1_600_000_000_123 if backend.name == "local" else before.mtime_ms)
    assert store.read("offsets/0") == FILES["offsets/0"]


def test_ownership_is_read_and_given_on_local_disk_only(backend: Backend, populated: str) -> None:
    store = open_storage(populated, backend.options)

    owner = store.ownership("offsets/0")
    if backend.name != "local":
        store.set_ownership("offsets/0", (0o600, 0, 0))
        assert owner is None and store.ownership("offsets/0") is None
        return
    assert owner is not None and owner[1:] == (os.getuid(), os.getgid())
    store.set_ownership("offsets/0", (0o640, os.getuid(), os.getgid()))
    assert store.ownership("offsets/0") == (0o640, os.getuid(), os.getgid())
    assert store.ownership("offsets/9") is None


def test_links_are_read_made_and_left_alone_on_local_disk(
    backend: Backend, populated: str, tmp_path: os.PathLike[str]
) -> None:
    store = open_storage(populated, backend.options)
    if backend.name != "local":
        assert store.link_target("offsets/0") is None
        with pytest.raises(StorageError):
            store.make_link("offsets/2", "1")
        with pytest.raises(StorageError):
            store.read_link_target("offsets/2", "1")
        return
    outside = os.path.join(str(tmp_path), "elsewhere")
    with open(outside, "wb") as fh:
        fh.write(b"kept elsewhere")
    os.chmod(outside, 0o644)

    store.make_link("offsets/2", outside)
    store.make_link("offsets/3", "1")  # relative to the link's directory, as the kernel reads it

    assert store.link_target("offsets/2") == outside and store.link_target("offsets/0") is None
    assert store.read_link_target("offsets/3", "1") == FILES["offsets/1"]
    store.delete("offsets/3")  # the link goes; what it pointed to can still be read through it
    assert store.read_link_target("offsets/3", "1", max_bytes=len(FILES["offsets/1"])) == FILES["offsets/1"]
    with pytest.raises(StorageError):
        store.read_link_target("offsets/3", "1", max_bytes=2)
    with pytest.raises(TargetExistsError):
        store.make_link("offsets/2", "0")
    # Times and modes of a link's target are not the store's to change.
    store.set_mtime("offsets/2", 1_000)
    store.set_ownership("offsets/2", (0o600, os.getuid(), os.getgid()))
    assert stat.S_IMODE(os.stat(outside).st_mode) == 0o644 and os.stat(outside).st_mtime > 1_000


def test_temps_beside_finds_the_tools_own_temp_files_on_local_disk(backend: Backend, populated: str) -> None:
    store = open_storage(populated, backend.options)
    temp = "offsets/.1.0123abcd-0123-4567-89ab-0123456789ab.cdtmp"
    backend.put(f"ckpt/{temp}", b"half")
    backend.put("ckpt/offsets/.1.not-a-uuid.cdtmp", b"someone else's")

    found = store.temps_beside("offsets/1")

    assert found == ([temp] if backend.name == "local" else [])
