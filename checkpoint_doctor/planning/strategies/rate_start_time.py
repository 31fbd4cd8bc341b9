"""Rebuild a micro-batch ``rate`` source's lost start time (``sources/<n>/0``, body empty or
garbage) from the offsets log, with consent.

``RateStreamMicroBatchStream`` plans each batch's end offset as the whole seconds elapsed since its
start time, right after the batch timestamp is taken, so every offsets file N bounds the start:
``ts_N - (v_N + 1) * 1000 < start <= ts_N - v_N * 1000``. The rebuilt start is the middle of the
intersection. The rows' values and counts come from the offsets and do not change; the timestamps
of the rows generated after the restart may differ from what the lost start time gave by up to half
the interval's width, which the plan states and asks consent for.
"""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.diagnosis.sources.files import RATE, source_kinds
from checkpoint_doctor.model import LongOffset
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine, unavailable
from checkpoint_doctor.planning.steps import Step, WriteStep

NAME = "rate-start-time"
FAMILY = "rewrite"


def start_interval(ctx: PlanContext, source: int) -> tuple[int, int] | None:
    """Return the (lowest, highest) start time in ms the offsets log allows, or None."""
    lo, hi = None, None
    for e in ctx.snapshot.offsets.entries:
        seq = e.record
        if seq is None or seq.metadata is None or source >= len(seq.sources):
            continue
        offset = seq.sources[source].decoded
        if not isinstance(offset, LongOffset):
            continue
        ts, v = seq.metadata.batch_timestamp_ms, offset.value
        low, high = ts - (v + 1) * 1000 + 1, ts - v * 1000
        lo = low if lo is None else max(lo, low)
        hi = high if hi is None else min(hi, high)
    return (lo, hi) if lo is not None and hi is not None else None


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Rewrite ``sources/<n>/0`` of a rate source whose start time is lost."""
    path = finding.paths[0] if finding.paths else ""
    parts = path.split("/")
    if len(parts) != 3 or parts[0] != "sources" or parts[2] != "0" or not parts[1].isdigit():
        return []
    source = int(parts[1])
    if source_kinds(ctx.snapshot).get(source) != RATE:
        return []
    bounds = start_interval(ctx, source)
    if bounds is None or bounds[0] > bounds[1]:
        return [
            unavailable(FAMILY, finding.code, "the offsets log does not bound the rate source's start time")
        ]
    lo, hi = bounds
    start = (lo + hi) // 2
    steps: list[Step] = []
    if ctx.snapshot.file(path) is not None:
        steps += quarantine(ctx.snapshot, path, "its start time is lost")
    steps.append(
        WriteStep.of_bytes(
            path, f"v1\n{start}".encode(), f"start time rebuilt from the offsets log ({lo}..{hi} ms)"
        )
    )
    loss = (
        f"the rate source's start time is rebuilt as {start} ms (the offsets log bounds it to {lo}..{hi}): rows "
        f"generated after the restart keep their values and counts, but their timestamps may be up to "
        f"{max(start - lo, hi - start)} ms off"
    )
    return [Option(FAMILY, tuple(steps), (finding.code,), note=f"{path} := start time {start} ms", loss=loss)]


STRATEGY = Strategy(NAME, FAMILY, (Code.SOURCE_FILE_UNREADABLE,), propose)
