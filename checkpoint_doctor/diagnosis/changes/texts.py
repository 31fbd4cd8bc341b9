"""What each Spark line prints when the restarted query is not the one that wrote the checkpoint.
Pure.

Texts are verbatim from the ``job-*`` restarts recorded on every line (fixtures/spark-*/job-*):
3.5's ``StateSchemaNotCompatible`` fails the first batch's tasks (``StateStore.get`` runs
``StateSchemaCompatibilityChecker`` before it loads a version); 4.x validates the schemas on the
driver while planning the first batch (``STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE`` /
``STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE``), and checks the operators against the operator
metadata the checkpoint holds (``STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from checkpoint_doctor.diagnosis.spark_line import SparkError, SparkLine

_SCHEMA_CHECK_OFF = (
    "If you want to force running the query without schema validation, please set "
    "spark.sql.streaming.stateStore.stateSchemaCheck to false."
)


def struct_text(schema: str | None) -> str:
    """Return a StructType JSON as Scala prints it: ``StructType(StructField(count,LongType,false))``."""
    if schema is None:
        return "StructType()"
    try:
        return _type_text(json.loads(schema))
    except ValueError:
        return schema


def _type_text(data_type: Any) -> str:
    if isinstance(data_type, str):
        if data_type.startswith("decimal"):
            return "DecimalType" + data_type[len("decimal") :]
        special = {"timestamp_ntz": "TimestampNTZType", "void": "NullType"}
        return special.get(data_type, data_type[:1].upper() + data_type[1:] + "Type")
    if not isinstance(data_type, dict):
        return str(data_type)
    kind = data_type.get("type")
    if kind == "struct":
        fields = ",".join(
            f"StructField({f.get('name')},{_type_text(f.get('type'))},{str(bool(f.get('nullable'))).lower()})"
            for f in data_type.get("fields") or []
        )
        return f"StructType({fields})"
    if kind == "array":
        return f"ArrayType({_type_text(data_type.get('elementType'))},{str(bool(data_type.get('containsNull'))).lower()})"
    if kind == "map":
        return f"MapType({_type_text(data_type.get('keyType'))},{_type_text(data_type.get('valueType'))},{str(bool(data_type.get('valueContainsNull'))).lower()})"
    return str(kind)


class ChangeTexts(SparkLine):
    """The changed query's failures, per line."""

    def state_schema_incompatible(
        self, part: str, stored: str, new: str, stored_other: str | None, new_other: str | None
    ) -> SparkError:
        """The job's state ``part`` ("key" or "value") schema fails the check against the stored one
        (``stored_other``/``new_other``: the other part, which 3.5 prints too)."""
        if self.error_classes:
            error_class = f"STATE_STORE_{part.upper()}_SCHEMA_NOT_COMPATIBLE"
            text = (
                f"[{error_class}] Provided {part} schema does not match existing state {part} schema.\n"
                "Please check number and type of fields.\n"
                f"Existing {part}_schema={struct_text(stored)} and new {part}_schema={struct_text(new)}.\n"
                f"{_SCHEMA_CHECK_OFF}\n"
                "However, please note that running the query with incompatible schema could cause "
                "non-deterministic behavior."
            )
            return SparkError(text + self.sqlstate("XXKST"), f"[{error_class}]", "batch", error_class)
        keys = (new, stored) if part == "key" else (new_other, stored_other)
        values = (new_other, stored_other) if part == "key" else (new, stored)
        text = (
            "org.apache.spark.sql.execution.streaming.state.StateSchemaNotCompatible: Provided schema doesn't "
            "match to the schema for existing state! Please note that Spark allow difference of field name: "
            "check count of fields and data type of each field.\n"
            f"- Provided key schema: {struct_text(keys[0])}\n- Existing key schema: {struct_text(keys[1])}\n"
            f"- Provided value schema: {struct_text(values[0])}\n- Existing value schema: {struct_text(values[1])}\n"
            "If you want to force running query without schema validation, please set "
            "spark.sql.streaming.stateStore.stateSchemaCheck to false."
        )
        return SparkError(
            text,
            "Provided schema doesn't match to the schema for existing state!",
            "task",
            headline="StateSchemaNotCompatible: Provided schema doesn't match to the schema for existing state",
        )

    @property
    def checks_state_nullability(self) -> bool:
        """3.5-4.2 refuse a nullable new state field over a non-nullable stored one
        (``DataType.equalsIgnoreNameAndCompatibleNullability(new, stored)``): count() replaced by
        sum(value) (count:long not null -> sum:long nullable) fails there and starts on 4.3
        [exp: job-aggregate-renamed on 3.5.9 .. 4.3.0]."""
        return not self._at_least("4.3")

    @property
    def checks_operator_metadata(self) -> bool:
        """4.0+ compare the query's stateful operators with ``state/<op>/_metadata`` on restart."""
        return self.error_classes

    def operators_not_match(
        self, in_metadata: Sequence[tuple[int, str]], in_query: Sequence[tuple[int, str]]
    ) -> SparkError:
        """``STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA`` (4.0+)."""
        error_class = "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA"

        def listed(ops: Sequence[tuple[int, str]]) -> str:
            return ", ".join(f"(OperatorId: {i} -> OperatorName: {n})" for i, n in ops)

        text = (
            f"[{error_class}] Streaming stateful operator name does not match with the operator in state "
            "metadata. This likely to happen when user adds/removes/changes stateful operator of existing "
            "streaming query.\n"
            f"Stateful operators in the metadata: [{listed(in_metadata)}]; Stateful operators in current "
            f"batch: [{listed(in_query)}]."
        )
        return SparkError(text + self.sqlstate("42K03"), f"[{error_class}]", "batch", error_class)

    def pinned_session_key(self, key: str) -> str:
        """Return the session conf a pinned conf is restored into: 4.1+ restore the pinned
        ``spark.sql.shuffle.partitions`` into ``spark.sql.streaming.internal.stateStore.partitions``
        (which falls back to the shuffle partitions), so only the state keeps the pinned number
        [exp: job-shuffle-partitions on 4.1.4, 4.2.1, 4.3.0]."""
        if key == "spark.sql.shuffle.partitions" and self._at_least("4.1"):
            return "spark.sql.streaming.internal.stateStore.partitions"
        return key

    def conf_overridden(self, key: str, session: str, pinned: str) -> str:
        """``OffsetSeqMetadata.setSessionConf``'s WARN when the session differs from a pinned conf."""
        restored = self.pinned_session_key(key)
        return f"Updating the value of conf '{restored}' in current session from '{session}' to '{pinned}'."

    # ------------------------------------------------------------------ sources, sinks, modes
    # The texts below are verbatim from the job-* restarts of issue 23's second part, the same on
    # every line unless said (fixtures/spark-*/job-source-kind-changed, job-continuous-on,
    # job-file-source-moved, job-rate-partitions-changed, job-output-mode-complete-stateless).

    def source_offset_unreadable(self, in_checkpoint: str, in_job: str, raw: str) -> SparkError:
        """The job's source at a place reads another kind of source's offset line when the next
        batch or epoch is planned (its ``deserializeOffset``)."""
        if in_job == "long" and not raw.strip().lstrip("-").isdigit():
            # RateStreamMicroBatchStream.deserializeOffset: LongOffset(json.toLong).
            text = f'For input string: "{raw}"'
            return SparkError(text, text, "batch", headline=f"NumberFormatException: {text}")
        if in_job == "rate-micro-batch" and raw.strip().lstrip("-").isdigit():
            # RatePerMicroBatchStream.deserializeOffset: json4s extracts {offset, timestamp}.
            found = "No usable value for offset\nDid not find value which can be converted into long"
            return SparkError(
                found, "No usable value for offset", "batch", headline=found.replace("\n", ": ")
            )
        if in_job == "continuous-rate" and raw.strip().lstrip("-").isdigit():
            # RateStreamContinuousStream.deserializeOffset: json4s reads a partition map.
            found = f"Expected object but got JInt({raw.strip()})"
            return SparkError(found, found, "batch")
        if in_job == "kafka":
            # KafkaSourceOffset(JsonUtils.partitionOffsets): not recorded by a fixture.
            text = f'Expected e.g. {{"topicA":{{"0":23,"1":-1}},"topicB":{{"0":-2}}}}, got {raw}'
            return SparkError(text, "Expected e.g. {", "batch", headline=f"IllegalArgumentException: {text}")
        text = (
            f"the {in_job} source cannot read the {in_checkpoint} offset {raw} the checkpoint holds at "
            "its place (Spark's words for this pair of sources are not recorded)"
        )
        return SparkError(text, raw, "batch", headline=f"the {in_job} source cannot read the offset {raw}")

    def wrong_base_path(self, base_path: str, logged_file: str) -> SparkError:
        """``PartitioningAwareFileIndex``: a file the log lists for the re-read batch is not under the
        file source's new path (its ``basePath``)."""
        # The root path is the logged URI as a Hadoop Path prints it (file:///x -> file:/x).
        root = (
            "file:/" + logged_file[len("file:///") :] if logged_file.startswith("file:///") else logged_file
        )
        text = f"Wrong basePath {base_path} for the root path: {root}"
        return SparkError(text, "Wrong basePath", "init", headline=text)

    def rate_partitions_changed(self, in_checkpoint: int, in_job: int | None) -> SparkError:
        """``RateStreamContinuousStream.planInputPartitions`` with another ``numPartitions``."""
        now = str(in_job) if in_job is not None else "N"
        text = (
            f"The previous run contained {in_checkpoint} partitions, but {now} partitions are currently "
            "configured. The numPartitions option cannot be changed."
        )
        return SparkError(text, "The numPartitions option cannot be changed.", "batch", headline=text)

    def unsupported_operation(self, message: str) -> SparkError:
        """``UnsupportedOperationChecker`` refused the query in ``start()`` (the job probe asked it)."""
        # 3.5 ends the sentence with ";" (the plan follows), 4.x with its SQLSTATE.
        search = re.sub(r"\s*SQLSTATE: \w+$", "", message.strip()).rstrip(";").strip()
        found = re.match(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]", search)
        return SparkError(message, search, "start", found.group(1) if found else None)

    def kafka_partitions_unsubscribed(self, names: str) -> SparkError:
        """The connector's report of the partitions the old offsets hold and the new subscription's
        latest offsets do not (``getOffsetRangesFromResolvedOffsets``' deleted partitions), with
        ``failOnDataLoss`` true: worded as a deleted partition's (KAFKA_DATA_LOSS.PARTITIONS_DELETED
        on 4.x, whose condition the query's exception does not print)."""
        lost = "Some data may have been lost because they are not available in Kafka any more"
        # Up to 4 partitions the Set keeps the offsets line's order; a larger one is a hash set.
        ordered = names.count(",") < 4
        if self.error_classes:
            first = f"Reason: Partitions Set({names}) have been deleted."
            return SparkError(f"{lost}; ... {first}", first if ordered else "have been deleted.", "batch")
        first = f"Set({names}) are gone. Some data may have been missed."
        return SparkError(
            f"{first} {lost}", first if ordered else "are gone. Some data may have been missed.", "batch"
        )
