"""The timeline of a checkpoint's newest batch ids: one shape for ``inspect``, ``audit`` and the HTML
picture. Pure.

Each row is a batch id with the state of its ``offsets/`` file, its ``commits/`` file and the state
version it commits (``state/``, version ``batch_id + 1`` in every store). A cell says what an
operator needs to see, damage included:

* ``present``; ``missing`` (a hole Spark trips over); ``absent`` (a gap that is expected: async
  progress tracking writes the logs sparsely);
* ``pending``: the newest planned batch's commit (and state version) not written yet, which is how
  a query stopped mid-batch looks;
* damage of a file that is there: ``empty`` (0 bytes, or only the version line), ``truncated``
  (the JSON ends early), ``too-new`` (a log version this Spark cannot read), ``damaged`` (any other
  parse failure). Files are judged by their listed size everywhere and by their content where the
  snapshot read them (the newest few at the default depth, every one with ``--deep``);
* ``partial`` (some state stores hold the version), ``none`` (a stateless query has no state row).

A file sink's log has one row kind, ``sink``: present, ``compact``, ``folded`` (into an older
``.compact``: the batch file may be gone, that is normal), missing, absent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from checkpoint_doctor.diagnosis.state.chain import version_present
from checkpoint_doctor.model import LogEntry
from checkpoint_doctor.parsing.text import EMPTY, HEADER_ONLY, TRUNCATED_JSON, UNSUPPORTED_VERSION
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.valueclasses import frozen

TIMELINE_LENGTH = 12

PRESENT = "present"
MISSING = "missing"
ABSENT = "absent"
PENDING = "pending"
EMPTY_FILE = "empty"
TRUNCATED = "truncated"
TOO_NEW = "too-new"
DAMAGED = "damaged"
PARTIAL = "partial"
NONE = "none"
COMPACT = "compact"
FOLDED = "folded"
#: Every cell state, in the order a legend lists them.
STATES = (
    PRESENT,
    MISSING,
    EMPTY_FILE,
    TRUNCATED,
    TOO_NEW,
    DAMAGED,
    PENDING,
    PARTIAL,
    ABSENT,
    COMPACT,
    FOLDED,
    NONE,
)
#: The states that are damage (what a picture must make stand out).
DAMAGE = (MISSING, EMPTY_FILE, TRUNCATED, TOO_NEW, DAMAGED)

_FAILURE_STATE = {
    EMPTY: EMPTY_FILE,
    HEADER_ONLY: EMPTY_FILE,
    TRUNCATED_JSON: TRUNCATED,
    UNSUPPORTED_VERSION: TOO_NEW,
}


@frozen
class TimelineRow:
    """One batch id of the timeline (see the module docstring for the states)."""

    batch_id: int
    offsets: str
    commit: str
    state: str
    #: Stores holding the version the batch commits, out of all stores (None: no state).
    state_stores: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "batch_id": self.batch_id,
            "offsets": self.offsets,
            "commit": self.commit,
            "state": self.state,
            "state_stores": list(self.state_stores) if self.state_stores is not None else None,
        }


@frozen
class SinkRow:
    """One batch id of a file sink log's timeline."""

    batch_id: int
    sink: str

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {"batch_id": self.batch_id, "sink": self.sink}


def file_state(entry: LogEntry[Any] | None, gap: str) -> str:
    """Return the state of one log file: ``gap`` when it is not there, else present or its damage."""
    if entry is None:
        return gap
    if entry.failure is not None:
        return _FAILURE_STATE.get(entry.failure.kind, DAMAGED)
    if entry.file.size == 0:
        return EMPTY_FILE
    return PRESENT


def _state_cell(present: int, stores: int, *, pending: bool, sparse_gap: bool) -> str:
    if present == stores:
        return PRESENT
    if pending:
        return PENDING
    if sparse_gap:
        return ABSENT
    return PARTIAL if present else MISSING


def timeline(
    snapshot: CheckpointSnapshot, mode: str, length: int = TIMELINE_LENGTH
) -> tuple[TimelineRow, ...]:
    """Return the newest ``length`` batch ids, newest first (``mode`` is the detected mode: under
    ``async`` a gap in the logs is expected)."""
    stores = [s for op in snapshot.state.operators for s in op.stores]
    tops = [snapshot.offsets.latest_id, snapshot.commits.latest_id]
    state_max = max((max(s.versions(), default=-1) for s in stores), default=-1)
    if state_max >= 1:
        tops.append(state_max - 1)
    known = [t for t in tops if t is not None]
    if not known:
        return ()
    top = max(known)
    latest_offsets = snapshot.offsets.latest_id
    gap = ABSENT if mode == "async" else MISSING
    rows = []
    for b in range(top, max(0, top - length + 1) - 1, -1):
        commit_entry = snapshot.commits.get(b)
        pending = b == latest_offsets and commit_entry is None
        commit = PENDING if pending else file_state(commit_entry, gap)
        state, counts = NONE, None
        if stores:
            present = sum(1 for s in stores if version_present(s, b + 1))
            counts = (present, len(stores))
            state = _state_cell(
                present, len(stores), pending=pending, sparse_gap=mode == "async" and commit_entry is None
            )
        rows.append(TimelineRow(b, file_state(snapshot.offsets.get(b), gap), commit, state, counts))
    return tuple(rows)


def sink_timeline(
    ids: Sequence[int], compacts: Sequence[int], missing: Sequence[str], length: int = TIMELINE_LENGTH
) -> tuple[SinkRow, ...]:
    """Return a file sink log's newest batch ids, newest first."""
    everything = set(ids) | set(compacts)
    if not everything:
        return ()
    top = max(everything)
    present, compact = set(ids), set(compacts)
    needed = {m.rpartition("/")[2] for m in missing}
    last_compact = max(compact, default=-1)
    rows = []
    for b in range(top, max(0, top - length + 1) - 1, -1):
        if b in compact:
            state = COMPACT
        elif b in present:
            state = PRESENT
        elif str(b) in needed or f"{b}.compact" in needed:
            state = MISSING
        elif b <= last_compact:
            state = FOLDED
        else:
            state = ABSENT
        rows.append(SinkRow(b, state))
    return tuple(rows)
