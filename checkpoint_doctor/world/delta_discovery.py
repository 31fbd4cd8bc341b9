"""The Delta tables beside a checkpoint, found and read for pairing without a flag (local disk or S3).

Nothing in a checkpoint names its Delta tables' paths (a Delta source's offset holds the table id,
the Delta sink writes nothing into it), but a job's tables and its checkpoint are usually neighbours:
``job/checkpoint`` beside ``job/source`` and ``job/sink``, or the checkpoint inside its sink table's
directory (``table/_checkpoint``). So ``diagnose``, ``plan`` and their Python API look there, on a
rule that keeps the reads bounded however big the disk is:

* one shallow listing of the checkpoint's **parent** (a listing with a delimiter on an object store):
  the parent is a table when it holds ``_delta_log/``;
* when the parent is not a table but a hidden directory of one (its name starts with ``_``, as the
  ``table/_checkpoints/<name>`` layout of Delta's and Databricks' docs: Delta and Spark's file index
  skip ``_``-prefixed directories, so a checkpoint may live inside the table it writes), the
  **grandparent**'s ``_delta_log/`` is listed too (one listing): a table there is looked at as the
  parent would be;
* of its other subdirectories (the checkpoint's **siblings**), the first :data:`SIBLINGS_LOOKED_AT`
  by name (:data:`SIBLINGS_LOOKED_AT_REMOTE` on an object store, where each costs a request; they are
  sent together), except Hive partitions (``key=value``), hidden directories and the logs of a file
  sink or of checkpoint-doctor itself: each one's ``_delta_log/`` is listed (one listing);
* of the tables found, at most :data:`TABLES_READ` are read, and only what pairing needs: the newest
  version checksum (one small file: table id and every txn, :mod:`checkpoint_doctor.world.delta_checksum`),
  or the commits when there is none;
* when a Delta source's id is no table's, the first commit of each table beside (its ``metaData.id``
  when it was created: a table replaced since still shows it), one read each;
* a table then paired as a Delta **source** is read on from the checkpoint's version (its commits
  since, which the restart reads: :mod:`checkpoint_doctor.world.delta`); nothing else is read.

Nothing farther away is looked at: ``audit ROOTS`` pairs by id with every table under its roots,
``--delta-table PATH`` names one anywhere. A table that cannot be read is named with why, and the
verdict goes on without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from checkpoint_doctor.errors import CheckpointDoctorError, UsageError
from checkpoint_doctor.model import DeltaOffset
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.reading.layout import SINK_LOG
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.reading.storage import Storage, open_parent, open_storage
from checkpoint_doctor.world.delta_log import (
    LOG_DIR,
    commit_names,
    first_schema,
    is_delta_table,
    read_commits,
    read_table,
)

#: Sibling directories of a local checkpoint whose ``_delta_log/`` is looked for.
SIBLINGS_LOOKED_AT = 64
#: The same on an object store, where each is a listing request (sent together).
SIBLINGS_LOOKED_AT_REMOTE = 16
#: Tables read beside one checkpoint, at most.
TABLES_READ = 16
#: Requests in flight when looking at siblings on an object store.
IN_FLIGHT = 8
_NOT_TABLES = (SINK_LOG, LOG_DIR)
_TOOL_SUFFIX = ".checkpoint-doctor"


@dataclass(frozen=True)
class NearbyTables:
    """The Delta tables found beside a checkpoint (read for pairing: id and txns), those that could
    not be read (URL, why), and where they were looked for, in words."""

    tables: tuple[DeltaTable, ...] = ()
    unread: tuple[tuple[str, str], ...] = ()
    looked_at: str = ""
    #: Each table's ``_delta_log`` file names, as listed (URL -> names): nothing is listed twice.
    logs: tuple[tuple[str, tuple[str, ...]], ...] = ()


def _looked_at(siblings: int, parent_is_table: bool, more: int, grandparent: str | None = None) -> str:
    words = f"beside the checkpoint: its parent directory and {siblings} sibling director{'y' if siblings == 1 else 'ies'}"
    if more:
        words += f" ({more} more not looked at)"
    if grandparent is not None:
        words += f", and the table holding its parent {grandparent}/"
    return words + (", the parent being a table" if parent_is_table else "")


def _table_above(store: Storage, storage_options: Mapping[str, Any] | None) -> tuple[Storage, str] | None:
    """The directory holding ``store`` (the checkpoint's parent) and the parent's name, when the
    parent is hidden in it (``_checkpoints``: Delta's DeltaTableUtils.isHiddenDirectory and Spark's
    InMemoryFileIndex skip ``_``-prefixed names, so a table may hold its query's checkpoints).
    The caller lists its ``_delta_log``; None: the parent is not hidden, or at a root."""
    name = store.url.rstrip("/").rpartition("/")[2]
    if not name.startswith("_") or name == LOG_DIR:
        return None
    return open_parent(store.url, storage_options)


def _sibling_names(store: Storage, own: str) -> tuple[list[str], bool]:
    names = store.subdirs()
    parent_is_table = LOG_DIR in names
    siblings = [
        n
        for n in names
        if n != own
        and n not in _NOT_TABLES
        and "=" not in n
        and not n.startswith(".")
        and not n.endswith(_TOOL_SUFFIX)
    ]
    return siblings, parent_is_table


def _log_names(store: Storage, rel: str) -> list[str] | None:
    """The file names in ``rel/_delta_log`` when it is a Delta log, else None (one listing)."""
    log = store.child(f"{rel}/{LOG_DIR}" if rel else LOG_DIR)
    names = [f.path for f in log.list_tree(missing_ok=True).files if "/" not in f.path]
    return names if is_delta_table(names) else None


def _map(store: Storage, fn: Any, items: Sequence[Any]) -> list[Any]:
    if store.is_local or len(items) <= 1:
        return [fn(i) for i in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(IN_FLIGHT, len(items)), thread_name_prefix="cd-delta") as pool:
        return list(pool.map(fn, items))


def _why(exc: CheckpointDoctorError) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def nearby_tables(checkpoint_url: str, storage_options: Mapping[str, Any] | None = None) -> NearbyTables:
    """Find and read (for pairing) the Delta tables beside a checkpoint (see the module docstring).
    Never raises: what cannot be listed is not looked at, a table that cannot be read is named."""
    try:
        parent = open_parent(checkpoint_url, storage_options)
        if parent is None:
            return NearbyTables()
        store, own = parent
        siblings, parent_is_table = _sibling_names(store, own)
    except CheckpointDoctorError:
        return NearbyTables()
    cap = SIBLINGS_LOOKED_AT if store.is_local else SIBLINGS_LOOKED_AT_REMOTE
    looked = siblings[:cap]
    above: tuple[Storage, str] | None = None
    if not parent_is_table:
        try:
            above = _table_above(store, storage_options)
        except CheckpointDoctorError:
            above = None

    Item = tuple[Storage, str]

    def url_of(item: Item) -> str:
        where, rel = item
        return where.url_of(rel) if rel else where.url

    def listed(item: Item) -> tuple[Item, list[str] | CheckpointDoctorError | None]:
        try:
            return item, _log_names(*item)
        except CheckpointDoctorError as exc:
            return item, exc

    items: list[Item] = [(store, "")] if parent_is_table else []
    if above is not None:
        items.append((above[0], ""))
    found = _map(store, listed, items + [(store, rel) for rel in looked])
    every = [(item, names) for item, names in found if names is not None]
    logs = every[:TABLES_READ]
    # The grandparent is named in the words only when it is a table (its listing found a log).
    above_is_table = above is not None and any(item == (above[0], "") for item, _ in every)

    def read(entry: tuple[Item, list[str] | CheckpointDoctorError]) -> DeltaTable | tuple[str, str]:
        item, names = entry
        url = url_of(item)
        if isinstance(names, CheckpointDoctorError):
            return url, _why(names)
        try:
            return read_table(url, storage_options, names=names, commits=False)
        except CheckpointDoctorError as exc:
            return url, _why(exc)

    tables: list[DeltaTable] = []
    unread: list[tuple[str, str]] = []
    for got in _map(store, read, logs):
        if isinstance(got, DeltaTable):
            tables.append(got)
        else:
            unread.append(got)
    logs_listed = tuple((url_of(item), tuple(names)) for item, names in logs if isinstance(names, list))
    return NearbyTables(
        tuple(tables),
        tuple(unread),
        _looked_at(
            len(looked),
            parent_is_table,
            len(siblings) - len(looked),
            above[1] if above is not None and above_is_table else None,
        )
        + (
            f"; the first {TABLES_READ} tables found read, {len(every) - TABLES_READ} more not"
            if len(every) > TABLES_READ
            else ""
        ),
        logs_listed,
    )


def read_on(
    table: DeltaTable,
    names: Sequence[str],
    storage_options: Mapping[str, Any] | None,
    from_version: int | None,
) -> DeltaTable:
    """Return a table read for pairing (id, schema, txns: its checksum's) with its commits from
    ``from_version`` on (None: every commit still in the log), read in one batch from the listing
    made when it was found.

    Raises:
        UsageError: a commit is not a Delta commit.
        StorageError: a commit cannot be read.
    """
    first = table.earliest_version if from_version is None else max(table.earliest_version, from_version)
    log = open_storage(table.url, storage_options).child(LOG_DIR)
    commits = read_commits(log, commit_names(names), first, table.latest_version)
    return replace(table, commits=tuple(commits), first_schema=first_schema(log, names, commits, first))


def read_named(
    paths: Sequence[str],
    storage_options: Mapping[str, Any] | None,
    query_id: str | None,
    unread: list[tuple[str, str]] | None = None,
) -> tuple[DeltaTable, ...]:
    """Read the tables named with ``--delta-table`` (every commit still in each log). With
    ``unread``, a path that is a Delta table (its ``_delta_log`` holds a commit or checkpoint) whose
    log cannot be read is appended there (path, why) and left out, for the verdict to name (CD215)
    rather than stop on: a damaged commit is a fact about the table the operator named.

    Raises:
        UsageError: a path is not a Delta table (or, without ``unread``, its log is damaged).
        MissingDependencyError: a table's state is in a checkpoint only and deltalake is missing.
        StorageError: a log cannot be read.
    """
    ids = (query_id,) if query_id else ()
    out = []
    for p in dict.fromkeys(paths):
        try:
            out.append(read_table(p, storage_options, ids))
        except UsageError as exc:
            if unread is None or not _holds_delta_log(p, storage_options):
                raise
            unread.append((p, _why(exc)))
    return tuple(out)


def _holds_delta_log(url: str, storage_options: Mapping[str, Any] | None) -> bool:
    """Whether ``url/_delta_log`` lists a commit or checkpoint (one listing; False if it cannot)."""
    try:
        log = open_storage(url, storage_options).child(LOG_DIR)
        return is_delta_table(f.path for f in log.list_tree(missing_ok=True).files if "/" not in f.path)
    except CheckpointDoctorError:
        return False


def source_versions(snapshot: CheckpointSnapshot) -> dict[str, int]:
    """Return, per Delta table id, the lowest version the checkpoint's offsets read name (the restart
    lists the table's commits from the newest offsets' version, or the batch before's)."""
    out: dict[str, int] = {}
    for entry in snapshot.offsets.entries:
        if entry.record is None:
            continue
        for s in entry.record.sources:
            off = s.decoded
            if isinstance(off, DeltaOffset):
                out[off.reservoir_id] = min(
                    out.get(off.reservoir_id, off.reservoir_version), off.reservoir_version
                )
    return out


def first_table_id(
    url: str,
    names: Sequence[str],
    storage_options: Mapping[str, Any] | None = None,
    store: Storage | None = None,
) -> str | None:
    """Return the table id the first version of a table's log names (its ``metaData.id`` when it
    was created), or None when that commit is no longer in the log or cannot be read: a table
    replaced with ``CREATE OR REPLACE`` keeps its log, and so shows the id it had. One read.
    """
    commits = commit_names(names)
    if 0 not in commits:
        return None
    try:
        log = (store or open_storage(url, storage_options)).child(LOG_DIR)
        (first,) = read_commits(log, commits, 0, 0)
    except (CheckpointDoctorError, ValueError):
        return None
    return first.table_id
