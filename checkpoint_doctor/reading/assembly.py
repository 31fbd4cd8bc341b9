"""Assembly: parse the files read and combine them with the listing's index into a
:class:`~checkpoint_doctor.reading.snapshot.CheckpointSnapshot`; and the snapshot as a repair would
leave it (:func:`simulate_changes`). Pure: a damaged file becomes a
:class:`~checkpoint_doctor.model.ParseFailure` on its entry, nothing raises for bad content.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from operator import itemgetter
from typing import TypeVar

from checkpoint_doctor.errors import CheckpointParseError, FileTooLargeError, StorageError
from checkpoint_doctor.model import (
    FileStat,
    Listing,
    LogEntry,
    ParseFailure,
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
    parse_state_schema_v3,
)
from checkpoint_doctor.parsing.text import TOO_LARGE
from checkpoint_doctor.reading.layout import (
    SINK_LOG,
    Area,
    Layout,
    LogIndex,
    StateFileName,
    StoreIndex,
    data_versions,
    index_listing,
    index_sink_listing,
    orphan_crcs,
)
from checkpoint_doctor.reading.snapshot import (
    DEFAULT_DEPTH,
    UNREADABLE,
    BatchLog,
    CheckpointSnapshot,
    Content,
    DebrisFile,
    FileRecord,
    SinkLog,
    StateDir,
    StateOperator,
    StateStore,
)

T = TypeVar("T")
_first = itemgetter(0)


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
    # Every listed batch file gets an entry, only the few read are parsed (bench: audit, where a
    # log holds hundreds of batches): the others are made without a look-up per file.
    batches = index.batches
    entries: list[LogEntry[T]] = [
        LogEntry(bid, f, *_parse(parser, f, contents, prefix)) if f.path in contents else LogEntry(bid, f)
        for bid, f in sorted(batches.items(), key=_first)
    ]
    if index.compacts:
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


def _store(store: StoreIndex, contents: Mapping[str, Content], read: Mapping[str, list[str]]) -> StateStore:
    """Assemble one store (``read``: the names of the files read, by directory)."""
    roles = store.shared_roles()
    zip_meta = []
    headers = []
    data: list[tuple[StateFileName, str]]
    if roles is not None:
        # The versions are its name set's (shared by the partitions at the same versions); of its
        # data files only the ones read are looked at.
        deltas, snapshots, zips, changelogs, zips_v2, changelogs_v2 = roles.versions()
        parsed_names = roles.parsed()
        data = [(parsed_names[name], name) for name in read.get(store.path, ()) if name in parsed_names]
    else:
        deltas, snapshots, zips, changelogs, zips_v2, changelogs_v2 = data_versions(store.data)
        data = store.data
    for parsed, name in data:
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
        deltas=deltas,
        snapshots=snapshots,
        zips=zips,
        changelogs=changelogs,
        zips_v2=zips_v2,
        changelogs_v2=changelogs_v2,
        sst_files=tuple(sorted(f.name for f in store.ssts)),
        spark_checksums=store.spark_checksums,
        file_count=store.file_count,
        listed_bytes=store.listed_bytes,
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
    read: dict[str, list[str]] = {}
    if layout.operators:
        for path in contents:
            parent, _, name = path.rpartition("/")
            read.setdefault(parent, []).append(name)
    for op_id in sorted(layout.operators):
        op = layout.operators[op_id]
        stores = tuple(
            _store(op.stores[k], contents, read)
            for k in sorted(op.stores, key=lambda k: (k[1] != "default", k[1], k[0]))
        )
        operators.append(
            StateOperator(
                operator_id=op_id,
                stores=tuple(sorted(stores, key=lambda s: (s.partition_id, s.store_name))),
                partition_dirs=tuple(sorted(op.partition_dirs)),
                metadata=_record(parse_operator_metadata, op.metadata, contents),
                metadata_v2_batches=tuple(sorted(op.metadata_v2)),
                metadata_v2=_record(
                    parse_operator_metadata,
                    op.metadata_v2[max(op.metadata_v2)] if op.metadata_v2 else None,
                    contents,
                ),
                schema_files=tuple(
                    rec
                    for f in sorted(op.state_schema_files, key=lambda f: f.path)
                    if (rec := _record(parse_state_schema_v3, f, contents)) is not None
                ),
                file_count=op.file_count,
                listed_bytes=op.listed_bytes,
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
