"""The strategy registry: finding code -> the strategies that address it, in rank order. Pure.

One module per strategy (as sqlfluff keeps one module per rule); each exports ``STRATEGY``, naming
the finding codes it addresses. Nothing registers itself on import: :data:`ALL` is the explicit,
ranked tuple. Within one finding, options are offered in this order; a strategy earlier in the tuple
is preferred when two make the restart start with the same number of options.
"""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import SILENT_LOSS, Code
from checkpoint_doctor.planning.options import Strategy
from checkpoint_doctor.planning.strategies import (
    bridge,
    catch_up,
    commit_ahead,
    continuous_commit,
    damaged_snapshot,
    delta_change_commits,
    delta_schema,
    delta_sink_txn,
    delta_table,
    delta_versions,
    kafka_positions,
    orphan_files,
    rate_start_time,
    recreate_metadata,
    relocate_schema_paths,
    replan_batch,
    rerun_batch,
    reset_state,
    restart_in_mode,
    restart_on_writer,
    restore_offsets_metadata,
    rewrite_format,
    rewrite_source_file,
    rollback,
    sink_ahead,
    start_over,
)

ALL: tuple[Strategy, ...] = (
    bridge.STRATEGY,
    catch_up.STRATEGY,
    # Before the re-run strategies: a rewrite that Spark reads re-reads nothing.
    rewrite_format.STRATEGY,
    relocate_schema_paths.STRATEGY,
    replan_batch.STRATEGY,
    rerun_batch.STRATEGY,
    commit_ahead.STRATEGY,
    orphan_files.STRATEGY,
    sink_ahead.STRATEGY,
    continuous_commit.STRATEGY,
    damaged_snapshot.STRATEGY,
    restore_offsets_metadata.STRATEGY,
    rewrite_source_file.STRATEGY,
    rate_start_time.STRATEGY,
    kafka_positions.STRATEGY,
    delta_versions.STRATEGY,
    delta_table.STRATEGY,
    delta_change_commits.STRATEGY,
    delta_schema.STRATEGY,
    delta_sink_txn.STRATEGY,
    recreate_metadata.STRATEGY,
    rollback.STRATEGY,
    reset_state.STRATEGY,
    start_over.STRATEGY,
    restart_on_writer.STRATEGY,
    restart_in_mode.STRATEGY,
)

#: Warning findings that get repair options too: the restart starts, but data is lost without a word
#: from Spark (a Delta sink skipping re-planned batch ids it holds, CD407). A plan offers their repair
#: with consent, as an error's.
WARNING_REPAIRS: frozenset[str] = SILENT_LOSS

#: The names plans and ``plan --strategy`` use, in rank order.
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(s.family for s in ALL))

_BY_CODE: dict[str, tuple[Strategy, ...]] = {}
for _strategy in ALL:
    for _code in _strategy.codes:
        _BY_CODE[_code] = (*_BY_CODE.get(_code, ()), _strategy)


def for_code(code: str) -> tuple[Strategy, ...]:
    """Return the strategies that address a finding code, in rank order."""
    return _BY_CODE.get(code, ())


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
    Code.DELTA_SOURCE_CHANGE_REFUSED: delta_change_commits.MANUAL,
}
