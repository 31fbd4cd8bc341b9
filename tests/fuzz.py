"""Mutated copies of the real Spark fixtures, and the commands run on them.

A :class:`Mutator` with a fixed seed turns a copy of a fixture checkpoint into a hostile one, one
mutation at a time: byte flips, truncations, renames to odd names (huge, negative, out-of-range and
non-UTF-8 ids), JSON numbers out of range, deep nesting, binary garbage, files deleted or emptied,
batch files duplicated under huge ids. :func:`run_commands` runs ``inspect``, ``diagnose`` and
``plan`` on it through the CLI entry point, in this process, and returns what crashed: an exit
code 16 or a traceback. The test (``tests/test_fuzz.py``) runs a few hundred in CI; run more by hand::

    python -m tests.fuzz --count 2000 --seed 7
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.scenarios import REPO, Scenario, all_scenarios

#: Fixtures the mutations start from: every provider, mode and source the fixtures cover.
SOURCES = (
    "spark-3.5.9/window_agg",
    "spark-3.5.9/file_to_file",
    "spark-3.5.9/continuous",
    "spark-3.5.9/kafka-partitions-changed",
    "spark-3.5.9/stream_join",
    "spark-3.5.9/offsets-java-serialized",
    "spark-4.3.0/rocksdb_changelog",
    "spark-4.3.0/async",
    "spark-4.3.0/dedup",
    "spark-4.3.0/file-sink-compact-missing",
    "spark-4.3.0/stateful-async-restart",
    "spark-4.3.0/rocksdb-sst-missing",
)

ODD_NAMES = (
    "9223372036854775807",
    "9223372036854775808",
    "99999999999999999999999",
    "-1",
    "-9223372036854775808",
    "007",
    "+3",
    "1e999",
    " 1",
    "\u0663",
    "1.compact",
    "9223372036854775807.compact",
    ".1.crc",
    "..",
    "a b",
    "new\nline",
    "tab\tname",
    "\x1b[2J",
    "caf\u00e9",
    "1.delta",
    "9223372036854775807.delta",
    "2147483648.zip",
    "1_" + "f" * 200 + ".zip",
)
ODD_BYTE_NAMES = (b"\xff\xfe", b"1\xff", b"\xc3", b"offsets\x80")
ODD_NUMBERS = (
    b"1e999",
    b"-1e999",
    b"123456789012345678901234567890",
    b"-123456789012345678901234567890",
    b"9223372036854775808",
    b"-0.0",
    b"4.9e-324",
    b"1.7976931348623157e308",
)
NUMBER = re.compile(rb"(?<![\w.])-?\d+(?![\w.])")


@dataclass
class Mutated:
    """One mutated copy: where it is, and what was done to it (to reproduce a failure)."""

    checkpoint: Path
    sink: Path | None
    source: str
    steps: list[str]


class Mutator:
    """Applies random mutations (a fixed seed gives the same sequence every run)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.mutations: list[Callable[[Path], str]] = [
            self.flip_bytes,
            self.truncate,
            self.rename_odd,
            self.rename_bytes,
            self.odd_number,
            self.deep_json,
            self.garbage_file,
            self.delete,
            self.empty,
            self.huge_batch_copy,
            self.binary_over_text,
            self.blank_lines,
            self.rename_dir_odd,
            self.special_file,
            self.odd_conf,
        ]

    # ------------------------------------------------------------------------------- helpers
    def _files(self, root: Path) -> list[Path]:
        return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())

    def _pick_file(self, root: Path) -> Path | None:
        files = self._files(root)
        if not files:
            return None
        # Prefer what a snapshot reads: logs, metadata, state metadata and zips.
        read = [p for p in files if not p.name.startswith(".") and not p.name.endswith((".delta", ".sst"))]
        return self.rng.choice(read or files)

    def _pick_dir(self, root: Path) -> Path:
        dirs = [root, *sorted(p for p in root.rglob("*") if p.is_dir())]
        return self.rng.choice(dirs)

    @staticmethod
    def _rel(root: Path, path: Path | bytes) -> str:
        if isinstance(path, bytes):
            return repr(path)
        return str(path.relative_to(root))

    # ------------------------------------------------------------------------------- mutations
    def flip_bytes(self, root: Path) -> str:
        path = self._pick_file(root)
        if path is None:
            return "flip: no file"
        data = bytearray(path.read_bytes())
        if not data:
            return f"flip: {self._rel(root, path)} is empty"
        for _ in range(self.rng.randint(1, 8)):
            data[self.rng.randrange(len(data))] = self.rng.randrange(256)
        path.write_bytes(bytes(data))
        return f"flip bytes in {self._rel(root, path)}"

    def truncate(self, root: Path) -> str:
        path = self._pick_file(root)
        if path is None:
            return "truncate: no file"
        data = path.read_bytes()
        cut = self.rng.randint(0, max(0, len(data) - 1))
        path.write_bytes(data[:cut])
        return f"truncate {self._rel(root, path)} at {cut}"

    def rename_odd(self, root: Path) -> str:
        path = self._pick_file(root)
        if path is None:
            return "rename: no file"
        name = self.rng.choice(ODD_NAMES)
        if name == "..":
            name = "..x"
        target = path.parent / name.replace("/", "_")
        if target.exists():
            return f"rename: {name!r} exists"
        path.rename(target)
        return f"rename {self._rel(root, path)} to {name!r}"

    def rename_bytes(self, root: Path) -> str:
        path = self._pick_file(root) if self.rng.random() < 0.7 else self._pick_dir(root)
        if path is None or path == root:
            return "rename bytes: nothing"
        name = self.rng.choice(ODD_BYTE_NAMES)
        target = os.path.join(os.fsencode(path.parent), name)
        if os.path.lexists(target):
            return "rename bytes: exists"
        os.rename(os.fsencode(path), target)
        return f"rename {self._rel(root, path)} to {name!r}"

    def odd_number(self, root: Path) -> str:
        path = self._pick_file(root)
        if path is None:
            return "number: no file"
        data = path.read_bytes()
        spots = list(NUMBER.finditer(data))
        if not spots:
            return f"number: none in {self._rel(root, path)}"
        spot = self.rng.choice(spots)
        value = self.rng.choice(ODD_NUMBERS)
        path.write_bytes(data[: spot.start()] + value + data[spot.end() :])
        return f"number {spot.group().decode()!r} -> {value.decode()} in {self._rel(root, path)}"

    def deep_json(self, root: Path) -> str:
        path = self._pick_file(root)
        if path is None:
            return "deep: no file"
        depth = self.rng.choice((100, 2_000, 100_000))
        opener, closer = self.rng.choice(((b"[", b"]"), (b'{"a":', b"}")))
        lines = path.read_bytes().split(b"\n")
        at = self.rng.randrange(len(lines))
        lines[at] = opener * depth + b"1" + closer * depth
        path.write_bytes(b"\n".join(lines))
        return f"deep json ({depth}) at line {at + 1} of {self._rel(root, path)}"

    def garbage_file(self, root: Path) -> str:
        directory = self._pick_dir(root)
        name = self.rng.choice((*ODD_NAMES[:12], "metadata", "0", "1.zip", "_metadata"))
        path = directory / name.replace("/", "_")
        if path.exists() or name == "..":
            return "garbage: exists"
        path.write_bytes(self.rng.randbytes(self.rng.choice((0, 1, 17, 4096))))
        return f"garbage file {self._rel(root, path)}"

    def delete(self, root: Path) -> str:
        if self.rng.random() < 0.3:
            directory = self._pick_dir(root)
            if directory != root:
                # An earlier mutation may have made it a link (a loop): the link goes, not its target.
                if directory.is_symlink():
                    directory.unlink()
                else:
                    shutil.rmtree(directory)
                return f"delete dir {self._rel(root, directory)}"
        path = self._pick_file(root)
        if path is None:
            return "delete: no file"
        path.unlink()
        return f"delete {self._rel(root, path)}"

    def empty(self, root: Path) -> str:
        path = self._pick_file(root)
        if path is None:
            return "empty: no file"
        path.write_bytes(b"")
        return f"empty {self._rel(root, path)}"

    def huge_batch_copy(self, root: Path) -> str:
        logs = [p for p in (root / "offsets", root / "commits", root / "_spark_metadata") if p.is_dir()]
        logs += [p for p in (root / "sources").glob("*") if p.is_dir()] if (root / "sources").is_dir() else []
        if not logs:
            return "huge: no log"
        log = self.rng.choice(logs)
        batches = [p for p in log.iterdir() if p.is_file() and p.name.isdigit()]
        if not batches:
            return f"huge: {self._rel(root, log)} has no batch"
        name = self.rng.choice(
            ("9223372036854775807", "9223372036854775806", "4611686018427387904", "2147483648")
        )
        if (log / name).exists():
            return f"huge: {name} exists"
        shutil.copy(self.rng.choice(batches), log / name)
        return f"copy a batch of {self._rel(root, log)} to {name}"

    def binary_over_text(self, root: Path) -> str:
        path = self._pick_file(root)
        if path is None:
            return "binary: no file"
        prefix = self.rng.choice((b"v1\n", b"", b"\xac\xed\x00\x05", b"PK\x03\x04"))
        path.write_bytes(prefix + self.rng.randbytes(self.rng.choice((1, 64, 2048))))
        return f"binary over {self._rel(root, path)}"

    def blank_lines(self, root: Path) -> str:
        path = self._pick_file(root)
        if path is None:
            return "blank: no file"
        path.write_bytes(path.read_bytes() + b"\n" * self.rng.choice((1, 3, 20_000)))
        return f"blank lines after {self._rel(root, path)}"

    def rename_dir_odd(self, root: Path) -> str:
        directory = self._pick_dir(root)
        if directory == root:
            return "rename dir: root"
        name = self.rng.choice(("2147483648", "9223372036854775807", "-1", "00", "1", "_metadata", "SSTs"))
        target = directory.parent / name
        if target.exists():
            return f"rename dir: {name} exists"
        directory.rename(target)
        return f"rename dir {self._rel(root, directory)} to {name}"

    def special_file(self, root: Path) -> str:
        directory = self._pick_dir(root)
        name = self.rng.choice(("5", "metadata", "9.zip", "loop", ".5.crc"))
        path = directory / name
        if os.path.lexists(path):
            return "special: exists"
        kind = self.rng.choice(("fifo", "loop", "dangling", "to-dir"))
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "loop":
            path.symlink_to(path)
        elif kind == "dangling":
            path.symlink_to(directory / "nowhere")
        else:
            path.symlink_to(root)
        return f"{kind} at {self._rel(root, path)}"

    def odd_conf(self, root: Path) -> str:
        offsets = (
            [p for p in (root / "offsets").glob("*") if p.is_file()] if (root / "offsets").is_dir() else []
        )
        if not offsets:
            return "conf: no offsets"
        path = self.rng.choice(offsets)
        data = path.read_bytes()
        value = self.rng.choice((b'"2147483648"', b'"-1"', b'"1e999"', b'"0"', b'"x"', b"null", b"7", b"[]"))
        mutated = re.sub(rb'("spark\.sql\.[\w.]+":)("[^"]*")', lambda m: m.group(1) + value, data, count=1)
        path.write_bytes(mutated)
        return f"conf value -> {value.decode()} in {self._rel(root, path)}"

    # ------------------------------------------------------------------------------- copies
    def mutate(self, root: Path, count: int) -> list[str]:
        return [self.rng.choice(self.mutations)(root) for _ in range(count)]


def scenarios() -> list[Scenario]:
    wanted = set(SOURCES)
    return [s for s in all_scenarios() if s.id in wanted]


def mutated_copies(work: Path, count: int, seed: int) -> Iterator[Mutated]:
    """Yield ``count`` mutated copies of the fixtures under ``work`` (1 to 3 mutations each, on the
    checkpoint or, for a scenario with a sink, sometimes on the sink)."""
    mutator = Mutator(seed)
    sources = scenarios()
    for i in range(count):
        scenario = sources[i % len(sources)]
        dest = work / f"m{i:05d}"
        cp = scenario.copy_to(dest)
        sink = dest / "sink" if scenario.has_sink else None
        target = sink if sink is not None and mutator.rng.random() < 0.4 else cp
        steps = mutator.mutate(target, mutator.rng.randint(1, 3))
        yield Mutated(cp, sink, scenario.id, steps)


COMMANDS = (
    ("inspect",),
    ("inspect", "--deep"),
    ("diagnose", "--live-window", "0"),
    ("plan", "--live-window", "0"),
)


#: Seconds one command may take before it counts as a hang (the fixtures load in milliseconds).
HANG_S = 30


class Hang(BaseException):
    """Raised by the alarm in a command that runs longer than :data:`HANG_S` (a BaseException, so
    that the CLI's own ``except Exception`` cannot swallow it)."""


def _alarm(signum: int, frame: object) -> None:
    raise Hang


def _run(args: list[str]) -> tuple[int, str]:
    from checkpoint_doctor.cli import main

    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, HANG_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    except Hang:
        return -1, f"Hang: no answer within {HANG_S} s"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return code, err.getvalue()


_FRAME = re.compile(r'File "[^"]*/(checkpoint_doctor/[^"]+)", line (\d+), in (\w+)')


def crash_class(err: str) -> str:
    """Return a crash's class: the exception type and the innermost frame of the package."""
    frames = _FRAME.findall(err)
    where = f"{frames[-1][0]}:{frames[-1][1]} {frames[-1][2]}" if frames else "?"
    last = err.strip().splitlines()[-1] if err.strip() else ""
    return f"{last.split(':')[0]} at {where}"


def crashes(args: list[str]) -> str | None:
    """Run one command (with --debug, for the traceback); return the crash class, or None."""
    code, err = _run(["--debug", *args])
    if code == -1:
        return err
    if code == 16 or "internal error" in err:
        return f"exit {code}: {crash_class(err)}"
    # --debug prints the traceback of every error; a refusal (exit 32: e.g. a plan that would change
    # a file sink whose log contradicts the checkpoint) is an answer, not a crash.
    if "Traceback" in err and code != 32:
        return f"exit {code}: {crash_class(err)}"
    return None


def run_commands(m: Mutated, commands: tuple[tuple[str, ...], ...] = COMMANDS) -> list[str]:
    """Run the commands on one mutated copy; return one line per crash."""
    out = []
    for command in commands:
        args = [command[0], str(m.checkpoint), *command[1:]]
        if m.sink is not None and command[0] in ("inspect", "diagnose", "plan"):
            args += ["--sink-path", str(m.sink)]
        for fmt in ("table", "json"):
            problem = crashes([*args, "--format", fmt])
            if problem is not None:
                out.append(f"{m.source} {m.steps} `{' '.join(command)} --format {fmt}`: {problem}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("-v", "--verbose", action="store_true", help="print each copy before its commands")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cd-fuzz-") as work:
        for i, m in enumerate(mutated_copies(Path(work), args.count, args.seed)):
            if args.verbose:
                print(f"{i}: {m.source} {m.steps}", file=sys.stderr, flush=True)
            problems += run_commands(m)
            shutil.rmtree(m.checkpoint.parent)
            if (i + 1) % 100 == 0:
                print(f"{i + 1} copies, {len(problems)} crashes", file=sys.stderr)
    print("\n".join(problems) or f"{args.count} mutated copies: no crash")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
