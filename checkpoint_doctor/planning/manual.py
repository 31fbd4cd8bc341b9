"""What the operator can do where no repair of the checkpoint exists, per finding code, and which codes
a strategy addresses. Pure, and light: ``diagnose`` says "nothing to plan" from these without
importing the strategies (:mod:`checkpoint_doctor.planning.strategies`, whose registry a test holds
:data:`PLANNED` to)."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code

#: Delta's change-commit refusal (CD210, DELTA_SOURCE_CHANGE_REFUSED): the source option the manual action names, as the job sets it.
SKIP_CHANGE_COMMITS = ("skipChangeCommits", "true")
DELTA_CHANGE_MANUAL = (
    f'restart with .option("{SKIP_CHANGE_COMMITS[0]}", "{SKIP_CHANGE_COMMITS[1]}") on the Delta source: Spark '
    "skips the commits that delete or update rows (their changes do not reach the sink) and reads every "
    "other commit on; the checkpoint stays as it is"
)

#: What to do about a writer that may be live (CD501, CD502): both findings come from times within
#: ``--live-window``, so a checkpoint no query writes to (a copy just made) is planned with it at 0.
LIVE_MANUAL = (
    "stop the query, wait for the live window to pass, and plan again (or, if none writes to it, plan "
    "with --live-window 0)"
)

#: What the operator can do when no option applies, per finding code (why no honest repair exists).
MANUAL: dict[str, str] = {
    Code.LOG_VERSION_TOO_NEW: "restart on the Spark line that wrote the checkpoint, or start a new checkpoint",
    Code.COMMIT_VERSION_MISMATCH: "set spark.sql.streaming.stateStore.checkpointFormatVersion to the commit log version, or use Spark 4.2+",
    Code.OFFSETS_JAVA_SERIALIZED: "start a new checkpoint: Spark 2.0 offsets cannot be resumed",
    Code.SOURCE_COUNT_MISMATCH: (
        "the query's sources changed: restore the original sources, or start a new checkpoint "
        "(nothing in the checkpoint can say where a new source starts)"
    ),
    Code.DELTA_TABLE_CHANGED: "start a new checkpoint for the new Delta table (with a starting version)",
    Code.STATE_MISSING: "restore state/ from a backup, or start a new checkpoint and rebuild state from the sources",
    Code.TWS_SCHEMA_FILE_MISSING: "restore the schema file from a backup, or start a new checkpoint and rebuild state from the sources",
    Code.TWS_OPERATOR_METADATA_MISSING: "restore state/<op>/_metadata/v2/ from a backup, or start a new checkpoint and rebuild state from the sources",
    Code.SINK_LOG_FILE_MISSING: "restore the missing _spark_metadata files from a backup",
    Code.SINK_LOG_FILE_UNREADABLE: "restore the damaged _spark_metadata file from a backup",
    Code.LIVE_WRITER: LIVE_MANUAL,
    Code.FRESH_TEMP_FILE: LIVE_MANUAL,
    Code.INTERLEAVED_RUNS: (
        "make sure only one query uses this checkpoint (its offsets keep the interleaving: the warning "
        "stays after any repair)"
    ),
    Code.ASYNC_STATEFUL: "restart without asyncProgressTrackingEnabled (stateful queries do not support it)",
    Code.KAFKA_POSITIONS_GONE: (
        "recreate the topic, then plan again with --kafka-bootstrap-servers (its partitions are read "
        "from their earliest offset), or start a new checkpoint with startingOffsets set deliberately"
    ),
    Code.OFFSETS_METADATA_LINE_EMPTY: "restart in the mode that wrote the log (continuous processing writes blank metadata lines)",
    Code.DELTA_SOURCE_CHANGE_REFUSED: DELTA_CHANGE_MANUAL,
}

#: The codes at least one strategy addresses (planning.strategies.for_code is not empty): kept here so
#: rendering a diagnosis need not import the strategies; tests/planning/test_strategies.py holds it
#: to the registry.
PLANNED: frozenset[str] = frozenset(
    {
        Code.METADATA_MISSING,
        Code.METADATA_UNREADABLE,
        Code.OFFSETS_FILE_UNREADABLE,
        Code.COMMIT_FILE_UNREADABLE,
        Code.LOG_VERSION_TOO_NEW,
        Code.COMMIT_VERSION_MISMATCH,
        Code.OFFSETS_JAVA_SERIALIZED,
        Code.OFFSETS_METADATA_LINE_EMPTY,
        Code.OFFSETS_WITHOUT_CONF_FATAL,
        Code.UNFINISHED_REPARTITION,
        Code.PINNED_CONF_INVALID,
        Code.METADATA_ID_INVALID,
        Code.ASYNC_TAIL_SYNC_RESTART,
        Code.OFFSETS_PREDECESSOR_MISSING,
        Code.COMMIT_AHEAD_OF_OFFSETS,
        Code.OFFSETS_JUMP_AHEAD,
        Code.COMMITS_WITHOUT_OFFSETS_LOG,
        Code.SOURCE_OFFSET_VOID,
        Code.SOURCE_FILE_UNREADABLE,
        Code.KAFKA_POSITIONS_GONE,
        Code.DELTA_SOURCE_TABLE_REPLACED,
        Code.DELTA_SOURCE_VERSIONS_GONE,
        Code.DELTA_SOURCE_CHANGE_REFUSED,
        Code.KAFKA_RERUN_RANGE_GONE,
        Code.DELTA_SOURCE_SCHEMA_CHANGED,
        Code.DELTA_SOURCE_TYPE_WIDENED,
        Code.DELTA_CHANGE_DATA_MISSING,
        Code.STATE_MISSING,
        Code.STATE_VERSION_NOT_RESTORABLE,
        Code.ROCKSDB_SST_MISSING,
        Code.STATE_PARTITIONS_MISSING,
        Code.STATE_UNIQUE_IDS_MISSING,
        Code.ROCKSDB_SNAPSHOT_SKIPPED,
        Code.STATE_FILE_UNREADABLE,
        Code.TWS_SCHEMA_FILES_ELSEWHERE,
        Code.SINK_AHEAD_OF_OFFSETS,
        Code.DELTA_SINK_SKIPS_BATCHES,
        Code.ORPHAN_CRC_BLOCKS_WRITE,
        Code.FRESH_CHECKPOINT_NOT_EMPTY,
        Code.ASYNC_STATEFUL,
        Code.CONTINUOUS_COMMIT_WITHOUT_OFFSETS,
    }
)
