"""The three storage backends every storage test runs against: local disk, ``memory://`` and S3.

A :class:`Backend` arranges and observes files *around* the store under test (its own file system
handle), so a test never checks the store with the store itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import fsspec
import pytest

from tests.s3.conftest import S3, moto_server, s3, s3_observer  # noqa: F401 - fixtures shared with tests/s3
from tests.storage.builders import write_files

BACKENDS = ("local", "memory", "s3")


class Backend:
    """Where a test's files live, and how to reach them without the store under test."""

    name: str
    options: dict[str, Any]

    def url(self, rel: str = "") -> str:
        raise NotImplementedError

    def put(self, rel: str, data: bytes) -> None:
        raise NotImplementedError

    def get(self, rel: str) -> bytes | None:
        """Return a file's bytes, or None if it does not exist."""
        raise NotImplementedError

    def put_files(self, rel: str, files: Mapping[str, bytes]) -> str:
        """Write files under ``rel``; return the URL of ``rel``."""
        for path, data in files.items():
            self.put(f"{rel}/{path}", data)
        return self.url(rel)

    def put_tree(self, local: Path, rel: str) -> str:
        """Upload a local directory to ``rel`` as a user would; return the URL of ``rel``."""
        raise NotImplementedError


class LocalBackend(Backend):
    name = "local"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir()
        self.options = {}

    def url(self, rel: str = "") -> str:
        return str(self.root / rel) if rel else str(self.root)

    def put(self, rel: str, data: bytes) -> None:
        write_files(self.root, {rel: data})

    def get(self, rel: str) -> bytes | None:
        path = self.root / rel
        return path.read_bytes() if path.is_file() else None

    def put_tree(self, local: Path, rel: str) -> str:
        import shutil

        shutil.copytree(local, self.root / rel)
        return self.url(rel)


class MemoryBackend(Backend):
    name = "memory"

    def __init__(self) -> None:
        self.fs = fsspec.filesystem("memory")
        self.prefix = f"/test-{uuid.uuid4().hex[:12]}"
        self.options = {}

    def url(self, rel: str = "") -> str:
        return f"memory:/{self.prefix}/{rel}" if rel else f"memory:/{self.prefix}"

    def put(self, rel: str, data: bytes) -> None:
        self.fs.pipe_file(f"{self.prefix}/{rel}", data)

    def get(self, rel: str) -> bytes | None:
        try:
            return bytes(self.fs.cat_file(f"{self.prefix}/{rel}"))
        except FileNotFoundError:
            return None

    def put_tree(self, local: Path, rel: str) -> str:
        self.fs.put(str(local), f"{self.prefix}/{rel}", recursive=True)
        return self.url(rel)

    def cleanup(self) -> None:
        # The in-memory file system is process-wide: drop this test's entries (fs.rm is quadratic).
        below = self.prefix + "/"
        for path in [p for p in self.fs.store if p == self.prefix or p.startswith(below)]:
            del self.fs.store[path]
        self.fs.pseudo_dirs[:] = [
            d for d in self.fs.pseudo_dirs if d != self.prefix and not d.startswith(below)
        ]


class S3Backend(Backend):
    name = "s3"

    def __init__(self, env: S3) -> None:
        self.env = env
        self.options = env.options

    def url(self, rel: str = "") -> str:
        return self.env.url(rel)

    def put(self, rel: str, data: bytes) -> None:
        self.env.fs.pipe_file(self.env.key(rel), data)

    def get(self, rel: str) -> bytes | None:
        try:
            return bytes(self.env.fs.cat_file(self.env.key(rel)))
        except FileNotFoundError:
            return None

    def put_tree(self, local: Path, rel: str) -> str:
        self.env.fs.put(str(local), self.env.key(rel), recursive=True)
        return self.url(rel)


def make_backend(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Yield a fresh backend by name (cleaning up ``memory://`` afterwards)."""
    if name == "local":
        yield LocalBackend(tmp_path / "backend")
    elif name == "memory":
        backend = MemoryBackend()
        yield backend
        backend.cleanup()
    else:
        yield S3Backend(request.getfixturevalue("s3"))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    yield from make_backend(request.param, request, tmp_path)
