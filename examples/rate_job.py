"""A small streaming job in the shape ``checkpoint-doctor catch-up`` expects.

``build(spark)`` returns the job's ``DataStreamWriter`` as production would configure it (source,
transformations, sink, output mode), NOT started and without ``checkpointLocation``: the runner adds
the checkpoint, the async progress tracking options and the trigger, then starts it::

    checkpoint-doctor catch-up /data/checkpoints/rate --job examples.rate_job:build --batches 2

The query is the ``async`` query of ``scripts/sparklab.py`` (same source options, projection and sink),
so a checkpoint written by either restarts with the other:

* source ``rate-micro-batch`` (5 rows per batch, batch ``b`` reads values ``[5b, 5b+5)``): it has new
  data for every batch, which catch-up needs;
* sink ``noop``: on the allow-list of ``AsyncProgressTrackingMicroBatchExecution`` in Spark 3.5 and 4.x
  (file sinks and ``foreachBatch`` are not).
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter


def build(spark: SparkSession) -> DataStreamWriter:
    """Return the job's writer, not started: rate-micro-batch -> (value, value % 3) -> noop."""
    df = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", "5")
        .option("numPartitions", "1")
        .option("startTimestamp", "0")
        .option("advanceMillisPerBatch", "1000")
        .load()
    )
    return (
        df.select(F.col("value"), (F.col("value") % 3).alias("key"))
        .writeStream.format("noop")
        .outputMode("append")
    )
