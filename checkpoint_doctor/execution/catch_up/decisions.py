"""The catch-up run's decisions, pure: given the snapshot, the diagnoses and what the running query
reported, what to do next.

* :func:`pre_start_refusal`: what the run refuses before Spark starts (a live writer, state with
  async tracking, a restart that fails anyway);
* :func:`query_settings`: the options and trigger the job's writer gets;
* :class:`Watch`: which batches ran, when to look for a durable tail (:func:`tail_state`), when to
  stop the query and when the run timed out;
* :func:`refusal_for_spark_error`, :func:`timeout_refusal`: Spark's refusals in Spark's words, and
  what the run left;
* :func:`next_command` and the hints: commands that run as printed (shell-quoted).

Nothing here reads storage, imports pyspark, prints or sleeps; :mod:`.run` does the I/O.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from checkpoint_doctor.diagnosis import Diagnosis
from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.versions import LINES, at_root
from checkpoint_doctor.execution.catch_up.model import (
    ASYNC,
    SYNC,
    CatchUpOptions,
    CatchUpProgress,
    CatchUpReport,
    Refusal,
    RunFacts,
    TailState,
)
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot

#: Processing-time trigger of the async run. Not 0: a 0 s trigger starts the next batch as soon as
#: one ends, so a stop() nearly always interrupts a running batch (3.5.9 logs "Data source write
#: support MicroBatchWrite[epoch: N ...] is aborting"; 4.3.0 fails the query with
#: "RejectedExecutionException: Producer interrupted"). With a pause between triggers the runner
#: stops while the query waits (StreamingQuery.status isTriggerActive false).
TRIGGER_INTERVAL = "1 second"
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

#: The phases of the status line.
RUNNING = "running"
WAITING = "waiting for a durable tail"
STOPPING = "stopping"
DONE = "done"
#: How a watched run ends (:attr:`Watch.outcome`).
ENDED = "ended"  # the query stopped by itself (sync mode's AvailableNow, or a failure)
STOP = "stop"  # enough durable batches: the runner stops the query
TIMED_OUT = "timed out"


# ------------------------------------------------------------------------------------------ commands


def restart_mode(mode: str) -> str:
    """Return the restart mode (``diagnose --mode``) a catch-up mode runs the query in."""
    return "async" if mode == ASYNC else "micro-batch"


def cli_command(*words: str) -> str:
    """Return a ``checkpoint-doctor`` command line, each word shell-quoted (paths with spaces)."""
    return shlex.join(["checkpoint-doctor", *words])


def catch_up_command(options: CatchUpOptions, checkpoint: str, *, debug: bool = False) -> str:
    """Return the ``catch-up`` command for ``options``: the options that differ from the defaults.

    ``--storage-option`` values are not repeated (like every hint of the project, they may hold
    credentials).
    """
    default = CatchUpOptions(checkpoint, options.job)
    words = ["--debug"] if debug else []
    words += ["catch-up", checkpoint, "--job", options.job]
    if options.mode != default.mode:
        words += ["--mode", options.mode]
    if options.batches != default.batches:
        words += ["--batches", str(options.batches)]
    if options.timeout_s != default.timeout_s:
        words += ["--timeout", f"{options.timeout_s:g}"]
    if options.live_window_s != default.live_window_s:
        words += ["--live-window", f"{options.live_window_s:g}"]
    if options.master:
        words += ["--master", options.master]
    for key, value in options.confs:
        words += ["--conf", f"{key}={value}"]
    return cli_command(*words)


def bridge_command(checkpoint: str, line: str) -> str:
    """Return the bridge repair as two commands that run as printed (``apply`` asks before it writes)."""
    plan = cli_command(
        "plan",
        checkpoint,
        "--mode",
        "micro-batch",
        "--spark",
        line,
        "--strategy",
        "bridge",
        "-o",
        "plan.json",
    )
    return f"{plan} && {cli_command('apply', 'plan.json')}"


def instead(facts: RunFacts) -> str:
    """Return the next step when catch-up cannot run: nothing if a synchronous restart already
    starts, else the bridge (it needs neither the job nor new data)."""
    before = facts.before.prediction
    if before.starts:
        return (
            f"nothing to catch up: a synchronous restart already starts ({before.summary}); "
            "restart the job without asyncProgressTrackingEnabled"
        )
    return f"bridge the gap (the bridge needs neither the job nor new data): {bridge_command(facts.checkpoint, facts.line)}"


def next_command(checkpoint: str, after: Diagnosis) -> str:
    """Return the operator's next step after a catch-up, from the synchronous re-diagnosis."""
    if after.prediction.starts:
        check = cli_command("diagnose", checkpoint, "--mode", "micro-batch", "--spark", after.spark)
        return (
            "restart the job without asyncProgressTrackingEnabled (a synchronous restart now starts); "
            f"to check again first: {check}"
        )
    return cli_command("plan", checkpoint, "--mode", "micro-batch", "--spark", after.spark)


# ------------------------------------------------------------------------------------------ the tail


def spark_line(version: str) -> str | None:
    """Return the diagnosis target line of a running Spark version (``4.3.0`` -> ``4.3``), if known."""
    short = ".".join(version.split(".")[:2])
    return short if short in LINES else None


def tail_state(snapshot: CheckpointSnapshot) -> TailState:
    """Return the tail of the logs and whether a synchronous restart can use it.

    Durable means: the newest two offsets files ``L-1`` and ``L`` exist and parse, and both have a
    readable commit, and no commit is newer than ``L``. Why this is the right test:

    * a synchronous restart (``MicroBatchExecution.populateStartOffsets``) reads exactly
      ``offsets/L`` and ``offsets/L-1`` and compares ``K = max(commits)`` with ``L``;
      with ``K == L`` it plans a new batch ``L+1`` from ``offsets/L``;
    * with async progress tracking, ``AsyncOffsetSeqLog`` writes an offsets file on its own thread
      and ``AsyncCommitLog`` writes a commit only for a batch whose offsets file was written
      (``AsyncProgressTrackingMicroBatchExecution``), so a batch is durable only when both files
      are visible; ``HDFSMetadataLog`` writes
      through ``CheckpointFileManager.createAtomic`` (temp file, then rename), so a listed file is
      complete;
    * ``commits/L-1`` is not read by the restart, but requiring it means two consecutive batches
      completed with interval 0: the seed's "at least two micro-batches", and proof that the async
      writer now persists every batch.
    """
    durable, why = _durability(snapshot)
    return TailState(snapshot.offsets.ids[-3:], snapshot.commits.ids[-3:], durable, why)


def _durability(snapshot: CheckpointSnapshot) -> tuple[bool, str]:
    offsets, commits = snapshot.offsets, snapshot.commits
    latest = offsets.latest_id
    if latest is None or latest == 0:
        return False, "fewer than two offsets files"
    if offsets.get(latest - 1) is None:
        below = offsets.newest_below(latest)
        gap = f"offsets/{below.batch_id}" if below is not None else "nothing"
        return False, f"offsets/{latest - 1} is missing (offsets/{latest} follows {gap})"
    for b in (latest - 1, latest):
        entry = offsets.get(b)
        if entry is None or entry.record is None:
            return False, f"offsets/{b} was not read or does not parse"
    for b in (latest - 1, latest):
        c = commits.get(b)
        if c is None:
            return False, f"commits/{b} is missing"
        if c.record is None:
            return False, f"commits/{b} was not read or does not parse"
    if commits.latest_id != latest:
        return False, f"commits/{commits.latest_id} is newer than offsets/{latest}"
    return True, f"offsets/{latest - 1}, offsets/{latest} and their commits are on disk"


def tail_is_durable(snapshot: CheckpointSnapshot) -> bool:
    """Return whether the newest two batches are durable (see :func:`tail_state`)."""
    return tail_state(snapshot).durable


def tail_text(tail: TailState) -> str:
    """Return ``offsets 20, 31, 32; commits 20, 31`` (the newest ids), or "" for empty logs."""
    if not tail.offsets and not tail.commits:
        return ""
    return f"offsets {', '.join(map(str, tail.offsets)) or 'none'}; commits {', '.join(map(str, tail.commits)) or 'none'}"


# ------------------------------------------------------------------------------------------ the query


@dataclass(frozen=True)
class QuerySettings:
    """What the runner adds to the job's ``DataStreamWriter``: options, then the trigger."""

    options: tuple[tuple[str, str], ...]
    trigger: Mapping[str, Any]


def query_settings(mode: str, location: str) -> QuerySettings:
    """Return the writer settings of a run: the checkpoint and, in async mode, async progress
    tracking with interval 0 and a processing-time trigger (see :data:`TRIGGER_INTERVAL`).

    Sync mode uses ``Trigger.AvailableNow``: sources that do not support it fall back to one batch,
    and Spark says so itself ("does not support Trigger.AvailableNow. Falling back to single batch
    execution", MicroBatchExecution); either way the run ends by itself.
    """
    checkpoint = (("checkpointLocation", location),)
    if mode == ASYNC:
        return QuerySettings(
            (
                *checkpoint,
                ("asyncProgressTrackingEnabled", "true"),
                ("asyncProgressTrackingCheckpointIntervalMs", "0"),
            ),
            {"processingTime": TRIGGER_INTERVAL},
        )
    return QuerySettings(checkpoint, {"availableNow": True})


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


@dataclass(frozen=True)
class Watch:
    """What the run knows between two polls of the query, and the rule for when it ends.

    The loop feeds it the query's progress events (:meth:`seen`), the durability checks it asks for
    (:meth:`wants_durability_check`, :meth:`checked`) and the query's trigger status
    (:meth:`decide`); ``outcome`` is set when the run is over. In async mode the run stops once at
    least ``wanted`` batches ran AND the tail is durable, preferably between two triggers (it waits
    up to :data:`STOP_IDLE_GRACE_S` for a pause); sync mode only ends by itself or by the timeout.
    """

    mode: str
    wanted: int
    timeout_s: float
    batches: tuple[tuple[int, int], ...] = ()
    durable: bool = False
    checked_at: tuple[float, int] | None = None
    ready_since: float | None = None
    phase: str = RUNNING
    outcome: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def batch_ids(self) -> tuple[int, ...]:
        """Return the ids of the batches that ran, ascending."""
        return tuple(b for b, _ in self.batches)

    @property
    def rows(self) -> int:
        """Return the input rows of the batches that ran."""
        return sum(rows for _, rows in self.batches)

    @property
    def enough(self) -> bool:
        """Return whether an async run has run the batches it wants (durable or not)."""
        return self.mode == ASYNC and len(self.batches) >= self.wanted

    @property
    def ready(self) -> bool:
        """Return whether an async run has done its work: enough batches AND a durable tail."""
        return self.enough and self.durable

    @property
    def timed_out(self) -> bool:
        """Return whether the run ended by its timeout."""
        return self.outcome == TIMED_OUT

    def seen(self, progress: Iterable[Mapping[str, Any]]) -> Watch:
        """Return the watch with the batches the progress events show (seen again: counted once)."""
        merged = dict(self.batches)
        merged.update(executed_batches(progress))
        return replace(self, batches=tuple(sorted(merged.items())))

    def progress(self, elapsed_s: float, *, phase: str | None = None) -> CatchUpProgress:
        """Return the status update for the CLI's status line."""
        ids = self.batch_ids
        return CatchUpProgress(
            phase or self.phase,
            len(ids),
            self.wanted,
            self.rows,
            elapsed_s,
            ids[-1] if ids else None,
        )

    def wants_durability_check(self, elapsed_s: float) -> bool:
        """Return whether to take a snapshot now: enough batches, not yet durable, and a new batch
        since the last look or :data:`DURABLE_CHECK_S` passed."""
        if not self.enough or self.durable:
            return False
        if self.checked_at is None:
            return True
        at, count = self.checked_at
        return count != len(self.batches) or elapsed_s - at >= DURABLE_CHECK_S

    def checked(self, elapsed_s: float, durable: bool) -> Watch:
        """Return the watch after a durability check."""
        return replace(self, durable=durable, checked_at=(elapsed_s, len(self.batches)))

    def ended(self) -> Watch:
        """Return the watch of a query that is no longer active."""
        return replace(self, outcome=ENDED)

    def decide(self, elapsed_s: float, trigger_active: bool) -> Watch:
        """Return the watch with the phase and, when the run is over, its outcome.

        ``trigger_active`` is the query's ``status["isTriggerActive"]`` (only read when
        :attr:`ready`): stopping between two triggers does not interrupt a batch.
        """
        if self.ready:
            since = elapsed_s if self.ready_since is None else self.ready_since
            now = replace(self, phase=STOPPING, ready_since=since)
            if not trigger_active:
                return replace(now, outcome=STOP)
            if elapsed_s - since >= STOP_IDLE_GRACE_S:
                return now._stop_during_batch(f"no pause between triggers within {STOP_IDLE_GRACE_S:g} s")
            if elapsed_s >= self.timeout_s:
                return now._stop_during_batch(
                    f"--timeout {self.timeout_s:g} s came before a pause between triggers"
                )
            return now
        now = replace(self, phase=WAITING) if self.enough else self
        if elapsed_s >= self.timeout_s:
            return replace(now, outcome=TIMED_OUT)
        return now

    def _stop_during_batch(self, why: str) -> Watch:
        return replace(self, outcome=STOP).noted(f"stopped during a batch: {why}")

    def noted(self, note: str) -> Watch:
        """Return the watch with a note for the report."""
        return replace(self, notes=(*self.notes, note))

    def final_notes(self) -> tuple[str, ...]:
        """Return the notes of the report."""
        if self.mode == SYNC and self.outcome == ENDED and not self.batches:
            return (*self.notes, "no batch ran: nothing was uncommitted and the sources had no new data")
        return self.notes


# ------------------------------------------------------------------------------------------ refusals


def pre_start_refusal(snapshot: CheckpointSnapshot, restart: Diagnosis, facts: RunFacts) -> Refusal | None:
    """Return why the run must not start, or None. ``restart`` is the diagnosis for the restart the
    run does (async or synchronous, by the mode).

    Order: a live writer first (two writers corrupt a checkpoint; nothing else matters), then state
    with async tracking (Spark refuses it), then a restart that the model predicts fails anyway.
    """
    cp = facts.checkpoint
    mode = facts.options.mode
    live = [f for f in restart.findings if f.code in (Code.LIVE_WRITER, Code.FRESH_TEMP_FILE)]
    if live:
        f = live[0]
        return Refusal(
            "live-writer",
            f"a streaming query may be writing to {cp} right now ({f.code}: {f.message.rstrip('.')})",
            "stop the query, wait for the live window to pass (or pass --live-window 0 if you are sure it is stopped), then run catch-up again",
            before_run=True,
        )
    if mode == ASYNC and snapshot.state.operators:
        ops = ", ".join(f"state/{op.operator_id}" for op in snapshot.state.operators)
        return Refusal(
            "stateful",
            f"{cp} belongs to a stateful query ({ops}) and Spark refuses async progress tracking for it: {STATEFUL_TEXT}",
            instead(facts),
            spark_message=STATEFUL_TEXT,
            before_run=True,
        )
    pred = restart.prediction
    if pred.starts:
        return None
    if mode == SYNC:
        step = f"run catch-up in the default async mode: {catch_up_command(replace(facts.options, mode=ASYNC), cp)}; or {instead(facts)}"
    else:
        step = cli_command("plan", cp, "--mode", "async", "--spark", restart.spark)
    what = "an async restart" if mode == ASYNC else "a synchronous restart"
    return Refusal(
        "restart-fails",
        f"{what} of {cp} fails before any batch runs ({at_root(pred.summary, cp)}), so the job cannot catch up",
        step,
        spark_message=pred.error.message if pred.error is not None else None,
        before_run=True,
    )


def first_line(text: str) -> str:
    """Return the first non-blank line of a text, stripped ("" for none)."""
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


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


def interruption_note(text: str) -> str:
    """Return the report's note for an interruption caused by the runner's own stop()."""
    return f"Spark reported an interruption when the query was stopped, ignored: {first_line(spark_message_of(text))}"


def refusal_for_spark_error(text: str, facts: RunFacts, *, at_start: bool) -> Refusal:
    """Classify a failure Spark raised at ``start()`` or while running, keeping its message verbatim."""
    message = spark_message_of(text)
    version = facts.spark_version
    sink = _SINK_RE.search(message)
    if sink is not None:
        return Refusal(
            "sink-unsupported",
            f"Spark {version} refused the job's sink for async progress tracking: {sink.group(0)}",
            instead(facts),
            spark_message=sink.group(0),
        )
    if STATEFUL_TEXT in message:
        return Refusal(
            "stateful",
            f"Spark {version} refused the job: {STATEFUL_TEXT}",
            instead(facts),
            spark_message=STATEFUL_TEXT,
        )
    when = "at start()" if at_start else "while running"
    diagnose = cli_command(
        "diagnose", facts.checkpoint, "--mode", restart_mode(facts.options.mode), "--spark", facts.line
    )
    return Refusal(
        "spark-failed",
        f"the query failed {when} on Spark {version}: {first_line(message) or '(no message)'}",
        f"{diagnose}; fix the job or the checkpoint, then run catch-up again",
        spark_message=message or None,
    )


def with_tail(refusal: Refusal, tail: TailState) -> Refusal:
    """Return a refusal of a failed run that also says what the run left in the logs."""
    text = tail_text(tail)
    if not text:
        return refusal
    return replace(refusal, message=f"{refusal.message} (the checkpoint now has {text})")


def timeout_refusal(facts: RunFacts, report: CatchUpReport) -> Refusal:
    """Return the refusal for a run that did not finish within ``--timeout``.

    Sync mode: its batches were still running, so the same run with a longer timeout. Async mode:
    if the run made a synchronous restart start (one new batch can be enough to make the tail
    durable), the operator restarts the job; else :func:`instead` (nothing to do if it started
    before the run, else the bridge: it needs no new data).
    """
    opts, tail, ran = facts.options, report.tail, report.batch_ids
    timeout = f"{opts.timeout_s:g} s"
    left = "the checkpoint is as the last durable batch left it"
    if tail_text(tail):
        left += f" ({tail_text(tail)})"
    if opts.mode == SYNC:
        longer = catch_up_command(replace(opts, timeout_s=opts.timeout_s * 4), facts.checkpoint)
        what = f"the query did not finish within {timeout} ({len(ran)} batch(es) ran)"
        step = f"run it again with a longer timeout: {longer}"
    else:
        if not ran:
            what = f"no new data within {timeout}: no batch ran"
        elif len(ran) < opts.batches:
            what = f"only {len(ran)} of {opts.batches} batch(es) ran within {timeout} (no new data after batch {max(ran)})"
        else:
            what = f"{len(ran)} batch(es) ran within {timeout} but the tail is not durable ({tail.why})"
        made_it = report.after.prediction.starts and not facts.before.prediction.starts
        step = next_command(facts.checkpoint, report.after) if made_it else instead(facts)
    return Refusal(
        "no-new-data" if opts.mode == ASYNC else "timeout", f"{what}; the query was stopped and {left}", step
    )
