"""The file sink outputs next to a checkpoint, read through the storage layer (local disk or S3).

A query's ``FileStreamSink`` output and its checkpoint are often neighbours: the checkpoint inside
the output (``out/_checkpoint``) or two directories of one job (``job/checkpoint``, ``job/sink``).
Nothing in either names the other, so this module only finds and reads the candidates; whether a
log proves it is the checkpoint's is judged by
:func:`checkpoint_doctor.world.sink_pairing.choose_sink`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkpoint_doctor.errors import CheckpointDoctorError
from checkpoint_doctor.reading.layout import SINK_LOG
from checkpoint_doctor.reading.pipeline import SinkArg, read_sink
from checkpoint_doctor.reading.snapshot import SinkLog
from checkpoint_doctor.reading.storage import open_parent, open_storage
from checkpoint_doctor.valueclasses import frozen

#: Sibling directories looked at for a file sink output next to a local checkpoint.
SIBLINGS_LOOKED_AT = 64


@frozen
class NearbySink:
    """A file sink output found next to a checkpoint: its URL, its log, and what
    :func:`~checkpoint_doctor.reading.pipeline.attach_sink` takes to pair it."""

    url: str
    log: SinkLog
    arg: SinkArg


def nearby_sink_urls(checkpoint_url: str, storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """Return the file sink outputs next to a checkpoint: its parent (``out/_checkpoint``) and, on
    local disk, its sibling directories (``job/checkpoint`` next to ``job/sink``, the first
    :data:`SIBLINGS_LOOKED_AT` by name). On an object store only the parent is looked at: probing
    each sibling's ``_spark_metadata`` would cost a request per sibling."""
    parent = open_parent(checkpoint_url, storage_options)
    if parent is None:
        return []
    store, own = parent
    found = [store.url] if store.exists(SINK_LOG) else []
    if not store.is_local:
        return found
    try:
        siblings = [name for name in store.subdirs() if name != own]
    except CheckpointDoctorError:
        return found
    for name in siblings[:SIBLINGS_LOOKED_AT]:
        if store.exists(f"{name}/{SINK_LOG}"):
            found.append(store.url_of(name))
    return found


def nearby_sinks(checkpoint_url: str, storage_options: Mapping[str, Any] | None = None) -> list[NearbySink]:
    """Read the file sink outputs next to a checkpoint (:func:`nearby_sink_urls`), each whose log
    could be read. On an object store the parent's ``_spark_metadata`` is listed once and read (two
    round trips, no existence probe first). Never raises: what cannot be read is not a candidate."""
    try:
        parent = open_parent(checkpoint_url, storage_options)
        if parent is None:
            return []
        store = parent[0]
        if not store.is_local:
            listing = store.child(SINK_LOG).list_tree(missing_ok=True)
            if not listing.files and not listing.dirs:
                return []
            sink, arg, _ = read_sink(store, listing)
            return [NearbySink(store.url, sink, arg)]
        urls = nearby_sink_urls(checkpoint_url, storage_options)
    except CheckpointDoctorError:
        return []
    found = []
    for url in urls:
        try:
            sink, arg, _ = read_sink(open_storage(url, storage_options))
        except CheckpointDoctorError:
            continue
        found.append(NearbySink(url, sink, arg))
    return found
