"""The codes of who writes the checkpoint (CD5xx: a live writer, debris, interleaved runs) and which
Spark line and mode may restart it (CD6xx, CD290), beside
:mod:`checkpoint_doctor.diagnosis.checks_writers`."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.code_info import ERROR, INFO, WARNING, Code, CodeInfo
from checkpoint_doctor.diagnosis.code_info import entry as _c

CODES: tuple[CodeInfo, ...] = (
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
)
