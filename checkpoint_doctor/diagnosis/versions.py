"""What each supported Spark release line does differently on restart, and the texts it prints.

Texts are verbatim from the release jars (``MetadataVersionUtil``, ``StreamExecution``,
``OffsetSeqLog``, ``CommitLog``, ``MicroBatchExecution``, ``ContinuousExecution``) and from the restarts
recorded by ``scripts/generate_fixtures.py --stage oracle``.
``<cp>`` stands for the checkpoint root as Spark qualifies it (``file:/abs/path``, ``s3a://b/p``).
Messages are templates here; :func:`qualify_root` turns a root URL into Spark's form.
"""

from __future__ import annotations

from typing import Any

from checkpoint_doctor.diagnosis.changes.texts import ChangeTexts
from checkpoint_doctor.diagnosis.sources.delta import delta_release, new_wording
from checkpoint_doctor.diagnosis.sources.texts import SourceTexts
from checkpoint_doctor.diagnosis.spark_line import LINES, NEWEST, SparkError
from checkpoint_doctor.diagnosis.state.texts import StateTexts
from checkpoint_doctor.model import ParseFailure
from checkpoint_doctor.parsing.java_uuid import JavaUuidError
from checkpoint_doctor.valueclasses import frozen

__all__ = ["LINES", "NEWEST", "SparkError", "SparkTarget", "at_root", "qualify_root", "target"]


@frozen
class SparkTarget(StateTexts, SourceTexts, ChangeTexts):
    """A Spark release line and its restart rules (state store and source texts in the mixins)."""

    @property
    def max_offsets_version(self) -> int:
        """Highest offsets log version the reader accepts (v2 "OffsetMap" from 4.2)."""
        return 2 if self._at_least("4.2") else 1

    @property
    def commits_exact_match(self) -> bool:
        """4.0/4.1 validate the commit header against checkpointFormatVersion exactly."""
        return self.line in ("4.0", "4.1")

    def reads_offsets_version(self, version: int) -> bool:
        """Whether the offsets log reader accepts a ``v<version>`` header (asked as a yes/no: every
        line answers alike for v1, so a restart matrix's cells share the answer)."""
        return version <= self.max_offsets_version

    def commit_version_rule(self, version: int, wanted: int) -> str | None:
        """What the commit log reader makes of a ``v<version>`` header when the session's
        checkpointFormatVersion is ``wanted``: None (read), ``mismatch`` (4.0/4.1: v1/v2 other than
        the conf), ``exact-too-new`` (4.0/4.1: v3+), ``too-new`` (above this line's maximum)."""
        if self.commits_exact_match:
            if version != wanted and version <= 2:
                return "mismatch"
            return "exact-too-new" if version > 2 else None
        return "too-new" if version > self.max_commits_version else None

    @property
    def max_commits_version(self) -> int:
        """Highest commit log version the reader accepts (exact-match lines: the conf value)."""
        if self._at_least("4.2"):
            return 3
        return 1

    @property
    def missing_metadata_fatal(self) -> bool:
        """4.2+: a missing metadata file with non-empty logs fails the start."""
        return self._at_least("4.2")

    @property
    def fresh_dir_must_be_empty(self) -> bool:
        """4.1+: a new query refuses offsets/, commits/ or state/ that list any entry."""
        return self._at_least("4.1")

    @property
    def missing_state_dir_error(self) -> bool:
        """4.2+: a stateful restart with an empty/missing state/ fails with a named error."""
        return self._at_least("4.2")

    @property
    def empty_offsets_with_commits_asserts(self) -> bool:
        """4.2+: offsets empty but commits not fails at start with a bare assertion.

        The reference dates this to 4.3; real 4.2.1 does it too [exp: offsets-dir-deleted on 4.2.1].
        """
        return self._at_least("4.2")

    @property
    def repartition_check(self) -> bool:
        """4.2+: checkUnfinishedRepartitionOnRestart reads offsets/L and L-1 first when L > K.

        The reference dates this to 4.3; real 4.2.1 already fails with ``requirement failed:
        Previous batch N not found in offset log`` [exp: offsets-jump-ahead, offsets-gap-ahead,
        async-tail-uncommitted, missing-prev-offsets-uncommitted on 4.2.1].
        """
        return self._at_least("4.2")

    @property
    def auto_snapshot_repair(self) -> bool:
        """4.2+: a RocksDB store with changelogs falls back to older snapshots (autoSnapshotRepair).

        The reference dates this to 4.3; real 4.2.1 logs "Failed to load snapshot version 6 ... will
        retry repair with the next eligible snapshot version" and runs [exp: rocksdb-sst-missing,
        rocksdb-changelog-zip-truncated on 4.2.1].
        """
        return self._at_least("4.2")

    @property
    def source_evolution_needs_v2(self) -> bool:
        """4.3: source evolution on a checkpoint whose newest offsets file is v1 is refused.

        ``CheckpointVersionManager`` keeps the offsets version of an existing checkpoint; 4.2.1 wrote
        v1 offsets with source evolution on and restarted them, 4.3.0 refused that checkpoint with
        ``STREAMING_QUERY_EVOLUTION_ERROR.CANNOT_ENABLE_ON_EXISTING_CHECKPOINT`` [exp: offsets_v2
        written by 4.2.1, restarted on 4.3.0].
        """
        return self._at_least("4.3")

    @property
    def has_delta(self) -> bool:
        """Whether a delta-spark release exists for this line (none for 4.3): Delta sources are judged."""
        return delta_release(self.line) is not None

    @property
    def delta_release(self) -> str:
        """This line's delta-spark release (``""`` when none): asked only where Delta releases differ
        beyond wording (a widened type under a stream, ``sources.delta.widening``)."""
        return delta_release(self.line) or ""

    @property
    def delta_new_wording(self) -> bool:
        """Whether this line's Delta release (4.4+) words ``DELTA_MISSING_FILES_UNEXPECTED_VERSION`` in
        one sentence. Asked only where that error is said: the rest of a Delta source's restart is the
        same on every line with a release, so a restart matrix's lines share it."""
        release = delta_release(self.line)
        return release is not None and new_wording(release)

    @property
    def real_time_trigger(self) -> bool:
        """4.1+: ``Trigger.RealTime`` (SPARK-53736; PySpark's ``trigger(realTime=...)`` from 4.2)."""
        return self._at_least("4.1")

    @property
    def real_time_async_by_default(self) -> bool:
        """4.3: a stateless real-time query runs with async progress tracking at interval 0
        (``spark.sql.streaming.realTimeMode.asyncProgressTrackingByDefault.enabled``, default true);
        4.1/4.2 refuse async progress tracking in real-time mode."""
        return self._at_least("4.3")

    @property
    def real_time_needs_format_v2(self) -> bool:
        """4.3: real-time mode refuses state store checkpoint format 1 (resolved from the newest
        commit's version, else the session's) unless
        ``spark.sql.streaming.realTimeMode.dangerouslyAllowCheckpointV1.enabled``."""
        return self._at_least("4.3")

    # ------------------------------------------------------------------------- texts
    def real_time_purge_warning(self, committed: int, latest: int) -> str:
        """The WARN line of a real-time restart with ``L > K`` (MicroBatchExecution.initializeExecution)."""
        return (
            "Deleting extra entries in offset log to sync up with commit log. "
            f"Last committed batch id = {committed}, last offset log batch id = {latest}"
        )

    def real_time_checkpoint_v1(self) -> SparkError:
        """``STREAMING_REAL_TIME_MODE.CHECKPOINT_FORMAT_V1_NOT_SUPPORTED`` (4.3, at start)."""
        text = (
            "Real-time mode does not support state store checkpoint format v1, because a re-executed "
            "batch can reuse the state file names of a partially-written failed batch and lose data."
        )
        return SparkError(
            "[STREAMING_REAL_TIME_MODE.CHECKPOINT_FORMAT_V1_NOT_SUPPORTED] Streaming real-time mode has "
            f"the following limitation: {text} If you encountered this while switching an existing query "
            "to real-time mode, use a fresh checkpoint location. If you must continue with your existing "
            "checkpoint and accept that doing so exposes you to the possibility of data loss on failure, "
            "set spark.sql.streaming.realTimeMode.dangerouslyAllowCheckpointV1.enabled to true.",
            "Real-time mode does not support state store checkpoint format v1",
            "init",
            "STREAMING_REAL_TIME_MODE.CHECKPOINT_FORMAT_V1_NOT_SUPPORTED",
        )

    def read_failure(self, failure: ParseFailure, *, log: str, phase: str = "init") -> SparkError:
        """Return the error Spark raises reading a damaged offsets or commit file."""
        path = f"<cp>/{failure.path}"
        prefix = f"Failed to read log file {path}. "
        kind = failure.kind
        if kind == "empty":
            tail = (
                "Incomplete log file in the offset commit log" if log == "commits" else "Incomplete log file"
            )
            return SparkError(prefix + tail, tail, phase)
        if kind == "header-only":
            # offsets only: lines.next() on the missing metadata line (not wrapped, no file name)
            text = "next on empty iterator"
            return SparkError(text, text, phase)
        if kind in ("java-serialized", "not-text"):
            # Source.getLines with a UTF-8 decoder: java.nio.charset.MalformedInputException,
            # not wrapped, no file name [exp 3.5.9, 4.3.0: fixture offsets-java-serialized].
            text = "Input length = 1" if kind == "java-serialized" else "Input length = "
            return SparkError(f"{text} (MalformedInputException reading {path})", text, phase)
        if kind == "malformed-header":
            text = f"Log file was malformed: failed to read correct log version from {failure.found}."
            if self.error_classes:
                return SparkError(
                    prefix + "[MALFORMED_LOG_FILE] " + text + self.sqlstate("KD002"),
                    text,
                    phase,
                    "MALFORMED_LOG_FILE",
                )
            return SparkError(prefix + text, text, phase)
        if kind == "unsupported-version" and failure.version is not None:
            return self.too_new(failure.path, failure.version, log=log, phase=phase)
        if kind in ("truncated-json", "bad-json"):
            search = "Unexpected end-of-input" if kind == "truncated-json" else "Unexpected character"
            return SparkError(
                f"{search} ... (Jackson parser error reading {path}; the message does not name the file)",
                search,
                phase,
            )
        text = failure.reason
        return SparkError(prefix + text, text[:60], phase)

    def too_new(
        self, rel_path: str, version: int, *, log: str, phase: str = "init", exact: int | None = None
    ) -> SparkError:
        """Return the UnsupportedLogVersion error for a header newer than this line reads."""
        path = f"<cp>/{rel_path}"
        prefix = f"Failed to read log file {path}. "
        if exact is not None:
            text = (
                "[INVALID_LOG_VERSION.EXACT_MATCH_VERSION] UnsupportedLogVersion. "
                f"The only supported log version is v{exact}, but encountered v{version}."
            )
            return SparkError(
                prefix + text + self.sqlstate("KD002"),
                f"The only supported log version is v{exact}",
                phase,
                "INVALID_LOG_VERSION.EXACT_MATCH_VERSION",
            )
        # The file-stream logs and the source files under sources/<n>/ (Kafka initial offsets, rate
        # start time) all read version 1 at most, on every line.
        maximum = {"offsets": self.max_offsets_version, "commits": self.max_commits_version}.get(log, 1)
        if self.error_classes:
            text = (
                "[INVALID_LOG_VERSION.MAX_SUPPORTED_VERSION] UnsupportedLogVersion. The maximum supported "
                f"log version is v{maximum}, but encountered v{version}. The log file was produced by a "
                "newer version of Spark and cannot be read by this version. You need to upgrade."
            )
            return SparkError(
                prefix + text + self.sqlstate("KD002"),
                f"maximum supported log version is v{maximum}, but encountered v{version}",
                phase,
                "INVALID_LOG_VERSION.MAX_SUPPORTED_VERSION",
            )
        text = (
            f"UnsupportedLogVersion: maximum supported log version is v{maximum}, but encountered "
            f"v{version}. The log file was produced by a newer version of Spark and cannot be read by "
            "this version. Please upgrade."
        )
        return SparkError(
            prefix + text, f"maximum supported log version is v{maximum}, but encountered v{version}", phase
        )

    def requirement_failed(self, what: str) -> SparkError:
        """4.3 ``OfflineStateRepartitionUtils.isRepartitionBatch`` ``require`` failures."""
        text = f"requirement failed: {what}"
        return SparkError(text + self.sqlstate("XXKST"), text, "init")

    def unfinished_repartition(self, batch_id: int, committed: int) -> SparkError:
        """4.3: offsets/L pins other shuffle partitions than offsets/L-1 (a repartition batch)."""
        text = (
            f"[STREAMING_UNFINISHED_REPARTITION_DETECTED] The latest batch {batch_id} is for an unfinished "
            f"state repartitioning i.e. last committed batch is: {committed})."
        )
        return SparkError(
            text,
            "STREAMING_UNFINISHED_REPARTITION_DETECTED",
            "init",
            "STREAMING_UNFINISHED_REPARTITION_DETECTED",
        )

    def no_watermark_tracker(self) -> SparkError:
        """An offsets/L without metadata leaves MicroBatchExecution.watermarkTracker null."""
        text = 'Cannot invoke "...WatermarkTracker.currentWatermark()" because the return value of "...MicroBatchExecution.watermarkTracker()" is null'
        # The NullPointerException's helpful message is the sentence; the class names differ by line
        # (4.1 moved them to execution.streaming.runtime), so the log is searched for the method.
        return SparkError(text, "WatermarkTracker.currentWatermark()", "init", headline=text)

    def batch_missing(self, batch_id: int) -> SparkError:
        """``IllegalStateException: batch N doesn't exist`` (SPARK-38033 adds the ERROR log line)."""
        text = f"batch {batch_id} doesn't exist"
        return SparkError(text, text, "init")

    def batch_missing_log(self, missing: int, latest: int) -> str:
        """The ERROR log line Spark writes before ``batch N doesn't exist``."""
        return (
            f"The offset log for batch {missing} doesn't exist, which is required to restart the query "
            f"from the latest batch {latest} from the offset log. Please ensure there are two subsequent "
            "offset logs available for the latest batch via manually deleting the offset file(s). Please "
            "also ensure the latest batch for commit log is equal or one batch earlier than the latest "
            "batch for offset log."
        )

    def concurrent_update(self, batch_id: int, phase: str = "commit") -> SparkError:
        """``CONCURRENT_STREAM_LOG_UPDATE`` when a log entry to write already exists."""
        text = (
            f"[CONCURRENT_STREAM_LOG_UPDATE] Concurrent update to the log. Multiple streaming jobs "
            f"detected for {batch_id}."
        )
        return SparkError(
            text
            + " Please make sure only one streaming job runs on a specific checkpoint location at a time."
            + self.sqlstate("40000"),
            f"Multiple streaming jobs detected for {batch_id}",
            phase,
            "CONCURRENT_STREAM_LOG_UPDATE",
        )

    def concurrent_rename(self, directory: str, phase: str) -> SparkError:
        """The rename failure of ``createAtomic`` when the target (or its .crc) already exists."""
        text = f"Multiple streaming queries are concurrently using <cp>/{directory}."
        return SparkError(
            text + self.sqlstate("XXKST"),
            f"Multiple streaming queries are concurrently using <cp>/{directory}",
            phase,
        )

    def shuffle_partitions_not_int(self, value: str) -> SparkError:
        """The pinned ``spark.sql.shuffle.partitions`` is not an int [exp: offsets-partitions-not-int]:
        3.5/4.0 reject the conf itself; 4.1+ copy it to the state store partitions conf first."""
        if self._at_least("4.1"):
            text = (
                f"[INVALID_CONF_VALUE.TYPE_MISMATCH] The value '{value}' in the config "
                '"spark.sql.streaming.internal.stateStore.partitions" is invalid. It should be a/an '
                "'int' value."
            )
            return SparkError(
                text + self.sqlstate("22022"),
                "INVALID_CONF_VALUE.TYPE_MISMATCH",
                "init",
                "INVALID_CONF_VALUE.TYPE_MISMATCH",
            )
        text = f"spark.sql.shuffle.partitions should be int, but was {value}"
        return SparkError(text + self.sqlstate("XXKST"), "spark.sql.shuffle.partitions should be int", "init")

    def commit_v3_without_sink_map(self, path: str) -> SparkError:
        """4.2+: a ``v3`` commit body without ``sinkMetadataMap`` (json4s extraction, no file name)."""
        text = "No usable value for json\nDid not find value which can be converted into java.lang.String"
        return SparkError(
            f"{text}{self.sqlstate('XXKST')} (json4s reading <cp>/{path}; the message does not name the file)",
            "No usable value for json",
            "init",
        )

    def sink_concurrent_rename(self, sink_log_dir: str) -> SparkError:
        """The same rename failure in a file sink's log (FileStreamSinkLog is an HDFSMetadataLog):
        ``ManifestFileCommitProtocol.commitJob`` adds the batch while the batch runs."""
        text = f"Multiple streaming queries are concurrently using {sink_log_dir}."
        return SparkError(
            text + self.sqlstate("XXKST"),
            "Multiple streaming queries are concurrently using",
            "batch",
        )

    def missing_metadata(self) -> SparkError:
        """4.2+: ``STREAMING_CHECKPOINT_MISSING_METADATA_FILE`` at start()."""
        text = (
            "[STREAMING_CHECKPOINT_MISSING_METADATA_FILE] Checkpoint location <cp> is in an inconsistent "
            "state: the metadata file is missing but offset and/or commit logs contain data. Please restore "
            "the metadata file or create a new checkpoint directory."
        )
        return SparkError(
            text + self.sqlstate("42K03"),
            "STREAMING_CHECKPOINT_MISSING_METADATA_FILE",
            "start",
            "STREAMING_CHECKPOINT_MISSING_METADATA_FILE",
        )

    def metadata_unreadable(self, failure: ParseFailure) -> SparkError:
        """An unreadable ``metadata`` fails DataStreamWriter.start() with the parser's message."""
        # Jackson's own words: an empty file has no content at all, a cut one ends inside a value.
        search = {
            "empty": "No content to map due to end-of-input",
            "truncated-json": "Unexpected end-of-input",
        }.get(failure.kind, "Unexpected")
        return SparkError(
            f"{search} ... (driver log: Error reading stream metadata from <cp>/metadata)", search, "start"
        )

    def metadata_id_invalid(self, error: JavaUuidError) -> SparkError:
        """``UUID.fromString`` refuses the metadata's id: the JDK's exception, thrown by start()."""
        return SparkError(f"java.lang.{error.text}", error.message or f"java.lang.{error.exception}", "start")

    def source_count(self, in_log: int, in_query: int) -> SparkError:
        """``OffsetSeq.toStreamProgress`` assertion."""
        text = (
            f"assertion failed: There are [{in_log}] sources in the checkpoint offsets and now there are "
            f"[{in_query}] sources requested by the query. Cannot continue."
        )
        return SparkError(text, f"There are [{in_log}] sources in the checkpoint offsets", "init")

    def fresh_not_empty(self, directory: str) -> SparkError:
        """4.1+: a new query in a directory whose log dirs list entries."""
        text = (
            f"[STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY] The checkpoint location <cp>/{directory} should be "
            "empty on batch 0 Please either use a new checkpoint location, or delete the existing data in "
            "the checkpoint location."
        )
        return SparkError(
            text + self.sqlstate("42K03"),
            "STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY",
            "init",
            "STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY",
        )

    def empty_offsets_assertion(self) -> SparkError:
        """4.3: offsets empty while commits hold batches."""
        return SparkError("assertion failed", "assertion failed", "init")

    def source_evolution_on_v1(self) -> SparkError:
        """4.3: ``spark.sql.streaming.queryEvolution.enableSourceEvolution`` on a v1 offsets log."""
        text = (
            "[STREAMING_QUERY_EVOLUTION_ERROR.CANNOT_ENABLE_ON_EXISTING_CHECKPOINT] Streaming query evolution "
            "error: Cannot enable streaming source evolution on a checkpoint that was created without it. The "
            "existing checkpoint uses offset log format version 1, which does not support the named source "
            "tracking required by streaming source evolution. To use source evolution, start the query with a "
            "fresh checkpoint."
        )
        return SparkError(
            text + self.sqlstate("42KDE"),
            "STREAMING_QUERY_EVOLUTION_ERROR.CANNOT_ENABLE_ON_EXISTING_CHECKPOINT",
            "init",
            "STREAMING_QUERY_EVOLUTION_ERROR.CANNOT_ENABLE_ON_EXISTING_CHECKPOINT",
        )

    def continuous_commit_without_offsets(self, epoch: int) -> SparkError:
        """ContinuousExecution.getStartOffsets."""
        text = f"Batch {epoch} was committed without end epoch offsets!"
        return SparkError(text, text, "init")

    def async_stateful(self) -> SparkError:
        """Async progress tracking on a stateful plan."""
        text = "Stateful streaming queries does not support async progress tracking at this moment."
        return SparkError(text, text, "batch")

    def commits_behind_warning(self, committed: int, latest: int) -> str:
        """The WARN line for K < L-1."""
        return f"Batch completion log latest batch id is {committed}, which is not trailing batchid {latest} by one"


def line_of(version: str) -> str:
    """Return the release line of a Spark version: ``4.3``, ``4.3.0`` and ``4.3.1`` are line ``4.3``.

    Raises:
        ValueError: not a version of a supported line (the message lists the lines).
    """
    parts = version.strip().split(".")
    short = ".".join(parts[:2])
    if len(parts) > 3 or not all(p.isdigit() for p in parts) or short not in LINES:
        raise ValueError(f"unsupported Spark version {version!r}; supported: {', '.join(LINES)} (or x.y.z)")
    return short


def target(line: str | None) -> SparkTarget:
    """Return the target for a release line like ``3.5`` or ``4.3.0`` (default: newest)."""
    found = _TARGETS.get(line)
    return found if found is not None else SparkTarget(NEWEST if line is None else line_of(line))


#: The targets of the supported lines, as ``target`` returns them (a frozen value: one per line
#: serves every cell of every matrix; each cell asked for it by name).
_TARGETS: dict[str | None, SparkTarget] = {None: SparkTarget(NEWEST), **{x: SparkTarget(x) for x in LINES}}


def qualify_root(root: str) -> str:
    """Return the checkpoint root as Spark prints it (``file:/abs``, ``s3a://bucket/prefix``)."""
    if root.startswith("file://"):
        return "file:" + root[len("file://") :]
    if root.startswith("/"):
        return "file:" + root
    if root.startswith("s3://"):
        return "s3a://" + root[len("s3://") :]
    return root


#: Values :func:`at_root` returns as they are.
_PLAIN = frozenset({int, float, bool, type(None)})

#: The checkpoint root in the texts above (and in the restarts sparklab records).
ROOT_TOKEN = "<cp>"


def at_root(value: Any, root: str) -> Any:
    """Return ``value`` (a text, or a JSON-safe dict/list of them) with ``<cp>`` replaced by the
    checkpoint root as Spark prints it, so that an operator can search a real driver log for it."""
    # Called on every finding and cell of an audit's matrices: the root is qualified once,
    # containers are rebuilt by comprehension and numbers (lists of missing versions, batch ids)
    # pass without a call.
    return _at_root(value, qualify_root(root))


def _at_root(v: Any, qualified: str) -> Any:
    # A module function, not a closure calling itself: that closure was a reference cycle per
    # call, the only garbage the cyclic collector found in an audit (bench: audit).
    if type(v) in _PLAIN:
        return v
    if isinstance(v, str):
        return v.replace(ROOT_TOKEN, qualified) if ROOT_TOKEN in v else v
    if isinstance(v, dict):
        return {k: x if type(x) in _PLAIN else _at_root(x, qualified) for k, x in v.items()}
    if isinstance(v, list):
        return [x if type(x) in _PLAIN else _at_root(x, qualified) for x in v]
    if isinstance(v, tuple):
        return tuple([x if type(x) in _PLAIN else _at_root(x, qualified) for x in v])
    return v
