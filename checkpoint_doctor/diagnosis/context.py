"""The facts every check and the restart prediction share, derived once from a snapshot. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from checkpoint_doctor.detect import ASYNC, CONTINUOUS, MICRO_BATCH, detect_mode, is_async_pattern
from checkpoint_doctor.diagnosis.model import DiagnoseOptions
from checkpoint_doctor.diagnosis.versions import SparkError, SparkTarget
from checkpoint_doctor.model import CommitRecord, LogEntry, OffsetSeq
from checkpoint_doctor.snapshot import CheckpointSnapshot

OFFSETS = "offsets"
COMMITS = "commits"


@dataclass(frozen=True)
class LogProblem:
    """Why Spark cannot use a log file it reads on restart: the finding code and Spark's error."""

    code: str
    error: SparkError
    reason: str


class Context:
    """A snapshot plus the operator's options, with the derived facts checks need."""

    def __init__(self, snapshot: CheckpointSnapshot, target: SparkTarget, options: DiagnoseOptions) -> None:
        self.snapshot = snapshot
        self.target = target
        self.options = options
        self.detected = detect_mode(snapshot)
        self.mode = options.mode or self.detected.mode

    # ------------------------------------------------------------------------ log facts
    @cached_property
    def offsets_ids(self) -> tuple[int, ...]:
        """Return offsets batch ids present (canonical names)."""
        return self.snapshot.offsets.ids

    @cached_property
    def commit_ids(self) -> tuple[int, ...]:
        """Return commit batch ids present."""
        return self.snapshot.commits.ids

    @property
    def latest(self) -> int | None:
        """Return L, the newest offsets id."""
        return self.offsets_ids[-1] if self.offsets_ids else None

    @property
    def committed(self) -> int | None:
        """Return K, the newest commit id."""
        return self.commit_ids[-1] if self.commit_ids else None

    @cached_property
    def async_pattern(self) -> bool:
        """Return whether the logs look written by async progress tracking."""
        return is_async_pattern(self.offsets_ids, self.commit_ids)

    @property
    def is_async(self) -> bool:
        """Return whether the restart uses async progress tracking."""
        return self.mode == ASYNC

    @property
    def is_continuous(self) -> bool:
        """Return whether the restart uses continuous processing."""
        return self.mode == CONTINUOUS

    @property
    def is_micro_batch(self) -> bool:
        """Return whether the restart is plain synchronous micro-batch."""
        return self.mode == MICRO_BATCH

    def offsets(self, batch_id: int | None) -> LogEntry[OffsetSeq] | None:
        """Return the offsets entry of a batch."""
        return None if batch_id is None else self.snapshot.offsets.get(batch_id)

    def commit(self, batch_id: int | None) -> LogEntry[CommitRecord] | None:
        """Return the commit entry of a batch."""
        return None if batch_id is None else self.snapshot.commits.get(batch_id)

    @cached_property
    def restart_start_entry(self) -> LogEntry[OffsetSeq] | None:
        """Return the offsets file a restart uses as the start of batch L (L-1, or P when async)."""
        latest = self.latest
        if latest is None or latest == 0:
            return None
        if self.is_async:
            return self.snapshot.offsets.newest_below(latest)
        return self.offsets(latest - 1)

    def tail_gap_code(self) -> str | None:
        """Return the code for a missing ``offsets/L-1`` under the restart mode, or None if present.

        CD101/CD102: the sparse pattern of async progress tracking (sync restart fails, async works);
        CD103: one file missing right below L; CD109: L jumps further ahead of the previous file.
        """
        latest = self.latest
        if latest is None or latest == 0 or self.offsets(latest - 1) is not None or self.is_continuous:
            return None
        if self.async_pattern:
            return "CD102" if self.is_async else "CD101"
        if self.is_async:
            return None
        return "CD103" if (latest == 1 or self.offsets(latest - 2) is not None) else "CD109"

    # ------------------------------------------------------------------------ stateful?
    @cached_property
    def stateful(self) -> bool | None:
        """Return whether the query is stateful: as told, else from state/ contents, else unknown."""
        if self.options.stateful is not None:
            return self.options.stateful
        if any(op.stores for op in self.snapshot.state.operators):
            return True
        return None

    @cached_property
    def pinned_partitions(self) -> int | None:
        """Return the pinned spark.sql.shuffle.partitions of the newest readable offsets file."""
        for e in reversed(self.snapshot.offsets.entries):
            if e.record is not None and e.record.metadata is not None:
                value = e.record.metadata.conf_value("spark.sql.shuffle.partitions")
                if value is not None and value.isdigit():
                    return int(value)
                return None
        return None

    @property
    def local_fs(self) -> bool:
        """Return whether the checkpoint is on a local file system (Hadoop .crc files exist)."""
        root = self.snapshot.root
        return root.startswith("/") or root.startswith("file:")

    # ------------------------------------------------------------------------ reading problems
    def log_problem(self, entry: LogEntry[OffsetSeq] | LogEntry[CommitRecord], log: str) -> LogProblem | None:
        """Return why Spark (this target) cannot read a log entry on restart, or None."""
        t = self.target
        failure = entry.failure
        if failure is not None:
            if failure.kind == "unsupported-version":
                return LogProblem("CD005", t.read_failure(failure, log=log), failure.reason)
            if failure.kind == "java-serialized":
                return LogProblem("CD007", t.read_failure(failure, log=log), failure.reason)
            code = "CD003" if log == OFFSETS else "CD004"
            return LogProblem(code, t.read_failure(failure, log=log), failure.reason)
        record = entry.record
        if record is None:
            return None
        version = record.version
        if log == OFFSETS and version > t.max_offsets_version:
            return LogProblem(
                "CD005",
                t.too_new(entry.file.path, version, log=log),
                f"offsets log v{version} needs Spark 4.2 or newer",
            )
        if log == COMMITS:
            if t.commits_exact_match:
                wanted = self.options.checkpoint_format_version or 1
                if version != wanted and version <= 2:
                    return LogProblem(
                        "CD006",
                        t.too_new(entry.file.path, version, log=log, exact=wanted),
                        f"commit log v{version} but checkpointFormatVersion is {wanted}",
                    )
                if version > 2:
                    return LogProblem(
                        "CD005",
                        t.too_new(entry.file.path, version, log=log, exact=wanted),
                        f"commit log v{version} needs Spark 4.2 or newer",
                    )
            elif version > t.max_commits_version:
                return LogProblem(
                    "CD005",
                    t.too_new(entry.file.path, version, log=log),
                    f"commit log v{version} needs Spark 4.0 or newer",
                )
        return None
