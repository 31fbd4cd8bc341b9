"""Load a :class:`~checkpoint_doctor.reading.snapshot.CheckpointSnapshot` from storage: the I/O edge.

One recursive listing of the checkpoint (and, with a sink path, one of ``_spark_metadata``), then one
batch of reads chosen by :func:`~checkpoint_doctor.reading.reads.plan_reads`, each bounded by
:data:`~checkpoint_doctor.reading.snapshot.MAX_FILE_BYTES`, then pure assembly. Reading never writes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from checkpoint_doctor.errors import (
    CheckpointNotFoundError,
    CheckpointParseError,
    FileTooLargeError,
    NotACheckpointError,
)
from checkpoint_doctor.model import Listing
from checkpoint_doctor.parsing.text import FOUND_CHARS, MALFORMED_HEADER, java_trim, parse_version_line
from checkpoint_doctor.reading.assembly import assemble_snapshot
from checkpoint_doctor.reading.budget import BUDGET
from checkpoint_doctor.reading.layout import (
    SINK_LOG,
    LogIndex,
    index_listing,
    index_sink_listing,
    listed_sizes,
)
from checkpoint_doctor.reading.reads import DATA_HEAD_BYTES, follow_up_reads, head_only, plan_reads
from checkpoint_doctor.reading.schema_paths import look_up_outside
from checkpoint_doctor.reading.snapshot import (
    DEFAULT_DEPTH,
    MAX_FILE_BYTES,
    CheckpointSnapshot,
    Content,
    FileHead,
    SinkLog,
)
from checkpoint_doctor.reading.storage import Storage, first_failure, open_storage, translate_error

#: What ``assemble_snapshot`` takes for a file sink: its URL, its log's index and the files read.
SinkArg = tuple[str, LogIndex, Mapping[str, Any]]


def load_snapshot(
    store: Storage,
    *,
    depth: str = DEFAULT_DEPTH,
    sink_store: Storage | None = None,
) -> CheckpointSnapshot:
    """List and read a checkpoint (and optionally a file sink's log) into one snapshot.

    Raises:
        StorageError: the checkpoint itself cannot be listed (missing, not a directory, denied,
            no credentials, unreachable), a directory inside it cannot be listed (named), or not
            one of the files it needs could be read. Unreadable single files are recorded in the
            snapshot, not raised.
    """
    return snapshot_from_listing(store, store.list_tree(), depth=depth, sink_store=sink_store)


def check_listed(store: Storage, listing: Listing) -> None:
    """Raise the error of the first directory the listing could not list, naming it.

    A snapshot with a hole where a directory could not be listed would look like a checkpoint
    missing files (state lost, batches gone): it is not assembled at all.

    Raises:
        StorageError: the directory's failure (AccessDeniedError for a permission problem).
    """
    if listing.unlisted:
        rel, code = listing.unlisted[0]
        raise translate_error(OSError(code, os.strerror(code)), store.url_of(rel), "list")


def read_bounded(store: Storage, listing: Listing, paths: Sequence[str]) -> dict[str, Content]:
    """Read ``paths``: a file listed over :data:`MAX_FILE_BYTES` is not requested at all, the
    others are read with that bound (a file that grew since the listing stops there too), and of
    a state data file only its head (:data:`DATA_HEAD_BYTES`)."""
    heads = [p for p in paths if head_only(p)]
    bounded = [p for p in paths if not head_only(p)] if heads else list(paths)
    # The listed sizes of the files read whole only: a head's size is not looked at (a state
    # directory is listed without its files' sizes, bench: audit).
    sizes = listed_sizes(listing, bounded)
    over = {p for p in bounded if sizes.get(p, 0) > MAX_FILE_BYTES}
    judged = _judge_large_logs(store, [p for p in bounded if p not in over], sizes)
    whole = [p for p in bounded if p not in over and p not in judged]
    if heads and whole and not store.is_local:
        # One batch of requests on an object store: the heads are fetched while the whole files
        # are, not after them (a round trip saved on a verdict's critical path).
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="cd-heads") as pool:
            pending = pool.submit(store.read_heads, heads, DATA_HEAD_BYTES)
            read = _read_whole(store, whole, sizes)
            read.update(pending.result())
    else:
        read = _read_whole(store, whole, sizes)
        if heads:
            read.update(store.read_heads(heads, DATA_HEAD_BYTES))
    read.update(judged)
    return {
        p: FileTooLargeError(store.url_of(p), sizes[p], MAX_FILE_BYTES) if p in over else read[p]
        for p in paths
    }


#: A log file listed larger than this is far larger than any real one (an offsets or commit file is
#: KBs): its head is read first, and when Spark would fail at its first line that is all that is read.
LARGE_LOG_BYTES = 2**20
#: How much of a large log file's head is read to judge its first line.
LOG_HEAD_BYTES = 64 * 2**10
#: Bytes of whole files read in one request (one ``read_many``), held in the process's budget.
BATCH_BYTES = 32 * 2**20
# The logs whose files begin with a version line Spark validates before reading on: offsets/,
# commits/ and a file sink's _spark_metadata/ (read from its own store). Not sources/<n>/: its
# first file may be a Kafka source's initial offsets, whose first byte Spark skips
# (KafkaSourceInitialOffsetWriter.deserialize), so its first line is not the whole verdict.
_VERSIONED_LOG = re.compile(r"(?:(?:offsets|commits)/)?\d+(?:\.compact)?")
# The logs whose large files are read alone and abridged (abridge_nuls): those, and sources/<n>/.
_LOG = re.compile(r"(?:(?:offsets|commits)/|sources/\d+/)?\d+(?:\.compact)?")


def _read_whole(store: Storage, paths: Sequence[str], sizes: Mapping[str, int]) -> dict[str, Content]:
    """Read ``paths`` whole (each bounded by :data:`MAX_FILE_BYTES`) in batches of at most
    :data:`BATCH_BYTES` listed bytes (a file larger alone), each held in the process's byte budget
    (:mod:`checkpoint_doctor.reading.budget`) while it is read: 40 sparse 63 MB files were read in one
    request (2.67 GB in flight, issue 31), and an audit's workers read checkpoints together. The
    usual checkpoint (files of KBs) is one batch, as before."""
    read: dict[str, Content] = {}
    batch: list[str] = []
    held = 0
    for path in paths:
        size = sizes.get(path, 0)
        if batch and held + size > BATCH_BYTES:
            with BUDGET.hold(held):
                read.update(store.read_many(batch, max_bytes=MAX_FILE_BYTES))
            batch, held = [], 0
        batch.append(path)
        held += size
    if batch:
        with BUDGET.hold(held):
            read.update(store.read_many(batch, max_bytes=MAX_FILE_BYTES))
    return read


def _judge_large_logs(store: Storage, paths: Sequence[str], sizes: Mapping[str, int]) -> dict[str, Content]:
    """Read the log files among ``paths`` listed over :data:`LARGE_LOG_BYTES`: the head of each whose
    first line is the verdict (a :class:`FileHead` when Spark fails on it), the others whole, one at
    a time, abridged (:func:`abridge_nuls`)."""
    large = [p for p in paths if sizes.get(p, 0) > LARGE_LOG_BYTES and _LOG.fullmatch(p)]
    if not large:
        return {}
    judged: dict[str, Content] = {}
    whole = [p for p in large if not _VERSIONED_LOG.fullmatch(p)]
    versioned = [p for p in large if _VERSIONED_LOG.fullmatch(p)]
    with BUDGET.hold(len(versioned) * LOG_HEAD_BYTES):
        for path, head in store.read_heads(versioned, LOG_HEAD_BYTES).items():
            if isinstance(head, bytes):
                line = judge_head(head, trims=path.startswith("commits/"))
                if line is not None:
                    judged[path] = FileHead(line, sizes[path])
                    continue
            whole.append(path)
    # The others Spark reads whole, one at a time (HDFSMetadataLog.get): so does this, each in the
    # budget, and a file that ends in a run of NULs keeps a few of them (see abridge_nuls).
    for path in whole:
        with BUDGET.hold(sizes[path]):
            got = store.read_many([path], max_bytes=MAX_FILE_BYTES)[path]
            judged[path] = abridge_nuls(got, sizes[path]) if isinstance(got, bytes) else got
            del got
    return judged


#: NULs kept of a run ending a large log file: the run still ends its line, or is a line of its own,
#: and a malformed first line is quoted as the whole file's is (its first FOUND_CHARS, then "...").
KEPT_NULS = FOUND_CHARS + 1


def abridge_nuls(data: bytes, size: int) -> bytes:
    """Return ``data`` with a trailing run of NULs longer than :data:`KEPT_NULS` cut to that many
    (a :class:`FileHead`, so that no repair writes it back), else ``data`` itself.

    A file grown sparse past what was written (``truncate``, a crash before the data blocks) ends in
    NULs. They change nothing Spark reads: the last JSON line is parsed by json4s on Jackson, which
    ignores what follows the first value, and a line of NULs stays a line (``OffsetSeqLog`` reads it
    as one more offset, ``CommitLog`` reads only the line after the version). What is kept parses as
    the whole file does, and 63 MB of NULs a file is not held (issue 31: 40 such files, 2.67 GB).
    """
    end = len(data.rstrip(b"\x00"))
    if len(data) - end <= KEPT_NULS:
        return data
    return FileHead(data[: end + KEPT_NULS], size)


#: What ``String.trim()`` strips (every character <= U+0020).
_JAVA_BLANKS = "".join(map(chr, range(0x21)))


def judge_head(head: bytes, *, trims: bool = False) -> bytes | None:
    """Return the first line of ``head`` (its bytes with the character that ends it, or cut at a
    whole character) when it shows that the file's first line is not a version line ``v<N>``,
    whatever follows the head; else None. ``trims``: the log trims the line first (``CommitLog``:
    ``validateVersion(lines.next().trim, ...)``; ``OffsetSeqLog`` and the sink log do not).

    Spark reads the first line and fails on it in ``HDFSMetadataLog.validateVersion`` (``v`` then
    ``Integer.parseInt``): a line that does not start with ``v``, or holds an ASCII character that is
    no digit where the number must be, fails however long it is. A line that could still be valid
    (``v`` then digits up to the head's end, Java reads ``v0...01`` as 1; for a log that trims, only
    blanks and control characters up to the head's end), or one that is not UTF-8 (Spark's decoder
    fails on it, not the version check), is left to the whole read.
    """
    ends = [i for i in (head.find(b"\n"), head.find(b"\r")) if i >= 0]
    complete = bool(ends)
    line = head[: min(ends)] if ends else head
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        if complete or exc.reason != "unexpected end of data":
            return None
        line = line[: exc.start]  # the head cut a character: keep the whole ones before it
        text = line.decode("utf-8")
    if trims:
        text = java_trim(text) if complete else text.lstrip(_JAVA_BLANKS)
    if complete:
        try:
            parse_version_line(text, max_version=2**31 - 1, path="")
        except CheckpointParseError as exc:
            # With its line end: an empty first line is a line ("Log file was malformed"), not
            # an empty file ("Incomplete log file").
            return head[: min(ends) + 1] if exc.kind == MALFORMED_HEADER else None
        return None
    if not text:
        return None  # blanks to the head's end: the trimmed line may still be v<N>
    if text[:1] != "v":
        return line
    number = text[1:]
    ascii_bad = [c for c in number if c < "\x80" and not ("0" <= c <= "9")]
    if not ascii_bad or (ascii_bad == [number[0]] and number[0] in "+-"):
        return None
    return line


def raise_if_all_failed(contents: Mapping[str, Content]) -> None:
    """Raise the first error when every file failed to read (none of them for being too large):
    the checkpoint vanished after the listing, or reads are denied as a whole. That is the
    checkpoint's error, not a finding."""
    failure = first_failure({k: v for k, v in contents.items() if not isinstance(v, FileTooLargeError)})
    if failure is not None:
        raise failure


def snapshot_from_listing(
    store: Storage,
    listing: Listing,
    *,
    depth: str = DEFAULT_DEPTH,
    sink_store: Storage | None = None,
) -> CheckpointSnapshot:
    """Read what a snapshot needs from a listing already made (an audit lists a whole fleet once).

    Raises:
        StorageError: a directory of the listing could not be listed, or every file the snapshot
            needed failed to read (the checkpoint vanished after the listing, or reads are denied
            as a whole); partial failures are recorded.
    """
    check_listed(store, listing)
    layout = index_listing(listing)
    sink = _sink_log(sink_store) if sink_store is not None else None
    paths, sink_paths = plan_reads(layout, depth, sink[1] if sink is not None else None)
    sink_arg = None
    if sink_store is not None and sink is not None:
        meta, index, sink_listing = sink
        sink_arg = (sink_store.url, index, read_bounded(meta, sink_listing, sink_paths))
    contents = read_bounded(store, listing, paths)
    raise_if_all_failed(contents)
    snapshot = assemble_snapshot(store.url, layout, contents, depth=depth, sink=sink_arg)
    extra = follow_up_reads(snapshot)
    if extra:
        contents = {**contents, **read_bounded(store, listing, extra)}
        snapshot = assemble_snapshot(store.url, layout, contents, depth=depth, sink=sink_arg)
    outside = look_up_outside(snapshot)
    return replace(snapshot, outside_files=outside) if outside else snapshot


def _list_log(log_store: Storage) -> Listing:
    """List a file sink's ``_spark_metadata`` (a missing one lists empty; a hole is an error)."""
    try:
        listing = log_store.list_tree()
    except CheckpointNotFoundError:
        listing = Listing((), ())
    check_listed(log_store, listing)
    return listing


def _sink_log(sink_store: Storage) -> tuple[Storage, LogIndex, Listing]:
    """List a file sink's ``_spark_metadata`` for a snapshot (``exists`` set for an empty one)."""
    meta = sink_store.child(SINK_LOG)
    listing = _list_log(meta)
    index = index_sink_listing(listing)
    if not listing.files and not listing.dirs:
        index.exists = meta.exists("")
    return meta, index, listing


def read_sink(store: Storage, log_listing: Listing | None = None) -> tuple[SinkLog, SinkArg, int]:
    """Read a file sink output's ``_spark_metadata`` log: what a restart's checks need of it.

    ``log_listing`` is the listing of ``_spark_metadata/`` when already made (an audit's slice), else
    the log is listed. Returns the log, the ``sink`` argument of ``assemble_snapshot`` and the number
    of files read.

    Raises:
        StorageError: a directory of the log could not be listed, or every file to read failed.
    """
    log_store = store.child(SINK_LOG)
    if log_listing is None:
        log_listing = _list_log(log_store)
    else:
        check_listed(log_store, log_listing)
    index = index_sink_listing(log_listing)
    _, sink_paths = plan_reads(index_listing(Listing((), ())), DEFAULT_DEPTH, index)
    contents = read_bounded(log_store, log_listing, sink_paths)
    raise_if_all_failed(contents)
    arg: SinkArg = (store.url, index, contents)
    sink = assemble_snapshot(store.url, index_listing(Listing((), ())), {}, sink=arg).sink
    assert sink is not None
    return sink, arg, len(contents)


def attach_sink(
    snapshot: CheckpointSnapshot, sink: SinkArg, parsed: SinkLog | None = None
) -> CheckpointSnapshot:
    """Return the snapshot with a file sink's log read by :func:`read_sink` (nothing is read again).

    ``parsed`` is the log :func:`read_sink` returned with ``sink``: when every file of the snapshot
    was read whole (its ``raw`` holds all it read), the snapshot is the same with the sink's fields
    set, and neither the checkpoint nor the sink log is parsed again (an audit pairs a sink with
    each checkpoint whose logs match it; bench: audit). Otherwise it is assembled again from
    ``raw``, as before.
    """
    if parsed is not None and snapshot.read_count == len(snapshot.raw) and snapshot.sink is None:
        contents = sink[2]
        return replace(
            snapshot,
            sink=parsed,
            read_count=snapshot.read_count + len(contents),
            sink_raw={k: v for k, v in contents.items() if isinstance(v, bytes)},
        )
    return assemble_snapshot(
        snapshot.root, index_listing(snapshot.listing), snapshot.raw, depth=snapshot.depth, sink=sink
    )


def load_checkpoint(
    url: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    depth: str = DEFAULT_DEPTH,
    sink_path: str | None = None,
) -> CheckpointSnapshot:
    """Open a checkpoint URL (and optional sink path) and load its snapshot."""
    store = open_storage(url, storage_options)
    sink_store = open_storage(sink_path, storage_options) if sink_path else None
    return load_snapshot(store, depth=depth, sink_store=sink_store)


def require_checkpoint(snapshot: CheckpointSnapshot) -> CheckpointSnapshot:
    """Return the snapshot if it is a checkpoint.

    Raises:
        NotACheckpointError: with why, in words (an empty directory, a Delta table, a sink's output).
    """
    if snapshot.is_checkpoint:
        return snapshot
    raise NotACheckpointError(snapshot.root, describe_non_checkpoint(snapshot.files, snapshot.dirs))


def describe_non_checkpoint(files: Sequence[object], dirs: Sequence[str]) -> str:
    """Say in words why a directory is not a checkpoint."""
    if not files and not dirs:
        return "the directory is empty (no metadata, offsets/ or commits/)"
    if any(d == "_delta_log" or d.endswith("/_delta_log") for d in dirs):
        return "it holds _delta_log/, a Delta table, not a streaming checkpoint"
    if any(d == SINK_LOG for d in dirs):
        return f"it holds {SINK_LOG}/, the output of a file sink; pass it with --sink-path"
    return "no metadata file, offsets/ or commits/ directory"
