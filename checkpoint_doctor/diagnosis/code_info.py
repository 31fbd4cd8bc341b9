"""What a finding code is: its severity, its name (:class:`Code`) and what it means (:class:`CodeInfo`).

A leaf: each topic keeps the texts of its own codes beside its checks (``diagnosis/codes_logs.py``,
``sources/codes.py``, ``state/codes.py``, ``sinks/codes.py``, ``codes_writers.py``,
``changes/codes.py``), each an :func:`entry` per code, and :mod:`checkpoint_doctor.diagnosis.codes`
gathers them into the one registry (stable codes, never reused or renumbered).
"""

from __future__ import annotations

from checkpoint_doctor.enums import TextEnum
from checkpoint_doctor.valueclasses import frozen


class Severity(TextEnum):
    """How bad a finding is: an error stops the restart, a warning is a risk, info is a fact."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


#: The severities by their short names, as every check writes them.
ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
#: Worst first (a record read back from JSON looks a severity up by its word).
SEVERITY_ORDER: dict[str, int] = {ERROR: 0, WARNING: 1, INFO: 2}


class Code(TextEnum):
    """The finding codes by name: the package says ``Code.ASYNC_TAIL_SYNC_RESTART``, an operator sees
    ``CD101``. A member's value is its code (a ``str``, so it compares, hashes and serializes as the
    code); its name is its slug in capitals. ``tests/diagnosis/test_codes.py`` keeps the members, the
    registry below and every ``CDnnn`` written anywhere in the package in agreement.
    """

    METADATA_MISSING = "CD001"
    METADATA_UNREADABLE = "CD002"
    OFFSETS_FILE_UNREADABLE = "CD003"
    COMMIT_FILE_UNREADABLE = "CD004"
    LOG_VERSION_TOO_NEW = "CD005"
    COMMIT_VERSION_MISMATCH = "CD006"
    OFFSETS_JAVA_SERIALIZED = "CD007"
    OFFSETS_METADATA_LINE_EMPTY = "CD008"
    LOG_FILE_UNREADABLE_HISTORY = "CD009"
    OFFSETS_WITHOUT_CONF = "CD010"
    OFFSETS_WITHOUT_CONF_FATAL = "CD011"
    UNFINISHED_REPARTITION = "CD012"
    PINNED_CONF_INVALID = "CD013"
    METADATA_ID_INVALID = "CD014"
    PINNED_CONF_OVERRIDDEN = "CD015"
    ASYNC_TAIL_SYNC_RESTART = "CD101"
    ASYNC_PROGRESS_LOG = "CD102"
    OFFSETS_PREDECESSOR_MISSING = "CD103"
    COMMIT_AHEAD_OF_OFFSETS = "CD104"
    COMMITS_BEHIND = "CD105"
    LATEST_BATCH_UNCOMMITTED = "CD106"
    OFFSETS_HOLE = "CD107"
    COMMIT_WITHOUT_OFFSETS = "CD108"
    OFFSETS_JUMP_AHEAD = "CD109"
    COMMITS_WITHOUT_OFFSETS_LOG = "CD110"
    SOURCE_COUNT_MISMATCH = "CD201"
    SOURCE_OFFSET_VOID = "CD202"
    KAFKA_PARTITIONS_CHANGED = "CD203"
    DELTA_TABLE_CHANGED = "CD204"
    SOURCE_FILE_UNREADABLE = "CD205"
    SOURCE_FILE_DAMAGED_UNREAD = "CD206"
    KAFKA_POSITIONS_GONE = "CD207"
    KAFKA_OFFSET_NEGATIVE = "CD211"
    KAFKA_POSITIONS_UNCHECKED = "CD212"
    KAFKA_RETENTION_DEADLINE = "CD213"
    KAFKA_TOPIC_RECREATED_UNREAD = "CD214"
    KAFKA_RERUN_RANGE_GONE = "CD235"
    DELTA_SOURCE_TABLE_REPLACED = "CD208"
    DELTA_SOURCE_VERSIONS_GONE = "CD209"
    DELTA_SOURCE_CHANGE_REFUSED = "CD210"
    DELTA_TABLE_UNREADABLE = "CD215"
    DELTA_TABLE_COPIES = "CD216"
    STATE_MISSING = "CD301"
    STATE_VERSION_NOT_RESTORABLE = "CD302"
    ROCKSDB_SST_MISSING = "CD303"
    STATE_PARTITIONS_MISSING = "CD304"
    STATE_PARTITIONS_EXTRA = "CD305"
    STATE_UNIQUE_IDS_MISSING = "CD306"
    STATE_RESTORABLE_BATCH = "CD307"
    STATE_DIRECTORY_UNEXPECTED = "CD308"
    ROCKSDB_SNAPSHOT_SKIPPED = "CD309"
    STATE_MAY_BE_GONE = "CD310"
    STATE_FILE_UNREADABLE = "CD311"
    STATE_SCHEMA_INCOMPATIBLE = "CD312"
    STATE_OPERATORS_CHANGED = "CD313"
    TWS_SCHEMA_FILE_MISSING = "CD320"
    TWS_SCHEMA_FILES_ELSEWHERE = "CD321"
    TWS_OPERATOR_METADATA_MISSING = "CD322"
    TWS_CONFIG_CHANGED = "CD323"
    TWS_STATE_SCHEMA_INCOMPATIBLE = "CD324"
    TWS_VARIABLE_KIND_CHANGED = "CD325"
    TWS_VARIABLE_DROPPED = "CD326"
    TWS_VALUE_SCHEMA_EVOLUTION_INVALID = "CD327"
    TWS_VALUE_SCHEMA_EVOLVES = "CD328"
    SINK_HOLDS_UNCOMMITTED_BATCH = "CD401"
    SINK_AHEAD_OF_OFFSETS = "CD402"
    SINK_BEHIND_COMMITS = "CD403"
    SINK_LOG_FILE_MISSING = "CD404"
    SINK_LOG_FILE_UNREADABLE = "CD405"
    SINK_LOG_MISSING = "CD406"
    DELTA_SINK_SKIPS_BATCHES = "CD407"
    DELTA_SINK_WRITES_AGAIN = "CD408"
    LIVE_WRITER = "CD501"
    FRESH_TEMP_FILE = "CD502"
    INTERLEAVED_RUNS = "CD503"
    ORPHAN_CRC_BLOCKS_WRITE = "CD504"
    ORPHAN_CRC = "CD505"
    TEMP_FILES = "CD506"
    FRESH_CHECKPOINT_NOT_EMPTY = "CD507"
    EMPTY_LOG_DIRECTORY = "CD508"
    UNKNOWN_FILES = "CD509"
    NONCANONICAL_BATCH_NAME = "CD510"
    WRITTEN_BY_NEWER_SPARK = "CD601"
    ASYNC_STATEFUL = "CD602"
    SOURCE_EVOLUTION_NEEDS_V2_OFFSETS = "CD603"
    REAL_TIME_CHECKPOINT_V1 = "CD620"
    KAFKA_RERUN_METRICS_NPE = "CD290"
    CONTINUOUS_COMMIT_WITHOUT_OFFSETS = "CD701"
    CONTINUOUS_EPOCHS_AHEAD = "CD702"
    # The changed query (--job): its sources, sink, output mode and trigger (diagnosis/changes/).
    SOURCE_KIND_CHANGED = "CD220"
    FILE_SOURCE_MOVED = "CD221"
    RATE_PARTITIONS_CHANGED = "CD222"
    KAFKA_TOPICS_CHANGED = "CD223"
    KAFKA_SUBSCRIPTION_SHAPE = "CD230"
    DELTA_SOURCE_SCHEMA_CHANGED = "CD240"
    DELTA_SOURCE_TYPE_WIDENED = "CD241"
    DELTA_CHANGE_DATA_MISSING = "CD245"
    DELTA_CHANGE_COMMITS_SKIPPED = "CD246"
    DELTA_STARTING_OPTION_IGNORED = "CD247"
    FILE_SINK_MOVED = "CD420"
    OUTPUT_MODE_UNSUPPORTED = "CD421"
    JOB_MODE_CHANGED = "CD630"
    # A Spark Declarative Pipeline: each flow's live version (checkpoint_doctor/pipelines/).
    PIPELINE_FLOW_FAILS = "CD800"
    PIPELINE_FLOW_SKIPPED = "CD801"
    PIPELINE_OLD_VERSIONS = "CD802"
    PIPELINE_EMPTY_LIVE_VERSION = "CD803"
    PIPELINE_SHARED_SINK_LOG = "CD804"
    PIPELINE_CODE_STATEFUL_NO_STATE = "CD805"
    PIPELINE_FLOW_UNORDERED = "CD806"


@frozen
class CodeInfo:
    """What a finding code means."""

    code: Code
    slug: str
    severity: Severity
    title: str
    spark_does: str
    why: str
    action: str
    search: tuple[str, ...] = ()
    retired: bool = False


def entry(
    code: Code,
    slug: str,
    severity: Severity,
    title: str,
    spark_does: str,
    why: str,
    action: str,
    *search: str,
) -> CodeInfo:
    return CodeInfo(code, slug, severity, title, spark_does, why, action, tuple(search))
