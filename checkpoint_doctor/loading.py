"""Load a :class:`~checkpoint_doctor.snapshot.CheckpointSnapshot` from storage: the I/O edge.

One recursive listing of the checkpoint (and, with a sink path, one of ``_spark_metadata``), then one
batch of reads chosen by :func:`~checkpoint_doctor.snapshot.plan_reads`, then pure assembly.
Reading never writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkpoint_doctor.errors import CheckpointNotFoundError, StorageError
from checkpoint_doctor.layout import index_listing, index_sink_listing
from checkpoint_doctor.model import Listing
from checkpoint_doctor.snapshot import (
    DEFAULT_DEPTH,
    CheckpointSnapshot,
    assemble_snapshot,
    follow_up_reads,
    plan_reads,
)
from checkpoint_doctor.storage import CheckpointStore, open_store


def load_snapshot(
    store: CheckpointStore,
    *,
    depth: str = DEFAULT_DEPTH,
    sink_store: CheckpointStore | None = None,
) -> CheckpointSnapshot:
    """List and read a checkpoint (and optionally a file sink's log) into one snapshot.

    Raises:
        StorageError: the checkpoint itself cannot be listed (missing, not a directory, denied,
            no credentials, unreachable), or not one of the files it needs could be read.
            Unreadable single files are recorded in the snapshot, not raised.
    """
    return snapshot_from_listing(store, store.list_tree(), depth=depth, sink_store=sink_store)


def snapshot_from_listing(
    store: CheckpointStore,
    listing: Listing,
    *,
    depth: str = DEFAULT_DEPTH,
    sink_store: CheckpointStore | None = None,
) -> CheckpointSnapshot:
    """Read what a snapshot needs from a listing already made (an audit lists a whole fleet once).

    Raises:
        StorageError: every file the snapshot needed failed to read (the checkpoint vanished after
            the listing, or reads are denied as a whole); partial failures are recorded.
    """
    layout = index_listing(listing)
    sink_index = None
    sink_meta = None
    if sink_store is not None:
        sink_meta = sink_store.child("_spark_metadata")
        try:
            sink_listing = sink_meta.list_tree()
        except CheckpointNotFoundError:
            sink_listing = Listing((), ())
        sink_index = index_sink_listing(sink_listing)
        if not sink_listing.files and not sink_listing.dirs:
            sink_index.exists = sink_meta.exists("")
    paths, sink_paths = plan_reads(layout, depth, sink_index)
    contents = store.read_many(paths)
    errors = [v for v in contents.values() if isinstance(v, StorageError)]
    if paths and len(errors) == len(paths):
        raise errors[0]
    sink_arg = None
    if sink_store is not None and sink_index is not None and sink_meta is not None:
        sink_arg = (sink_store.url, sink_index, sink_meta.read_many(sink_paths))
    snapshot = assemble_snapshot(store.url, layout, contents, depth=depth, sink=sink_arg)
    extra = follow_up_reads(snapshot)
    if extra:
        contents = {**contents, **store.read_many(extra)}
        snapshot = assemble_snapshot(store.url, layout, contents, depth=depth, sink=sink_arg)
    return snapshot


def load_checkpoint(
    url: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    depth: str = DEFAULT_DEPTH,
    sink_path: str | None = None,
) -> CheckpointSnapshot:
    """Open a checkpoint URL (and optional sink path) and load its snapshot."""
    store = open_store(url, storage_options)
    sink_store = open_store(sink_path, storage_options) if sink_path else None
    return load_snapshot(store, depth=depth, sink_store=sink_store)
