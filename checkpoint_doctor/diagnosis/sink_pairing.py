"""Does this file sink belong to this checkpoint? The evidence both logs hold. Pure.

Nothing in either directory names the other: ``FileStreamSink`` writes ``_spark_metadata/<batchId>``
with the files of the batch, the checkpoint has offsets and commits by batch id. Two facts link
them (``MicroBatchExecution.runBatch``):

* **batch ids**: the sink log holds the batches the query ran; its newest id is within the
  checkpoint's offsets/commit ids (or one above after a rollback of the checkpoint);
* **time**: batch N is planned at ``offsets/N`` ``batchTimestampMs``, its files are written after
  that (``SinkFileStatus.modificationTime``), and batch N+1 is planned only after batch N's sink log
  entry and commit are written. So for every offsets file read, ``batchTimestampMs`` of a batch at
  or below the sink's newest batch N is not after N's files, and one above N is not before them; and
  the nearest planned batch at or below N is at most a few batch durations before N's files (a stale
  checkpoint with matching ids is older by far).

A tolerance of :data:`CLOCK_SKEW_MS` allows for executor clocks (files) versus the driver's (plans).
"""

from __future__ import annotations

from dataclasses import dataclass

from checkpoint_doctor.reading.snapshot import CheckpointSnapshot, SinkLog

#: Executors stamp the files, the driver stamps the batches: allow this much clock difference.
CLOCK_SKEW_MS = 60_000
#: The nearest batch planned at or below the sink's newest batch must precede its files by at most
#: this per batch in between (a batch slower than an hour is possible, a stale copy is far older).
MAX_BATCH_MS = 3_600_000


@dataclass(frozen=True)
class PairingEvidence:
    """Whether a sink log matches a checkpoint's logs: ``proven``, or ``reasons`` why not."""

    proven: bool
    reasons: tuple[str, ...]

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


def _sink_times(sink: SinkLog) -> tuple[int, bool, int, int] | None:
    """Return (batch, compact, first and last modificationTime) of the newest readable sink entry."""
    for e in reversed(sink.log.entries):
        if e.record is None:
            continue
        times = [f.modification_time_ms for f in e.record.entries if f.modification_time_ms is not None]
        if times:
            return e.batch_id, e.compact, min(times), max(times)
    return None


def _time_checks(
    snapshot: CheckpointSnapshot, batch: int, compact: bool, first: int, last: int
) -> tuple[list[str], list[str]]:
    """Return (agreeing facts, contradicting facts) of the offsets files read against batch's files."""
    agree: list[str] = []
    contradict: list[str] = []
    below = None
    for e in snapshot.offsets.entries:
        md = e.record.metadata if e.record is not None else None
        if md is None or md.batch_timestamp_ms <= 0:
            continue
        planned = md.batch_timestamp_ms
        if e.batch_id <= batch:
            if planned > first + CLOCK_SKEW_MS and not compact:
                contradict.append(f"{e.file.path} was planned after the sink wrote batch {batch}")
            below = (e.batch_id, planned)
        elif planned + CLOCK_SKEW_MS < last:
            contradict.append(f"{e.file.path} was planned before the sink wrote batch {batch}")
        else:
            agree.append(f"{e.file.path} was planned after the sink wrote batch {batch}")
    if below is not None and not compact:
        bid, planned = below
        if 0 <= first - planned <= (batch - bid + 1) * MAX_BATCH_MS:
            agree.append(
                f"the sink wrote batch {batch} {(first - planned) / 1000:.1f} s after offsets/{bid} was planned"
            )
        elif first - planned > (batch - bid + 1) * MAX_BATCH_MS:
            contradict.append(f"the sink wrote batch {batch} long after offsets/{bid} was planned")
    return agree, contradict


def pairing_evidence(snapshot: CheckpointSnapshot, sink: SinkLog) -> PairingEvidence:
    """Return whether the sink's log proves it is this checkpoint's file sink."""
    ids = _ids_match(snapshot, sink)
    if ids is None:
        return PairingEvidence(False, ("the sink log's batch ids are not the checkpoint's",))
    times = _sink_times(sink)
    if times is None:
        return PairingEvidence(False, (ids, "no sink log entry with file times was read"))
    agree, contradict = _time_checks(snapshot, *times)
    if contradict:
        return PairingEvidence(False, (ids, *contradict))
    if not agree:
        return PairingEvidence(False, (ids, "no offsets file read is close enough in time to compare"))
    return PairingEvidence(True, (ids, *agree))
