"""The catch-up runner: run the operator's own streaming job on a checkpoint until its tail is durable.

This is the seed documents' recipe for a query that cannot restart after asynchronous progress
tracking was switched off ("re-enable asyncProgressTrackingEnabled, set
asyncProgressTrackingCheckpointIntervalMs to 0, run at least two micro-batches, stop, disable"), done
on the real job and checked with the project's own loader and diagnosis:

1. diagnose the checkpoint for the restart the run performs and refuse what cannot work (a live
   writer, state for async tracking, a restart that already fails);
2. import ``MODULE:FUNCTION`` or ``PATH.py:FUNCTION`` and call it with a SparkSession: it returns the
   job's ``DataStreamWriter``, not started;
3. ``--mode async`` (default): add ``checkpointLocation``, ``asyncProgressTrackingEnabled=true``,
   ``asyncProgressTrackingCheckpointIntervalMs=0`` and a processing-time trigger, start, count the
   batches that ran from ``recentProgress``, and stop between two triggers once at least ``--batches``
   ran AND a snapshot shows a durable tail;
   ``--mode sync``: the job as it is with ``Trigger.AvailableNow`` (Spark itself falls back to one
   batch for sources that do not support it), which re-runs an uncommitted batch and stops by itself;
4. re-diagnose for a synchronous restart on the running Spark line: that is the verdict.

Modules: :mod:`.model` (the values), :mod:`.decisions` (pure: refusals in Spark's words, the
durable tail, when to stop, the hints), :mod:`.job` (importing and calling the operator's job),
:mod:`.run` (the I/O). Spark itself is reached only through :mod:`checkpoint_doctor.spark`, the one
module that imports pyspark.
"""

from __future__ import annotations

from checkpoint_doctor.execution.catch_up.model import (
    ASYNC,
    MODES,
    SYNC,
    CatchUpOptions,
    CatchUpProgress,
    CatchUpRefusedError,
    CatchUpReport,
    Refusal,
    TailState,
)
from checkpoint_doctor.execution.catch_up.run import Clock, run_catch_up

__all__ = [
    "ASYNC",
    "MODES",
    "SYNC",
    "CatchUpOptions",
    "CatchUpProgress",
    "CatchUpRefusedError",
    "CatchUpReport",
    "Clock",
    "Refusal",
    "TailState",
    "run_catch_up",
]
