"""``checkpoint-doctor inspect`` end to end on S3 (a real moto server, through s3fs), compared with
the same checkpoint on local disk and ``memory://``."""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from checkpoint_doctor.cli import main
from tests.s3.conftest import S3, Store
from tests.s3.server import seed_objects
from tests.scenarios import FIXTURES, all_scenarios
from tests.storage.builders import (
    checkpoint_files,
    copy_files_only,
    read_files,
    write_files,
)
from tests.storage.conftest import MemoryBackend

VOLATILE = ("mtime_ms", "etag", "generated_at")


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def comparable(stdout: str) -> Any:
    """Return the JSON result without what legitimately differs between backends."""
    doc = json.loads(stdout)
    result = doc.get("result")
    if isinstance(result, dict):
        result.pop("checkpoint", None)
        result.get("files", {}).pop("fingerprint", None)
        if isinstance(result.get("sink"), dict):
            result["sink"].pop("url", None)
    return _drop(doc)


def _drop(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_drop(v) for v in value]
    return value


@pytest.fixture
def memory() -> Iterator[MemoryBackend]:
    backend = MemoryBackend()
    yield backend
    backend.cleanup()


def inspect_json(capsys: pytest.CaptureFixture[str], url: str, *extra: str) -> tuple[int, str, str]:
    return run_cli(capsys, "inspect", url, "--format", "json", *extra)


def _store_options(store: Store) -> list[str]:
    """The options pointing the CLI at a store: S3's endpoint; Azure and GCS take theirs from the
    environment (AZURE_STORAGE_CONNECTION_STRING, STORAGE_EMULATOR_HOST) as an operator sets it."""
    return ["--storage-option", f"endpoint_url={store.endpoint}"] if store.name == "s3" else []


def test_inspect_on_s3_gives_the_local_report(
    store: Store, memory: MemoryBackend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local = write_files(tmp_path / "ckpt", checkpoint_files())
    store.fs.put(str(local) + "/", store.key("prefix"), recursive=True)
    memory_url = memory.put_tree(local, "ckpt")

    s3_code, s3_out, s3_err = inspect_json(capsys, store.url("prefix"), *_store_options(store))
    local_code, local_out, _ = inspect_json(capsys, str(local))
    memory_code, memory_out, _ = inspect_json(capsys, memory_url)

    assert (s3_code, s3_err) == (0, "")
    assert local_code == memory_code == 0
    report = json.loads(s3_out)["result"]
    assert report["checkpoint"] == store.url("prefix")  # shown back as given
    assert report["query_id"] == "0f7cc2a5-6a4b-4c41-9a56-2f3c8d1e7b90"
    assert (report["offsets"]["ranges"], report["commits"]["ranges"]) == ([[0, 2]], [[0, 1]])
    assert report["latest_batch"]["batch_id"] == 2 and report["latest_batch"]["committed"] is False
    assert comparable(s3_out) == comparable(local_out) == comparable(memory_out)


@pytest.mark.parametrize("scenario", ["spark-4.3.0/offsets-latest-empty", "spark-4.3.0/window_agg"])
def test_diagnose_on_a_store_gives_the_local_verdict_and_exit_code(
    store: Store, scenario: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same verdict and exit code as on local disk (the files only: no store keeps .crc files
    or empty directories)."""
    local = tmp_path / "local"
    copy_files_only(FIXTURES / scenario / "checkpoint", local)
    for crc in list(local.rglob(".*.crc")):
        crc.unlink()
    store.fs.put(str(local) + "/", store.key("job/checkpoint"), recursive=True)
    args = ["--spark", "4.3", "--live-window", "0", "--format", "json"]

    code, out, err = run_cli(capsys, "diagnose", store.url("job/checkpoint"), *args, *_store_options(store))
    local_code, local_out, local_err = run_cli(capsys, "diagnose", str(local), *args)

    assert (code, err) == (local_code, local_err)
    assert json.loads(out)["result"]["checkpoint"] == store.url("job/checkpoint")
    remote, here = (
        # (on S3, Spark's words name it s3a://, the scheme Spark reads S3 with)
        comparable(
            out.replace(store.url("job/checkpoint"), "<cp>").replace(
                f"s3a://{store.key('job/checkpoint')}", "<cp>"
            )
        ),
        # Spark names a local file file:/path (Hadoop's Path), a remote one by its URL
        comparable(local_out.replace(f"file:{local}", "<cp>").replace(str(local), "<cp>")),
    )
    assert remote == here


def test_inspect_table_on_s3(s3: S3, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    local = write_files(tmp_path / "ckpt", checkpoint_files())
    s3.fs.put(str(local), s3.key("my checkpoints/ckpt \u00e9"), recursive=True)
    url = s3.url("my checkpoints/ckpt \u00e9")

    code, out, err = run_cli(capsys, "inspect", url, "--storage-option", f"endpoint_url={s3.endpoint}")

    assert (code, err) == (0, "")
    assert url in out and "0f7cc2a5-6a4b-4c41-9a56-2f3c8d1e7b90" in out


def test_inspect_missing_prefix_exits_8_with_one_line(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    url = store.url("no/such/prefix")

    code, out, err = run_cli(capsys, "inspect", url, *_store_options(store))

    assert code == 8
    assert out == ""
    assert err == f"checkpoint-doctor: error: cannot list {url}: no such file or directory; check the path\n"


def test_inspect_missing_prefix_json(s3: S3, capsys: pytest.CaptureFixture[str]) -> None:
    url = s3.url("no/such/prefix")

    code, out, err = inspect_json(capsys, url, "--storage-option", f"endpoint_url={s3.endpoint}")

    assert code == 8
    assert json.loads(out)["error"] == {
        "type": "CheckpointNotFoundError",
        "message": f"cannot list {url}: no such file or directory; check the path",
    }
    assert len(err.splitlines()) == 1


def test_inspect_unreachable_endpoint_is_one_line(s3: S3, capsys: pytest.CaptureFixture[str]) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
    port = sock.getsockname()[1]
    try:
        code, out, err = run_cli(
            capsys,
            "inspect",
            s3.url("ckpt"),
            "--storage-option",
            f"endpoint_url=http://127.0.0.1:{port}",
            "--storage-option",
            "config_kwargs.connect_timeout=1",
            "--storage-option",
            "config_kwargs.retries.total_max_attempts=1",
        )
    finally:
        sock.close()

    assert (code, out) == (8, "")
    assert len(err.splitlines()) == 1
    assert err.startswith(f"checkpoint-doctor: error: cannot list {s3.url('ckpt')}: endpoint unreachable (")
    assert err.endswith("; check the network and --storage-option endpoint_url\n")


def test_inspect_no_credentials_exits_8(
    s3: S3, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")

    code, out, err = run_cli(
        capsys, "inspect", s3.url("ckpt"), "--storage-option", f"endpoint_url={s3.endpoint}"
    )

    assert (code, out) == (8, "")
    assert err.startswith(
        f"checkpoint-doctor: error: cannot list {s3.url('ckpt')}: no credentials found; set AWS_ACCESS_KEY_ID"
    )


SPARK_VERSIONS = sorted({s.path.parent.name for s in all_scenarios()})


def test_fixtures_exist() -> None:
    assert SPARK_VERSIONS, f"no fixture scenarios under {FIXTURES}"


@pytest.mark.parametrize("spark", SPARK_VERSIONS)
def test_inspect_every_fixture_alike_on_local_memory_and_s3(
    spark: str,
    s3: S3,
    memory: MemoryBackend,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    subtests: Any,
) -> None:
    """Each scenario of a Spark version, one subtest each.

    ``memory://`` holds the scenario as it is on disk, empty directories included
    (``facts.empty_dirs``); S3 cannot hold empty directories, so it is compared with a local copy of
    the regular files only. The files reach S3 through the moto server's backend rather than
    thousands of PUTs (the literal checkpoint above is uploaded with ``fs.put``); everything
    measured goes through s3fs.
    """
    endpoint = ("--storage-option", f"endpoint_url={s3.endpoint}")
    for s in (s for s in all_scenarios() if s.path.parent.name == spark):
        scenario, name = s.path, s.id
        parts = [part for part in ("checkpoint", "sink") if (scenario / part).is_dir()]
        empty_dirs = s.data.get("facts", {}).get("empty_dirs", [])
        full = files_only = scenario  # read in place: inspect never writes
        if empty_dirs:
            full, files_only = tmp_path / name / "full", tmp_path / name / "files"
            for part in parts:
                shutil.copytree(scenario / part, full / part)
                copy_files_only(scenario / part, files_only / part)
            for empty in empty_dirs:
                (full / empty).mkdir(parents=True, exist_ok=True)
        files = {
            f"{part}/{rel}": data for part in parts for rel, data in read_files(files_only / part).items()
        }
        memory.put_tree(full, name)
        seed_objects(s3.bucket, name, files)
        with subtests.test(msg=name):
            bases = {
                "full": str(full),
                "files": str(files_only),
                "memory": memory.url(name),
                "s3": s3.url(name),
            }
            results = {}
            for where, base in bases.items():
                if where == "files" and base == bases["full"]:
                    # no empty directory to leave out: the same command on the same directory
                    results["files"] = results["full"]
                    continue
                extra = ["--sink-path", f"{base}/sink"] if "sink" in parts else []
                if where == "s3":
                    extra += endpoint
                code, out, err = inspect_json(capsys, f"{base}/checkpoint", *extra)
                results[where] = (code, comparable(out.replace(base, "<base>")), err.replace(base, "<base>"))
            assert results["s3"][0] in (0, 1, 4, 8), results["s3"]
            assert results["s3"] == results["files"], f"{name}: S3 and local disk differ"
            assert results["memory"] == results["full"], f"{name}: memory:// and local disk differ"


def test_audit_on_a_store_gives_the_local_records(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``audit`` of a prefix finds the same checkpoints with the same verdicts, codes and exit code as
    on local disk, each named by its URL as the store spells it."""
    local = tmp_path / "fleet"
    for name, scenario in {"a": "offsets-latest-empty", "b": "window_agg"}.items():
        copy_files_only(FIXTURES / "spark-4.3.0" / scenario / "checkpoint", local / name / "checkpoint")
    store.fs.put(str(local) + "/", store.key("fleet"), recursive=True)

    def records(code_out_err: tuple[int, str, str]) -> tuple[int, list[tuple[str, str, str, list[str]]]]:
        code, out, _ = code_out_err
        rows = [json.loads(line) for line in out.splitlines()]
        # in the order they finished (concurrently): by path
        return code, sorted(
            (r["url"], r["path"], r["verdict"], r["codes"]) for r in rows if r["kind"] == "checkpoint"
        )

    args = ["--format", "jsonl", "--live-window", "0"]
    remote = records(run_cli(capsys, "audit", store.url("fleet"), *args, *_store_options(store)))
    here = records(run_cli(capsys, "audit", str(local), *args))

    assert remote[0] == here[0] == 4
    assert [(p, v, c) for _, p, v, c in remote[1]] == [(p, v, c) for _, p, v, c in here[1]]
    assert [u for u, *_ in remote[1]] == [store.url("fleet/a/checkpoint"), store.url("fleet/b/checkpoint")]
