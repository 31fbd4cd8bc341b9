"""The checkpoint snapshot: one immutable value for everything in a checkpoint. Pure.

Built in three steps so that I/O stays at the edge (:mod:`checkpoint_doctor.reading.pipeline` does the I/O):
``index_listing`` (names) -> :func:`plan_reads` (which files to read at this depth) -> read ->
:func:`assemble_snapshot` (parse and combine). A damaged file is recorded as a
:class:`~checkpoint_doctor.model.ParseFailure` on its entry; nothing here raises for bad content.
"""

from __future__ import annotations

import array
import bisect
import functools
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from checkpoint_doctor.errors import CheckpointParseError, FileTooLargeError, StorageError
from checkpoint_doctor.ids import missing_in
from checkpoint_doctor.model import (
    CommitRecord,
    FileStat,
    Listing,
    LogEntry,
    OffsetSeq,
    OperatorStateMetadata,
    ParseFailure,
    QueryMetadata,
    RocksDBCheckpointMetadata,
    SinkLogBatch,
    SourceMetadataRecord,
    StateDataHeader,
    StateSchemaHeader,
)
from checkpoint_doctor.parsing.commits import parse_commit
from checkpoint_doctor.parsing.compactible import parse_sink_log, parse_source_metadata
from checkpoint_doctor.parsing.metadata import parse_query_metadata
from checkpoint_doctor.parsing.offsets import parse_offsets
from checkpoint_doctor.parsing.state_files import (
    parse_operator_metadata,
    parse_rocksdb_zip_metadata,
    parse_schema_header,
    parse_state_data_header,
)
from checkpoint_doctor.parsing.text import TOO_LARGE
from checkpoint_doctor.reading.layout import (
    SINK_LOG,
    Area,
    Layout,
    LogIndex,
    StoreIndex,
    hadoop_crc_path,
    index_listing,
    index_sink_listing,
    orphan_crcs,
    parse_state_file_name,
)

T = TypeVar("T")

DEFAULT_DEPTH = "default"
DEEP = "deep"
#: Bytes read of one file (reading is bounded by what Spark reads). The largest files
#: Spark writes in a checkpoint are offsets of Kafka sources with very many partitions (about 20
#: bytes a partition: 100,000 partitions is 2 MB a source) and the compact files of file sources
#: and file sinks (about 200 bytes per file ever listed: 64 MiB is some 300,000 files). A file over
#: the bound is not read; it is reported (``too-large``, finding CD010) and the rest of the
#: checkpoint is checked as usual. Compact files of long-running file sinks can outgrow it
#: (SPARK-24295): Spark reads those whole at every restart, which the finding says.
MAX_FILE_BYTES = 64 * 2**20
#: How many of the newest batch files of each log are read at default depth besides those a
#: restart reads (enough to compare the latest batch's sources with the previous ones).
NEWEST_FEW = 3
UNREADABLE = "unreadable"

Content = bytes | StorageError


@dataclass(frozen=True)
class BatchLog(Generic[T]):
    """``offsets/``, ``commits/``, a ``sources/<n>/`` log or a sink's ``_spark_metadata/``.

    ``entries`` are the canonical batch files (and ``.compact`` files), sorted by id numerically.
    ``noncanonical`` lists names that parse as an id but are not how Spark names it (``007``).
    ``ignored_dirs`` are subdirectories, which Spark's listing skips.
    """

    path: str
    exists: bool
    entries: tuple[LogEntry[T], ...] = ()
    noncanonical: tuple[tuple[str, int], ...] = ()
    ignored_dirs: tuple[str, ...] = ()
    file_count: int = 0
    total_bytes: int = 0
    _by_id: dict[int, LogEntry[T]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {e.batch_id: e for e in self.entries})

    @property
    def ids(self) -> tuple[int, ...]:
        """Return the batch ids present, ascending."""
        return tuple(e.batch_id for e in self.entries)

    @property
    def latest(self) -> LogEntry[T] | None:
        """Return the entry with the largest batch id."""
        return self.entries[-1] if self.entries else None

    @property
    def latest_id(self) -> int | None:
        """Return the largest batch id, or None."""
        return self.entries[-1].batch_id if self.entries else None

    def get(self, batch_id: int) -> LogEntry[T] | None:
        """Return the entry for a batch id, or None."""
        return self._by_id.get(batch_id)

    def newest_below(self, batch_id: int) -> LogEntry[T] | None:
        """Return the entry with the largest id strictly below ``batch_id``."""
        ids = self.ids
        i = bisect.bisect_left(ids, batch_id)
        return self.entries[i - 1] if i > 0 else None

    def holes(self) -> tuple[tuple[int, int], ...]:
        """Return inclusive ranges of ids missing between the smallest and largest id."""
        out = []
        ids = self.ids
        for a, b in itertools.pairwise(ids):
            if b > a + 1:
                out.append((a + 1, b - 1))
        return tuple(out)

    def failures(self) -> tuple[ParseFailure, ...]:
        """Return the parse failures of the entries that were read."""
        return tuple(e.failure for e in self.entries if e.failure is not None)


@dataclass(frozen=True)
class FileRecord(Generic[T]):
    """A single non-batch file with its parse result (``metadata``, operator metadata, schema)."""

    file: FileStat
    record: T | None = None
    failure: ParseFailure | None = None

    @property
    def read(self) -> bool:
        """Return whether the file was read."""
        return self.record is not None or self.failure is not None


@dataclass(frozen=True)
class StateStore:
    """One state store instance: ``state/<op>/<partition>/[<store>/]``."""

    operator_id: int
    partition_id: int
    store_name: str
    path: str
    deltas: tuple[int, ...] = ()
    snapshots: tuple[int, ...] = ()
    zips: tuple[int, ...] = ()
    changelogs: tuple[int, ...] = ()
    zips_v2: tuple[tuple[int, str], ...] = ()
    changelogs_v2: tuple[tuple[int, str], ...] = ()
    sst_files: tuple[str, ...] = ()
    spark_checksums: int = 0
    file_count: int = 0
    total_bytes: int = 0
    zip_metadata: tuple[tuple[str, FileRecord[RocksDBCheckpointMetadata]], ...] = ()
    schema: FileRecord[StateSchemaHeader] | None = None
    #: heads of the data files read (those of the version the next batch loads)
    data_headers: tuple[tuple[str, FileRecord[StateDataHeader]], ...] = ()

    def unreadable_files(self) -> tuple[tuple[str, ParseFailure], ...]:
        """Return (path, failure) of every read zip or data file that cannot be loaded."""
        out: list[tuple[str, ParseFailure]] = []
        for _, zip_rec in self.zip_metadata:
            if zip_rec.failure is not None:
                out.append((zip_rec.file.path, zip_rec.failure))
        for _, head in self.data_headers:
            if head.failure is not None:
                out.append((head.file.path, head.failure))
        return tuple(out)

    @property
    def provider(self) -> str:
        """Return ``hdfs``, ``rocksdb`` or ``empty`` from the files present."""
        if self.zips or self.zips_v2 or self.changelogs or self.changelogs_v2 or self.sst_files:
            return "rocksdb"
        if self.deltas or self.snapshots:
            return "hdfs"
        return "empty"

    def versions(self) -> tuple[int, ...]:
        """Return every state version with a data file (delta, snapshot, zip or changelog)."""
        vs = set(self.deltas) | set(self.snapshots) | set(self.zips) | set(self.changelogs)
        vs |= {v for v, _ in self.zips_v2} | {v for v, _ in self.changelogs_v2}
        return tuple(sorted(vs))


@dataclass(frozen=True)
class StateOperator:
    """A stateful operator ``state/<op>/`` with its stores and metadata."""

    operator_id: int
    stores: tuple[StateStore, ...]
    partition_dirs: tuple[int, ...]
    metadata: FileRecord[OperatorStateMetadata] | None = None
    metadata_v2_batches: tuple[int, ...] = ()
    file_count: int = 0
    total_bytes: int = 0

    @property
    def store_names(self) -> tuple[str, ...]:
        """Return the store names, ``default`` first."""
        names = {s.store_name for s in self.stores}
        return tuple(sorted(names, key=lambda n: (n != "default", n)))

    @property
    def provider(self) -> str:
        """Return ``hdfs``, ``rocksdb``, ``mixed`` or ``empty``."""
        kinds = {s.provider for s in self.stores} - {"empty"}
        if not kinds:
            return "empty"
        return kinds.pop() if len(kinds) == 1 else "mixed"


@dataclass(frozen=True)
class StateDir:
    """``state/``: whether it exists, and its operators."""

    exists: bool
    operators: tuple[StateOperator, ...] = ()
    other_files: tuple[FileStat, ...] = ()

    @property
    def file_count(self) -> int:
        """Return the number of files under ``state/``."""
        return sum(o.file_count for o in self.operators) + len(self.other_files)


@dataclass(frozen=True)
class DebrisFile:
    """A file Spark ignores: a temp file, an orphan Hadoop ``.crc``, an unknown name."""

    file: FileStat
    kind: str
    target: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {"kind": self.kind, "target": self.target, **self.file.to_dict()}


@dataclass(frozen=True)
class SinkLog:
    """A file sink's ``_spark_metadata`` log, listed from ``--sink-path``."""

    url: str
    log: BatchLog[SinkLogBatch]
    default_compact_interval: int = 10
    #: the Hadoop ``.<name>.crc`` files in ``_spark_metadata`` (kept for the orphans: one where
    #: the sink writes next makes that write fail)
    crc_files: tuple[FileStat, ...] = ()

    @property
    def crcs(self) -> frozenset[str]:
        """Return the names of the Hadoop checksum files in the log directory."""
        return frozenset(f.path.rpartition("/")[2] for f in self.crc_files)

    @property
    def local(self) -> bool:
        """Return whether the sink is on a local file system (where Hadoop writes .crc files)."""
        return "://" not in self.url or self.url.startswith("file:")

    def entry_name(self, batch_id: int) -> str:
        """Return the file name the sink writes for a batch (``N`` or ``N.compact``)."""
        compact = (batch_id + 1) % self.compact_interval == 0
        return f"{batch_id}.compact" if compact else str(batch_id)

    def orphan_crc_for(self, batch_id: int) -> str | None:
        """Return the sink-relative path of an orphan .crc where the sink writes ``batch_id``, or
        None (the sink writes it only when the batch is above its newest entry)."""
        latest = self.log.latest_id
        if not self.local or (latest is not None and batch_id <= latest):
            return None
        name = self.entry_name(batch_id)
        return f"{SINK_LOG}/.{name}.crc" if f".{name}.crc" in self.crcs else None

    @property
    def compact_ids(self) -> tuple[int, ...]:
        """Return the ids of the ``.compact`` files present."""
        return tuple(e.batch_id for e in self.log.entries if e.compact)

    @property
    def compact_interval(self) -> int:
        """Return the compact interval as ``CompactibleFileStreamLog`` derives it from the files."""
        compacts = self.compact_ids
        if not compacts:
            return self.default_compact_interval
        return derive_compact_interval(self.default_compact_interval, compacts[-1])

    def missing_for_readers(self) -> tuple[str, ...]:
        """Return the files a reader of the latest batch needs but that are absent."""
        latest = self.log.latest_id
        if latest is None:
            return ()
        interval = self.compact_interval
        last_compact = ((latest + 1) // interval) * interval - 1
        present = {(e.batch_id, e.compact) for e in self.log.entries}
        missing = []
        if last_compact >= 0 and (last_compact, True) not in present:
            missing.append(f"{SINK_LOG}/{last_compact}.compact")
        # The batch files after the newest compact: fewer than ``interval`` of them, but an interval
        # derived from absurd ids can be huge, so only the first missing ones are named.
        batches = {b for b, compact in present if not compact}
        missing.extend(f"{SINK_LOG}/{b}" for b in missing_in(last_compact + 1, latest, batches))
        return tuple(missing)


#: Candidates :func:`derive_compact_interval` tries at most. Spark scans every number from the
#: default interval to half the newest compact id + 1 for a divisor; a real log finds one within a
#: few steps (ids are multiples of the interval minus one), only an absurd id (``2^62.compact``)
#: would scan for hours: past this many candidates the id + 1 itself is the interval, which is
#: where Spark's scan would end when it finds no divisor.
MAX_INTERVAL_CANDIDATES = 100_000


def derive_compact_interval(default_interval: int, latest_compact_id: int) -> int:
    """Return ``CompactibleFileStreamLog.deriveCompactInterval`` for the newest ``.compact`` id."""
    n = latest_compact_id + 1
    if n <= default_interval:
        return n
    if default_interval < n // 2:
        last = min(n // 2, default_interval + MAX_INTERVAL_CANDIDATES)
        for i in range(default_interval, last + 1):
            if n % i == 0:
                return i
        return n
    return n


@dataclass(frozen=True)
class CheckpointSnapshot:
    """Everything in one checkpoint, as read at one moment. Paths are relative to ``root``.

    ``hadoop_crcs`` are the Hadoop checksum files outside state store data directories (the ones
    a restart's writes can collide with); :meth:`crc_of` answers for any file.
    """

    root: str
    depth: str
    listing: Listing
    metadata: FileRecord[QueryMetadata] | None
    offsets: BatchLog[OffsetSeq]
    commits: BatchLog[CommitRecord]
    sources: tuple[BatchLog[SourceMetadataRecord], ...]
    state: StateDir
    debris: tuple[DebrisFile, ...]
    hadoop_crcs: frozenset[str]
    sink: SinkLog | None = None
    read_count: int = 0
    raw: Mapping[str, bytes] = field(default_factory=dict, compare=False, repr=False)
    sink_raw: Mapping[str, bytes] = field(default_factory=dict, compare=False, repr=False)

    @property
    def files(self) -> tuple[FileStat, ...]:
        """Return every file, sorted by path."""
        return self.listing.files

    @property
    def dirs(self) -> tuple[str, ...]:
        """Return every directory."""
        return self.listing.dirs

    @functools.cached_property
    def _by_path(self) -> dict[str, FileStat]:
        return {f.path: f for f in self.files}

    @property
    def query_id(self) -> str | None:
        """Return the query id from ``metadata``, if readable."""
        if self.metadata is not None and self.metadata.record is not None:
            return self.metadata.record.query_id
        return None

    @property
    def total_bytes(self) -> int:
        """Return the total size of all files."""
        return self.listing.total_bytes

    @property
    def file_count(self) -> int:
        """Return the number of files."""
        return self.listing.file_count

    def file(self, path: str) -> FileStat | None:
        """Return the stat of a file by relative path."""
        return self._by_path.get(path)

    def crc_of(self, path: str) -> str | None:
        """Return the Hadoop ``.crc`` side file of ``path`` if it is present."""
        crc = hadoop_crc_path(path)
        return crc if crc in self.hadoop_crcs or self.file(crc) is not None else None

    @property
    def is_checkpoint(self) -> bool:
        """Return whether this looks like a streaming checkpoint at all."""
        return (
            self.metadata is not None
            or self.offsets.exists
            or self.commits.exists
            or self.state.exists
            or bool(self.sources)
        )

    def fingerprint(self) -> str:
        """Return a sha256 over every file's (path, size, etag or mtime), directory by directory."""
        return self._fingerprint

    @functools.cached_property
    def _fingerprint(self) -> str:
        import hashlib  # only plans and applies fingerprint a snapshot; not a verdict's start-up

        h = hashlib.sha256()
        for d in self.listing.columns:
            # surrogatepass: a name no storage decoded cleanly still hashes (it never fails).
            h.update(f"{d.path}\0{len(d.names)}\0".encode("utf-8", "surrogatepass"))
            h.update("\0".join(d.names).encode("utf-8", "surrogatepass"))
            h.update(array.array("q", d.sizes).tobytes())
            if d.etags is not None and any(e is not None for e in d.etags):
                h.update("\0".join(e or "" for e in d.etags).encode("utf-8", "surrogatepass"))
            else:
                h.update(array.array("q", [-1 if m is None else m for m in d.mtimes_ms]).tobytes())
        return h.hexdigest()


# ------------------------------------------------------------------------------------------ reads


def _newest(ids: list[int], n: int) -> list[int]:
    return sorted(ids)[-n:] if n > 0 else []


def _expected_next_batch(layout: Layout) -> int:
    offsets = layout.offsets.batches
    commits = layout.commits.batches
    if not offsets:
        return 0
    latest = max(offsets)
    if commits and max(commits) == latest:
        return latest + 1
    return latest


#: Bytes read of a state data file (``.delta``, ``.snapshot``, ``.changelog``): only its compression
#: stream header is checked (8 bytes at most), and a snapshot can be gigabytes.
DATA_HEAD_BYTES = 64


def head_only(path: str) -> bool:
    """Return whether a planned read needs only the file's head (a state data file)."""
    if not path.startswith("state/"):
        return False
    parsed = parse_state_file_name(path.rpartition("/")[2])
    return parsed is not None and parsed.kind != "zip"


def _state_data_reads(store: StoreIndex, version: int) -> list[str]:
    """The data files of the version the next batch loads (its delta, snapshot or changelog): the
    files a crash mid-write or an overwrite damages, checked for their stream header."""
    return [f"{store.path}/{name}" for p, name in store.data if p.kind != "zip" and p.version == version]


def _rocksdb_zip_reads(store: StoreIndex, version: int) -> list[str]:
    zips = [(p.version, f"{store.path}/{name}") for p, name in store.data if p.kind == "zip"]
    if not zips:
        return []
    newest_at = max((v for v, _ in zips if v <= version), default=None)
    wanted = {newest_at, max(v for v, _ in zips)} - {None}
    return [path for v, path in zips if v in wanted]


def _log_reads(log: LogIndex, other: LogIndex, deep: bool) -> list[str]:
    """``offsets/`` or ``commits/``: the newest few, the one below the newest, and the id the
    other log ends at (a restart compares them)."""
    ids = sorted(log.batches)
    if deep:
        return [log.batches[i].path for i in ids]
    chosen = set(_newest(ids, NEWEST_FEW))
    if ids:
        latest = ids[-1]
        below = [i for i in ids[-NEWEST_FEW - 1 :] if i < latest]
        if below:
            chosen.add(below[-1])
        if other.batches:
            k = max(other.batches)
            if k in log.batches:
                chosen.add(k)
    return [log.batches[i].path for i in sorted(chosen)]


def _source_reads(src: LogIndex, deep: bool) -> list[str]:
    """``sources/<n>/``: batch 0 (initial offsets, rate start), the newest file and newest compact."""
    if deep:
        return [src.batches[i].path for i in sorted(src.batches)] + [
            src.compacts[i].path for i in sorted(src.compacts)
        ]
    paths = [src.batches[0].path] if 0 in src.batches else []
    for i in _newest(sorted(set(src.batches) | set(src.compacts)), 1):
        if i in src.batches and i != 0:
            paths.append(src.batches[i].path)
        if i in src.compacts:
            paths.append(src.compacts[i].path)
    if src.compacts:
        paths.append(src.compacts[max(src.compacts)].path)
    return paths


def _state_reads(layout: Layout) -> list[str]:
    """Operator metadata, schema headers, the RocksDB zips a restart loads and the heads of the
    data files of the version it loads."""
    load_version = _expected_next_batch(layout)
    paths: list[str] = []
    for op in layout.operators.values():
        if op.metadata is not None:
            paths.append(op.metadata.path)
        for store in op.stores.values():
            if store.schema is not None:
                paths.append(store.schema.path)
            paths.extend(_rocksdb_zip_reads(store, load_version))
            paths.extend(_state_data_reads(store, load_version))
    return paths


def _sink_reads(sink: LogIndex, deep: bool) -> list[str]:
    """``_spark_metadata/``: every file, or the newest batch file and the newest compact."""
    ids, compacts = sorted(sink.batches), sorted(sink.compacts)
    if not deep:
        ids, compacts = _newest(ids, 1), _newest(compacts, 1)
    return [sink.batches[i].path for i in ids] + [sink.compacts[i].path for i in compacts]


def plan_reads(
    layout: Layout, depth: str = DEFAULT_DEPTH, sink: LogIndex | None = None
) -> tuple[list[str], list[str]]:
    """Return (checkpoint paths, sink-log paths) to read for a snapshot of this depth.

    Default depth reads what a restart reads (``metadata``; ``offsets/L``, ``offsets/L-1`` or the
    newest file below ``L``; ``commits/K``; ``offsets/K`` for continuous mode), the newest few of
    each log, the newest files of each source log, operator metadata and schema headers, and for
    RocksDB the zips a restart would load. The count does not grow with retained batches.
    ``deep`` reads every batch file of every log.
    """
    deep = depth == DEEP
    paths = ["metadata"] if layout.metadata is not None else []
    paths += _log_reads(layout.offsets, layout.commits, deep)
    paths += _log_reads(layout.commits, layout.offsets, deep)
    for src in layout.sources.values():
        paths += _source_reads(src, deep)
    paths += _state_reads(layout)
    sink_paths = _sink_reads(sink, deep) if sink is not None else []
    return list(dict.fromkeys(paths)), list(dict.fromkeys(sink_paths))


def follow_up_reads(snapshot: CheckpointSnapshot) -> list[str]:
    """Return files worth reading after a first assembly: older RocksDB zips of a store whose
    newest zip names missing SSTs (Spark 4.3's auto snapshot repair falls back to them)."""
    paths: list[str] = []
    for op in snapshot.state.operators:
        for store in op.stores:
            present = set(store.sst_files)
            damaged = any(
                rec.record is not None and any(sst not in present for sst in rec.record.sst_files)
                for _, rec in store.zip_metadata
            )
            if not damaged:
                continue
            read = {name for name, _ in store.zip_metadata}
            paths.extend(f"{store.path}/{v}.zip" for v in store.zips if f"{v}.zip" not in read)
    return paths


# ------------------------------------------------------------------------------------------ assembly


def _parse(
    parser: Callable[..., T], f: FileStat, contents: Mapping[str, Content], prefix: str = ""
) -> tuple[T | None, ParseFailure | None]:
    key = f.path
    if key not in contents:
        return None, None
    data = contents[key]
    shown = prefix + f.path
    if isinstance(data, FileTooLargeError):
        return None, ParseFailure(shown, TOO_LARGE, data.reason)
    if isinstance(data, StorageError):
        return None, ParseFailure(shown, UNREADABLE, data.reason)
    try:
        return parser(data, path=shown), None
    except CheckpointParseError as exc:
        return None, ParseFailure(shown, exc.kind, exc.reason, exc.line, exc.version, exc.found)


def _log(
    index: LogIndex, parser: Callable[..., T], contents: Mapping[str, Content], prefix: str = ""
) -> BatchLog[T]:
    entries: list[LogEntry[T]] = []
    for bid, f in index.batches.items():
        rec, fail = _parse(parser, f, contents, prefix)
        entries.append(LogEntry(bid, f, rec, fail))
    for bid, f in index.compacts.items():
        rec, fail = _parse(parser, f, contents, prefix)
        entries.append(LogEntry(bid, f, rec, fail, compact=True))
    entries.sort(key=lambda e: (e.batch_id, e.compact))
    return BatchLog(
        path=index.path,
        exists=index.exists,
        entries=tuple(entries),
        noncanonical=tuple(sorted(index.noncanonical, key=lambda x: (x[1], x[0]))),
        ignored_dirs=tuple(sorted(index.ignored_dirs)),
        file_count=index.file_count,
        total_bytes=index.total_bytes,
    )


def _record(
    parser: Callable[..., T], f: FileStat | None, contents: Mapping[str, Content]
) -> FileRecord[T] | None:
    if f is None:
        return None
    rec, fail = _parse(parser, f, contents)
    return FileRecord(f, rec, fail)


def _store(store: StoreIndex, contents: Mapping[str, Content]) -> StateStore:
    kinds: dict[str, list[int]] = {"delta": [], "snapshot": [], "zip": [], "changelog": []}
    v2: dict[str, list[tuple[int, str]]] = {"zip": [], "changelog": []}
    zip_meta = []
    headers = []
    for parsed, name in store.data:
        if parsed.unique_id is None:
            kinds[parsed.kind].append(parsed.version)
        else:
            v2[parsed.kind].append((parsed.version, parsed.unique_id))
        path = f"{store.path}/{name}"
        if path not in contents:
            continue
        if parsed.kind == "zip":
            rec = _record(parse_rocksdb_zip_metadata, FileStat(path, 0), contents)
            if rec is not None:
                zip_meta.append((name, rec))
        else:
            head = _record(parse_state_data_header, FileStat(path, 0), contents)
            if head is not None:
                headers.append((name, head))
    return StateStore(
        operator_id=store.operator_id,
        partition_id=store.partition_id,
        store_name=store.store_name,
        path=store.path,
        deltas=tuple(sorted(kinds["delta"])),
        snapshots=tuple(sorted(kinds["snapshot"])),
        zips=tuple(sorted(kinds["zip"])),
        changelogs=tuple(sorted(kinds["changelog"])),
        zips_v2=tuple(sorted(v2["zip"])),
        changelogs_v2=tuple(sorted(v2["changelog"])),
        sst_files=tuple(sorted(f.name for f in store.ssts)),
        spark_checksums=store.spark_checksums,
        file_count=store.file_count,
        total_bytes=store.total_bytes,
        zip_metadata=tuple(sorted(zip_meta, key=lambda x: x[0])),
        schema=_record(parse_schema_header, store.schema, contents),
        data_headers=tuple(sorted(headers, key=lambda x: x[0])),
    )


def _debris(layout: Layout) -> tuple[DebrisFile, ...]:
    out = [DebrisFile(f, "temp", target) for f, target in layout.temps]
    out.extend(DebrisFile(f, "orphan-crc", target) for f, target in orphan_crcs(layout))
    for log in (layout.offsets, layout.commits, *layout.sources.values()):
        out.extend(DebrisFile(f, "unknown") for f in log.other)
    out.extend(DebrisFile(f, "ignored-dir-entry") for f in layout.ignored)
    out.extend(DebrisFile(f, "unknown") for f in layout.unknown)
    for op in layout.operators.values():
        out.extend(DebrisFile(f, "unknown") for f in op.other)
        for store in op.stores.values():
            out.extend(DebrisFile(f, "unknown") for f in store.other)
    out.extend(DebrisFile(f, "unknown") for f in layout.state_other)
    return tuple(sorted(out, key=lambda d: d.file.path))


def assemble_snapshot(
    root: str,
    layout: Layout,
    contents: Mapping[str, Content],
    *,
    depth: str = DEFAULT_DEPTH,
    sink: tuple[str, LogIndex, Mapping[str, Content]] | None = None,
) -> CheckpointSnapshot:
    """Parse the read files and combine everything into one :class:`CheckpointSnapshot`."""
    operators = []
    for op_id in sorted(layout.operators):
        op = layout.operators[op_id]
        stores = tuple(
            _store(op.stores[k], contents)
            for k in sorted(op.stores, key=lambda k: (k[1] != "default", k[1], k[0]))
        )
        operators.append(
            StateOperator(
                operator_id=op_id,
                stores=tuple(sorted(stores, key=lambda s: (s.partition_id, s.store_name))),
                partition_dirs=tuple(sorted(op.partition_dirs)),
                metadata=_record(parse_operator_metadata, op.metadata, contents),
                metadata_v2_batches=tuple(sorted(op.metadata_v2)),
                file_count=op.file_count,
                total_bytes=op.total_bytes,
            )
        )
    sink_log = None
    if sink is not None:
        url, index, sink_contents = sink
        sink_log = SinkLog(
            url,
            _log(index, parse_sink_log, sink_contents, prefix=SINK_LOG + "/"),
            crc_files=tuple(sorted(index.crcs, key=lambda f: f.path)),
        )
    sources = tuple(
        _log(layout.sources[name], parse_source_metadata, contents)
        for name in sorted(layout.sources, key=lambda n: (not n.isdigit(), int(n) if n.isdigit() else 0, n))
    )
    return CheckpointSnapshot(
        root=root,
        depth=depth,
        listing=layout.listing,
        metadata=_record(parse_query_metadata, layout.metadata, contents),
        offsets=_log(layout.offsets, parse_offsets, contents),
        commits=_log(layout.commits, parse_commit, contents),
        sources=sources,
        state=StateDir(
            exists=layout.state_exists,
            operators=tuple(operators),
            other_files=tuple(layout.state_other),
        ),
        debris=_debris(layout),
        hadoop_crcs=frozenset(layout.hadoop_crcs),
        sink=sink_log,
        read_count=len(contents) + (len(sink[2]) if sink else 0),
        raw={k: v for k, v in contents.items() if isinstance(v, bytes)},
        sink_raw={k: v for k, v in sink[2].items() if isinstance(v, bytes)} if sink else {},
    )


def simulate_changes(
    snapshot: CheckpointSnapshot,
    *,
    removed: Iterable[tuple[Area, str]] = (),
    added: Mapping[tuple[Area, str], bytes] | None = None,
) -> CheckpointSnapshot:
    """Return the snapshot as it would be after removing and adding files. Pure.

    ``removed``/``added`` are keyed by (area, path): area ``checkpoint`` (path relative to the root)
    or ``sink`` (path relative to the sink root, ``_spark_metadata/<id>``). Used to compute the
    diagnosis a repair plan expects, without touching storage.
    """
    added = dict(added or {})
    gone = {p for a, p in removed if a == Area.CHECKPOINT}
    new_files = {p: d for (a, p), d in added.items() if a == Area.CHECKPOINT}
    files = [f for f in snapshot.files if f.path not in gone and f.path not in new_files]
    files += [FileStat(p, len(d), None) for p, d in new_files.items()]
    files.sort(key=lambda f: f.path)
    dirs = set(snapshot.dirs) - gone  # a removed directory (a plan's remove-dir step) is gone too
    for p in new_files:
        parent = p.rpartition("/")[0]
        while parent:
            dirs.add(parent)
            parent = parent.rpartition("/")[0]
    contents: dict[str, Content] = {k: v for k, v in snapshot.raw.items() if k not in gone}
    contents.update(new_files)
    layout = index_listing(Listing(tuple(files), tuple(sorted(dirs))))
    sink_arg = None
    if snapshot.sink is not None:
        prefix = SINK_LOG + "/"
        sink_gone = {p[len(prefix) :] for a, p in removed if a == Area.SINK}
        sink_new = {p[len(prefix) :]: d for (a, p), d in added.items() if a == Area.SINK}
        sink_files = [e.file for e in snapshot.sink.log.entries if e.file.path not in sink_gone]
        sink_files += [f for f in snapshot.sink.crc_files if f.path not in sink_gone]
        sink_files += [FileStat(p, len(d), None) for p, d in sink_new.items()]
        sink_contents: dict[str, Content] = {k: v for k, v in snapshot.sink_raw.items() if k not in sink_gone}
        sink_contents.update(sink_new)
        index = index_sink_listing(Listing(tuple(sorted(sink_files, key=lambda f: f.path)), ()))
        index.exists = snapshot.sink.log.exists
        sink_arg = (snapshot.sink.url, index, sink_contents)
    return assemble_snapshot(snapshot.root, layout, contents, depth=snapshot.depth, sink=sink_arg)
