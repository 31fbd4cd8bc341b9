"""Decode the per-source offset JSON of the common sources (the lines 3.. of an offsets file).

Offsets are opaque to Spark itself (only the source interprets them), so decoding never fails a
file: an unrecognised shape is kept as raw JSON text. Formats: Kafka ``KafkaSourceOffset``
(``JsonUtils.partitionOffsets``), file source ``FileStreamSourceOffset``, ``rate-micro-batch``
``RatePerMicroBatchStreamOffset``, ``LongOffset`` (rate, socket, memory), Delta ``DeltaSourceOffset``
and the continuous ``rate`` source's ``RateStreamOffset``.
"""

from __future__ import annotations

import json
from typing import Any

from checkpoint_doctor.model import (
    ContinuousRateOffset,
    DecodedOffset,
    DeltaOffset,
    FileSourceOffset,
    KafkaOffset,
    LongOffset,
    RatePerMicroBatchOffset,
)
from checkpoint_doctor.parsing.text import java_parse_int


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _decode_object(obj: dict[str, Any]) -> DecodedOffset | None:
    keys = set(obj)
    if "reservoirId" in keys and isinstance(obj["reservoirId"], str):
        version = obj.get("reservoirVersion", 0)
        index = obj.get("index", -1)
        if _is_int(version) and _is_int(index):
            return DeltaOffset(
                reservoir_id=obj["reservoirId"],
                reservoir_version=version,
                index=index,
                source_version=obj.get("sourceVersion", 1) if _is_int(obj.get("sourceVersion", 1)) else 1,
                is_starting_version=bool(obj.get("isStartingVersion", False)),
            )
        return None
    if keys == {"logOffset"} and _is_int(obj["logOffset"]):
        return FileSourceOffset(log_offset=obj["logOffset"])
    if keys == {"offset", "timestamp"} and _is_int(obj["offset"]) and _is_int(obj["timestamp"]):
        return RatePerMicroBatchOffset(offset=obj["offset"], timestamp_ms=obj["timestamp"])
    if not obj:
        return None
    # Continuous rate: {"<partition>": {"value": v, "runTimeMs": t}}
    if all(
        java_parse_int(k) is not None
        and isinstance(v, dict)
        and set(v) == {"value", "runTimeMs"}
        and _is_int(v["value"])
        and _is_int(v["runTimeMs"])
        for k, v in obj.items()
    ):
        rate_parts = sorted((int(k), v["value"], v["runTimeMs"]) for k, v in obj.items())
        return ContinuousRateOffset(partitions=tuple(rate_parts))
    # Kafka: {"<topic>": {"<partition>": offset}}
    if all(
        isinstance(v, dict) and v and all(java_parse_int(p) is not None and _is_int(o) for p, o in v.items())
        for v in obj.values()
    ):
        parts = sorted((topic, int(p), o) for topic, by_part in obj.items() for p, o in by_part.items())
        return KafkaOffset(partitions=tuple(parts))
    return None


def decode_offset(raw: str) -> DecodedOffset | None:
    """Return the decoded offset of a source line, or None when the format is not recognised."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if _is_int(value):
        return LongOffset(value=value)
    if isinstance(value, dict):
        return _decode_object(value)
    return None
