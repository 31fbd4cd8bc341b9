"""The execution mode that wrote a checkpoint's logs, from the snapshot alone. Pure.

Continuous processing (``ContinuousExecution``) writes offsets files with an empty metadata line;
asynchronous progress tracking (``AsyncProgressTrackingMicroBatchExecution``) writes sparse logs in
which every commit id is also an offsets id and at least one commit follows a gap; real-time mode
(``Trigger.RealTime``, Spark 4.1+) writes ``offsets/N`` when batch N ends (SPARK-53915). Read below the
world around a checkpoint (a file sink's pairing asks it) and the diagnosis (``diagnosis.detect``).
"""

from __future__ import annotations

from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.valueclasses import frozen

MICRO_BATCH = "micro-batch"
ASYNC = "async"
CONTINUOUS = "continuous"
REAL_TIME = "real-time"
MODES = (MICRO_BATCH, ASYNC, CONTINUOUS, REAL_TIME)

#: An offsets file written this long after its batch's timestamp was written when the batch ended:
#: real-time batches last at least ``spark.sql.streaming.realTimeMode.minBatchDuration`` (5 s by
#: default) while a micro-batch writes its offsets file within milliseconds of the timestamp.
REAL_TIME_WRITE_LAG_MS = 2000
#: The next batch starts once the commit is written: its timestamp follows the offsets file's time
#: (allowing for a store's clock, as S3's LastModified) by at most this much.
NEXT_BATCH_GAP_MS = 30_000
CLOCK_SKEW_MS = 2000


@frozen
class ModeGuess:
    """The execution mode that wrote the logs, with the evidence in words."""

    mode: str
    evidence: str


def is_async_pattern(offsets: tuple[int, ...], commits: tuple[int, ...]) -> bool:
    """Return whether offsets/commits ids look written by asynchronous progress tracking.

    Async progress tracking persists a commit only for a batch whose offsets were persisted, so
    commits are a subset of offsets; and it persists only every interval, so some commit follows
    a gap in the offsets ids. A hand-deleted ``offsets/N`` leaves ``commits/N`` behind (not a subset),
    and a run that merely jumped ahead has no commit after its gap.
    """
    if len(offsets) < 2 or not commits:
        return False
    oset = set(offsets)
    if not set(commits) <= oset:
        return False
    first = offsets[0]
    return any(c > first and (c - 1) not in oset for c in commits)


def detect_mode(snapshot: CheckpointSnapshot) -> ModeGuess:
    """Return the execution mode that most likely wrote this checkpoint."""
    read = [e for e in snapshot.offsets.entries if e.record is not None]
    blank = [e.batch_id for e in read if e.record is not None and e.record.metadata is None]
    if read and len(blank) == len(read):
        return ModeGuess(
            CONTINUOUS,
            f"offsets files {_ids(blank)} have an empty metadata line, as continuous processing writes",
        )
    o, c = snapshot.offsets.ids, snapshot.commits.ids
    if is_async_pattern(o, c):
        sparse = [b for b in c if b > o[0] and b - 1 not in set(o)]
        return ModeGuess(
            ASYNC,
            "sparse, aligned logs: every commit has its offsets file and commits "
            f"{_ids(sparse)} follow gaps in the offsets ids, as asynchronous progress tracking writes",
        )
    lagging = real_time_lags(snapshot)
    if lagging:
        shown = ", ".join(f"offsets/{b} {lag / 1000:.1f} s" for b, lag in lagging[:4])
        return ModeGuess(
            REAL_TIME,
            f"every offsets file was written seconds after its batch started ({shown}"
            f"{', ...' if len(lagging) > 4 else ''}): at the end of the batch, as real-time mode writes it",
        )
    return ModeGuess(MICRO_BATCH, "offsets and commits written batch by batch")


def real_time_lags(snapshot: CheckpointSnapshot) -> list[tuple[int, int]]:
    """Return (batch id, ms from ``batchTimestampMs`` to the file's time) of the offsets files when the
    listing's times show them written as real-time mode writes them, else ``[]``.

    Real-time mode writes ``offsets/N`` when batch N ends, and batch N+1 starts right after
    ``commits/N``: so each file is dated at least :data:`REAL_TIME_WRITE_LAG_MS` after its own batch's
    timestamp and at most :data:`NEXT_BATCH_GAP_MS` before the next batch's. A micro-batch file is
    dated within milliseconds of its timestamp; a copy that did not keep the times (git, ``cp``
    without ``-p``) dates every file after every timestamp. Needs two consecutive dated files.
    """
    dated = {}
    for e in snapshot.offsets.entries:
        md = e.record.metadata if e.record is not None else None
        if md is not None and e.file.mtime_ms is not None:
            dated[e.batch_id] = (md.batch_timestamp_ms, e.file.mtime_ms)
    pairs = [(b, dated[b], dated[b + 1]) for b in sorted(dated) if b + 1 in dated]
    if not pairs:
        return []
    for _, (stamp, written), (next_stamp, _) in pairs:
        if (
            written - stamp < REAL_TIME_WRITE_LAG_MS
            or not -CLOCK_SKEW_MS <= next_stamp - written <= NEXT_BATCH_GAP_MS
        ):
            return []
    return [(b, written - stamp) for b, (stamp, written), _ in pairs]


def _ids(ids: list[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:6])
    return shown + (", ..." if len(ids) > 6 else "")
