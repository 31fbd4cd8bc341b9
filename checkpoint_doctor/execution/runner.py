"""The catch-up runner: run the operator's own streaming job on a checkpoint until its tail is durable.

This is the seed documents' recipe for a query that cannot restart after asynchronous progress
tracking was switched off ("re-enable asyncProgressTrackingEnabled, set
asyncProgressTrackingCheckpointIntervalMs to 0, run at least two micro-batches, stop, disable"), done
on the real job and checked with the project's own loader and diagnosis:

1. diagnose the checkpoint for the restart the run performs and refuse what cannot work (a live
   writer, state for async tracking, a restart that already fails): :func:`pre_start_refusal`;
2. import ``MODULE:FUNCTION`` or ``PATH.py:FUNCTION`` and call it with a SparkSession: it returns the
   job's ``DataStreamWriter``, not started;
3. ``--mode async`` (default): add ``checkpointLocation``, ``asyncProgressTrackingEnabled=true``,
   ``asyncProgressTrackingCheckpointIntervalMs=0`` and a processing-time trigger, start, count the
   batches that ran from ``recentProgress``, and stop between two triggers once at least ``--batches``
   ran AND a snapshot shows a durable tail (:func:`tail_is_durable`);
   ``--mode sync``: the job as it is with ``Trigger.AvailableNow`` (Spark itself falls back to one
   batch for sources that do not support it), which re-runs an uncommitted batch and stops by itself;
4. re-diagnose for a synchronous restart on the running Spark line: that is the verdict.

This is the ONLY module that imports pyspark, and only inside functions, so the package works without
the ``spark`` extra. The decisions (durable tail, refusals, batch counting, next command) are small
pure functions over snapshots, diagnoses and progress dicts; :func:`run_catch_up` only does the I/O.
Library code: nothing here prints or exits; progress goes to a callback.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from checkpoint_doctor.diagnosis import DiagnoseOptions, Diagnosis, diagnose
from checkpoint_doctor.diagnosis.versions import LINES
from checkpoint_doctor.errors import (
    MissingDependencyError,
    NotACheckpointError,
    RunnerError,
    StorageError,
    UsageError,
)
from checkpoint_doctor.snapshot import CheckpointSnapshot

ASYNC = "async"
SYNC = "sync"
MODES = (ASYNC, SYNC)

#: Processing-time trigger of the async run. Not 0: a 0 s trigger starts the next batch as soon as
#: one ends, so a stop() nearly always interrupts a running batch (3.5.9 logs "Data source write
#: support MicroBatchWrite[epoch: N ...] is aborting"; 4.3.0 fails the query with
#: "RejectedExecutionException: Producer interrupted"). With a pause between triggers the runner
#: stops while the query waits (StreamingQuery.status isTriggerActive false).
TRIGGER_INTERVAL = "1 second"
POLL_S = 0.2
#: How long the runner waits for the query to be between two triggers before it stops it anyway.
STOP_IDLE_GRACE_S = 30.0
#: How often (at most) a snapshot is taken to check durability while batches keep coming.
DURABLE_CHECK_S = 0.5

#: Spark's texts (AsyncProgressTrackingMicroBatchExecution, 3.5.9 and 4.3.0), matched in failures.
STATEFUL_TEXT = "Stateful streaming queries does not support async progress tracking at this moment."
_SINK_RE = re.compile(r"Sink .+? does not support async progress tracking")
_STREAM_FAILED_RE = re.compile(r"^\[STREAM_FAILED\] Query \[[^\]]*\] terminated with exception: ")
#: Exceptions that only mean the stream thread was interrupted by our own stop(). 4.3.0 reports
#: "java.util.concurrent.RejectedExecutionException: Producer interrupted" (cause InterruptedException)
#: from the async-log-write executor when stop() lands during a batch; StreamExecution's
#: isInterruptionException does not recognise it, so the query records it as its exception.
_INTERRUPTION_MARKERS = (
    "InterruptedException",
    "Producer interrupted",
    "ClosedByInterruptException",
    "InterruptedIOException",
)

BRIDGE_HINT = "checkpoint-doctor plan {cp} --mode micro-batch --strategy bridge -o plan.json, then checkpoint-doctor apply plan.json"


# ------------------------------------------------------------------------------------------ values


@dataclass(frozen=True)
class JobSpec:
    """``--job``: a module (``pkg.mod:build``) or a Python file (``jobs/etl.py:build``) and a function."""

    target: str
    function: str
    is_path: bool

    @property
    def text(self) -> str:
        """Return the spec as the operator wrote it."""
        return f"{self.target}:{self.function}"


@dataclass(frozen=True)
class Refusal:
    """Why catch-up will not run (or stopped): a stable ``reason``, a one-line message, the next step.

    ``spark_message`` is Spark's own text where Spark refused. ``usage`` refusals are about the
    operator's input (the job) and exit 2; the others are about the checkpoint or Spark and exit 4.
    """

    reason: str
    message: str
    next_step: str
    spark_message: str | None = None
    usage: bool = False

    @property
    def exit_code(self) -> int:
        """Return 2 for a problem with the job, 4 for one with the checkpoint or the run."""
        return 2 if self.usage else 4

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "reason": self.reason,
            "message": self.message,
            "spark_message": self.spark_message,
            "next_step": self.next_step,
        }


class CatchUpRefusedError(RunnerError):
    """Raised when catch-up refuses to run or stops without a durable tail; ``report`` is set once
    the query ran (what it did, and the checkpoint as it was left)."""

    def __init__(self, refusal: Refusal, report: CatchUpReport | None = None) -> None:
        super().__init__(refusal.message, hint=f"next: {refusal.next_step}")
        self.refusal = refusal
        self.report = report


@dataclass(frozen=True)
class CatchUpOptions:
    """What the operator asked for (``checkpoint-doctor catch-up``)."""

    checkpoint: str
    job: str
    mode: str = ASYNC
    batches: int = 2
    timeout_s: float = 300.0
    master: str | None = None
    confs: tuple[tuple[str, str], ...] = ()
    storage_options: Mapping[str, Any] = field(default_factory=dict)
    live_window_s: float = 600.0
    now_ms: int | None = None


@dataclass(frozen=True)
class CatchUpProgress:
    """One status update while the query runs (for the CLI's status line)."""

    phase: str
    batches: int
    wanted: int
    rows: int
    elapsed_s: float
    batch_id: int | None = None


@dataclass(frozen=True)
class TailState:
    """The newest ids of the offsets and commit logs, and whether the tail is durable."""

    offsets: tuple[int, ...]
    commits: tuple[int, ...]
    durable: bool
    why: str

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {"offsets": list(self.offsets), "commits": list(self.commits), "durable": self.durable, "why": self.why}


@dataclass(frozen=True)
class CatchUpReport:
    """What the run did and the verdict: the re-diagnosis for a synchronous restart."""

    checkpoint: str
    job: str
    mode: str
    spark_version: str
    batches_wanted: int
    batch_ids: tuple[int, ...]
    rows: int
    elapsed_s: float
    timed_out: bool
    before: Diagnosis
    tail: TailState
    after: Diagnosis
    notes: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """Return the re-diagnosis' exit code (0, 1 or 4)."""
        return self.after.exit_code

    @property
    def next_command(self) -> str:
        """Return what the operator does next."""
        return next_command(self.checkpoint, self.after)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "checkpoint": self.checkpoint,
            "job": self.job,
            "mode": self.mode,
            "spark_version": self.spark_version,
            "batches_wanted": self.batches_wanted,
            "batches_run": len(self.batch_ids),
            "batch_ids": list(self.batch_ids),
            "rows": self.rows,
            "elapsed_s": round(self.elapsed_s, 1),
            "timed_out": self.timed_out,
            "before": self.before.prediction.to_dict(),
            "tail": self.tail.to_dict(),
            "diagnosis": self.after.to_dict(),
            "verdict": self.after.prediction.summary,
            "next_command": self.next_command,
            "notes": list(self.notes),
            "exit_code": self.exit_code,
        }


# ------------------------------------------------------------------------------------------ pure


def parse_job_spec(spec: str) -> JobSpec:
    """Parse ``MODULE:FUNCTION`` or ``PATH.py:FUNCTION``.

    Raises:
        UsageError: no ``:``, an empty part, or a function name that is not an identifier.
    """
    target, sep, function = spec.rpartition(":")
    if not sep or not target or not function:
        raise UsageError(f"--job {spec!r} is not MODULE:FUNCTION or PATH.py:FUNCTION", hint="e.g. --job examples.rate_job:build")
    if not function.isidentifier():
        raise UsageError(f"--job {spec!r}: {function!r} is not a function name", hint="e.g. --job examples.rate_job:build")
    is_path = target.endswith(".py") or "/" in target or os.sep in target
    if not is_path and not all(part.isidentifier() for part in target.split(".")):
        raise UsageError(f"--job {spec!r}: {target!r} is not a module name", hint="use MODULE:FUNCTION or PATH.py:FUNCTION")
    return JobSpec(target, function, is_path)


def tail_state(snapshot: CheckpointSnapshot) -> TailState:
    """Return the tail of the logs and whether a synchronous restart can use it.

    Durable means: the newest two offsets files ``L-1`` and ``L`` exist and parse, and both have a
    readable commit, and no commit is newer than ``L``. Why this is the right test:

    * a synchronous restart (``MicroBatchExecution.populateStartOffsets``) reads exactly
      ``offsets/L`` and ``offsets/L-1`` and compares ``K = max(commits)`` with ``L`` (reference
      §11.1); with ``K == L`` it plans a new batch ``L+1`` from ``offsets/L``;
    * with async progress tracking, ``AsyncOffsetSeqLog`` writes an offsets file on its own thread
      and ``AsyncCommitLog`` writes a commit only for a batch whose offsets file was written
      (§11.2), so a batch is durable only when both files are visible; ``HDFSMetadataLog`` writes
      through ``CheckpointFileManager.createAtomic`` (temp file, then rename), so a listed file is
      complete;
    * ``commits/L-1`` is not read by the restart, but requiring it means two consecutive batches
      completed with interval 0: the seed's "at least two micro-batches", and proof that the async
      writer now persists every batch.
    """
    offsets = snapshot.offsets
    commits = snapshot.commits
    o_ids = offsets.ids
    c_ids = commits.ids
    shown_o, shown_c = o_ids[-3:], c_ids[-3:]

    def result(durable: bool, why: str) -> TailState:
        return TailState(shown_o, shown_c, durable, why)

    latest = offsets.latest_id
    if latest is None or latest == 0:
        return result(False, "fewer than two offsets files")
    prev = offsets.get(latest - 1)
    if prev is None:
        below = offsets.newest_below(latest)
        gap = f"offsets/{below.batch_id}" if below is not None else "nothing"
        return result(False, f"offsets/{latest - 1} is missing (offsets/{latest} follows {gap})")
    for entry in (prev, offsets.get(latest)):
        if entry is None or entry.record is None:
            return result(False, f"offsets/{entry.batch_id if entry else latest} was not read or does not parse")
    for b in (latest - 1, latest):
        c = commits.get(b)
        if c is None:
            return result(False, f"commits/{b} is missing")
        if c.record is None:
            return result(False, f"commits/{b} was not read or does not parse")
    if commits.latest_id != latest:
        return result(False, f"commits/{commits.latest_id} is newer than offsets/{latest}")
    return result(True, f"offsets/{latest - 1}, offsets/{latest} and their commits are on disk")


def tail_is_durable(snapshot: CheckpointSnapshot) -> bool:
    """Return whether the newest two batches are durable (see :func:`tail_state`)."""
    return tail_state(snapshot).durable


def executed_batches(progress: Iterable[Mapping[str, Any]]) -> dict[int, int]:
    """Return ``{batch id: input rows}`` of the batches that executed, from progress events.

    A progress event with ``durationMs.addBatch`` ran the sink for its batch; events without it are
    the "no new data" heartbeats (``spark.sql.streaming.noDataProgressEventInterval``), which carry
    the id of the next batch and must not be counted.
    """
    out: dict[int, int] = {}
    for p in progress:
        bid = p.get("batchId")
        if bid is None or "addBatch" not in (p.get("durationMs") or {}):
            continue
        out[int(bid)] = int(p.get("numInputRows") or 0)
    return out


def should_stop(batches_run: int, wanted: int, durable: bool) -> bool:
    """Return whether the async run has done its work: enough batches AND a durable tail."""
    return batches_run >= wanted and durable


def spark_line(version: str) -> str | None:
    """Return the diagnosis target line of a running Spark version (``4.3.0`` -> ``4.3``), if known."""
    short = ".".join(version.split(".")[:2])
    return short if short in LINES else None


def pre_start_refusal(snapshot: CheckpointSnapshot, diagnosis: Diagnosis, mode: str) -> Refusal | None:
    """Return why the run must not start, or None. ``diagnosis`` is for the restart the run does.

    Order: a live writer first (two writers corrupt a checkpoint; nothing else matters), then state
    with async tracking (Spark refuses it), then a restart that the model predicts fails anyway.
    """
    cp = snapshot.root
    live = [f for f in diagnosis.findings if f.code in ("CD501", "CD502")]
    if live:
        f = live[0]
        return Refusal(
            "live-writer",
            f"a streaming query may be writing to {cp} right now ({f.code}: {f.message.rstrip('.')})",
            "stop the query, wait for the live window to pass (or pass --live-window 0 if you are sure it is stopped), then run catch-up again",
        )
    if mode == ASYNC and snapshot.state.operators:
        ops = ", ".join(f"state/{op.operator_id}" for op in snapshot.state.operators)
        return Refusal(
            "stateful",
            f"{cp} belongs to a stateful query ({ops}) and Spark refuses async progress tracking for it: {STATEFUL_TEXT}",
            f"use {BRIDGE_HINT.format(cp=cp)}",
            spark_message=STATEFUL_TEXT,
        )
    pred = diagnosis.prediction
    if not pred.starts:
        if mode == SYNC:
            step = f"run catch-up in the default async mode, or {BRIDGE_HINT.format(cp=cp)}"
        else:
            step = f"checkpoint-doctor plan {cp} --mode async"
        restart = "an async restart" if mode == ASYNC else "a synchronous restart"
        return Refusal(
            "restart-fails",
            f"{restart} of {cp} fails before any batch runs ({pred.summary}), so the job cannot catch up",
            step,
            spark_message=pred.error.message if pred.error is not None else None,
        )
    return None


def spark_message_of(text: str) -> str:
    """Return Spark's own message from an exception text: no "=== Streaming Query ===" section, no
    ``[STREAM_FAILED] Query [...] terminated with exception:`` wrapper, no JVM stack frames."""
    head = text.partition("\n=== Streaming Query ===")[0]
    lines = [ln for ln in head.splitlines() if ln.strip() and not ln.lstrip().startswith("at ")]
    first = _STREAM_FAILED_RE.sub("", lines[0]) if lines else ""
    return "\n".join([first, *lines[1:]]).strip()


def is_stop_artifact(text: str) -> bool:
    """Return whether a query exception only says the stream thread was interrupted by stop()."""
    return any(m in text for m in _INTERRUPTION_MARKERS)


def refusal_for_spark_error(text: str, checkpoint: str, *, at_start: bool, spark_version: str) -> Refusal:
    """Classify a failure Spark raised at ``start()`` or while running, keeping its message verbatim."""
    message = spark_message_of(text)
    sink = _SINK_RE.search(message)
    bridge = f"use {BRIDGE_HINT.format(cp=checkpoint)} (it needs neither the job nor new data)"
    if sink is not None:
        return Refusal(
            "sink-unsupported",
            f"Spark {spark_version} refused the job's sink for async progress tracking: {sink.group(0)}",
            bridge,
            spark_message=sink.group(0),
        )
    if STATEFUL_TEXT in message:
        return Refusal(
            "stateful",
            f"Spark {spark_version} refused the job: {STATEFUL_TEXT}",
            bridge,
            spark_message=STATEFUL_TEXT,
        )
    first = message.splitlines()[0] if message else "(no message)"
    when = "at start()" if at_start else "while running"
    return Refusal(
        "spark-failed",
        f"the query failed {when} on Spark {spark_version}: {first}",
        f"checkpoint-doctor diagnose {checkpoint}; fix the job or the checkpoint, then run catch-up again",
        spark_message=message or None,
    )


def tail_text(tail: TailState) -> str:
    """Return ``offsets 20, 31, 32; commits 20, 31`` (the newest ids), or "" for empty logs."""
    if not tail.offsets and not tail.commits:
        return ""
    return f"offsets {', '.join(map(str, tail.offsets)) or 'none'}; commits {', '.join(map(str, tail.commits)) or 'none'}"


def with_tail(refusal: Refusal, tail: TailState) -> Refusal:
    """Return a refusal of a failed run that also says what the run left in the logs."""
    text = tail_text(tail)
    if not text:
        return refusal
    return replace(refusal, message=f"{refusal.message} (the checkpoint now has {text})")


def timeout_refusal(checkpoint: str, mode: str, wanted: int, ran: Sequence[int], timeout_s: float, tail: TailState) -> Refusal:
    """Return the refusal for a run that did not finish within ``--timeout``."""
    left = "the checkpoint is as the last durable batch left it"
    if tail_text(tail):
        left += f" ({tail_text(tail)})"
    if mode == SYNC:
        what = f"the query did not finish within {timeout_s:g} s ({len(ran)} batch(es) ran)"
    elif not ran:
        what = f"no new data within {timeout_s:g} s: no batch ran"
    else:
        what = f"only {len(ran)} of {wanted} batch(es) ran within {timeout_s:g} s (no new data after batch {max(ran)})"
        if len(ran) >= wanted:
            what = f"{len(ran)} batch(es) ran within {timeout_s:g} s but the tail is not durable ({tail.why})"
    return Refusal(
        "no-new-data" if mode == ASYNC else "timeout",
        f"{what}; the query was stopped and {left}",
        f"use {BRIDGE_HINT.format(cp=checkpoint)}: the bridge needs no new data",
    )


def next_command(checkpoint: str, after: Diagnosis) -> str:
    """Return the operator's next step after a catch-up, from the synchronous re-diagnosis."""
    if after.prediction.starts:
        return (
            "restart the job without asyncProgressTrackingEnabled (a synchronous restart now starts); "
            f"to check again first: checkpoint-doctor diagnose {checkpoint} --mode micro-batch"
        )
    return f"checkpoint-doctor plan {checkpoint} --mode micro-batch"


def progress_dict(p: Any) -> dict[str, Any]:
    """Return a progress event as a dict (3.5 returns dicts, 4.x StreamingQueryProgress objects)."""
    if isinstance(p, Mapping):
        return dict(p)
    text = getattr(p, "json", None)
    if callable(text):
        text = text()
    if isinstance(text, str):
        loaded = json.loads(text)
        if isinstance(loaded, dict):
            return loaded
    return {}


# ------------------------------------------------------------------------------------------ job


def load_job(spec: JobSpec) -> Callable[..., Any]:
    """Import the job and return its function.

    A module is imported like ``python -m`` would (the current directory is on the path); a file is
    imported by path with its directory on the path, so it can import its siblings.

    Raises:
        CatchUpRefusedError: the module or file cannot be imported, or has no such function (usage).
    """
    next_step = "check --job (MODULE:FUNCTION with the module importable from the current directory or PYTHONPATH, or PATH.py:FUNCTION)"
    try:
        if spec.is_path:
            path = Path(spec.target).expanduser().resolve()
            if not path.is_file():
                raise CatchUpRefusedError(Refusal("job-import", f"job file {spec.target} does not exist", next_step, usage=True))
            _prepend_path(str(path.parent))
            name = "checkpoint_doctor_job_" + re.sub(r"\W", "_", path.stem)
            module_spec = importlib.util.spec_from_file_location(name, path)
            if module_spec is None or module_spec.loader is None:
                raise CatchUpRefusedError(Refusal("job-import", f"cannot import job file {spec.target}: not a Python module", next_step, usage=True))
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            module_spec.loader.exec_module(module)
        else:
            _prepend_path(os.getcwd())
            module = importlib.import_module(spec.target)
    except CatchUpRefusedError:
        raise
    except (Exception, SystemExit) as exc:  # any failure of the operator's import is reported, not raised
        what = "job file" if spec.is_path else "job module"
        raise CatchUpRefusedError(
            Refusal("job-import", f"cannot import {what} {spec.target!r}: {type(exc).__name__}: {exc}", next_step, usage=True)
        ) from exc
    func = getattr(module, spec.function, None)
    if func is None or not callable(func):
        problem = "has no function" if func is None else "has a non-callable"
        raise CatchUpRefusedError(
            Refusal("job-import", f"job {spec.target!r} {problem} {spec.function!r}", next_step, usage=True)
        )
    return func


def _prepend_path(entry: str) -> None:
    if entry not in sys.path:
        sys.path.insert(0, entry)


def check_writer(result: Any, spec: JobSpec) -> None:
    """Check that the job returned a ``DataStreamWriter`` (classic or Spark Connect).

    Raises:
        CatchUpRefusedError: anything else (usage); a started ``StreamingQuery`` was stopped first.
    """
    kind = type(result).__name__
    if kind == "DataStreamWriter":
        return
    step = f"make {spec.text} return df.writeStream... with source, sink and options, without start() or a checkpointLocation"
    extra = ""
    if kind == "StreamingQuery":
        # The job already started a query, with its own options and checkpoint: stop it at once so
        # it does not keep writing next to (or into) the checkpoint being repaired.
        with contextlib.suppress(Exception):
            result.stop()
        extra = " (the query it started was stopped)"
    raise CatchUpRefusedError(
        Refusal("job-returned", f"job {spec.text} returned {kind}, not a DataStreamWriter{extra}", step, usage=True)
    )


# ------------------------------------------------------------------------------------------ Spark


def require_pyspark() -> str:
    """Return the installed pyspark version.

    Raises:
        MissingDependencyError: pyspark is not installed (the ``spark`` extra).
    """
    try:
        import pyspark
    except ImportError as exc:
        raise MissingDependencyError("catch-up", "spark", "pyspark") from exc
    return str(pyspark.__version__)


@contextlib.contextmanager
def _jvm_stdout_to_stderr() -> Iterator[None]:
    """Point fd 1 at stderr while the JVM is launched: the JVM inherits it for good.

    Spark writes to the JVM's stdout (console sinks, some log4j setups, progress bars) and the
    launcher (``pyspark.java_gateway.launch_gateway``) does not redirect it, so it would mix with the
    command's output (one JSON document in ``--format json``).
    """
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _session(master: str | None, confs: Sequence[tuple[str, str]]) -> Any:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("checkpoint-doctor catch-up")
    if master:
        builder = builder.master(master)
    given = {k for k, _ in confs}
    if "spark.ui.showConsoleProgress" not in given:
        # The runner shows its own status line; Spark's stage bar would interleave with it.
        builder = builder.config("spark.ui.showConsoleProgress", "false")
    for key, value in confs:
        builder = builder.config(key, value)
    with _jvm_stdout_to_stderr():
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _spark_location(checkpoint: str) -> str:
    return checkpoint if "://" in checkpoint else os.path.abspath(os.path.expanduser(checkpoint))


def _exception_text(exc: Any) -> str:
    desc = getattr(exc, "desc", None)
    return str(desc) if desc else str(exc)


# ------------------------------------------------------------------------------------------ run


def _load(opts: CatchUpOptions) -> CheckpointSnapshot:
    from checkpoint_doctor.loading import load_checkpoint

    snapshot = load_checkpoint(opts.checkpoint, storage_options=opts.storage_options)
    if not snapshot.is_checkpoint:
        raise NotACheckpointError(snapshot.root, "no metadata file, offsets/ or commits/ directory")
    return snapshot


def _durable_now(opts: CatchUpOptions) -> bool:
    try:
        return tail_is_durable(_load(opts))
    except StorageError:
        # Spark renames temp files while the listing runs (CheckpointFileManager.createAtomic); a
        # file that vanished between listing and stat fails this look only: try again next poll.
        return False


def run_catch_up(
    opts: CatchUpOptions,
    *,
    on_progress: Callable[[CatchUpProgress], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> CatchUpReport:
    """Run the catch-up (see module docstring) and return the report.

    Raises:
        UsageError: a malformed ``--job`` or option.
        MissingDependencyError: pyspark is not installed.
        StorageError, NotACheckpointError: the checkpoint cannot be read.
        CatchUpRefusedError: a refusal (its ``refusal.exit_code`` is 2 for the job, 4 otherwise).
    """
    if opts.mode not in MODES:
        raise UsageError(f"unknown catch-up mode {opts.mode!r}", hint=f"use one of {', '.join(MODES)}")
    spec = parse_job_spec(opts.job)
    version = require_pyspark()
    line = spark_line(version)
    notify = on_progress or (lambda _p: None)

    snapshot = _load(opts)
    restart_mode = "async" if opts.mode == ASYNC else "micro-batch"
    pre = diagnose(
        snapshot,
        DiagnoseOptions(spark=line, mode=restart_mode, live_window_s=opts.live_window_s, now_ms=opts.now_ms),
    )
    refusal = pre_start_refusal(snapshot, pre, opts.mode)
    if refusal is not None:
        raise CatchUpRefusedError(refusal)
    before = diagnose(snapshot, DiagnoseOptions(spark=line, mode="micro-batch", live_window_s=0))
    job = load_job(spec)

    notify(CatchUpProgress("starting Spark", 0, opts.batches, 0, 0.0))
    spark = _session(opts.master, opts.confs)
    try:
        return _run(opts, spec, job, spark, version, line, before, notify, clock, sleep)
    finally:
        with contextlib.suppress(Exception):
            spark.stop()


def _run(
    opts: CatchUpOptions,
    spec: JobSpec,
    job: Callable[..., Any],
    spark: Any,
    version: str,
    line: str | None,
    before: Diagnosis,
    notify: Callable[[CatchUpProgress], None],
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> CatchUpReport:
    try:
        writer = job(spark)
    except Exception as exc:  # the operator's function failing is a refusal, not a crash
        first = (spark_message_of(_exception_text(exc)).splitlines() or [""])[0]
        raise CatchUpRefusedError(
            Refusal(
                "job-failed",
                f"job {spec.text} raised {type(exc).__name__}" + (f": {first}" if first else ""),
                f"run {spec.text} on its own to fix it; it must return df.writeStream... without start()",
                usage=True,
            )
        ) from exc
    check_writer(writer, spec)
    writer = writer.option("checkpointLocation", _spark_location(opts.checkpoint))
    if opts.mode == ASYNC:
        writer = (
            writer.option("asyncProgressTrackingEnabled", "true")
            .option("asyncProgressTrackingCheckpointIntervalMs", "0")
            .trigger(processingTime=TRIGGER_INTERVAL)
        )
    else:
        # Trigger.AvailableNow: sources that do not support it fall back to one batch, and Spark
        # says so itself ("does not support Trigger.AvailableNow. Falling back to single batch
        # execution", MicroBatchExecution); either way the run ends by itself.
        writer = writer.trigger(availableNow=True)
    t0 = clock()
    try:
        query = writer.start()
    except Exception as exc:  # Spark's refusals at start() are results
        raise CatchUpRefusedError(
            refusal_for_spark_error(_exception_text(exc), opts.checkpoint, at_start=True, spark_version=version)
        ) from exc

    executed: dict[int, int] = {}
    notes: list[str] = []
    stopped_by_us = False
    timed_out = False
    durable = False
    last_check = -DURABLE_CHECK_S
    checked_at_count = -1
    ready_since: float | None = None
    phase = "running"
    try:
        while True:
            for p in query.recentProgress:
                executed.update(executed_batches([progress_dict(p)]))
            elapsed = clock() - t0
            rows = sum(executed.values())
            notify(CatchUpProgress(phase, len(executed), opts.batches, rows, elapsed, max(executed) if executed else None))
            if not query.isActive:
                break
            if opts.mode == ASYNC and len(executed) >= opts.batches:
                if not durable and (len(executed) != checked_at_count or elapsed - last_check >= DURABLE_CHECK_S):
                    durable = _durable_now(opts)
                    last_check, checked_at_count = elapsed, len(executed)
                if should_stop(len(executed), opts.batches, durable):
                    phase = "stopping"
                    ready_since = elapsed if ready_since is None else ready_since
                    status = query.status or {}
                    if not status.get("isTriggerActive", False) or elapsed - ready_since >= STOP_IDLE_GRACE_S:
                        if status.get("isTriggerActive", False):
                            notes.append(f"stopped during a batch: no pause between triggers within {STOP_IDLE_GRACE_S:g} s")
                        break
                else:
                    phase = "waiting for a durable tail"
            if elapsed >= opts.timeout_s:
                # Enough durable batches but no pause between triggers yet: done, not timed out.
                timed_out = not (opts.mode == ASYNC and should_stop(len(executed), opts.batches, durable))
                break
            sleep(POLL_S)
    finally:
        stop_error = None
        if query.isActive:
            stopped_by_us = True
            try:
                query.stop()
            except Exception as exc:  # noqa: BLE001 - judged below like the query's own exception
                stop_error = _exception_text(exc)
    for p in query.recentProgress:
        executed.update(executed_batches([progress_dict(p)]))
    elapsed = clock() - t0
    failure = query.exception()
    text = _exception_text(failure) if failure is not None else stop_error
    if text is not None:
        if stopped_by_us and is_stop_artifact(text):
            notes.append(f"Spark reported an interruption when the query was stopped, ignored: {spark_message_of(text).splitlines()[0]}")
        else:
            # The query ran before it failed (Spark checks a stateful plan when the first batch runs,
            # after offsets/N is written), so say what it left.
            refusal = refusal_for_spark_error(text, opts.checkpoint, at_start=False, spark_version=version)
            raise CatchUpRefusedError(with_tail(refusal, tail_state(_load(opts))))

    after_snapshot = _load(opts)
    tail = tail_state(after_snapshot)
    # live_window_s=0: this run wrote the newest batch seconds ago; it is stopped now.
    after = diagnose(after_snapshot, DiagnoseOptions(spark=line, mode="micro-batch", live_window_s=0))
    if opts.mode == SYNC and not timed_out and not executed:
        notes.append("no batch ran: nothing was uncommitted and the sources had no new data")
    ids = tuple(sorted(executed))
    report = CatchUpReport(
        checkpoint=after_snapshot.root,
        job=spec.text,
        mode=opts.mode,
        spark_version=version,
        batches_wanted=opts.batches if opts.mode == ASYNC else 0,
        batch_ids=ids,
        rows=sum(executed.values()),
        elapsed_s=elapsed,
        timed_out=timed_out,
        before=before,
        tail=tail,
        after=after,
        notes=tuple(notes),
    )
    notify(CatchUpProgress("done", len(ids), opts.batches, report.rows, elapsed, ids[-1] if ids else None))
    if timed_out:
        raise CatchUpRefusedError(timeout_refusal(after_snapshot.root, opts.mode, opts.batches, ids, opts.timeout_s, tail), report)
    return report
