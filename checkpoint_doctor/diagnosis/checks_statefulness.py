"""Checks on what the checkpoint cannot prove: state that may have existed and is gone. Pure."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.model import Finding, RestartPrediction
from checkpoint_doctor.diagnosis.restart import predict_restart


def if_stateful(ctx: Context) -> RestartPrediction:
    """Return what this target does if the query has stateful operators (the same Context facts)."""
    hypothesis = Context(ctx.snapshot, ctx.target, replace(ctx.options, stateful=True), ctx.facts)
    return predict_restart(hypothesis)


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
