"""What each Spark line prints when a state store cannot load the version a batch needs. Pure.

Texts are verbatim from real runs on every line (fixtures/spark-*/state-*, rocksdb-*); the 4.x
top-level error classes come from ``StateStoreErrors`` (``CANNOT_LOAD_STATE_STORE.*``), the 3.5
ones are the bare Java exceptions a task fails with. ``<cp>`` stands for the checkpoint root.
"""

from __future__ import annotations

from dataclasses import replace

from checkpoint_doctor.diagnosis.changes.texts import struct_text
from checkpoint_doctor.diagnosis.spark_line import SparkError, SparkLine

#: What a ZipInputStream meets in a RocksDB zip: a local file header first (b"PK\x03\x04") when the
#: zip was cut short, anything else when the file is not a zip at all.
ZIP_LOCAL_HEADER = b"PK\x03\x04"
UNCATEGORIZED = "CANNOT_LOAD_STATE_STORE.UNCATEGORIZED"
#: What a transformWithState operator's restart says when its operator metadata v2 cannot be read.
TWS_METADATA_UNREADABLE = "STDS_FAILED_TO_READ_OPERATOR_METADATA"


class StateTexts(SparkLine):
    """State store load failures, per line."""

    def state_format_mismatch(self) -> SparkError:
        """Legacy state formats (no pinned confs) against state written with newer formats."""
        if self.error_classes:
            return SparkError(
                "[STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE] Provided value schema does not match existing state value schema.",
                "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
                "batch",
                "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
                ("STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",),
            )
        return SparkError(
            "InvalidUnsafeRowException: The streaming query failed by state format invalidation. ... (or: Provided "
            "schema doesn't match to the schema for existing state!)",
            "state format invalidation",
            "task",
            None,
            ("schema doesn't match", "StateSchemaNotCompatible"),
        )

    def state_missing_dir(self, provider: str) -> SparkError:
        """A stateful restart (batch > 0) whose state/ is missing or holds no store.

        4.2+ check it up front (IncrementalExecution, ``STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY``).
        Older lines load version B in every store and fail in the tasks on the first file of the
        chain: ``1.delta`` (HDFS) or ``1.changelog`` (RocksDB, which replays changelogs from version 0
        when it finds no zip) [exp: state-deleted, rocksdb-state-deleted on 3.5.9, 4.0.5, 4.1.4]. The
        partition named depends on which task fails first, so the search text leaves it out.
        """
        if self._at_least("4.2"):
            text = (
                "[STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY] Cannot restart streaming query with "
                "stateful operators because the state directory is empty or missing."
            )
            return SparkError(
                text,
                "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY",
                "batch",
                "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY",
            )
        if provider == "rocksdb":
            # A transformWithState operator (RocksDB only) reads its operator metadata v2 while
            # planning the batch, before any store loads: 4.0/4.1 fail there instead
            # [exp: tws_*-state-deleted on 4.0.5, 4.1.4]. With state/ gone nothing says which.
            missing = self.state_file_missing("state/0/<partition>/1.changelog")
            if self.error_classes:
                return replace(missing, alternatives=(*missing.alternatives, TWS_METADATA_UNREADABLE))
            return missing
        return self.delta_missing("state/0/<partition>", 1, 0, 0)

    def delta_missing(self, store_path: str, version: int, operator_id: int, partition_id: int) -> SparkError:
        """HDFS provider: a delta file of the chain is missing."""
        f = f"<cp>/{store_path}/{version}.delta"
        if self.error_classes:
            text = (
                "[CANNOT_LOAD_STATE_STORE.CANNOT_READ_DELTA_FILE_NOT_EXISTS] An error occurred during loading "
                f"state. Error reading delta file {f} of HDFSStateStoreProvider[...]: {f} does not exist."
            )
            # The one-line quote carries Spark's condition name (issue 34): on 4.0+ it is what the
            # operator searches for and what the error's docs are filed under.
            return SparkError(
                text + self.sqlstate("58030"),
                f"{version}.delta does not exist",
                "task",
                "CANNOT_LOAD_STATE_STORE.CANNOT_READ_DELTA_FILE_NOT_EXISTS",
                headline=f"CANNOT_LOAD_STATE_STORE.CANNOT_READ_DELTA_FILE_NOT_EXISTS: {version}.delta does not exist",
            )
        text = (
            f"Error reading delta file {f} of HDFSStateStoreProvider[id = (op={operator_id},part={partition_id}),"
            f"dir = <cp>/{store_path}]: {f} does not exist"
        )
        return SparkError(text, f"{version}.delta does not exist", "task")

    def state_file_missing(self, rel_path: str) -> SparkError:
        """RocksDB: a changelog, zip or SST of the version to load is missing.

        A missing changelog has its own class on 4.x (``CANNOT_READ_STREAMING_STATE_FILE``); a missing
        SST surfaces as ``CANNOT_LOAD_STATE_STORE.UNCATEGORIZED`` caused by the FileNotFoundException
        [exp: rocksdb-sst-missing, rocksdb-sst-missing-no-changelog on 4.0.5 .. 4.3.0]; 3.5 fails the
        task with the bare exception.
        """
        name = rel_path.rpartition("/")[2]
        if name.endswith(".changelog"):
            text = f"Error reading streaming state file of <cp>/{rel_path} does not exist."
            if self.error_classes:
                return SparkError(
                    "[CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE] An error occurred during "
                    "loading state. " + text + self.sqlstate("58030"),
                    f"{name} does not exist",
                    "task",
                    "CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE",
                    headline=f"CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE: {name} does not exist",
                )
            return SparkError(text, f"{name} does not exist", "task")
        cause = f"java.io.FileNotFoundException: File <cp>/{rel_path} does not exist"
        if self.error_classes:
            return SparkError(
                "[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred during loading state."
                + self.sqlstate("58030")
                + f" Caused by: {cause}",
                f"{name} does not exist",
                "task",
                UNCATEGORIZED,
            )
        return SparkError(cause, f"{name} does not exist", "task")

    def state_file_corrupt(self, rel_path: str, head: bytes) -> SparkError:
        """A state file the load reads is not what its name says (``head``: its first bytes).

        4.x: ``CANNOT_LOAD_STATE_STORE.UNCATEGORIZED`` whatever the cause (4.1 names a checksum
        mismatch as the cause when a Spark ``.crc`` file was written). 3.5 fails the task with the
        reader's own exception: a zip that is not one unzips to nothing, so reading its ``metadata``
        fails (``NoSuchFileException``); a zip cut short ends inside a deflated entry (``Unexpected
        end of ZLIB input stream``); a delta or changelog that is not LZ4 ends the record stream
        early (``java.io.EOFException``) [exp: rocksdb-zip-garbage, rocksdb-zip-truncated,
        rocksdb-changelog-zip-truncated, rocksdb-changelog-corrupt, state-delta-corrupt].
        """
        name = rel_path.rpartition("/")[2]
        if self.error_classes:
            return SparkError(
                f"[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred during loading state. "
                f"({name} cannot be read){self.sqlstate('58030')}",
                UNCATEGORIZED,
                "task",
                UNCATEGORIZED,
            )
        if name.endswith(".zip"):
            if head.startswith(ZIP_LOCAL_HEADER):
                text = "java.io.EOFException: Unexpected end of ZLIB input stream"
                return SparkError(
                    text + f" (unzipping <cp>/{rel_path})", "Unexpected end of ZLIB input stream", "task"
                )
            text = "java.nio.file.NoSuchFileException: <local working dir>/metadata"
            return SparkError(text + f" (<cp>/{rel_path} is not a zip)", "NoSuchFileException", "task")
        return SparkError(f"java.io.EOFException (reading <cp>/{rel_path})", "java.io.EOFException", "task")

    def tws_schema_file_missing(self, recorded: str, rel: str | None) -> SparkError:
        """A schema file the newest operator metadata v2 names is not where it is recorded
        (``TransformWithStateExec`` reading ``stateSchemaFilePaths`` while planning the batch; Spark
        quotes the recorded path: ``<cp>/...`` when it lies in this checkpoint) [exp: tws-*-moved,
        tws-*-schema-deleted on 4.0.5 .. 4.3.0]."""
        text = f"File {f'<cp>/{rel}' if rel is not None else recorded} does not exist"
        name = recorded.rpartition("/")[2]
        return SparkError(text, text, "batch", None, headline=f"File .../{name} does not exist")

    def tws_metadata_missing(self, operator_id: int, batch_id: int) -> SparkError:
        """No operator metadata v2 under ``state/<op>/_metadata/v2/`` (``OperatorStateMetadataV2Reader``
        while planning batch ``batch_id``) [exp: tws-*-metadata-deleted on 4.0.5 .. 4.3.0]."""
        text = (
            "[STDS_FAILED_TO_READ_OPERATOR_METADATA] Failed to read the operator metadata for "
            f"checkpointLocation=<cp>/state/{operator_id} and batchId={batch_id}. Either the file does not "
            "exist, or the file is corrupted."
        )
        return SparkError(
            text,
            f"Failed to read the operator metadata for checkpointLocation=<cp>/state/{operator_id} and batchId={batch_id}",
            "batch",
            "STDS_FAILED_TO_READ_OPERATOR_METADATA",
            headline="STDS_FAILED_TO_READ_OPERATOR_METADATA",
        )

    def tws_config_changed(self, name: str, stored: str, new: str) -> SparkError:
        """``STATE_STORE_INVALID_CONFIG_AFTER_RESTART``: the processor's timeMode or the output mode is
        not the one the operator metadata v2 records (``TransformWithStateExec.validateNewMetadata``)
        [exp: tws_*-job-time-mode, tws_*-job-output-mode]."""
        error_class = "STATE_STORE_INVALID_CONFIG_AFTER_RESTART"
        text = (
            f"[{error_class}] Cannot change {name} from {stored} to {new} between restarts. Please set "
            f"{name} to {stored}, or restart with a new checkpoint directory."
        )
        return SparkError(text + self.sqlstate("42K06"), f"[{error_class}]", "batch", error_class)

    def tws_variable_type_changed(self, name: str, stored: str, new: str) -> SparkError:
        """``STATE_STORE_INVALID_VARIABLE_TYPE_CHANGE``: a state variable redeclared as another kind
        [exp: tws_*-job-variable-retyped]."""
        error_class = "STATE_STORE_INVALID_VARIABLE_TYPE_CHANGE"
        text = (
            f"[{error_class}] Cannot change {name} to {new} between query restarts. Please set {name} to "
            f"{stored}, or restart with a new checkpoint directory."
        )
        return SparkError(text + self.sqlstate("42K06"), f"[{error_class}]", "batch", error_class)

    def tws_invalid_value_evolution(self, stored: str, new: str) -> SparkError:
        """``STATE_STORE_INVALID_VALUE_SCHEMA_EVOLUTION``: with the Avro encoding, a value schema Avro
        cannot read the old values with [exp: tws_*-job-avro-long-to-string]."""
        error_class = "STATE_STORE_INVALID_VALUE_SCHEMA_EVOLUTION"
        text = (
            f"[{error_class}] Schema evolution is not possible new value_schema={struct_text(new)} and "
            f"old value_schema={struct_text(stored)}."
        )
        return SparkError(text + self.sqlstate("XXKST"), f"[{error_class}]", "batch", error_class)
