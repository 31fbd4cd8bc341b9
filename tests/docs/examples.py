"""The documentation's examples, read from the Markdown and run as printed.

An example is a fenced block whose lines start with ``$ `` (a shell command) followed by what it
printed. The HTML comment just above the fence says where it runs::

    <!-- example: root=/srv/streaming/jobs copy=spark-4.3.0/async-tail/checkpoint:ckpt -->

- ``root=PATH``: the directory the example pretends to run in. The test runs it in a sandbox, a new
  directory /tmp/<random>/<PATH's name> exactly as long as PATH (the output wraps paths as it would
  there); PATH in a command is the sandbox, the sandbox in the output is PATH again, so the block
  shows what a reader on that machine sees.
- ``copy=SRC:DEST`` (repeatable): ``fixtures/SRC`` copied to ``DEST`` in the sandbox first (modification
  times kept, the empty directories git drops made again).
- ``setup=NAME``: a named world built in the sandbox (:data:`SETUPS`).
- ``file=LANG:DEST``: the page's nearest ```LANG block above, written to DEST (a config file the page
  shows, then runs with).
- ``kafka=SCENARIO``: the topics of ``fixtures/SCENARIO/scenario.json`` (its ``world``) replayed on the
  session's broker first (tests/kafka/test_docs_examples.py); the page names the broker
  ``127.0.0.1:39092`` (:data:`KAFKA_ON_THE_PAGE`), the test's own broker is put in its place.
- ``skip=REASON``: not run; REASON says why (a broker, a Spark job analysis, a placeholder path).

Each command runs through bash in the sandbox with ``checkpoint-doctor`` on PATH (this checkout's
package). Its output must hold every run of lines the block shows under it, in order; a line ``...``
stands for lines left out. ``# exit N`` after a command is its exit code (of the first command of a
pipe).
"""

from __future__ import annotations

import os
import random
import re
import shlex
import shutil
import string
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
#: The pages whose examples are checked: the README and every page of the site.
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

_MARKER = re.compile(r"^<!-- example:(?P<spec>.*)-->$")
_EXIT = re.compile(r"#.*?\bexit (?:code )?(\d+)")
_COMMENT = re.compile(r"\s{2,}#.*$")
ELLIPSIS = "..."
#: What changes from run to run, written as a placeholder on the page: a plan's id digests the files'
#: modification times (a copy's are new), and the time a Spark job's analysis took.
PLACEHOLDERS = {"<plan-id>": "[0-9a-f]{16}", "<seconds>": "[0-9]+[.][0-9]+"}


@dataclass
class Command:
    line: str  # as printed, continuation lines joined
    expected: list[str] = field(default_factory=list)

    @property
    def shell(self) -> str:
        """The command without its trailing comment (``  # ...``)."""
        return _COMMENT.sub("", self.line).strip()

    @property
    def exit_code(self) -> int | None:
        m = _EXIT.search(self.line)
        return int(m.group(1)) if m else None


@dataclass
class Example:
    page: Path
    line: int  # of the fence, 1-based
    spec: dict[str, list[str]]
    commands: list[Command]

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    def one(self, key: str) -> str | None:
        values = self.spec.get(key)
        return values[0] if values else None


def _spec(text: str) -> dict[str, list[str]]:
    text, _, reason = text.partition("skip=")
    spec: dict[str, list[str]] = {"skip": [reason.strip()]} if reason.strip() else {}
    for word in shlex.split(text):
        key, _, value = word.partition("=")
        spec.setdefault(key, []).append(value)
    return spec


def blocks(page: Path) -> list[tuple[int, str | None, list[str]]]:
    """Every fenced block of a page: (line of the fence, the marker above it or None, its lines)."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            above = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            m = _MARKER.match(above.strip())
            found.append((i + 1, m.group("spec") if m else None, lines[i + 1 : j]))
            i = j
        i += 1
    return found


def is_transcript(body: list[str]) -> bool:
    """A block that shows commands and what they printed (a ``$ checkpoint-doctor`` line)."""
    return any(line.startswith("$ checkpoint-doctor") for line in body)


def examples() -> list[Example]:
    found = []
    for page in PAGES:
        for line, spec, body in blocks(page):
            if spec is None:
                continue
            commands: list[Command] = []
            pending = ""
            for text in body:
                if pending:
                    pending += " " + text.strip()
                elif text.startswith("$ "):
                    pending = text[2:]
                else:
                    commands[-1].expected.append(text)
                    continue
                if pending.endswith("\\"):
                    pending = pending[:-1].rstrip()
                else:
                    commands.append(Command(pending))
                    pending = ""
            found.append(Example(page, line, _spec(spec), commands))
    return found


def _copy(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, symlinks=True)
    # git keeps no empty directory: a scenario names the ones its checkpoint had (facts.empty_dirs)
    scenario = src.parent / "scenario.json"
    if scenario.is_file():
        import json

        facts = json.loads(scenario.read_text(encoding="utf-8")).get("facts", {})
        for d in facts.get("empty_dirs", []):
            part, _, rest = d.partition("/")
            if part == src.name:
                (dest / rest).mkdir(parents=True, exist_ok=True)
    # A pipeline fixture (fixtures/sdp/) names its empty directories in run.json, relative to itself.
    record = src / "run.json"
    if record.is_file():
        import json

        for d in json.loads(record.read_text(encoding="utf-8")).get("empty_dirs", []):
            (dest / d).mkdir(parents=True, exist_ok=True)


def _delta_fleet(sandbox: Path, arg: str) -> None:
    """docs/delta.md's and docs/audit.md's /tmp/fleet: six scenarios real Spark 4.2.1 + delta-spark 4.4.0
    wrote and restarted in fixtures/delta/ (each checkpoint beside its tables, `legacy` without its table)."""
    line = FIXTURES / "delta" / "spark-4.2.1"
    for name, scenario, parts in (
        ("orders", "delta-source-stateless-log-cleaned", ("checkpoint", "source")),
        ("clicks", "delta-source-stateless-replaced", ("checkpoint", "source")),
        ("events", "delta-source-stateless-rows-deleted", ("checkpoint", "source")),
        ("ingest", "delta-sink-rolled-back", ("checkpoint", "sink")),
        ("pageviews", "delta-source-stateless", ("checkpoint", "source")),
        ("legacy", "delta-source-count", ("checkpoint",)),
    ):
        for part in parts:
            _copy(line / scenario / part, sandbox / name / part)


def _realtime(sandbox: Path, arg: str) -> None:
    """``realtime:SCENARIO:DEST``: a fixtures/kafka-realtime scenario's checkpoint in DEST, each offsets
    file dated when Spark wrote it (as a listing of the live checkpoint shows it; git keeps no times)."""
    from tests.kafka.test_realtime_restarts import _dated_copy

    scenario, _, dest = arg.partition(":")
    copy = _dated_copy(FIXTURES / "kafka-realtime" / scenario, sandbox / ".copy")
    copy.rename(sandbox / dest)
    shutil.rmtree(sandbox / ".copy")


def _job_python(sandbox: Path, arg: str) -> None:
    """``job-python:VERSION:DEST``: DEST (e.g. ``spark-4.3/bin/python``) answers the job probe with what
    Spark VERSION said of each job of fixtures/jobs/changes.py (fixtures/jobs/facts-<VERSION>.json,
    recorded by real Spark: tests/spark/test_job_facts.py holds them to it), so no JVM starts here."""
    from tests.cli.test_printed_flows import recorded_job_python

    version, _, dest = arg.partition(":")
    bin_dir = (sandbox / dest).parent
    bin_dir.mkdir(parents=True)
    Path(recorded_job_python(bin_dir, version)).rename(sandbox / dest)


#: Worlds an example names with ``setup=NAME[:ARG]``.
SETUPS: dict[str, Callable[[Path, str], None]] = {
    "delta-fleet": _delta_fleet,
    "realtime": _realtime,
    "job-python": _job_python,
}


def write_block_above(example: Example, lang: str, dest: Path) -> None:
    """``file=LANG:DEST``: the page's nearest ```LANG block above the example, written to DEST (so the
    file the page shows is the file the example runs with)."""
    fences = example.page.read_text(encoding="utf-8").split("\n")
    shown = [
        body
        for (line, _, body) in blocks(example.page)
        if line < example.line and fences[line - 1] == f"```{lang}"
    ]
    if not shown:
        raise ValueError(f"{example.id}: no ```{lang} block above it")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("\n".join(shown[-1]) + "\n", encoding="utf-8")


@dataclass
class Ran:
    command: Command
    code: int
    output: str


def sandbox_like(root: str) -> Path:
    """A new empty directory /tmp/<random>/<root's name>, as many characters long as ``root`` (the tool
    names files after a checkpoint's parent directory: plan-<parent>-<name>.json)."""
    name = Path(root).name
    width = len(root) - len("/tmp//") - len(name)
    if width < 6:
        raise ValueError(f"root={root}: a sandbox root needs 6 more characters than /tmp/{name}")
    while True:
        top = Path("/tmp", "".join(random.choices(string.ascii_lowercase, k=width)))
        try:
            top.mkdir()
        except FileExistsError:
            continue
        (top / name).mkdir()
        return top / name


#: The broker a Kafka example's page shows; the test's broker (127.0.0.1 and a free port, five digits as
#: the kernel hands them out) is as long, so the output wraps as on the page.
KAFKA_ON_THE_PAGE = "127.0.0.1:39092"


def run(example: Example, tmp: Path, aliases: dict[str, str] | None = None) -> list[Ran]:
    """Run an example's commands as printed, in order, in its sandbox (removed after). ``aliases``: more
    names on the page (key) for what the test has (value), swapped like ``root``."""
    root = example.one("root")
    if root is None:
        raise ValueError(f"{example.id}: an example names its root=")
    names = dict(aliases or {})
    for shown, actual in names.items():
        if len(shown) != len(actual):
            raise ValueError(f"{example.id}: {actual!r} is not as long as {shown!r}, the page's name for it")
    sandbox = sandbox_like(root)
    try:
        return _run(example, tmp, {root: str(sandbox), **names}, sandbox)
    finally:
        shutil.rmtree(sandbox.parent, ignore_errors=True)


def _run(example: Example, tmp: Path, names: dict[str, str], sandbox: Path) -> list[Ran]:
    for setup in example.spec.get("setup", []):
        name, _, arg = setup.partition(":")
        SETUPS[name](sandbox, arg)
    for copy in example.spec.get("copy", []):
        src, _, dest = copy.partition(":")
        _copy(FIXTURES / src, sandbox / dest)
    for file in example.spec.get("file", []):
        lang, _, dest = file.partition(":")
        write_block_above(example, lang, sandbox / dest)
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "checkpoint-doctor"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m checkpoint_doctor "$@"\n')
    shim.chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)  # the test's python: the package and its extras
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CHECKPOINT_DOCTOR_", "COLUMNS", "PAGER"))
    }
    env.update(PATH=f"{bin_dir}:{env['PATH']}", PYTHONPATH=str(REPO), HOME=str(tmp), NO_COLOR="1")
    ran = []
    for command in example.commands:
        shell = command.shell
        for shown, actual in names.items():
            shell = shell.replace(shown, actual)
        proc = subprocess.run(
            ["bash", "-c", shell + '\necho "__exit__${PIPESTATUS[0]}"'],
            cwd=sandbox,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        out, _, code = proc.stdout.rpartition("__exit__")
        output = out + proc.stderr
        for shown, actual in names.items():
            output = output.replace(actual, shown)
        ran.append(Ran(command, int(code), output))
    return ran


def missing(expected: list[str], output: str) -> str | None:
    """The first run of expected lines (between ``...`` lines) that the output does not hold, in order;
    None when every run is there. Trailing spaces do not count."""
    lines = [line.rstrip() for line in output.split("\n")]

    def pattern(line: str) -> re.Pattern[str]:
        text = re.escape(line)
        for placeholder, regex in PLACEHOLDERS.items():
            text = text.replace(re.escape(placeholder), regex)
        return re.compile(text)

    runs: list[list[str]] = [[]]
    for line in expected:
        if line.strip() == ELLIPSIS:
            runs.append([])
        else:
            runs[-1].append(line.rstrip())
    at = 0
    for chunk in runs:
        while chunk and not chunk[0]:
            chunk.pop(0)
        while chunk and not chunk[-1]:
            chunk.pop()
        if not chunk:
            continue
        patterns = [pattern(line) for line in chunk]
        for start in range(at, len(lines) - len(chunk) + 1):
            if all(
                p.fullmatch(line) for p, line in zip(patterns, lines[start : start + len(chunk)], strict=True)
            ):
                at = start + len(chunk)
                break
        else:
            return "\n".join(chunk)
    return None


def check(example: Example, tmp: Path, aliases: dict[str, str] | None = None) -> None:
    """Run the example and assert that each command exits as the page says and prints what it shows."""
    assert example.commands, f"{example.id}: an example shows at least one command"
    for ran in run(example, tmp, aliases):
        command = ran.command
        if command.exit_code is not None:
            assert ran.code == command.exit_code, (command.line, ran.output[-3000:])
        gap = missing(command.expected, ran.output)
        assert gap is None, f"$ {command.line}\nnot printed:\n{gap}\n--- printed:\n{ran.output}"
