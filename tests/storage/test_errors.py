"""Backend errors become the project's exceptions, naming the URL and saying what to do."""

from __future__ import annotations

import importlib.util

import pytest
from fsspec.registry import known_implementations

from checkpoint_doctor.errors import (
    CheckpointNotFoundError,
    MissingDependencyError,
    NotADirectoryStorageError,
    UsageError,
)
from checkpoint_doctor.storage import open_store, parse_storage_options
from tests.storage.conftest import Backend


def test_missing_checkpoint_path(backend: Backend) -> None:
    backend.put("elsewhere/metadata", b"{}")
    url = backend.url("no/such checkpoint")

    with pytest.raises(CheckpointNotFoundError) as info:
        open_store(url, backend.options).list_tree()

    assert info.value.url == url
    assert str(info.value) == f"cannot list {url}: no such file or directory; check the path"


def test_a_file_where_the_checkpoint_directory_should_be(backend: Backend) -> None:
    backend.put("ckpt/metadata", b'{"id":"q"}')
    url = backend.url("ckpt/metadata")

    with pytest.raises(NotADirectoryStorageError) as info:
        open_store(url, backend.options).list_tree()

    assert info.value.url == url
    assert str(info.value) == f"cannot list {url}: it is a file, not a directory; pass the checkpoint directory"


def test_missing_extra_names_the_url_the_package_and_the_extra() -> None:
    # gcsfs is not a dependency of the test environment: fsspec knows gs:// but cannot import it.
    assert importlib.util.find_spec("gcsfs") is None

    with pytest.raises(MissingDependencyError) as info:
        open_store("gs://bucket/ckpt")

    assert (info.value.extra, info.value.module) == ("gcs", "gcsfs")
    assert str(info.value) == (
        "gs://bucket/ckpt needs the 'gcsfs' package, which is not installed; "
        "install it with: pip install 'checkpoint-doctor[gcs]'"
    )


def test_missing_backend_without_an_extra_names_the_package_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # A protocol fsspec knows, whose backend module is absent, and for which there is no extra.
    monkeypatch.setitem(
        known_implementations,
        "cdtest",
        {"class": "cd_absent_backend.core.AbsentFileSystem", "err": "Install cd_absent_backend to access cdtest://"},
    )

    with pytest.raises(MissingDependencyError) as info:
        open_store("cdtest://container/ckpt")

    assert info.value.module == "cd_absent_backend"
    assert str(info.value) == (
        "cdtest://container/ckpt needs the 'cd_absent_backend' package, which is not installed; "
        "install it with: pip install cd_absent_backend"
    )


def test_unknown_protocol_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as info:
        open_store("nosuchproto://x/y")

    assert "nosuchproto" in str(info.value) and "nosuchproto://x/y" in str(info.value)


def test_storage_options_plain_and_dotted() -> None:
    options = parse_storage_options(
        [
            "endpoint_url=http://127.0.0.1:9000",
            "region_name=eu-west-1",
            "anon=false",
            "key=12345",
            "config_kwargs.connect_timeout=2",
            "config_kwargs.read_timeout=0.5",
            "config_kwargs.retries.total_max_attempts=1",
            "config_kwargs.retries.mode=standard",
        ]
    )

    assert options == {
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:9000", "region_name": "eu-west-1"},
        "anon": False,
        "key": "12345",  # plain values stay text: a secret may well be all digits
        "config_kwargs": {"connect_timeout": 2, "read_timeout": 0.5, "retries": {"total_max_attempts": 1, "mode": "standard"}},
    }


@pytest.mark.parametrize("pair", ["novalue", "=x", "a..b=1", "a.=1"])
def test_malformed_storage_option(pair: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_storage_options([pair])

    assert repr(pair) in str(info.value) and "key=value" in str(info.value)


def test_dotted_storage_option_clashing_with_a_plain_one() -> None:
    with pytest.raises(UsageError) as info:
        parse_storage_options(["config_kwargs=x", "config_kwargs.connect_timeout=1"])

    assert "config_kwargs.connect_timeout=1" in str(info.value)
