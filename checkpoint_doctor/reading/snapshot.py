"""The checkpoint snapshot: one immutable value for everything in a checkpoint, and its parts. Pure.

Built in three steps so that I/O stays at the edge (:mod:`checkpoint_doctor.reading.pipeline` does the I/O):
``index_listing`` (names) -> :func:`~checkpoint_doctor.reading.reads.plan_reads` (which files to read
at this depth) -> read -> :func:`~checkpoint_doctor.reading.assembly.assemble_snapshot` (parse and
combine). A damaged file is recorded as a :class:`~checkpoint_doctor.model.ParseFailure` on its
entry; nothing here raises for bad content.
"""

from __future__ import annotations

import array
import bisect
import functools
import itertools
from collections.abc import Mapping
from dataclasses import field
from typing import Any, Generic, TypeVar

from checkpoint_doctor.errors import StorageError
from checkpoint_doctor.ids import missing_in
from checkpoint_doctor.model import (
    ByteCount,
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
    StateSchemaV3,
)
from checkpoint_doctor.reading.layout import (
    SINK_LOG,
    hadoop_crc_path,
)
from checkpoint_doctor.valueclasses import frozen

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


class FileHead(bytes):
    """What is kept of a log file far larger than any real log: the part its verdict depends on,
    not its content (issue 31: 40 sparse, NUL-filled 63 MB files).

    Either its first line, when that is no version line (``v<N>``; ``reading.pipeline.judge_head``):
    Spark fails there (``HDFSMetadataLog.validateVersion``, called by ``OffsetSeqLog.deserialize``,
    ``CommitLog.deserialize`` and ``CompactibleFileStreamLog.deserialize`` before any other line is
    read), and the rest is never read. Or the file without most of the run of NULs it ends in
    (``reading.pipeline.abridge_nuls``). ``size`` is the file's listed size. It is bytes, so the
    snapshot keeps it in ``raw`` and parses it; a repair must never write or hash it as the file's
    content (:func:`whole_content`).
    """

    size: int

    def __new__(cls, data: bytes, size: int) -> FileHead:
        head = super().__new__(cls, data)
        head.size = size
        return head

    def __reduce__(self) -> tuple[type[FileHead], tuple[bytes, int]]:
        # An audit's workers send snapshots between processes: keep the type and the size.
        return (FileHead, (bytes(self), self.size))


Content = bytes | StorageError


def whole_content(raw: Mapping[str, bytes], path: str) -> bytes | None:
    """Return the bytes read of ``path`` when they are the whole file, else None (not read, or a
    :class:`FileHead`): what a repair may copy, rewrite or hash."""
    data = raw.get(path)
    return None if isinstance(data, FileHead) else data


@frozen
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
    _ids: tuple[int, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {e.batch_id: e for e in self.entries})
        # Asked several times by every cell of a restart matrix (bench: matrix): derived once.
        object.__setattr__(self, "_ids", tuple([e.batch_id for e in self.entries]))

    @property
    def ids(self) -> tuple[int, ...]:
        """Return the batch ids present, ascending."""
        return self._ids

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


@frozen
class FileRecord(Generic[T]):
    """A single non-batch file with its parse result (``metadata``, operator metadata, schema)."""

    file: FileStat
    record: T | None = None
    failure: ParseFailure | None = None

    @property
    def read(self) -> bool:
        """Return whether the file was read."""
        return self.record is not None or self.failure is not None


@frozen
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
    #: The size of its files, summed when first asked for (see :attr:`total_bytes`).
    listed_bytes: ByteCount = field(default_factory=ByteCount)
    zip_metadata: tuple[tuple[str, FileRecord[RocksDBCheckpointMetadata]], ...] = ()
    schema: FileRecord[StateSchemaHeader] | None = None
    #: heads of the data files read (those of the version the next batch loads)
    data_headers: tuple[tuple[str, FileRecord[StateDataHeader]], ...] = ()

    @property
    def total_bytes(self) -> int:
        """Return the size of the store's files (its directory is listed without them)."""
        return self.listed_bytes.value

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


@frozen
class StateOperator:
    """A stateful operator ``state/<op>/`` with its stores and metadata."""

    operator_id: int
    stores: tuple[StateStore, ...]
    partition_dirs: tuple[int, ...]
    metadata: FileRecord[OperatorStateMetadata] | None = None
    metadata_v2_batches: tuple[int, ...] = ()
    #: The newest ``_metadata/v2/<batch>`` (what a restart's operator-metadata read finds).
    metadata_v2: FileRecord[OperatorStateMetadata] | None = None
    #: Every ``_stateSchema/<store>/<batch>_<uuid>`` file (schema v3), parsed.
    schema_files: tuple[FileRecord[StateSchemaV3], ...] = ()
    file_count: int = 0
    #: The size of its files, summed when first asked for (see :attr:`total_bytes`).
    listed_bytes: ByteCount = field(default_factory=ByteCount)

    @property
    def total_bytes(self) -> int:
        """Return the size of the operator's files (its directories are listed without them)."""
        return self.listed_bytes.value

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


@frozen
class StateDir:
    """``state/``: whether it exists, and its operators."""

    exists: bool
    operators: tuple[StateOperator, ...] = ()
    other_files: tuple[FileStat, ...] = ()

    @property
    def file_count(self) -> int:
        """Return the number of files under ``state/``."""
        return sum(o.file_count for o in self.operators) + len(self.other_files)


@frozen
class DebrisFile:
    """A file Spark ignores: a temp file, an orphan Hadoop ``.crc``, an unknown name."""

    file: FileStat
    kind: str
    target: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {"kind": self.kind, "target": self.target, **self.file.to_dict()}


@frozen
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


@frozen
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
    #: Files outside the checkpoint that a restart reads (a transformWithState operator's schema
    #: files recorded by absolute path, diagnosis.state.tws), with whether each exists (None: not
    #: looked up).
    outside_files: tuple[tuple[str, bool | None], ...] = ()
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
