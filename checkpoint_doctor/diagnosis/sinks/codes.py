"""The codes of a query's sink (CD4xx): a file sink's log and a Delta sink's txn, beside their
checks (:mod:`checkpoint_doctor.diagnosis.sinks`)."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.code_info import ERROR, INFO, WARNING, Code, CodeInfo
from checkpoint_doctor.diagnosis.code_info import entry as _c

CODES: tuple[CodeInfo, ...] = (
    _c(
        Code.SINK_HOLDS_UNCOMMITTED_BATCH,
        "sink-holds-uncommitted-batch",
        INFO,
        "The file sink already holds the batch that will be re-run",
        "FileStreamSink skips a batch whose id is at or below the latest id in _spark_metadata "
        "('Skipping already committed batch'), so the re-run writes nothing twice.",
        "The query stopped between the sink's commit and the commit log: normal.",
        "Nothing.",
        "Skipping already committed batch",
    ),
    _c(
        Code.SINK_AHEAD_OF_OFFSETS,
        "sink-ahead-of-offsets",
        ERROR,
        "The file sink log holds batch ids that the query has not planned",
        "The sink will silently skip every future batch whose id it already holds: that data is lost.",
        "The checkpoint was rolled back, replaced or copied without the sink output.",
        "Roll the sink log back with the checkpoint, or use a new output path with a new checkpoint.",
        "Skipping already committed batch",
    ),
    _c(
        Code.SINK_BEHIND_COMMITS,
        "sink-behind-commits",
        WARNING,
        "Committed batches are missing from the file sink log",
        "Readers of the output list files through _spark_metadata; batches missing there are invisible.",
        "The sink log was truncated, deleted or belongs to another checkpoint.",
        "Check that --sink-path is the output of this query.",
    ),
    _c(
        Code.SINK_LOG_FILE_MISSING,
        "sink-log-file-missing",
        ERROR,
        "Files of the file sink log that readers need are missing",
        "Reading the output fails: '<path> doesn't exist (latestId: <id>, compactInterval: <n>)'.",
        "Compact or batch files deleted by hand or by a lifecycle rule.",
        "Restore them; without them readers of the output fail.",
        "doesn't exist (latestId",
    ),
    _c(
        Code.SINK_LOG_FILE_UNREADABLE,
        "sink-log-file-unreadable",
        ERROR,
        "A file of the file sink log is damaged",
        "The sink and readers of the output fail to parse it.",
        "A partial write or a hand edit.",
        "Restore it from a backup.",
        "Incomplete log file",
    ),
    _c(
        Code.SINK_LOG_MISSING,
        "sink-log-missing",
        WARNING,
        "The given sink path has no _spark_metadata log",
        "Without the log readers list the directory directly and see uncommitted files, and the sink "
        "cannot skip re-run batches.",
        "Wrong --sink-path, or the log was deleted.",
        "Check the path.",
    ),
    _c(
        Code.DELTA_SINK_SKIPS_BATCHES,
        "delta-sink-skips-batches",
        WARNING,
        "The restart runs batch ids the Delta sink table already holds: they are skipped silently",
        "DeltaSink commits every batch with a txn action (appId = query id, version = batch id) and skips "
        "a batch whose id is at or below the table's txn version for the query, logging only 'Skipping "
        "already complete epoch'. A checkpoint rolled back below that version re-plans batches whose rows "
        "are never written, whatever the source reads for them now. A foreachBatch writing the table with "
        "the options txnAppId and txnVersion (the batch id) is skipped alike by Delta's idempotent writes "
        "(WriteIntoDelta: 'Already completed batch N in application A. This will be skipped.'), and its appId "
        "is the job's own name: a new checkpoint's batch ids from 0 are skipped too. Trigger.Once plans one "
        "batch a run: each restart skips the next id until the one above the txn version.",
        "The checkpoint was rolled back, restored from an older copy, or its newest batches were removed; "
        "for a foreachBatch's txnAppId, also a checkpoint deleted and started anew.",
        "Roll back no further than the table's txn version, or accept that the re-planned batches are not "
        "written (the finding names them), or plan with --accept-data-loss (the table paired beside the "
        "checkpoint, or named with --delta-table): delta-sink-txn records the batch ids the table holds as done, so "
        "none is skipped (their rows are written again).",
        "Skipping already complete epoch",
        "This will be skipped",
    ),
    _c(
        Code.DELTA_SINK_WRITES_AGAIN,
        "delta-sink-writes-again",
        WARNING,
        "A Delta table was written by another query id: this query writes every batch to it again",
        "DeltaSink deduplicates by the txn appId, which is the query id: a new checkpoint (new id) on a "
        "table an old one wrote has no txn there, so batch 0 onwards are appended again: named for a table "
        "named with --delta-table, and for this query's sink table when another query id's txn there is at "
        "or above the batch the restart runs.",
        "The checkpoint was lost or replaced (or deleted and started anew) while the sink table kept its rows.",
        "Start the new query from where the old one stopped (startingVersion / startingOffsets), or remove "
        "the rows the old query wrote.",
    ),
)
