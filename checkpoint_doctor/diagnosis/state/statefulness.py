"""Was the query stateful? Read from every trace Spark leaves in a checkpoint. Pure.

Three answers, each with its evidence in words:

* ``stateful``: ``state/`` holds state store files; ``state/<op>/_metadata/metadata`` names a
  stateful operator (``OperatorStateMetadataWriter``, Spark 4.0+); a v2 commit records state store
  ids (``CommitMetadata.stateUniqueIds``, state store checkpoint format 2); or ``state/`` exists but
  holds nothing (a stateless query never creates it).
* ``stateless``: continuous processing ran the query (``ContinuousExecution`` supports no stateful
  operator), or asynchronous progress tracking committed its batches
  (``AsyncProgressTrackingMicroBatchExecution`` refuses stateful queries: "Stateful streaming
  queries does not support async progress tracking at this moment").
* ``unknown``: nothing tells. ``traces`` then lists what suggests state existed: an event-time
  watermark above 0 in the offsets or commit log (``batchWatermarkMs``/``nextBatchWatermarkMs``:
  the query has ``withWatermark``, which exists to bound a stateful operator's state). The pinned
  SQL confs do not tell: Spark pins the same ``relevantSQLConfs`` (state formats included) for
  stateless queries, as the fixtures ``stateless`` and ``window_agg`` of every line show.
"""

from __future__ import annotations

from checkpoint_doctor.diagnosis.detect import ASYNC, CONTINUOUS, ModeGuess
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.valueclasses import frozen

STATEFUL = "stateful"
STATELESS = "stateless"
UNKNOWN = "unknown"


@frozen
class Statefulness:
    """Whether the query had stateful operators, and why we think so."""

    verdict: str
    evidence: tuple[str, ...] = ()
    traces: tuple[str, ...] = ()

    @property
    def suspected(self) -> bool:
        """Unknown, but something suggests the query had state (which is not in state/ now)."""
        return self.verdict == UNKNOWN and bool(self.traces)

    @property
    def text(self) -> str:
        """Return the answer in one line for an operator."""
        if self.verdict == STATEFUL:
            return "yes: " + "; ".join(self.evidence)
        if self.verdict == STATELESS:
            return "no: " + "; ".join(self.evidence)
        if self.traces:
            return "unknown, probably yes (state/ has no state now): " + "; ".join(self.traces)
        return (
            "unknown: no state/, no operator metadata, no state store ids, no watermark; "
            "assumed stateless (pass --stateful or --stateless)"
        )

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-safe dict."""
        return {
            "verdict": self.verdict,
            "suspected": self.suspected,
            "evidence": list(self.evidence),
            "traces": list(self.traces),
            "text": self.text,
        }


def _stateful_evidence(snapshot: CheckpointSnapshot) -> list[str]:
    state = snapshot.state
    evidence = []
    with_stores = [op.operator_id for op in state.operators if op.stores]
    if with_stores:
        evidence.append(f"state/ holds state files of operator(s) {_ids(with_stores)}")
    described = [op.operator_id for op in state.operators if op.metadata is not None and not op.stores]
    if described:
        evidence.append(f"state/{described[0]}/_metadata/metadata describes a stateful operator")
    for e in reversed(snapshot.commits.entries):
        if e.record is not None and e.record.state_unique_ids:
            ops = [op for op, _ in e.record.state_unique_ids]
            evidence.append(f"{e.file.path} records state store ids of operator(s) {_ids(ops)}")
            break
    if state.exists and not state.operators and (snapshot.offsets.ids or snapshot.commits.ids):
        evidence.append("state/ exists (a stateless query never creates it) but holds no operator")
    return evidence


def _watermarks(snapshot: CheckpointSnapshot) -> list[str]:
    for e in reversed(snapshot.commits.entries):
        if e.record is not None and e.record.next_batch_watermark_ms > 0:
            return [
                f"{e.file.path} carries an event-time watermark ({e.record.next_batch_watermark_ms} ms): "
                "the query uses withWatermark, which bounds a stateful operator's state"
            ]
    for o in reversed(snapshot.offsets.entries):
        md = o.record.metadata if o.record is not None else None
        if md is not None and md.batch_watermark_ms > 0:
            return [
                f"{o.file.path} carries an event-time watermark ({md.batch_watermark_ms} ms): "
                "the query uses withWatermark, which bounds a stateful operator's state"
            ]
    return []


def infer_statefulness(snapshot: CheckpointSnapshot, mode: ModeGuess) -> Statefulness:
    """Return whether the query behind this checkpoint had stateful operators, with evidence."""
    evidence = _stateful_evidence(snapshot)
    if evidence:
        return Statefulness(STATEFUL, tuple(evidence))
    if mode.mode == CONTINUOUS:
        return Statefulness(STATELESS, ("continuous processing wrote it, and it runs no stateful operator",))
    if mode.mode == ASYNC:
        return Statefulness(
            STATELESS,
            ("asynchronous progress tracking committed its batches, and it refuses stateful queries",),
        )
    return Statefulness(UNKNOWN, (), tuple(_watermarks(snapshot)))


def _ids(ids: list[int]) -> str:
    return ", ".join(str(i) for i in ids)
