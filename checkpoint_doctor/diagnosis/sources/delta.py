"""What a Delta source does on restart, from the checkpoint's ``DeltaSourceOffset`` and the table's log.

Pure: takes the offset (``reservoirId``, ``reservoirVersion``, ``index``), the table as
``world/delta_log.py`` read it (:class:`~checkpoint_doctor.model_delta.DeltaTable`) and the source's
options, and returns the restart in the words of the Delta release the line runs (delta-spark
``sources/DeltaSource.scala``). The order is Delta's: the table id is checked when the offset is
read back (``DeltaSourceOffset`` -> ``DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE``), then the
commits from the offset's version are listed (``DeltaLog.getChangeLogFiles``: a first commit above
that version is ``DELTA_MISSING_FILES_UNEXPECTED_VERSION`` while ``failOnDataLoss`` is true, its
default), then each commit read is checked (``DeltaSource.validateCommitAndDecideSkipping``: removes
without adds are deletes, ``DELTA_SOURCE_IGNORE_DELETE`` unless ``ignoreDeletes``; removes with adds
are changes, ``DELTA_SOURCE_TABLE_IGNORE_CHANGES`` unless ``skipChangeCommits``). An added column is
not refused: the restarted query reads with the table's newest schema, which only widened (recorded:
``delta-source-stateless-schema-changed`` runs on every line); a column renamed or dropped under
column mapping, or a type widened, between the version the restart lists from and the latest is
refused per Delta release (:mod:`checkpoint_doctor.diagnosis.sources.delta_schema`, recorded in
``fixtures/delta-schema/``), after the versions are found and before a commit is read.
Proven by the restarts recorded in ``fixtures/delta/`` (tests/delta/test_recorded_restarts.py) and
``fixtures/delta-schema/`` (tests/delta/test_schema_changes.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from checkpoint_doctor.diagnosis.sources.delta_schema import SchemaChange, compare, describe
from checkpoint_doctor.diagnosis.spark_line import SparkError
from checkpoint_doctor.ids import id_range
from checkpoint_doctor.model import DeltaOffset
from checkpoint_doctor.model_delta import DeltaCommit, DeltaTable
from checkpoint_doctor.valueclasses import frozen

#: The delta-spark release this project pairs with each Spark line (scripts/jars.py DELTA_FOR); a
#: line without one has no Delta (no delta-spark_4.3 artifact is published).
DELTA_FOR_LINE = {"3.5": "3.3.3", "4.0": "4.0.1", "4.1": "4.4.0", "4.2": "4.4.0"}


def delta_release(line: str) -> str | None:
    """Return the delta-spark release of a Spark line (``4.1``), or None when none exists."""
    return DELTA_FOR_LINE.get(line)


def new_wording(release: str) -> bool:
    """Delta 4.4 rewrote DELTA_MISSING_FILES_UNEXPECTED_VERSION into one sentence."""
    major, minor = (int(p) for p in release.split(".")[:2])
    return (major, minor) >= (4, 4)


def _on(options: Mapping[str, str], key: str) -> bool:
    # DeltaOptions reads its keys case-insensitively (CaseInsensitiveMap).
    return any(k.lower() == key.lower() and str(v).lower() == "true" for k, v in options.items())


def _fail_on_data_loss(options: Mapping[str, str]) -> bool:
    return not any(k.lower() == "failondataloss" and str(v).lower() == "false" for k, v in options.items())


@frozen
class DeltaSourceRestart:
    """A Delta source's restart: refused with ``error``, or reading ``versions`` (first, last) on.

    ``skipped_versions`` are versions a restart passes over: commits log cleanup removed (with
    ``failOnDataLoss=false``) or commits ``skipChangeCommits`` skips.
    """

    error: SparkError | None
    versions: tuple[int, int] | None = None
    skipped_versions: tuple[int, ...] = ()
    code: str | None = None
    #: The version the restart lists the table's commits from.
    from_version: int | None = None
    #: The schema change refused (``code`` ``schema-changed`` or ``type-widened``), or one the
    #: release reads on (a widened type on Delta 4.4).
    schema_change: SchemaChange | None = None


def different_table(offset: DeltaOffset, table: DeltaTable) -> SparkError:
    cls = "DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE"
    text = (
        f"[{cls}] The streaming query was reading from an unexpected Delta table (id = '{table.table_id}'). "
        f"It used to read from another Delta table (id = '{offset.reservoir_id}') according to checkpoint."
    )
    return SparkError(text, cls, "batch", cls, headline=f"{cls}: the table id is {table.table_id}")


def missing_versions(release: str, start: int, earliest: int) -> SparkError:
    return _missing_versions(new_wording(release), start, earliest)


def _missing_versions(new: bool, start: int, earliest: int) -> SparkError:
    cls = "DELTA_MISSING_FILES_UNEXPECTED_VERSION"
    if new:
        text = f"Delta stream cannot resume from version {start}; transaction log starts at {earliest}."
        search = f"cannot resume from version {start}; transaction log starts at {earliest}"
    else:
        # The error class's message lines are joined with newlines (ErrorClassesJsonReader).
        text = (
            f"The stream from your Delta table was expecting process data from version {start},\n"
            f"but the earliest available version in the _delta_log directory is {earliest}."
        )
        search = f"expecting process data from version {start}"
    headline = f"{cls}: version {start} is gone, the log starts at {earliest}"
    return SparkError(f"[{cls}] {text}", search, "batch", cls, headline=headline)


def deleted(version: int) -> SparkError:
    cls = "DELTA_SOURCE_IGNORE_DELETE"
    text = f"Detected deleted data (for example ...) from streaming source at version {version}."
    search = f"from streaming source at version {version}"
    return SparkError(
        f"[{cls}] {text}", search, "batch", cls, headline=f"{cls}: deleted data at version {version}"
    )


def changed(version: int) -> SparkError:
    cls = "DELTA_SOURCE_TABLE_IGNORE_CHANGES"
    text = f"Detected a data update (for example ...) in the source table at version {version}."
    search = f"in the source table at version {version}"
    return SparkError(
        f"[{cls}] {text}", search, "batch", cls, headline=f"{cls}: data update at version {version}"
    )


#: What each Delta release does with a widened type on restart (DeltaSource.checkReadIncompatibleSchemaChanges):
#: refuse it as a schema change (3.3: no type widening in the read check), ask for a schema tracking
#: log (4.0: typeWidening.enableStreamingSchemaTracking true), or read it (4.4: that conf false).
WIDENING_SCHEMA_CHANGED = "schema-changed"
WIDENING_SCHEMA_LOG = "schema-log"
WIDENING_READ = "read"


def widening(release: str) -> str:
    """Return what Delta ``release`` does with a type widened under a stream (see the constants)."""
    major, minor = (int(p) for p in release.split(".")[:2])
    if (major, minor) < (4, 0):
        return WIDENING_SCHEMA_CHANGED
    return WIDENING_SCHEMA_LOG if (major, minor) < (4, 4) else WIDENING_READ


def _columns(schema: str | None) -> str:
    """A schema as Spark prints it (its JSON), shortened to its columns: ``<schema: id long, note string>``."""
    return f"<schema: {describe(schema)}>"


def use_schema_log(old: str | None, new: str | None, change: SchemaChange) -> SparkError:
    """``DeltaErrors.blockStreamingReadsWithIncompatible*SchemaChanges`` (schema tracking enabled)."""
    cls = "DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG"
    text = (
        f"[{cls}] Streaming read is not supported on tables with read-incompatible schema changes (e.g. rename "
        "or drop or datatype changes).\nPlease provide a 'schemaTrackingLocation' to enable non-additive schema "
        "evolution for Delta stream processing.\nSee <docLink> for more details.\n"
        f"Read schema: {_columns(old)}. Incompatible data schema: {_columns(new)}."
    )
    search = "Please provide a 'schemaTrackingLocation' to enable non-additive schema evolution"
    return SparkError(text, search, "batch", cls, headline=f"{cls}: {change.words()}")


def schema_changed_with_version(
    version: int, old: str | None, new: str | None, change: SchemaChange
) -> SparkError:
    """``DeltaErrors.schemaChangedException`` with the version (Delta 3.3 on a widened type)."""
    cls = "DELTA_SCHEMA_CHANGED_WITH_VERSION"
    text = (
        f"[{cls}] Detected schema change in version {version}:\nstreaming source schema: {_columns(new)}\n\n"
        f"data file schema: {_columns(old)}\n\nPlease try restarting the query. If this issue repeats across query "
        "restarts without\nmaking progress, you have made an incompatible schema change and need to start "
        "your\nquery from scratch using a new checkpoint directory.\n"
    )
    search = f"Detected schema change in version {version}"
    return SparkError(text, search, "batch", cls, headline=f"{cls}: {change.words()}")


def schema_restart(
    table: DeltaTable, start: int, release: Callable[[], str] | None
) -> tuple[SparkError | None, str | None, SchemaChange | None]:
    """The stream-start schema check of a restart listing changes from ``start``: the table's schema
    there against its latest (``checkReadIncompatibleSchemaChangeOnStreamStartOnce``). Returns (error,
    code, change); no error when nothing non-additive changed or the release reads it (a widened type
    is not judged without ``release``)."""
    if start >= table.latest_version:
        return None, None, None
    old, new = table.schema_at(start), table.schema
    change = compare(old, new)
    if not change.any:
        return None, None, None
    if change.rename_or_drop:
        return use_schema_log(old, new, change), "schema-changed", change
    if release is None:
        return None, None, change
    what = widening(release())
    if what == WIDENING_SCHEMA_CHANGED:
        return schema_changed_with_version(start, old, new, change), "type-widened", change
    if what == WIDENING_SCHEMA_LOG:
        return use_schema_log(old, new, change), "type-widened", change
    return None, None, change


def _hygiene(commit: DeltaCommit, options: Mapping[str, str]) -> SparkError | None:
    """DeltaSource.validateCommitAndDecideSkipping for one commit the restart reads."""
    if commit.removes == 0 or _on(options, "skipChangeCommits"):
        return None
    if commit.adds > 0:
        return None if _on(options, "ignoreChanges") else changed(commit.version)
    if _on(options, "ignoreDeletes") or _on(options, "ignoreChanges"):
        return None
    return deleted(commit.version)


def predict(
    offset: DeltaOffset,
    table: DeltaTable,
    line: str,
    options: Mapping[str, str] | None = None,
    previous: DeltaOffset | None = None,
) -> DeltaSourceRestart:
    """Return what the Delta source of ``offset`` (the newest offsets) does when the query restarts.

    ``previous`` is the source's offset one batch earlier: on restart Spark calls ``getBatch(previous,
    offset)`` of every V1 source again before it plans a new batch (MicroBatchExecution
    .populateStartOffsets, "certain sources assume on restart the last batch will be executed"), and
    re-runs an uncommitted batch from it, so the commits are listed from ``previous``'s version (recorded:
    a cleaned log fails "expecting process data from version 3" for offsets 3 then 4).

    Raises:
        ValueError: ``line`` has no Delta release (4.3).
    """
    release = delta_release(line)
    if release is None:
        raise ValueError(f"no Delta Lake release for Spark {line}")
    return predict_worded(offset, table, lambda: new_wording(release), options, previous, lambda: release)


def predict_worded(
    offset: DeltaOffset,
    table: DeltaTable,
    new_wording: Callable[[], bool],
    options: Mapping[str, str] | None = None,
    previous: DeltaOffset | None = None,
    release: Callable[[], str] | None = None,
) -> DeltaSourceRestart:
    """:func:`predict` on a line that has a Delta release, its wording of the one error whose words
    differ between releases asked only when that error is said (``new_wording()``, the line's
    ``SparkTarget.delta_new_wording``: a restart matrix's lines share everything else), and its
    release asked only when a type was widened (``release()``, ``SparkTarget.delta_release``)."""
    opts = dict(options or {})
    if table.table_id is not None and table.table_id != offset.reservoir_id:
        return DeltaSourceRestart(different_table(offset, table), code="table-replaced")
    # An offset names the next version to read (index -1: none of its files read yet) or the version
    # being read (index >= 0): either way the changes are listed from its reservoirVersion.
    start = (previous or offset).reservoir_version
    # isStartingVersion: the table is read as of that version (its snapshot, getSnapshotAt) and the
    # changes from the next one on, so that version's own commit is not checked as a change.
    first_change = start + 1 if (previous or offset).is_starting_version else start
    if start > table.latest_version:
        return DeltaSourceRestart(None, None)
    skipped: tuple[int, ...] = ()
    if table.earliest_version > start:
        if _fail_on_data_loss(opts):
            return DeltaSourceRestart(
                _missing_versions(new_wording(), start, table.earliest_version),
                code="versions-gone",
                from_version=start,
            )
        skipped = id_range(start, table.earliest_version - 1)  # the lowest ones: a version is any long
    # getBatch(previous, offset) checks the schema at stream start before it lists a commit
    # (DeltaSource.validateAndInitMetadataLogForPlannedBatchesDuringStreamStart).
    schema_error, schema_code, change = schema_restart(table, start, release)
    if schema_error is not None:
        return DeltaSourceRestart(schema_error, code=schema_code, from_version=start, schema_change=change)
    for commit in table.commits:
        if commit.version < first_change:
            continue
        error = _hygiene(commit, opts)
        if error is not None:
            return DeltaSourceRestart(error, code="data-changed")
        if commit.removes and _on(opts, "skipChangeCommits"):
            skipped += (commit.version,)
    return DeltaSourceRestart(
        None, (max(start, table.earliest_version), table.latest_version), skipped, schema_change=change
    )
