"""The Delta tables under an audit's roots, paired with the audited checkpoints without being told.

Discovery (:mod:`checkpoint_doctor.fleet.discovery`) finds every directory holding ``_delta_log/`` in
the roots' one listing; that listing already names each log's files, so a table costs no listing of
its own. Before the checkpoints are audited, each table is read once for what pairing needs (its
newest version checksum: table id and every txn, :mod:`checkpoint_doctor.world.delta_checksum`; the
commits when it has none), concurrently, and indexed by table id and by txn appId. Each checkpoint
is then paired by the one rule of ``diagnose`` (:func:`checkpoint_doctor.world.delta_pairing.pair_tables`):
a source by ``reservoirId`` = table id with any table under the roots, its sink by txn appId = its
query id, and an unpaired source with the only table beside it (its parent or a sibling directory)
that pairs with nothing else. Copies of a table (a backup, a test copy: the same table id) are told
apart only beside the checkpoint: several copies of the id elsewhere pair none (the pairing names
them). A table paired as a
source is read on from the checkpoint's version, once per audit (a second checkpoint needing an
older version reads again from there). The pairing goes into the diagnosis (CD208-CD210, CD407,
CD408 then show in the audit) and into the record (:func:`delta_part`).

``--include``/``--exclude`` choose the checkpoints audited, not the tables they are paired with: every
table under the roots is indexed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, cast

from checkpoint_doctor.errors import CheckpointDoctorError
from checkpoint_doctor.fleet.delta_report import PAIRED_NOTE
from checkpoint_doctor.fleet.discovery import DELTA_LOG, NOTE_DELTA, join, parent_of
from checkpoint_doctor.fleet.records import AuditNote
from checkpoint_doctor.model import Listing
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.reading.positions import delta_sources, newest_sources
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.reading.storage import Storage
from checkpoint_doctor.world.delta import complete_sources, own_unread
from checkpoint_doctor.world.delta_discovery import first_table_id
from checkpoint_doctor.world.delta_log import (
    commit_names,
    first_schema,
    is_delta_table,
    read_commits,
    read_table,
)
from checkpoint_doctor.world.delta_pairing import Candidate, DeltaPairing, pair_tables


@dataclass(frozen=True)
class TableTask:
    """A Delta table under a root: its URL, root, path relative to the root and the file names of
    its ``_delta_log`` (from the root's listing)."""

    url: str
    root: str
    path: str
    log_names: tuple[str, ...]


def table_tasks(root_url: str, listing: Listing, notes: Iterable[AuditNote]) -> list[TableTask]:
    """Return the Delta tables discovery found in a root's listing (its ``delta-table`` notes), with
    their logs' file names. Pure."""
    paths = [n.path for n in notes if n.kind == NOTE_DELTA and n.root == root_url]
    if not paths:
        return []
    columns = {c.path: c for c in listing.columns}
    out = []
    for path in paths:
        column = columns.get(join(path, DELTA_LOG))
        names = tuple(column.names) if column is not None else ()
        if is_delta_table(names):
            out.append(TableTask(note_url(root_url, path), root_url, path, names))
    return out


def note_url(root_url: str, path: str) -> str:
    """Return the URL of a path below a root."""
    return f"{root_url.rstrip('/')}/{path}" if path else root_url


def _why(exc: CheckpointDoctorError) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _unbound(task: TableTask) -> Storage:
    raise AssertionError(f"a shipped Delta index reads {task.url} only once bound to stores")


class _Counted:
    """A storage that counts the files read through it (and through its children), so that the
    audit's requests stay the sum of what its parts say they read."""

    def __init__(self, inner: Storage, counter: list[int], lock: threading.Lock) -> None:
        self._inner = inner
        self._counter = counter
        self._lock = lock

    def _add(self, n: int) -> None:
        with self._lock:
            self._counter[0] += n

    def child(self, rel: str) -> Storage:
        return cast(Storage, _Counted(self._inner.child(rel), self._counter, self._lock))

    def read(self, rel: str, *, max_bytes: int | None = None) -> bytes:
        self._add(1)
        return self._inner.read(rel, max_bytes=max_bytes)

    def read_many(self, rels: Iterable[str], *, max_bytes: int | None = None) -> Any:
        wanted = list(rels)
        self._add(len(wanted))
        return self._inner.read_many(wanted, max_bytes=max_bytes)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class DeltaIndex:
    """Every Delta table under the audited roots, read once for pairing and indexed by table id
    and txn appId; the tables paired as sources read on from the checkpoints' versions, once.
    Thread-safe (the audit's workers share it)."""

    def __init__(
        self, tables: Sequence[TableTask], store_for: Callable[[TableTask], Storage], *, jobs: int = 1
    ) -> None:
        self._tasks = {t.url: t for t in tables}
        self._store_for = store_for
        self.tables: dict[str, DeltaTable] = {}
        self.unread: dict[str, str] = {}
        #: Files read for pairing (each table's newest checksum, or its commits).
        self.reads = 0
        self._count_lock = threading.Lock()
        self._local = threading.local()
        items = list(self._tasks.values())
        if jobs > 1 and len(items) > 1:
            with ThreadPoolExecutor(max_workers=min(jobs, len(items)), thread_name_prefix="cd-delta") as pool:
                results = list(pool.map(self._read_for_pairing, items))
        else:
            results = [self._read_for_pairing(t) for t in items]
        self.reads = sum(n for _, n in results)
        for task, (got, _) in zip(items, results, strict=True):
            if isinstance(got, DeltaTable):
                self.tables[task.url] = got
            else:
                self.unread[task.url] = got
        self._by_id: dict[str, list[str]] = {}
        self._by_app: dict[str, list[str]] = {}
        self._by_dir: dict[tuple[str, str], list[str]] = {}
        for url, table in self.tables.items():
            if table.table_id is not None:
                self._by_id.setdefault(table.table_id, []).append(url)
            for app, _ in table.txns:
                self._by_app.setdefault(app, []).append(url)
        for url, task in self._tasks.items():
            self._by_dir.setdefault((task.root, parent_of(task.path)), []).append(url)
        self._lock = threading.Lock()
        self._full: dict[str, tuple[threading.Lock, list[tuple[int | None, DeltaTable]]]] = {}
        self._former: dict[str, frozenset[str]] = {}

    def __len__(self) -> int:
        return len(self._tasks)

    # An audit on Spark ships the index to the executors (read on the driver, each table once): its
    # tables and maps travel, its locks and stores are made anew there (:meth:`bind`).
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for key in ("_store_for", "_lock", "_count_lock", "_local", "_full", "_former"):
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._store_for = _unbound
        self._lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._local = threading.local()
        self._full = {}
        self._former = {}

    def bind(self, store_for: Callable[[TableTask], Storage]) -> DeltaIndex:
        """Return this index reading through ``store_for`` (an executor's stores), for itself."""
        self._store_for = store_for
        return self

    def _counted(self, task: TableTask, counter: list[int]) -> Storage:
        return cast(Storage, _Counted(self._store_for(task), counter, self._count_lock))

    def _read_for_pairing(self, task: TableTask) -> tuple[DeltaTable | str, int]:
        counter = [0]
        try:
            table = read_table(
                task.url, names=task.log_names, commits=False, store=self._counted(task, counter)
            )
            return table, counter[0]
        except CheckpointDoctorError as exc:
            return _why(exc), counter[0]
        except Exception as exc:  # noqa: BLE001 - one hostile table must not stop the audit (issue 31)
            return (
                f"{type(exc).__name__} while reading its log (a checkpoint-doctor bug: please report it)",
                counter[0],
            )

    def _read_from(self, url: str, from_version: int | None) -> DeltaTable:
        """The table read on from ``from_version`` (None: every commit), once per version needed."""
        with self._lock:
            lock, done = self._full.setdefault(url, (threading.Lock(), []))
        with lock:
            for version, table in done:
                if version is None or (from_version is not None and version <= from_version):
                    return table
            task = self._tasks[url]
            base = self.tables[url]
            if base.commits:
                return base  # read in full for pairing already (no checksum)
            # The id, schema and txns are the checksum's (read for pairing): only the commits the
            # restart reads are read now, counted in the record of the checkpoint that asked first.
            first = (
                base.earliest_version if from_version is None else max(base.earliest_version, from_version)
            )
            log = self._counted(task, self._local.counter).child(DELTA_LOG)
            commits = read_commits(log, commit_names(task.log_names), first, base.latest_version)
            table = replace(
                base, commits=tuple(commits), first_schema=first_schema(log, task.log_names, commits, first)
            )
            done.append((from_version, table))
            return table

    def _former_ids(self, url: str) -> frozenset[str]:
        """The id the first version of a table's log names, when it is not its id now (read once
        per audit, counted in the record of the checkpoint that asked first)."""
        with self._lock:
            known = self._former.get(url)
        if known is not None:
            return known
        table = self.tables[url]
        if table.commits:
            ids = {c.table_id for c in table.commits if c.table_id}
        else:
            task = self._tasks[url]
            first = first_table_id(url, task.log_names, store=self._counted(task, self._local.counter))
            ids = {first} if first else set()
        former = frozenset(ids - {table.table_id})
        with self._lock:
            self._former[url] = former
        return former

    def _beside(self, root: str, path: str) -> list[str]:
        """The tables in the checkpoint's parent directory (siblings) or that directory itself."""
        if not path:
            return []  # a root is nobody's sibling
        parent = parent_of(path)
        out = list(self._by_dir.get((root, parent), []))
        if parent:
            itself = [
                u for u in self._by_dir.get((root, parent_of(parent)), []) if self._tasks[u].path == parent
            ]
            out += itself
            name = parent.rpartition("/")[2]
            if name.startswith("_") and name != DELTA_LOG and not itself:
                # table/_checkpoints/<name>: the table holding the hidden parent, as diagnose looks
                # (world.delta_discovery: Delta and Spark skip '_'-prefixed directories in a table).
                above = parent_of(parent)
                out += [
                    u for u in self._by_dir.get((root, parent_of(above)), []) if self._tasks[u].path == above
                ]
        return out

    def pair(self, root: str, path: str, snapshot: CheckpointSnapshot) -> tuple[DeltaPairing | None, int]:
        """Return the checkpoint at ``path`` under ``root`` paired with the tables (None: it has no
        Delta source and no table pairs with it or lies beside it), and the files read for it (its
        source tables' commits, the first time a checkpoint needs them).

        Raises:
            CheckpointDoctorError: never (a table that cannot be read is named in the pairing).
        """
        self._local.counter = [0]
        pairing = self._pair(root, path, snapshot)
        return pairing, self._local.counter[0]

    def _pair(self, root: str, path: str, snapshot: CheckpointSnapshot) -> DeltaPairing | None:
        sources = delta_sources(newest_sources(snapshot))
        query_id = snapshot.query_id
        beside = set(self._beside(root, path))
        copies: list[str] = []
        #: Copies of one table id none of which is beside the checkpoint (id -> their URLs).
        far_copies: dict[str | None, tuple[str, ...]] = {}

        def pick(urls: Iterable[str]) -> list[str]:
            """One table per table id: copies of a table (a backup, a test copy) share its id, so
            the id or appId tells them apart only beside the checkpoint or when there is one."""
            groups: dict[str | None, list[str]] = {}
            for url in urls:
                groups.setdefault(self.tables[url].table_id, []).append(url)
            out = []
            for group in groups.values():
                near = [u for u in group if u in beside]
                if len(near) == 1 or len(group) == 1:
                    out.append(near[0] if near else group[0])
                else:
                    copies.extend(group)
                    far_copies[self.tables[group[0]].table_id] = tuple(sorted(near or group))
            return out

        chosen: dict[str, Candidate] = {}
        for url in sorted(u for u in beside if u in self.tables):
            chosen[url] = Candidate(self.tables[url], beside=True)
        for _, off in sources:
            for url in pick(self._by_id.get(off.reservoir_id, [])):
                chosen.setdefault(url, Candidate(self.tables[url]))
        if query_id:
            for url in pick(self._by_app.get(query_id, [])):
                chosen.setdefault(url, Candidate(self.tables[url]))
        unread = [(u, self.unread[u]) for u in sorted(beside) if u in self.unread]
        if not sources and not chosen and not unread:
            return None
        near = {c.table.table_id for c in chosen.values() if c.beside}
        if any(off.reservoir_id not in near for _, off in sources):
            # A source no table beside pairs by its current id: the first version of a table beside
            # may show it (replaced since), which a copy of the old table elsewhere does not outweigh.
            for url, c in list(chosen.items()):
                if c.beside:
                    chosen[url] = replace(c, former_ids=self._former_ids(url))
        pairing = pair_tables(
            sources,
            query_id,
            list(chosen.values()),
            looked_at=f"under the audited roots: {len(self._tasks)} Delta table{'s' if len(self._tasks) != 1 else ''}",
            unread=unread,
        )
        if pairing.unpaired and copies and not pairing.ambiguous:
            pairing = replace(pairing, ambiguous=tuple(sorted(set(copies))))
        pairing = _with_far_copies(pairing, far_copies)
        return own_unread(complete_sources(pairing, snapshot, None, read=self._read_from), self._first_id)

    def _first_id(self, url: str) -> str | None:
        """The id the first version of an unread table's log names (its own when created)."""
        task = self._tasks.get(url)
        if task is None:
            return None
        return first_table_id(url, task.log_names, store=self._counted(task, self._local.counter))

    def noted(self, notes: Iterable[AuditNote]) -> list[AuditNote]:
        """Return the audit's notes with each Delta table's saying what became of it: read to pair
        it with the checkpoints, or why it could not be read."""
        out = []
        for n in notes:
            if n.kind != NOTE_DELTA or n.url not in self._tasks:
                out.append(n)
            elif n.url in self.unread:
                out.append(
                    replace(n, message=f"a Delta table whose log could not be read: {self.unread[n.url]}")
                )
            else:
                out.append(replace(n, message=PAIRED_NOTE))
        return out


def _with_far_copies(pairing: DeltaPairing, far_copies: dict[str | None, tuple[str, ...]]) -> DeltaPairing:
    """Copies of a source's table found only farther away (an audit's roots) are as ambiguous as
    copies beside: its reservoirId is theirs, and the source pairs none; CD216 names them as it does
    copies beside (issue 31 item 1). Tables far away holding this query's txns are weaker evidence of
    its sink (recorded copies of one query's runs): named in the pairing only."""
    named = {n for n, _ in pairing.copies}
    more = tuple(
        (n, far_copies[table_id])
        for n, table_id in pairing.unpaired
        if n not in named and table_id in far_copies
    )
    return replace(pairing, copies=pairing.copies + more) if more else pairing
