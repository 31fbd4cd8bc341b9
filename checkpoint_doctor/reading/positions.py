"""What the checkpoint's offsets say its sources are positioned at: pure readers of a snapshot.

Below both the world around a checkpoint (``world/``: which Delta tables and Kafka topics to read
and pair) and the diagnosis (``diagnosis/sources``), which both ask them: reading flows down once
(URL -> snapshot -> world -> diagnosis).
"""

from __future__ import annotations

from collections.abc import Sequence

from checkpoint_doctor.model import DeltaOffset, KafkaOffset, SourceOffset
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot


def newest_sources(snapshot: CheckpointSnapshot) -> tuple[SourceOffset, ...]:
    """Return the sources of the newest readable (v1) offsets file."""
    return _newest_sources(snapshot)


def _newest_sources(snapshot: CheckpointSnapshot) -> tuple[SourceOffset, ...]:
    for entry in reversed(snapshot.offsets.entries):
        if entry.record is not None and entry.record.version == 1:
            return entry.record.sources
    return ()


def delta_sources(sources: Sequence[SourceOffset] | None) -> list[tuple[int, DeltaOffset]]:
    """Return ``(source index, offset)`` of each Delta source of an offsets line."""
    return [(s.index, s.decoded) for s in sources or () if isinstance(s.decoded, DeltaOffset)]


def kafka_sources(sources: Sequence[SourceOffset] | None) -> list[tuple[int, KafkaOffset]]:
    """Return ``(source index, next offsets)`` of each Kafka source of an offsets line."""
    return [(s.index, s.decoded) for s in sources or () if isinstance(s.decoded, KafkaOffset)]


def unread_offsets(snapshot: CheckpointSnapshot) -> list[tuple[int, KafkaOffset]]:
    """Return ``(source index, offsets)`` where each Kafka source's unread records start: the
    newest committed batch's end offsets (an uncommitted newer batch is re-run from there,
    ``MicroBatchExecution.populateStartOffsets``), else the newest offsets line."""
    committed = snapshot.commits.latest_id
    entry = snapshot.offsets.get(committed) if committed is not None else None
    if entry is not None and entry.record is not None and entry.record.version == 1:
        return kafka_sources(entry.record.sources)
    return kafka_sources(newest_sources(snapshot))
