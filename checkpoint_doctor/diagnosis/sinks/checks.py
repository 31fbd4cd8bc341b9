"""Checks on a file sink's ``_spark_metadata`` log against the commit log. Pure."""

from __future__ import annotations

from collections.abc import Iterator

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.model import Finding, RestartPrediction
from checkpoint_doctor.ids import id_range, span_text
from checkpoint_doctor.parsing.text import TOO_LARGE
from checkpoint_doctor.reading.layout import SINK_LOG, Area
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot, SinkLog


def sink_not_checked(snapshot: CheckpointSnapshot) -> str | None:
    """Return the assumption to state when sink log files were over the read bound (not read, so
    the files they list were not checked), or None."""
    sink = snapshot.sink
    if sink is None:
        return None
    big = [f for f in sink.log.failures() if f.kind == TOO_LARGE]
    if not big:
        return None
    names = ", ".join(f.path for f in big[:3]) + (f" and {len(big) - 3} more" if len(big) > 3 else "")
    return (
        f"file sink log partly not checked: {names} not read ({big[0].reason}); "
        "the data files it lists were not checked"
    )


def check_sink_log(sink: SinkLog) -> Iterator[Finding]:
    """CD404-CD406: the checks a file sink's log needs no checkpoint for (present, readable,
    complete for readers). The public entry point for a sink audited on its own."""
    if not sink.log.exists or not sink.log.entries:
        yield Finding(Code.SINK_LOG_MISSING, f"{sink.url} has no {SINK_LOG} log.", paths=(SINK_LOG,))
        return
    for failure in sink.log.failures():
        # A compact file over the read bound is no damage: long-running sinks grow them past it
        # (SPARK-24295); inspect lists it as not read (too-large).
        if failure.kind != TOO_LARGE:
            yield Finding(
                Code.SINK_LOG_FILE_UNREADABLE,
                f"{failure.path} cannot be read: {failure.reason}.",
                paths=(failure.path,),
            )
    missing = sink.missing_for_readers()
    if missing:
        yield Finding(
            Code.SINK_LOG_FILE_MISSING,
            f"readers of {sink.url} need {', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} missing "
            f"(latest sink batch {sink.log.latest_id}, compact interval {sink.compact_interval}).",
            paths=missing,
        )


def check_sink(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD401-CD406: sink log present, readable, complete, and in step with offsets/commits."""
    sink = ctx.snapshot.sink
    if sink is None:
        return
    yield from check_sink_log(sink)
    b = prediction.next_batch_id
    orphan = sink.orphan_crc_for(b) if b is not None else None
    if orphan is not None and b is not None:
        target = f"{SINK_LOG}/{sink.entry_name(b)}"
        yield Finding(
            Code.ORPHAN_CRC_BLOCKS_WRITE,
            f"{orphan} remains in the file sink's log although {target} is gone, and the sink writes "
            f"{target} again when batch {b} runs.",
            paths=(orphan,),
            batch_ids=(b,),
            details=(("target", target), ("area", Area.SINK)),
        )
    if not sink.log.exists or not sink.log.entries:
        return
    top = sink.log.latest_id
    latest, k = ctx.latest, ctx.committed
    if top is None:
        return
    if latest is not None and top > latest:
        yield Finding(
            Code.SINK_AHEAD_OF_OFFSETS,
            f"{SINK_LOG}/{top} is ahead of the newest offsets file offsets/{latest}: the sink will skip "
            f"{span_text('batch', latest + 1, top)} when {'it is' if top == latest + 1 else 'they are'} planned again.",
            paths=(f"{SINK_LOG}/{top}",),
            batch_ids=id_range(latest + 1, top),
            details=(("sink_latest", top), ("latest_offsets", latest)),
        )
    elif prediction.rerun and prediction.next_batch_id is not None and top >= prediction.next_batch_id:
        b = prediction.next_batch_id
        yield Finding(
            Code.SINK_HOLDS_UNCOMMITTED_BATCH,
            f"{SINK_LOG} already holds batch {b}, which the restart re-runs; the sink skips it.",
            paths=(f"{SINK_LOG}/{b}",),
            batch_ids=(b,),
        )
    if k is not None and top < k:
        yield Finding(
            Code.SINK_BEHIND_COMMITS,
            f"the newest sink log entry is batch {top} but commits/{k} exists: "
            f"{span_text('batch', top + 1, k)} {'is' if top + 1 == k else 'are'} not in the sink log.",
            batch_ids=id_range(top + 1, k),
        )
