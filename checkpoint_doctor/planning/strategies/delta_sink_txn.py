"""Catch a rolled-back checkpoint up with its Delta sink's txn version (CD407), with consent.

A checkpoint restored or rolled back below the Delta sink table's ``txn`` version for its query id
re-plans batch ids the table already holds, and ``DeltaSink.addBatch`` skips each of them with only
a log line ("Skipping already complete epoch"): whatever the source reads for them is never written.
The plan records those batch ids as done without data instead: ``offsets/b`` and ``commits/b`` for
``b`` in K+1..V (K the newest committed batch, V the txn version) are byte copies of ``offsets/K``
and ``commits/K``, so a restart replays ``getBatch(offsets V-1, offsets V)`` over an empty range and
plans batch V+1 from where batch K ended; the sink writes it (V+1 is above its txn version). Nothing
is skipped; what batches K+1..V wrote is read and written again (counted from the table's commits
carrying those txns). Stateless queries only: a stateful one would need state versions K+2..V+1.

The same holds for a ``foreachBatch`` writing the table with ``txnAppId``/``txnVersion`` (WriteIntoDelta
skips a version at or below the txn's, ``DeltaCommand.hasBeenExecuted``): its finding names the appId,
and batch V+1's write carries txnVersion V+1, above it. Proven by the restarts recorded in
``fixtures/delta-txn/`` (tests/delta/test_foreach_txn.py).
"""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.digest import sha256_hex
from checkpoint_doctor.planning.consequences import DUPLICATES
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, too_many_steps, unavailable
from checkpoint_doctor.planning.steps import CopyStep, QuarantineStep, Step
from checkpoint_doctor.planning.strategies.delta_offsets import counted, hold
from checkpoint_doctor.reading.layout import hadoop_crc_path
from checkpoint_doctor.reading.snapshot import whole_content

NAME = "delta-sink-txn"


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Record the batch ids the Delta sink holds as empty batches of this checkpoint."""
    details = dict(finding.details)
    table = next((t for t in ctx.options.diagnose.delta_tables or () if t.url == details.get("table")), None)
    # DeltaSink's appId is the query id; a foreachBatch's idempotent writes name their own.
    version, query_id = details.get("txn_version"), details.get("app_id") or details.get("query_id")
    snapshot = ctx.snapshot
    newest, committed = snapshot.offsets.latest_id, snapshot.commits.latest_id
    if table is None or not isinstance(version, int) or not isinstance(query_id, str) or newest is None:
        return []
    if newest >= version:  # the checkpoint reaches the txn version: a re-run or re-plan, not a rollback
        return []
    if committed != newest:
        why = f"batch {newest} is not committed: restart it first (it re-runs with its own offsets), then plan again"
        return [unavailable(NAME, finding.code, why)]
    if ctx.stateful:
        why = (
            f"a stateful query cannot pass over batch ids {newest + 1}..{version} (its state has no versions for "
            "them): restore the checkpoint's newer batches from a backup, or accept the skip"
        )
        return [unavailable(NAME, finding.code, why)]
    # Two files a batch id (and their orphan checksums): a txn version of 10^12 is asked, not counted out.
    too_many = too_many_steps(NAME, finding.code, 2 * (version - newest))
    if too_many is not None:
        return [too_many]
    steps: list[Step] = []
    for log in ("offsets", "commits"):
        source = f"{log}/{newest}"
        raw = whole_content(snapshot.raw, source)
        if raw is None:
            return [unavailable(NAME, finding.code, f"{source} cannot be read to copy")]
        for batch in range(newest + 1, version + 1):
            path = f"{log}/{batch}"
            crc = hadoop_crc_path(path)
            if crc in snapshot.hadoop_crcs:
                steps.append(QuarantineStep(path=crc, reason=f"orphan checksum of {path}"))
            steps.append(
                CopyStep(
                    path=path,
                    source=source,
                    source_sha256=sha256_hex(raw),
                    reason=f"batch {batch}, which the Delta sink holds, recorded as done without data",
                )
            )
    ids = range(newest + 1, version + 1)
    span = f"{ids[0]}..{ids[-1]}" if len(ids) > 1 else str(ids[0])
    written = [c for c in table.commits if any(app == query_id and v in ids for app, v in c.txns)]
    again = counted(written) if len(written) == len(ids) else "not counted: their commits were not read"
    note = f"batch(es) {span} := copies of offsets/{newest} and commits/{newest}; the next batch is {version + 1}"
    loss = (
        f"{DUPLICATES}Delta sink ({table.url}): nothing is skipped, but batch {version + 1} reads from the end "
        f"of batch {newest} and writes again what batch(es) {span} wrote ({again})"
    )
    # apply reads the table again: the same table, its log not moved back (the plan is made again with it)
    return [Option(NAME, tuple(steps), (finding.code,), note=note, loss=loss, holds=(hold(table),))]


STRATEGY = Strategy(NAME, NAME, (Code.DELTA_SINK_SKIPS_BATCHES,), propose)
