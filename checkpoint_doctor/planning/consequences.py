"""What a set of steps means for the data, stated from the simulated restart. Pure.

Which batch runs first and how (re-run with the same end offsets, re-planned with new ones, new),
which committed batches are read again, and whether anything can be lost. Data-loss accounting uses
what is known of the sink: a file sink (its log given with ``--sink-path``, or ``--sink file``), Delta
and foreachBatch skip a batch id they already committed, so a re-planned committed batch is lost
there unless the sink log is rolled back too; Kafka, foreach, console, noop and memory write every
batch they get, so they see duplicates only. An unknown sink may be either: loss is possible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from checkpoint_doctor.diagnosis.model import Diagnosis
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.planning.request import AT_LEAST_ONCE
from checkpoint_doctor.planning.steps import Area, CopyStep, Step
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot

#: How an option's inherent cost that writes rows twice, skipping none, begins (see :func:`consequences`).
DUPLICATES = "DUPLICATES: "


@dataclass(frozen=True)
class SinkFacts:
    """What the planner knows about the sink: its kind (None: unknown), its log's newest batch id,
    and whether the plan rolls the log back."""

    kind: str | None
    log_latest: int | None
    rolled_back: bool
    #: The Delta sink table paired by txn appId = the query id (``--delta-table``): its URL, the
    #: query id and the newest batch id it holds (its txn version).
    delta_txn: tuple[str, str, int] | None = None

    @staticmethod
    def of(
        snapshot: CheckpointSnapshot,
        steps: tuple[Step, ...],
        told: str | None,
        delta: tuple[DeltaTable, ...] | None = None,
    ) -> SinkFacts:
        """Return what is known of the sink for these steps (``delta``: the tables named)."""
        txn = delta_sink_txn(snapshot.query_id, delta)
        kind = "file" if snapshot.sink is not None else "delta" if txn is not None else told
        latest = snapshot.sink.log.latest_id if snapshot.sink is not None else None
        rolled = any(getattr(s, "area", None) == Area.SINK for s in steps)
        return SinkFacts(kind, latest, rolled, txn)

    @property
    def at_least_once(self) -> bool:
        """Whether the sink writes every batch it gets (duplicates, never a skip)."""
        return self.kind in AT_LEAST_ONCE


def delta_sink_txn(
    query_id: str | None, tables: tuple[DeltaTable, ...] | None
) -> tuple[str, str, int] | None:
    """Return ``(url, query id, txn version)`` of the Delta table this query's sink wrote, or None."""
    for table in tables or ():
        version = table.txn_version(query_id) if query_id else None
        if version is not None and query_id is not None:
            return table.url, query_id, version
    return None


def _delta_skips(sink: SinkFacts, first: int | None) -> str | None:
    """The batches a Delta sink skips when the restart plans ``first`` and on again (DeltaSink.addBatch
    skips every batch id at or below its txn version for the query, logging only 'Skipping already
    complete epoch'), counted; None when it skips none."""
    if sink.delta_txn is None or first is None:
        return None
    url, query_id, version = sink.delta_txn
    if first > version:
        return None
    span = f"{first}..{version}" if version > first else str(first)
    return (
        f"batch(es) {span} are planned again with new end offsets: the Delta sink table {url} holds batches "
        f"up to {version} of query {query_id} (txn) and skips them without an error: {version - first + 1} "
        "batch(es) not written, whatever the source reads for them now"
    )


def _origin(path: str | None, steps: tuple[Step, ...]) -> str | None:
    """Return the original file a path's bytes come from (a bridged copy names its source)."""
    for s in steps:
        if isinstance(s, CopyStep) and s.path == path:
            return s.source
    return path


def _batch_of(path: str | None) -> int | None:
    if path is None:
        return None
    tail = path.rpartition("/")[2]
    return int(tail) if tail.isdigit() else None


def _span(ids: range) -> str:
    """Return a range of ids as ``a..b`` (or ``a``)."""
    return f"{ids.start}..{ids.stop - 1}" if ids.stop - ids.start > 1 else str(ids.start)


def _first_batch_kind(snapshot: CheckpointSnapshot, after: Diagnosis) -> str | None:
    pred = after.prediction
    b = pred.next_batch_id
    if b is None:
        return None
    planned = set(snapshot.offsets.ids) | set(snapshot.commits.ids)
    if pred.rerun:
        return "rerun"
    if b in planned:
        # Continuous processing re-runs an epoch from the previous offsets: at-least-once.
        return "rerun" if after.mode == "continuous" else "replanned"
    return "new"


def _reread(snapshot: CheckpointSnapshot, after: Diagnosis, start: str | None) -> range:
    """Return the committed batch ids read again, as a range (ids are longs: never listed)."""
    k = snapshot.commits.latest_id
    b = after.prediction.next_batch_id
    start_batch = _batch_of(start)
    if k is not None and start_batch is not None and start_batch < k:
        return range(start_batch + 1, k + 1)
    if k is not None and start is None and b is not None and b <= k:
        return range(k + 1)
    return range(0)


def replanned_committed(snapshot: CheckpointSnapshot, steps: tuple[Step, ...], after: Diagnosis) -> list[int]:
    """Return the committed batch ids Spark plans again after the steps: every one from the first
    batch on, except a re-run of the first batch with its own, unchanged end offsets (a bridged
    copy is not its own: the original end offsets are lost)."""
    b = after.prediction.next_batch_id
    kind = _first_batch_kind(snapshot, after)
    if b is None:
        return []
    copied = {s.path for s in steps if isinstance(s, CopyStep)}
    exact_rerun = kind == "rerun" and f"offsets/{b}" not in copied
    return sorted(i for i in snapshot.commits.ids if i >= b and not (i == b and exact_rerun))


def data_loss(
    snapshot: CheckpointSnapshot, steps: tuple[Step, ...], after: Diagnosis, sink: SinkFacts
) -> tuple[str | None, str | None]:
    """Return (why data can be lost, or None; what is written twice instead, or None)."""
    committed = [] if sink.rolled_back else replanned_committed(snapshot, steps, after)
    if not committed:
        return None, None
    if sink.log_latest is not None and sink.log_latest >= committed[0]:
        return f"the file sink already holds batch {committed[0]} and skips it when it is planned again", None
    if sink.delta_txn is not None:
        # The table says exactly which re-planned batch ids it skips (none: they are written).
        return _delta_skips(sink, after.prediction.next_batch_id), None
    span = f"{committed[0]}..{committed[-1]}" if len(committed) > 1 else str(committed[0])
    if sink.at_least_once:
        again = f"batch(es) {span} were committed and are planned again: the {sink.kind} sink writes their rows again"
        return None, again
    who = (
        f"the {sink.kind} sink"
        if sink.kind
        else "a sink that skips batch ids it committed (file sink, Delta, foreachBatch keyed on the id)"
    )
    hint = (
        ""
        if sink.kind
        else "; pass --sink KIND if yours writes every batch (kafka, foreach, console, noop, memory)"
    )
    return (
        f"batch(es) {span} were committed and are planned again with new end offsets: {who} skips them{hint}",
        None,
    )


def consequences(
    snapshot: CheckpointSnapshot,
    steps: tuple[Step, ...],
    after: Diagnosis,
    sink: SinkFacts,
    losses: tuple[str, ...],
) -> dict[str, Any]:
    """Return the consequences of ``steps`` whose simulated restart is ``after``.

    ``losses`` are the inherent costs of the options (state reset, a new start): they are data loss.
    """
    pred = after.prediction
    b = pred.next_batch_id
    start = _origin(pred.start_from, steps)
    kind = _first_batch_kind(snapshot, after)
    reread = _reread(snapshot, after, start)
    loss, duplicates = data_loss(snapshot, steps, after, sink)
    parts = []
    if b is not None:
        label = {"rerun": "re-runs planned", "replanned": "re-plans", "new": "plans new"}[kind or "new"]
        parts.append(f"Spark {label} batch {b}")
        if pred.start_from is not None:
            copy = f" (a copy of {start})" if start != pred.start_from else ""
            parts.append(f"reading from the end of {pred.start_from}{copy}")
        if pred.end_from:
            parts.append(f"to {pred.end_from}")
    if reread.stop > reread.start:
        parts.append(
            f"committed batch(es) {_span(reread)} are read again: duplicates for at-least-once sinks, "
            "an idempotent sink rewrites or skips them"
        )
    elif b is not None:
        parts.append("no committed data is read again")
    if duplicates:
        parts.append(f"DUPLICATES: {duplicates}")
    lost = [x for x in (*losses, loss) if x]
    # An option's inherent cost that writes rows twice (and skips nothing) needs consent as a loss does,
    # but is named for what it is.
    parts += [x if x.startswith(DUPLICATES) else f"DATA LOSS: {x}" for x in lost]
    return {
        "restart": pred.summary,
        "starts": pred.starts,
        "first_batch": {"id": b, "kind": kind},
        "reads_from": start,
        "reads_to": pred.end_from or ("new end offsets" if b is not None else None),
        "reread_batches": [reread.start, reread.stop - 1] if reread.stop > reread.start else None,
        "duplicates": reread.stop > reread.start
        or bool(duplicates)
        or any(x.startswith(DUPLICATES) for x in lost),
        "data_loss": any(not x.startswith(DUPLICATES) for x in lost),
        "loss": lost,
        "summary": "; ".join(parts) + "." if parts else pred.summary,
    }


CATCH_UP: dict[str, Any] = {
    "first_batch": None,
    "reread": "batches since the newest durable offsets are read again by the async restart (at-least-once)",
    "duplicates": True,
    "data_loss": False,
    "loss": [],
    "summary": "The job runs with async progress tracking (interval 0) until two consecutive batches are durable; "
    "the range after the newest durable offsets is read again, as an async restart always does.",
}
