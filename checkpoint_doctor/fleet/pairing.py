"""Which file sink outputs may belong to which checkpoint, from the fleet's one listing. Pure.

A sink is a candidate for a checkpoint when its ``_spark_metadata`` batch ids meet the checkpoint's
offsets/commit ids (its newest id within them, or one above); candidates are ordered by how near
the two directories are (``job/checkpoint`` and ``job/sink`` are nearer than two jobs' directories).
The proof comes later, from the files read (:func:`checkpoint_doctor.world.sink_pairing.pairing_evidence`):
this step only keeps the reads bounded (at most :data:`MAX_CANDIDATES` sinks per checkpoint).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from checkpoint_doctor.model import Listing
from checkpoint_doctor.reading.layout import SINK_LOG

#: Sinks read per checkpoint to look for the proof, nearest first.
MAX_CANDIDATES = 4


@dataclass(frozen=True)
class SinkCandidate:
    """A file sink output that may belong to a checkpoint: its URL, its path relative to the root,
    its slice of the listing (``_spark_metadata/...`` relative to the sink) and its nearness."""

    url: str
    path: str
    listing: Listing
    nearness: int


def _ids(listing: Listing, logs: tuple[str, ...]) -> set[int]:
    """Return the batch ids named by the files directly in the ``logs`` directories (a log's
    directory column, not every file: a sink's output holds thousands of data files)."""
    out = set()
    for d in listing.columns:
        if d.path not in logs:
            continue
        for name in d.names:
            number = name[: -len(".compact")] if name.endswith(".compact") else name
            if number.isdigit():
                out.add(int(number))
    return out


def _nearness(a: str, b: str) -> int:
    """Return how many leading directories two root-relative paths share."""
    shared = 0
    for x, y in zip(a.split("/")[:-1], b.split("/")[:-1], strict=False):
        if x != y:
            break
        shared += 1
    return shared


def newest_sink_id(listing: Listing) -> int | None:
    """Return the newest batch id of a sink output's ``_spark_metadata`` (None: no batch file)."""
    return max(_ids(listing, (SINK_LOG,)), default=None)


def sink_candidates(
    checkpoint_path: str,
    checkpoint_listing: Listing,
    sinks: Sequence[tuple[str, str, Listing]],
    newest: Sequence[int | None] | None = None,
) -> tuple[SinkCandidate, ...]:
    """Return the sinks (url, root-relative path, listing) whose batch ids meet the checkpoint's,
    nearest first, at most :data:`MAX_CANDIDATES` (``newest``: each sink's :func:`newest_sink_id`,
    computed once by a caller that pairs many checkpoints)."""
    if not sinks:
        return ()  # no file sink under the roots: the checkpoint's ids are not looked at
    ids = _ids(checkpoint_listing, ("offsets", "commits"))
    if not ids:
        return ()
    low, high = min(ids), max(ids)
    found = []
    for i, (url, path, listing) in enumerate(sinks):
        top = newest[i] if newest is not None else newest_sink_id(listing)
        if top is not None and low <= top <= high + 1:
            found.append(SinkCandidate(url, path, listing, _nearness(checkpoint_path + "/x", path + "/x")))
    found.sort(key=lambda c: (-c.nearness, c.path))
    return tuple(found[:MAX_CANDIDATES])
