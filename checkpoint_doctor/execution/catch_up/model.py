"""The catch-up run's values: what the operator asked for, what is known before the query starts,
why the run refused, the logs' tail, status updates and the report. Immutable, JSON-safe via
``to_dict``; no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from checkpoint_doctor.diagnosis import Diagnosis
from checkpoint_doctor.diagnosis.model import DEFAULT_LIVE_WINDOW_S
from checkpoint_doctor.diagnosis.versions import at_root
from checkpoint_doctor.errors import RunnerError
from checkpoint_doctor.exit_codes import ExitCode

ASYNC = "async"
SYNC = "sync"
MODES = (ASYNC, SYNC)


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
    live_window_s: float = DEFAULT_LIVE_WINDOW_S
    now_ms: int | None = None


@dataclass(frozen=True)
class RunFacts:
    """What is known before the query starts: the options, the checkpoint's root as the loader names
    it, the running PySpark version and the synchronous restart before the run (its ``spark`` is the
    line the run's diagnoses use)."""

    options: CatchUpOptions
    checkpoint: str
    spark_version: str
    before: Diagnosis

    @property
    def line(self) -> str:
        """Return the Spark line of the run's diagnoses (``3.5``)."""
        return self.before.spark


@dataclass(frozen=True)
class Refusal:
    """Why catch-up will not run (or stopped): a stable ``reason``, a one-line message, the next step.

    ``spark_message`` is Spark's own text where Spark refused. ``usage`` refusals are about the
    operator's input (the job) and exit 2; ``before_run`` refusals (a live writer, a stateful query
    for async tracking, a restart predicted to fail) are made before Spark starts, nothing changed,
    and exit 32 like every refused change; the others stop a run and exit 4.
    """

    reason: str
    message: str
    next_step: str
    spark_message: str | None = None
    usage: bool = False
    before_run: bool = False

    @property
    def exit_code(self) -> int:
        """Return 2 for a problem with the job, 32 for a refusal before the run, 4 for a stopped run."""
        if self.usage:
            return ExitCode.USAGE
        return ExitCode.REFUSED if self.before_run else ExitCode.ERRORS

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "reason": self.reason,
            "message": self.message,
            "spark_message": self.spark_message,
            "next_step": self.next_step,
        }


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
        return {
            "offsets": list(self.offsets),
            "commits": list(self.commits),
            "durable": self.durable,
            "why": self.why,
        }


@dataclass(frozen=True)
class CatchUpReport:
    """What the run did and the verdict: the re-diagnosis for a synchronous restart, and what the
    operator does next (:func:`~checkpoint_doctor.execution.catch_up.decisions.next_command`)."""

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
    next_command: str
    notes: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """Return the re-diagnosis' exit code (0, 1 or 4)."""
        return self.after.exit_code

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
            "before": self.before.to_dict()["restart"],
            "tail": self.tail.to_dict(),
            "diagnosis": self.after.to_dict(),
            "verdict": at_root(self.after.prediction.summary, self.after.checkpoint),
            "next_command": self.next_command,
            "notes": list(self.notes),
            "exit_code": self.exit_code,
        }


class CatchUpRefusedError(RunnerError):
    """Raised when catch-up refuses to run or stops without a durable tail; ``report`` is set once
    the query ran (what it did, and the checkpoint as it was left)."""

    def __init__(self, refusal: Refusal, report: CatchUpReport | None = None) -> None:
        super().__init__(refusal.message, hint=f"next: {refusal.next_step}")
        self.refusal = refusal
        self.report = report
