"""The checkpoint's Kafka positions against the topics' live positions (CD207). Pure.

The live positions come from the I/O edge (``checkpoint_doctor.world.kafka``) through
``DiagnoseOptions.kafka``; without them nothing is judged and the matrix says how to check.
What a restart does is :func:`checkpoint_doctor.diagnosis.sources.kafka_positions.predict`, proven by the
restarts real Spark recorded in ``fixtures/kafka/``. It models the first batch *after* the
checkpoint's newest offsets (a new batch); a re-run of an uncommitted batch reads the range its
offsets files fixed, judged by :func:`rerun_restarts` (CD235, issue 32 item 4).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from dataclasses import replace

from checkpoint_doctor.diagnosis.changes.facts import JobFacts
from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.model import DiagnoseOptions, Finding, RestartPrediction
from checkpoint_doctor.diagnosis.sources.kafka_positions import (
    SHAPES,
    KafkaRestart,
    Subscription,
    predict,
    predict_rerun,
)
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
from checkpoint_doctor.reading.positions import kafka_sources, unread_offsets
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot

#: The flag that gives a broker, named wherever positions were not checked.
FLAG = "--kafka-bootstrap-servers HOST:PORT"


def topics_of(sources: Sequence[SourceOffset] | None) -> list[str]:
    """Return the topics the Kafka sources of an offsets line read, sorted."""
    return sorted({t for _, off in kafka_sources(sources) for t, _, _ in off.partitions})


def job_kafka_subscriptions(job: JobFacts | None) -> tuple[tuple[int, str, str, bool], ...]:
    """``(source index, shape, value, failOnDataLoss)`` of each Kafka source of the job (``--job``): the
    option that picks its ConsumerStrategy (KafkaSourceProvider.strategy) and failOnDataLoss (true
    unless the option says false, KafkaSourceProvider.failOnDataLoss)."""
    out = []
    for n, source in enumerate(job.sources if job is not None else ()):
        if source.name.lower() != "kafka":
            continue
        options = {k.lower(): v for k, v in source.options}
        shape = next((s for s in SHAPES if s.lower() in options), None)
        if shape is not None:
            fol = options.get("failondataloss", "true").strip().lower() != "false"
            out.append((n, shape, options[shape.lower()], fol))
    return tuple(out)


def known_subscriptions(opts: DiagnoseOptions) -> tuple[tuple[int, str, str, bool], ...]:
    """The Kafka sources' subscriptions the diagnosis knows: given (a plan's request), else the job's."""
    return opts.kafka_subscriptions or job_kafka_subscriptions(opts.job)


def job_subscription(opts: DiagnoseOptions, n: int) -> Subscription | None:
    """How source ``n`` subscribes, when known (``--job``), else None."""
    return next((Subscription(s, v) for i, s, v, _ in known_subscriptions(opts) if i == n), None)


def job_fail_on_data_loss(opts: DiagnoseOptions, n: int) -> bool:
    """The job's failOnDataLoss for source ``n``, true (Spark's default) when the job is not known."""
    return next((fol for i, _, _, fol in known_subscriptions(opts) if i == n), True)


def subscriptions(opts: DiagnoseOptions, n: int) -> tuple[Subscription, ...]:
    """The subscriptions source ``n`` may have: the job's own, else every shape (the checkpoint's
    offsets do not say which; ``subscribe``, the usual one, first)."""
    known = job_subscription(opts, n)
    return (known,) if known is not None else tuple(Subscription(s) for s in SHAPES)


def restarts(
    line: SparkLine,
    sources: Sequence[SourceOffset] | None,
    live: KafkaLive,
    fail_on_data_loss: bool,
    opts: DiagnoseOptions | None = None,
) -> list[tuple[int, KafkaOffset, KafkaRestart]]:
    """Return each Kafka source's restart from ``sources`` (the offsets the new batch starts from),
    subscribed as the job says, else with ``subscribe``."""
    positions = live.live
    known = opts if opts is not None else DiagnoseOptions()
    return [
        (
            n,
            off,
            predict(
                off,
                positions,
                line,
                fail_on_data_loss and job_fail_on_data_loss(known, n),
                subscriptions(known, n)[0],
            ),
        )
        for n, off in kafka_sources(sources)
    ]


def shape_restarts(
    line: SparkLine,
    off: KafkaOffset,
    live: KafkaLive,
    fail_on_data_loss: bool,
    subs: Sequence[Subscription],
) -> list[tuple[Subscription, KafkaRestart]]:
    """Return the restart of one Kafka source under each subscription of ``subs``."""
    positions = live.live
    return [(sub, predict(off, positions, line, fail_on_data_loss, sub)) for sub in subs]


def _with_shapes(first: SparkError, others: Sequence[SparkError]) -> SparkError:
    """The cell's error with the other shapes' texts as alternatives (what the log shows instead)."""
    seen = [first.search, *first.alternatives]
    extra = [t for e in others for t in (e.search, *e.alternatives) if t not in seen]
    return replace(first, alternatives=tuple(dict.fromkeys((*first.alternatives, *extra))))


def restart_error(ctx: Context, start_offsets: Sequence[SourceOffset] | None) -> SparkError | None:
    """The error of the first Kafka source that refuses a new batch (failOnDataLoss=true, Spark's
    default: the source option is not in the checkpoint), or None. With the subscription not known
    (no ``--job``) the cell is ``subscribe``'s, the shape that refuses the most (a pattern refuses
    where it does, an assign query ignores added partitions), and the other shapes' refusals are its
    alternative texts (issue 32 item 1)."""
    live = ctx.options.kafka
    if live is None:
        return None
    opts = ctx.options
    for n, off in kafka_sources(start_offsets):
        by_shape = shape_restarts(
            ctx.target, off, live, job_fail_on_data_loss(opts, n), subscriptions(opts, n)
        )
        errors = [r.error for _, r in by_shape if r.error is not None]
        if errors:
            return _with_shapes(errors[0], errors[1:])
    return None


#: Partitions a note names before "and N more" (a topic may have thousands).
SHOWN = 6


def rerun_restarts(
    line: SparkLine,
    start: Sequence[SourceOffset] | None,
    end: Sequence[SourceOffset] | None,
    live: KafkaLive,
    fail_on_data_loss: bool,
) -> list[tuple[int, KafkaOffset, KafkaOffset | None, KafkaRestart | None]]:
    """Return each Kafka source's re-run of the uncommitted batch ``[start, end)``: ``(source index,
    end offsets, start offsets, restart)``, the restart None where it is not judged (no start offsets:
    the batch starts from ``sources/<n>/0``; see :func:`predict_rerun`)."""
    begin = dict(kafka_sources(start))
    out: list[tuple[int, KafkaOffset, KafkaOffset | None, KafkaRestart | None]] = []
    for n, off in kafka_sources(end):
        frm = begin.get(n)
        judged = None if frm is None else predict_rerun(frm, off, live.live, line, fail_on_data_loss)
        out.append((n, off, frm, judged))
    return out


def rerun_error(
    ctx: Context, start: Sequence[SourceOffset] | None, end: Sequence[SourceOffset] | None
) -> SparkError | None:
    """The error of the first Kafka source whose re-run range the broker no longer holds
    (failOnDataLoss=true, Spark's default), or None."""
    live = ctx.options.kafka
    if live is None:
        return None
    for _, _, _, restart in rerun_restarts(ctx.target, start, end, live, True):
        if restart is not None and restart.error is not None:
            return restart.error
    return None


def rerun_notes(
    ctx: Context, batch: int | None, start: Sequence[SourceOffset] | None, end: Sequence[SourceOffset] | None
) -> list[str]:
    """What each Kafka source's re-run of ``batch`` reads, or that its range was not judged."""
    live = ctx.options.kafka
    if live is None:
        return []
    out = []
    for n, _, _, restart in rerun_restarts(ctx.target, start, end, live, True):
        if restart is None:
            out.append(
                f"Kafka positions of source {n} not judged: batch {batch} re-runs the range its offsets files "
                f"fixed, and {live.bootstrap} holds topics or partitions that range does not fit"
            )
            continue
        ranges = [f"{r.topic}-{r.partition} [{r.start}, {r.end})" for r in restart.reads]
        more = f" and {len(ranges) - SHOWN} more" if len(ranges) > SHOWN else ""
        out.append(
            f"Kafka source {n} re-runs batch {batch}: {restart.rows} records held on {live.bootstrap}: "
            f"{', '.join(ranges[:SHOWN])}{more}"
        )
    return out


def reads_notes(ctx: Context, start_offsets: Sequence[SourceOffset] | None) -> list[str]:
    """What each Kafka source's new batch reads, as the broker's positions say (with failOnDataLoss=true)."""
    live = ctx.options.kafka
    if live is None:
        return []
    out = []
    for n, _, restart in restarts(ctx.target, start_offsets, live, True, ctx.options):
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


def _dropped(off: KafkaOffset, restart: KafkaRestart) -> list[tuple[str, int, int]]:
    """The checkpoint's partitions a restart that starts does not read (gone and dropped by
    failOnDataLoss=false: ``getOffsetRangesFromResolvedOffsets`` ranges only the partitions listed now)."""
    read = {(r.topic, r.partition) for r in restart.reads}
    return [(t, p, o) for t, p, o in off.partitions if (t, p) not in read]


def lenient_text(off: KafkaOffset, soft: KafkaRestart) -> str:
    """What a restart with failOnDataLoss=false does, in a clause: fails too, or starts and skips
    (counted per partition) or drops partitions (their unread records named by offset)."""
    if soft.error is not None:
        why = " (the topic is gone)" if "UnknownTopicOrPartition" in soft.error.search else ""
        return f"fails too{why}: {soft.error.summary}"
    skipped = {(r.topic, r.partition): r.skipped for r in soft.reads if r.skipped}
    words = []
    if skipped:
        counts = _bounded([f"{t}-{p}: {c}" for (t, p), c in sorted(skipped.items())], ", ")
        words.append(f"skips {soft.skipped} records ({counts})")
    dropped = _dropped(off, soft)
    if dropped:
        names = _bounded([f"{t}-{p} from offset {o}" for t, p, o in dropped], ", ")
        some = "1 partition" if len(dropped) == 1 else f"{len(dropped)} partitions"
        words.append(
            f"drops {some} the broker no longer lists, never reading their records ({names}; "
            "how many is not known: the broker no longer holds them)"
        )
    known = off.topic_partitions()
    late = [r for r in soft.reads if (r.topic, r.partition) not in known and r.start > 0]
    if late:
        # getOffsetRangesFromResolvedOffsets reads an added partition from its earliest offset
        names = _bounded([f"{r.topic}-{r.partition} from {r.start}" for r in late], ", ")
        words.append(
            f"reads the added partitions from their earliest offsets, never the records below ({names})"
        )
    above = [r for r in soft.reads if r.start > r.end]
    if above:
        # a position above the latest offset: the range is dropped, the partition reads nothing now
        names = _bounded([f"{r.topic}-{r.partition} at {r.start}, latest {r.end}" for r in above], ", ")
        words.append(
            f"reads nothing of the partitions whose positions are above their latest offset ({names})"
        )
    if not words:
        return f"starts, reading {soft.rows} records"
    return "starts and " + " and ".join(words)


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _lenient_by_shape(
    line: SparkLine, off: KafkaOffset, live: KafkaLive, subs: Sequence[Subscription]
) -> str:
    """failOnDataLoss=false's outcome, per subscription shape where they differ."""
    texts: dict[str, list[str]] = {}
    for sub, soft in shape_restarts(line, off, live, False, subs):
        texts.setdefault(lenient_text(off, soft), []).append(sub.shape)
    if len(texts) == 1:
        return f"with failOnDataLoss=false it {next(iter(texts))}"
    return "with failOnDataLoss=false " + "; ".join(
        f"{_article(shapes[0])} {' or '.join(shapes)} query {text}" for text, shapes in texts.items()
    )


def check_kafka_positions(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD207: a Kafka source's next offsets are gone from the broker (records deleted, topic or
    partitions deleted or recreated), with what failOnDataLoss=false would skip per partition, per
    subscription shape when the job does not say which (issue 32 item 1)."""
    live = ctx.options.kafka
    if live is None or prediction.rerun or prediction.start_offsets is None:
        return
    opts = ctx.options
    for n, off in kafka_sources(prediction.start_offsets):
        subs = subscriptions(opts, n)
        strict = job_fail_on_data_loss(opts, n)
        refusing = [(sub, r) for sub, r in shape_restarts(ctx.target, off, live, strict, subs) if r.error]
        if not refusing:
            continue
        sub, restart = refusing[0]
        assert restart.error is not None
        soft = predict(off, live.live, ctx.target, False, sub)
        skipped = {(r.topic, r.partition): r.skipped for r in soft.reads if r.skipped}
        when = (
            "in the tasks of the first batch" if restart.error.phase == "task" else "planning the first batch"
        )
        otherwise = _lenient_by_shape(ctx.target, off, live, subs)
        shaped = f" (the job's {sub.shape}={sub.value})" if len(subs) == 1 and sub.value is not None else ""
        verdict = (
            f"with failOnDataLoss=true (the default) the restart fails {when}, {otherwise}"
            if strict
            else f"the job sets failOnDataLoss=false and the restart fails {when} all the same"
        )
        yield Finding(
            Code.KAFKA_POSITIONS_GONE,
            f"Kafka source {n}{shaped}: the broker at {live.bootstrap} no longer holds the checkpoint's positions "
            f"({_partition_text(off, live, skipped)}); {verdict}.",
            paths=(prediction.start_from,) if prediction.start_from else (),
            batch_ids=(prediction.next_batch_id,) if prediction.next_batch_id is not None else (),
            details=(
                ("source", n),
                ("bootstrap", live.bootstrap),
                ("phase", restart.error.phase),
                ("skipped_with_fail_on_data_loss_false", None if soft.error else soft.skipped),
                # pairs, not a dict: a finding is hashed (findings are deduplicated across checks)
                ("skipped_per_partition", tuple((f"{t}-{p}", c) for (t, p), c in sorted(skipped.items()))),
                (
                    "dropped_with_fail_on_data_loss_false",
                    tuple(f"{t}-{p}" for t, p, _ in _dropped(off, soft)),
                ),
            ),
        )


def _outcome(off: KafkaOffset, restart: KafkaRestart, soft: KafkaRestart) -> str:
    """One shape's restart in a phrase: STARTS reading N records (which partitions it leaves out),
    or FAILS with Spark's words; then what failOnDataLoss=false does."""
    if restart.error is not None:
        first = f"FAILS: {restart.error.summary}"
    else:
        first = f"STARTS, reading {restart.rows} records"
        known = off.topic_partitions()
        new = [f"{r.topic}-{r.partition}" for r in restart.reads if (r.topic, r.partition) not in known]
        if new:
            first += f" (with the added partitions {', '.join(new[:SHOWN])})"
        return first
    return f"{first}; with failOnDataLoss=false it {lenient_text(off, soft)}"


def check_kafka_subscription_shape(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD230: the checkpoint does not say whether a Kafka source subscribed with ``subscribe``,
    ``subscribePattern`` or ``assign`` (the offsets hold partitions only), and the broker's topics
    make the restart differ between them (issue 32 item 1): each shape's outcome in Spark's words,
    until ``--job`` names the query."""
    live = ctx.options.kafka
    if live is None or prediction.rerun or prediction.start_offsets is None:
        return
    for n, off in kafka_sources(prediction.start_offsets):
        subs = subscriptions(ctx.options, n)
        if len(subs) == 1:
            continue
        strict = shape_restarts(ctx.target, off, live, True, subs)
        soft = {s.shape: r for s, r in shape_restarts(ctx.target, off, live, False, subs)}
        outcomes: dict[str, list[str]] = {}
        for sub, restart in strict:
            outcomes.setdefault(_outcome(off, restart, soft[sub.shape]), []).append(sub.shape)
        if len(outcomes) == 1:
            continue
        words = "; ".join(f"{' or '.join(shapes)}: {text}" for text, shapes in outcomes.items())
        yield Finding(
            Code.KAFKA_SUBSCRIPTION_SHAPE,
            f"Kafka source {n}: the checkpoint does not say whether the query subscribes with subscribe, "
            f"subscribePattern or assign, and the restart against {live.bootstrap} differs between them: "
            f"{words}. The matrix shows subscribe's; name the query with --job MODULE:FUNCTION to judge "
            "its own subscription.",
            paths=(prediction.start_from,) if prediction.start_from else (),
            batch_ids=(prediction.next_batch_id,) if prediction.next_batch_id is not None else (),
            details=(
                ("source", n),
                ("bootstrap", live.bootstrap),
                ("outcomes", tuple((" or ".join(shapes), text) for text, shapes in outcomes.items())),
            ),
        )


def check_kafka_rerun_range(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD235: the uncommitted batch a restart re-runs logged a range the broker no longer holds
    (retention deleted records of it): the re-run fails in its tasks (failOnDataLoss=true) or skips
    them (false), on every line (issue 32 item 4: 3.5 was predicted to start, 4.2/4.3 healthy)."""
    live = ctx.options.kafka
    if live is None or not prediction.rerun or prediction.end_offsets is None:
        return
    batch = prediction.next_batch_id
    refusing = rerun_restarts(ctx.target, prediction.start_offsets, prediction.end_offsets, live, True)
    lenient = {
        n: r
        for n, _, _, r in rerun_restarts(
            ctx.target, prediction.start_offsets, prediction.end_offsets, live, False
        )
    }
    for n, _, _, restart in refusing:
        soft = lenient.get(n)
        if restart is None or restart.error is None or soft is None or soft.error is not None:
            continue
        positions = live.live
        gone = [r for r in soft.reads if r.skipped]
        words = []
        for r in gone:
            earliest = (positions.get(r.topic) or {})[r.partition][0]
            beyond = f", and {earliest - r.end} more after it" if earliest > r.end else ""
            words.append(
                f"{r.topic}-{r.partition}: batch range [{r.start}, {r.end}), earliest {earliest}, "
                f"{r.skipped} of the batch's records deleted{beyond}"
            )
        counts = _bounded([f"{r.topic}-{r.partition}: {r.skipped}" for r in gone], ", ")
        paths = tuple(p for p in (prediction.end_from, prediction.start_from) if p)
        yield Finding(
            Code.KAFKA_RERUN_RANGE_GONE,
            f"Kafka source {n}: batch {batch} has no commit, so the restart re-runs the range "
            f"{prediction.start_from or 'sources'}..{prediction.end_from} logged, but the broker at "
            f"{live.bootstrap} no longer holds all of it ({_bounded(words)}); with failOnDataLoss=true (the "
            "default) the re-run fails in its tasks, with failOnDataLoss=false it re-runs from the earliest "
            f"offsets and skips {soft.skipped} records of the batch ({counts}).",
            paths=paths,
            batch_ids=(batch,) if batch is not None else (),
            details=(
                ("source", n),
                ("bootstrap", live.bootstrap),
                ("phase", restart.error.phase),
                ("skipped_with_fail_on_data_loss_false", soft.skipped),
                ("skipped_per_partition", tuple((f"{r.topic}-{r.partition}", r.skipped) for r in gone)),
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
        # Imported here: the inspect report's module is not otherwise loaded by diagnose or audit
        # (an import of every start, bench: audit).
        from checkpoint_doctor.diagnosis.inspection import iso_ms

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


def assumption(
    sources: Sequence[SourceOffset] | None, live: KafkaLive | None, opts: DiagnoseOptions | None = None
) -> str | None:
    """What the matrix says about Kafka positions: read from which broker, or not checked and how;
    with the subscription the job gives (``--job``), its shape and failOnDataLoss instead of Spark's
    defaults."""
    topics = topics_of(sources)
    if not topics:
        return None
    names = ", ".join(topics)
    if live is None:
        return (
            f"Kafka positions not checked (topics {names}): pass {FLAG} (and --kafka-option KEY=VALUE for "
            "client settings) to compare the checkpoint's offsets with the broker's"
        )
    known = known_subscriptions(opts) if opts is not None else ()
    if known:
        shown = ", ".join(
            f"source {n} {shape}={value} with failOnDataLoss={str(fol).lower()}"
            for n, shape, value, fol in known
        )
        return f"Kafka positions of {names} read from {live.bootstrap}; the job's Kafka sources: {shown}"
    return f"Kafka positions of {names} read from {live.bootstrap}; failOnDataLoss assumed true (Spark's default)"


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
