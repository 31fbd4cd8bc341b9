"""The facts every check and the restart prediction share, derived once from a snapshot. Pure."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.detect import ASYNC, CONTINUOUS, REAL_TIME, is_async_pattern
from checkpoint_doctor.diagnosis.facts import SnapshotFacts, StoreVerdict
from checkpoint_doctor.diagnosis.lazy import cached
from checkpoint_doctor.diagnosis.model import DiagnoseOptions
from checkpoint_doctor.diagnosis.state.chain import Restorability
from checkpoint_doctor.diagnosis.state.statefulness import STATEFUL
from checkpoint_doctor.diagnosis.tracing import untraced
from checkpoint_doctor.diagnosis.versions import SparkError, SparkTarget
from checkpoint_doctor.model import CommitRecord, LogEntry, OffsetSeq
from checkpoint_doctor.parsing.text import java_parse_int
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot, StateOperator, StateStore
from checkpoint_doctor.valueclasses import frozen

OFFSETS = "offsets"
COMMITS = "commits"

#: State format confs whose legacy default (used when an offsets file has no conf map) differs
#: from what current releases write (OffsetSeqMetadata.relevantSQLConfDefaultValues).
LEGACY_STATE_FORMATS = (
    ("spark.sql.streaming.aggregation.stateFormatVersion", "1"),
    ("spark.sql.streaming.join.stateFormatVersion", "1"),
    ("spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion", "1"),
)


def is_global_limit(op: StateOperator) -> bool:
    """Whether a state operator is a streaming global limit: named so in its operator metadata
    (4.0+, ``globalLimit``), or its store's schema is StreamingGlobalLimitExec's (a key of null type
    named ``key``, a long ``value``) where no metadata names it."""
    if op.metadata is not None and op.metadata.record is not None:
        return op.metadata.record.operator_name == "globalLimit"
    for store in op.stores:
        schema = store.schema.record if store.schema is not None else None
        if schema is not None:
            return (
                schema.key_fields == ("key",)
                and schema.value_fields == ("value",)
                and schema.key_schema is not None
                and ('"type":"void"' in schema.key_schema or '"type":"null"' in schema.key_schema)
            )
    return False


@frozen
class LogProblem:
    """Why Spark cannot use a log file it reads on restart: the finding code and Spark's error."""

    code: Code
    error: SparkError
    reason: str


class Context:
    """A snapshot plus the operator's options, with the derived facts checks need."""

    def __init__(
        self,
        snapshot: CheckpointSnapshot,
        target: SparkTarget,
        options: DiagnoseOptions,
        facts: SnapshotFacts | None = None,
    ) -> None:
        self.snapshot = snapshot
        #: The target's line rules: every question asked of it may be recorded (a restart matrix
        #: replays them for the next line, :mod:`~checkpoint_doctor.diagnosis.line_rules`), so a
        #: value cached on this object must not depend on it.
        self.target = target
        #: The line the results are stamped with (not a question of the target's rules).
        self.line = untraced(target).line
        self.options = options
        # Shared by every cell of a restart matrix: what the checkpoint is does not depend on the target.
        self.facts = facts if facts is not None else SnapshotFacts(snapshot)
        self.detected = self.facts.mode
        self.mode = options.mode or self.detected.mode
        #: The offsets and commit batch ids present (canonical names), ascending: asked by most
        #: checks of every cell, set here rather than looked up lazily (bench: matrix).
        self.offsets_ids: tuple[int, ...] = snapshot.offsets.ids
        self.commit_ids: tuple[int, ...] = snapshot.commits.ids

    # ------------------------------------------------------------------------ log facts

    @property
    def latest(self) -> int | None:
        """Return L, the newest offsets id."""
        return self.offsets_ids[-1] if self.offsets_ids else None

    @property
    def committed(self) -> int | None:
        """Return K, the newest commit id."""
        return self.commit_ids[-1] if self.commit_ids else None

    @cached
    def async_pattern(self) -> bool:
        """Return whether the logs look written by async progress tracking."""
        return is_async_pattern(self.offsets_ids, self.commit_ids)

    @property
    def is_async(self) -> bool:
        """Return whether the restart uses async progress tracking (4.3 real-time: when stateless)."""
        if self.is_real_time:
            value = self.session_conf(
                "spark.sql.streaming.realTimeMode.asyncProgressTrackingByDefault.enabled"
            )
            on = value is None or value.lower() == "true"
            return self.target.real_time_async_by_default and on and self.stateful is not True
        return self.mode == ASYNC

    @property
    def is_real_time(self) -> bool:
        """Return whether the restart uses the real-time trigger (``Trigger.RealTime``)."""
        return self.mode == REAL_TIME

    @property
    def is_continuous(self) -> bool:
        """Return whether the restart uses continuous processing."""
        return self.mode == CONTINUOUS

    def offsets(self, batch_id: int | None) -> LogEntry[OffsetSeq] | None:
        """Return the offsets entry of a batch."""
        return None if batch_id is None else self.snapshot.offsets.get(batch_id)

    def commit(self, batch_id: int | None) -> LogEntry[CommitRecord] | None:
        """Return the commit entry of a batch."""
        return None if batch_id is None else self.snapshot.commits.get(batch_id)

    @property
    def restart_start_entry(self) -> LogEntry[OffsetSeq] | None:
        """Return the offsets file a restart uses as the start of batch L (L-1, or P when async);
        not cached: whether the restart is async is a question of the line in real-time mode."""
        latest = self.latest
        if latest is None or latest == 0:
            return None
        if self.is_async:
            return self.snapshot.offsets.newest_below(latest)
        return self.offsets(latest - 1)

    def tail_gap_code(self, *, strict: bool = False) -> Code | None:
        """Return the code for a missing ``offsets/L-1`` under the restart mode, or None if present.

        CD101/CD102: the sparse pattern of async progress tracking (sync restart fails, async works);
        CD103: one file missing right below L; CD109: L jumps further ahead of the previous file.
        ``strict``: the restart needs ``offsets/L-1`` whatever the mode (4.3's repartition check).
        """
        latest = self.latest
        if latest is None or latest == 0 or self.offsets(latest - 1) is not None or self.is_continuous:
            return None
        if self.async_pattern:
            return Code.ASYNC_TAIL_SYNC_RESTART if (strict or not self.is_async) else Code.ASYNC_PROGRESS_LOG
        if self.is_async and not strict:
            return None
        return (
            Code.OFFSETS_PREDECESSOR_MISSING
            if (latest == 1 or self.offsets(latest - 2) is not None)
            else Code.OFFSETS_JUMP_AHEAD
        )

    # ------------------------------------------------------------------------ stateful?
    @cached
    def stateful(self) -> bool | None:
        """Return whether the query is stateful: as told, else from the checkpoint's traces, else unknown."""
        if self.options.stateful is not None:
            return self.options.stateful
        if self.facts.statefulness.verdict == STATEFUL:
            return True
        return None

    @cached
    def pinned_partitions(self) -> int | None:
        """Return the pinned spark.sql.shuffle.partitions of the newest readable offsets file."""
        for e in reversed(self.snapshot.offsets.entries):
            if e.record is not None and e.record.metadata is not None:
                value = e.record.metadata.conf_value("spark.sql.shuffle.partitions")
                # Spark reads it as a Java int (not one: CD013, the restart fails before state).
                return java_parse_int(value) if value is not None else None
        return None

    def operator_partitions(self, op: StateOperator) -> int | None:
        """Return how many partition directories an operator's state has: the pinned shuffle
        partitions, but one for a global limit (``StreamingGlobalLimitExec`` requires ``AllTuples``
        and writes its single count under partition 0 only, streamingLimits.scala; Spark's own
        checkpoint-version-4.0.0/{hdfs,rocksdb}/limit hold state/0/0 alone with 5 pinned)."""
        if is_global_limit(op):
            return 1
        return self.pinned_partitions

    @cached
    def pinned_provider(self) -> str:
        """Return ``rocksdb`` or ``hdfs``: the state store provider pinned in the newest offsets file."""
        for e in reversed(self.snapshot.offsets.entries):
            if e.record is not None and e.record.metadata is not None:
                value = e.record.metadata.conf_value("spark.sql.streaming.stateStore.providerClass") or ""
                return "rocksdb" if "RocksDB" in value else "hdfs"
        return "hdfs"

    @property
    def checkpoint_format_version(self) -> int:
        """The session's ``stateStore.checkpointFormatVersion`` (told, else from the confs, else 1)."""
        if self.options.checkpoint_format_version is not None:
            return self.options.checkpoint_format_version
        value = self.session_conf("spark.sql.streaming.stateStore.checkpointFormatVersion")
        return int(value) if value is not None and value.isdigit() else 1

    def store_unique_id(self, store: StateStore, version: int) -> str | None:
        """Return the checkpoint-format-2 unique id of a store's ``version`` from commits/(version-1)."""
        return self.facts.store_unique_id(store, version)

    def restorability(self, store: StateStore, version: int) -> tuple[Restorability, str | None]:
        """Return whether the restart loads ``version`` in ``store``, and the code if it cannot."""
        verdict = self.facts.restorability(store, version, self.auto_snapshot_repair)
        return verdict.result, verdict.code

    def notable_stores(self, version: int) -> tuple[StoreVerdict, ...]:
        """Return the stores that cannot load ``version`` on this restart, or load it only by skipping
        their newest snapshot, in operator then store order (shared by every cell of a matrix)."""
        return self.facts.notable_stores(version, self.auto_snapshot_repair)

    @property
    def unreadable_state_files(self) -> frozenset[str]:
        """State files that were read and cannot be what their name says (zips, deltas, changelogs)."""
        return self.facts.unreadable_state_files

    def legacy_state_formats_differ(self, seq: OffsetSeq) -> bool:
        """Whether restoring confs from ``seq`` (no conf map) changes the state formats in use."""
        if seq.metadata is None or seq.metadata.has_conf:
            return False
        for e in reversed(self.snapshot.offsets.entries):
            md = e.record.metadata if e.record is not None else None
            if md is None or not md.has_conf:
                continue
            return any(md.conf_value(key) not in (None, legacy) for key, legacy in LEGACY_STATE_FORMATS)
        # No offsets file pins a conf: the legacy defaults Spark falls back to
        # (OffsetSeqMetadata.relevantSQLConfDefaultValues) exist for exactly such checkpoints, written
        # by Spark <= 2.1 (SPARK-19873 added the conf map in 2.2) with the formats now called 1, and
        # StreamSuite "recover from a Spark v2.1 checkpoint" restarts one on every line. Only a state
        # schema file (state/<op>/<part>/_metadata/schema, Spark 3.1+, SPARK-27237) or operator
        # metadata (4.0+) proves a newer writer whose conf map was lost (its default formats are 2).
        return any(
            op.metadata is not None or any(store.schema is not None for store in op.stores)
            for op in self.snapshot.state.operators
        )

    def session_conf(self, key: str) -> str | None:
        """Return a session conf the operator passed for the restart."""
        return dict(self.options.confs).get(key)

    @property
    def auto_snapshot_repair(self) -> bool:
        """Whether the target falls back to older RocksDB snapshots (4.2+, on unless disabled).

        Without RocksDB stores the answer changes nothing (``chain.check_version`` falls back only
        in RocksDB stores) and the line is not asked: a restart matrix's lines then share the
        state's verdicts (bench: matrix)."""
        if not self.facts.rocksdb:
            return False
        value = self.session_conf("spark.sql.streaming.stateStore.autoSnapshotRepair.enabled")
        return self.target.auto_snapshot_repair and (value is None or value.lower() == "true")

    @property
    def local_fs(self) -> bool:
        """Return whether the checkpoint is on a local file system (Hadoop .crc files exist)."""
        root = self.snapshot.root
        return root.startswith(("/", "file:"))

    # ------------------------------------------------------------------------ reading problems
    def log_problem(self, entry: LogEntry[OffsetSeq] | LogEntry[CommitRecord], log: str) -> LogProblem | None:
        """Return why Spark (this target) cannot read a log entry on restart, or None."""
        t = self.target
        failure = entry.failure
        if failure is not None:
            if (
                failure.kind == "unsupported-version"
                and log == COMMITS
                and failure.version
                and t.commits_exact_match
            ):
                # 4.0/4.1 validate commit headers with validateVersionExactMatch whatever the number
                # [exp: commit-too-new, commit-header-v7 on 4.0.5 and 4.1.4].
                error = t.too_new(
                    entry.file.path, failure.version, log=log, exact=self.checkpoint_format_version
                )
                return LogProblem(Code.LOG_VERSION_TOO_NEW, error, failure.reason)
            if failure.kind == "unsupported-version":
                return LogProblem(Code.LOG_VERSION_TOO_NEW, t.read_failure(failure, log=log), failure.reason)
            if failure.kind == "java-serialized":
                return LogProblem(
                    Code.OFFSETS_JAVA_SERIALIZED, t.read_failure(failure, log=log), failure.reason
                )
            code = Code.OFFSETS_FILE_UNREADABLE if log == OFFSETS else Code.COMMIT_FILE_UNREADABLE
            return LogProblem(code, t.read_failure(failure, log=log), failure.reason)
        record = entry.record
        if record is None:
            return None
        version = record.version
        if log == OFFSETS and not t.reads_offsets_version(version):
            return LogProblem(
                Code.LOG_VERSION_TOO_NEW,
                t.too_new(entry.file.path, version, log=log),
                f"offsets log v{version} needs Spark 4.2 or newer",
            )
        if log == COMMITS:
            wanted = self.checkpoint_format_version
            rule = t.commit_version_rule(version, wanted)
            if rule == "mismatch":
                return LogProblem(
                    Code.COMMIT_VERSION_MISMATCH,
                    t.too_new(entry.file.path, version, log=log, exact=wanted),
                    f"commit log v{version} but checkpointFormatVersion is {wanted}",
                )
            if rule == "exact-too-new":
                return LogProblem(
                    Code.LOG_VERSION_TOO_NEW,
                    t.too_new(entry.file.path, version, log=log, exact=wanted),
                    f"commit log v{version} needs Spark 4.2 or newer",
                )
            if rule == "too-new":
                return LogProblem(
                    Code.LOG_VERSION_TOO_NEW,
                    t.too_new(entry.file.path, version, log=log),
                    f"commit log v{version} needs Spark 4.0 or newer",
                )
            if version == 3 and isinstance(record, CommitRecord) and record.sink_metadata_json is None:
                # CommitMetadataV3 requires sinkMetadataMap; json4s fails extracting it
                # [exp: commit-v3-without-sink-map on 4.2.1 and 4.3.0].
                return LogProblem(
                    Code.COMMIT_FILE_UNREADABLE,
                    t.commit_v3_without_sink_map(entry.file.path),
                    "a v3 commit without the sinkMetadataMap that v3 requires",
                )
        return None
