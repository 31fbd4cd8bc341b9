"""The codes of a Spark Declarative Pipeline (CD8xx): what ``spark-pipelines run`` does next with
each flow's live checkpoint (:mod:`checkpoint_doctor.pipelines`)."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.code_info import ERROR, INFO, WARNING, Code, CodeInfo
from checkpoint_doctor.diagnosis.code_info import entry as _c

CODES: tuple[CodeInfo, ...] = (
    _c(
        Code.PIPELINE_FLOW_FAILS,
        "pipeline-flow-fails",
        ERROR,
        "A flow of the pipeline fails on the next spark-pipelines run",
        "The flow's live checkpoint version is an ordinary Structured Streaming checkpoint: the flow's "
        "query fails with the error shown; the pipeline tries the flow 3 times ('FAILED more than 2 "
        "times and will not be restarted', PipelineExecution / TriggeredGraphExecution) and the run fails.",
        "The live version (the largest numeric directory, SystemMetadata.getLatestCheckpointDir) is damaged.",
        "Repair the live version (checkpoint-doctor plan on its live version directory); a full refresh of the "
        "table also clears it, but truncates the table and re-reads every upstream from the start.",
        "FAILED more than 2 times and will not be restarted",
        "has FAILED",
    ),
    _c(
        Code.PIPELINE_FLOW_SKIPPED,
        "pipeline-flow-skipped",
        WARNING,
        "A flow downstream of a failing flow never runs",
        "A flow whose input is a table written by a failing flow never starts: once the upstream flow "
        "gave up, TriggeredGraphExecution logs 'Flow ... SKIPPED due to upstream failure(s)'.",
        "An upstream flow's live checkpoint fails.",
        "Repair the upstream flow; this flow needs nothing.",
        "SKIPPED due to upstream failure(s)",
    ),
    _c(
        Code.PIPELINE_OLD_VERSIONS,
        "pipeline-old-versions",
        INFO,
        "Older checkpoint versions of a flow lie beside its live one",
        "Spark reads only the largest numeric version directory (SystemMetadata.getLatestCheckpointDir); "
        "a full refresh (State.reset) makes version n+1 and never deletes the older ones.",
        "A full refresh of the flow's table (or of every table).",
        "Nothing: they are history. Deleting them changes nothing Spark does.",
    ),
    _c(
        Code.PIPELINE_EMPTY_LIVE_VERSION,
        "pipeline-empty-live-version",
        WARNING,
        "The flow's live checkpoint version is empty: it starts again from batch 0 and the table skips it",
        "An empty newer version directory is the live one (the largest number): the flow starts a new "
        "query at batch 0 and reads its input from the start, while the table's file sink log already "
        "holds those batch ids, so FileStreamSink skips them ('Skipping already committed batch'): "
        "the rows they carry are lost without an error, and the loss carries downstream.",
        "A version directory made by hand or by a copy, or a full refresh interrupted before its "
        "first batch.",
        "Remove the empty directory before the next run (the older version is live again); a new "
        "version is safe only with a table whose sink log is empty (a full refresh of the table).",
        "Skipping already committed batch",
    ),
    _c(
        Code.PIPELINE_SHARED_SINK_LOG,
        "pipeline-shared-sink-log",
        WARNING,
        "Two append flows write one file-sink table: they share one _spark_metadata log",
        "Each flow is its own query with its own batch ids, but both commit into the table's one file "
        "sink log (FileStreamSinkLog): a flow's batch whose id the other flow already committed is "
        "skipped or fails once with 'another writer already committed this batch' and is then skipped "
        "on the retry; its rows are not in the table.",
        "Several @dp.append_flow (or INSERT INTO ... flows) target one table stored as files.",
        "Union the sources into one flow, or store the table in a format with a transaction per "
        "writer (Delta); a lost batch needs the flow's checkpoint rolled back once the target is fixed.",
        "another writer already committed this batch",
        "Skipping already committed batch",
    ),
    _c(
        Code.PIPELINE_CODE_STATEFUL_NO_STATE,
        "pipeline-code-stateful-no-state",
        WARNING,
        "The pipeline's code makes a flow stateful, but its live checkpoint ran batches without state",
        "The flow's definition joins, groups or deduplicates streams (the pipeline's code, or the one "
        "--job names), while its live checkpoint version committed batches and holds no state: the "
        "code gained a stateful operator the query never ran, or the flow's state/ was deleted. A "
        "stateful query that restarts on committed batches loads its state, so the flow fails (the "
        "error is the line's: STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY on 4.2+).",
        "A join, aggregation or dropDuplicates added to a flow's code; state/ deleted.",
        "Revert the code change, or reset the flow into a new version whose state starts empty "
        "(checkpoint-doctor plan <flow dir> --reset-flow --accept-data-loss); a full refresh of the "
        "table also works, but truncates it.",
        "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY",
    ),
    _c(
        Code.PIPELINE_FLOW_UNORDERED,
        "pipeline-flow-unordered",
        WARNING,
        "On Spark 4.1 and 4.2 a Python flow that deduplicates starts before the flows it reads",
        "Spark Connect analyses a Deduplicate's input on its own (SparkConnectPlanner."
        "transformDeduplicate), outside the pipeline's flow analysis, so the tables the flow reads are "
        "not its inputs: DataflowGraph.upstreamFlows gives it none, and TriggeredGraphExecution starts "
        "it at once, beside the flows writing those tables. Its Trigger.AvailableNow query reads only "
        "what they held before the run: no new data, no batch, COMPLETED; a stateful failure waits "
        "for a run that finds data. 4.3 starts it after its upstream flows (recorded).",
        "A @dp.table or @dp.append_flow whose DataFrame calls dropDuplicates on a pipeline table.",
        "Expect each run to read what the previous run wrote; run once more (or run on 4.3) for the "
        "rows of this run, and check the flow's state before a run that finds data.",
        "is STARTING",
    ),
)
