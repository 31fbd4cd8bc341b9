"""Does this file sink belong to this checkpoint? The evidence both logs hold. Pure.

Nothing in either directory names the other: ``FileStreamSink`` writes ``_spark_metadata/<batchId>``
with the files of the batch, the checkpoint has offsets and commits by batch id. Three facts link
them (``MicroBatchExecution.runBatch``), and a sink is paired only when all three agree:

* **mode**: only a synchronous micro-batch query writes a file sink. Asynchronous progress
  tracking refuses every sink but noop, console, memory and Kafka
  (``AsyncProgressTrackingMicroBatchExecution.validateAndGetTrigger``: "Sink ... does not support
  async progress tracking"), and continuous processing runs only on sinks that support continuous
  writing (``FileStreamSink`` is a micro-batch ``Sink``). Such a checkpoint never wrote a sink log;

* **batch ids**: the sink log holds the batches the query ran; its newest id is within the
  checkpoint's offsets/commit ids (or one above after a rollback of the checkpoint);
* **time**: batch N is planned at ``offsets/N`` ``batchTimestampMs``, its files are written after
  that (``SinkFileStatus.modificationTime``), and batch N+1 is planned only after batch N's sink log
  entry and commit are written. So for every sink log entry read (batch N) and every offsets file
  read, ``batchTimestampMs`` of a batch at or below N is not after N's files, and one above N is not
  before them; and the nearest planned batch at or below the sink's newest batch is at most a few
  batch durations before its files (a stale checkpoint with matching ids is older by far).

Evidence that *contradicts* (another mode, batch ids the checkpoint never had, times out of order)
means the sink is another query's: it is never paired, and a plan refuses to change it unless
forced (``plan --force-sink``). Evidence that is merely missing (no file times read) leaves the
sink unpaired but an explicit ``--sink-path`` is trusted.

A tolerance of :data:`CLOCK_SKEW_MS` allows for executor clocks (files) versus the driver's (plans).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

from checkpoint_doctor.reading.mode import ASYNC, CONTINUOUS, detect_mode
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot, SinkLog
from checkpoint_doctor.valueclasses import frozen

T = TypeVar("T")

#: Executors stamp the files, the driver stamps the batches: allow this much clock difference.
CLOCK_SKEW_MS = 60_000
#: The nearest batch planned at or below the sink's newest batch must precede its files by at most
#: this per batch in between (a batch slower than an hour is possible, a stale copy is far older).
MAX_BATCH_MS = 3_600_000


#: Contradicting facts named in one line (more are counted, not listed).
MAX_REASONS = 3


@frozen
class PairingEvidence:
    """Whether a sink log matches a checkpoint's logs: ``proven``, or ``reasons`` why not;
    ``contradicted`` when a fact shows the sink is another query's (not merely unproven)."""

    proven: bool
    reasons: tuple[str, ...]
    contradicted: bool = False

    @property
    def text(self) -> str:
        """Return the evidence in one line."""
        return "; ".join(self.reasons)


def _ids_match(snapshot: CheckpointSnapshot, sink: SinkLog) -> str | None:
    ids = set(snapshot.offsets.ids) | set(snapshot.commits.ids)
    top = sink.log.latest_id
    if not ids or top is None:
        return None
    if min(ids) <= top <= max(ids) + 1:
        return f"sink log batch {top} is within the checkpoint's batches {min(ids)}..{max(ids)}"
    return None


def _sink_times(sink: SinkLog) -> list[tuple[int, bool, int, int]]:
    """Return (batch, compact, first and last modificationTime) of every readable sink entry with
    file times, newest first."""
    out = []
    for e in reversed(sink.log.entries):
        if e.record is None:
            continue
        times = [f.modification_time_ms for f in e.record.entries if f.modification_time_ms is not None]
        if times:
            out.append((e.batch_id, e.compact, min(times), max(times)))
    return out


def _planned(snapshot: CheckpointSnapshot) -> list[tuple[int, str, int]]:
    """Return (batch id, path, batchTimestampMs) of every offsets file read with a plan time."""
    out = []
    for e in snapshot.offsets.entries:
        md = e.record.metadata if e.record is not None else None
        if md is not None and md.batch_timestamp_ms > 0:
            out.append((e.batch_id, e.file.path, md.batch_timestamp_ms))
    return out


def _order_checks(
    planned: list[tuple[int, str, int]], batch: int, compact: bool, first: int, last: int
) -> tuple[list[str], list[str]]:
    """Return (agreeing, contradicting) facts: each batch planned before a sink batch at or above
    it wrote its files, and after one below it did (a compact file holds older batches' files)."""
    agree: list[str] = []
    contradict: list[str] = []
    for bid, path, at in planned:
        if bid <= batch:
            if at > first + CLOCK_SKEW_MS and not compact:
                contradict.append(f"{path} was planned after the sink wrote batch {batch}")
        elif at + CLOCK_SKEW_MS < last:
            contradict.append(f"{path} was planned before the sink wrote batch {batch}")
        else:
            agree.append(f"{path} was planned after the sink wrote batch {batch}")
    return agree, contradict


def _nearness_check(
    planned: list[tuple[int, str, int]], batch: int, first: int
) -> tuple[list[str], list[str]]:
    """The nearest batch planned at or below the sink's newest batch precedes its files by at most
    a few batch durations."""
    below = [(bid, at) for bid, _, at in planned if bid <= batch]
    if not below:
        return [], []
    bid, at = max(below)
    if 0 <= first - at <= (batch - bid + 1) * MAX_BATCH_MS:
        return [
            f"the sink wrote batch {batch} {(first - at) / 1000:.1f} s after offsets/{bid} was planned"
        ], []
    if first - at > (batch - bid + 1) * MAX_BATCH_MS:
        return [], [f"the sink wrote batch {batch} long after offsets/{bid} was planned"]
    return [], []


def _mode_contradiction(snapshot: CheckpointSnapshot) -> str | None:
    mode = detect_mode(snapshot).mode
    if mode == ASYNC:
        return (
            "the checkpoint was written with asynchronous progress tracking, which takes only noop, console, "
            "memory and Kafka sinks, never a file sink"
        )
    if mode == CONTINUOUS:
        return "the checkpoint was written by continuous processing, which has no file sink"
    return None


def pairing_evidence(snapshot: CheckpointSnapshot, sink: SinkLog) -> PairingEvidence:
    """Return whether the sink's log proves it is this checkpoint's file sink (mode, batch ids,
    times), or what contradicts it."""
    mode = _mode_contradiction(snapshot)
    if mode is not None:
        return PairingEvidence(False, (mode,), contradicted=True)
    ids = _ids_match(snapshot, sink)
    if ids is None:
        known = sorted(set(snapshot.offsets.ids) | set(snapshot.commits.ids))
        top = sink.log.latest_id
        if not known or top is None:
            return PairingEvidence(False, ("the sink log's batch ids are not the checkpoint's",))
        return PairingEvidence(
            False,
            (
                f"the sink log's newest batch {top} is not within the checkpoint's batches {known[0]}..{known[-1]}",
            ),
            contradicted=True,
        )
    entries = _sink_times(sink)
    if not entries:
        return PairingEvidence(False, (ids, "no sink log entry with file times was read"))
    planned = _planned(snapshot)
    agree: list[str] = []
    contradict: list[str] = []
    for batch, compact, first, last in entries:
        a, c = _order_checks(planned, batch, compact, first, last)
        agree += a if batch == entries[0][0] else []
        contradict += c
    newest, compact, first, _ = entries[0]
    if not compact:
        a, c = _nearness_check(planned, newest, first)
        agree += a
        contradict += c
    if contradict:
        shown = list(dict.fromkeys(contradict))
        more = len(shown) - MAX_REASONS
        listed = shown[:MAX_REASONS] + ([f"{more} more such facts"] if more > 0 else [])
        return PairingEvidence(False, (ids, *listed), contradicted=True)
    if not agree:
        return PairingEvidence(False, (ids, "no offsets file read is close enough in time to compare"))
    return PairingEvidence(True, (ids, *agree))


@frozen
class SinkChoice(Generic[T]):
    """What the logs of the file sinks looked at for one checkpoint say: each candidate (a URL, a
    fleet's candidate, ...) with its evidence, proven ones apart. Exactly one proven is paired;
    several proven pair none (nothing tells them apart), and neither does a log that only fails
    to prove it."""

    proven: tuple[tuple[T, PairingEvidence], ...] = ()
    unproven: tuple[tuple[T, PairingEvidence], ...] = ()

    @property
    def chosen(self) -> tuple[T, PairingEvidence] | None:
        """Return the one sink proven to be the checkpoint's, or None."""
        return self.proven[0] if len(self.proven) == 1 else None

    @property
    def contradicted(self) -> tuple[tuple[T, PairingEvidence], ...]:
        """Return the candidates whose logs show they are another query's."""
        return tuple(c for c in self.unproven if c[1].contradicted)


def choose_sink(snapshot: CheckpointSnapshot, candidates: Iterable[tuple[T, SinkLog]]) -> SinkChoice[T]:
    """Return which of the candidate sinks' logs prove they are this checkpoint's (see the module
    docstring): the one rule of ``diagnose``, ``plan``, the Python API and the audit."""
    proven: list[tuple[T, PairingEvidence]] = []
    unproven: list[tuple[T, PairingEvidence]] = []
    for key, sink in candidates:
        evidence = pairing_evidence(snapshot, sink)
        (proven if evidence.proven else unproven).append((key, evidence))
    return SinkChoice(tuple(proven), tuple(unproven))
