"""The checkpoint's Kafka positions against the topics' live positions (CD207). Pure.

The live positions come from the I/O edge (``checkpoint_doctor.world.kafka``) through
``DiagnoseOptions.kafka``; without them nothing is judged and the matrix says how to check.
What a restart does is :func:`checkpoint_doctor.diagnosis.sources.kafka_positions.predict`, proven by the
restarts real Spark recorded in ``fixtures/kafka/``. It models the first batch *after* the
checkpoint's newest offsets (a new batch); a re-run of an uncommitted batch reads a range the log
already fixed and is not judged here.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.inspection import iso_ms
from checkpoint_doctor.diagnosis.model import Finding, RestartPrediction
from checkpoint_doctor.diagnosis.sources.files import newest_sources
from checkpoint_doctor.diagnosis.sources.kafka_positions import KafkaRestart, predict
from checkpoint_doctor.diagnosis.sources.kafka_retention import (
    Countdown,
    countdown,
    deadlines,
    duration,
    soonest,
    utc,
    when,
)
from checkpoint_doctor.diagnosis.spark_line import SparkError, SparkLine
from checkpoint_doctor.model import KafkaLive, KafkaOffset, SourceOffset, legal_topic
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot

#: The flag that gives a broker, named wherever positions were not checked.
FLAG = "--kafka-bootstrap-servers HOST:PORT"


def kafka_sources(sources: Sequence[SourceOffset] | None) -> list[tuple[int, KafkaOffset]]:
    """Return ``(source index, next offsets)`` of each Kafka source of an offsets line."""
    return [(s.index, s.decoded) for s in sources or () if isinstance(s.decoded, KafkaOffset)]


def topics_of(sources: Sequence[SourceOffset] | None) -> list[str]:
    """Return the topics the Kafka sources of an offsets line read, sorted."""
    return sorted({t for _, off in kafka_sources(sources) for t, _, _ in off.partitions})


def restarts(
    line: SparkLine, sources: Sequence[SourceOffset] | None, live: KafkaLive, fail_on_data_loss: bool
) -> list[tuple[int, KafkaOffset, KafkaRestart]]:
    """Return each Kafka source's restart from ``sources`` (the offsets the new batch starts from)."""
    positions = live.live
    return [(n, off, predict(off, positions, line, fail_on_data_loss)) for n, off in kafka_sources(sources)]


def restart_error(ctx: Context, start_offsets: Sequence[SourceOffset] | None) -> SparkError | None:
    """The error of the first Kafka source that refuses a new batch (failOnDataLoss=true, Spark's
    default: the source option is not in the checkpoint), or None."""
    live = ctx.options.kafka
    if live is None:
        return None
    for _, _, restart in restarts(ctx.target, start_offsets, live, True):
        if restart.error is not None:
            return restart.error
    return None


#: Partitions a note names before "and N more" (a topic may have thousands).
SHOWN = 6


def reads_notes(ctx: Context, start_offsets: Sequence[SourceOffset] | None) -> list[str]:
    """What each Kafka source's new batch reads, as the broker's positions say (with failOnDataLoss=true)."""
    live = ctx.options.kafka
    if live is None:
        return []
    out = []
    for n, _, restart in restarts(ctx.target, start_offsets, live, True):
        if restart.error is not None:
            continue
        ranges = [f"{r.topic}-{r.partition} [{r.start}, {r.end})" for r in restart.reads]
        more = f" and {len(ranges) - SHOWN} more" if len(ranges) > SHOWN else ""
        out.append(
            f"Kafka source {n} reads {restart.rows} records up to the latest offsets on {live.bootstrap}: "
            f"{', '.join(ranges[:SHOWN])}{more} (fewer with maxOffsetsPerTrigger)"
        )
    return out


def _partition_text(off: KafkaOffset, live: KafkaLive, skipped: dict[tuple[str, int], int]) -> str:
    positions = live.live
    words = []
    for topic, part, offset in off.partitions:
        parts = positions.get(topic)
        if parts is None:
            why = "" if legal_topic(topic) else " (not a legal Kafka topic name: no broker holds it)"
            words.append(f"{topic}-{part}: next {offset}, topic missing{why}")
            continue
        pos = parts.get(part)
        if pos is None:
            words.append(f"{topic}-{part}: next {offset}, partition gone")
            continue
        lost = skipped.get((topic, part), 0)
        tail = f", {lost} skipped" if lost else ""
        words.append(f"{topic}-{part}: next {offset}, earliest {pos[0]}, latest {pos[1]}{tail}")
    known = off.topic_partitions()
    for topic in sorted({t for t, _, _ in off.partitions}):
        for part, (lo, hi) in sorted((positions.get(topic) or {}).items()):
            if (topic, part) not in known:
                words.append(f"{topic}-{part}: new, earliest {lo}, latest {hi}")
    return _bounded(words)


#: Partitions a finding's text names before "and N more" (the details keep every count): a topic of
#: 100,000 partitions made a CD207 text of 6.7 MB, copied into every plan (issue 31 item 9).
NAMED = 50


def _bounded(words: list[str], sep: str = "; ") -> str:
    more = f"{sep}and {len(words) - NAMED} more partitions" if len(words) > NAMED else ""
    return sep.join(words[:NAMED]) + more


def check_kafka_positions(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD207: a Kafka source's next offsets are gone from the broker (records deleted, topic or
    partitions deleted or recreated), with what failOnDataLoss=false would skip per partition."""
    live = ctx.options.kafka
    if live is None or prediction.rerun or prediction.start_offsets is None:
        return
    refusing = restarts(ctx.target, prediction.start_offsets, live, True)
    lenient = {n: r for n, _, r in restarts(ctx.target, prediction.start_offsets, live, False)}
    for n, off, restart in refusing:
        if restart.error is None:
            continue
        soft = lenient[n]
        skipped = {(r.topic, r.partition): r.skipped for r in soft.reads if r.skipped}
        when = (
            "in the tasks of the first batch" if restart.error.phase == "task" else "planning the first batch"
        )
        if soft.error is not None:
            otherwise = "with failOnDataLoss=false too (the topic is gone)"
        elif skipped:
            counts = _bounded([f"{t}-{p}: {c}" for (t, p), c in sorted(skipped.items())], ", ")
            otherwise = f"with failOnDataLoss=false it starts and skips {soft.skipped} records ({counts})"
        else:
            otherwise = (
                "with failOnDataLoss=false it starts and skips the partitions whose positions are gone"
            )
        yield Finding(
            Code.KAFKA_POSITIONS_GONE,
            f"Kafka source {n}: the broker at {live.bootstrap} no longer holds the checkpoint's positions "
            f"({_partition_text(off, live, skipped)}); with failOnDataLoss=true (the default) the restart "
            f"fails {when}, {otherwise}.",
            paths=(prediction.start_from,) if prediction.start_from else (),
            batch_ids=(prediction.next_batch_id,) if prediction.next_batch_id is not None else (),
            details=(
                ("source", n),
                ("bootstrap", live.bootstrap),
                ("phase", restart.error.phase),
                ("skipped_with_fail_on_data_loss_false", None if soft.error else soft.skipped),
                # pairs, not a dict: a finding is hashed (findings are deduplicated across checks)
                ("skipped_per_partition", tuple((f"{t}-{p}", c) for (t, p), c in sorted(skipped.items()))),
            ),
        )


def negative_offsets(off: KafkaOffset) -> list[tuple[str, int, int]]:
    """Return the partitions whose offset is negative: not a position (see CD211)."""
    return [(t, p, o) for t, p, o in off.partitions if o < 0]


def _named(offset: int) -> str:
    # KafkaOffsetRangeLimit.LATEST and EARLIEST: what the value means in startingOffsets
    return {-1: f"{offset} (latest)", -2: f"{offset} (earliest)"}.get(offset, str(offset))


def check_kafka_offsets_negative(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD211: a Kafka source's offsets in the offsets log hold a negative offset (issue 31 item 13:
    one was counted as 9223372036854775826 records skipped). Reads the checkpoint only."""
    for entry in ctx.snapshot.offsets.entries:
        if entry.record is None:
            continue
        for n, off in kafka_sources(entry.record.sources):
            bad = negative_offsets(off)
            if not bad:
                continue
            shown = ", ".join(f"{t}-{p}: {_named(o)}" for t, p, o in bad[:SHOWN])
            more = f" and {len(bad) - SHOWN} more" if len(bad) > SHOWN else ""
            yield Finding(
                Code.KAFKA_OFFSET_NEGATIVE,
                f"{entry.file.path}: Kafka source {n} holds negative offsets ({shown}{more}): a batch's end "
                "offsets are positions the broker returned, never negative (-1 latest and -2 earliest mean "
                "something in startingOffsets only); no record is counted for them.",
                paths=(entry.file.path,),
                batch_ids=(entry.batch_id,),
                details=(
                    ("source", n),
                    ("partitions", tuple((f"{t}-{p}", o) for t, p, o in bad[:SHOWN])),
                    ("count", len(bad)),
                ),
            )


def check_kafka_unchecked(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD212: the checkpoint's Kafka sources were not checked against a broker (issue 32 item 6:
    without --kafka-bootstrap-servers a checkpoint whose records are gone read STARTS, Findings:
    none, exit 0). The command to run names the checkpoint and the broker flag."""
    if ctx.options.kafka is not None:
        return
    entry = ctx.offsets(ctx.latest)
    if entry is None or entry.record is None:
        return
    topics = topics_of(entry.record.sources)
    if not topics:
        return
    shown = ", ".join(topics[:SHOWN]) + (f" and {len(topics) - SHOWN} more" if len(topics) > SHOWN else "")
    command = f"checkpoint-doctor diagnose {shlex.quote(ctx.snapshot.root)} {FLAG}"
    yield Finding(
        Code.KAFKA_POSITIONS_UNCHECKED,
        f"Kafka positions not checked (topics {shown}): without a broker nothing tells whether the "
        f"records {entry.file.path} resumes from still exist; check them with: {command} (HOST:PORT: a "
        "broker of these topics; --kafka-option KEY=VALUE for client settings; a scheduled run takes "
        "them from CHECKPOINT_DOCTOR_KAFKA_BOOTSTRAP_SERVERS or a config file, see --help).",
        paths=(entry.file.path,),
        batch_ids=(entry.batch_id,),
        details=(("topics", tuple(topics)), ("command", command)),
    )


def check_kafka_retention_deadline(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD213: retention may delete unread records within the loss horizon, per partition soonest
    first (issue 32 item 7: a 59-minute countdown was an assumption line under 'Findings: none')."""
    live, now = ctx.options.kafka, ctx.options.now_ms
    if live is None or now is None:
        return
    horizon_ms = int(ctx.options.loss_horizon_s * 1000)
    for n, off in unread_offsets(ctx.snapshot):
        due = [d for d in deadlines(off, live) if d.deadline_ms - now <= horizon_ms]
        if not due:
            continue
        words = [
            f"{d.name} from offset {d.offset} (written {utc(d.timestamp_ms)}, retention.ms={d.retention_ms}) "
            f"from {utc(d.deadline_ms)}, {when(d.deadline_ms, now)}"
            for d in due
        ]
        first = due[0]
        yield Finding(
            Code.KAFKA_RETENTION_DEADLINE,
            f"Kafka source {n}: retention may delete records the query has not read within the "
            f"{duration(horizon_ms)} horizon, soonest first: {_bounded(words)}; restart the query before "
            f"{utc(first.deadline_ms)} or raise retention.ms.",
            details=(
                ("source", n),
                ("bootstrap", live.bootstrap),
                ("horizon_s", ctx.options.loss_horizon_s),
                ("deadline_ms", first.deadline_ms),
                ("remaining_s", (first.deadline_ms - now) / 1000),
                # pairs, not a dict: a finding is hashed
                (
                    "partitions",
                    tuple(
                        (d.name, d.offset, d.deadline_ms, (d.deadline_ms - now) / 1000) for d in due[:NAMED]
                    ),
                ),
                ("count", len(due)),
            ),
        )


#: How far a record's timestamp may lie past the batch that planned the position above it before the
#: record is taken as appended after that batch: the end offsets are read after batchTimestampMs is
#: taken (MicroBatchExecution.constructNextBatch), and a producer's CreateTime comes from its own clock.
CLOCK_SLACK_MS = 10 * 60 * 1000


def replaced_below(
    off: KafkaOffset, live: KafkaLive, planned_ms: int
) -> list[tuple[str, int, int, int, int]]:
    """Return ``(topic, partition, position, unread, timestamp_ms)`` for each partition whose record
    just below the checkpoint's position was appended after ``planned_ms`` (the batch that planned the
    position, plus :data:`CLOCK_SLACK_MS`): that record is not one the checkpoint read, so the log was
    replaced (the topic deleted and recreated) and the restart never reads the ``unread`` records now
    held below the position. A position above the latest is CD207's. Pure."""
    positions = live.live
    below = {(t, p, o): ts for t, p, o, ts in live.below}
    out = []
    for topic, part, at in off.partitions:
        pos = (positions.get(topic) or {}).get(part)
        ts = below.get((topic, part, at - 1))
        if pos is None or ts is None or ts < 0:
            continue
        earliest, latest = pos
        if earliest < at <= latest and ts > planned_ms + CLOCK_SLACK_MS:
            out.append((topic, part, at, at - earliest, ts))
    return out


def check_kafka_topic_recreated(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD214: a Kafka source's positions lie inside a topic that was replaced after the checkpoint's
    batch planned them (a topic recreated and grown past them, perhaps with more partitions): Spark
    starts there without a word and never reads the records below them (issue 32 item 3)."""
    live = ctx.options.kafka
    path = prediction.start_from
    if live is None or not live.below or prediction.start_offsets is None or path is None:
        return
    batch = int(path.split("/")[1]) if path.startswith("offsets/") and path[8:].isdigit() else None
    entry = ctx.snapshot.offsets.get(batch) if batch is not None else None
    meta = entry.record.metadata if entry is not None and entry.record is not None else None
    if meta is None or meta.batch_timestamp_ms <= 0:
        return
    for n, off in kafka_sources(prediction.start_offsets):
        found = replaced_below(off, live, meta.batch_timestamp_ms)
        if not found:
            continue
        total = sum(u for _, _, _, u, _ in found)
        shown = [f"{t}-{p}: {u} (offsets {at - u}..{at - 1})" for t, p, at, u, _ in found]
        more = f" and {len(shown) - SHOWN} more" if len(shown) > SHOWN else ""
        t, p, at, _, ts = found[0]
        yield Finding(
            Code.KAFKA_TOPIC_RECREATED_UNREAD,
            f"Kafka source {n}: the topic on {live.bootstrap} was replaced after batch {batch} planned its "
            f"positions (record {t}-{p}@{at - 1}, just below the position {at}, was written at "
            f"{iso_ms(ts) or ts}, after the batch's {iso_ms(meta.batch_timestamp_ms)}): the restart starts at "
            "the old positions and "
            f"never reads {total} records of the new topic below them ({', '.join(shown[:SHOWN])}{more}); "
            "failOnDataLoss does not see this.",
            paths=(path,),
            batch_ids=(prediction.next_batch_id,) if prediction.next_batch_id is not None else (),
            details=(
                ("source", n),
                ("bootstrap", live.bootstrap),
                ("batch_timestamp_ms", meta.batch_timestamp_ms),
                ("unread", total),
                ("unread_per_partition", tuple((f"{t}-{p}", u) for t, p, _, u, _ in found)),
            ),
        )


def assumption(sources: Sequence[SourceOffset] | None, live: KafkaLive | None) -> str | None:
    """What the matrix says about Kafka positions: read from which broker, or not checked and how."""
    topics = topics_of(sources)
    if not topics:
        return None
    names = ", ".join(topics)
    if live is None:
        return (
            f"Kafka positions not checked (topics {names}): pass {FLAG} (and --kafka-option KEY=VALUE for "
            "client settings) to compare the checkpoint's offsets with the broker's"
        )
    return f"Kafka positions of {names} read from {live.bootstrap}; failOnDataLoss assumed true (Spark's default)"


def unread_offsets(snapshot: CheckpointSnapshot) -> list[tuple[int, KafkaOffset]]:
    """Return ``(source index, offsets)`` where each Kafka source's unread records start: the
    newest committed batch's end offsets (an uncommitted newer batch is re-run from there,
    ``MicroBatchExecution.populateStartOffsets``), else the newest offsets line."""
    committed = snapshot.commits.latest_id
    entry = snapshot.offsets.get(committed) if committed is not None else None
    if entry is not None and entry.record is not None and entry.record.version == 1:
        return kafka_sources(entry.record.sources)
    return kafka_sources(newest_sources(snapshot))


def retention_countdown(
    snapshot: CheckpointSnapshot, live: KafkaLive | None, now_ms: int | None
) -> Countdown | None:
    """Return the soonest retention countdown of the checkpoint's Kafka sources (None without a
    broker's answer, a clock or a Kafka source)."""
    if live is None or now_ms is None:
        return None
    return soonest([countdown(off, live, now_ms) for _, off in unread_offsets(snapshot)])


def retention_note(snapshot: CheckpointSnapshot, live: KafkaLive | None, now_ms: int | None) -> str | None:
    """What the matrix says about the unread records' retention (ahead of loss), or None."""
    found = retention_countdown(snapshot, live, now_ms)
    if found is None:
        return None
    return f"Kafka retention: {found.text}"
