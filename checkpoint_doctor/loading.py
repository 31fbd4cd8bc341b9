"""What a verdict reads before the diagnosis runs, for the CLI and the Python API alike.

``diagnose``, ``plan``, ``cd.diagnose()`` and ``cd.plan()`` load a checkpoint the same way: its
snapshot, the file sink next to it whose log proves it is the query's (unless one is named), and
the files checkpoint-doctor's own applies wrote into it (a repair made a minute ago is not a live
query). The audit pairs sinks from its one listing with the same rule
(:func:`checkpoint_doctor.diagnosis.sinks.pairing.choose_sink`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from checkpoint_doctor.diagnosis.sinks.pairing import choose_sink, pairing_evidence
from checkpoint_doctor.errors import CheckpointDoctorError, CheckpointNotFoundError, FileTooLargeError
from checkpoint_doctor.reading.pipeline import attach_sink
from checkpoint_doctor.reading.sinks import NearbySink, nearby_sinks
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.reading.storage import open_storage, split_protocol
from checkpoint_doctor.records import frozen

OwnWrites = frozenset[tuple[str, int | str]]


@frozen
class VerdictInput:
    """A checkpoint loaded for a verdict: the snapshot (with its file sink when one was named or
    proven), what was found of that sink (None: nothing to say) and the tool's own writes."""

    snapshot: CheckpointSnapshot
    sink_note: str | None
    own_writes: OwnWrites


def own_writes_for(checkpoint_url: str, storage_options: Mapping[str, Any] | None) -> OwnWrites:
    """Return the files checkpoint-doctor's own applies (still in place) wrote into a checkpoint,
    from its tool directory (empty when there is none, or it cannot be read)."""
    from checkpoint_doctor.execution.journal import APPLIES, tool_urls

    try:
        out: OwnWrites = frozenset()
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
            # Imported only when there is a history to read: it brings the planner's plan and steps,
            # which a verdict on a never-repaired checkpoint does not need (start-up is most of it).
            from checkpoint_doctor.execution.history import own_writes

            out |= own_writes(tool)
        return out
    except CheckpointDoctorError:
        return frozenset()


def pair_nearby(
    snapshot: CheckpointSnapshot, found: Sequence[NearbySink]
) -> tuple[CheckpointSnapshot, str | None]:
    """Attach the one sink of :func:`~checkpoint_doctor.reading.sinks.nearby_sinks` whose log
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


def load_for_verdict(
    checkpoint_url: str,
    storage_options: Mapping[str, Any] | None,
    load: Callable[[], CheckpointSnapshot],
    *,
    sink_path: str | None = None,
) -> VerdictInput:
    """Load a checkpoint for a verdict with ``load`` (the caller's read, with its own error hints):
    its snapshot (with the file sink found next to it unless ``sink_path`` names one), what was
    found of that sink, and checkpoint-doctor's own writes.

    On an object store the two lookups beside the checkpoint (its sink's log, the tool directory's
    applies) run while the checkpoint loads: each is a round trip or two of its own, and a verdict
    then waits for three in sequence (the listing, one batch of reads, the follow-up reads), not
    seven (see tests/s3/test_request_counts.py).
    """
    if split_protocol(checkpoint_url)[0] == "file":
        snapshot = load()
        snapshot, note = find_sink(snapshot, checkpoint_url, storage_options, sink_path)
        return VerdictInput(snapshot, note, own_writes_for(snapshot.root, storage_options))
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="cd-side") as pool:
        sinks = pool.submit(nearby_sinks, checkpoint_url, storage_options) if not sink_path else None
        writes = pool.submit(own_writes_for, checkpoint_url.rstrip("/"), storage_options)
        snapshot = load()
        if sinks is not None:
            snapshot, note = pair_nearby(snapshot, sinks.result())
        else:
            note = sink_path_note(snapshot, sink_path or "")
        return VerdictInput(snapshot, note, writes.result())
