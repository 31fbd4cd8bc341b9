"""Immutable values for what is inside a checkpoint: files, parse failures, and parsed log records.

Field names are snake_case with units; the Spark JSON key each comes from is named in the docstring.
Every value has ``to_dict()`` returning JSON-safe data. This module imports only the standard
library (nothing from the package) and does no I/O of its own: a directory listed without its files'
sizes and mtimes (:meth:`DirEntries.unstatted`) calls the function its storage gave when they are
first asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Generic, TypeAlias, TypeVar

from checkpoint_doctor.valueclasses import frozen

T = TypeVar("T")

#: A JSON object as a writer dumps it: what ``to_dict``/``to_json`` return. Values travel typed up
#: to the writer; a dict of this type is made only to be written (or compared with what was).
JsonObject: TypeAlias = dict[str, Any]


@frozen(slots=True)
class FileStat:
    """One listed file: ``path`` relative to the listed root, POSIX style; ``mtime_ms`` epoch millis."""

    path: str
    size: int
    mtime_ms: int | None = None
    etag: str | None = None

    @property
    def name(self) -> str:
        """Return the last path component."""
        return self.path.rpartition("/")[2]

    @property
    def parent(self) -> str:
        """Return the relative directory holding the file ('' for the root)."""
        return self.path.rpartition("/")[0]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        out: dict[str, Any] = {"path": self.path, "size": self.size, "mtime_ms": self.mtime_ms}
        if self.etag is not None:
            out["etag"] = self.etag
        return out


#: A file's (size, mtime in epoch millis), as a directory listed without them gets it.
Stat: TypeAlias = tuple[int, int | None]
#: Stats the files at these indexes of a directory listed without their sizes and mtimes.
StatFiles: TypeAlias = Callable[[Sequence[int]], list[Stat]]


class _Unstatted:
    """The sizes and mtimes of a directory listed without them, fetched when first asked for
    (shared by the slices of a listing that hold the directory). A file gone since the listing has
    size 0 and no mtime: the listing named it, and reading it says it is gone."""

    __slots__ = ("columns", "count", "one", "stat_files")

    def __init__(self, stat_files: StatFiles, count: int, known: dict[int, Stat]) -> None:
        self.stat_files = stat_files
        self.count = count
        #: (sizes, mtimes) once every file was stat'ed
        self.columns: tuple[tuple[int, ...], tuple[int | None, ...]] | None = None
        #: the files stat'ed before that, one by one or while listed (one answer per file)
        self.one = known

    def file(self, index: int) -> Stat:
        columns = self.columns
        if columns is not None:
            return columns[0][index], columns[1][index]
        found = self.one.get(index)
        if found is None:
            found = self.one[index] = self.stat_files((index,))[0]
        return found

    def some(self, indexes: Sequence[int]) -> list[Stat]:
        columns = self.columns
        if columns is not None:
            return [(columns[0][i], columns[1][i]) for i in indexes]
        one = self.one
        if len(one) <= 1 and (not one or next(iter(one)) not in indexes):
            # The common case (the live-writer check asking a state directory's visible files):
            # none of them stat'ed before, at most the listing's probe elsewhere: stat them in
            # order, without an index look-up per file (bench: audit, field fleet).
            stats = self.stat_files(indexes)
            one.update(zip(indexes, stats, strict=True))
            return stats
        missing = [i for i in indexes if i not in one]
        if missing:
            one.update(zip(missing, self.stat_files(missing), strict=True))
        return [one[i] for i in indexes]

    def all(self) -> tuple[tuple[int, ...], tuple[int | None, ...]]:
        columns = self.columns
        if columns is None:
            one, count = self.one, self.count
            if not one or (len(one) == 1 and 0 in one):
                # The common case (every file of a directory asked at once, ``inspect --deep``):
                # nothing, or only the listing's probe (the first file), stat'ed before: the
                # rows in order without an index per file (bench: inspect).
                rows = [one[0], *self.stat_files(range(1, count))] if one else self.stat_files(range(count))
            else:
                missing = [i for i in range(count) if i not in one]
                if missing:
                    one = {**one, **dict(zip(missing, self.stat_files(missing), strict=True))}
                rows = [one[i] for i in range(count)]
            sizes, mtimes = zip(*rows, strict=True) if rows else ((), ())
            columns = self.columns = (sizes, mtimes)
        return columns


class DirEntries:
    """The files directly in one directory, as columns sorted by name (``path`` '' is the root).

    Fast local walks produce listings in this form, so that indexing and fingerprinting work per
    directory instead of building an object per file (a state store partition holds hundreds of
    files whose roles depend only on their names).

    A directory may be listed without its files' sizes and mtimes (:meth:`unstatted`: a local walk
    reads names only, a stat costs three times a name): they are fetched, once, when ``sizes``,
    ``mtimes_ms`` or :meth:`stat` first asks. Most of an audited tree is state store and sink data
    files whose names say all the diagnosis needs (bench: audit). Immutable, compared and hashed
    as the tuple of its fields.
    """

    __slots__ = ("_columns", "_unstatted", "etags", "names", "path")

    path: str
    names: tuple[str, ...]
    etags: tuple[str | None, ...] | None
    _columns: tuple[tuple[int, ...], tuple[int | None, ...]] | None
    _unstatted: _Unstatted | None

    def __init__(
        self,
        path: str,
        names: tuple[str, ...],
        sizes: tuple[int, ...],
        mtimes_ms: tuple[int | None, ...],
        etags: tuple[str | None, ...] | None = None,
    ) -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "etags", etags)
        object.__setattr__(self, "_columns", (sizes, mtimes_ms))
        object.__setattr__(self, "_unstatted", None)

    @classmethod
    def unstatted(
        cls, path: str, names: tuple[str, ...], stat_files: StatFiles, known: dict[int, Stat] | None = None
    ) -> DirEntries:
        """Return the entries of a directory whose sizes and mtimes ``stat_files(indexes)`` gives
        when first asked for (``known``: those of the files already stat'ed, by index)."""
        # Made field by field (one per directory of a listing: a fleet's thousands).
        out = object.__new__(cls)
        setattr_ = object.__setattr__
        setattr_(out, "path", path)
        setattr_(out, "names", names)
        setattr_(out, "etags", None)
        setattr_(out, "_columns", None)
        setattr_(out, "_unstatted", _Unstatted(stat_files, len(names), dict(known) if known else {}))
        return out

    def rerooted(self, path: str) -> DirEntries:
        """Return the same files under another directory path (a slice of a listing); the sizes
        and mtimes of an unstatted directory are still fetched once for both."""
        out = DirEntries(path, self.names, (), (), self.etags)
        object.__setattr__(out, "_columns", self._columns)
        object.__setattr__(out, "_unstatted", self._unstatted)
        return out

    def _all(self) -> tuple[tuple[int, ...], tuple[int | None, ...]]:
        columns = self._columns
        if columns is None:
            assert self._unstatted is not None
            columns = self._unstatted.all()
            object.__setattr__(self, "_columns", columns)
        return columns

    @property
    def sizes(self) -> tuple[int, ...]:
        """Return the size of each file."""
        return self._all()[0]

    @property
    def mtimes_ms(self) -> tuple[int | None, ...]:
        """Return the modification time of each file, epoch millis (None: not known)."""
        return self._all()[1]

    def mtimes_of(self, indexes: Sequence[int]) -> list[int | None]:
        """Return the modification times of the files at ``indexes`` (an unstatted directory stats
        those files only, at once: the live-writer check asks the visible files, not their .crc
        side files, which are half of a state store's)."""
        unstatted = self._unstatted
        if self._columns is None and unstatted is not None:
            return [m for _, m in unstatted.some(indexes)]
        mtimes = self._all()[1]
        return [mtimes[i] for i in indexes]

    def full_path(self, name: str) -> str:
        """Return the path of a file of this directory, relative to the listed root."""
        return f"{self.path}/{name}" if self.path else name

    def stat(self, index: int) -> FileStat:
        """Return the FileStat of the ``index``-th file (an unstatted directory stats that file
        alone)."""
        etag = self.etags[index] if self.etags is not None else None
        columns = self._columns
        if columns is None:
            assert self._unstatted is not None
            size, mtime = self._unstatted.file(index)
        else:
            size, mtime = columns[0][index], columns[1][index]
        return FileStat(self.full_path(self.names[index]), size, mtime, etag)

    def _key(self) -> tuple[Any, ...]:
        return (self.path, self.names, self.sizes, self.mtimes_ms, self.etags)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DirEntries):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"DirEntries(path={self.path!r}, names={self.names!r}, sizes={self.sizes!r}, "
            f"mtimes_ms={self.mtimes_ms!r}, etags={self.etags!r})"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"DirEntries is immutable: cannot assign {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"DirEntries is immutable: cannot delete {name}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled (an audit task sent to a Spark executor) with its stats: the executor may not
        # see this machine's disk.
        return DirEntries, (self.path, self.names, self.sizes, self.mtimes_ms, self.etags)


class ByteCount:
    """A total size, summed when first asked for: files counted as they were indexed, plus whole
    directories less some of their files (a state store directory is listed without its files'
    sizes, and only ``inspect`` shows its bytes). Added to while built, then only read; compared
    and hashed as its value."""

    __slots__ = ("_dirs", "_known", "_value")

    def __init__(self, known: int = 0) -> None:
        self._known = known
        self._dirs: list[tuple[DirEntries, tuple[int, ...]]] = []
        self._value: int | None = None

    def add(self, size: int) -> None:
        """Count one file's size."""
        self._known += size
        self._value = None

    def add_dir(self, d: DirEntries, skipped: tuple[int, ...] = ()) -> None:
        """Count the files of a directory, less the ``skipped`` indexes (sized when first asked)."""
        self._dirs.append((d, skipped))
        self._value = None

    @property
    def value(self) -> int:
        """Return the total."""
        value = self._value
        if value is None:
            value = self._known
            for d, skipped in self._dirs:
                sizes = d.sizes
                value += sum(sizes) - sum(map(sizes.__getitem__, skipped))
            self._value = value
        return value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ByteCount):
            return self.value == other.value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"ByteCount({self.value})"


class Listing:
    """A recursive listing relative to its root: every file and every directory.

    Built from ``files`` (any order; FileStat objects) or from ``columns`` (DirEntries per
    directory); each form is derived from the other on first use and cached. ``files`` is sorted
    by path, ``columns`` by directory path. Immutable by convention: nothing writes after init.

    ``unlisted`` names the directories below the root that could not be listed, with the ``errno``
    of the failure (a directory without read permission): the listing is complete except below them.
    """

    __slots__ = ("_columns", "_files", "dirs", "unlisted")

    def __init__(
        self,
        files: tuple[FileStat, ...] | None = None,
        dirs: tuple[str, ...] = (),
        *,
        columns: tuple[DirEntries, ...] | None = None,
        unlisted: tuple[tuple[str, int], ...] = (),
    ) -> None:
        self.dirs = tuple(dirs)
        self.unlisted = tuple(unlisted)
        self._files = tuple(sorted(files, key=lambda f: f.path)) if files is not None else None
        self._columns = columns
        if files is None and columns is None:
            self._files = ()

    @property
    def files(self) -> tuple[FileStat, ...]:
        """Return every file, sorted by path."""
        if self._files is None:
            assert self._columns is not None
            out = []
            for d in self._columns:
                full, etags = d.full_path, d.etags
                # Every file: an unstatted directory is stat'ed at once, not file by file.
                for i, (name, size, mtime) in enumerate(zip(d.names, d.sizes, d.mtimes_ms, strict=True)):
                    out.append(FileStat(full(name), size, mtime, etags[i] if etags is not None else None))
            out.sort(key=lambda f: f.path)
            self._files = tuple(out)
        return self._files

    @property
    def columns(self) -> tuple[DirEntries, ...]:
        """Return the files grouped per directory, as columns."""
        if self._columns is None:
            groups: dict[str, list[FileStat]] = {}
            for f in self.files:
                groups.setdefault(f.parent, []).append(f)
            cols = []
            for parent in sorted(groups):
                members = sorted(groups[parent], key=lambda f: f.name)
                etags = tuple(f.etag for f in members)
                cols.append(
                    DirEntries(
                        parent,
                        tuple(f.name for f in members),
                        tuple(f.size for f in members),
                        tuple(f.mtime_ms for f in members),
                        etags if any(e is not None for e in etags) else None,
                    )
                )
            self._columns = tuple(cols)
        return self._columns

    @property
    def file_count(self) -> int:
        """Return the number of files."""
        if self._files is not None:
            return len(self._files)
        return sum(len(d.names) for d in self.columns)

    @property
    def total_bytes(self) -> int:
        """Return the total size of all files."""
        return sum(sum(d.sizes) for d in self.columns)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Listing):
            return NotImplemented
        return self.dirs == other.dirs and self.files == other.files and self.unlisted == other.unlisted

    __hash__ = None  # type: ignore[assignment]

    def __bool__(self) -> bool:
        return bool(self.dirs) or self.file_count > 0

    def __repr__(self) -> str:
        return f"Listing({self.file_count} files, {len(self.dirs)} dirs)"


@frozen(slots=True)
class ParseFailure:
    """Why a file could not be read as what its name says it is.

    ``kind`` is one of the stable values in :mod:`checkpoint_doctor.parsing.text` (``empty``,
    ``header-only``, ``malformed-header``, ``unsupported-version``, ``bad-json``, ``truncated-json``,
    ``invalid-content``, ``not-text``, ``java-serialized``); ``version`` is set for
    ``unsupported-version``.
    """

    path: str
    kind: str
    reason: str
    line: int | None = None
    version: int | None = None
    #: the offending text where there is one (a malformed version line), as Spark quotes it
    found: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "path": self.path,
            "kind": self.kind,
            "reason": self.reason,
            "line": self.line,
            "version": self.version,
        }


@frozen
class LogEntry(Generic[T]):
    """A batch file of a metadata log: listed always, parsed when the snapshot depth asked for it.

    Exactly one of ``record`` and ``failure`` is set when ``read`` is true; neither when it is false.
    ``compact`` marks ``<id>.compact`` files of compactible logs (file source and file sink).
    """

    batch_id: int
    file: FileStat
    record: T | None = None
    failure: ParseFailure | None = None
    compact: bool = False

    @property
    def read(self) -> bool:
        """Return whether the file was read and parsed."""
        return self.record is not None or self.failure is not None

    @property
    def ok(self) -> bool:
        """Return whether the file was read and parsed without error."""
        return self.record is not None


# --------------------------------------------------------------------------------------- source offsets


@frozen
class KafkaRetention:
    """A topic's retention settings as the broker describes them (``DescribeConfigs``).

    ``retention_ms`` and ``retention_bytes`` are -1 when unlimited; ``cleanup_policy`` is the
    topic's ``cleanup.policy`` (``delete``, ``compact`` or ``compact,delete``).
    """

    topic: str
    retention_ms: int
    retention_bytes: int
    cleanup_policy: str = "delete"


@frozen
class KafkaLive:
    """The topics' positions as a broker gave them (hashable: it rides in ``DiagnoseOptions``).

    ``topics`` holds ``(topic, ((partition, earliest, latest), ...))``, or ``(topic, None)`` for a
    topic the broker does not list; ``bootstrap`` is the address they were read from.
    ``retention`` holds the topics' retention settings and ``heads`` the timestamp of the record at
    each checkpoint position still held, ``(topic, partition, offset, timestamp_ms)`` (timestamp
    None when the record could not be fetched in time); both empty when not read.
    """

    bootstrap: str
    topics: tuple[tuple[str, tuple[tuple[int, int, int], ...] | None], ...]
    retention: tuple[KafkaRetention, ...] = ()
    heads: tuple[tuple[str, int, int, int | None], ...] = ()
    #: The timestamp of the record just below each checkpoint position still held (offset
    #: position - 1, the last record the checkpoint says it read), ``(topic, partition, offset,
    #: timestamp_ms)``: a record appended after the batch that planned the position proves the
    #: partition's log was replaced (issue 32 item 3). Empty when not read.
    below: tuple[tuple[str, int, int, int | None], ...] = ()

    @property
    def live(self) -> dict[str, dict[int, tuple[int, int]] | None]:
        """Return the positions as ``diagnosis.sources.kafka_positions.predict`` takes them."""
        return {
            t: None if parts is None else {p: (lo, hi) for p, lo, hi in parts} for t, parts in self.topics
        }


#: Kafka's limit on a topic name (``org.apache.kafka.common.internals.Topic.MAX_NAME_LENGTH``).
MAX_TOPIC_NAME = 249
_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def legal_topic(name: str) -> bool:
    """Whether Kafka accepts ``name`` as a topic (``Topic.validate``: 1 to 249 of ``[a-zA-Z0-9._-]``,
    not ``.`` or ``..``); no broker holds a topic of any other name."""
    return 0 < len(name) <= MAX_TOPIC_NAME and name not in (".", "..") and set(name) <= _TOPIC_CHARS


@frozen
class KafkaOffset:
    """``KafkaSourceOffset``: ``{"topic": {"partition": offset}}``, the next offset to read per partition."""

    type: ClassVar[str] = "kafka"
    partitions: tuple[tuple[str, int, int], ...]

    def topic_partitions(self) -> frozenset[tuple[str, int]]:
        """Return the set of (topic, partition) pairs."""
        return frozenset((t, p) for t, p, _ in self.partitions)

    def describe(self) -> str:
        """Return a short human-readable form."""
        topics: dict[str, list[str]] = {}
        for topic, part, off in self.partitions:
            topics.setdefault(topic, []).append(f"{part}:{off}")
        return "; ".join(f"{t}[{', '.join(v)}]" for t, v in topics.items())

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        topics: dict[str, dict[str, int]] = {}
        for topic, part, off in self.partitions:
            topics.setdefault(topic, {})[str(part)] = off
        return {"type": self.type, "topics": topics}


@frozen
class FileSourceOffset:
    """``FileStreamSourceOffset``: ``{"logOffset": n}``, the id of the entry in ``sources/<n>/``."""

    type: ClassVar[str] = "file"
    log_offset: int

    def describe(self) -> str:
        """Return a short human-readable form."""
        return f"logOffset {self.log_offset}"

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {"type": self.type, "log_offset": self.log_offset}


@frozen
class RatePerMicroBatchOffset:
    """``RatePerMicroBatchStreamOffset``: ``{"offset": rows, "timestamp": ms}``."""

    type: ClassVar[str] = "rate-micro-batch"
    offset: int
    timestamp_ms: int

    def describe(self) -> str:
        """Return a short human-readable form."""
        return f"offset {self.offset}, timestamp {self.timestamp_ms}"

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {"type": self.type, "offset": self.offset, "timestamp_ms": self.timestamp_ms}


@frozen
class LongOffset:
    """``LongOffset``: a bare number (rate: seconds since start; socket and memory: a row index)."""

    type: ClassVar[str] = "long"
    value: int

    def describe(self) -> str:
        """Return a short human-readable form."""
        return str(self.value)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {"type": self.type, "value": self.value}


@frozen
class DeltaOffset:
    """Delta Lake ``DeltaSourceOffset``: table id (``reservoirId``), version and file index."""

    type: ClassVar[str] = "delta"
    reservoir_id: str
    reservoir_version: int
    index: int
    source_version: int
    is_starting_version: bool

    def describe(self) -> str:
        """Return a short human-readable form."""
        return f"table {self.reservoir_id} version {self.reservoir_version} index {self.index}"

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "type": self.type,
            "reservoir_id": self.reservoir_id,
            "reservoir_version": self.reservoir_version,
            "index": self.index,
            "source_version": self.source_version,
            "is_starting_version": self.is_starting_version,
        }


@frozen
class ContinuousRateOffset:
    """Continuous ``RateStreamOffset``: partition -> (last value, run time ms)."""

    type: ClassVar[str] = "continuous-rate"
    partitions: tuple[tuple[int, int, int], ...]

    def describe(self) -> str:
        """Return a short human-readable form."""
        return ", ".join(f"p{p}={v}" for p, v, _ in self.partitions)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "type": self.type,
            "partitions": {str(p): {"value": v, "run_time_ms": t} for p, v, t in self.partitions},
        }


DecodedOffset = (
    KafkaOffset | FileSourceOffset | RatePerMicroBatchOffset | LongOffset | DeltaOffset | ContinuousRateOffset
)


@frozen
class SourceOffset:
    """One source line of an offsets file.

    ``raw`` is the offset JSON exactly as written (None for ``-``, "no offset yet"); ``name`` is the
    source name of a v2 (``name:offset``) line; ``decoded`` is set when the format is recognised.
    """

    index: int
    raw: str | None
    name: str | None = None
    decoded: DecodedOffset | None = None

    @property
    def source_type(self) -> str:
        """Return the recognised source type, 'none' for '-', or 'unknown'."""
        if self.raw is None:
            return "none"
        return self.decoded.type if self.decoded is not None else "unknown"

    def describe(self) -> str:
        """Return a short human-readable form."""
        if self.raw is None:
            return "- (no offset yet)"
        return self.decoded.describe() if self.decoded is not None else self.raw

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "index": self.index,
            "name": self.name,
            "raw": self.raw,
            "decoded": self.decoded.to_dict() if self.decoded is not None else None,
        }


# --------------------------------------------------------------------------------------- log records


@frozen
class OffsetSeqMetadata:
    """Line 2 of an offsets file (``OffsetSeqMetadata``; v2 adds ``sourceMetadataInfo``).

    ``has_conf`` is false for Spark 2.1-era files without a ``conf`` key.
    """

    batch_watermark_ms: int
    batch_timestamp_ms: int
    conf: tuple[tuple[str, str], ...] = ()
    has_conf: bool = True
    source_metadata_info: tuple[tuple[str, str], ...] = ()

    def conf_value(self, key: str) -> str | None:
        """Return the pinned value of a SQL conf, or None."""
        for k, v in self.conf:
            if k == key:
                return v
        return None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        out: dict[str, Any] = {
            "batch_watermark_ms": self.batch_watermark_ms,
            "batch_timestamp_ms": self.batch_timestamp_ms,
            "conf": dict(self.conf) if self.has_conf else None,
        }
        if self.source_metadata_info:
            out["source_metadata_info"] = dict(self.source_metadata_info)
        return out


@frozen
class OffsetSeq:
    """A parsed ``offsets/<batchId>`` file: header version, metadata line (None if blank), sources."""

    version: int
    metadata: OffsetSeqMetadata | None
    sources: tuple[SourceOffset, ...]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "version": self.version,
            "metadata": self.metadata.to_dict() if self.metadata else None,
            "sources": [s.to_dict() for s in self.sources],
        }


@frozen
class CommitRecord:
    """A parsed ``commits/<batchId>`` file (``CommitMetadata``).

    ``state_unique_ids``: operator id -> per partition -> unique ids of the state files of version
    batchId+1 (``stateUniqueIds``, v2). ``sink_metadata_json``: raw ``sinkMetadataMap`` (v3).
    ``header_only`` marks a file holding only the version line, which Spark reads as ``{}``.
    """

    version: int
    next_batch_watermark_ms: int
    state_unique_ids: tuple[tuple[int, tuple[tuple[str, ...], ...]], ...] | None = None
    sink_metadata_json: str | None = None
    header_only: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        out: dict[str, Any] = {
            "version": self.version,
            "next_batch_watermark_ms": self.next_batch_watermark_ms,
            "header_only": self.header_only,
        }
        if self.state_unique_ids is not None:
            out["state_unique_ids"] = {
                str(op): [list(ids) for ids in parts] for op, parts in self.state_unique_ids
            }
        if self.sink_metadata_json is not None:
            out["sink_metadata_json"] = self.sink_metadata_json
        return out


@frozen
class QueryMetadata:
    """The ``metadata`` file: ``{"id": "<query id>"}``."""

    query_id: str

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {"id": self.query_id}


@frozen(slots=True)
class FileSourceEntry:
    """One line of a file-source log (``FileEntry``): a discovered input file."""

    path: str
    timestamp_ms: int
    batch_id: int


@frozen
class FileSourceLogBatch:
    """A ``sources/<n>/<k>`` (or ``<k>.compact``) file of the file source."""

    version: int
    entries: tuple[FileSourceEntry, ...]


@frozen
class KafkaInitialOffsets:
    """``sources/<n>/0`` of the Kafka source: the offsets chosen on the very first start."""

    version: int
    offset: KafkaOffset | None
    raw: str
    legacy_format: bool = False


@frozen
class RateStartTime:
    """``sources/<n>/0`` of the micro-batch ``rate`` source: its start time in ms."""

    version: int
    start_time_ms: int


SourceMetadataRecord = FileSourceLogBatch | KafkaInitialOffsets | RateStartTime


@frozen(slots=True)
class SinkFileEntry:
    """One line of a file sink log (``SinkFileStatus``)."""

    path: str
    size: int
    action: str
    modification_time_ms: int | None = None


@frozen
class SinkLogBatch:
    """A ``_spark_metadata/<id>`` (or ``<id>.compact``) file of the file sink."""

    version: int
    entries: tuple[SinkFileEntry, ...]


@frozen
class StateVariable:
    """One state variable of a transformWithState operator (``operatorPropertiesJson``'s
    ``stateVariables``: ``TransformWithStateVariableInfo``)."""

    name: str
    kind: str
    ttl_enabled: bool

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {"name": self.name, "kind": self.kind, "ttl_enabled": self.ttl_enabled}


@frozen
class TransformWithStateProperties:
    """``operatorPropertiesJson`` of a transformWithState operator's metadata v2
    (``TransformWithStateOperatorProperties``): time mode, output mode and state variables."""

    time_mode: str
    output_mode: str
    variables: tuple[StateVariable, ...]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "time_mode": self.time_mode,
            "output_mode": self.output_mode,
            "variables": [v.to_dict() for v in self.variables],
        }


@frozen
class OperatorStateMetadata:
    """``state/<op>/_metadata/metadata`` (v1, 4.0+) or ``state/<op>/_metadata/v2/<batch>`` (v2):
    operator name and its stores with partition counts; v2 adds the state schema files (absolute
    paths, ``stateSchemaFilePaths``) and a transformWithState operator's properties."""

    version: int
    operator_id: int
    operator_name: str
    stores: tuple[tuple[str, int], ...]
    schema_file_paths: tuple[str, ...] = ()
    properties: TransformWithStateProperties | None = None
    #: A 4.0.0 writer's ``stateSchemaFilePath`` (one per store): not read by a restart.
    legacy_schema_file_paths: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        out: dict[str, Any] = {
            "version": self.version,
            "operator_id": self.operator_id,
            "operator_name": self.operator_name,
            "stores": [{"name": n, "num_partitions": p} for n, p in self.stores],
        }
        if self.version >= 2:
            out["schema_file_paths"] = list(self.schema_file_paths)
            out["properties"] = self.properties.to_dict() if self.properties else None
        return out


@frozen
class ColumnFamilySchema:
    """One column family of a state schema file v3 (``StateStoreColFamilySchema``): a state
    variable's (or its TTL index's, list counter's, timers') key and value schemas with their ids."""

    name: str
    key_schema_id: int
    key_schema: str
    value_schema_id: int
    value_schema: str
    key_encoder: str
    user_key_schema: str | None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "name": self.name,
            "key_schema_id": self.key_schema_id,
            "key_schema": self.key_schema,
            "value_schema_id": self.value_schema_id,
            "value_schema": self.value_schema,
            "key_encoder": self.key_encoder,
            "user_key_schema": self.user_key_schema,
        }


@frozen
class StateSchemaV3:
    """A state schema file v3 ``state/<op>/_stateSchema/<store>/<batch>_<uuid>`` (``SchemaV3Writer``)."""

    version: int
    column_families: tuple[ColumnFamilySchema, ...]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {"version": self.version, "column_families": [c.to_dict() for c in self.column_families]}


@frozen
class StateSchemaHeader:
    """The header of ``state/<op>/0/[<store>/]_metadata/schema``: format version and field names,
    and (v1/v2) the key and value StructType JSON a restart's schema check compares with."""

    version: int
    key_fields: tuple[str, ...]
    value_fields: tuple[str, ...]
    key_schema: str | None = None
    value_schema: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "version": self.version,
            "key_fields": list(self.key_fields),
            "value_fields": list(self.value_fields),
        }


@frozen
class StateDataHeader:
    """The head of a state data file (``.delta``, ``.snapshot``, ``.changelog``): the compression stream
    it starts with (``spark.sql.streaming.stateStore.compression.codec``, lz4 by default)."""

    codec: str
    size: int


@frozen
class RocksDBCheckpointMetadata:
    """The ``metadata`` entry inside a RocksDB ``<version>.zip``: the SST files the version needs."""

    version: int
    sst_files: tuple[str, ...]
    log_files: tuple[str, ...]
    num_keys: int
