"""Rewrite the metadata line (line 2) of a micro-batch offsets file from its neighbour, when it is
blank (Spark then has no WatermarkTracker and fails with a NullPointerException) or has no ``conf``
map (state format versions fall back to their legacy defaults and the state schema no longer
matches). The pinned confs are the same in every batch of a checkpoint (``OffsetSeqMetadata.setSessionConf``
copies them back from the newest file on every restart), so the
neighbour's are the ones the file had; a blank line also takes the batch's watermark from
``commits/(N-1)`` (``nextBatchWatermarkMs``, the watermark batch N ran with) and the neighbour's
batch timestamp (the original is lost: only ``current_timestamp()`` in a re-run of that batch sees it).
A pinned ``spark.sql.shuffle.partitions`` that is not an int (CD013) takes the neighbour's value; the
rest of the line stays.
"""

from __future__ import annotations

import json
from typing import Any

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.model import OffsetSeqMetadata
from checkpoint_doctor.parsing.text import java_parse_int
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine, unavailable
from checkpoint_doctor.planning.steps import Step, WriteStep
from checkpoint_doctor.reading.snapshot import whole_content

NAME = "restore-metadata-line"
PARTITIONS = "spark.sql.shuffle.partitions"
FAMILY = "rewrite"


def _neighbour(ctx: PlanContext, batch: int) -> tuple[int, OffsetSeqMetadata] | None:
    """Return the nearest offsets file (below first, then above) whose metadata has confs."""
    entries = ctx.snapshot.offsets.entries
    below = [e for e in reversed(entries) if e.batch_id < batch]
    above = [e for e in entries if e.batch_id > batch]
    for e in below + above:
        md = e.record.metadata if e.record is not None else None
        if md is not None and md.has_conf and java_parse_int(md.conf_value(PARTITIONS) or "0") is not None:
            return e.batch_id, md
    return None


def _line(ctx: PlanContext, finding: Finding, batch: int, old: str, md: OffsetSeqMetadata) -> str:
    conf = dict(md.conf)
    if finding.code == Code.PINNED_CONF_INVALID:
        kept: dict[str, Any] = json.loads(old)
        kept["conf"] = {**kept.get("conf", {}), PARTITIONS: md.conf_value(PARTITIONS)}
        return json.dumps(kept, separators=(",", ":"))
    if finding.code == Code.OFFSETS_WITHOUT_CONF_FATAL and old.strip():
        obj: dict[str, Any] = json.loads(old)
        obj["conf"] = conf
        return json.dumps(obj, separators=(",", ":"))
    commit = ctx.snapshot.commits.get(batch - 1)
    watermark = md.batch_watermark_ms
    if commit is not None and commit.record is not None:
        watermark = commit.record.next_batch_watermark_ms
    obj = {"batchWatermarkMs": watermark, "batchTimestampMs": md.batch_timestamp_ms, "conf": conf}
    return json.dumps(obj, separators=(",", ":"))


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Rewrite line 2 of the offsets file the finding names."""
    if ctx.diagnosis.mode_detected == "continuous":
        return [
            unavailable(
                FAMILY, finding.code, "continuous mode writes no metadata line; restart in continuous mode"
            )
        ]
    batch = finding.batch_ids[0] if finding.batch_ids else None
    path = f"offsets/{batch}"
    raw = whole_content(ctx.snapshot.raw, path)
    entry = ctx.snapshot.offsets.get(batch) if batch is not None else None
    if batch is None or raw is None or entry is None or entry.record is None or entry.record.version != 1:
        return []
    source = _neighbour(ctx, batch)
    if source is None:
        return [
            unavailable(
                FAMILY, finding.code, "no other offsets file has a metadata line with the pinned confs"
            )
        ]
    lines = raw.decode("utf-8").split("\n")
    if len(lines) < 2:
        return []
    lines[1] = _line(ctx, finding, batch, lines[1], source[1])
    steps: list[Step] = [*quarantine(ctx.snapshot, path, "its metadata line is rewritten")]
    steps.append(
        WriteStep.of_bytes(
            path, "\n".join(lines).encode("utf-8"), f"metadata line restored from offsets/{source[0]}"
        )
    )
    return [
        Option(
            FAMILY, tuple(steps), (finding.code,), note=f"line 2 of {path} rebuilt from offsets/{source[0]}"
        )
    ]


STRATEGY = Strategy(
    NAME,
    FAMILY,
    (Code.OFFSETS_METADATA_LINE_EMPTY, Code.OFFSETS_WITHOUT_CONF_FATAL, Code.PINNED_CONF_INVALID),
    propose,
)
