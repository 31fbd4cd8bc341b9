"""The codes of a changed query (``--job``): its sources, sink, output mode and trigger, beside
their checks (:mod:`checkpoint_doctor.diagnosis.changes.compare`)."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.code_info import ERROR, INFO, WARNING, Code, CodeInfo
from checkpoint_doctor.diagnosis.code_info import entry as _c

CODES: tuple[CodeInfo, ...] = (
    # ---------------------------------------- the changed query (--job): sources, sink, trigger
    _c(
        Code.SOURCE_KIND_CHANGED,
        "source-kind-changed",
        ERROR,
        "The job's source at a place in the plan is another kind than the one whose offsets the checkpoint holds",
        "Spark numbers sources by their place in the plan and hands each the offsets line of its place; the "
        "new source's reader parses the old source's offset when the first batch (or epoch) is planned and "
        'fails in its own words: the rate source \'For input string: "{"offset":20,...}"\' '
        "(LongOffset of a rate-micro-batch offset), the continuous rate source 'Expected object but got "
        "JInt(2)', Kafka 'Expected e.g. {\"topicA\":...}, got ...'.",
        "The query reads another kind of source (Spark's guide: changes in the type of input sources are "
        "not allowed), or its sources were reordered in the plan.",
        "Keep the source the checkpoint was written with at each place, or start the changed query on a new "
        "checkpoint (with the new source's starting position set).",
        "For input string:",
        "Expected object but got",
        "Expected e.g.",
    ),
    _c(
        Code.FILE_SOURCE_MOVED,
        "file-source-moved",
        ERROR,
        "The job's file source reads another path than the files its log lists",
        "On restart the file source reads the newest batch's files again from its log (FileStreamSource."
        "getBatch) with basePath set to its path (unless the path is a glob), and PartitioningAwareFileIndex "
        "requires every logged file to start with it: 'Wrong basePath <new path> for the root path: <old "
        "file>'. With a glob path there is no basePath: every matched file the log does not list is new, so "
        "a copy of files already read is read again.",
        "The input moved (another bucket, directory or mount) and the job's path was changed with it.",
        "Keep the path the log lists (or a prefix of it), or start the changed query on a new checkpoint; a "
        "glob path avoids the failure but reads copied files again.",
        "Wrong basePath",
    ),
    _c(
        Code.RATE_PARTITIONS_CHANGED,
        "rate-partitions-changed",
        ERROR,
        "The continuous rate source's numPartitions is not the checkpoint's",
        "The continuous rate source keeps one offset per partition and refuses another number when it plans "
        "the first epoch (RateStreamContinuousStream): 'The previous run contained 1 partitions, but 2 "
        "partitions are currently configured. The numPartitions option cannot be changed.' Its rate "
        "(rowsPerSecond) may change.",
        "The job's numPartitions option changed, or it is not set and the cluster's default parallelism "
        "(its default) changed.",
        "Set numPartitions to the number of partitions the checkpoint's offsets hold.",
        "The numPartitions option cannot be changed.",
    ),
    _c(
        Code.KAFKA_TOPICS_CHANGED,
        "kafka-topics-changed",
        ERROR,
        "The job's Kafka subscription leaves out partitions the checkpoint's offsets hold",
        "The next batch's range runs from the checkpoint's offsets to the latest offsets of what the job "
        "subscribes to now (KafkaOffsetReaderAdmin.getOffsetRangesFromResolvedOffsets): a partition of the "
        "old offsets the subscription leaves out is 'gone'. With failOnDataLoss true (the default) the "
        "batch is refused: 'Set(events-0, ...) are gone. Some data may have been missed.' on 3.5, "
        "'Reason: Partitions Set(events-0, ...) have been deleted.' on 4.x; with false Spark warns, never "
        "reads the old topic's unread records and reads the new topic from its earliest offsets. A topic "
        "added to the subscription is read from its earliest offsets.",
        "The job subscribes to another topic, pattern or partition assignment (Spark's guide: changes to "
        "subscribed topics are generally not allowed).",
        "Keep the old topics in the subscription until their records are read, or start the changed query on "
        "a new checkpoint (startingOffsets for the new topic); failOnDataLoss=false restarts and drops the "
        "old topic's unread records.",
        "are gone. Some data may have been missed.",
        "have been deleted.",
    ),
    _c(
        Code.FILE_SINK_MOVED,
        "file-sink-moved",
        WARNING,
        "The job's file sink writes to another path than the sink the checkpoint wrote with",
        "The file sink keeps its own log in <path>/_spark_metadata and the checkpoint does not name the "
        "path: the restart writes the next batch to a new log at the new path without an error. The old path "
        "keeps the batches written so far; the new log lacks the compaction file before its first batch, "
        "so reading the new path fails ('<n>.compact doesn't exist (latestId: ...)') and so does the sink at "
        "its next compaction batch ('... doesn't exist when compacting batch ...').",
        "The job's output path was changed (Spark's guide: a file sink to another directory is allowed only "
        "as a new query).",
        "Keep the path, or start the changed query on a new checkpoint (its sink log then starts at batch 0).",
        "doesn't exist when compacting batch",
    ),
    _c(
        Code.OUTPUT_MODE_UNSUPPORTED,
        "output-mode-unsupported",
        ERROR,
        "Spark refuses the job's query in its output mode",
        "start() checks the plan against the output mode (UnsupportedOperationChecker) before the checkpoint "
        "is read: 'Complete output mode not supported when there are no streaming aggregations ...', "
        "'Append output mode not supported when there are streaming aggregations ... without watermark'. "
        "The job probe runs the same check on the job's Spark line.",
        "The output mode was changed, or an aggregation was removed or added without a watermark.",
        "Choose an output mode the query supports; an aggregation restarts in append, update or complete "
        "(its state schema is the same).",
        "output mode not supported",
    ),
    _c(
        Code.JOB_MODE_CHANGED,
        "job-mode-changed",
        INFO,
        "The job's trigger runs another mode than the checkpoint's logs show",
        "The trigger and the async progress tracking option decide how Spark restarts: micro-batch "
        "(MicroBatchExecution), async (AsyncProgressTrackingMicroBatchExecution), continuous "
        "(ContinuousExecution). Each mode reads the logs its own way: a micro-batch restart of an async "
        "checkpoint's sparse tail needs offsets/L-1 ('batch N doesn't exist'), async tracking refuses a "
        "stateful query, a micro-batch restart of a continuous checkpoint fails on its blank metadata lines.",
        "The job's trigger or its asyncProgressTrackingEnabled option changed.",
        "See the restart prediction for the job's mode; keep the checkpoint's mode where it fails.",
    ),
)
