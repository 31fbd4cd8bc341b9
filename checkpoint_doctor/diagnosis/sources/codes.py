"""The codes of a query's sources (CD2xx): their count and offsets, files, Kafka topics and Delta
tables, beside their checks (:mod:`checkpoint_doctor.diagnosis.sources`)."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.code_info import ERROR, WARNING, Code, CodeInfo
from checkpoint_doctor.diagnosis.code_info import entry as _c

CODES: tuple[CodeInfo, ...] = (
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
        Code.DELTA_SOURCE_SCHEMA_CHANGED,
        "delta-source-schema-changed",
        ERROR,
        "A column of a Delta source's table was renamed or dropped (column mapping) since the checkpoint's version",
        "On restart DeltaSource compares the table's schema at the version it resumes listing from with the "
        "latest (DeltaSource.checkReadIncompatibleSchemaChanges): under column mapping a physical column with "
        "another name (RENAME COLUMN) or gone (DROP COLUMN) fails the first batch with "
        "DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG ('Please provide a schemaTrackingLocation "
        "to enable non-additive schema evolution'), on Delta 3.3, 4.0 and 4.4 alike.",
        "ALTER TABLE ... RENAME COLUMN or DROP COLUMN ran on a column-mapping table while the query was stopped.",
        "Restart with the Delta source option schemaTrackingLocation (a directory under the checkpoint) and "
        "the SQL conf spark.databricks.delta.streaming.allowSourceColumnRenameAndDrop=always: Delta writes its "
        "schema log, stops the stream on purpose twice (DELTA_STREAMING_METADATA_EVOLUTION: restart it again, "
        "as a job's retries do), reads the versions before the change with the old schema and those after "
        "with the new one; nothing is skipped or read twice. Check first that the sink takes the new schema. "
        "The plan names the exact option and conf.",
        "DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG",
        "DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE",
    ),
    _c(
        Code.DELTA_SOURCE_TYPE_WIDENED,
        "delta-source-type-widened",
        ERROR,
        "A column type of a Delta source's table was widened (type widening) since the checkpoint's version",
        "On restart DeltaSource compares the table's schema at the version it resumes listing from with the "
        "latest (DeltaSource.checkReadIncompatibleSchemaChanges). Delta 3.3 reads the older files with the "
        "widened type and refuses (SchemaUtils.isReadCompatible without type widening): "
        "DELTA_SCHEMA_CHANGED_WITH_VERSION. Delta 4.0 tracks a widening like a rename "
        "(typeWidening.enableStreamingSchemaTracking true): DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG. "
        "Delta 4.4 reads it (that conf false by default): the restart starts.",
        "ALTER TABLE ... ALTER COLUMN ... TYPE (delta.enableTypeWidening) ran while the query was stopped.",
        "Restart with the Delta source option schemaTrackingLocation (a directory under the checkpoint), on "
        "Delta 4.0 also with spark.databricks.delta.streaming.allowSourceColumnTypeChange=always: Delta "
        "writes its schema log and stops the stream on purpose (DELTA_STREAMING_METADATA_EVOLUTION: restart "
        "it again) until it reads past the change; or restart on a Spark line whose Delta release reads "
        "it (Delta 4.4: Spark 4.1, 4.2). The plan names the exact option and conf.",
        "DELTA_SCHEMA_CHANGED_WITH_VERSION",
        "DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG",
    ),
)
