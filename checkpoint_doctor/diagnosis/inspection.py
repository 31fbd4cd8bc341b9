"""Turn a snapshot into the ``inspect`` report: plain JSON-safe data. Pure.

The report is what an operator wants at a glance: identity, log ranges with holes, the newest
batch's sources and watermark, pinned confs, formats, who wrote it and how, state, debris, and a
timeline of the newest batch ids.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from checkpoint_doctor.diagnosis.detect import detect_mode, detect_writer
from checkpoint_doctor.diagnosis.timeline import timeline
from checkpoint_doctor.ids import range_text, ranges
from checkpoint_doctor.model import FileSourceLogBatch, KafkaInitialOffsets, RateStartTime
from checkpoint_doctor.reading.snapshot import BatchLog, CheckpointSnapshot, SinkLog


def iso_ms(ms: int | None) -> str | None:
    """Return an ISO-8601 UTC text for epoch millis (None stays None)."""
    if ms is None or ms <= 0:
        return None
    try:
        return (
            _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z")
        )
    except (OverflowError, OSError, ValueError):
        return None


def _log_summary(log: BatchLog[Any]) -> dict[str, Any]:
    versions = sorted(
        {e.record.version for e in log.entries if e.record is not None and hasattr(e.record, "version")}
    )
    return {
        "present": log.exists,
        "count": len(log.entries),
        "first": log.entries[0].batch_id if log.entries else None,
        "last": log.latest_id,
        "ranges": ranges(log.ids),
        "holes": [list(h) for h in log.holes()],
        "versions": versions,
        "failures": [f.to_dict() for f in log.failures()],
        "noncanonical": [{"name": n, "batch_id": b} for n, b in log.noncanonical],
        "ignored_dirs": list(log.ignored_dirs),
        "files": log.file_count,
        "bytes": log.total_bytes,
    }


def _latest_batch(snapshot: CheckpointSnapshot) -> dict[str, Any] | None:
    entry = snapshot.offsets.latest
    if entry is None:
        return None
    out: dict[str, Any] = {
        "batch_id": entry.batch_id,
        "path": entry.file.path,
        "committed": snapshot.commits.get(entry.batch_id) is not None,
        "error": entry.failure.to_dict() if entry.failure else None,
    }
    seq = entry.record
    if seq is not None:
        md = seq.metadata
        out.update(
            {
                "version": seq.version,
                "watermark_ms": md.batch_watermark_ms if md else None,
                "batch_timestamp_ms": md.batch_timestamp_ms if md else None,
                "batch_time": iso_ms(md.batch_timestamp_ms) if md else None,
                "sources": [
                    {**s.to_dict(), "type": s.source_type, "text": s.describe()} for s in seq.sources
                ],
            }
        )
    commit = snapshot.commits.latest
    if commit is not None and commit.record is not None:
        out["next_batch_watermark_ms"] = commit.record.next_batch_watermark_ms
    return out


def _pinned_conf(snapshot: CheckpointSnapshot) -> dict[str, str] | None:
    entry = next((e for e in reversed(snapshot.offsets.entries) if e.record is not None), None)
    if entry is None or entry.record is None or entry.record.metadata is None:
        return None
    md = entry.record.metadata
    return dict(md.conf) if md.has_conf else None


_SOURCE_KINDS = {
    FileSourceLogBatch: "file-source-log",
    KafkaInitialOffsets: "kafka-initial-offsets",
    RateStartTime: "rate-start-time",
}


def _sources(snapshot: CheckpointSnapshot) -> list[dict[str, Any]]:
    out = []
    for log in snapshot.sources:
        kinds = sorted({_SOURCE_KINDS[type(e.record)] for e in log.entries if e.record is not None})
        item: dict[str, Any] = {
            "path": log.path,
            "kind": kinds[0] if len(kinds) == 1 else ("mixed" if kinds else "unread"),
            "batches": range_text(tuple(e.batch_id for e in log.entries)),
            "compacts": [e.batch_id for e in log.entries if e.compact],
            "files": log.file_count,
            "bytes": log.total_bytes,
            "failures": [f.to_dict() for f in log.failures()],
        }
        for e in log.entries:
            if isinstance(e.record, RateStartTime):
                item["start_time_ms"] = e.record.start_time_ms
            elif isinstance(e.record, KafkaInitialOffsets):
                item["initial_offsets"] = e.record.raw
        out.append(item)
    return out


def _state(snapshot: CheckpointSnapshot) -> dict[str, Any]:
    ops = []
    for op in snapshot.state.operators:
        versions = sorted({v for s in op.stores for v in s.versions()})
        md = op.metadata.record if op.metadata is not None else None
        schemas = [
            {"store": s.store_name, **s.schema.record.to_dict()}
            for s in op.stores
            if s.schema is not None and s.schema.record is not None
        ]
        ops.append(
            {
                "operator_id": op.operator_id,
                "operator_name": md.operator_name if md else None,
                "provider": op.provider,
                "partitions": len(op.partition_dirs),
                "partition_ids": list(op.partition_dirs),
                "stores": list(op.store_names),
                "metadata_partitions": dict(md.stores) if md else None,
                "versions": {"first": versions[0], "last": versions[-1]} if versions else None,
                "files": op.file_count,
                "bytes": op.total_bytes,
                "schemas": schemas,
                "metadata_error": op.metadata.failure.to_dict()
                if op.metadata and op.metadata.failure
                else None,
            }
        )
    return {"present": snapshot.state.exists, "files": snapshot.state.file_count, "operators": ops}


def _sink(sink: SinkLog | None) -> dict[str, Any] | None:
    if sink is None:
        return None
    return {
        "url": sink.url,
        "present": sink.log.exists,
        "latest": sink.log.latest_id,
        "batches": range_text(tuple(e.batch_id for e in sink.log.entries)),
        "compacts": list(sink.compact_ids),
        "compact_interval": sink.compact_interval,
        "missing_for_readers": list(sink.missing_for_readers()),
        "failures": [f.to_dict() for f in sink.log.failures()],
    }


def inspect_report(snapshot: CheckpointSnapshot) -> dict[str, Any]:
    """Return the ``inspect`` result for a snapshot (JSON-safe)."""
    mode = detect_mode(snapshot)
    writer = detect_writer(snapshot)
    meta = snapshot.metadata
    return {
        "checkpoint": snapshot.root,
        "depth": snapshot.depth,
        "query_id": snapshot.query_id,
        "metadata": {
            "present": meta is not None,
            "error": meta.failure.to_dict() if meta is not None and meta.failure else None,
        },
        "files": {
            "count": snapshot.file_count,
            "bytes": snapshot.total_bytes,
            "read": snapshot.read_count,
            "fingerprint": snapshot.fingerprint(),
        },
        "mode": {"mode": mode.mode, "evidence": mode.evidence},
        "written_by": {
            "spark": writer.label,
            "line": writer.line,
            "minimum": writer.minimum,
            "evidence": list(writer.evidence),
        },
        "offsets": _log_summary(snapshot.offsets),
        "commits": _log_summary(snapshot.commits),
        "latest_batch": _latest_batch(snapshot),
        "pinned_conf": _pinned_conf(snapshot),
        "sources": _sources(snapshot),
        "state": _state(snapshot),
        "sink": _sink(snapshot.sink),
        "debris": [d.to_dict() for d in snapshot.debris],
        "timeline": [row.to_dict() for row in timeline(snapshot, mode.mode)],
    }
