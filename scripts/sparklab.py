#!/usr/bin/env python3
"""Spark harness: run a list of streaming jobs in ONE SparkSession and report what Spark did.

Runs INSIDE a pyspark venv (see ``scripts/spark_envs.py``); stdlib + pyspark only.

    <spark-python> scripts/sparklab.py JOBS.json RESULTS.json

JOBS.json is a JSON list of jobs (or an object ``{"jobs": [...]}``)::

    {"id": "any string", "op": "run" | "restart" | "world",
     "query": "<name in QUERIES>", "query_args": {},
     "checkpoint": "/abs/path", "sink": "/abs/path or null", "input": "/abs/path or null",
     "mode": "micro-batch" | "async" | "continuous" | "real-time", "async_interval_ms": 1000,
     "trigger": "once" | "processing" | "available-now" | "continuous" | "real-time" | "job",
     "trigger_interval": "0 seconds",            # optional, processing/continuous/real-time only
     "batches": 1, "timeout_s": 60, "confs": {"k": "v"}, "options": {"k": "v"},
     "stop_when_aligned": false,                 # optional, see _aligned_on_disk
     "read_after": "/abs/path",                  # optional: read this file sink output afterwards
     "kafka_bootstrap": "127.0.0.1:PORT",        # kafka_* queries only
     "before_argv": ["python", "..."]}           # optional: run before the query starts

* ``run``: start the query, stop it cleanly once ``batches`` batches have completed (Once and
  AvailableNow stop by themselves) or at ``timeout_s``.
* ``restart``: start on an existing checkpoint and stop after the FIRST batch's progress, when
  the query fails, or at ``timeout_s``.
* ``world``: start no query; run ``steps`` in order, each ``{"sql": "..."}`` (Spark SQL in this
  session, e.g. Delta DML on ``delta.`/path```), ``{"copy": [from, to]}`` (a directory tree, the
  target replaced; ``copy_present``: only if ``from`` exists) or ``{"remove": [glob, ...]}``: the damage done to the world outside a checkpoint.

Any job may name ``describe_tables`` (Delta table paths): after it, ``tables`` in its result holds
per path ``{"exists", "version", "rows", "rows_per_batch"}`` (rows per ``value div 5``: the
rate-micro-batch batch that wrote them), so what a sink silently skipped or wrote twice is recorded.
Session-wide static confs (Delta's ``spark.sql.extensions`` and catalog) come from the JSON object
in ``CHECKPOINT_DOCTOR_SPARK_SESSION_CONFS``.

RESULTS.json is a JSON list with one result per job, same order, rewritten after every job::

    {"id": ..., "spark_version": "3.5.9", "started": true | false,
     "batches": [{"batchId": 3, "numInputRows": 5,
                  "sources": [{"description", "startOffset", "endOffset", "numInputRows"}]}],
     "error": null | {"phase": "start" | "run", "type": "...", "message": "..."},
     "timed_out": false, "query_id": "<StreamingQuery.id>",
     "confs": {<session confs applied for this job>},
     "log": ["WARN MicroBatchExecution: ...", ...],   # streaming WARN/ERROR log records
     "elapsed_s": 4.2}

Error messages have JVM stack frames removed, the root causes appended (so a task failure
shows the state store's own text, not only "Job aborted"), and the checkpoint, sink and input
paths replaced by ``<cp>``, ``<sink>`` and ``<input>`` (plain, ``file:`` and ``file://`` forms).
A job failure is a result, never a crash of the harness.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter

MESSAGE_LIMIT = 2000
#: Comma-separated jars for ``spark.jars`` (the Kafka connector from scripts/jars.py).
SPARK_JARS_ENV = "CHECKPOINT_DOCTOR_SPARK_JARS"
#: A JSON object of static session confs (set before the session starts), e.g. Delta's extension.
SESSION_CONFS_ENV = "CHECKPOINT_DOCTOR_SPARK_SESSION_CONFS"
POLL_S = 0.05

HDFS_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

# Session-wide settings. Everything that must be identical for all jobs lives here; per-job
# settings go into the job's "confs".
SESSION_CONFS = {
    "spark.master": "local[2]",
    "spark.app.name": "checkpoint-doctor-sparklab",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.noDataProgressEventInterval": "200ms",
    "spark.sql.streaming.stopTimeout": "60s",
    # Small, fixed state-store maintenance cadence: lets the RocksDB changelog fixture get
    # uploaded snapshots (zips) within a few seconds. HDFS fixtures never reach
    # minDeltasForSnapshot (10 deltas), so for them maintenance is a no-op.
    "spark.sql.streaming.stateStore.maintenanceInterval": "1s",
}


# --------------------------------------------------------------------------------------------
# QUERIES catalog: name -> builder(spark, job) returning an UNSTARTED DataStreamWriter without
# checkpointLocation. QUERY_CONFS holds the session confs a query needs (job confs win).
# --------------------------------------------------------------------------------------------

QUERIES: dict[str, Callable[[SparkSession, dict], DataStreamWriter]] = {}
QUERY_CONFS: dict[str, dict[str, str]] = {}


def query(name: str, confs: dict[str, str] | None = None):
    def register(fn):
        QUERIES[name] = fn
        QUERY_CONFS[name] = dict(confs or {})
        return fn

    return register


def _args(job: dict) -> dict:
    return job.get("query_args") or {}


def rate_micro_batch(spark: SparkSession, job: dict, name: str | None = None) -> DataFrame:
    """The deterministic micro-batch source: batch b reads values [5b, 5b+5) at time b seconds."""
    args = _args(job)
    reader = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", str(args.get("rowsPerBatch", 5)))
        .option("numPartitions", str(args.get("numPartitions", 1)))
        .option("startTimestamp", "0")
        .option("advanceMillisPerBatch", "1000")
    )
    if name is not None and hasattr(reader, "name"):
        reader = reader.name(name)  # 4.2+ only; older readers stay unnamed (positional)
    return reader.load()


def _noop(df: DataFrame, output_mode: str = "append") -> DataStreamWriter:
    return df.writeStream.format("noop").outputMode(output_mode)


@query("stateless")
def q_stateless(spark, job):
    df = rate_micro_batch(spark, job).select(F.col("value"), (F.col("value") % 3).alias("key"))
    return _noop(df)


def kafka_source(spark: SparkSession, job: dict) -> DataFrame:
    """Spark's Kafka connector over one topic, or the ``subscription`` of ``shape`` (jars from
    scripts/jars.py, via spark.jars).

    ``kafka_bootstrap`` is the job's broker (a fresh one per run: ports are not part of the
    checkpoint); ``failOnDataLoss`` is the connector's own option (KafkaSourceProvider), true by default.
    """
    args = _args(job)
    # The subscription shape (ConsumerStrategy): "subscribe" (a topic list, the default),
    # "subscribePattern" (a regex) or "assign" (a JSON {"topic": [partitions]}), issue 32 item 1.
    shape = args.get("shape", "subscribe")
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", job["kafka_bootstrap"])
        .option(shape, args.get("subscription", args.get("topic", "events")))
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", str(args.get("failOnDataLoss", "true")).lower())
        .load()
    )


@query("kafka_stateless")
def q_kafka_stateless(spark, job):
    return _noop(kafka_source(spark, job).select("partition", "offset", F.col("value").cast("string")))


@query("kafka_union")
def q_kafka_union(spark, job):
    """Two Kafka sources in one query (issue 32 item 2): ``topic`` (source 0) union ``topic2`` (source 1).

    Each source keeps its own offsets in the checkpoint's offsets lines (one per source, in the
    plan's order), and the connector judges each against its own topics only
    (KafkaMicroBatchStream per source).
    """
    args = _args(job)
    cols = ("topic", "partition", "offset")
    first = kafka_source(spark, job).select(*cols)
    second = kafka_source(spark, {**job, "query_args": {**args, "topic": args.get("topic2", "orders")}})
    return _noop(first.unionByName(second.select(*cols)))


@query("kafka_to_kafka")
def q_kafka_to_kafka(spark, job):
    """Kafka topic -> Kafka topic ``out``: the sink every execution mode accepts.

    Real-time mode allows only the sinks in ``RealTimeModeAllowlist`` (console, foreach, memory,
    ``KafkaSourceProvider$KafkaTable``; not noop), async progress tracking only those of
    ``AsyncProgressTrackingMicroBatchExecution`` (noop, console, memory, Kafka), so one query can be
    restarted in real-time, async and synchronous micro-batch mode alike. Update output mode:
    real-time mode refuses append (``STREAMING_REAL_TIME_MODE.OUTPUT_MODE_NOT_SUPPORTED``).
    """
    args = _args(job)
    df = kafka_source(spark, job).select(F.col("key"), F.col("value"))
    return (
        df.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", job["kafka_bootstrap"])
        .option("topic", args.get("sink_topic", "out"))
        .outputMode("update")
    )


@query("kafka_count", {"spark.sql.streaming.stateStore.providerClass": HDFS_PROVIDER})
def q_kafka_count(spark, job):
    return _noop(kafka_source(spark, job).groupBy("partition").count(), "update")


def delta_source(spark: SparkSession, job: dict) -> DataFrame:
    """Delta Lake's streaming source over the table at ``input`` (jars from scripts/jars.py).

    ``query_args.source_options`` are the DeltaSource options of a restart (ignoreDeletes,
    skipChangeCommits, failOnDataLoss ...): reader options, not part of the checkpoint.
    """
    reader = spark.readStream.format("delta")
    for key, value in (_args(job).get("source_options") or {}).items():
        reader = reader.option(key, str(value))
    return reader.load(job["input"])


@query("delta_stateless")
def q_delta_stateless(spark, job):
    return _noop(delta_source(spark, job).select("id", "key", "text"))


@query("delta_two_sources")
def q_delta_two_sources(spark, job):
    """Two Delta sources unioned: the table at ``input`` (source 0) and the table ``source2`` beside
    it (source 1): each has its own line in the offsets, as two tables a job reads together."""
    second = os.path.join(os.path.dirname(job["input"].rstrip("/")), "source2")
    first = delta_source(spark, job).select("id", "key", "text")
    reader = spark.readStream.format("delta")
    for key, value in (_args(job).get("source_options") or {}).items():
        reader = reader.option(key, str(value))
    return _noop(first.union(reader.load(second).select("id", "key", "text")))


@query("delta_count", {"spark.sql.streaming.stateStore.providerClass": HDFS_PROVIDER})
def q_delta_count(spark, job):
    return _noop(delta_source(spark, job).groupBy("key").count(), "update")


@query("rate_to_delta")
def q_rate_to_delta(spark, job):
    """rate-micro-batch -> Delta sink at ``sink``: batch b appends values [5b, 5b+5) under txn
    (appId = query id, version = b), which DeltaSink checks to skip a batch it already holds."""
    df = rate_micro_batch(spark, job).select(F.col("value"), (F.col("value") % 3).alias("key"))
    return df.writeStream.format("delta").option("path", job["sink"]).outputMode("append")


#: The txnAppId of ``rate_to_delta_txn``'s writes: a fixed name, as Delta's documentation of
#: idempotent foreachBatch writes shows it (not the query id: a new checkpoint keeps it).
TXN_APP_ID = "checkpoint-doctor-foreach-batch"


@query("rate_to_delta_txn")
def q_rate_to_delta_txn(spark, job):
    """rate-micro-batch -> foreachBatch appending batch b (values [5b, 5b+5)) to the Delta table at
    ``sink`` with the writer options txnAppId = TXN_APP_ID (``query_args.txn_app_id``) and
    txnVersion = b: delta-spark's idempotent writes (WriteIntoDelta -> DeltaCommand.hasBeenExecuted
    skips a write whose version is at or below the table's txn version for the appId)."""
    app_id = str(_args(job).get("txn_app_id") or TXN_APP_ID)
    sink = job["sink"]
    df = rate_micro_batch(spark, job).select(F.col("value"), (F.col("value") % 3).alias("key"))

    def write(batch_df: DataFrame, batch_id: int) -> None:
        (
            batch_df.write.format("delta")
            .option("txnAppId", app_id)
            .option("txnVersion", str(batch_id))
            .mode("append")
            .save(sink)
        )

    return df.writeStream.foreachBatch(write)


@query("stateless_two_sources")
def q_stateless_two_sources(spark, job):
    a = rate_micro_batch(spark, job).select("value", "timestamp")
    b = rate_micro_batch(spark, job).select("value", "timestamp")
    return _noop(a.union(b).select(F.col("value"), (F.col("value") % 3).alias("key")))


def _window_agg_df(spark, job):
    return (
        rate_micro_batch(spark, job)
        .withWatermark("timestamp", "2 seconds")
        .groupBy(F.window("timestamp", "2 seconds"))
        .count()
    )


@query("window_agg", {"spark.sql.streaming.stateStore.providerClass": HDFS_PROVIDER})
def q_window_agg(spark, job):
    return _noop(_window_agg_df(spark, job))


@query("dedup", {"spark.sql.streaming.stateStore.providerClass": HDFS_PROVIDER})
def q_dedup(spark, job):
    df = (
        rate_micro_batch(spark, job)
        .withWatermark("timestamp", "2 seconds")
        .select((F.col("value") % 3).alias("key"), "timestamp")
        .dropDuplicates(["key", "timestamp"])
    )
    return _noop(df)


@query("stream_join", {"spark.sql.streaming.stateStore.providerClass": HDFS_PROVIDER})
def q_stream_join(spark, job):
    left = (
        rate_micro_batch(spark, job)
        .select(F.col("value").alias("lkey"), F.col("timestamp").alias("lts"))
        .withWatermark("lts", "2 seconds")
    )
    right = (
        rate_micro_batch(spark, job)
        .select(F.col("value").alias("rkey"), F.col("timestamp").alias("rts"))
        .withWatermark("rts", "2 seconds")
    )
    cond = (
        (F.col("lkey") == F.col("rkey"))
        & (F.col("rts") >= F.col("lts") - F.expr("INTERVAL 1 SECOND"))
        & (F.col("rts") <= F.col("lts") + F.expr("INTERVAL 1 SECOND"))
    )
    return _noop(left.join(right, cond, "inner"))


@query("file_to_file")
def q_file_to_file(spark, job):
    args = _args(job)
    df = spark.readStream.schema("id LONG, text STRING").option("maxFilesPerTrigger", "1").json(job["input"])
    return df.writeStream.format(args.get("format", "json")).option("path", job["sink"]).outputMode("append")


@query(
    "rocksdb_changelog",
    {
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.streaming.stateStore.minDeltasForSnapshot": "2",
    },
)
def q_rocksdb_changelog(spark, job):
    return _noop(_window_agg_df(spark, job))


@query("rocksdb", {"spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER})
def q_rocksdb(spark, job):
    return _noop(_window_agg_df(spark, job))


@query("rate_source")
def q_rate_source(spark, job):
    """The micro-batch ``rate`` source: it keeps its start time in ``sources/0/0``."""
    args = _args(job)
    df = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", str(args.get("rowsPerSecond", 5)))
        .option("numPartitions", str(args.get("numPartitions", 1)))
        .load()
    )
    return _noop(df.select("value", "timestamp"))


@query(
    "rocksdb_v2",
    {
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        "spark.sql.streaming.stateStore.checkpointFormatVersion": "2",
    },
)
def q_rocksdb_v2(spark, job):
    return _noop(_window_agg_df(spark, job))


@query("offsets_v2", {"spark.sql.streaming.queryEvolution.enableSourceEvolution": "true"})
def q_offsets_v2(spark, job):
    df = rate_micro_batch(spark, job, name="src_a")
    return _noop(df.select(F.col("value"), (F.col("value") % 3).alias("key")))


@query("continuous")
def q_continuous(spark, job):
    args = _args(job)
    df = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", str(args.get("rowsPerSecond", 5)))
        .option("numPartitions", str(args.get("numPartitions", 1)))
        .load()
    )
    return df.select("value", "timestamp").writeStream.format(args.get("sink", "noop"))


@query("two_kinds")
def q_two_kinds(spark, job):
    """Two kinds of source unioned: rate-micro-batch (source 0) and the micro-batch rate source
    (source 1, its start time in sources/1/0): the order of sources is visible in the offsets."""
    first = rate_micro_batch(spark, job).select("value", "timestamp")
    second = spark.readStream.format("rate").option("rowsPerSecond", "5").option("numPartitions", "1").load()
    return _noop(first.union(second.select("value", "timestamp")))


@query("async")
def q_async(spark, job):
    return q_stateless(spark, job)


def _tws_counter(row_api: bool):
    """A transformWithState processor with one variable of each kind (ValueState ``count``,
    ListState ``seen``, MapState ``last``) keyed by ``key``; pandas (``transformWithStateInPandas``,
    4.0+) or Row-based (``transformWithState``, 4.1+). Imported here: 3.5 has no such API."""
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class Counter(StatefulProcessor):
        def init(self, handle):  # type: ignore[no-untyped-def]
            self.count = handle.getValueState("count", "n long")
            self.seen = handle.getListState("seen", "v long")
            self.last = handle.getMapState("last", "k string", "v long")

        def handleInputRows(self, key, rows, timerValues):  # type: ignore[no-untyped-def]
            n = self.count.get()[0] if self.count.exists() else 0
            values: list[int] = []
            for chunk in rows:
                if row_api:
                    values.append(int(chunk["value"]))
                else:
                    values.extend(int(v) for v in chunk["value"])
            n += len(values)
            self.count.update((n,))
            self.seen.appendList([(v,) for v in values])
            self.last.updateValue(("max",), (max(values),))
            if row_api:
                yield Row(key=int(key[0]), n=n)
            else:
                import pandas as pd

                yield pd.DataFrame({"key": [int(key[0])], "n": [n]})

        def close(self):  # type: ignore[no-untyped-def]
            pass

    return Counter()


def _tws_df(spark, job, row_api: bool):
    args = _args(job)
    df = rate_micro_batch(spark, job).select((F.col("value") % 3).alias("key"), F.col("value"))
    grouped = df.groupBy("key")
    method = grouped.transformWithState if row_api else grouped.transformWithStateInPandas
    return method(
        statefulProcessor=_tws_counter(row_api),
        outputStructType="key long, n long",
        outputMode=args.get("outputMode", "Update"),
        timeMode=args.get("timeMode", "None"),
    )


@query("tws_pandas", {"spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER})
def q_tws_pandas(spark, job):
    return _noop(_tws_df(spark, job, row_api=False), _args(job).get("outputMode", "Update").lower())


@query("tws_row", {"spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER})
def q_tws_row(spark, job):
    return _noop(_tws_df(spark, job, row_api=True), _args(job).get("outputMode", "Update").lower())


#: ``"query": "job:fixtures/jobs/changes.py:window_agg_avg"``: a job module's function (path
#: relative to the repository) that takes a SparkSession and returns its DataStreamWriter.
JOB_PREFIX = "job:"
#: ``"trigger": "job"``: a job query keeps the trigger and writer options its function set.
JOB_TRIGGER = "job"
#: The job's paths, given to a job module in the environment (fixtures/jobs/changes.py reads them).
JOB_PATH_ENV = {
    "input": "CHECKPOINT_DOCTOR_JOB_INPUT",
    "sink": "CHECKPOINT_DOCTOR_JOB_SINK",
    "kafka_bootstrap": "CHECKPOINT_DOCTOR_JOB_KAFKA",
}
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _job_paths_to_env(job: dict) -> None:
    """Give a job module the restart's paths in the environment (JOB_PATH_ENV)."""
    for key, env in JOB_PATH_ENV.items():
        if job.get(key):
            os.environ[env] = job[key]
        else:
            os.environ.pop(env, None)


def _job_function(spec: str) -> Callable[[SparkSession], DataStreamWriter]:
    import importlib.util

    path, _, function = spec.rpartition(":")
    full = os.path.join(REPO, path)
    module_spec = importlib.util.spec_from_file_location("sparklab_job_" + re.sub(r"\W", "_", path), full)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot import job file {full}")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, function)


# --------------------------------------------------------------------------------------------
# error text
# --------------------------------------------------------------------------------------------

_STACK_LINE = re.compile(r"^\s*(at [\w$.<>/]+\(.*\)|at [\w$.<>/]+|\.\.\. \d+ more|Driver stacktrace:)\s*$")


def _strip_stack(text: str) -> str:
    lines = [ln for ln in text.splitlines() if not _STACK_LINE.match(ln)]
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def _path_forms(path: str | None) -> list[str]:
    if not path:
        return []
    forms = set()
    for p in {path.rstrip("/"), os.path.realpath(path).rstrip("/")}:
        forms.update({"file://" + p, "file:" + p, p})
    return sorted(forms, key=len, reverse=True)


def _scrub(text: str, job: dict) -> str:
    pairs = []
    for key, token in (("checkpoint", "<cp>"), ("sink", "<sink>"), ("input", "<input>")):
        pairs += [(form, token) for form in _path_forms(job.get(key))]
    if job.get("kafka_bootstrap"):
        pairs.append((job["kafka_bootstrap"], "<kafka>"))
    for form, token in sorted(pairs, key=lambda p: len(p[0]), reverse=True):
        text = text.replace(form, token)
    # Spark names each query's consumer group spark-kafka-source-<random uuid>-<n> (KafkaSourceProvider).
    return re.sub(r"spark-kafka-source-[0-9a-f-]{36}-?-?\d*", "spark-kafka-source-<uuid>", text)


def _java_chain(jt: Any) -> tuple[str, str]:
    """(simple class name, message with stack frames removed and root causes appended)."""
    type_name = jt.getClass().getSimpleName()
    message = _strip_stack(jt.getMessage() or jt.toString())
    # StreamingQueryException messages end with a long "=== Streaming Query ===" section
    # (offsets + logical plan); causes go before it so that truncation drops the plan first.
    head, sep, tail = message.partition("\n=== Streaming Query ===")
    cause = jt.getCause()
    depth = 0
    while cause is not None and depth < 12:
        depth += 1
        cmsg = cause.getMessage()
        if cmsg:
            cmsg = _strip_stack(cmsg)
            first = cmsg.splitlines()[0] if cmsg.splitlines() else cmsg
            if first and first not in head:
                head += f"\nCaused by: {cause.getClass().getName()}: {cmsg}"
        nxt = cause.getCause()
        if nxt is None or nxt.equals(cause):
            break
        cause = nxt
    return type_name, head + sep + tail


def describe_error(exc: Any, phase: str, job: dict) -> dict:
    """Error dict from a Python exception (raised by start()) or a Java Throwable."""
    jt = None
    if exc is not None and hasattr(exc, "getClass"):
        jt = exc
    else:
        jt = getattr(exc, "_origin", None) or getattr(exc, "java_exception", None)
    try:
        if jt is not None:
            type_name, message = _java_chain(jt)
        else:
            type_name, message = type(exc).__name__, str(exc)
    except Exception:  # noqa: BLE001 - describing must never fail
        type_name, message = type(exc).__name__, str(exc)
    return {"phase": phase, "type": type_name, "message": _scrub(message, job)[:MESSAGE_LIMIT]}


# --------------------------------------------------------------------------------------------
# running one job
# --------------------------------------------------------------------------------------------


def _conf_get(spark: SparkSession, key: str) -> str | None:
    try:
        return spark.conf.get(key, None)
    except Exception:  # noqa: BLE001
        return None


def _progress(q) -> list[dict]:
    out = []
    try:
        for p in q._jsq.recentProgress():
            out.append(json.loads(p.json()))
    except Exception:  # noqa: BLE001 - a dead query may refuse; keep what we have
        pass
    return out


def _read_offset_line(offsets_dir: str, epoch: int) -> Any:
    try:
        with open(os.path.join(offsets_dir, str(epoch)), encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        return json.loads(lines[2]) if len(lines) > 2 and lines[2] != "-" else None
    except (OSError, ValueError):
        return None


def _epoch_summary(offsets_dir: str, epoch: int) -> dict:
    """A continuous epoch seen on disk; offsets read from offsets/<epoch-1> and offsets/<epoch>."""
    return {
        "batchId": epoch,
        "numInputRows": None,
        "from_disk": True,
        "sources": [
            {
                "description": None,
                "startOffset": _read_offset_line(offsets_dir, epoch - 1),
                "endOffset": _read_offset_line(offsets_dir, epoch),
                "numInputRows": None,
            }
        ],
    }


def _batch_summary(progress: dict) -> dict:
    return {
        "batchId": progress.get("batchId"),
        "numInputRows": progress.get("numInputRows"),
        "sources": [
            {
                "description": s.get("description"),
                "startOffset": s.get("startOffset"),
                "endOffset": s.get("endOffset"),
                "numInputRows": s.get("numInputRows"),
            }
            for s in progress.get("sources") or []
        ],
    }


def _ids_on_disk(directory: str) -> set[int]:
    try:
        names = os.listdir(directory)
    except OSError:
        return set()
    return {int(n) for n in names if n.isdigit() and os.path.isfile(os.path.join(directory, n))}


def _aligned_on_disk(checkpoint: str) -> bool:
    offsets = _ids_on_disk(os.path.join(checkpoint, "offsets"))
    commits = _ids_on_disk(os.path.join(checkpoint, "commits"))
    return bool(offsets) and bool(commits) and max(offsets) == max(commits)


def _apply_trigger(writer: DataStreamWriter, trigger: str, job: dict) -> DataStreamWriter:
    if trigger == "once":
        return writer.trigger(once=True)
    if trigger == "available-now":
        return writer.trigger(availableNow=True)
    if trigger == "processing":
        return writer.trigger(processingTime=job.get("trigger_interval") or "0 seconds")
    if trigger == "continuous":
        return writer.trigger(continuous=job.get("trigger_interval") or "1 second")
    if trigger == "real-time":
        interval = job.get("trigger_interval") or "5 seconds"
        try:
            return writer.trigger(realTime=interval)
        except TypeError:
            # PySpark 4.1 lacks the keyword, its JVM has the trigger (Trigger.RealTime, SPARK-53737).
            jvm = writer._spark._jvm  # type: ignore[attr-defined]
            writer._jwrite = writer._jwrite.trigger(
                jvm.org.apache.spark.sql.streaming.Trigger.RealTime(interval)
            )
            return writer
    raise ValueError(f"unknown trigger {trigger!r}")


DEFAULT_TRIGGER = {
    "micro-batch": "once",
    "async": "processing",
    "continuous": "continuous",
    "real-time": "real-time",
}


def _world_step(spark: SparkSession, step: dict) -> None:
    import glob
    import shutil

    if "sql" in step:
        spark.sql(step["sql"]).collect()
    elif "copy_present" in step:
        # a copy of a tree that may not exist (a scenario whose table or checkpoint was removed)
        src, dst = step["copy_present"]
        if os.path.exists(dst):
            shutil.rmtree(dst)
        if os.path.exists(src):
            shutil.copytree(src, dst)
    elif "copy" in step:
        src, dst = step["copy"]
        if os.path.exists(dst):
            shutil.rmtree(dst)
        shutil.copytree(src, dst)
    elif "remove" in step:
        for pattern in step["remove"]:
            for path in sorted(glob.glob(pattern)):
                if os.path.isdir(path):
                    shutil.rmtree(path)
                else:
                    os.remove(path)
    else:
        raise ValueError(f"unknown world step {step!r}")


def describe_table(spark: SparkSession, path: str) -> dict:
    """Latest version, rows and rows per rate batch (``value div 5``) of a Delta table at ``path``."""
    if not os.path.isdir(os.path.join(path, "_delta_log")):
        return {"exists": False}
    quoted = path.replace("`", "``")
    version = spark.sql(f"DESCRIBE HISTORY delta.`{quoted}` LIMIT 1").collect()[0]["version"]
    df = spark.read.format("delta").load(path)
    out: dict[str, Any] = {"exists": True, "version": int(version), "rows": df.count()}
    if "value" in df.columns:
        per = df.groupBy((F.col("value") / 5).cast("long").alias("b")).count().collect()
        out["rows_per_batch"] = {str(r["b"]): r["count"] for r in sorted(per, key=lambda r: r["b"])}
    return out


def run_job(spark: SparkSession, job: dict) -> dict:
    if job.get("op") == "world":
        return run_world(spark, job)
    result = _run_query_job(spark, job)
    if job.get("describe_tables"):
        result["tables"] = _describe_all(spark, job)
    if job.get("read_after"):
        result["read_after"] = read_output(spark, job)
    return result


def read_output(spark: SparkSession, job: dict) -> dict:
    """Read a file sink's output the way a consumer does after the job (``spark.read`` of the
    directory, which lists it through its ``_spark_metadata``): ``{"rows"}`` or ``{"error"}``."""
    try:
        return {"rows": spark.read.format("json").load(job["read_after"]).count()}
    except Exception as exc:  # noqa: BLE001 - a failed read is the result
        return {"error": describe_error(exc, "read", {**job, "sink": job["read_after"]})}


def _describe_all(spark: SparkSession, job: dict) -> dict:
    tables = {}
    for path in job["describe_tables"]:
        try:
            tables[_scrub(path, job)] = describe_table(spark, path)
        except Exception as exc:  # noqa: BLE001 - describing must never fail the job
            tables[_scrub(path, job)] = {"error": describe_error(exc, "describe", job)}
    return tables


def run_world(spark: SparkSession, job: dict) -> dict:
    t0 = time.monotonic()
    result: dict[str, Any] = {"id": job.get("id"), "spark_version": spark.version, "error": None}
    try:
        for step in job.get("steps") or []:
            _world_step(spark, step)
    except Exception as exc:  # noqa: BLE001 - a failed step is a result
        result["error"] = describe_error(exc, "world", job)
    if job.get("describe_tables"):
        result["tables"] = _describe_all(spark, job)
    result["started"] = False
    result["batches"] = []
    result["elapsed_s"] = round(time.monotonic() - t0, 2)
    return result


def _run_query_job(spark: SparkSession, job: dict) -> dict:
    t0 = time.monotonic()
    mode = job.get("mode") or "micro-batch"
    trigger = job.get("trigger") or DEFAULT_TRIGGER[mode]
    result: dict[str, Any] = {
        "id": job.get("id"),
        "spark_version": spark.version,
        "started": False,
        "batches": [],
        "error": None,
        "timed_out": False,
        "query_id": None,
        "elapsed_s": 0.0,
    }
    saved: dict[str, str | None] = {}
    log_offset = _log_offset()
    try:
        if job.get("before_argv"):
            # The world the query reads (a Kafka topic's records) is set up by the caller's own
            # program between jobs of this one JVM: scripts/kafka_world.py.
            subprocess.run(job["before_argv"], check=True, stdout=sys.stderr, timeout=120)
        name = job["query"]
        if name.startswith(JOB_PREFIX):
            # An operator's job module (fixtures/jobs/): it sets its own confs, so it gets its own
            # session (SparkSession.newSession: same SparkContext, its own SQLConf) and leaks none.
            # Its paths come from the environment, as an operator's job reads its configuration.
            build, spark = _job_function(name[len(JOB_PREFIX) :]), spark.newSession()
            confs = {}
            _job_paths_to_env(job)
        elif name not in QUERIES:
            raise KeyError(f"unknown query {name!r}; known: {sorted(QUERIES)}")
        else:
            build = QUERIES[name]
            confs = dict(QUERY_CONFS[name])
        confs.update({k: str(v) for k, v in (job.get("confs") or {}).items()})
        result["confs"] = confs
        for key, value in confs.items():
            saved[key] = _conf_get(spark, key)
            spark.conf.set(key, value)
        try:
            writer = build(spark) if name.startswith(JOB_PREFIX) else build(spark, job)
            writer = writer.option("checkpointLocation", job["checkpoint"])
            if trigger == JOB_TRIGGER:
                # The job's own trigger and options (a trigger change is what is being restarted).
                pass
            elif mode == "async":
                writer = writer.option("asyncProgressTrackingEnabled", "true").option(
                    "asyncProgressTrackingCheckpointIntervalMs",
                    str(job.get("async_interval_ms", 1000)),
                )
            for key, value in (job.get("options") or {}).items():
                writer = writer.option(key, str(value))
            if trigger != JOB_TRIGGER:
                writer = _apply_trigger(writer, trigger, job)
            q = writer.start()
        except Exception as exc:  # noqa: BLE001 - start failures are results
            result["error"] = describe_error(exc, "start", job)
            return result
        continuous = trigger == "continuous" or (trigger == JOB_TRIGGER and mode == "continuous")
        _watch(q, job, result, continuous=continuous, trigger=trigger)
    except Exception as exc:  # noqa: BLE001 - harness-level failure of this job only
        result["error"] = {
            "phase": "start",
            "type": type(exc).__name__,
            "message": _scrub("".join(traceback.format_exception_only(type(exc), exc)), job)[:MESSAGE_LIMIT],
        }
    finally:
        for key, old in saved.items():
            try:
                if old is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, old)
            except Exception:  # noqa: BLE001
                pass
        result["log"] = _log_since(log_offset, job)
        result["elapsed_s"] = round(time.monotonic() - t0, 2)
    return result


class _Batches:
    """The batches a query has executed so far (progress events, or epochs on disk)."""

    def __init__(self, q, job: dict, continuous: bool) -> None:
        self.q = q
        self.continuous = continuous
        self.executed: dict[int, dict] = {}
        self.commits_dir = os.path.join(job["checkpoint"], "commits")
        self.offsets_dir = os.path.join(job["checkpoint"], "offsets")
        self.before = max(_ids_on_disk(self.commits_dir), default=-1)

    def collect(self) -> None:
        if self.continuous:
            # Continuous queries report no progress events (observed on 3.5.9 and 4.3.0), so
            # completed epochs are read from disk: every new commits/<epoch> file.
            for epoch in _ids_on_disk(self.commits_dir):
                if epoch > self.before and epoch not in self.executed:
                    self.executed[epoch] = _epoch_summary(self.offsets_dir, epoch)
            return
        for p in _progress(self.q):
            if "addBatch" in (p.get("durationMs") or {}) and p.get("batchId") is not None:
                self.executed.setdefault(int(p["batchId"]), _batch_summary(p))


def _done_running(job: dict, batches: _Batches, self_stopping: bool) -> bool:
    """A ``run`` job with a trigger that does not stop by itself has run enough batches."""
    return (
        job.get("op", "run") == "run"
        and not self_stopping
        and len(batches.executed) >= int(job.get("batches", 1))
        and (not job.get("stop_when_aligned") or _aligned_on_disk(job["checkpoint"]))
    )


def _wait(q, job: dict, result: dict, batches: _Batches, self_stopping: bool) -> None:
    deadline = time.monotonic() + float(job.get("timeout_s", 60))
    while True:
        batches.collect()
        if not q.isActive:
            return
        if job.get("op", "run") == "restart" and batches.executed:
            return
        if _done_running(job, batches, self_stopping):
            return
        if time.monotonic() > deadline:
            result["timed_out"] = True
            return
        time.sleep(POLL_S)


def _watch(q, job: dict, result: dict, *, continuous: bool, trigger: str) -> None:
    try:
        result["query_id"] = str(q.id)
    except Exception:  # noqa: BLE001
        result["query_id"] = None
    batches = _Batches(q, job, continuous)
    _wait(q, job, result, batches, self_stopping=trigger in ("once", "available-now"))
    stop_error = None
    if q.isActive:
        try:
            q.stop()
        except Exception as exc:  # noqa: BLE001
            stop_error = exc
    batches.collect()
    jexc = q._jsq.exception()
    if jexc.isDefined():
        result["error"] = describe_error(jexc.get(), "run", job)
    elif stop_error is not None:
        result["error"] = describe_error(stop_error, "run", job)
    ids = sorted(batches.executed)
    if job.get("op", "run") == "restart":
        ids = ids[:1]
    result["batches"] = [batches.executed[i] for i in ids]
    result["started"] = result["error"] is None or bool(result["batches"])


# Streaming WARN/ERROR log records go to a side file (one record per line) so that each job
# can report the log lines written while it ran; the console stays at ERROR.
LOG4J2_TEMPLATE = """\
status = error
rootLogger.level = error
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
appender.lab.type = File
appender.lab.name = lab
appender.lab.fileName = @FILE@
appender.lab.append = false
appender.lab.layout.type = PatternLayout
appender.lab.layout.alwaysWriteExceptions = false
appender.lab.layout.pattern = %p %c{1}: %enc{%m}{CRLF}%notEmpty{ <%enc{%ex{short.message}}{CRLF}>}%n
logger.ss.name = org.apache.spark.sql.execution.streaming
logger.ss.level = warn
logger.ss.additivity = false
logger.ss.appenderRef.lab.ref = lab
logger.sq.name = org.apache.spark.sql.streaming
logger.sq.level = warn
logger.sq.additivity = false
logger.sq.appenderRef.lab.ref = lab
"""
LOG_LINES_LIMIT = 60
LOG_LINE_CHARS = 600
# Warnings every job prints; they say nothing about the checkpoint.
LOG_NOISE = (
    "spark.sql.adaptive.enabled is not supported in streaming",
    "is ignored when Trigger.Once is used",
    "Disabling AQE since AQE is not supported in stateful workloads",
)
_JVM_LOG: str | None = None


def _log_offset() -> int:
    try:
        return os.path.getsize(_JVM_LOG) if _JVM_LOG else 0
    except OSError:
        return 0


def _log_since(offset: int, job: dict) -> list[str]:
    """Streaming WARN/ERROR records logged since ``offset`` (scrubbed, deduplicated, capped)."""
    if not _JVM_LOG:
        return []
    try:
        with open(_JVM_LOG, "rb") as fh:
            fh.seek(offset)
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return []
    out: list[str] = []
    for line in text.splitlines():
        if any(noise in line for noise in LOG_NOISE):
            continue
        line = _scrub(line, job)[:LOG_LINE_CHARS]
        if line and line not in out:
            out.append(line)
    return out[:LOG_LINES_LIMIT]


def build_session(log_path: str | None = None) -> SparkSession:
    global _JVM_LOG
    builder = SparkSession.builder
    for key, value in SESSION_CONFS.items():
        builder = builder.config(key, value)
    if os.environ.get(SPARK_JARS_ENV):
        # Connector jars resolved by scripts/jars.py (never Spark's own --packages resolver).
        builder = builder.config("spark.jars", os.environ[SPARK_JARS_ENV])
    for key, value in json.loads(os.environ.get(SESSION_CONFS_ENV) or "{}").items():
        builder = builder.config(key, str(value))
    if log_path:
        _JVM_LOG = os.path.abspath(log_path)
        config = _JVM_LOG + ".log4j2.properties"
        with open(config, "w", encoding="utf-8") as fh:
            fh.write(LOG4J2_TEMPLATE.replace("@FILE@", _JVM_LOG))
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{config}")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    jobs_path, results_path = argv
    with open(jobs_path, encoding="utf-8") as fh:
        jobs = json.load(fh)
    if isinstance(jobs, dict):
        jobs = jobs["jobs"]
    spark = build_session(results_path + ".jvm.log")
    results: list[dict] = []
    try:
        for job in jobs:
            print(f"[sparklab {spark.version}] {job.get('id')} ...", file=sys.stderr, flush=True)
            res = run_job(spark, job)
            results.append(res)
            err = res["error"]
            print(
                f"[sparklab {spark.version}] {job.get('id')}: started={res['started']} "
                f"batches={[b['batchId'] for b in res['batches']]} "
                f"error={(err['message'].splitlines() or [''])[0][:160] if err else None}",
                file=sys.stderr,
                flush=True,
            )
            tmp = results_path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(results, fh, indent=1)
            os.replace(tmp, results_path)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
