"""Turn a snapshot into the ``inspect`` report: typed values (:class:`InspectReport`), its JSON made by
:meth:`InspectReport.to_json` where it is written. Pure.

The report is what an operator wants at a glance: identity, log ranges with holes, the newest
batch's sources and watermark, pinned confs, formats, who wrote it and how, state, debris, and a
timeline of the newest batch ids.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from checkpoint_doctor.diagnosis.detect import ModeGuess, WriterGuess, detect_mode, detect_writer
from checkpoint_doctor.diagnosis.timeline import TimelineRow, timeline
from checkpoint_doctor.ids import range_text, ranges
from checkpoint_doctor.model import (
    FileSourceLogBatch,
    JsonObject,
    KafkaInitialOffsets,
    ParseFailure,
    RateStartTime,
    SourceOffset,
)
from checkpoint_doctor.reading.snapshot import (
    BatchLog,
    CheckpointSnapshot,
    DebrisFile,
    SinkLog,
    StateOperator,
)


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


def _failures(failures: tuple[ParseFailure, ...]) -> list[JsonObject]:
    return [f.to_dict() for f in failures]


@dataclass(frozen=True)
class LogSummary:
    """A batch log (``offsets/``, ``commits/``): its ids as runs, holes, format versions, problems."""

    present: bool
    count: int
    first: int | None
    last: int | None
    ranges: tuple[tuple[int, int], ...]
    holes: tuple[tuple[int, int], ...]
    versions: tuple[int, ...]
    failures: tuple[ParseFailure, ...]
    #: Files whose name is not the canonical one of their batch id: (name, batch id).
    noncanonical: tuple[tuple[str, int], ...]
    ignored_dirs: tuple[str, ...]
    files: int
    bytes: int

    @classmethod
    def of(cls, log: BatchLog[Any]) -> LogSummary:
        versions = sorted(
            {e.record.version for e in log.entries if e.record is not None and hasattr(e.record, "version")}
        )
        return cls(
            present=log.exists,
            count=len(log.entries),
            first=log.entries[0].batch_id if log.entries else None,
            last=log.latest_id,
            ranges=tuple((a, b) for a, b in ranges(log.ids)),
            holes=tuple((a, b) for a, b in log.holes()),
            versions=tuple(versions),
            failures=log.failures(),
            noncanonical=tuple(log.noncanonical),
            ignored_dirs=tuple(log.ignored_dirs),
            files=log.file_count,
            bytes=log.total_bytes,
        )

    def to_json(self) -> JsonObject:
        return {
            "present": self.present,
            "count": self.count,
            "first": self.first,
            "last": self.last,
            "ranges": [list(r) for r in self.ranges],
            "holes": [list(h) for h in self.holes],
            "versions": list(self.versions),
            "failures": _failures(self.failures),
            "noncanonical": [{"name": n, "batch_id": b} for n, b in self.noncanonical],
            "ignored_dirs": list(self.ignored_dirs),
            "files": self.files,
            "bytes": self.bytes,
        }


@dataclass(frozen=True)
class OffsetsRead:
    """What the newest offsets file says (when it could be read)."""

    version: int
    watermark_ms: int | None
    batch_timestamp_ms: int | None
    sources: tuple[SourceOffset, ...]

    @property
    def batch_time(self) -> str | None:
        """When the batch was planned, ISO 8601 UTC."""
        return iso_ms(self.batch_timestamp_ms)


@dataclass(frozen=True)
class LatestBatch:
    """The newest batch: its offsets file, whether it is committed, what it read (``read``: None
    when the file could not be parsed) and the newest commit's watermark (``commit_read``: a commit
    file was read)."""

    batch_id: int
    path: str
    committed: bool
    error: ParseFailure | None = None
    read: OffsetsRead | None = None
    commit_read: bool = False
    next_batch_watermark_ms: int | None = None

    @classmethod
    def of(cls, snapshot: CheckpointSnapshot) -> LatestBatch | None:
        entry = snapshot.offsets.latest
        if entry is None:
            return None
        read = None
        seq = entry.record
        if seq is not None:
            md = seq.metadata
            read = OffsetsRead(
                version=seq.version,
                watermark_ms=md.batch_watermark_ms if md else None,
                batch_timestamp_ms=md.batch_timestamp_ms if md else None,
                sources=tuple(seq.sources),
            )
        commit = snapshot.commits.latest
        commit_read = commit is not None and commit.record is not None
        return cls(
            batch_id=entry.batch_id,
            path=entry.file.path,
            committed=snapshot.commits.get(entry.batch_id) is not None,
            error=entry.failure,
            read=read,
            commit_read=commit_read,
            next_batch_watermark_ms=commit.record.next_batch_watermark_ms
            if commit is not None and commit.record is not None
            else None,
        )

    def to_json(self) -> JsonObject:
        out: JsonObject = {
            "batch_id": self.batch_id,
            "path": self.path,
            "committed": self.committed,
            "error": self.error.to_dict() if self.error else None,
        }
        if self.read is not None:
            out.update(
                {
                    "version": self.read.version,
                    "watermark_ms": self.read.watermark_ms,
                    "batch_timestamp_ms": self.read.batch_timestamp_ms,
                    "batch_time": self.read.batch_time,
                    "sources": [
                        {**s.to_dict(), "type": s.source_type, "text": s.describe()}
                        for s in self.read.sources
                    ],
                }
            )
        if self.commit_read:
            out["next_batch_watermark_ms"] = self.next_batch_watermark_ms
        return out


def _pinned_conf(snapshot: CheckpointSnapshot) -> Mapping[str, str] | None:
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


@dataclass(frozen=True)
class SourceMetadata:
    """One source's metadata log (``sources/N``): what kind of records it holds, its batches."""

    path: str
    kind: str
    batches: str
    compacts: tuple[int, ...]
    files: int
    bytes: int
    failures: tuple[ParseFailure, ...]
    #: The rate source's start time, the Kafka source's initial offsets (the newest entry's).
    start_time_ms: int | None = None
    initial_offsets: str | None = None

    @classmethod
    def list_of(cls, snapshot: CheckpointSnapshot) -> tuple[SourceMetadata, ...]:
        out = []
        for log in snapshot.sources:
            kinds = sorted({_SOURCE_KINDS[type(e.record)] for e in log.entries if e.record is not None})
            start_time_ms: int | None = None
            initial_offsets: str | None = None
            for e in log.entries:
                if isinstance(e.record, RateStartTime):
                    start_time_ms = e.record.start_time_ms
                elif isinstance(e.record, KafkaInitialOffsets):
                    initial_offsets = e.record.raw
            out.append(
                cls(
                    path=log.path,
                    kind=kinds[0] if len(kinds) == 1 else ("mixed" if kinds else "unread"),
                    batches=range_text(tuple(e.batch_id for e in log.entries)),
                    compacts=tuple(e.batch_id for e in log.entries if e.compact),
                    files=log.file_count,
                    bytes=log.total_bytes,
                    failures=log.failures(),
                    start_time_ms=start_time_ms,
                    initial_offsets=initial_offsets,
                )
            )
        return tuple(out)

    def to_json(self) -> JsonObject:
        item: JsonObject = {
            "path": self.path,
            "kind": self.kind,
            "batches": self.batches,
            "compacts": list(self.compacts),
            "files": self.files,
            "bytes": self.bytes,
            "failures": _failures(self.failures),
        }
        if self.start_time_ms is not None:
            item["start_time_ms"] = self.start_time_ms
        if self.initial_offsets is not None:
            item["initial_offsets"] = self.initial_offsets
        return item


@dataclass(frozen=True)
class OperatorState:
    """One stateful operator's directory under ``state/``."""

    operator_id: int
    operator_name: str | None
    provider: str | None
    partition_ids: tuple[int, ...]
    stores: tuple[str, ...]
    metadata_partitions: Mapping[str, Any] | None
    #: The first and last state versions of its stores (None: no version file).
    versions: tuple[int, int] | None
    files: int
    bytes: int
    #: Each store's schema file: (store name, its JSON).
    schemas: tuple[tuple[str, JsonObject], ...]
    metadata_error: ParseFailure | None
    #: A transformWithState operator (operator metadata v2): see :func:`transform_with_state`.
    transform_with_state: JsonObject | None = None

    @property
    def partitions(self) -> int:
        return len(self.partition_ids)

    def to_json(self) -> JsonObject:
        return {
            "operator_id": self.operator_id,
            "operator_name": self.operator_name,
            "provider": self.provider,
            "partitions": self.partitions,
            "partition_ids": list(self.partition_ids),
            "stores": list(self.stores),
            "metadata_partitions": dict(self.metadata_partitions)
            if self.metadata_partitions is not None
            else None,
            "versions": {"first": self.versions[0], "last": self.versions[1]} if self.versions else None,
            "files": self.files,
            "bytes": self.bytes,
            "schemas": [{"store": store, **schema} for store, schema in self.schemas],
            "metadata_error": self.metadata_error.to_dict() if self.metadata_error else None,
            **({"transform_with_state": self.transform_with_state} if self.transform_with_state else {}),
        }


def _type_text(t: Any) -> str:
    """A Spark DataType JSON as its ``simpleString`` (``struct<a:bigint>``-like, with JSON names)."""
    if not isinstance(t, dict):
        return str(t)
    kind = t.get("type")
    if kind == "struct":
        fields: list[Any] = t["fields"] if isinstance(t.get("fields"), list) else []
        return "struct<" + ",".join(f"{f.get('name')}:{_type_text(f.get('type'))}" for f in fields) + ">"
    if kind == "array":
        return f"array<{_type_text(t.get('elementType'))}>"
    if kind == "map":
        return f"map<{_type_text(t.get('keyType'))},{_type_text(t.get('valueType'))}>"
    return json.dumps(t, sort_keys=True)


def _family_fields(schema_json: str) -> str:
    """A StructType JSON as ``name type, ...`` (what an operator compares when it evolves)."""
    try:
        obj = json.loads(schema_json)
    except ValueError:
        return schema_json
    fields = obj.get("fields") if isinstance(obj, dict) else None
    if not isinstance(fields, list):
        return schema_json
    return ", ".join(f"{f.get('name')} {_type_text(f.get('type'))}" for f in fields if isinstance(f, dict))


def transform_with_state(snapshot: CheckpointSnapshot, op: StateOperator) -> JsonObject | None:
    """A transformWithState operator as its metadata v2 and schema files (v3) record it: time and
    output mode, each state variable with its kind, TTL, key and value schemas and schema ids, the
    column families Spark keeps for TTL, list counters and timers, the encoding the offsets pin
    (``spark.sql.streaming.stateStore.encodingFormat``) and the schema files, absolute as recorded."""
    meta = op.metadata_v2.record if op.metadata_v2 is not None else None
    if meta is None or meta.properties is None:
        return None
    families: dict[str, Any] = {}
    for rec in op.schema_files:
        if rec.record is None:
            continue
        for cf in rec.record.column_families:
            # A newer schema file (an evolution) holds the family's newest schema.
            families[cf.name] = cf
    conf = _pinned_conf(snapshot) or {}
    variables = []
    for var in meta.properties.variables:
        fam = families.get(var.name)
        variables.append(
            {
                "name": var.name,
                "kind": var.kind,
                "ttl": var.ttl_enabled,
                "key": _family_fields(fam.key_schema) if fam else None,
                "user_key": _family_fields(fam.user_key_schema) if fam and fam.user_key_schema else None,
                "value": _family_fields(fam.value_schema) if fam else None,
                "key_schema_id": fam.key_schema_id if fam else None,
                "value_schema_id": fam.value_schema_id if fam else None,
            }
        )
    names = {v.name for v in meta.properties.variables}
    return {
        "operator": meta.operator_name,
        "time_mode": meta.properties.time_mode,
        "output_mode": meta.properties.output_mode,
        "encoding": conf.get("spark.sql.streaming.stateStore.encodingFormat"),
        "metadata_batch": op.metadata_v2_batches[-1] if op.metadata_v2_batches else None,
        "variables": variables,
        "internal_column_families": sorted(n for n in families if n not in names),
        "schema_files": list(meta.schema_file_paths or meta.legacy_schema_file_paths),
    }


@dataclass(frozen=True)
class StateSummary:
    """``state/``: whether it is there, its files and its operators."""

    present: bool
    files: int
    operators: tuple[OperatorState, ...]

    @classmethod
    def of(cls, snapshot: CheckpointSnapshot) -> StateSummary:
        ops = []
        for op in snapshot.state.operators:
            versions = sorted({v for s in op.stores for v in s.versions()})
            md = op.metadata.record if op.metadata is not None else None
            if md is None and op.metadata_v2 is not None:
                md = op.metadata_v2.record
            ops.append(
                OperatorState(
                    operator_id=op.operator_id,
                    operator_name=md.operator_name if md else None,
                    provider=op.provider,
                    partition_ids=tuple(op.partition_dirs),
                    stores=tuple(op.store_names),
                    metadata_partitions=dict(md.stores) if md else None,
                    versions=(versions[0], versions[-1]) if versions else None,
                    files=op.file_count,
                    bytes=op.total_bytes,
                    schemas=tuple(
                        (s.store_name, s.schema.record.to_dict())
                        for s in op.stores
                        if s.schema is not None and s.schema.record is not None
                    ),
                    metadata_error=op.metadata.failure if op.metadata and op.metadata.failure else None,
                    transform_with_state=transform_with_state(snapshot, op),
                )
            )
        return cls(present=snapshot.state.exists, files=snapshot.state.file_count, operators=tuple(ops))

    def to_json(self) -> JsonObject:
        return {
            "present": self.present,
            "files": self.files,
            "operators": [op.to_json() for op in self.operators],
        }


@dataclass(frozen=True)
class SinkSummary:
    """A file sink's ``_spark_metadata`` log read with the checkpoint."""

    url: str
    present: bool
    latest: int | None
    batches: str
    compacts: tuple[int, ...]
    compact_interval: int
    missing_for_readers: tuple[str, ...]
    failures: tuple[ParseFailure, ...]

    @classmethod
    def of(cls, sink: SinkLog | None) -> SinkSummary | None:
        if sink is None:
            return None
        return cls(
            url=sink.url,
            present=sink.log.exists,
            latest=sink.log.latest_id,
            batches=range_text(tuple(e.batch_id for e in sink.log.entries)),
            compacts=tuple(sink.compact_ids),
            compact_interval=sink.compact_interval,
            missing_for_readers=tuple(sink.missing_for_readers()),
            failures=sink.log.failures(),
        )

    def to_json(self) -> JsonObject:
        return {
            "url": self.url,
            "present": self.present,
            "latest": self.latest,
            "batches": self.batches,
            "compacts": list(self.compacts),
            "compact_interval": self.compact_interval,
            "missing_for_readers": list(self.missing_for_readers),
            "failures": _failures(self.failures),
        }


@dataclass(frozen=True)
class InspectReport:
    """What ``inspect`` shows of a snapshot (its JSON: :meth:`to_json`, the ``inspect`` result)."""

    checkpoint: str
    depth: str
    query_id: str | None
    metadata_present: bool
    metadata_error: ParseFailure | None
    file_count: int
    bytes: int
    read_count: int
    fingerprint: str
    mode: ModeGuess
    writer: WriterGuess
    offsets: LogSummary
    commits: LogSummary
    latest_batch: LatestBatch | None
    pinned_conf: Mapping[str, str] | None
    sources: tuple[SourceMetadata, ...]
    state: StateSummary
    sink: SinkSummary | None
    debris: tuple[DebrisFile, ...]
    timeline: tuple[TimelineRow, ...]

    @classmethod
    def of(cls, snapshot: CheckpointSnapshot) -> InspectReport:
        mode = detect_mode(snapshot)
        meta = snapshot.metadata
        return cls(
            checkpoint=snapshot.root,
            depth=snapshot.depth,
            query_id=snapshot.query_id,
            metadata_present=meta is not None,
            metadata_error=meta.failure if meta is not None and meta.failure else None,
            file_count=snapshot.file_count,
            bytes=snapshot.total_bytes,
            read_count=snapshot.read_count,
            fingerprint=snapshot.fingerprint(),
            mode=mode,
            writer=detect_writer(snapshot),
            offsets=LogSummary.of(snapshot.offsets),
            commits=LogSummary.of(snapshot.commits),
            latest_batch=LatestBatch.of(snapshot),
            pinned_conf=_pinned_conf(snapshot),
            sources=SourceMetadata.list_of(snapshot),
            state=StateSummary.of(snapshot),
            sink=SinkSummary.of(snapshot.sink),
            debris=tuple(snapshot.debris),
            timeline=tuple(timeline(snapshot, mode.mode)),
        )

    def to_json(self) -> JsonObject:
        """Return the ``inspect`` result (JSON-safe)."""
        writer = self.writer
        return {
            "checkpoint": self.checkpoint,
            "depth": self.depth,
            "query_id": self.query_id,
            "metadata": {
                "present": self.metadata_present,
                "error": self.metadata_error.to_dict() if self.metadata_error else None,
            },
            "files": {
                "count": self.file_count,
                "bytes": self.bytes,
                "read": self.read_count,
                "fingerprint": self.fingerprint,
            },
            "mode": {"mode": self.mode.mode, "evidence": self.mode.evidence},
            "written_by": {
                "spark": writer.label,
                "line": writer.line,
                "minimum": writer.minimum,
                "evidence": list(writer.evidence),
            },
            "offsets": self.offsets.to_json(),
            "commits": self.commits.to_json(),
            "latest_batch": self.latest_batch.to_json() if self.latest_batch is not None else None,
            "pinned_conf": dict(self.pinned_conf) if self.pinned_conf is not None else None,
            "sources": [s.to_json() for s in self.sources],
            "state": self.state.to_json(),
            "sink": self.sink.to_json() if self.sink is not None else None,
            "debris": [d.to_dict() for d in self.debris],
            "timeline": [row.to_dict() for row in self.timeline],
        }


def inspect_report(snapshot: CheckpointSnapshot) -> JsonObject:
    """Return the ``inspect`` result for a snapshot (JSON-safe): :class:`InspectReport`'s JSON."""
    return InspectReport.of(snapshot).to_json()
