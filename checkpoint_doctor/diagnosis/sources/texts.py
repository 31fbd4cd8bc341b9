"""What each Spark line prints when a source's own files under ``sources/<n>/`` cannot be read. Pure.

Texts are verbatim from real runs on every line (fixtures/spark-*/rate-start-*, file-source-log-*)
and, for Kafka (no connector here), from ``KafkaSourceInitialOffsetWriter``. Each reader has its
own decoding: the rate and Kafka readers decode leniently (``IOUtils.toString``/``Utils.toString``:
bad bytes become replacement characters), the file-stream log strictly (``Source.getLines``).
``HDFSMetadataLog.get`` prefixes an ``IllegalStateException`` with ``Failed to read log file <f>.``
and lets everything else through unwrapped.
"""

from __future__ import annotations

from checkpoint_doctor.diagnosis.spark_line import SparkError, SparkLine
from checkpoint_doctor.ids import id_range
from checkpoint_doctor.model import ParseFailure

#: ``HDFSMetadataLog`` text for a file without a ``v<N>\n`` head (rate and Kafka readers).
NO_VERSION_LINE = "Log file was malformed: failed to detect the log file version line."


def jackson_search(line: str) -> str:
    """The start of Jackson's message for a JSON value that does not parse.

    A bare word is an ``Unrecognized token 'not'``; any other character is an ``Unexpected character``
    (json4s on Jackson, as the file-stream log and the offsets log parse their lines).
    """
    text = line.lstrip(" \t\r\n")
    return "Unrecognized token" if text[:1].isalpha() else "Unexpected character"


class SourceTexts(SparkLine):
    """Failures of the rate source, the file source and Kafka reading their own files."""

    def _wrapped(
        self, rel_path: str, text: str, search: str, phase: str, error_class: str | None = None
    ) -> SparkError:
        return SparkError(f"Failed to read log file <cp>/{rel_path}. {text}", search, phase, error_class)

    def rate_start_unreadable(
        self, failure: ParseFailure, head: bytes, *, too_new: SparkError | None
    ) -> SparkError:
        """``RateStreamMicroBatchStream.creationTimeMs`` reading ``sources/<n>/0`` at source creation.

        Its deserializer asserts the content is not empty (``assertion failed``), wants a ``v`` first
        and a newline after the version (else ``failed to detect the log file version line``), then
        validates the version [exp: rate-start-empty, -garbage, -bad-header, -too-new on every line].
        """
        if failure.kind == "empty":
            return SparkError("assertion failed", "assertion failed", "init")
        if too_new is not None:
            return too_new
        if not head.startswith(b"v") or b"\n" not in head:
            return self._wrapped(
                failure.path, NO_VERSION_LINE, "failed to detect the log file version line", "init"
            )
        if failure.kind == "malformed-header":
            text = f"Log file was malformed: failed to read correct log version from {failure.found}."
            if self.error_classes:
                return self._wrapped(
                    failure.path, "[MALFORMED_LOG_FILE] " + text, text, "init", "MALFORMED_LOG_FILE"
                )
            return self._wrapped(failure.path, text, text, "init")
        # "v1\n<not a number>": LongOffset(SerializedOffset(..)) -> NumberFormatException, unwrapped
        return SparkError(f"For input string: ... (reading <cp>/{failure.path})", "For input string", "init")

    def kafka_initial_unreadable(self, failure: ParseFailure, *, too_new: SparkError | None) -> SparkError:
        """``KafkaSourceInitialOffsetWriter.deserialize`` via ``KafkaMicroBatchStream.initialOffset``.

        It skips one byte, requires content (``requirement failed``), takes a leading ``v`` as the
        version line (no newline: ``failed to detect the log file version line``) and validates it.
        The stream asks for it while planning the first batch that has no start offset.
        """
        if failure.kind == "empty":
            return SparkError("requirement failed", "requirement failed", "batch")
        if too_new is not None:
            return too_new
        if failure.kind == "malformed-header" and failure.found is None:
            return self._wrapped(
                failure.path, NO_VERSION_LINE, "failed to detect the log file version line", "batch"
            )
        if failure.kind == "malformed-header":
            text = f"Log file was malformed: failed to read correct log version from {failure.found}."
            if self.error_classes:
                return self._wrapped(
                    failure.path, "[MALFORMED_LOG_FILE] " + text, text, "batch", "MALFORMED_LOG_FILE"
                )
            return self._wrapped(failure.path, text, text, "batch")
        return SparkError(
            f"{failure.reason} (KafkaSourceOffset of <cp>/{failure.path}; Jackson's text)",
            "Unexpected",
            "batch",
        )

    @property
    def kafka_rerun_metrics_npe(self) -> bool:
        """4.1: re-running a logged Kafka batch fails once it has run, in progress reporting.

        ``KafkaMicroBatchStream.metrics`` wraps ``latestPartitionOffsets`` in ``Some`` since SPARK-54027
        (real-time mode for Kafka); a re-run batch never calls ``latestOffset()``, so it is
        ``Some(null)`` and ``.get.map`` throws (SPARK-55271, SPARK-57438) [exp: connector 4.1.1 on
        4.1.4, fixtures/kafka-realtime/*-uncommitted-tail restarted in micro-batch and async mode].
        """
        return self.line == "4.1"

    def kafka_rerun_metrics_error(self) -> SparkError:
        """The NullPointerException of :attr:`kafka_rerun_metrics_npe`, as the query's failure."""
        search = 'Cannot invoke "scala.collection.IterableOps.map(scala.Function1)" because the return value of "scala.Option.get()" is null'
        return SparkError(
            f"[STREAM_FAILED] Query [id = <id>, runId = <run>] terminated with exception: {search}"
            + self.sqlstate("XXKST"),
            search,
            "batch",
            "STREAM_FAILED",
            headline="NullPointerException in KafkaMicroBatchStream.metrics (SPARK-55271)",
        )

    def file_source_entry_missing(self, rel_path: str, latest: int, interval: int) -> SparkError:
        """``CompactibleFileStreamLog.allFiles``: an entry between the newest compaction and the newest id."""
        text = f"<cp>/{rel_path} doesn't exist (latestId: {latest}, compactInterval: {interval})"
        return SparkError(text, f"{rel_path} doesn't exist (latestId: {latest}", "init")

    def file_source_range_missing(self, start: int, end: int, present: tuple[int, ...]) -> SparkError:
        """``FileStreamSourceLog.get(start, end)`` + ``HDFSMetadataLog.verifyBatchIds`` (getBatch)."""
        if not present:
            text = f"batch {start} doesn't exist"
            return SparkError(text, text, "init")
        if present[0] != start:
            ids = _ids_text(start, present[0])
            text = f"batches ({ids}) don't exist (startId: Some({start}), endId: Some({end}))"
            return SparkError(text, f"batches ({ids}) don't exist", "init")
        ids = _ids_text(present[-1], end)
        text = f"batches ({ids}) don't  exist (startId: Some({start}), endId: Some({end}))"
        return SparkError(text, f"batches ({ids}) don't  exist", "init")

    def file_source_entry_unreadable(self, failure: ParseFailure, line: str | None) -> SparkError:
        """``CompactibleFileStreamLog.deserialize`` of an entry the source reads when it is created.

        Empty: ``Incomplete log file`` (wrapped); a line that is not JSON: Jackson's own text,
        unwrapped, naming no file [exp: file-source-log-empty, file-source-log-corrupt].
        """
        if failure.kind == "empty":
            return self._wrapped(failure.path, "Incomplete log file", "Incomplete log file", "init")
        if failure.kind in ("bad-json", "truncated-json"):
            search = (
                "Unexpected end-of-input" if failure.kind == "truncated-json" else jackson_search(line or "")
            )
            return SparkError(
                f"{search} ... (Jackson, reading <cp>/{failure.path}; the file is not named)", search, "init"
            )
        if failure.kind == "not-text":
            return SparkError(
                f"Input length = ... (MalformedInputException reading <cp>/{failure.path})",
                "Input length = ",
                "init",
            )
        if failure.kind == "malformed-header":
            text = f"Log file was malformed: failed to read correct log version from {failure.found}."
            if self.error_classes:
                return self._wrapped(
                    failure.path, "[MALFORMED_LOG_FILE] " + text, text, "init", "MALFORMED_LOG_FILE"
                )
            return self._wrapped(failure.path, text, text, "init")
        return self._wrapped(failure.path, failure.reason, failure.reason[:60], "init")


def _ids_text(first: int, last: int) -> str:
    """Spark's ``mkString(", ")`` of ``first..last``; a span of more than 1,000 ids (log offsets are
    any long) is cut after the first thousand with ``...``."""
    ids = id_range(first, last)
    return ", ".join(map(str, ids)) + (", ..." if ids and ids[-1] < last else "")
