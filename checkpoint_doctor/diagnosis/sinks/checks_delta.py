"""The checkpoint's Delta sink against the Delta tables paired with it (CD407, CD408). Pure.

Two writers commit a ``txn`` per batch. The Delta sink (DeltaSink) with appId = the query id; a
``foreachBatch`` writing with the options ``txnAppId``/``txnVersion`` (Delta's idempotent writes:
WriteIntoDelta -> ``DeltaCommand.hasBeenExecuted``) with an appId of the job's choosing and, as Delta's
documentation shows, the batch id as version. Both skip a batch whose id is at or below the table's
txn version for their appId, with only a log line. An appId that is not a UUID is never a query id,
so never DeltaSink's: such a txn is judged as a foreachBatch's (the same appId on every checkpoint,
so a new checkpoint's batch ids from 0 are skipped too), on a table paired with the checkpoint, named,
or beside it.

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
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.world.delta_pairing import is_query_id


def _ranges(ids: Sequence[int]) -> str:
    return f"{ids[0]}" if len(ids) == 1 else f"{ids[0]}..{ids[-1]}"


def _one_a_restart(lost: Sequence[int]) -> str:
    """How the skip spreads over restarts: Trigger.Once plans one batch a run (MicroBatchExecution
    with a single-batch trigger), so each restart skips the next id until the one above the txn
    version is written (recorded: fixtures/delta-txn/*/delta-foreach-txn-rolled-back, two restarts)."""
    if len(lost) == 1:
        return ""
    return (
        f" A Trigger.Once restart runs batch {lost[0]} alone and the next restart batch {lost[1]}: every id "
        f"{_ranges(lost)} is skipped, one a restart, before batch {lost[-1] + 1} is written."
    )


def _skipped(prediction: RestartPrediction, version: int) -> range:
    """The batch ids the restart plans at or below a txn ``version`` that lose rows: a batch re-run
    after its commit was lost (MicroBatchExecution re-runs offsets/N with the offsets it was planned
    with) was written already, so skipping it again loses nothing."""
    first = prediction.next_batch_id
    assert first is not None
    if first > version:
        return range(0)
    return range(first + 1 if prediction.rerun else first, version + 1)


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
        streams = tuple((app, v) for app, v in restart.other_queries if is_query_id(app))
        if lost:
            yield Finding(
                Code.DELTA_SINK_SKIPS_BATCHES,
                f"The Delta sink table {table.url} already holds batches up to {restart.txn_version} of query "
                f"{query_id} (txn): the restart runs batch ids {_ranges(lost)} again and the sink "
                f"skips them without an error (DeltaSink 'Skipping already complete epoch'), whatever the "
                f"source reads for them now; {len(lost)} batch(es) are not written." + _one_a_restart(lost),
                batch_ids=id_range(lost[0], lost[-1]),
                details=(("table", table.url), ("txn_version", restart.txn_version), ("query_id", query_id)),
            )
        elif restart.txn_version is None and streams:
            others = ", ".join(f"{app} (batch {v})" for app, v in streams)
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
                    ("other_queries", streams),
                ),
            )
        elif restart.txn_version is not None and (
            ahead := tuple((app, v) for app, v in streams if v >= prediction.next_batch_id)
        ):
            yield _written_again(table, query_id, prediction.next_batch_id, restart.txn_version, ahead)
    yield from _idempotent_writes(pairing.sink_tables + pairing.others, prediction)


def _written_again(
    table: DeltaTable, query_id: str | None, next_batch: int, own: int, ahead: tuple[tuple[str, int], ...]
) -> Finding:
    """CD408 for a sink table this query writes that another query id's DeltaSink wrote further: a
    checkpoint lost or recreated beside its table starts over at batch 0 with a new query id (a new
    appId, no txn to skip by), so what its sources read again is appended again."""
    others = ", ".join(f"{app} (batches up to {v})" for app, v in ahead)
    top = max(v for _, v in ahead)
    return Finding(
        Code.DELTA_SINK_WRITES_AGAIN,
        f"The Delta sink table {table.url} holds batches of query {query_id} up to {own} and of other queries "
        f"({others}): DeltaSink skips by the query id only, so if this query was started anew on another's "
        f"table (its checkpoint lost or recreated), every batch it runs is written, again where its sources "
        f"read what the other query read: batch {next_batch} on restart and each later one"
        + (f", up to {top} at least." if top > next_batch else "."),
        batch_ids=(next_batch,),
        details=(("table", table.url), ("query_id", query_id), ("other_queries", ahead)),
    )


def _idempotent_writes(tables: Sequence[DeltaTable], prediction: RestartPrediction) -> Iterator[Finding]:
    """CD407 for a foreachBatch's idempotent writes: a txn whose appId is no query id (a job's own
    name, the same for every checkpoint the job runs on) at or above the restart's next batch id."""
    seen: set[str] = set()
    for table in tables:
        if table.url in seen:
            continue
        seen.add(table.url)
        for app, version in table.txns:
            lost = _skipped(prediction, version) if not is_query_id(app) else range(0)
            if not lost:
                continue
            yield Finding(
                Code.DELTA_SINK_SKIPS_BATCHES,
                f"The Delta table {table.url} holds txn version {version} of appId '{app}' (an idempotent write's "
                f"txnAppId, not a query id): if this query's foreachBatch writes it with txnAppId '{app}' and the "
                f"batch id as txnVersion, the restart runs batch ids {_ranges(lost)} and Delta skips each write "
                f"without an error (WriteIntoDelta: 'Already completed batch N in application {app}. This will "
                f"be skipped.'), whatever the source reads for them now; {len(lost)} batch(es) are not "
                "written." + _one_a_restart(lost),
                batch_ids=id_range(lost[0], lost[-1]),
                details=(("table", table.url), ("txn_version", version), ("app_id", app)),
            )
