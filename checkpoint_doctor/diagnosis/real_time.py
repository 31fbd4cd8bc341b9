"""A restart with the real-time trigger (``Trigger.RealTime``, Spark 4.1+, SPARK-53736). Pure.

What it does differently from a micro-batch restart, in ``MicroBatchExecution.initializeExecution``
(4.1.4, 4.2.1, 4.3.0 release jars):

* With offsets above the newest commit (``L > K``) it deletes them (``offsetLog.purgeAfter(K)``,
  logging "Deleting extra entries in offset log to sync up with commit log. ..."): the uncommitted
  batch is planned again from ``offsets/K`` and reads what its tasks reach, not the logged range. A
  real-time batch's end offsets are only known when it ends (SPARK-53915), so the logged range of an
  uncommitted batch is not a plan the restart has to honour. 4.2+ run the unfinished-repartition
  check on the logs as they were, before the purge.
* 4.3 refuses state store checkpoint format 1, resolved from the newest commit's version
  (``CheckpointVersionManager``; its own real-time runs write v2 commits, as it sets format 2 and the
  RocksDB provider for real-time queries), unless
  ``spark.sql.streaming.realTimeMode.dangerouslyAllowCheckpointV1.enabled``: a checkpoint written by
  4.1/4.2 (v1 commits) cannot be upgraded to 4.3 in real-time mode.
* 4.3 runs a stateless real-time query with async progress tracking at interval 0
  (:attr:`~checkpoint_doctor.diagnosis.context.Context.is_async`).
"""

from __future__ import annotations

from checkpoint_doctor.reading.assembly import simulate_changes
from checkpoint_doctor.reading.layout import Area, hadoop_crc_path
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot

DANGEROUSLY_ALLOW_V1 = "spark.sql.streaming.realTimeMode.dangerouslyAllowCheckpointV1.enabled"


def purged_ids(offsets: tuple[int, ...], committed: int | None) -> tuple[int, ...]:
    """Return the offsets ids a real-time restart deletes: every one above the newest commit (all of
    them when there is no commit: ``purgeAfter(-1)``)."""
    floor = -1 if committed is None else committed
    return tuple(i for i in offsets if i > floor)


def after_purge(snapshot: CheckpointSnapshot, ids: tuple[int, ...]) -> CheckpointSnapshot:
    """Return the snapshot as the restart sees it once ``offsets/<id>`` (and their checksums) are gone."""
    removed: list[tuple[Area, str]] = []
    for i in ids:
        path = f"offsets/{i}"
        removed.append((Area.CHECKPOINT, path))
        crc = hadoop_crc_path(path)
        if snapshot.file(crc) is not None:
            removed.append((Area.CHECKPOINT, crc))
    return simulate_changes(snapshot, removed=removed)


def format_v1_refused(commit_version: int | None, allow_v1: str | None) -> bool:
    """Whether 4.3 refuses the real-time restart for state store checkpoint format 1: the newest
    commit file is v1 (no commit: the session's format, which real-time mode sets to 2)."""
    if allow_v1 is not None and allow_v1.lower() == "true":
        return False
    return commit_version is not None and commit_version < 2
