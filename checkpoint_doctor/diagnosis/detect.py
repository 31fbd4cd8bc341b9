"""Infer how a checkpoint was written: the execution mode and the Spark release line. Pure.

* Mode (``AsyncProgressTrackingMicroBatchExecution``, ``ContinuousExecution``): continuous processing writes offsets files with an empty metadata
  line; asynchronous progress tracking writes sparse logs in which every commit id is also an
  offsets id and at least one commit follows a gap (``AsyncOffsetSeqLog``/``AsyncCommitLog`` only
  persist every ``asyncProgressTrackingCheckpointIntervalMs``); real-time mode (``Trigger.RealTime``,
  Spark 4.1+) writes ``offsets/N`` when batch N ENDS, at least the trigger's duration after the
  batch's ``batchTimestampMs`` (SPARK-53915), where micro-batch writes it before the batch runs: its
  only trace, readable when the listing keeps the files' times (nothing in the files' contents
  differs: no conf of real-time mode is pinned in ``OffsetSeqMetadata``); anything else is plain
  micro-batch.
* Writer (``OffsetSeqMetadata.relevantSQLConfs``): a Spark driver pins every "relevant" SQL conf it knows into each
  offsets file, so the set of conf keys in a file names the release line that wrote it.
"""

from __future__ import annotations

from checkpoint_doctor.diagnosis.versions import LINES
from checkpoint_doctor.model import OffsetSeq
from checkpoint_doctor.reading.mode import (  # noqa: F401 - the mode is read below, judged here
    ASYNC,
    CLOCK_SKEW_MS,
    CONTINUOUS,
    MICRO_BATCH,
    MODES,
    NEXT_BATCH_GAP_MS,
    REAL_TIME,
    REAL_TIME_WRITE_LAG_MS,
    ModeGuess,
    detect_mode,
    is_async_pattern,
    real_time_lags,
)
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.valueclasses import frozen

# OffsetSeqMetadata.relevantSQLConfs by release, read from each release jar.
_KEYS_SINCE = (
    ("4.0", ("spark.sql.streaming.stateStore.encodingFormat",)),
    (
        "4.2",
        (
            "spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion",
            "spark.sql.streaming.stateStore.rowChecksum.enabled",
            "spark.sql.function.protobufExtensions.enabled",
            "spark.sql.streaming.queryEvolution.enableSourceEvolution",
        ),
    ),
    (
        "4.3",
        (
            "spark.sql.streaming.statefulOperator.alwaysNullableOutput.enabled",
            "spark.sql.dropDuplicates.deterministicKeyOrder.enabled",
        ),
    ),
)


@frozen
class WriterGuess:
    """The Spark release line that most likely wrote the newest batch.

    ``line`` is ``"3.5"`` (meaning 3.5.x or older), ``"4.0"`` (4.0 or 4.1), ``"4.2"`` or ``"4.3"``
    (4.3 or newer), read from the newest offsets file; ``minimum`` is the oldest release that can
    have written every file present (a checkpoint downgraded after a 4.x run keeps 4.x files).
    """

    line: str | None
    minimum: str | None
    evidence: tuple[str, ...]
    #: A line older than every supported one that the newest offsets file names: ``"2.1"`` when it
    #: pins no SQL conf at all (Spark 2.2 started pinning them, SPARK-19873) and no file present
    #: needs a newer writer.
    older: str | None = None

    @property
    def beyond_line(self) -> bool:
        """Whether a file present needs a newer line than the newest offsets file's conf keys name
        (``line`` ``"4.0"`` spans 4.0 and 4.1)."""
        if self.line is None or self.minimum is None:
            return False
        end = "4.1" if self.line == "4.0" else self.line
        return LINES.index(self.minimum) > LINES.index(end)

    @property
    def label(self) -> str:
        """Return a short human-readable label."""
        if self.line is None:
            if self.older is not None:
                return f"{self.older}.x or older"
            return f">= {self.minimum}" if self.minimum else "unknown"
        if self.beyond_line:
            # The newest offsets file pins an older line's conf keys but a file present needs a newer
            # writer: Spark's own 4.0.0 golden checkpoints (checkpoint-version-4.0.0, written by a
            # 4.0 build before stateStore.encodingFormat existed) read so, and so does a checkpoint
            # restarted by an older line after a newer one wrote it. One answer names both.
            newer = WriterGuess(self.minimum, self.minimum, ()).label
            return f"{newer} (with {self.line}'s conf keys), or {self.line}.x after a downgrade"
        if self.line == "4.0" and self.minimum == "4.1":
            # A file only 4.1 writes narrows "4.0 or 4.1" to 4.1 (matrix.writer_lines stars 4.1 alone).
            return "4.1.x"
        return {
            "3.5": "3.5.x or older",
            "4.0": "4.0.x or 4.1.x",
            "4.1": "4.1.x",
            "4.2": "4.2.x",
            "4.3": "4.3.x or newer",
        }[self.line]


def writer_line_of(seq: OffsetSeq) -> str | None:
    """Return the release line whose conf keys this offsets file carries, or None if unknown."""
    if seq.metadata is None or not seq.metadata.has_conf:
        return None
    keys = {k for k, _ in seq.metadata.conf}
    line = "3.5"
    for release, wanted in _KEYS_SINCE:
        if any(k in keys for k in wanted):
            line = release
    return line


def detect_writer(snapshot: CheckpointSnapshot) -> WriterGuess:
    """Return the Spark release line that most likely wrote the newest batch, with evidence."""
    evidence: list[str] = []
    minimum = "3.5"

    def at_least(release: str, why: str) -> None:
        nonlocal minimum
        evidence.append(why)
        if LINES.index(release) > LINES.index(minimum):
            minimum = release

    line = None
    older = None
    latest = next((e for e in reversed(snapshot.offsets.entries) if e.record is not None), None)
    if latest is not None and latest.record is not None:
        line = writer_line_of(latest.record)
        if line is not None:
            at_least(line, f"the conf keys pinned in {latest.file.path} are those of Spark {line}")
        elif latest.record.metadata is not None and latest.record.version == 1:
            older = "2.1"
        if latest.record.version >= 2:
            at_least("4.2", f"{latest.file.path} is offsets log v{latest.record.version}")
    for e in reversed(snapshot.commits.entries):
        if e.record is not None:
            if e.record.version == 2:
                at_least("4.0", f"{e.file.path} is commit log v2 (state store checkpoint format 2)")
            elif e.record.version >= 3:
                at_least("4.2", f"{e.file.path} is commit log v{e.record.version}")
            break
    if any(op.metadata is not None for op in snapshot.state.operators):
        at_least("4.0", "state operator metadata (state/<op>/_metadata/metadata) exists")
    if any(s.spark_checksums for op in snapshot.state.operators for s in op.stores):
        at_least("4.1", "state files have Spark checksum side files (<file>.crc)")
    if older is not None and not evidence and latest is not None:
        # Nothing present needs a newer writer: an offsets metadata line without a conf map is what
        # Spark <= 2.1 wrote (StreamSuite "recover from a Spark v2.1 checkpoint").
        evidence.append(f"{latest.file.path} pins no SQL confs, as Spark 2.1 and older wrote")
    else:
        older = None
    return WriterGuess(line, minimum, tuple(dict.fromkeys(evidence)), older)
