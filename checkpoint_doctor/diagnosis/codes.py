"""The finding code registry: stable codes, never reused or renumbered; severity belongs to the code.

Ranges: CD0xx files and ``metadata``; CD1xx offsets <-> commits; CD2xx sources; CD3xx state;
CD4xx file sink; CD5xx writers and debris; CD6xx Spark versions and modes; CD7xx continuous mode.
A retired code stays here with ``retired=True``. ``explain`` text says what Spark does, why it
breaks, what the operator can do, and which Spark texts to search for in a driver log.
"""

from __future__ import annotations

from checkpoint_doctor.enums import TextEnum
from checkpoint_doctor.valueclasses import frozen


class Severity(TextEnum):
    """How bad a finding is: an error stops the restart, a warning is a risk, info is a fact."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


#: The severities by their short names, as every check writes them.
ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
#: Worst first (a record read back from JSON looks a severity up by its word).
SEVERITY_ORDER: dict[str, int] = {ERROR: 0, WARNING: 1, INFO: 2}


class Code(TextEnum):
    """The finding codes by name: the package says ``Code.ASYNC_TAIL_SYNC_RESTART``, an operator sees
    ``CD101``. A member's value is its code (a ``str``, so it compares, hashes and serializes as the
    code); its name is its slug in capitals. ``tests/diagnosis/test_codes.py`` keeps the members, the
    registry below and every ``CDnnn`` written anywhere in the package in agreement.
    """

    METADATA_MISSING = "CD001"
    METADATA_UNREADABLE = "CD002"
    OFFSETS_FILE_UNREADABLE = "CD003"
    COMMIT_FILE_UNREADABLE = "CD004"
    LOG_VERSION_TOO_NEW = "CD005"
    COMMIT_VERSION_MISMATCH = "CD006"
    OFFSETS_JAVA_SERIALIZED = "CD007"
    OFFSETS_METADATA_LINE_EMPTY = "CD008"
    LOG_FILE_UNREADABLE_HISTORY = "CD009"
    OFFSETS_WITHOUT_CONF = "CD010"
    OFFSETS_WITHOUT_CONF_FATAL = "CD011"
    UNFINISHED_REPARTITION = "CD012"
    PINNED_CONF_INVALID = "CD013"
    METADATA_ID_INVALID = "CD014"
    PINNED_CONF_OVERRIDDEN = "CD015"
    ASYNC_TAIL_SYNC_RESTART = "CD101"
    ASYNC_PROGRESS_LOG = "CD102"
    OFFSETS_PREDECESSOR_MISSING = "CD103"
    COMMIT_AHEAD_OF_OFFSETS = "CD104"
    COMMITS_BEHIND = "CD105"
    LATEST_BATCH_UNCOMMITTED = "CD106"
    OFFSETS_HOLE = "CD107"
    COMMIT_WITHOUT_OFFSETS = "CD108"
    OFFSETS_JUMP_AHEAD = "CD109"
    COMMITS_WITHOUT_OFFSETS_LOG = "CD110"
    SOURCE_COUNT_MISMATCH = "CD201"
    SOURCE_OFFSET_VOID = "CD202"
    KAFKA_PARTITIONS_CHANGED = "CD203"
    DELTA_TABLE_CHANGED = "CD204"
    SOURCE_FILE_UNREADABLE = "CD205"
    SOURCE_FILE_DAMAGED_UNREAD = "CD206"
    KAFKA_POSITIONS_GONE = "CD207"
    KAFKA_OFFSET_NEGATIVE = "CD211"
    KAFKA_POSITIONS_UNCHECKED = "CD212"
    KAFKA_RETENTION_DEADLINE = "CD213"
    KAFKA_TOPIC_RECREATED_UNREAD = "CD214"
    DELTA_SOURCE_TABLE_REPLACED = "CD208"
    DELTA_SOURCE_VERSIONS_GONE = "CD209"
    DELTA_SOURCE_CHANGE_REFUSED = "CD210"
    DELTA_TABLE_UNREADABLE = "CD215"
    DELTA_TABLE_COPIES = "CD216"
    STATE_MISSING = "CD301"
    STATE_VERSION_NOT_RESTORABLE = "CD302"
    ROCKSDB_SST_MISSING = "CD303"
    STATE_PARTITIONS_MISSING = "CD304"
    STATE_PARTITIONS_EXTRA = "CD305"
    STATE_UNIQUE_IDS_MISSING = "CD306"
    STATE_RESTORABLE_BATCH = "CD307"
    STATE_DIRECTORY_UNEXPECTED = "CD308"
    ROCKSDB_SNAPSHOT_SKIPPED = "CD309"
    STATE_MAY_BE_GONE = "CD310"
    STATE_FILE_UNREADABLE = "CD311"
    STATE_SCHEMA_INCOMPATIBLE = "CD312"
    STATE_OPERATORS_CHANGED = "CD313"
    SINK_HOLDS_UNCOMMITTED_BATCH = "CD401"
    SINK_AHEAD_OF_OFFSETS = "CD402"
    SINK_BEHIND_COMMITS = "CD403"
    SINK_LOG_FILE_MISSING = "CD404"
    SINK_LOG_FILE_UNREADABLE = "CD405"
    SINK_LOG_MISSING = "CD406"
    DELTA_SINK_SKIPS_BATCHES = "CD407"
    DELTA_SINK_WRITES_AGAIN = "CD408"
    LIVE_WRITER = "CD501"
    FRESH_TEMP_FILE = "CD502"
    INTERLEAVED_RUNS = "CD503"
    ORPHAN_CRC_BLOCKS_WRITE = "CD504"
    ORPHAN_CRC = "CD505"
    TEMP_FILES = "CD506"
    FRESH_CHECKPOINT_NOT_EMPTY = "CD507"
    EMPTY_LOG_DIRECTORY = "CD508"
    UNKNOWN_FILES = "CD509"
    NONCANONICAL_BATCH_NAME = "CD510"
    WRITTEN_BY_NEWER_SPARK = "CD601"
    ASYNC_STATEFUL = "CD602"
    SOURCE_EVOLUTION_NEEDS_V2_OFFSETS = "CD603"
    REAL_TIME_CHECKPOINT_V1 = "CD620"
    KAFKA_RERUN_METRICS_NPE = "CD290"
    CONTINUOUS_COMMIT_WITHOUT_OFFSETS = "CD701"
    CONTINUOUS_EPOCHS_AHEAD = "CD702"
    # The changed query (--job): its sources, sink, output mode and trigger (diagnosis/changes/).
    SOURCE_KIND_CHANGED = "CD220"
    FILE_SOURCE_MOVED = "CD221"
    RATE_PARTITIONS_CHANGED = "CD222"
    KAFKA_TOPICS_CHANGED = "CD223"
    FILE_SINK_MOVED = "CD420"
    OUTPUT_MODE_UNSUPPORTED = "CD421"
    JOB_MODE_CHANGED = "CD630"


@frozen
class CodeInfo:
    """What a finding code means."""

    code: Code
    slug: str
    severity: Severity
    title: str
    spark_does: str
    why: str
    action: str
    search: tuple[str, ...] = ()
    retired: bool = False


def _c(
    code: Code,
    slug: str,
    severity: Severity,
    title: str,
    spark_does: str,
    why: str,
    action: str,
    *search: str,
) -> CodeInfo:
    return CodeInfo(code, slug, severity, title, spark_does, why, action, tuple(search))


_ALL = (
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
    _c(
        Code.SOURCE_COUNT_MISMATCH,
        "source-count-mismatch",
        ERROR,
        "The number of sources in offsets/L differs from the query's",
        "OffsetSeq.toStreamProgress asserts the counts match: 'There are [k] sources in the checkpoint "
        "offsets and now there are [m] sources requested by the query. Cannot continue.'",
        "The query gained or lost a source (a union, a join) since the checkpoint was written.",
        "Restore the original query, or start a new checkpoint (Spark 4.2+ named sources allow source "
        "evolution).",
        "sources in the checkpoint offsets and now there are",
    ),
    _c(
        Code.SOURCE_OFFSET_VOID,
        "source-offset-void",
        WARNING,
        "A source has no offset ('-') in the batch to re-run although it had offsets before",
        "Spark re-runs the batch with no end offset for that source: the batch reads nothing from it "
        "(seen on 3.5.9 and 4.3.0), and the next batch plans that source again from its committed start.",
        "A hand edit or a broken writer.",
        "Quarantine the offsets file if it has no commit so Spark re-plans the batch.",
    ),
    _c(
        Code.KAFKA_PARTITIONS_CHANGED,
        "kafka-partitions-changed",
        WARNING,
        "Kafka partitions appear or vanish between batches",
        "The Kafka source reads new partitions from the earliest offset and fails on vanished ones when "
        "failOnDataLoss=true.",
        "Topics were re-partitioned, deleted or recreated.",
        "Check the topics; set startingOffsets or failOnDataLoss deliberately.",
        "failOnDataLoss",
    ),
    _c(
        Code.DELTA_TABLE_CHANGED,
        "delta-table-changed",
        ERROR,
        "A Delta source's table id changes between batches",
        "The Delta source refuses to continue: DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE.",
        "The source table was replaced (CREATE OR REPLACE, drop and recreate).",
        "Start a new checkpoint for the new table, with a starting version.",
        "DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE",
    ),
    _c(
        Code.SOURCE_FILE_UNREADABLE,
        "source-file-unreadable",
        ERROR,
        "A file a source reads on restart under sources/<n>/ is missing or unreadable",
        "Sources keep their own files under sources/<n>/ and read them on restart: the rate source its "
        "start time (sources/<n>/0) when the query thread creates it, the file source its newest log "
        "entries from the newest compaction on and the entries of the batch it re-reads "
        "(FileStreamSource), Kafka its initial offsets (sources/<n>/0) for a batch without start offsets "
        "(KafkaMicroBatchStream.initialOffset). A damaged file fails the query before any batch runs.",
        "A partial write on an object store, a hand edit, a copy that missed files, or a lifecycle rule.",
        "Restore the file from a backup. A rate source's start time can be rewritten ('v1' and the start "
        "time in ms); a file source entry lists the input files of one batch (rebuild it from the sink's "
        "output or start a new checkpoint); Kafka initial offsets only matter before the first batch.",
        "failed to detect the log file version line",
        "Incomplete log file",
        "doesn't exist (latestId:",
        "assertion failed",
    ),
    _c(
        Code.SOURCE_FILE_DAMAGED_UNREAD,
        "source-file-damaged-unread",
        WARNING,
        "A file under sources/<n>/ is damaged but this restart does not read it",
        "Kafka reads its initial offsets (sources/<n>/0) only for a batch without start offsets, so a "
        "restart from the offsets log passes; the file source reads log entries older than its newest "
        "compaction only through that compaction.",
        "A partial write, a hand edit or a newer Spark's file format.",
        "Nothing blocks this restart; restore the file before a fresh start, a rollback or a "
        "FileStreamSource replay needs it.",
    ),
    _c(
        Code.KAFKA_POSITIONS_GONE,
        "kafka-positions-gone",
        ERROR,
        "The broker no longer holds the Kafka positions the checkpoint resumes from",
        "The Kafka source checks the checkpoint's next offsets against the topic when it plans the "
        "first batch (KafkaOffsetReaderAdmin.getOffsetRangesFromResolvedOffsets: partitions deleted, an "
        "offset above the latest, a new partition not starting at 0) and in the batch's tasks "
        "(KafkaDataConsumer: an offset below the earliest). With failOnDataLoss=true (the default) it "
        "fails; with false it warns and skips the records that are gone. A missing topic fails either way.",
        "Retention deleted records the query had not read, or the topic was deleted, recreated or "
        "re-partitioned while the query was stopped.",
        "Decide whether the skipped records matter: restore them into the topic, or move the positions "
        "where the topic has records with 'plan --kafka-bootstrap-servers ... --accept-data-loss' (counted "
        "per partition, undoable), or restart with failOnDataLoss=false (the same skip, silently), or "
        "start a new checkpoint with startingOffsets set deliberately.",
        "not available in Kafka any more",
        "KAFKA_DATA_LOSS",
        "UnknownTopicOrPartitionException",
    ),
    _c(
        Code.KAFKA_OFFSET_NEGATIVE,
        "kafka-offset-negative",
        ERROR,
        "A Kafka source's offsets in the offsets log hold a negative offset, which is not a position",
        "A batch's end offsets are the positions the broker returned (KafkaSourceOffset: the next offset "
        "to read per partition, 0 or more). -1 (latest) and -2 (earliest) mean something only in the "
        "startingOffsets option (KafkaOffsetRangeLimit). Spark does not check the offsets log: a batch "
        "starting from a negative offset is late-bound in its tasks (KafkaBatchPartitionReader."
        "resolveRange): -2 reads from the earliest offset, any other negative value fails its assertion.",
        "A hand edit or a tool wrote the offsets file (a startingOffsets JSON pasted into it), or the "
        "file was damaged.",
        "Restore the offsets file from a backup, or write the partition's real next offset (how many "
        "records lie between is unknown: a negative offset is never counted as records).",
        "does not equal -2",
        "does not equal -1",
    ),
    _c(
        Code.KAFKA_POSITIONS_UNCHECKED,
        "kafka-positions-unchecked",
        WARNING,
        "The Kafka positions the checkpoint resumes from were not checked against a broker",
        "The Kafka source checks the checkpoint's next offsets against the topics when it plans the "
        "first batch and in its tasks (see CD207): records retention deleted, a topic deleted or "
        "recreated, partitions added or lost fail the restart (failOnDataLoss=true) or skip records. "
        "None of that is in the checkpoint: only the broker knows.",
        "No broker was given (--kafka-bootstrap-servers), so the verdict covers the checkpoint's own "
        "files only.",
        "Run the command again with --kafka-bootstrap-servers HOST:PORT (a broker of the query's topics; "
        "--kafka-option KEY=VALUE for client settings), or set CHECKPOINT_DOCTOR_KAFKA_BOOTSTRAP_SERVERS "
        "(or kafka-bootstrap-servers in the config file) so that every scheduled run checks them: the "
        "positions are then judged (CD207) and counted down to retention (CD213).",
    ),
    _c(
        Code.KAFKA_RETENTION_DEADLINE,
        "kafka-retention-deadline",
        WARNING,
        "Kafka retention may delete records the query has not read within the loss horizon",
        "Nothing yet: the restart starts while the broker holds the records. Kafka deletes a closed "
        "segment once its newest record is older than retention.ms (UnifiedLog."
        "deleteRetentionMsBreachedSegments), so the record at the query's position goes no sooner than "
        "its timestamp plus retention.ms; after that the restart fails (failOnDataLoss=true) or skips "
        "the records (false): CD207.",
        "The query is stopped, or reads slower than retention deletes.",
        "Restart the query before the deadline (the soonest partition first), or raise the topic's "
        "retention.ms; --loss-horizon sets how far ahead to look (default 24 h).",
    ),
    _c(
        Code.KAFKA_TOPIC_RECREATED_UNREAD,
        "kafka-topic-recreated-unread",
        WARNING,
        "A Kafka topic was replaced under the checkpoint: the restart never reads the new records below its positions",
        "The Kafka source checks only that the checkpoint's next offsets lie between the topic's earliest "
        "and latest offsets (KafkaOffsetReaderAdmin.getOffsetRangesFromResolvedOffsets, KafkaDataConsumer); "
        "a topic deleted and recreated, then grown past those offsets, passes. Spark starts at the old "
        "offsets without a warning, whatever failOnDataLoss says, and never reads the new topic's records "
        "below them. The record just below a position was appended after the batch that planned that "
        "position, so the checkpoint cannot have read it: the partition's log is not the one it read.",
        "The topic was deleted and recreated (perhaps with more partitions), or its partitions' logs "
        "replaced, while the query was stopped, and producers wrote past the checkpoint's offsets.",
        "Decide whether the records below the positions matter: to read them, start a new checkpoint "
        "with startingOffsets earliest (or the offsets to start from), or reprocess the counted ranges "
        "separately; restarting on this checkpoint skips them silently.",
    ),
    _c(
        Code.DELTA_SOURCE_TABLE_REPLACED,
        "delta-source-table-replaced",
        ERROR,
        "The Delta table a Delta source reads now has another id than the checkpoint's",
        "DeltaSource checks the checkpoint's reservoirId against the table's id when it plans the first "
        "batch and fails with DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE.",
        "The table was deleted and written anew at the same path, or the query now reads another table.",
        "Point the query back at the old table, or start a new checkpoint for the new table (with "
        "startingVersion set deliberately), or plan with --accept-data-loss (the table paired beside the "
        "checkpoint, or named with --delta-table): delta-table re-points the checkpoint to the new table as of its first "
        "version (undoable).",
        "DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE",
    ),
    _c(
        Code.DELTA_SOURCE_VERSIONS_GONE,
        "delta-source-versions-gone",
        ERROR,
        "The Delta log no longer holds the version a Delta source resumes from",
        "DeltaSource lists the commits from the checkpoint's version (DeltaLog.getChangeLogFiles); a first "
        "commit above it fails the first batch with DELTA_MISSING_FILES_UNEXPECTED_VERSION while "
        "failOnDataLoss is true (the default). Delta 3.3 and 4.0 say 'The stream from your Delta table was "
        "expecting process data from version X, but the earliest available version in the _delta_log "
        "directory is Y'; Delta 4.4 says 'Delta stream cannot resume from version X; transaction log starts "
        "at Y'. With failOnDataLoss=false the source skips the missing versions.",
        "Log cleanup (delta.logRetentionDuration, 30 days by default) removed commits the stopped query had "
        "not read.",
        "Restart with failOnDataLoss=false (the finding names the versions skipped), or start a new "
        "checkpoint with startingVersion set to the earliest version in the log, or plan with "
        "--accept-data-loss (the table paired beside the checkpoint, or named with --delta-table): "
        "delta-versions makes the same skip explicit and undoable.",
        "DELTA_MISSING_FILES_UNEXPECTED_VERSION",
        "earliest available version in the _delta_log",
        "transaction log starts at",
    ),
    _c(
        Code.DELTA_SOURCE_CHANGE_REFUSED,
        "delta-source-change-refused",
        ERROR,
        "A Delta source's table has a commit the source refuses (deleted or updated rows)",
        "DeltaSource checks each commit it reads: removed files without added ones are deletes "
        "(DELTA_SOURCE_IGNORE_DELETE unless ignoreDeletes), removed with added ones are updates "
        "(DELTA_SOURCE_TABLE_IGNORE_CHANGES unless skipChangeCommits). An added column is read on.",
        "DELETE, UPDATE or MERGE ran on the table while the query was stopped.",
        "Restart with skipChangeCommits=true (the changed rows are not read), or start a new checkpoint.",
        "DELTA_SOURCE_IGNORE_DELETE",
        "DELTA_SOURCE_TABLE_IGNORE_CHANGES",
    ),
    _c(
        Code.DELTA_TABLE_UNREADABLE,
        "delta-table-unreadable",
        ERROR,
        "A Delta table paired with the checkpoint, or found beside it, cannot be read",
        "Not judged: the restart reads the table's log (DeltaLog, the commits from the checkpoint's "
        "version on for a Delta source, the txns for a Delta sink), each commit line with Jackson "
        "(Action.fromJson: JsonUtils.mapper.readValue[SingleAction]). A line that is not JSON fails there "
        "with Jackson's exception; a value no Java long holds, an action of the wrong shape, JSON nested "
        "beyond a parser's depth or a file name beyond a Java long may fail it or be read otherwise, "
        "which this tool does not say. The finding names the file and what is wrong with it.",
        "A hand edit, a bad tool or a partial copy damaged the table's _delta_log.",
        "Restore the named file from a backup of the table (or repair it the way the tool that wrote it "
        "would), then diagnose again: the restart is judged against the table only once its log reads; "
        "no plan changes the checkpoint for that table until then.",
        "com.fasterxml.jackson",
        "JsonParseException",
    ),
    _c(
        Code.DELTA_TABLE_COPIES,
        "delta-table-copies",
        WARNING,
        "Several Delta tables could be the checkpoint's source or sink, equally near: none is judged",
        "Not judged: a Delta source finds its table by path, and checks only that its id is the "
        "checkpoint's reservoirId (DeltaSource); a Delta sink finds its txns in the table it writes. "
        "Copies of one table (a backup, cp -r) share its id and its txns, so the checkpoint cannot say "
        "which one the query reads or writes, and a copy's log may start at another version.",
        "A copy or backup of the table lies beside the checkpoint (or was named with --delta-table "
        "twice), as near as the table itself.",
        "Name the table the query reads or writes with --delta-table (the finding prints the "
        "command for each candidate); no plan changes the checkpoint until one is named.",
    ),
    _c(
        Code.STATE_MISSING,
        "state-missing",
        ERROR,
        "The query is stateful but state/ is missing or empty",
        "Spark 3.5 to 4.1 fail inside the first batch's tasks on the first file of the chain: 'Error "
        "reading delta file .../1.delta ... does not exist' (HDFS provider; 4.x: "
        "CANNOT_LOAD_STATE_STORE.CANNOT_READ_DELTA_FILE_NOT_EXISTS) or 'Error reading streaming state file "
        "of .../1.changelog does not exist' (RocksDB, also without changelog checkpointing; 4.x: "
        "CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE). None restarts with empty state. "
        "Spark 4.2+ fails the first batch with STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY.",
        "state/ was deleted, not copied, or expired by a lifecycle rule.",
        "Restore state/ from a backup. Without one, 'plan --stateful --accept-data-loss' writes empty "
        "state (reset-state: aggregates restart from zero, deduplication forgets the keys it has seen, "
        "stream-stream joins lose buffered rows), or start a new checkpoint and rebuild state from the "
        "sources.",
        "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY",
        "Error reading delta file",
        "1.changelog does not exist",
    ),
    _c(
        Code.STATE_VERSION_NOT_RESTORABLE,
        "state-version-not-restorable",
        ERROR,
        "State files needed by the next batch are missing",
        "Batch B loads state version B in every partition: the HDFS provider needs the newest snapshot "
        "at or below B plus every delta after it; RocksDB needs the zip plus changelogs up to B.",
        "Files were deleted by hand, by a lifecycle rule, or lost.",
        "Roll back to the newest batch restorable in every partition ('plan --strategy rollback'), or "
        "restore the files.",
        "Error reading delta file",
        "CANNOT_LOAD_STATE_STORE",
        "does not exist",
    ),
    _c(
        Code.ROCKSDB_SST_MISSING,
        "rocksdb-sst-missing",
        ERROR,
        "A RocksDB checkpoint zip names SST files that are missing",
        "RocksDBFileManager copies every SST named in the zip's metadata; a missing one fails the load.",
        "SSTs deleted by hand, by a lifecycle rule, or by a maintenance race.",
        "Roll back to a version whose SSTs are all present, or restore the files.",
        "does not exist",
        "CANNOT_LOAD_STATE_STORE",
    ),
    _c(
        Code.STATE_PARTITIONS_MISSING,
        "state-partitions-missing",
        ERROR,
        "State partition directories are missing",
        "State is hash-partitioned over the pinned spark.sql.shuffle.partitions; every partition loads "
        "its own files.",
        "Partition directories were deleted or not copied.",
        "Restore them, or start a new checkpoint.",
        "Error reading delta file",
    ),
    _c(
        Code.STATE_PARTITIONS_EXTRA,
        "state-partitions-extra",
        WARNING,
        "There are more state partition directories than the pinned shuffle partitions",
        "Spark only loads partitions 0..n-1 of the pinned count; the others are ignored.",
        "Files from another checkpoint were mixed in.",
        "Check where the extra directories came from.",
    ),
    _c(
        Code.STATE_UNIQUE_IDS_MISSING,
        "state-unique-ids-missing",
        ERROR,
        "State files named by the commit log (checkpoint format 2) are missing",
        "With state store checkpoint format 2, commits/B-1 names the unique ids of the state files of "
        "version B; a missing one fails the load.",
        "State files deleted, or commit and state repaired separately.",
        "Roll back commit and state together, or restore the files.",
        "CANNOT_LOAD_STATE_STORE",
    ),
    _c(
        Code.STATE_RESTORABLE_BATCH,
        "state-restorable-batch",
        INFO,
        "The newest batch whose state is restorable in every partition",
        "Rollback planning needs a batch whose state version exists in all partitions.",
        "Informational.",
        "Use it as the rollback target if the newest state is damaged.",
    ),
    _c(
        Code.STATE_DIRECTORY_UNEXPECTED,
        "state-directory-unexpected",
        WARNING,
        "state/ holds operator directories although the query was declared stateless",
        "Spark ignores state of operators the plan does not have.",
        "The query changed, or --stateless was given by mistake.",
        "Check the query.",
    ),
    _c(
        Code.ROCKSDB_SNAPSHOT_SKIPPED,
        "rocksdb-snapshot-skipped",
        WARNING,
        "A RocksDB snapshot zip cannot be loaded (missing SSTs or unreadable); Spark 4.2+ rebuilds the "
        "state without it",
        "With changelog checkpointing, Spark 4.2's and 4.3's auto snapshot repair "
        "(spark.sql.streaming.stateStore.autoSnapshotRepair.enabled, on by default) skips a snapshot "
        "that fails to load and replays changelogs from an older one or from version 0. Spark 3.5 to "
        "4.1, or 4.2+ with the repair disabled, fail the load.",
        "SSTs deleted by hand, a zip cut short or overwritten, a lifecycle rule, or a maintenance race.",
        "Nothing is needed for 4.2+ while the changelogs last; restoring the files keeps older Spark "
        "releases able to restart.",
        "does not exist",
    ),
    _c(
        Code.STATE_MAY_BE_GONE,
        "state-may-be-gone",
        WARNING,
        "The query may have had state that is now gone",
        "Nothing in the checkpoint proves the query stateful, but something suggests it (an event-time "
        "watermark above 0 in the offsets or commit log: withWatermark exists to bound a stateful "
        "operator's state) and state/ holds no state. If the query has stateful operators, each Spark "
        "line reacts in its own way to the missing state when it loads state version L+1 for the first "
        "batch: Spark 4.2 and newer refuse the restart (STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY), "
        "older lines fail in the first batch's tasks reading a delta file that does not exist, or restart "
        "with empty state where the state store provider creates it (the finding names what each line "
        "does). Where nothing suggests state either (no state/, no watermark) there is no finding: the "
        "query is assumed stateless, and diagnose, plan and audit say in their assumptions what a "
        "stateful query would meet on each line.",
        "state/ was deleted or never copied with the checkpoint (a copy of offsets/ and commits/ only, a "
        "lifecycle rule, a cleanup script), or the query is stateless and only uses withWatermark.",
        "If the query has stateful operators (aggregations, dropDuplicates, stream-stream joins, "
        "(flat)MapGroupsWithState, transformWithState), restore state/ from a backup. Without one, "
        "'plan --stateful --accept-data-loss' writes empty state (reset-state: aggregates restart from "
        "zero, deduplication forgets the keys it has seen, stream-stream joins lose buffered rows), or "
        "start a new checkpoint that rebuilds state from the sources. Rerun diagnose or plan with "
        "--stateful or --stateless to get a definite answer (with --stateful the finding is CD301, an "
        "error).",
        "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY",
        "CANNOT_READ_DELTA_FILE_NOT_EXISTS",
        "Error reading delta file",
    ),
    _c(
        Code.STATE_SCHEMA_INCOMPATIBLE,
        "state-schema-incompatible",
        ERROR,
        "A stateful operator's key or value schema is not the one its state was written with",
        "Before a stateful operator loads its state Spark compares the query's key and value schema with "
        "the schema file the checkpoint holds (StateSchemaCompatibilityChecker: the number, order and "
        "types of the fields; names may differ). 3.5 fails the first batch's tasks with "
        "StateSchemaNotCompatible ('Provided schema doesn't match to the schema for existing state!'); "
        "4.x fails planning the first batch with STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE or "
        "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE.",
        "The query changed its grouping keys, its aggregate functions or the types they read: Spark's "
        "guide lists these changes as not allowed on the same checkpoint.",
        "Keep the old grouping keys and aggregates, or run the changed query on a new checkpoint "
        "(and backfill); setting spark.sql.streaming.stateStore.stateSchemaCheck=false reads the old "
        "state with the new schema, which can return wrong results.",
        "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",
        "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
        "StateSchemaNotCompatible",
    ),
    _c(
        Code.STATE_OPERATORS_CHANGED,
        "state-operators-changed",
        ERROR,
        "The query's stateful operators are not the ones the checkpoint's operator metadata records",
        "Spark 4.0 and newer write state/<op>/_metadata/metadata (the operator's id and name) and on "
        "restart compare the query's stateful operators with it: an operator added, removed or "
        "replaced fails planning the first batch with "
        "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA. 3.5 writes no such metadata; a "
        "removed operator's state is then left unused and the query starts.",
        "The query gained, lost or replaced an aggregation, deduplication, join or (flat)mapGroupsWithState.",
        "Keep the stateful operators of the query that wrote the checkpoint, or run the changed query on "
        "a new checkpoint.",
        "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA",
    ),
    _c(
        Code.STATE_FILE_UNREADABLE,
        "state-file-unreadable",
        ERROR,
        "A state file the next batch loads cannot be read",
        "The load of state version B reads a RocksDB zip (unzipped with ZipInputStream) and the changelogs "
        "or HDFS deltas after it, each a compressed stream. A zip that is not one, or is cut short, or a "
        "delta or changelog without its compression header fails the load in the tasks: "
        "'[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred during loading state.' on 4.x, the "
        "bare Java exception (java.io.EOFException, 'Unexpected end of ZLIB input stream', "
        "NoSuchFileException .../metadata) on 3.5. Spark 4.2+ with changelog checkpointing skips an "
        "unreadable zip and rebuilds from an older one (auto snapshot repair); 4.1 also names a "
        "checksum mismatch (CHECKPOINT_FILE_CHECKSUM_VERIFICATION_FAILED) as the cause.",
        "A partial upload on an object store, a disk error, or a hand edit.",
        "Roll back to the newest batch whose state loads ('plan --strategy rollback'), or restore the "
        "file from a backup.",
        "CANNOT_LOAD_STATE_STORE.UNCATEGORIZED",
        "Unexpected end of ZLIB input stream",
        "java.io.EOFException",
    ),
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
    _c(
        Code.LIVE_WRITER,
        "live-writer",
        WARNING,
        "A streaming query may be writing to this checkpoint right now",
        "Spark takes no lock on a checkpoint; two writers corrupt it (CONCURRENT_STREAM_LOG_UPDATE, "
        "'Multiple streaming queries are concurrently using').",
        "The newest batch was planned, or files changed, within the live window.",
        "Stop the query before any repair: plan and apply refuse to change the checkpoint while this is "
        "reported. A checkpoint no query writes to looks the same when its files were just written (a "
        "copy, a restore): pass --live-window 0 to diagnose, plan and audit it.",
        "Multiple streaming queries are concurrently using",
    ),
    _c(
        Code.FRESH_TEMP_FILE,
        "fresh-temp-file",
        WARNING,
        "A temp file was written within the live window",
        "CheckpointFileManager.createAtomic writes .<name>.<uuid>.tmp and renames it; a fresh one means a "
        "write is in progress or just crashed.",
        "A writer may be live.",
        "Stop the query before any repair.",
    ),
    _c(
        Code.INTERLEAVED_RUNS,
        "interleaved-runs",
        WARNING,
        "Batch planning times go backwards between consecutive batches",
        "Each batch records its planning time (batchTimestampMs); two runs writing one checkpoint "
        "interleave them.",
        "Two queries used the same checkpoint at the same time.",
        "Make sure only one query uses the checkpoint.",
        "Multiple streaming jobs detected",
    ),
    _c(
        Code.ORPHAN_CRC_BLOCKS_WRITE,
        "orphan-crc-blocks-write",
        ERROR,
        "A Hadoop .crc file without its data file sits where Spark writes next",
        "On a local file system the rename of the new file fails on the stale checksum file, and Spark "
        "reports 'Multiple streaming queries are concurrently using <dir>'.",
        "The data file was deleted without its hidden .<name>.crc.",
        "Quarantine the orphan .crc file.",
        "Multiple streaming queries are concurrently using",
    ),
    _c(
        Code.ORPHAN_CRC,
        "orphan-crc",
        INFO,
        "Hadoop .crc files without their data files",
        "Harmless unless Spark writes that name again (see CD504).",
        "Data files deleted without their .crc.",
        "Quarantine them.",
    ),
    _c(
        Code.TEMP_FILES,
        "temp-files",
        INFO,
        "Leftover temp files from interrupted writes",
        "Spark's listing ignores them.",
        "A writer crashed between writing and renaming.",
        "Quarantine them when no query is running.",
    ),
    _c(
        Code.FRESH_CHECKPOINT_NOT_EMPTY,
        "fresh-checkpoint-not-empty",
        ERROR,
        "A checkpoint with no batches has files in offsets/, commits/ or state/",
        "Spark 4.1+ refuses to start a new query there: STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY "
        "(spark.sql.streaming.verifyCheckpointDirectoryEmptyOnStart).",
        "Leftovers of a crashed first run.",
        "Quarantine the leftover files.",
        "STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY",
    ),
    _c(
        Code.EMPTY_LOG_DIRECTORY,
        "empty-log-directory",
        INFO,
        "A log directory exists but holds no batch files",
        "Spark treats it as an empty log.",
        "A query that never completed a batch, or files deleted.",
        "Nothing, unless files are expected there.",
    ),
    _c(
        Code.UNKNOWN_FILES,
        "unknown-files",
        INFO,
        "Files Spark does not recognise",
        "Spark's listings ignore them.",
        "Files copied in by hand or by other tools.",
        "Nothing; remove them if they are not needed.",
    ),
    _c(
        Code.NONCANONICAL_BATCH_NAME,
        "noncanonical-batch-name",
        WARNING,
        "A log file name parses as a batch id but is not how Spark names it",
        "Spark's listing counts '007' as batch 7 but reads batch 7 from the file '7'.",
        "A file renamed or copied by hand.",
        "Rename or remove it.",
    ),
    _c(
        Code.WRITTEN_BY_NEWER_SPARK,
        "written-by-newer-spark",
        INFO,
        "The checkpoint was last written by a newer Spark than the restart target",
        "Older Spark ignores conf keys and metadata it does not know; log formats it cannot read fail "
        "(CD005).",
        "A downgrade or rollback of the Spark version.",
        "Prefer restarting on the version that wrote it.",
    ),
    _c(
        Code.ASYNC_STATEFUL,
        "async-stateful",
        ERROR,
        "Asynchronous progress tracking does not support stateful queries",
        "The first batch fails: 'Stateful streaming queries does not support async progress tracking "
        "at this moment.'",
        "A restart with asyncProgressTrackingEnabled of a query that has state.",
        "Restart without async progress tracking.",
        "does not support async progress tracking",
    ),
    _c(
        Code.SOURCE_EVOLUTION_NEEDS_V2_OFFSETS,
        "source-evolution-needs-v2-offsets",
        ERROR,
        "Source evolution is on but the checkpoint's offsets log is v1",
        "Spark 4.3 keeps an existing checkpoint's offsets log version (CheckpointVersionManager) and "
        "refuses to enable source evolution (named sources) on a v1 log: "
        "'[STREAMING_QUERY_EVOLUTION_ERROR.CANNOT_ENABLE_ON_EXISTING_CHECKPOINT]'. Spark 4.2 wrote such "
        "checkpoints with spark.sql.streaming.queryEvolution.enableSourceEvolution on and restarts them.",
        "A checkpoint written by Spark 4.2 with source evolution on, restarted on 4.3 with the same conf.",
        "Restart with spark.sql.streaming.queryEvolution.enableSourceEvolution=false, or start a new "
        "checkpoint to use source evolution.",
        "STREAMING_QUERY_EVOLUTION_ERROR.CANNOT_ENABLE_ON_EXISTING_CHECKPOINT",
    ),
    _c(
        Code.KAFKA_RERUN_METRICS_NPE,
        "kafka-rerun-metrics-npe",
        ERROR,
        "Spark 4.1's Kafka connector fails when a restart re-runs a logged batch",
        "With offsets/L uncommitted, a micro-batch or async restart re-runs batch L; the batch runs, then "
        "progress reporting calls KafkaMicroBatchStream.metrics, which throws 'Cannot invoke "
        '"scala.collection.IterableOps.map(scala.Function1)" because the return value of '
        '"scala.Option.get()" is null\' and the query stops (SPARK-55271, SPARK-57438; a regression '
        "of SPARK-54027).",
        "The 4.1 connector reads its latest offsets only when it plans a batch; a re-run batch is "
        "already planned, so they are unset.",
        "Restart on 4.2 or newer, or in real-time mode on 4.1 (it plans the batch anew), or use a "
        "connector with the fix.",
        'because the return value of "scala.Option.get()" is null',
    ),
    _c(
        Code.REAL_TIME_CHECKPOINT_V1,
        "real-time-checkpoint-v1",
        ERROR,
        "Spark 4.3 refuses real-time mode on state store checkpoint format 1",
        "Spark 4.3 resolves the checkpoint format from the newest commit file (CheckpointVersionManager) "
        "and refuses a real-time restart when it is 1: "
        "'[STREAMING_REAL_TIME_MODE.CHECKPOINT_FORMAT_V1_NOT_SUPPORTED]'. Its own real-time runs write v2 "
        "commits; Spark 4.1 and 4.2 write v1 commits in real-time mode.",
        "A checkpoint written by Spark 4.1/4.2 (or by a micro-batch run with format 1) restarted on 4.3 "
        "with Trigger.RealTime.",
        "Restart on 4.3 with a micro-batch trigger, or start real-time mode on a new checkpoint; or set "
        "spark.sql.streaming.realTimeMode.dangerouslyAllowCheckpointV1.enabled=true and accept that a "
        "re-executed batch can lose data.",
        "STREAMING_REAL_TIME_MODE.CHECKPOINT_FORMAT_V1_NOT_SUPPORTED",
    ),
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

CODES: dict[str, CodeInfo] = {c.code: c for c in _ALL}

#: Warnings whose restart starts but loses data without a word from Spark (a Delta sink skipping the
#: re-planned batch ids its txn holds, CD407: DeltaSink.addBatch's "Skipping already complete epoch"):
#: they are repaired like errors, with consent, and every output points at the plan.
SILENT_LOSS: frozenset[str] = frozenset({Code.DELTA_SINK_SKIPS_BATCHES})
#: Findings that leave a Delta table the query may read or write not judged (unreadable, CD215;
#: copies none is guessed of, CD216): no plan step clears them, and a plan names them as left
#: unresolved whatever their severity, rather than "nothing to repair" (issue 31 items 1 and 8).
TABLES_NOT_JUDGED: frozenset[str] = frozenset({Code.DELTA_TABLE_UNREADABLE, Code.DELTA_TABLE_COPIES})
CODES_BY_SLUG: dict[str, CodeInfo] = {c.slug: c for c in _ALL}


def lookup(code_or_slug: str) -> CodeInfo | None:
    """Return the code info by code (case-insensitive) or slug."""
    return CODES.get(code_or_slug.upper()) or CODES_BY_SLUG.get(code_or_slug.lower())
