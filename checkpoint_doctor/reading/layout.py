"""Classify the paths of a checkpoint listing by name, as Spark's own listing filters do. Pure.

Rules (Spark's ``HDFSMetadataLog``, ``CompactibleFileStreamLog``, ``StateStoreId`` and
``ChecksumCheckpointFileManager``):

* A batch file is a regular file directly in a log directory whose whole name parses as a Java
  ``long`` (``HDFSMetadataLog.isBatchFile``); compactible logs also accept ``<id>.compact``.
  Names like ``007`` or ``+7`` parse too: Spark counts them as batch 7 in listings but reads batch 7
  from the file ``7``, so they are kept apart as *non-canonical*.
* Directories inside a log directory are skipped by Spark, numeric names included.
* ``.<name>.crc`` is Hadoop's checksum side file of ``<name>`` (local file systems only);
  ``<name>.crc`` without the dot, next to a state file, is Spark 4.1+'s JSON checksum file.
* ``.<name>.<uuid>.tmp`` and ``.<name>.<uuid>.TID<n>.tmp`` are temp files of
  ``CheckpointFileManager.createAtomic`` that were never renamed.
* State files: ``<v>.delta``, ``<v>.snapshot`` (HDFS provider), ``<v>.zip``, ``<v>.changelog``,
  ``<v>_<uniqueId>.zip``/``.changelog`` (RocksDB, checkpoint format 2), ``SSTs/*.sst``, ``logs/*``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable
from dataclasses import field
from typing import Any, TypeVar

from checkpoint_doctor.enums import TextEnum
from checkpoint_doctor.model import ByteCount, DirEntries, FileStat, Listing
from checkpoint_doctor.parsing.text import java_parse_int, java_parse_long
from checkpoint_doctor.valueclasses import frozen, mutable

T = TypeVar("T")
_UNSET = object()

_TEMP = re.compile(
    r"^\.(?P<target>.+)\.(?P<uuid>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
    r"(?:\.TID\d+)?\.tmp$"
)
_V2_STATE = re.compile(r"^(?P<version>\d+)_(?P<uid>[0-9A-Za-z-]+)\.(?P<ext>zip|changelog)$")
STATE_DATA_SUFFIXES = ("delta", "snapshot", "zip", "changelog")
LOG_DIRS = ("offsets", "commits")
#: A file sink's log, below its output directory (``FileStreamSink.getMetadataLogPath``).
SINK_LOG = "_spark_metadata"


class Area(TextEnum):
    """Which root a path of a plan or of a simulated change is relative to: the checkpoint's, or the
    file sink output's (its :data:`SINK_LOG` log). Not a fleet target's kind (``fleet.discovery``)."""

    CHECKPOINT = "checkpoint"
    SINK = "sink"


STATE_RESERVED = ("_metadata", "SSTs", "logs")


def hadoop_crc_path(path: str) -> str:
    """Return the relative path of the Hadoop checksum side file of ``path``."""
    parent, _, name = path.rpartition("/")
    return f"{parent}/.{name}.crc" if parent else f".{name}.crc"


def crc_target(name: str) -> str | None:
    """Return the file a ``.<name>.crc`` side file belongs to, or None."""
    if name.startswith(".") and name.endswith(".crc") and len(name) > 5:
        return name[1:-4]
    return None


def temp_target(name: str) -> str | None:
    """Return the final name a ``createAtomic`` temp file was meant to get, or None."""
    if not (name.startswith(".") and name.endswith(".tmp")):
        return None
    match = _TEMP.match(name)
    return match.group("target") if match else None


def batch_id_of(name: str) -> int | None:
    """Return the batch id of a log file name, as ``HDFSMetadataLog.pathToBatchId`` parses it."""
    return java_parse_long(name)


def is_canonical_batch_name(name: str, batch_id: int) -> bool:
    """Return whether Spark would write this batch id under exactly this name."""
    return name == str(batch_id)


@frozen
class StateFileName:
    """A parsed state data file name."""

    version: int
    kind: str
    unique_id: str | None = None


def parse_state_file_name(name: str) -> StateFileName | None:
    """Parse ``<v>.delta``, ``<v>.snapshot``, ``<v>.zip``, ``<v>.changelog``, ``<v>_<id>.zip`` etc."""
    stem, dot, ext = name.rpartition(".")
    if not dot or ext not in STATE_DATA_SUFFIXES:
        return None
    if stem.isdigit() and stem.isascii():
        return StateFileName(int(stem), ext)
    match = _V2_STATE.match(name)
    if match:
        return StateFileName(int(match.group("version")), ext, match.group("uid"))
    return None


@mutable
class StoreIndex:
    """Files of one state store instance: (operator, partition, store name)."""

    operator_id: int
    partition_id: int
    store_name: str
    path: str
    #: (parsed name, file name) of every data file directly in the store directory
    data: list[tuple[StateFileName, str]] = field(default_factory=list)
    ssts: list[FileStat] = field(default_factory=list)
    #: ``logs/*``: archived RocksDB WAL files, named as ``logFiles`` in a zip's metadata.
    wal_logs: list[FileStat] = field(default_factory=list)
    schema: FileStat | None = None
    spark_checksums: int = 0
    other: list[FileStat] = field(default_factory=list)
    file_count: int = 0
    #: The size of its files, summed when first asked for (only ``inspect`` shows it).
    listed_bytes: ByteCount = field(default_factory=ByteCount)
    #: The shared classification ``data`` was taken from, when it is all of ``data``.
    roles: NameRoles | None = None

    @property
    def total_bytes(self) -> int:
        """Return the size of the store's files."""
        return self.listed_bytes.value

    def shared_roles(self) -> NameRoles | None:
        """Return the classification of the store directory's names when ``data`` is exactly its data
        (what is derived from it is shared by every store of that name set), else None."""
        roles = self.roles
        return roles if roles is not None and len(self.data) == len(roles.data) else None


@mutable
class OperatorIndex:
    """Files of one stateful operator ``state/<op>/``."""

    operator_id: int
    metadata: FileStat | None = None
    metadata_v2: dict[int, FileStat] = field(default_factory=dict)
    state_schema_files: list[FileStat] = field(default_factory=list)
    stores: dict[tuple[int, str], StoreIndex] = field(default_factory=dict)
    partition_dirs: set[int] = field(default_factory=set)
    other: list[FileStat] = field(default_factory=list)
    #: Hadoop .crc files directly in store data directories (counted, not kept one by one)
    store_crcs: int = 0
    file_count: int = 0
    #: The size of its files, summed when first asked for (only ``inspect`` shows it).
    listed_bytes: ByteCount = field(default_factory=ByteCount)

    @property
    def total_bytes(self) -> int:
        """Return the size of the operator's files."""
        return self.listed_bytes.value


@mutable
class LogIndex:
    """Batch files of one metadata log directory."""

    path: str
    exists: bool = False
    batches: dict[int, FileStat] = field(default_factory=dict)
    compacts: dict[int, FileStat] = field(default_factory=dict)
    noncanonical: list[tuple[str, int]] = field(default_factory=list)
    ignored_dirs: set[str] = field(default_factory=set)
    other: list[FileStat] = field(default_factory=list)
    #: the Hadoop ``.<name>.crc`` files directly in the directory
    crcs: list[FileStat] = field(default_factory=list)
    file_count: int = 0
    total_bytes: int = 0


@mutable
class Layout:
    """The listing of a checkpoint, indexed by role. Mutable while built, then only read.

    ``hadoop_crcs`` holds the Hadoop checksum files outside state store data directories (those
    are counted per store; their orphans are in ``store_orphan_crcs``).
    """

    listing: Listing
    metadata: FileStat | None = None
    offsets: LogIndex = field(default_factory=lambda: LogIndex("offsets"))
    commits: LogIndex = field(default_factory=lambda: LogIndex("commits"))
    sources: dict[str, LogIndex] = field(default_factory=dict)
    state_exists: bool = False
    operators: dict[int, OperatorIndex] = field(default_factory=dict)
    state_other: list[FileStat] = field(default_factory=list)
    hadoop_crcs: set[str] = field(default_factory=set)
    temps: list[tuple[FileStat, str]] = field(default_factory=list)
    unknown: list[FileStat] = field(default_factory=list)
    ignored: list[FileStat] = field(default_factory=list)
    #: Delta's schema tracking log files (``<schemaTrackingLocation>/_schema_log_<table id>/...``): Delta
    #: writes them under the checkpoint, so they are neither Spark's files nor debris.
    delta_schema_logs: list[FileStat] = field(default_factory=list)
    #: paths of the files outside state store data directories (orphan .crc targets are looked up here)
    present: set[str] = field(default_factory=set)
    store_orphan_crcs: list[tuple[FileStat, str]] = field(default_factory=list)

    @property
    def files(self) -> tuple[FileStat, ...]:
        """Return every file of the listing, sorted by path."""
        return self.listing.files

    @property
    def dirs(self) -> tuple[str, ...]:
        """Return every directory of the listing."""
        return self.listing.dirs


def _index_log_file(log: LogIndex, f: FileStat, rest: list[str], layout: Layout, compactible: bool) -> None:
    log.file_count += 1
    log.total_bytes += f.size
    if len(rest) > 1:
        # Inside a subdirectory of a log dir: Spark's listing only sees direct children.
        log.ignored_dirs.add(rest[0])
        layout.ignored.append(f)
        return
    name = rest[0]
    if name[:1] == ".":
        if name.endswith(".crc"):
            layout.hadoop_crcs.add(f.path)
            log.crcs.append(f)
            return
        target = temp_target(name)
        if target is not None:
            layout.temps.append((f, f"{log.path}/{target}"))
            return
        log.other.append(f)
        return
    if compactible and name.endswith(".compact"):
        cid = batch_id_of(name[: -len(".compact")])
        if cid is not None and name == f"{cid}.compact":
            log.compacts[cid] = f
            return
    bid = batch_id_of(name)
    if bid is None:
        log.other.append(f)
    elif is_canonical_batch_name(name, bid):
        log.batches[bid] = f
    else:
        log.noncanonical.append((name, bid))
        log.other.append(f)


def _index_state_file(layout: Layout, f: FileStat, parts: list[str]) -> None:
    """Index one file below ``state/`` by the general rules (``parts`` = ``["state", op, ...]``)."""
    op_id = java_parse_int(parts[1]) if len(parts) > 2 else None
    if op_id is None or parts[1] != str(op_id):
        if parts[-1].startswith(".") and parts[-1].endswith(".crc"):
            layout.hadoop_crcs.add(f.path)
        else:
            layout.state_other.append(f)
        return
    op = layout.operators.get(op_id)
    if op is None:
        op = layout.operators[op_id] = OperatorIndex(op_id)
    op.file_count += 1
    op.listed_bytes.add(f.size)
    name = parts[-1]
    if name[:1] == "." and _index_hidden_state_file(layout, f, name):
        return
    second = parts[2]
    if second == "_metadata":
        _index_operator_metadata(op, f, parts)
    elif second == "_stateSchema":
        op.state_schema_files.append(f)
    else:
        part_id = java_parse_int(second)
        if part_id is None or second != str(part_id) or len(parts) < 4:
            op.other.append(f)
        else:
            _index_store_file(op, f, parts, part_id)


def _index_hidden_state_file(layout: Layout, f: FileStat, name: str) -> bool:
    """Index a Hadoop ``.crc`` or a ``createAtomic`` temp file; return whether it was one."""
    if name.endswith(".crc"):
        layout.hadoop_crcs.add(f.path)
        return True
    target = temp_target(name)
    if target is not None:
        layout.temps.append((f, f.path.rpartition("/")[0] + "/" + target))
        return True
    return False


def _index_operator_metadata(op: OperatorIndex, f: FileStat, parts: list[str]) -> None:
    """``state/<op>/_metadata/metadata`` (v1) or ``state/<op>/_metadata/v2/<batch>`` (v2)."""
    name = parts[-1]
    if len(parts) == 4 and name == "metadata":
        op.metadata = f
        return
    if len(parts) == 5 and parts[3] == "v2":
        bid = java_parse_long(name)
        if bid is not None:
            op.metadata_v2[bid] = f
            return
    op.other.append(f)


def _index_store_file(op: OperatorIndex, f: FileStat, parts: list[str], part_id: int) -> None:
    """A file of ``state/<op>/<part>/[<store>/]``: data, checksum, SST, WAL log or schema."""
    op.partition_dirs.add(part_id)
    rest = parts[3:]
    store_name = "default"
    if len(rest) > 1 and rest[0] not in STATE_RESERVED:
        store_name = rest[0]
        rest = rest[1:]
    key = (part_id, store_name)
    store = op.stores.get(key)
    if store is None:
        base = "/".join(parts[:4]) if store_name != "default" else "/".join(parts[:3])
        store = op.stores[key] = StoreIndex(op.operator_id, part_id, store_name, base)
    store.file_count += 1
    store.listed_bytes.add(f.size)
    name = parts[-1]
    if len(rest) == 1:
        parsed = parse_state_file_name(name)
        if parsed is not None:
            store.data.append((parsed, name))
        elif name.endswith(".crc") and parse_state_file_name(name[:-4]) is not None:
            store.spark_checksums += 1
        else:
            store.other.append(f)
    elif rest[0] == "logs" and len(rest) == 2:
        store.wal_logs.append(f)
    elif rest[0] == "SSTs" and len(rest) == 2:
        if name.endswith(".sst"):
            store.ssts.append(f)
        elif name.endswith(".crc"):
            store.spark_checksums += 1
        else:
            store.other.append(f)
    elif rest[0] == "_metadata" and rest[1:] == ["schema"]:
        store.schema = f
    else:
        store.other.append(f)


class _StoreDir:
    """A directory holding a state store's data files (``state/<op>/<part>[/<store>]``)."""

    __slots__ = ("base", "key", "op", "part_id", "store")

    def __init__(self, op: OperatorIndex, part_id: int, key: tuple[int, str], base: str) -> None:
        self.op = op
        self.part_id = part_id
        self.key = key
        self.base = base
        self.store: StoreIndex | None = None


def _store_dir(layout: Layout, parent: str) -> _StoreDir | None:
    """Return the store context of a directory whose files are state data files, else None.

    Those directories hold nearly all the files of a big checkpoint; every other file goes through
    the general per-file rules (:func:`_index_state_file`), which this shortcut must match exactly.
    """
    parts = parent.split("/")
    if parts[0] != "state" or len(parts) not in (3, 4):
        return None
    if len(parts) == 4 and parts[3] in STATE_RESERVED:
        return None
    op_id = java_parse_int(parts[1])
    part_id = java_parse_int(parts[2])
    if op_id is None or parts[1] != str(op_id) or part_id is None or parts[2] != str(part_id):
        return None
    op = layout.operators.get(op_id)
    if op is None:
        op = layout.operators[op_id] = OperatorIndex(op_id)
    store_name = parts[3] if len(parts) == 4 else "default"
    return _StoreDir(op, part_id, (part_id, store_name), parent)


def index_listing(listing: Listing) -> Layout:
    """Index a checkpoint listing by role.

    Work is per directory: a directory's role is worked out once; the files of a state store data
    directory (nearly all files of a big checkpoint) are classified by their names only, and
    directories with the same names (partitions at the same versions) share one classification.
    Every other file goes through the general per-file rules.
    """
    layout = Layout(listing=listing)
    for d in listing.dirs:
        top = d.partition("/")[0]
        if d in LOG_DIRS:
            getattr(layout, d).exists = True
        elif top == "state":
            layout.state_exists = True
        elif d.startswith("sources/") and d.count("/") == 1:
            name = d[len("sources/") :]
            layout.sources.setdefault(name, LogIndex(d, exists=True))
        elif top in LOG_DIRS and d.count("/") == 1:
            getattr(layout, top).ignored_dirs.add(d.partition("/")[2])
        if top == "state" and d.count("/") >= 2:
            op_part = d.split("/")
            op_id = java_parse_int(op_part[1])
            if op_id is not None and op_part[1] == str(op_id):
                op = layout.operators.setdefault(op_id, OperatorIndex(op_id))
                pid = java_parse_int(op_part[2])
                if pid is not None and op_part[2] == str(pid):
                    op.partition_dirs.add(pid)
    roles_cache: dict[tuple[str, ...], NameRoles] = {}
    for column in listing.columns:
        if column.path in LOG_DIRS:
            _index_log_dir(layout, getattr(layout, column.path), column)
            continue
        ctx = _store_dir(layout, column.path) if column.path[:6] == "state/" else None
        if ctx is None:
            for i in range(len(column.names)):
                f = column.stat(i)
                layout.present.add(f.path)
                _index_file(layout, f)
            continue
        layout.state_exists = True
        roles = roles_cache.get(column.names)
        if roles is None:
            roles = roles_cache[column.names] = NameRoles.of(column.names)
        _index_store_dir(layout, ctx, column, roles)
    return layout


def _index_log_dir(layout: Layout, log: LogIndex, d: DirEntries) -> None:
    """Index ``offsets/`` or ``commits/`` directly: the same rules as :func:`_index_log_file`, with
    canonical batch names parsed in C and only batch files getting a FileStat (half the files of a
    log directory are Hadoop .crc files, which only matter when their data file is gone).

    The names are sorted, so the hidden ones (``.<batch>.crc`` side files, temp files) are one run:
    its checksum files are taken in bulk, the rest one by one in name order (bench: audit)."""
    log.exists = True
    names, sizes, mtimes, etags = d.names, d.sizes, d.mtimes_ms, d.etags
    log.file_count += len(names)
    log.total_bytes += sum(sizes)
    present = set(names)
    prefix = d.path + "/"
    lo = bisect.bisect_left(names, ".")
    hi = bisect.bisect_left(names, "/", lo)  # '/' sorts right after '.', and is in no name
    for i in range(lo):
        _index_log_name(layout, log, d, i, present, prefix)
    hidden = names[lo:hi]
    crcs = [name for name in hidden if name.endswith(".crc")]
    gone: list[str] = []
    if crcs:
        layout.hadoop_crcs.update([prefix + name for name in crcs])
        gone = [name for name in crcs if len(name) > 5 and name[1:-4] not in present]
    if len(crcs) != len(hidden) or gone:
        # Temp files, other hidden files, orphan checksums: one by one, in name order.
        orphaned = set(gone)
        for i in range(lo, hi):
            name = names[i]
            if name in orphaned or not name.endswith(".crc"):
                _index_log_name(layout, log, d, i, present, prefix, crcs_done=True)
    batches = log.batches
    for i in range(hi, len(names)):
        name = names[i]
        if name.isdigit() and name.isascii() and (name[0] != "0" or name == "0") and len(name) < 19:
            batches[int(name)] = FileStat(
                prefix + name, sizes[i], mtimes[i], etags[i] if etags is not None else None
            )
            continue
        _index_log_name(layout, log, d, i, present, prefix)


def _index_log_name(
    layout: Layout,
    log: LogIndex,
    d: DirEntries,
    i: int,
    present: set[str],
    prefix: str,
    *,
    crcs_done: bool = False,
) -> None:
    """Index the ``i``-th file of a log directory (``crcs_done``: its checksum files are already in
    ``layout.hadoop_crcs``, only their orphans are left to record)."""
    name = d.names[i]
    if name[:1] == ".":
        if name.endswith(".crc"):
            if not crcs_done:
                layout.hadoop_crcs.add(prefix + name)
            target = crc_target(name)
            if target is not None and target not in present:
                layout.store_orphan_crcs.append((d.stat(i), prefix + target))
            return
        target = temp_target(name)
        if target is not None:
            layout.temps.append((d.stat(i), prefix + target))
        else:
            log.other.append(d.stat(i))
        return
    if name.isdigit() and name.isascii() and (name[0] != "0" or name == "0") and len(name) < 19:
        log.batches[int(name)] = d.stat(i)
        return
    f = d.stat(i)
    layout.present.add(f.path)
    log.file_count -= 1
    log.total_bytes -= f.size
    _index_log_file(log, f, [name], layout, compactible=False)


def data_versions(data: Iterable[tuple[StateFileName, str]]) -> tuple[tuple[Any, ...], ...]:
    """Return the versions of a store's data files: deltas, snapshots, zips, changelogs (unique-id
    free), then (version, id) of the checkpoint-format-2 zips and changelogs, each sorted."""
    kinds: dict[str, list[Any]] = {"delta": [], "snapshot": [], "zip": [], "changelog": []}
    v2: dict[str, list[Any]] = {"zip": [], "changelog": []}
    for parsed, _ in data:
        if parsed.unique_id is None:
            kinds[parsed.kind].append(parsed.version)
        else:
            v2[parsed.kind].append((parsed.version, parsed.unique_id))
    return (
        *(tuple(sorted(kinds[k])) for k in ("delta", "snapshot", "zip", "changelog")),
        tuple(sorted(v2["zip"])),
        tuple(sorted(v2["changelog"])),
    )


@frozen
class NameRoles:
    """The roles of the names of one state store data directory (shared by equal name sets), and
    what the read plan and the assembly derive from its data files (``memo``: the partitions of an
    operator are mostly at the same versions, so each is derived once per name set)."""

    data: tuple[tuple[StateFileName, str], ...]
    crc: tuple[int, ...]
    temps: tuple[tuple[int, str], ...]
    spark_checksums: int
    other: tuple[int, ...]
    orphan_crcs: tuple[tuple[int, str], ...]
    #: The indexes of the files that are not the store's own (Hadoop .crc side files, temps).
    skipped: tuple[int, ...] = ()
    memo: dict[object, Any] = field(default_factory=dict, compare=False, repr=False)

    def versions(self) -> tuple[tuple[Any, ...], ...]:
        """Return :func:`data_versions` of the data files."""
        return self.derived("versions", data_versions)

    def parsed(self) -> dict[str, StateFileName]:
        """Return the parsed name of each data file, by file name."""
        found = self.memo.get("parsed")
        if found is None:
            found = self.memo["parsed"] = {name: parsed for parsed, name in self.data}
        return found

    def derived(self, key: object, derive: Callable[[tuple[tuple[StateFileName, str], ...]], T]) -> T:
        """Return ``derive(data)``, computed once per ``key`` for this name set."""
        found = self.memo.get(key, _UNSET)
        if found is _UNSET:
            found = self.memo[key] = derive(self.data)
        return found

    @staticmethod
    def of(names: tuple[str, ...]) -> NameRoles:
        present = set(names)
        data, crc, temps, other, orphans = [], [], [], [], []
        checksums = 0
        for i, name in enumerate(names):
            kind, value = _store_file_role(name)
            if kind == _ROLE_HADOOP_CRC:
                crc.append(i)
                target = crc_target(name)
                if target is not None and target not in present:
                    orphans.append((i, target))
            elif kind == _ROLE_TEMP:
                temps.append((i, value))
            elif kind == _ROLE_DATA:
                data.append((value, name))
            elif kind == _ROLE_SPARK_CHECKSUM:
                checksums += 1
            else:
                other.append(i)
        skipped = (*crc, *(i for i, _ in temps))
        return NameRoles(
            tuple(data), tuple(crc), tuple(temps), checksums, tuple(other), tuple(orphans), skipped
        )


def _index_store_dir(layout: Layout, ctx: _StoreDir, d: DirEntries, roles: NameRoles) -> None:
    """Index a state store data directory from its shared name classification."""
    count = len(d.names)
    op = ctx.op
    op.file_count += count
    # Sizes summed when asked (inspect): the files of a state directory are not stat'ed to index it.
    op.listed_bytes.add_dir(d)
    op.store_crcs += len(roles.crc)
    skipped = roles.skipped
    if roles.temps:
        layout.temps.extend((d.stat(i), d.full_path(target)) for i, target in roles.temps)
    if roles.orphan_crcs:
        layout.store_orphan_crcs.extend((d.stat(i), d.full_path(target)) for i, target in roles.orphan_crcs)
    if len(skipped) == count:
        return
    op.partition_dirs.add(ctx.part_id)
    store = op.stores.get(ctx.key)
    if store is None:
        store = op.stores[ctx.key] = StoreIndex(op.operator_id, ctx.part_id, ctx.key[1], ctx.base)
    store.file_count += count - len(skipped)
    store.listed_bytes.add_dir(d, skipped)
    if not store.data:
        store.roles = roles
    store.data.extend(roles.data)
    store.spark_checksums += roles.spark_checksums
    store.other.extend(d.stat(i) for i in roles.other)


_ROLE_HADOOP_CRC, _ROLE_TEMP, _ROLE_DATA, _ROLE_SPARK_CHECKSUM, _ROLE_OTHER = range(5)


def _store_file_role(name: str) -> tuple[int, Any]:
    """Return the role of a file directly in a state store directory, by name alone."""
    if name[:1] == ".":
        if name.endswith(".crc"):
            return _ROLE_HADOOP_CRC, None
        target = temp_target(name)
        if target is not None:
            return _ROLE_TEMP, target
    parsed = parse_state_file_name(name)
    if parsed is not None:
        return _ROLE_DATA, parsed
    if name.endswith(".crc") and parse_state_file_name(name[:-4]) is not None:
        return _ROLE_SPARK_CHECKSUM, None
    return _ROLE_OTHER, None


def _index_file(layout: Layout, f: FileStat) -> None:
    """Index one file by the general rules (everything but state store data directories)."""
    path = f.path
    top, sep, rest = path.partition("/")
    if not sep:
        if path == "metadata":
            layout.metadata = f
        elif path.startswith(".") and path.endswith(".crc"):
            layout.hadoop_crcs.add(path)
        elif temp_target(path) is not None:
            layout.temps.append((f, temp_target(path) or ""))
        else:
            layout.unknown.append(f)
        return
    if top == "offsets" or top == "commits":
        log = layout.offsets if top == "offsets" else layout.commits
        log.exists = True
        _index_log_file(log, f, rest.split("/"), layout, compactible=False)
    elif top == "sources":
        src_name, sep2, tail = rest.partition("/")
        if not sep2:
            layout.unknown.append(f)
            return
        source_log = layout.sources.get(src_name)
        if source_log is None:
            source_log = layout.sources[src_name] = LogIndex(f"sources/{src_name}", exists=True)
        _index_log_file(source_log, f, tail.split("/"), layout, compactible=True)
    elif top == "state":
        layout.state_exists = True
        _index_state_file(layout, f, path.split("/"))
    elif "/_schema_log_" in f"/{path}":
        # Delta's schema tracking log (DeltaSourceMetadataTrackingLog: <schemaTrackingLocation>/
        # _schema_log_<table id>), which Delta requires under the checkpoint and the plan for a
        # Delta schema change (CD240, CD241) puts there: a file Delta writes, not debris.
        layout.delta_schema_logs.append(f)
    else:
        layout.unknown.append(f)


def index_sink_listing(listing: Listing) -> LogIndex:
    """Index the listing of a file sink's ``_spark_metadata`` directory (paths relative to it)."""
    log = LogIndex(SINK_LOG, exists=True)
    scratch = Layout(listing=Listing())
    for f in listing.files:
        _index_log_file(log, f, f.path.split("/"), scratch, compactible=True)
    log.other.extend(fs for fs, _ in scratch.temps)
    return log


def orphan_crcs(layout: Layout) -> list[tuple[FileStat, str]]:
    """Return Hadoop ``.crc`` files whose data file is gone, with the missing file's path.

    Store and log directories found theirs while indexed (a .crc always sits beside its file);
    the other checksum files are checked against the files indexed one by one.
    """
    out = list(layout.store_orphan_crcs)
    by_dir: dict[str, DirEntries] | None = None
    # Any order: the result is sorted by path (a log directory's hold most of them and are skipped).
    for path in layout.hadoop_crcs:
        parent, _, name = path.rpartition("/")
        if parent in LOG_DIRS:
            continue
        target = crc_target(name)
        if target is None:
            continue
        target_path = f"{parent}/{target}" if parent else target
        if target_path not in layout.present:
            if by_dir is None:
                by_dir = {d.path: d for d in layout.listing.columns}
            d = by_dir[parent]
            out.append((d.stat(d.names.index(name)), target_path))
    return sorted(out, key=lambda x: x[0].path)


def listed_sizes(listing: Listing, paths: Iterable[str]) -> dict[str, int]:
    """Return the listed size of each of ``paths`` that the listing holds (a few lookups per path:
    every directory's names are sorted)."""
    by_dir = {d.path: d for d in listing.columns}
    out: dict[str, int] = {}
    for path in paths:
        parent, _, name = path.rpartition("/")
        d = by_dir.get(parent)
        if d is None:
            continue
        i = bisect.bisect_left(d.names, name)
        if i < len(d.names) and d.names[i] == name:
            out[path] = d.stat(i).size  # that file alone (a state directory is stat'ed lazily)
    return out
