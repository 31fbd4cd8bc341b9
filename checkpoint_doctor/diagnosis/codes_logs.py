"""The codes of the checkpoint's own files and logs: ``metadata`` and the log files (CD0xx), offsets
against commits (CD1xx, :mod:`checkpoint_doctor.diagnosis.checks_logs`), and a continuous query's
epochs (CD7xx). What Spark does, why it breaks, what to do, what to search for in a driver log."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.code_info import ERROR, INFO, WARNING, Code, CodeInfo
from checkpoint_doctor.diagnosis.code_info import entry as _c

LOG_CODES: tuple[CodeInfo, ...] = (
    _c(
        Code.METADATA_MISSING,
        "metadata-missing",
        ERROR,
        "The metadata file (query id) is missing while the logs hold batches",
        "Spark 3.5 to 4.1 silently write a new metadata file with a new random query id and resume from "
        "the logs. Spark 4.2 and newer refuse to start (StreamingQueryCheckpointMetadata).",
        "Sinks, listeners and monitoring keyed on the query id see a different query; exactly-once "
        "sinks that deduplicate by query id may write duplicates.",
        "Restore the original metadata file (the id is in driver logs and StreamingQueryListener "
        "events), or let 'checkpoint-doctor plan' recreate it with --query-id.",
        "STREAMING_CHECKPOINT_MISSING_METADATA_FILE",
        "the metadata file is missing",
    ),
    _c(
        Code.METADATA_UNREADABLE,
        "metadata-unreadable",
        ERROR,
        "The metadata file cannot be read",
        "DataStreamWriter.start() fails while reading it (StreamMetadata.read); the driver log says "
        "'Error reading stream metadata from <path>' followed by the JSON parser error.",
        "The query id cannot be recovered from the file.",
        "Restore the file from a backup or recreate it with the old query id ('plan --strategy "
        "recreate-metadata --query-id ...').",
        "Error reading stream metadata",
        "Unexpected end-of-input",
    ),
    _c(
        Code.OFFSETS_FILE_UNREADABLE,
        "offsets-file-unreadable",
        ERROR,
        "An offsets file the restart reads is empty, truncated or not valid",
        "Spark reads offsets/L (and offsets/L-1) on restart (OffsetSeqLog.deserialize); an empty file "
        "fails with 'Incomplete log file', a file with only its version line with 'next on empty "
        "iterator', cut JSON with a Jackson parser error.",
        "A crash during a non-atomic write (object stores, FileSystem rename fallback) or a hand edit "
        "left a partial file.",
        "If the batch has no commit, quarantine the file so Spark re-plans the batch ('plan' does "
        "this); if it was committed, its end offsets are lost and only a source-specific rebuild helps.",
        "Incomplete log file",
        "next on empty iterator",
        "Unexpected end-of-input",
        "Failed to read log file",
    ),
    _c(
        Code.COMMIT_FILE_UNREADABLE,
        "commit-file-unreadable",
        ERROR,
        "The newest commit file is empty or not valid",
        "Spark reads commits/K on restart (CommitLog.deserialize); an empty file fails with 'Incomplete "
        "log file in the offset commit log'. A file holding only its version line is valid.",
        "A crash while writing the commit left a partial file.",
        "Quarantine the broken commit file: Spark then re-runs that batch (an idempotent sink skips "
        "it; an at-least-once sink writes it again).",
        "Incomplete log file in the offset commit log",
        "Failed to read log file",
    ),
    _c(
        Code.LOG_VERSION_TOO_NEW,
        "log-version-too-new",
        ERROR,
        "A log file the restart reads has a format version the target Spark cannot read",
        "MetadataVersionUtil.validateVersion rejects versions above the reader's maximum: offsets v2 "
        "need Spark 4.2+, commits v2/v3 need 4.2+ (or 4.0/4.1 with a matching "
        "checkpointFormatVersion).",
        "The checkpoint was written by a newer Spark (or with state store checkpoint format 2, source "
        "or sink evolution) and is being restarted on an older one.",
        "Restart on the Spark version that wrote it. There is no general safe downgrade: v2 commits "
        "carry RocksDB file ids and v2 offsets are keyed by source name.",
        "UnsupportedLogVersion",
        "INVALID_LOG_VERSION.MAX_SUPPORTED_VERSION",
    ),
    _c(
        Code.COMMIT_VERSION_MISMATCH,
        "commit-version-mismatch",
        ERROR,
        "Spark 4.0/4.1 require the commit log version to equal checkpointFormatVersion exactly",
        "In 4.0.x and 4.1.x CommitLog validates the header against the session's "
        "spark.sql.streaming.stateStore.checkpointFormatVersion with an exact match.",
        "The query is restarted with a different spark.sql.streaming.stateStore.checkpointFormatVersion "
        "than the one that wrote the commit log.",
        "Set spark.sql.streaming.stateStore.checkpointFormatVersion to the version in the commit "
        "header, or restart on Spark 4.2+, which reads both.",
        "INVALID_LOG_VERSION.EXACT_MATCH_VERSION",
        "The only supported log version is",
    ),
    _c(
        Code.OFFSETS_JAVA_SERIALIZED,
        "offsets-java-serialized",
        ERROR,
        "An offsets file is in the Java-serialized format of Spark 2.0",
        "Spark 2.1 and newer read offsets as text with a v<N> header; bytes starting AC ED are rejected.",
        "The checkpoint (or a file copied into it) comes from Spark 2.0.",
        "Start a new checkpoint; a Spark 2.0 checkpoint cannot be resumed by a supported release.",
        "Log file was malformed",
    ),
    _c(
        Code.OFFSETS_METADATA_LINE_EMPTY,
        "offsets-metadata-line-empty",
        ERROR,
        "A micro-batch offsets file the restart reads has an empty metadata line",
        "An empty line 2 means no batch watermark, timestamp or pinned confs. Only continuous "
        "processing writes offsets like this. A micro-batch restart then leaves "
        "MicroBatchExecution.watermarkTracker unset and fails with a NullPointerException (Spark 3.5.9 "
        "and 4.3.0, stateless queries too); 4.3 with an uncommitted newest batch fails earlier with "
        "'requirement failed: Batch L metadata not found'. Offsets v2 require the line.",
        "A hand edit, a broken writer, or a continuous-mode log restarted in micro-batch mode.",
        "Quarantine the file if its batch has no commit, so Spark re-plans the batch; restart a "
        "continuous-mode log in continuous mode.",
        "WatermarkTracker.currentWatermark()",
        "metadata not found",
        "VERSION_2 offset log requires metadata",
    ),
    _c(
        Code.LOG_FILE_UNREADABLE_HISTORY,
        "log-file-unreadable-history",
        WARNING,
        "An older offsets or commit file is damaged (not read by a restart)",
        "A restart reads only the newest offsets files and the newest commit; older files are read "
        "by sources that replay ranges (file source) and by state data source readers.",
        "The file is damaged; it does not block a restart but a rollback to it would fail.",
        "Keep it in mind before rolling back; restore it from a backup if one exists.",
    ),
    _c(
        Code.OFFSETS_WITHOUT_CONF,
        "offsets-without-conf",
        INFO,
        "The newest offsets file has no pinned confs (Spark 2.1 style)",
        "Spark fills every missing conf with its legacy default and logs 'Conf ... was not found in "
        "the offset log, using default value'.",
        "Nothing breaks, but the query runs with legacy state formats.",
        "Nothing to do; confs are pinned again from the next batch on.",
        "was not found in the offset log",
    ),
    _c(
        Code.OFFSETS_WITHOUT_CONF_FATAL,
        "offsets-without-conf-fatal",
        ERROR,
        "The newest offsets file pins no SQL confs and this restart cannot do without them",
        "Spark fills every missing conf with its legacy default, so state written with newer formats is "
        "read with the legacy ones (spark.sql.streaming.aggregation.stateFormatVersion=1): 3.5 fails in "
        "the tasks (InvalidUnsafeRowException or a schema mismatch), 4.x with "
        "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE. Spark 4.3 with an uncommitted newest batch fails "
        "earlier, reading spark.sql.shuffle.partitions from it ('None.get').",
        "The conf map of the metadata line was removed by a hand edit or an old tool.",
        "If the batch has no commit, quarantine the file so Spark re-plans it with pinned confs; "
        "otherwise restore the file.",
        "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
        "state format invalidation",
        "None.get",
    ),
    _c(
        Code.UNFINISHED_REPARTITION,
        "unfinished-repartition",
        ERROR,
        "The uncommitted newest batch pins other shuffle partitions than the batch before it",
        "Spark 4.3 treats such a batch as an unfinished offline state repartition "
        "(checkUnfinishedRepartitionOnRestart) and refuses to start.",
        "spark.sql.shuffle.partitions was edited in offsets/L, or an offline repartition did not finish.",
        "Finish the repartition, or quarantine offsets/L so Spark re-plans the batch.",
        "STREAMING_UNFINISHED_REPARTITION_DETECTED",
    ),
    _c(
        Code.PINNED_CONF_INVALID,
        "pinned-conf-invalid",
        ERROR,
        "The newest offsets file pins a spark.sql.shuffle.partitions that is not an int",
        "On restart Spark sets the confs pinned in the newest offsets file on the session "
        "(OffsetSeqMetadata.setSessionConf) and its int conf refuses the value before any batch runs: "
        "3.5 and 4.0 say 'spark.sql.shuffle.partitions should be int', 4.1 and newer "
        "INVALID_CONF_VALUE.TYPE_MISMATCH for spark.sql.streaming.internal.stateStore.partitions.",
        "The metadata line was edited by hand or by a tool, or the file is damaged.",
        "Restore the file, or rebuild its metadata line from the offsets file below it.",
        "should be int, but was",
        "INVALID_CONF_VALUE.TYPE_MISMATCH",
    ),
    _c(
        Code.PINNED_CONF_OVERRIDDEN,
        "pinned-conf-overridden",
        INFO,
        "The job sets a conf the checkpoint pins: Spark uses the checkpoint's value",
        "On restart Spark restores the confs the newest offsets file pins (spark.sql.shuffle.partitions, "
        "the state store provider, the state format versions: OffsetSeqMetadata.relevantSQLConfs) over "
        "the session's and logs 'Updating the value of conf ... in current session from ... to ...'. The "
        "query starts; the job's setting has no effect on this checkpoint.",
        "The job was changed to set another value (more shuffle partitions, RocksDB instead of HDFS "
        "state) for a query that keeps its checkpoint.",
        "Keep the pinned value, or start the changed query on a new checkpoint (for the shuffle "
        "partitions of a stateful query: Spark 4.3's offline state repartitioning).",
        "Updating the value of conf",
    ),
    _c(
        Code.METADATA_ID_INVALID,
        "metadata-id-invalid",
        ERROR,
        "The query id in the metadata file is not a UUID Spark can parse",
        "DataStreamWriter.start() fails before any batch: StreamExecution takes its id as "
        "java.util.UUID.fromString(metadata id), which throws IllegalArgumentException ('Invalid UUID "
        "string: ...', 'UUID string too large') or NumberFormatException ('Error at index N in: ...').",
        "The file was written by hand or by a tool that did not check the id (UUID.fromString accepts "
        "five dash-separated hexadecimal groups of at most 36 characters in all, so '1-2-3-4-5' works).",
        "Write the query's real id back (driver logs and StreamingQueryListener events name it: "
        "'plan --query-id <uuid>'); without it 'plan' writes a new id, and sinks and listeners keyed on "
        "the id see a new query. Nothing in the checkpoint records the id elsewhere.",
        "Invalid UUID string",
        "UUID string too large",
        "Error at index",
    ),
    _c(
        Code.ASYNC_TAIL_SYNC_RESTART,
        "async-tail-sync-restart",
        ERROR,
        "The logs were written by asynchronous progress tracking and the restart is synchronous",
        "With asyncProgressTrackingEnabled Spark persists offsets and commits only every "
        "asyncProgressTrackingCheckpointIntervalMs, so the logs are sparse. A synchronous restart "
        "(MicroBatchExecution.validateOffsetLogAndGetPrevOffset) needs offsets/L-1 and fails.",
        "Switching async progress tracking off while the newest two batches are not both durable.",
        "Restart with async progress tracking on, or bridge the gap ('plan --strategy bridge' writes "
        "offsets/L-1 as a copy of the previous durable offsets, exactly the start an async restart "
        "uses), or run the catch-up recipe ('checkpoint-doctor catch-up').",
        "doesn't exist",
        "The offset log for batch",
        "Please ensure there are two subsequent offset logs",
    ),
    _c(
        Code.ASYNC_PROGRESS_LOG,
        "async-progress-log",
        INFO,
        "The logs were written by asynchronous progress tracking",
        "An async restart uses the newest durable offsets below L as the start (getPrevBatchFromStorage) "
        "and re-reads the range up to L: batches that were only in memory are read again.",
        "Nothing breaks while async tracking stays on; turning it off breaks the restart (CD101).",
        "Before disabling async progress tracking, run 'checkpoint-doctor catch-up' or bridge the gap.",
    ),
    _c(
        Code.OFFSETS_PREDECESSOR_MISSING,
        "offsets-predecessor-missing",
        ERROR,
        "offsets/L-1 is missing below the newest offsets file",
        "A synchronous restart reads offsets/L-1 as the start of batch L and throws "
        "IllegalStateException 'batch L-1 doesn't exist' (SPARK-38033).",
        "The file was deleted by hand or lost; the logs are not the sparse pattern of async progress "
        "tracking.",
        "Bridge: write offsets/L-1 as a copy of the previous offsets file (batch L then re-reads that "
        "range), or quarantine offsets/L if it has no commit (Spark re-plans batch L).",
        "doesn't exist",
        "The offset log for batch",
    ),
    _c(
        Code.COMMIT_AHEAD_OF_OFFSETS,
        "commit-ahead-of-offsets",
        ERROR,
        "The newest commit is ahead of the newest offsets file",
        "Spark re-runs batch L, then its commit fails because commits/L already exists "
        "(CONCURRENT_STREAM_LOG_UPDATE).",
        "offsets files were deleted, or two queries wrote to one checkpoint.",
        "Quarantine the commits above the newest offsets id; Spark then re-runs batch L.",
        "CONCURRENT_STREAM_LOG_UPDATE",
        "Multiple streaming jobs detected",
    ),
    _c(
        Code.COMMITS_BEHIND,
        "commits-behind",
        WARNING,
        "The newest commit is more than one batch behind the newest offsets file",
        "Spark logs 'Batch completion log latest batch id is K, which is not trailing batchid L by one' "
        "and re-runs only batch L; batches K+1..L-1 are assumed done and are not re-run.",
        "Commit files were lost or deleted; output of the batches in between may be missing.",
        "Check the sink for batches K+1..L-1; roll back to K if they must be re-run.",
        "which is not trailing batchid",
    ),
    _c(
        Code.LATEST_BATCH_UNCOMMITTED,
        "latest-batch-uncommitted",
        INFO,
        "The newest planned batch has no commit",
        "Spark re-runs batch L with its logged offsets (exactly the same range).",
        "The query stopped or crashed between planning and committing the batch: normal.",
        "Nothing; make sure the sink is idempotent per batch id.",
        "no commit log present",
    ),
    _c(
        Code.OFFSETS_HOLE,
        "offsets-hole",
        WARNING,
        "The offsets log has a hole below its two newest files",
        "A restart does not look there, but sources that replay ranges (file source) and rollbacks do.",
        "Files were deleted by hand or lost.",
        "Do not roll back across the hole.",
    ),
    _c(
        Code.COMMIT_WITHOUT_OFFSETS,
        "commit-without-offsets",
        WARNING,
        "A commit file exists for a batch whose offsets file is missing",
        "Spark never reads it on restart, but it shows files were deleted or logs mixed.",
        "Manual deletion or a copy of parts of two checkpoints.",
        "Check where the checkpoint came from.",
    ),
    _c(
        Code.OFFSETS_JUMP_AHEAD,
        "offsets-jump-ahead",
        ERROR,
        "The newest offsets file jumps more than one batch ahead of the previous one",
        "A synchronous restart needs offsets/L-1 and fails with 'batch L-1 doesn't exist'.",
        "Another run (or a copy) wrote offsets far ahead, or several files were deleted.",
        "Quarantine offsets/L if it has no commit (Spark re-plans), or bridge the gap.",
        "doesn't exist",
    ),
    _c(
        Code.COMMITS_WITHOUT_OFFSETS_LOG,
        "commits-without-offsets-log",
        ERROR,
        "The commit log holds batches but the offsets log is empty",
        "Spark 3.5 starts a new query, runs batch 0 and fails on its commit "
        "(CONCURRENT_STREAM_LOG_UPDATE for 0); Spark 4.3 fails at start with 'assertion failed'.",
        "offsets/ was deleted or not copied.",
        "Restore offsets/, or quarantine commits/ to start the query from scratch.",
        "CONCURRENT_STREAM_LOG_UPDATE",
        "assertion failed",
    ),
)

CONTINUOUS_CODES: tuple[CodeInfo, ...] = (
    _c(
        Code.CONTINUOUS_COMMIT_WITHOUT_OFFSETS,
        "continuous-commit-without-offsets",
        ERROR,
        "Continuous mode: the newest committed epoch has no offsets file",
        "ContinuousExecution.getStartOffsets resumes after max(commits) and needs offsets/K: "
        "'Batch K was committed without end epoch offsets!'",
        "offsets/K was deleted or lost.",
        "Quarantine commits/K so the restart resumes from the previous epoch.",
        "was committed without end epoch offsets",
    ),
    _c(
        Code.CONTINUOUS_EPOCHS_AHEAD,
        "continuous-epochs-ahead",
        INFO,
        "Continuous mode: offsets exist for epochs after the newest commit",
        "A continuous restart resumes after max(commits); existing offsets files of later epochs are "
        "kept and reused when those epochs commit.",
        "Normal after a stop.",
        "Nothing.",
    ),
)
