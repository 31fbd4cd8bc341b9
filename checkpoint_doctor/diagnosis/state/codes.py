"""The codes of a query's state (CD3xx), beside their checks (:mod:`checkpoint_doctor.diagnosis.state`)."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.code_info import ERROR, INFO, WARNING, Code, CodeInfo
from checkpoint_doctor.diagnosis.code_info import entry as _c

CODES: tuple[CodeInfo, ...] = (
    _c(
        Code.STATE_MISSING,
        "state-missing",
        ERROR,
        "The query is stateful but state/ is missing or empty",
        "Spark 3.5 to 4.1 fail inside the first batch's tasks on the first file of the chain: 'Error "
        "reading delta file .../1.delta ... does not exist' (HDFS provider; 4.x: "
        "CANNOT_LOAD_STATE_STORE.CANNOT_READ_DELTA_FILE_NOT_EXISTS) or 'Error reading streaming state file "
        "of .../1.changelog does not exist' (RocksDB, also without changelog checkpointing; 4.x: "
        "CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE). None restarts with empty state. "
        "Spark 4.2+ fails the first batch with STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY.",
        "state/ was deleted, not copied, or expired by a lifecycle rule.",
        "Restore state/ from a backup. Without one, 'plan --stateful --accept-data-loss' writes empty "
        "state (reset-state: aggregates restart from zero, deduplication forgets the keys it has seen, "
        "stream-stream joins lose buffered rows), or start a new checkpoint and rebuild state from the "
        "sources.",
        "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY",
        "Error reading delta file",
        "1.changelog does not exist",
    ),
    _c(
        Code.STATE_VERSION_NOT_RESTORABLE,
        "state-version-not-restorable",
        ERROR,
        "State files needed by the next batch are missing",
        "Batch B loads state version B in every partition: the HDFS provider needs the newest snapshot "
        "at or below B plus every delta after it; RocksDB needs the zip plus changelogs up to B.",
        "Files were deleted by hand, by a lifecycle rule, or lost.",
        "Roll back to the newest batch restorable in every partition ('plan --strategy rollback'), or "
        "restore the files.",
        "Error reading delta file",
        "CANNOT_LOAD_STATE_STORE",
        "does not exist",
    ),
    _c(
        Code.ROCKSDB_SST_MISSING,
        "rocksdb-sst-missing",
        ERROR,
        "A RocksDB checkpoint zip names SST files that are missing",
        "RocksDBFileManager copies every SST named in the zip's metadata; a missing one fails the load.",
        "SSTs deleted by hand, by a lifecycle rule, or by a maintenance race.",
        "Roll back to a version whose SSTs are all present, or restore the files.",
        "does not exist",
        "CANNOT_LOAD_STATE_STORE",
    ),
    _c(
        Code.STATE_PARTITIONS_MISSING,
        "state-partitions-missing",
        ERROR,
        "State partition directories are missing",
        "State is hash-partitioned over the pinned spark.sql.shuffle.partitions; every partition loads "
        "its own files.",
        "Partition directories were deleted or not copied.",
        "Restore them, or start a new checkpoint.",
        "Error reading delta file",
    ),
    _c(
        Code.STATE_PARTITIONS_EXTRA,
        "state-partitions-extra",
        WARNING,
        "There are more state partition directories than the pinned shuffle partitions",
        "Spark only loads partitions 0..n-1 of the pinned count; the others are ignored.",
        "Files from another checkpoint were mixed in.",
        "Check where the extra directories came from.",
    ),
    _c(
        Code.STATE_UNIQUE_IDS_MISSING,
        "state-unique-ids-missing",
        ERROR,
        "State files named by the commit log (checkpoint format 2) are missing",
        "With state store checkpoint format 2, commits/B-1 names the unique ids of the state files of "
        "version B; a missing one fails the load.",
        "State files deleted, or commit and state repaired separately.",
        "Roll back commit and state together, or restore the files.",
        "CANNOT_LOAD_STATE_STORE",
    ),
    _c(
        Code.STATE_RESTORABLE_BATCH,
        "state-restorable-batch",
        INFO,
        "The newest batch whose state is restorable in every partition",
        "Rollback planning needs a batch whose state version exists in all partitions.",
        "Informational.",
        "Use it as the rollback target if the newest state is damaged.",
    ),
    _c(
        Code.STATE_DIRECTORY_UNEXPECTED,
        "state-directory-unexpected",
        WARNING,
        "state/ holds operator directories although the query was declared stateless",
        "Spark ignores state of operators the plan does not have.",
        "The query changed, or --stateless was given by mistake.",
        "Check the query.",
    ),
    _c(
        Code.ROCKSDB_SNAPSHOT_SKIPPED,
        "rocksdb-snapshot-skipped",
        WARNING,
        "A RocksDB snapshot zip cannot be loaded (missing SSTs or unreadable); Spark 4.2+ rebuilds the "
        "state without it",
        "With changelog checkpointing, Spark 4.2's and 4.3's auto snapshot repair "
        "(spark.sql.streaming.stateStore.autoSnapshotRepair.enabled, on by default) skips a snapshot "
        "that fails to load and replays changelogs from an older one or from version 0. Spark 3.5 to "
        "4.1, or 4.2+ with the repair disabled, fail the load.",
        "SSTs deleted by hand, a zip cut short or overwritten, a lifecycle rule, or a maintenance race.",
        "Nothing is needed for 4.2+ while the changelogs last; restoring the files keeps older Spark "
        "releases able to restart.",
        "does not exist",
    ),
    _c(
        Code.STATE_MAY_BE_GONE,
        "state-may-be-gone",
        WARNING,
        "The query may have had state that is now gone",
        "Nothing in the checkpoint proves the query stateful, but something suggests it (an event-time "
        "watermark above 0 in the offsets or commit log: withWatermark exists to bound a stateful "
        "operator's state) and state/ holds no state. If the query has stateful operators, each Spark "
        "line reacts in its own way to the missing state when it loads state version L+1 for the first "
        "batch: Spark 4.2 and newer refuse the restart (STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY), "
        "older lines fail in the first batch's tasks reading a delta file that does not exist, or restart "
        "with empty state where the state store provider creates it (the finding names what each line "
        "does). Where nothing suggests state either (no state/, no watermark) there is no finding: the "
        "query is assumed stateless, and diagnose, plan and audit say in their assumptions what a "
        "stateful query would meet on each line.",
        "state/ was deleted or never copied with the checkpoint (a copy of offsets/ and commits/ only, a "
        "lifecycle rule, a cleanup script), or the query is stateless and only uses withWatermark.",
        "If the query has stateful operators (aggregations, dropDuplicates, stream-stream joins, "
        "(flat)MapGroupsWithState, transformWithState), restore state/ from a backup. Without one, "
        "'plan --stateful --accept-data-loss' writes empty state (reset-state: aggregates restart from "
        "zero, deduplication forgets the keys it has seen, stream-stream joins lose buffered rows), or "
        "start a new checkpoint that rebuilds state from the sources. Rerun diagnose or plan with "
        "--stateful or --stateless to get a definite answer (with --stateful the finding is CD301, an "
        "error).",
        "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY",
        "CANNOT_READ_DELTA_FILE_NOT_EXISTS",
        "Error reading delta file",
    ),
    _c(
        Code.STATE_SCHEMA_INCOMPATIBLE,
        "state-schema-incompatible",
        ERROR,
        "A stateful operator's key or value schema is not the one its state was written with",
        "Before a stateful operator loads its state Spark compares the query's key and value schema with "
        "the schema file the checkpoint holds (StateSchemaCompatibilityChecker: the number, order and "
        "types of the fields; names may differ). 3.5 fails the first batch's tasks with "
        "StateSchemaNotCompatible ('Provided schema doesn't match to the schema for existing state!'); "
        "4.x fails planning the first batch with STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE or "
        "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE.",
        "The query changed its grouping keys, its aggregate functions or the types they read: Spark's "
        "guide lists these changes as not allowed on the same checkpoint.",
        "Keep the old grouping keys and aggregates, or run the changed query on a new checkpoint "
        "(and backfill); setting spark.sql.streaming.stateStore.stateSchemaCheck=false reads the old "
        "state with the new schema, which can return wrong results.",
        "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",
        "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
        "StateSchemaNotCompatible",
    ),
    _c(
        Code.STATE_OPERATORS_CHANGED,
        "state-operators-changed",
        ERROR,
        "The query's stateful operators are not the ones the checkpoint's operator metadata records",
        "Spark 4.0 and newer write state/<op>/_metadata/metadata (the operator's id and name) and on "
        "restart compare the query's stateful operators with it: an operator added, removed or "
        "replaced fails planning the first batch with "
        "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA. 3.5 writes no such metadata; a "
        "removed operator's state is then left unused and the query starts.",
        "The query gained, lost or replaced an aggregation, deduplication, join or (flat)mapGroupsWithState.",
        "Keep the stateful operators of the query that wrote the checkpoint, or run the changed query on "
        "a new checkpoint.",
        "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA",
    ),
    _c(
        Code.TWS_SCHEMA_FILE_MISSING,
        "tws-schema-file-missing",
        ERROR,
        "A state schema file a transformWithState operator's metadata names is missing",
        "While planning the first batch, Spark 4.0 and newer read every file the newest "
        "state/<op>/_metadata/v2/<batch> lists in stateSchemaFilePaths (TransformWithStateExec) and fail "
        "when one is gone: 'File <path> does not exist'.",
        "The schema file was deleted (a clean-up of 'small files', a partial copy or restore).",
        "Restore the file from a backup; without it the operator's state cannot be read, and only a new "
        "checkpoint (state rebuilt from the sources) restarts the query.",
        "does not exist",
        "_stateSchema",
    ),
    _c(
        Code.TWS_SCHEMA_FILES_ELSEWHERE,
        "tws-schema-files-elsewhere",
        ERROR,
        "A transformWithState operator's metadata names its schema files at another checkpoint's path",
        "The operator metadata v2 records its state schema files by absolute path (stateSchemaFilePaths). "
        "A restart reads those paths, not this checkpoint's copies: when the old location is gone it fails "
        "with 'File <old path> does not exist'; while it exists the restart reads the old location's files.",
        "The checkpoint was moved or copied (a new bucket, a renamed directory, a restored backup).",
        "Let 'checkpoint-doctor plan' rewrite the paths in the metadata to this checkpoint's own schema "
        "files (the files are the same bytes), or move the checkpoint back.",
        "does not exist",
        "stateSchemaFilePaths",
    ),
    _c(
        Code.TWS_OPERATOR_METADATA_MISSING,
        "tws-operator-metadata-missing",
        ERROR,
        "A transformWithState operator has no operator metadata v2",
        "While planning the first batch, Spark 4.0 and newer read state/<op>/_metadata/v2/ (the newest "
        "file; an older one when only the newest is gone) and fail when none is there: "
        "STDS_FAILED_TO_READ_OPERATOR_METADATA.",
        "state/<op>/_metadata/v2/ was deleted while the operator's state and schema files remain.",
        "Restore state/<op>/_metadata/v2/ from a backup, or start a new checkpoint and rebuild state from "
        "the sources.",
        "STDS_FAILED_TO_READ_OPERATOR_METADATA",
    ),
    _c(
        Code.TWS_CONFIG_CHANGED,
        "tws-config-changed",
        ERROR,
        "The job's transformWithState timeMode or output mode is not the one the checkpoint records",
        "The operator metadata v2 records the operator's timeMode (NoTime, ProcessingTime, EventTime) and "
        "output mode. While planning the first batch of a restart, Spark 4.0 and newer compare them with "
        "the new query's (TransformWithStateExec.validateNewMetadata) and fail with "
        "STATE_STORE_INVALID_CONFIG_AFTER_RESTART when either changed.",
        "The processor's timeMode or the query's output mode was changed in the code.",
        "Keep the timeMode and output mode of the query that wrote the checkpoint, or run the changed "
        "query on a new checkpoint.",
        "STATE_STORE_INVALID_CONFIG_AFTER_RESTART",
    ),
    _c(
        Code.TWS_STATE_SCHEMA_INCOMPATIBLE,
        "tws-state-schema-incompatible",
        ERROR,
        "A transformWithState state variable's key or value schema is not the stored one",
        "Each state variable is a column family of the operator's RocksDB store, with a key schema (the "
        "grouping key; a MapState's is struct<key, userKey>) and a value schema (with a TTL: "
        "struct<value, ttlExpirationMs>) recorded in the schema file v3. While planning the first batch, "
        "Spark 4.0 and newer compare each variable the processor declares with the recorded one "
        "(StateSchemaCompatibilityChecker: field count, order and types): a changed grouping key or map "
        "key fails with STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE, a value field added, removed or retyped, "
        "or a TTL added or removed, with STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE.",
        "The grouping key, a state variable's schema or its TTL was changed in the processor.",
        "Keep the variable's schema (give a new schema a new variable name: a new column family starts "
        "empty), or run the changed query on a new checkpoint.",
        "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",
        "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
    ),
    _c(
        Code.TWS_VARIABLE_KIND_CHANGED,
        "tws-variable-kind-changed",
        ERROR,
        "A transformWithState state variable changed its kind",
        "The operator metadata v2 records each state variable's kind (ValueState, ListState, MapState). "
        "Spark 4.0 and newer compare it with the processor's on restart and fail with "
        "STATE_STORE_INVALID_VARIABLE_TYPE_CHANGE when a variable of the same name has another kind.",
        "A state variable was redeclared as another kind (getValueState -> getListState) under its name.",
        "Declare the new kind under a new name (it starts empty), or run the changed query on a new "
        "checkpoint.",
        "STATE_STORE_INVALID_VARIABLE_TYPE_CHANGE",
    ),
    _c(
        Code.TWS_VARIABLE_DROPPED,
        "tws-variable-dropped",
        WARNING,
        "The checkpoint holds a transformWithState state variable the processor no longer declares",
        "Spark 4.0 and newer start when a processor declares fewer state variables than the checkpoint "
        "records: the column family of a removed variable is no longer read, and a renamed variable is a "
        "new, empty one (its old state is not carried over).",
        "A state variable was removed or renamed in the processor.",
        "If the variable was renamed, rename it back (its state is still in the checkpoint); if it was "
        "removed on purpose, nothing is needed.",
    ),
    _c(
        Code.TWS_VALUE_SCHEMA_EVOLUTION_INVALID,
        "tws-value-schema-evolution-invalid",
        ERROR,
        "With the Avro state encoding, a state variable's value schema changed in a way Avro cannot evolve",
        "With spark.sql.streaming.stateStore.encodingFormat=avro (pinned in the offsets), Spark 4.x lets a "
        "transformWithState value schema evolve when Avro can read the old values with the new schema "
        "(a field added, a field removed, int -> long): it writes a new schema file. Any other change (long "
        "-> string) fails planning the first batch with STATE_STORE_INVALID_VALUE_SCHEMA_EVOLUTION.",
        "A state variable's field was retyped to an incompatible type.",
        "Keep the old type (or a promotion of it), or give the new schema a new variable name.",
        "STATE_STORE_INVALID_VALUE_SCHEMA_EVOLUTION",
    ),
    _c(
        Code.TWS_VALUE_SCHEMA_EVOLVES,
        "tws-value-schema-evolves",
        INFO,
        "With the Avro state encoding, a state variable's value schema evolves on restart",
        "With spark.sql.streaming.stateStore.encodingFormat=avro, a value schema change Avro can read the "
        "old values with (a field added, removed, or promoted) is accepted: the restart writes a new "
        "state schema file with the family's next value schema id, and reads the old values with the new "
        "schema (new fields null).",
        "A state variable's value schema was changed with the Avro encoding.",
        "Nothing to do; a rollback to the older code reads the evolved state as Avro allows.",
    ),
    _c(
        Code.STATE_FILE_UNREADABLE,
        "state-file-unreadable",
        ERROR,
        "A state file the next batch loads cannot be read",
        "The load of state version B reads a RocksDB zip (unzipped with ZipInputStream) and the changelogs "
        "or HDFS deltas after it, each a compressed stream. A zip that is not one, or is cut short, or a "
        "delta or changelog without its compression header fails the load in the tasks: "
        "'[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred during loading state.' on 4.x, the "
        "bare Java exception (java.io.EOFException, 'Unexpected end of ZLIB input stream', "
        "NoSuchFileException .../metadata) on 3.5. Spark 4.2+ with changelog checkpointing skips an "
        "unreadable zip and rebuilds from an older one (auto snapshot repair); 4.1 also names a "
        "checksum mismatch (CHECKPOINT_FILE_CHECKSUM_VERIFICATION_FAILED) as the cause.",
        "A partial upload on an object store, a disk error, or a hand edit.",
        "Roll back to the newest batch whose state loads ('plan --strategy rollback'), or restore the "
        "file from a backup.",
        "CANNOT_LOAD_STATE_STORE.UNCATEGORIZED",
        "Unexpected end of ZLIB input stream",
        "java.io.EOFException",
    ),
)
