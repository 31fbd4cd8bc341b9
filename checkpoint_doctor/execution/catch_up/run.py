"""The catch-up run's I/O: read the checkpoint, ask :mod:`.decisions`, start Spark through
:mod:`checkpoint_doctor.spark`, watch the query, read the checkpoint again, report.

Library code: nothing here prints or exits; progress goes to a callback.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.errors import StorageError, UsageError
from checkpoint_doctor.execution.catch_up.decisions import (
    DONE,
    Watch,
    catch_up_command,
    interruption_note,
    is_stop_artifact,
    next_command,
    pre_start_refusal,
    query_settings,
    refusal_for_spark_error,
    restart_mode,
    spark_line,
    tail_is_durable,
    tail_state,
    timeout_refusal,
    with_tail,
)
from checkpoint_doctor.execution.catch_up.job import build_writer, load_job, parse_job_spec
from checkpoint_doctor.execution.catch_up.model import (
    ASYNC,
    MODES,
    CatchUpOptions,
    CatchUpProgress,
    CatchUpRefusedError,
    CatchUpReport,
    RunFacts,
)
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.spark import (
    Query,
    QueryStartError,
    SessionOptions,
    require_pyspark,
    spark_session,
    start_query,
)

#: How often the running query is polled.
POLL_S = 0.2


@dataclass(frozen=True)
class Clock:
    """The run's time: ``now`` (monotonic seconds) and ``sleep`` (tests pass their own)."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


def run_catch_up(
    opts: CatchUpOptions,
    *,
    on_progress: Callable[[CatchUpProgress], None] | None = None,
    clock: Clock | None = None,
) -> CatchUpReport:
    """Run the catch-up (see the package docstring) and return the report.

    Raises:
        UsageError: a malformed ``--job`` or option.
        MissingDependencyError: pyspark is not installed.
        SparkStartError: Spark cannot start.
        StorageError, NotACheckpointError: the checkpoint cannot be read.
        CatchUpRefusedError: a refusal (its ``refusal.exit_code`` is 2 for the job, 4 otherwise).
    """
    if opts.mode not in MODES:
        raise UsageError(f"unknown catch-up mode {opts.mode!r}", hint=f"use one of {', '.join(MODES)}")
    spec = parse_job_spec(opts.job)
    version = require_pyspark("catch-up")
    line = spark_line(version)
    notify = on_progress or (lambda _p: None)

    snapshot = _load(opts)
    restart = diagnose(
        snapshot,
        DiagnoseOptions(
            spark=line,
            mode=restart_mode(opts.mode),
            live_window_s=opts.live_window_s,
            now_ms=opts.now_ms,
        ),
    )
    before = diagnose(snapshot, DiagnoseOptions(spark=line, mode="micro-batch", live_window_s=0))
    facts = RunFacts(opts, snapshot.root, version, before)
    refusal = pre_start_refusal(snapshot, restart, facts)
    if refusal is not None:
        raise CatchUpRefusedError(refusal)
    job = load_job(spec, debug_command=catch_up_command(opts, facts.checkpoint, debug=True))

    notify(CatchUpProgress("starting Spark", 0, opts.batches, 0, 0.0))
    with spark_session(SessionOptions("checkpoint-doctor catch-up", opts.master, opts.confs)) as spark:
        writer = build_writer(job, spark, facts)
        return _Run(facts, notify, clock or Clock()).watch(writer)


@dataclass(frozen=True)
class _Run:
    """One run of the job's query: start it, poll it until the watch says it is over, stop it, judge
    how it ended and report."""

    facts: RunFacts
    notify: Callable[[CatchUpProgress], None]
    clock: Clock

    def watch(self, writer: object) -> CatchUpReport:
        facts = self.facts
        opts = facts.options
        settings = query_settings(opts.mode, _spark_location(opts.checkpoint))
        t0 = self.clock.now()
        try:
            query = start_query(writer, settings.options, settings.trigger)
        except QueryStartError as exc:
            raise CatchUpRefusedError(refusal_for_spark_error(exc.text, facts, at_start=True)) from exc
        watch = Watch(opts.mode, opts.batches, opts.timeout_s)
        try:
            watch = self._poll(query, watch, t0)
        finally:
            stopped_by_us = query.active
            stop_error = query.stop() if stopped_by_us else None
        watch = watch.seen(query.progress())
        elapsed = self.clock.now() - t0
        failure = query.failure() or stop_error
        if failure is not None:
            if not (stopped_by_us and is_stop_artifact(failure)):
                # The query ran before it failed (Spark checks a stateful plan when the first batch
                # runs, after offsets/N is written), so say what it left.
                refusal = refusal_for_spark_error(failure, facts, at_start=False)
                raise CatchUpRefusedError(with_tail(refusal, tail_state(_load(opts))))
            watch = watch.noted(interruption_note(failure))
        report = self._report(watch, elapsed)
        self.notify(watch.progress(elapsed, phase=DONE))
        if watch.timed_out:
            raise CatchUpRefusedError(timeout_refusal(facts, report), report)
        return report

    def _poll(self, query: Query, watch: Watch, t0: float) -> Watch:
        while True:
            watch = watch.seen(query.progress())
            elapsed = self.clock.now() - t0
            self.notify(watch.progress(elapsed))
            if not query.active:
                return watch.ended()
            if watch.wants_durability_check(elapsed):
                watch = watch.checked(elapsed, _durable_now(self.facts.options))
            watch = watch.decide(elapsed, query.trigger_active() if watch.ready else False)
            if watch.outcome is not None:
                return watch
            self.clock.sleep(POLL_S)

    def _report(self, watch: Watch, elapsed: float) -> CatchUpReport:
        """Read the checkpoint the run left and re-diagnose it for a synchronous restart."""
        facts, opts = self.facts, self.facts.options
        snapshot = _load(opts)
        # live_window_s=0: this run wrote the newest batch seconds ago; it is stopped now.
        after = diagnose(snapshot, DiagnoseOptions(spark=facts.line, mode="micro-batch", live_window_s=0))
        return CatchUpReport(
            checkpoint=snapshot.root,
            job=opts.job,
            mode=opts.mode,
            spark_version=facts.spark_version,
            batches_wanted=opts.batches if opts.mode == ASYNC else 0,
            batch_ids=watch.batch_ids,
            rows=watch.rows,
            elapsed_s=elapsed,
            timed_out=watch.timed_out,
            before=facts.before,
            tail=tail_state(snapshot),
            after=after,
            next_command=next_command(snapshot.root, after),
            notes=watch.final_notes(),
        )


def _load(opts: CatchUpOptions) -> CheckpointSnapshot:
    from checkpoint_doctor.reading.pipeline import load_checkpoint, require_checkpoint

    return require_checkpoint(load_checkpoint(opts.checkpoint, storage_options=opts.storage_options))


def _durable_now(opts: CatchUpOptions) -> bool:
    try:
        return tail_is_durable(_load(opts))
    except StorageError:
        # Spark renames temp files while the listing runs (CheckpointFileManager.createAtomic); a
        # file that vanished between listing and stat fails this look only: try again next poll.
        return False


def _spark_location(checkpoint: str) -> str:
    """Return the checkpoint as Spark gets it: URLs as they are, local paths absolute."""
    return checkpoint if "://" in checkpoint else os.path.abspath(os.path.expanduser(checkpoint))
