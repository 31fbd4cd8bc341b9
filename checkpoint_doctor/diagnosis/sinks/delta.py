"""What a Delta sink does on restart, from the checkpoint's query id and next batch and the table's txns.

Pure. The Delta sink (delta-spark ``sources/DeltaSink.scala``) commits each batch with a ``txn``
action (appId = the query id, version = the batch id) and, before writing a batch, asks the table
for its appId's version: a batch id at or below it is skipped with only a log line ("Skipping
already complete epoch"), so a checkpoint rolled back below the table's txn version re-plans batches
the table SILENTLY drops (whatever the source reads for them now). A new query id (checkpoint lost
or replaced) has no txn in the table: every batch it plans is written, again. A table that no
longer exists is created by the next batch, without the batches written before. Proven by the
restarts recorded in ``fixtures/delta/`` (tests/delta/test_recorded_restarts.py).
"""

from __future__ import annotations

from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.valueclasses import frozen


@frozen
class DeltaSinkRestart:
    """The Delta sink's first batch after a restart.

    ``skipped``: batch ids the sink drops silently (the table already holds them for this query id);
    ``writes``: the batch is written; ``other_queries``: appIds of other queries that wrote the table
    (a new query id writes what they wrote again); ``table_missing``: the table is created anew.
    """

    batch: int
    #: A range, never listed out: a txn version is any long (10^12 exhausted memory as a tuple).
    skipped: range
    writes: bool
    txn_version: int | None
    other_queries: tuple[tuple[str, int], ...] = ()
    table_missing: bool = False


def predict(query_id: str | None, next_batch: int, table: DeltaTable | None) -> DeltaSinkRestart:
    """Return what the Delta sink does with batch ``next_batch``, the first the restart runs."""
    if table is None:
        return DeltaSinkRestart(next_batch, range(0), True, None, table_missing=True)
    version = table.txn_version(query_id) if query_id else None
    others = tuple((app, v) for app, v in table.txns if app != query_id)
    if version is not None and next_batch <= version:
        # Every batch id up to the table's txn version is skipped (DeltaSink.addBatch), one per batch.
        return DeltaSinkRestart(next_batch, range(next_batch, version + 1), False, version, others)
    return DeltaSinkRestart(next_batch, range(0), True, version, others)
