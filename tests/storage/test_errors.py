"""Backend errors become the project's exceptions, naming the URL and saying what to do."""

from __future__ import annotations

import sys

import pytest
from fsspec.registry import known_implementations

from checkpoint_doctor.errors import (
    CheckpointNotFoundError,
    MissingDependencyError,
    NotADirectoryStorageError,
    UsageError,
)
from checkpoint_doctor.reading.storage import open_storage, parse_storage_options
from tests.storage.conftest import Backend


def test_missing_checkpoint_path(backend: Backend) -> None:
    backend.put("elsewhere/metadata", b"{}")
    url = backend.url("no/such checkpoint")

    with pytest.raises(CheckpointNotFoundError) as info:
        open_storage(url, backend.options).list_tree()

    assert info.value.url == url
    assert str(info.value) == f"cannot list {url}: no such file or directory; check the path"


def test_a_file_where_the_checkpoint_directory_should_be(backend: Backend) -> None:
    backend.put("ckpt/metadata", b'{"id":"q"}')
    url = backend.url("ckpt/metadata")

    with pytest.raises(NotADirectoryStorageError) as info:
        open_storage(url, backend.options).list_tree()

    assert info.value.url == url
    assert (
        str(info.value) == f"cannot list {url}: it is a file, not a directory; pass the checkpoint directory"
    )


@pytest.mark.parametrize(
    ("url", "modules", "extra"),
    [
        ("gs://bucket/ckpt", ("gcsfs", "gcsfs.core"), "gcs"),
        ("abfss://c@acct.dfs.core.windows.net/ckpt", ("adlfs",), "azure"),
        ("wasbs://c@acct.blob.core.windows.net/ckpt", ("adlfs",), "azure"),
    ],
)
def test_missing_extra_names_the_url_the_package_and_the_extra(
    url: str, modules: tuple[str, ...], extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The test extra installs gcsfs and adlfs (tests/s3/ runs them against emulators): an operator
    # without them is one whose import fails (None in sys.modules makes ``import`` raise).
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)

    with pytest.raises(MissingDependencyError) as info:
        open_storage(url)

    assert (info.value.extra, info.value.module) == (extra, modules[0])
    assert str(info.value) == (
        f"{url} needs the '{modules[0]}' package, which is not installed; "
        f"install it with: pip install 'checkpoint-doctor[{extra}]'"
    )


def test_missing_backend_without_an_extra_names_the_package_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A protocol fsspec knows, whose backend module is absent, and for which there is no extra.
    monkeypatch.setitem(
        known_implementations,
        "cdtest",
        {
            "class": "cd_absent_backend.core.AbsentFileSystem",
            "err": "Install cd_absent_backend to access cdtest://",
        },
    )

    with pytest.raises(MissingDependencyError) as info:
        open_storage("cdtest://container/ckpt")

    assert info.value.module == "cd_absent_backend"
    assert str(info.value) == (
        "cdtest://container/ckpt needs the 'cd_absent_backend' package, which is not installed; "
        "install it with: pip install cd_absent_backend"
    )


def test_unknown_protocol_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as info:
        open_storage("nosuchproto://x/y")

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
        "config_kwargs": {
            "connect_timeout": 2,
            "read_timeout": 0.5,
            "retries": {"total_max_attempts": 1, "mode": "standard"},
        },
    }


@pytest.mark.parametrize(
    ("pair", "why"),
    [
        ("novalue", "it has no '=' (its text is not shown: it may be a secret)"),
        ("=x", "its key is empty"),
        ("a..b=1", "key 'a..b' has an empty part"),
        ("a.=1", "key 'a.' has an empty part"),
    ],
)
def test_malformed_storage_option(pair: str, why: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_storage_options(["anon=false", pair])

    assert str(info.value) == (
        f"--storage-option number 2 is not key=value: {why}; "
        "e.g. --storage-option endpoint_url=http://127.0.0.1:9000"
    )


def test_dotted_storage_option_clashing_with_a_plain_one() -> None:
    with pytest.raises(UsageError) as info:
        parse_storage_options(["config_kwargs=x", "config_kwargs.connect_timeout=1"])

    assert str(info.value) == (
        "--storage-option config_kwargs.connect_timeout clashes with --storage-option config_kwargs, "
        "which sets a plain value; give config_kwargs either as one value or as dotted keys, not both"
    )


def test_plain_storage_option_clashing_with_dotted_ones() -> None:
    with pytest.raises(UsageError) as info:
        parse_storage_options(["config_kwargs.connect_timeout=1", "config_kwargs=x"])

    assert "config_kwargs" in str(info.value) and "clashes" in str(info.value)


SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYzEXAMPLEKEY"


@pytest.mark.parametrize(
    "pairs",
    [
        [SECRET],  # the secret pasted without its key
        [f"secret={SECRET}", "secret.x=1"],  # a dotted key below a plain secret
        [f"secret.x={SECRET}", "secret=1"],
        [f"key={SECRET}", "=" + SECRET],
        [f"..={SECRET}"],
    ],
)
def test_storage_option_errors_never_echo_a_value(pairs: list[str]) -> None:
    with pytest.raises(UsageError) as info:
        parse_storage_options(pairs)

    assert SECRET not in str(info.value)


def test_the_cli_never_echoes_a_storage_option_value(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    from checkpoint_doctor.cli import main

    for pairs in ([SECRET], [f"secret={SECRET}", "secret.x=1"]):
        args = ["inspect", str(tmp_path)]
        for pair in pairs:
            args += ["--storage-option", pair]

        assert main(args) == 2
        out, err = capsys.readouterr()
        assert SECRET not in out + err and "storage-option" in err


def test_every_extra_an_error_names_is_declared() -> None:
    import configparser
    from pathlib import Path

    from checkpoint_doctor.reading.storage.errors import EXTRA_FOR_PROTOCOL

    setup = configparser.ConfigParser()
    setup.read(Path(__file__).resolve().parents[2] / "setup.cfg")
    extras = setup["options.extras_require"]
    for protocol, (extra, package) in EXTRA_FOR_PROTOCOL.items():
        assert extra in extras, protocol
        assert package in extras[extra], protocol


def test_s3_defaults_sit_under_what_the_operator_sets() -> None:
    from checkpoint_doctor.reading.storage.options import S3_CONFIG_DEFAULTS, with_s3_defaults

    assert with_s3_defaults({})["config_kwargs"] == S3_CONFIG_DEFAULTS
    assert S3_CONFIG_DEFAULTS == {
        "connect_timeout": 5,
        "read_timeout": 10,
        "retries": {"total_max_attempts": 2, "mode": "standard"},
    }
    given = parse_storage_options(
        ["config_kwargs.read_timeout=60", "config_kwargs.retries.max_attempts=4", "anon=true"]
    )
    assert with_s3_defaults(given) == {
        "anon": True,
        "config_kwargs": {"connect_timeout": 5, "read_timeout": 60, "retries": {"max_attempts": 4}},
    }
    assert with_s3_defaults({"config_kwargs": "left alone"}) == {"config_kwargs": "left alone"}
