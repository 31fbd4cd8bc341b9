"""``--job``: ask a Spark line what the job would run (the I/O edge of the changed-query check).

The job is described in a child process (:mod:`.job_probe`) on the chosen interpreter, the one
that has the Spark line's pyspark: ``--job-python`` (default: this one). It analyses the job's
plan and never starts it, so the operator's checkpoint, sink and sources are not touched. The
child gets a time limit; its time is part of the facts (and printed). Every failure (no pyspark,
no Java, the job cannot be imported or built, the time limit) is a usage error naming the job.

The child is the operator's code, so it is held on a short leash (issue 31 items 12 and 13): it runs
in its own session (process group), which is killed whole when the time limit passes and when it
ends (a JVM or anything else the job started dies with it); what it prints is drained as it comes
and only a bounded head and tail are kept (a job printing 400 MB grew the tool to 1.25 GB); an exit
of the job's own (``os._exit(3)``) is reported with its exit code and the last lines it printed, not
as a missing pyspark.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from checkpoint_doctor.diagnosis.changes.facts import JobFacts, job_facts_from_dict
from checkpoint_doctor.errors import MissingDependencyError, UsageError
from checkpoint_doctor.redaction import redact

#: Seconds a description may take (a JVM start is ~10 s on a loaded 2-core machine).
DEFAULT_TIMEOUT_S = 180.0
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
#: What is kept of the child's printed output (stderr, where the job's prints go): its first and
#: its last bytes; the rest is counted, not kept.
OUTPUT_HEAD_BYTES = 16 * 1024
OUTPUT_TAIL_BYTES = 64 * 1024
#: The most the child's answer (stdout: one JSON line) may hold: the facts of many jobs fit.
ANSWER_MAX_BYTES = 64 * 1024 * 1024
#: Lines of the job's output a failure quotes.
_QUOTED_LINES = 3
_CHUNK = 64 * 1024


@dataclass
class BoundedOutput:
    """A stream's first :data:`OUTPUT_HEAD_BYTES` and last :data:`OUTPUT_TAIL_BYTES` bytes, and how
    many bytes were in between (dropped)."""

    head_max: int = OUTPUT_HEAD_BYTES
    tail_max: int = OUTPUT_TAIL_BYTES
    head: bytearray = field(default_factory=bytearray)
    tail: deque[bytes] = field(default_factory=deque)
    tail_bytes: int = 0
    total: int = 0

    def add(self, chunk: bytes) -> None:
        """Keep what fits of ``chunk`` (memory stays under head_max + tail_max + one chunk)."""
        self.total += len(chunk)
        room = self.head_max - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_bytes += len(chunk)
        while self.tail and self.tail_bytes - len(self.tail[0]) >= self.tail_max:
            self.tail_bytes -= len(self.tail.popleft())

    @property
    def dropped(self) -> int:
        """Bytes neither in the head nor in the tail."""
        return self.total - len(self.head) - min(self.tail_bytes, self.tail_max)

    def text(self) -> str:
        """The kept output, with a line saying how much was dropped between head and tail."""
        tail = b"".join(self.tail)[-self.tail_max :] if self.tail else b""
        middle = f"\n[... {self.dropped} bytes of the output not kept ...]\n" if self.dropped else ""
        return self.head.decode("utf-8", "replace") + middle + tail.decode("utf-8", "replace")

    def last_lines(self, count: int = _QUOTED_LINES) -> list[str]:
        """The last non-empty lines of the kept output (credentials masked, each at most 300 chars)."""
        lines = [ln.strip() for ln in self.text().splitlines() if ln.strip()]
        return [redact(ln if len(ln) <= 200 else ln[:197] + "...") for ln in lines[-count:]]


@dataclass
class ProbeRun:
    """How the child ended: its exit code (negative: killed by that signal; None: timed out), its
    answer (stdout) and its bounded output (stderr)."""

    returncode: int | None
    answer: bytes
    output: BoundedOutput
    answer_overflow: bool = False


def probe_command(python: str, specs: list[str]) -> list[str]:
    """Return the child's command line."""
    return [python, "-m", "checkpoint_doctor.execution.job_probe", *specs]


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill every process of the child's group (the child, its JVM, whatever the job started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):  # nothing left to kill
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # no process groups (Windows): the child alone
            proc.kill()


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Return whether the child exited, without reaping it (its pid, the group's id, stays taken
    until the group is killed: no other process can get that group id meanwhile)."""
    if not hasattr(os, "waitid"):  # no waitid (Windows): no group id to keep either
        return proc.poll() is not None
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None and info.si_pid == proc.pid


def run_probe(command: list[str], env: dict[str, str], timeout_s: float) -> ProbeRun:
    """Run the child in its own session; drain its stdout (bounded) and stderr (head and tail) as
    they come; at ``timeout_s`` (or on any exception, Ctrl-C included) kill its whole group.

    Raises:
        OSError: the interpreter cannot be started.
    """
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    answer = bytearray()
    output = BoundedOutput()
    overflow = False
    deadline = time.monotonic() + timeout_s
    timed_out = False
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ, "answer")
            selector.register(proc.stderr, selectors.EVENT_READ, "output")
            # Until both pipes close (everything in the group that holds them ended), or the child
            # itself exited and what it left behind still holds them open.
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                for key, _ in selector.select(min(left, 0.5)):
                    chunk = os.read(key.fd, _CHUNK)
                    if not chunk:
                        selector.unregister(key.fileobj)
                    elif key.data == "output":
                        output.add(chunk)
                    elif len(answer) + len(chunk) > ANSWER_MAX_BYTES:
                        overflow = True
                    else:
                        answer += chunk
                if overflow:
                    break
                if not selector.get_map() or _exited(proc):
                    # The child is gone: take what is already in the pipes, not what a process it
                    # left behind may still write.
                    for key in list(selector.get_map().values()):
                        _drain_ready(key, answer, output)
                    break
        while not timed_out and not _exited(proc):
            if time.monotonic() >= deadline:
                timed_out = True
                break
            time.sleep(0.05)
    finally:
        _kill_group(proc)
        proc.stdout.close()
        proc.stderr.close()
        proc.wait()
    return ProbeRun(None if timed_out else proc.returncode, bytes(answer), output, overflow)


def _drain_ready(key: selectors.SelectorKey, answer: bytearray, output: BoundedOutput) -> None:
    """Read what a pipe holds now, without waiting for more."""
    os.set_blocking(key.fd, False)
    try:
        while True:
            chunk = os.read(key.fd, _CHUNK)
            if not chunk:
                return
            if key.data == "output":
                output.add(chunk)
            elif len(answer) + len(chunk) <= ANSWER_MAX_BYTES:
                answer += chunk
            else:
                return
    except BlockingIOError:
        return


def _answer(run: ProbeRun) -> object | None:
    """The child's JSON answer (its last line that is one), or None."""
    for line in reversed(run.answer.decode("utf-8", "replace").splitlines()):
        if line.startswith(("[", "{")):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def _ended(run: ProbeRun) -> str:
    if run.returncode is not None and run.returncode < 0:
        try:
            name = signal.Signals(-run.returncode).name
        except ValueError:
            name = f"signal {-run.returncode}"
        return f"was killed by {name}"
    return f"exited with code {run.returncode}"


def _said(run: ProbeRun) -> str:
    """What the failure quotes of the job's output: its last lines, and how much was not kept."""
    lines = run.output.last_lines()
    if not lines:
        return "; it printed nothing"
    dropped = (
        f" ({run.output.dropped} bytes of its output before them not kept)" if run.output.dropped else ""
    )
    return f"; its last output{dropped}: " + " | ".join(lines)


def describe_jobs(
    specs: list[str], *, python: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
) -> list[JobFacts]:
    """Return the facts of each job, in order, as the interpreter ``python``'s Spark sees them.

    Raises:
        UsageError: a job's file does not exist (said before the child starts), the child failed,
            timed out, or a job could not be built (the message names it).
    """
    from checkpoint_doctor.execution.catch_up.job import parse_job_spec

    for spec in specs:
        # Said before the child starts its JVM (seconds), as the child would say it after.
        job = parse_job_spec(spec)
        if job.is_path and not Path(job.target).expanduser().is_file():
            raise UsageError(
                f"--job {spec}: job file {job.target} does not exist",
                hint="name the job's file (PATH.py:FUNCTION, from the current directory) or its module "
                "(MODULE:FUNCTION)",
            )
    if python is None and importlib.util.find_spec("pyspark") is None:
        # The job runs in a child python: the Spark line's own venv is the usual answer (issue 34).
        raise MissingDependencyError(
            "--job",
            "spark",
            "pyspark",
            or_else="name a python that has it (the Spark line's own) with --job-python PATH",
        )
    exe = python or sys.executable
    env = dict(os.environ)
    # This checkpoint-doctor and the operator's modules (the current directory, as ``python -m``).
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.getcwd(), _PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p
    )
    jobs = " ".join(specs)
    started = time.monotonic()
    try:
        run = run_probe(probe_command(exe, specs), env, timeout_s)
    except OSError as exc:
        raise UsageError(
            f"--job-python {exe}: cannot run it: {exc.strerror or exc}", hint="name a python with pyspark"
        ) from exc
    elapsed = time.monotonic() - started
    if run.returncode is None:
        raise UsageError(
            f"--job {jobs}: Spark did not describe the job within {timeout_s:g} s (the job and every "
            f"process it started were stopped){_said(run)}",
            hint="raise --job-timeout, or check that the job builds its query without waiting on anything",
        )
    if run.answer_overflow:
        raise UsageError(
            f"--job {jobs}: the job probe ({exe}) answered more than {ANSWER_MAX_BYTES} bytes",
            hint="describe fewer jobs at once",
        )
    answer = _answer(run)
    if isinstance(answer, dict) and answer.get("fatal") == "no-pyspark":
        raise UsageError(
            f"--job {jobs}: Spark could not describe the job: {exe} has no pyspark",
            hint="--job-python must name a python with pyspark (and Java on the PATH)",
        )
    if isinstance(answer, dict) and answer.get("fatal") == "spark-start":
        raise UsageError(
            f"--job {jobs}: Spark could not describe the job ({exe}): {answer.get('message')}",
            hint="check that Java is installed (JAVA_HOME or java on PATH)",
        )
    if run.returncode != 0 or not isinstance(answer, list):
        # Not an answer of the probe's: the operator's code ended the process (os._exit, a signal,
        # a crash of the JVM it started) before the jobs were described.
        raise UsageError(
            f"--job {jobs}: the job probe ({exe}) {_ended(run)} before it described the job{_said(run)}",
            hint="the job must return df.writeStream... and not end the process (nor start anything that "
            "ends it)",
        )
    out = []
    for entry in answer:
        if "error" in entry:
            raise UsageError(
                f"--job {entry['job']}: {entry['error']}",
                hint="the function must take a SparkSession and return df.writeStream... not started",
            )
        out.append(job_facts_from_dict(entry["job"], entry["facts"], elapsed))
    return out
