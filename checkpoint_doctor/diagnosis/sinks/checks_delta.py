"""The checkpoint's Delta sink against the Delta tables paired with it (CD407, CD408). Pure.

A table is this query's sink when its ``txn`` actions hold the checkpoint's query id as appId
(DeltaSink commits each batch as appId = query id, version = batch id). What the restart's first
batch does there is :func:`checkpoint_doctor.diagnosis.sinks.delta.predict`: batch ids at or below
the table's txn version are skipped SILENTLY (CD407), but for a batch re-run with its own offsets
after its commit was lost: the table holds that batch already, nothing is lost. A named table that no source pairs with and
whose txns name only other queries is a sink this query id has never written: every batch it runs
is written again (CD408). Which tables are judged is the pairing's
(:attr:`~checkpoint_doctor.world.delta_pairing.DeltaPairing.sink_tables`): a table found, not
named, that other queries wrote is only mentioned (it may be anyone's).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.model import Finding, RestartPrediction
from checkpoint_doctor.diagnosis.sinks.delta import predict
from checkpoint_doctor.diagnosis.sources.checks_delta import context_pairing
from checkpoint_doctor.ids import id_range


def _ranges(ids: Sequence[int]) -> str:
    return f"{ids[0]}" if len(ids) == 1 else f"{ids[0]}..{ids[-1]}"


def check_delta_sink(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD407: the restart re-plans batch ids the sink table already holds for this query id (they
    are skipped without an error); CD408: a table other queries wrote gets every batch again."""
    query_id = ctx.snapshot.query_id
    pairing = context_pairing(ctx)
    if pairing is None or prediction.next_batch_id is None or not ctx.target.has_delta:
        return  # a line with no Delta Lake release (4.3) writes no Delta sink: the note says so
    for table in pairing.sink_tables:
        restart = predict(query_id, prediction.next_batch_id, table)
        lost = restart.skipped
        if prediction.rerun and lost and lost[0] == prediction.next_batch_id:
            # A batch re-run after its commit was lost (MicroBatchExecution re-runs offsets/N with the
            # offsets it was planned with): the txn at or above N says DeltaSink committed batch N, so
            # skipping it again loses nothing; only the ids planned anew after it are at stake.
            lost = lost[1:]
        if lost:
            yield Finding(
                Code.DELTA_SINK_SKIPS_BATCHES,
                f"The Delta sink table {table.url} already holds batches up to {restart.txn_version} of query "
                f"{query_id} (txn): the restart runs batch ids {_ranges(lost)} again and the sink "
                f"skips them without an error (DeltaSink 'Skipping already complete epoch'), whatever the "
                f"source reads for them now; {len(lost)} batch(es) are not written.",
                batch_ids=id_range(lost[0], lost[-1]),
                details=(("table", table.url), ("txn_version", restart.txn_version), ("query_id", query_id)),
            )
        elif restart.txn_version is None and restart.other_queries:
            others = ", ".join(f"{app} (batch {v})" for app, v in restart.other_queries)
            yield Finding(
                Code.DELTA_SINK_WRITES_AGAIN,
                f"The Delta table {table.url} was written by other queries ({others}) and never by "
                f"{query_id}: if it is this query's sink, batch {prediction.next_batch_id} and every later "
                "one are written to it, again if another query id wrote the same rows (a checkpoint lost "
                "or replaced).",
                batch_ids=(prediction.next_batch_id,),
                details=(
                    ("table", table.url),
                    ("query_id", query_id),
                    ("other_queries", restart.other_queries),
                ),
            )
