"""A fleet of real Spark checkpoints to audit, laid out as operators leave them: under a prefix with
spaces, nested (a checkpoint inside a checkpoint, a checkpoint inside a sink's output directory), next
to a Delta table, garbage files and a garbage checkpoint. Built on local disk, then placed on
``memory://`` or the moto S3 server as a test needs."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.s3.conftest import S3, moto_server, s3, s3_observer  # noqa: F401 - fixtures shared with tests/s3
from tests.s3.server import seed_objects
from tests.storage.builders import read_files, write_files
from tests.storage.conftest import MemoryBackend

SPARK = FIXTURES / "spark-4.3.0"
PREFIX = "fleet root/prod"

#: relative path in the fleet -> (fixture scenario, part), the directories a test expects to find
CHECKPOINTS = {
    "team a/window agg/checkpoint": ("window_agg", "checkpoint"),
    "team a/window agg/checkpoint/backup copy": ("stateless", "checkpoint"),
    "team b/out/_checkpoint": ("file_to_file", "checkpoint"),
    "team b/broken tail": ("missing-prev-offsets", "checkpoint"),
    "team c/commits two behind": ("commits-two-behind", "checkpoint"),
}
SINKS = {"team b/out": ("file_to_file", "sink")}
GARBAGE_CHECKPOINT = "team c/garbage ckpt"
EXPECTED_EXIT = {
    "team a/window agg/checkpoint": 0,
    "team a/window agg/checkpoint/backup copy": 0,
    "team b/out/_checkpoint": 0,
    "team b/broken tail": 4,
    "team c/commits two behind": 1,
    GARBAGE_CHECKPOINT: 4,
}
DELTA_TABLE = "delta/events"
GARBAGE_DIR = "scratch"


def fleet_files() -> dict[str, bytes]:
    """Return every file of the fleet, relative path -> bytes."""
    files: dict[str, bytes] = {}
    for rel, (scenario, part) in {**CHECKPOINTS, **SINKS}.items():
        for path, data in read_files(SPARK / scenario / part).items():
            files[f"{rel}/{path}"] = data
    files[f"{GARBAGE_CHECKPOINT}/metadata"] = b"\x00\xff garbage \x13\x37"
    files[f"{GARBAGE_CHECKPOINT}/offsets/0"] = b"\x89PNG not an offsets file"
    files[f"{DELTA_TABLE}/_delta_log/00000000000000000000.json"] = b'{"protocol":{"minReaderVersion":1}}\n'
    files[f"{DELTA_TABLE}/part-00000-0a.snappy.parquet"] = b"PAR1 fake parquet PAR1"
    files[f"{GARBAGE_DIR}/notes.txt"] = b"not a checkpoint"
    files[f"{GARBAGE_DIR}/deeper/dump.bin"] = bytes(range(256))
    files["README.txt"] = b"the fleet"
    return files


@dataclass
class Fleet:
    """A fleet placed on one backend: its root URL and storage options, and how to change it."""

    backend: str
    root: str
    options: dict
    local: Path | None = None
    s3: S3 | None = None
    memory: MemoryBackend | None = None

    def url(self, rel: str) -> str:
        return f"{self.root.rstrip('/')}/{rel}" if rel else self.root

    def remove(self, rel: str) -> None:
        """Delete a directory of the fleet, as someone cleaning up would while the audit runs."""
        if self.local is not None:
            shutil.rmtree(self.local / rel)
        elif self.s3 is not None:
            self.s3.fs.rm(self.s3.key(f"{PREFIX}/{rel}"), recursive=True)
        else:
            assert self.memory is not None
            self.memory.fs.rm(f"{self.memory.prefix}/{PREFIX}/{rel}", recursive=True)


def place_fleet(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Fleet:
    """Put the fleet on a backend (local disk, ``memory://`` or S3) and return it."""
    files = fleet_files()
    if backend == "local":
        root = write_files(tmp_path / PREFIX, files)
        return Fleet("local", str(root), {}, local=root)
    if backend == "memory":
        memory = request.getfixturevalue("memory_backend")
        for rel, data in files.items():
            memory.put(f"{PREFIX}/{rel}", data)
        return Fleet("memory", memory.url(PREFIX), {}, memory=memory)
    env: S3 = request.getfixturevalue("s3")
    seed_objects(env.bucket, PREFIX, files)
    env.server.log.clear()
    return Fleet("s3", env.url(PREFIX), env.options, s3=env)


@pytest.fixture
def memory_backend() -> Iterator[MemoryBackend]:
    backend = MemoryBackend()
    yield backend
    backend.cleanup()


@pytest.fixture(params=["local", "memory", "s3"])
def fleet(request: pytest.FixtureRequest, tmp_path: Path) -> Fleet:
    return place_fleet(request.param, tmp_path, request)


@pytest.fixture
def local_fleet(request: pytest.FixtureRequest, tmp_path: Path) -> Fleet:
    return place_fleet("local", tmp_path, request)
