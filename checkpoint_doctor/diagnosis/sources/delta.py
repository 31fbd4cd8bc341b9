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

The source's options are the job's (``--job``), never the checkpoint's: without a job Delta's
defaults are assumed. A change data feed source (``readChangeFeed``, ``DeltaSourceCDCSupport``)
reads deletes and updates as change rows (neither hygiene error; ``skipChangeCommits`` and
``ignoreDeletes`` do not apply to it), refuses a batch whose start version has the feed off
(``CDCReader.changesToDF``: ``DELTA_MISSING_CHANGE_DATA`` naming that version; a version inside the
batch that turned it off is read through, recorded), and fails on a
cleaned log where ``CDCReader`` asks for the snapshot at the version it resumes at: Delta 3.3 and 4.0
``DELTA_EMPTY_DIRECTORY`` (``SnapshotManagement.getSnapshotAt``), Delta 4.4
``DELTA_LOG_FILE_NOT_FOUND_FOR_STREAMING_SOURCE`` (the FileNotFoundException wrapped in
``DeltaSourceCDCSupport.getCDCFileChangesAndCreateDataFrame``), whatever ``failOnDataLoss`` says.
``startingVersion`` and ``startingTimestamp`` are read only when the checkpoint holds no offset
(``DeltaSource.getStartingOffset``): on a restart they change nothing.
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


def change_feed(options: Mapping[str, str] | None) -> bool:
    """Return whether a Delta source with these options reads the change data feed."""
    return _on(options or {}, "readChangeFeed")


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
    #: The version whose commit the restart refuses (data-changed, change-data-missing).
    refused_version: int | None = None
    #: Whether the source reads the change data feed (``readChangeFeed``).
    change_feed: bool = False
    #: A change data feed source that starts but reads through the version that turned the feed off
    #: (still off at the latest): the batch after starts where it is off, and fails.
    feed_off_at: int | None = None
    #: The commits ``skipChangeCommits`` passes over (versions in ``skipped_versions``), with what
    #: they wrote that the query never reads.
    skipped_changes: tuple[DeltaCommit, ...] = ()


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


def change_data_missing(version: int, start: int, end: int) -> SparkError:
    """CDCReader.changesToDF on a version that turned the change data feed off (DeltaErrors
    .changeDataNotRecordedException: the range [start, end] of the batch, then the version)."""
    cls = "DELTA_MISSING_CHANGE_DATA"
    text = (
        f"Error getting change data for range [{start} , {end}] as change data was not\n"
        f"recorded for version [{version}]. If you've enabled change data feed on this table,\n"
        "use `DESCRIBE HISTORY` to see when it was first enabled.\n"
        "Otherwise, to start recording change data, use `ALTER TABLE table_name SET TBLPROPERTIES\n"
        "(delta.enableChangeDataFeed=true)`."
    )
    search = f"recorded for version [{version}]"
    return SparkError(
        f"[{cls}] {text}",
        search,
        "batch",
        cls,
        headline=f"{cls}: change data was not recorded for version {version}",
    )


def change_feed_log_gone(new: bool, log_path: str, start: int, earliest: int) -> SparkError:
    """A change data feed source resuming at a version log cleanup removed: CDCReader asks for the
    snapshot at that version. Delta 3.3/4.0: ``DELTA_EMPTY_DIRECTORY`` (DeltaErrors
    .emptyDirectoryException of the log path); Delta 4.4: the FileNotFoundException wrapped as
    ``DELTA_LOG_FILE_NOT_FOUND_FOR_STREAMING_SOURCE``."""
    gone = f"version {start} is gone, the log starts at {earliest}"
    if new:
        cls = "DELTA_LOG_FILE_NOT_FOUND_FOR_STREAMING_SOURCE"
        text = (
            "If you never deleted it, it's likely your query is lagging behind. Please delete its checkpoint "
            "to restart from scratch. To avoid this happening again, you can update your retention policy of "
            "your Delta table"
        )
        search = "it's likely your query is lagging behind"
    else:
        cls = "DELTA_EMPTY_DIRECTORY"
        text = f"No file found in the directory: {log_path}."
        search = "No file found in the directory: "
    return SparkError(f"[{cls}] {text}", search, "batch", cls, headline=f"{cls}: {gone}")


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
    cdf = change_feed(opts)
    # An offset names the next version to read (index -1: none of its files read yet) or the version
    # being read (index >= 0): either way the changes are listed from its reservoirVersion.
    start = (previous or offset).reservoir_version
    # isStartingVersion: the table is read as of that version (its snapshot, getSnapshotAt) and the
    # changes from the next one on, so that version's own commit is not checked as a change.
    first_change = start + 1 if (previous or offset).is_starting_version else start
    if start > table.latest_version:
        return DeltaSourceRestart(None, None, change_feed=cdf)
    skipped: tuple[int, ...] = ()
    if table.earliest_version > start:
        if cdf:
            # CDCReader.changesToDF asks for the snapshot at the start version first (failOnDataLoss
            # is not asked).
            log_path = table.url.rstrip("/") + "/_delta_log"
            error = change_feed_log_gone(new_wording(), log_path, start, table.earliest_version)
            return DeltaSourceRestart(error, code="versions-gone", from_version=start, change_feed=True)
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
    if cdf:
        return _change_feed(offset, previous, table, first_change, skipped)
    changes: tuple[DeltaCommit, ...] = ()
    for commit in table.commits:
        if commit.version < first_change:
            continue
        refused = _hygiene(commit, opts)
        if refused is not None:
            return DeltaSourceRestart(refused, code="data-changed", refused_version=commit.version)
        if commit.removes and _on(opts, "skipChangeCommits"):
            skipped += (commit.version,)
            if commit.adds and adds_new_rows(commit):
                changes += (commit,)
    return DeltaSourceRestart(
        None,
        (max(start, table.earliest_version), table.latest_version),
        skipped,
        skipped_changes=changes,
        schema_change=change,
    )


def adds_new_rows(commit: DeltaCommit) -> bool:
    """Whether a commit that removes files adds rows the table did not hold (a MERGE's inserted rows,
    an UPDATE's new values: ``operationMetrics``); a DELETE's added files hold the rows it kept,
    copies of rows read before. Without metrics, any commit but a DELETE may."""
    if commit.inserted or commit.updated:
        return True
    return commit.inserted is None and commit.updated is None and (commit.operation or "").upper() != "DELETE"


def turned_off(table: DeltaTable, since: int) -> DeltaCommit | None:
    """The first commit at or after ``since`` whose ``metaData`` turns the change data feed off where
    the commits read show it on before, or that sets the property to false itself (a ``metaData``
    without the property, on a table that never had the feed, turns nothing off), or None."""
    state = None
    for commit in table.commits:
        if commit.cdf is False and (state is True or commit.cdf_explicit) and commit.version >= since:
            return commit
        if commit.cdf is not None:
            state = commit.cdf
    return None


def feed_on_at(table: DeltaTable, version: int) -> bool | None:
    """Whether the change data feed is on in the table's snapshot at ``version`` (the last
    ``metaData`` at or before it that the commits read show), None when none of them says."""
    state = None
    for commit in table.commits:
        if commit.version > version:
            break
        if commit.cdf is not None:
            state = commit.cdf
    return state


def _change_feed(
    offset: DeltaOffset,
    previous: DeltaOffset | None,
    table: DeltaTable,
    first_change: int,
    skipped: tuple[int, ...],
) -> DeltaSourceRestart:
    """The change data feed's restart: every change is read (DeltaSourceCDCSupport reads removes as
    delete rows). Each batch (the replayed one, then the new one) is built by CDCReader.changesToDF,
    which checks the feed in the snapshot at the batch's START version only (the streaming source hands
    it file actions, no metaData: a version inside the batch that turned the feed off is read through,
    its rows as inserts; recorded: delta-source-cdf-cdf-disabled) and refuses a start version where the
    feed is off: DELTA_MISSING_CHANGE_DATA naming that version (delta-source-cdf-cdf-disabled-read)."""
    del first_change
    start = (previous or offset).reservoir_version
    batches = []
    if previous is not None and (previous.reservoir_version, previous.index) != (
        offset.reservoir_version,
        offset.index,
    ):
        batches.append((previous.reservoir_version, offset.reservoir_version))  # the replayed getBatch
    if table.latest_version >= offset.reservoir_version:
        batches.append((offset.reservoir_version, table.latest_version + 1))  # the new batch, to the latest
    for begins, ends in batches:
        if feed_on_at(table, begins) is False:
            return DeltaSourceRestart(
                change_data_missing(begins, begins, ends),
                code="change-data-missing",
                from_version=begins,
                change_feed=True,
                refused_version=begins,
            )
    # A version the new batch reads through that turned the feed off (and no later one on again): the
    # batch after it starts where the feed is off.
    off = feed_on_at(table, table.latest_version) is False
    turned = turned_off(table, offset.reservoir_version)
    return DeltaSourceRestart(
        None,
        (max(start, table.earliest_version), table.latest_version),
        skipped,
        change_feed=True,
        feed_off_at=turned.version if off and turned is not None else None,
    )
