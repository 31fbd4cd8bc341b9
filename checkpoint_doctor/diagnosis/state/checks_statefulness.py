"""Checks on what the checkpoint cannot prove: state that may have existed and is gone. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.detect import ASYNC, MICRO_BATCH
from checkpoint_doctor.diagnosis.facts import SnapshotFacts
from checkpoint_doctor.diagnosis.line_rules import CellMemo, answers_alike, cell_memo, restamped
from checkpoint_doctor.diagnosis.model import DiagnoseOptions, Finding, RestartPrediction
from checkpoint_doctor.diagnosis.restart import predict_restart, state_step
from checkpoint_doctor.diagnosis.state.statefulness import UNKNOWN, Statefulness
from checkpoint_doctor.diagnosis.tracing import Question, traced
from checkpoint_doctor.diagnosis.versions import SparkTarget, target
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot


def if_stateful(ctx: Context) -> RestartPrediction:
    """Return what this target does if the query has stateful operators (the same Context facts)."""
    hypothesis = Context(ctx.snapshot, ctx.target, replace(ctx.options, stateful=True), ctx.facts)
    return predict_restart(hypothesis)


def stateful_by_line(
    snapshot: CheckpointSnapshot, facts: SnapshotFacts, base: DiagnoseOptions, lines: Iterable[str]
) -> tuple[tuple[str, str], ...]:
    """Return, per line, what a restart in the detected mode does if the query has stateful operators,
    when nothing tells whether it has and nothing suggests it (no state/, no watermark: no CD310).

    Such a checkpoint is diagnosed as stateless, and rightly stays healthy; but a stateful query
    restarted on it loads state version L+1 that does not exist, and each line says so in its own
    words (``StateStoreRDD`` failing on ``1.delta does not exist`` up to 4.1, 4.2's
    ``STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY``). The same hypothesis CD310 makes
    (:func:`if_stateful`), asked once per line, not per cell. Empty when statefulness is known, named
    with ``--stateful``/``--stateless``, suspected (CD310 says it), or no batch was planned yet.
    """
    statefulness = facts.statefulness
    if base.stateful is not None or statefulness.verdict != UNKNOWN or statefulness.suspected:
        return ()
    if not snapshot.offsets.ids:
        return ()  # a fresh query plans batch 0 and creates its state: nothing is missing
    # The lines whose rules answer this prediction's questions alike share its outcome, as a restart
    # matrix's cells share theirs (diagnosis.line_rules): computed once per distinct answer.
    known: list[tuple[tuple[Question, ...], str]] = []
    cells = _CellSteps(snapshot, facts, base)
    out = []
    for line in lines:
        real = target(line)
        summary = next((what for questions, what in known if answers_alike(questions, real)), None)
        if summary is None:
            summary = cells.state_step(real)
        if summary is None:
            trace: list[Question] = []
            # The detected mode (None) on this line: a copy of the options, not dataclasses.replace.
            ctx = Context(snapshot, traced(real, trace), restamped(base, line, mode=None), facts)
            summary = if_stateful(ctx).summary
            known.append((tuple(trace), summary))
        out.append((line, summary))
    return tuple(out)


class _CellSteps:
    """The hypothesis of :func:`stateful_by_line` from the predictions the matrix made for its cells
    in the detected mode, where they provably tell it.

    ``options.stateful`` changes nothing of a restart before its state step
    (``MicroBatchExecution.populateStartOffsets`` and the sources read the same files whatever the
    plan; ``IncrementalExecution``'s state check and the tasks' ``StateStore`` loads are where a
    stateful plan differs). So when a cell's restart starts on a micro-batch or async resume whose
    ``offsets/L`` was read, it went through the state step (``restart.state_step``), which passed (the query was taken as
    stateless), and that step alone, asked again of a stateful query, tells the hypothesis: its
    failure, or the cell's own outcome. A line then costs a state step instead of a restart
    (bench: delta); the step is asked anew for each line, as replaying its questions (Spark's
    texts) would cost as much. Real-time restarts (whether one is async asks the statefulness) and
    continuous ones are predicted in full, as is a line whose cell fails (where, before the state
    step or after it, only a full run says) or whose cell the matrix has not diagnosed.
    ``tests/diagnosis/test_stateful_from_cells.py`` holds every fixture's answer to the full
    prediction.
    """

    def __init__(self, snapshot: CheckpointSnapshot, facts: SnapshotFacts, base: DiagnoseOptions) -> None:
        self.snapshot = snapshot
        self.facts = facts
        self.base = base
        self.memo: CellMemo | None = None
        latest = snapshot.offsets.latest
        self.usable = (
            facts.mode.mode in (MICRO_BATCH, ASYNC) and latest is not None and latest.record is not None
        )

    def state_step(self, real: SparkTarget) -> str | None:
        """Return the hypothesis's summary for the line of ``real``, or None when it is not provable."""
        if not self.usable:
            return None
        line = real.line
        if self.memo is None:
            self.memo = cell_memo(self.facts, restamped(self.base, line, mode=None))
        index = self.memo.known_prediction(real)
        if index is None:
            return None
        cell = self.memo.predictions[index][1]
        if not cell.starts:
            return None
        opts = restamped(self.base, line, mode=None, stateful=True)
        failed = state_step(Context(self.snapshot, real, opts, self.facts), cell.next_batch_id, cell.rerun)
        return failed.summary if failed is not None else cell.summary


def per_line(outcomes: Sequence[tuple[str, str]]) -> str:
    """Return (line, outcome) pairs grouped by outcome: ``Spark 3.5, 4.0: FAILS ...; Spark 4.2: ...``."""
    by_outcome: dict[str, list[str]] = {}
    for line, what in outcomes:
        by_outcome.setdefault(what, []).append(line)
    return "; ".join(f"Spark {', '.join(lines)}: {what}" for what, lines in by_outcome.items())


def stateful_assumption(statefulness: Statefulness, mode: str, if_stateful: Sequence[tuple[str, str]]) -> str:
    """Return the assumption line of unknown statefulness; where nothing suggests state (no CD310,
    which says it as a warning), with what a stateful query meets on each line."""
    text = f"stateful operators: {statefulness.text}"
    if not if_stateful or statefulness.suspected:
        return text
    return (
        f"{text}; if the query has stateful operators, state/ is missing and a {mode} restart does "
        f"this: {per_line(if_stateful)}"
    )


def check_state_suspected(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD310: statefulness unknown, traces of state (a watermark), and no state in state/."""
    statefulness = ctx.facts.statefulness
    if ctx.options.stateful is not None or not statefulness.suspected or ctx.is_continuous:
        return
    if any(op.stores for op in ctx.snapshot.state.operators) or not ctx.offsets_ids:
        return
    what = if_stateful(ctx)
    consequence = (
        f"a restart on Spark {ctx.target.line} ({ctx.mode}) {what.summary}"
        if not what.starts
        else f"a restart on Spark {ctx.target.line} ({ctx.mode}) {what.summary} with EMPTY state"
    )
    yield Finding(
        Code.STATE_MAY_BE_GONE,
        f"state/ holds no state, but {'; '.join(statefulness.traces)}. If the query has stateful operators, "
        f"their state is gone: {consequence}.",
        details=(("if_stateful", what.summary), ("traces", statefulness.traces)),
    )
