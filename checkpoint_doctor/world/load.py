"""What a verdict reads before the diagnosis runs, for the CLI and the Python API alike.

``diagnose``, ``plan``, ``cd.diagnose()`` and ``cd.plan()`` load a checkpoint the same way: its
snapshot, the file sink next to it whose log proves it is the query's (unless one is named), the
files checkpoint-doctor's own applies wrote into it (a repair made a minute ago is not a live
query), and the Delta tables beside it or named, paired with it (:mod:`checkpoint_doctor.world.delta`). The audit pairs sinks from its one listing with the same rule
(:func:`checkpoint_doctor.world.sink_pairing.choose_sink`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from checkpoint_doctor.errors import CheckpointDoctorError, CheckpointNotFoundError, FileTooLargeError
from checkpoint_doctor.model import KafkaLive
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.reading.pipeline import attach_sink
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.reading.storage import open_storage, split_protocol
from checkpoint_doctor.world.delta_discovery import NearbyTables
from checkpoint_doctor.world.delta_pairing import DeltaPairing
from checkpoint_doctor.world.model import OwnWrites, Unfinished, World
from checkpoint_doctor.world.sink_pairing import choose_sink, pairing_evidence
from checkpoint_doctor.world.sinks import NearbySink, nearby_sinks


def own_writes_for(checkpoint_url: str, storage_options: Mapping[str, Any] | None) -> OwnWrites:
    """Return the files checkpoint-doctor's own applies (still in place) wrote into a checkpoint,
    from its tool directory (empty when there is none, or it cannot be read)."""
    return tool_records_for(checkpoint_url, storage_options)[0]


def tool_records_for(
    checkpoint_url: str, storage_options: Mapping[str, Any] | None
) -> tuple[OwnWrites, Unfinished]:
    """Return the files checkpoint-doctor's own applies (still in place) wrote into a checkpoint and
    the applies that changed it and did not finish, from its tool directory (nothing when there is
    none, or it cannot be read: :func:`checkpoint_doctor.reading.history.tool_record`)."""
    from checkpoint_doctor.reading.journal import APPLIES, tool_urls

    try:
        out: OwnWrites = frozenset()
        unfinished: Unfinished = ()
        # Beside the real location first, then beside the path as typed (applies made through a link).
        for url in tool_urls(open_storage(checkpoint_url, storage_options)):
            tool = open_storage(url, storage_options)
            if not tool.is_local:
                # One GET, not an existence probe (HEAD, then a listing on S3): a missing file fails
                # the read with the same answer (a file longer than the byte asked for exists).
                try:
                    with contextlib.suppress(FileTooLargeError):
                        tool.read(APPLIES, max_bytes=1)
                except CheckpointNotFoundError:
                    continue
            elif not tool.exists(APPLIES):
                continue
            # Imported only when there is a history to read (a verdict on a never-repaired
            # checkpoint does not need it: start-up is most of such a verdict).
            from checkpoint_doctor.reading.history import tool_record

            own, stopped = tool_record(tool)
            out |= own
            unfinished += stopped
        return out, unfinished
    except CheckpointDoctorError:
        return frozenset(), ()


def pair_nearby(
    snapshot: CheckpointSnapshot, found: Sequence[NearbySink]
) -> tuple[CheckpointSnapshot, str | None]:
    """Attach the one sink of :func:`~checkpoint_doctor.world.sinks.nearby_sinks` whose log
    proves it is the checkpoint's, and say what was found. Pure."""
    choice = choose_sink(snapshot, ((s, s.log) for s in found))
    if choice.chosen is not None:
        sink, evidence = choice.chosen
        return attach_sink(snapshot, sink.arg, sink.log), (
            f"file sink {sink.url} found next to the checkpoint and checked with it ({evidence.text})"
        )
    if choice.proven or choice.unproven:
        named = ", ".join(s.url for s, _ in choice.proven + choice.unproven)
        why = "several match" if len(choice.proven) > 1 else choice.unproven[0][1].text
        return snapshot, (
            f"file sink not checked: a file sink output is next to the checkpoint ({named}) but its log "
            f"does not prove it is this query's ({why}); pass --sink-path to check it"
        )
    return snapshot, None


def sink_path_note(snapshot: CheckpointSnapshot, sink_path: str) -> str | None:
    """Say where the sink named with ``--sink-path`` is another query's (its log contradicts the
    checkpoint): it is kept, and a plan refuses to change it without ``--force-sink``. Pure."""
    evidence = pairing_evidence(snapshot, snapshot.sink) if snapshot.sink is not None else None
    if evidence is None or not evidence.contradicted:
        return None
    return (
        f"file sink {sink_path} (--sink-path) is probably another query's: {evidence.text}; "
        "plan will not change it without --force-sink"
    )


def find_sink(
    snapshot: CheckpointSnapshot,
    checkpoint_url: str,
    storage_options: Mapping[str, Any] | None,
    sink_path: str | None = None,
) -> tuple[CheckpointSnapshot, str | None]:
    """Look for the file sink of a checkpoint loaded without a sink path: attach the one whose log
    proves it, and say what was found. With ``sink_path`` the sink given is kept
    (:func:`sink_path_note`)."""
    if sink_path:
        return snapshot, sink_path_note(snapshot, sink_path)
    return pair_nearby(snapshot, nearby_sinks(checkpoint_url, storage_options))


def pair_delta(
    snapshot: CheckpointSnapshot,
    nearby: NearbyTables,
    storage_options: Mapping[str, Any] | None,
    delta_tables: Sequence[str],
    job_delta: Mapping[int, str],
) -> tuple[DeltaPairing | None, tuple[DeltaTable, ...] | None]:
    """Return the pairing of the checkpoint with the tables found ``nearby``, those named and those a
    ``--job``'s Delta sources read (``job_delta``: source index -> path), and the tables read by name."""
    from checkpoint_doctor.world.delta import pair_beside
    from checkpoint_doctor.world.delta_discovery import read_named

    paths = tuple(dict.fromkeys((*delta_tables, *job_delta.values())))
    unread: list[tuple[str, str]] = []
    named = read_named(paths, storage_options, snapshot.query_id, unread) if paths else None
    # read_named keeps the order of the paths it read: the URL each job path was read as.
    failed = {p for p, _ in unread}
    by_path = dict(zip([p for p in paths if p not in failed], named or (), strict=False))
    job_paths = {by_path[p].url: n for n, p in job_delta.items() if p in by_path}
    # A named table whose log is damaged is the operator's (or the --job's) table: CD215, an error.
    sources = {p: n for n, p in job_delta.items()}
    named_unread = tuple((p, why, sources.get(p)) for p, why in unread)
    pairing = pair_beside(snapshot, nearby, named or (), storage_options, job_paths, named_unread)
    return pairing, named


def load_for_verdict(
    checkpoint_url: str,
    storage_options: Mapping[str, Any] | None,
    load: Callable[[], CheckpointSnapshot],
    *,
    sink_path: str | None = None,
    delta_tables: Sequence[str] = (),
    job_delta: Mapping[int, str] | None = None,
) -> World:
    """Load a checkpoint for a verdict with ``load`` (the caller's read, with its own error hints):
    its snapshot (with the file sink found next to it unless ``sink_path`` names one), what was
    found of that sink, checkpoint-doctor's own writes, and the Delta tables beside it and named
    (``delta_tables``), paired with it (:mod:`checkpoint_doctor.world.delta`); ``job_delta``: the
    table path each Delta source of a ``--job`` reads (source index -> path), paired with that source.

    On an object store the lookups beside the checkpoint (its sink's log, the tool directory's
    applies, the Delta tables' logs and checksums) run while the checkpoint loads: each is a round
    trip or a few of its own, and a verdict then waits for three in sequence (the listing, one batch
    of reads, the follow-up reads), not seven; a Delta source's table adds one after them, its
    commits since the checkpoint's version (see tests/s3/test_request_counts.py).

    Raises:
        UsageError: a path of ``delta_tables`` is not a Delta table (one found beside it that cannot
            be read is named in the pairing instead).
    """
    from checkpoint_doctor.world.delta_discovery import nearby_tables

    if split_protocol(checkpoint_url)[0] == "file":
        snapshot = load()
        snapshot, note = find_sink(snapshot, checkpoint_url, storage_options, sink_path)
        beside = nearby_tables(checkpoint_url, storage_options)
        delta, named = pair_delta(snapshot, beside, storage_options, delta_tables, job_delta or {})
        own, unfinished = tool_records_for(snapshot.root, storage_options)
        return World(snapshot, note, own, delta, named, _looked_at(beside, named), unfinished)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=3, thread_name_prefix="cd-side") as pool:
        sinks = pool.submit(nearby_sinks, checkpoint_url, storage_options) if not sink_path else None
        writes = pool.submit(tool_records_for, checkpoint_url.rstrip("/"), storage_options)
        tables = pool.submit(nearby_tables, checkpoint_url, storage_options)
        snapshot = load()
        if sinks is not None:
            snapshot, note = pair_nearby(snapshot, sinks.result())
        else:
            note = sink_path_note(snapshot, sink_path or "")
        nearby = tables.result()
        delta, named = pair_delta(snapshot, nearby, storage_options, delta_tables, job_delta or {})
        own, unfinished = writes.result()
        return World(snapshot, note, own, delta, named, _looked_at(nearby, named), unfinished)


def _looked_at(nearby: NearbyTables, named: Sequence[DeltaTable] | None) -> tuple[str, ...]:
    """Return the URL of every Delta table found beside the checkpoint (read or not) and named."""
    urls = [t.url for t in nearby.tables] + [url for url, _ in nearby.unread] + [t.url for t in named or ()]
    return tuple(dict.fromkeys(urls))


def kafka_positions(
    snapshot: CheckpointSnapshot, bootstrap: str, settings: Mapping[str, str]
) -> KafkaLive | None:
    """Return the live positions of the Kafka topics the checkpoint's newest offsets read (what a new
    batch starts from) and where its unread records start, asked of the broker at ``bootstrap``
    (None without a Kafka source): ``AdminClient`` through :mod:`checkpoint_doctor.world.kafka`."""
    from checkpoint_doctor.reading.positions import kafka_sources, newest_sources, unread_offsets
    from checkpoint_doctor.world.kafka import read_positions

    offsets = [off for _, off in [*kafka_sources(newest_sources(snapshot)), *unread_offsets(snapshot)]]
    if not offsets:
        return None
    return read_positions(bootstrap, offsets, settings)


def with_kafka(world: World, bootstrap: str, settings: Mapping[str, str]) -> World:
    """Return the world with its Kafka topics' live positions (:func:`kafka_positions`)."""
    return replace(world, kafka=kafka_positions(world.snapshot, bootstrap, settings))
