"""The strategy registry: finding code -> the strategies that address it, in rank order. Pure.

One module per strategy (as sqlfluff keeps one module per rule); each exports ``STRATEGY``, naming
the finding codes it addresses. Nothing registers itself on import: :data:`ALL` is the explicit,
ranked tuple. Within one finding, options are offered in this order; a strategy earlier in the tuple
is preferred when two make the restart start with the same number of options.
"""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import SILENT_LOSS
from checkpoint_doctor.planning.options import Strategy
from checkpoint_doctor.planning.strategies import (
    bridge,
    catch_up,
    commit_ahead,
    continuous_commit,
    damaged_snapshot,
    delta_change_commits,
    delta_change_feed,
    delta_schema,
    delta_sink_txn,
    delta_table,
    delta_versions,
    kafka_positions,
    kafka_rerun,
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
    kafka_rerun.STRATEGY,
    delta_versions.STRATEGY,
    delta_table.STRATEGY,
    delta_change_commits.STRATEGY,
    delta_schema.STRATEGY,
    delta_change_feed.STRATEGY,
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
