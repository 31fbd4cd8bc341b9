#!/usr/bin/env python3
"""Regenerate the real-Spark checkpoint fixtures under ``fixtures/``.

Stdlib only; runs with any python3. Spark work happens in ``scripts/sparklab.py``, executed by
the python of a per-version venv made by ``scripts/spark_envs.py`` (one process per Spark
version per stage; the oracle one per 40 restarts). Lines: ``VERSIONS`` (write and restart),
``WRITERS`` (write bases only); the restart policy is ``_restart_specs`` (fixtures/README.md).

    python scripts/generate_fixtures.py                       # all stages, all lines
    python scripts/generate_fixtures.py --stage damage         # re-derive damaged scenarios
    python scripts/generate_fixtures.py --stage oracle --spark 4.1.4 --force   # re-record one line
    python scripts/generate_fixtures.py --stage oracle --spark 4.3.0 --scenario uncommitted-tail

Stages:

1. ``base``: run the real queries of ``BASES`` and copy the result to
   ``fixtures/spark-<v>/<base>/{checkpoint,sink,input}``.
2. ``damage``: derive every scenario of ``SCENARIOS`` from its base by applying its damage
   operations (pure file operations, deterministic: same base bytes in, same bytes out).
   Restart results recorded earlier are kept while the checkpoint's fingerprint is unchanged.
3. ``oracle``: for every scenario and every declared restart without a result for the current
   fingerprint (all of them with ``--force``), copy the scenario to a scratch directory,
   restart it with sparklab and record what Spark did in ``scenario.json`` under ``restarts``.
4. ``kafka``: Kafka bases written by real Spark + the connector against a real broker, the damage
   done to the topic (``scripts/kafka_fixtures.py``), each restarted with failOnDataLoss true and
   false on its line; written to ``fixtures/kafka/spark-<v>/``. On 4.1+ it also writes checkpoints in
   real-time mode (``scripts/kafka_realtime_fixtures.py``, ``fixtures/kafka-realtime/spark-<v>/``;
   ``--scenario kafka-realtime`` for those alone), restarted in every mode on every newer line.
5. ``delta``: Delta-source and Delta-sink bases written by real Spark + delta-spark, the damage done
   to the tables or the checkpoint (``scripts/delta_fixtures.py``), each restarted on its line;
   written to ``fixtures/delta/spark-<v>/``. Lines without a Delta release (4.3.0) are skipped.
6. ``jobs``: what each line's Spark says the changed-query jobs run (``fixtures/jobs/facts-<v>.json``,
   the ``--job`` probe); ``kafka-jobs``: the Kafka base restarted by jobs that subscribe to other
   topics on a real broker (``scripts/kafka_job_fixtures.py``, ``fixtures/kafka-jobs/spark-<v>/``);
   ``kafka-sources``: two Kafka sources in one query (``scripts/kafka_sources_fixtures.py``,
   ``fixtures/kafka-sources/spark-<v>/``); ``kafka-shapes``: one world read by ``subscribe``,
   ``subscribePattern`` and ``assign`` queries (``scripts/kafka_shapes_fixtures.py``,
   ``fixtures/kafka-shapes/spark-<v>/``).

Every directory under ``fixtures/`` and the script that writes it with real Spark (and damages it,
in the world for Kafka and Delta) is listed in ``FIXTURE_WRITERS`` below; ``tests/test_fixture_writers.py``
holds each directory to a writer that exists. No file under ``fixtures/`` is edited by hand.

Paths. Spark writes absolute paths into some logs (file source: input file paths; file sink:
output file paths), so every Spark run happens under one fixed scratch root,
``/tmp/checkpoint-doctor-fixtures`` (env ``CHECKPOINT_DOCTOR_FIXTURE_SCRATCH``), and the oracle
restores a file-source input directory at the path recorded in ``written_with.input_path``
before restarting, so a restarted file source sees the files it has already read.

Git does not keep empty directories: ``facts.empty_dirs`` lists them (the oracle recreates
them in its copies; consumers of the fixtures should do the same). The fingerprint covers
files only.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))
import spark_envs

REPO = SCRIPTS.parent
FIXTURES = REPO / "fixtures"
SPARKLAB = SCRIPTS / "sparklab.py"
SCRATCH = Path(os.environ.get("CHECKPOINT_DOCTOR_FIXTURE_SCRATCH", "/tmp/checkpoint-doctor-fixtures"))
#: Spark lines every prediction must be true on: each writes the bases and the damaged scenarios
#: and restarts them (tests replay every recorded restart; CI restarts live on CI_VERSIONS only).
VERSIONS = ("3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0")
#: Older releases that only write bases (CROSS_BASES), restarted on every line of VERSIONS: what a
#: team upgrading from them meets. Their restart model is not supported (no restarts on them).
WRITERS = ("3.3.4", "3.4.4")
#: Each directory under fixtures/ -> the script that writes it (real Spark, a real broker or real
#: Delta tables; damage done by the same script). Scripts other than this one reuse its helpers.
FIXTURE_WRITERS = {
    "spark-*": "generate_fixtures.py",
    "jobs": "generate_fixtures.py",
    "kafka": "kafka_fixtures.py",
    "kafka-loss": "kafka_fixtures.py",
    "kafka-realtime": "kafka_realtime_fixtures.py",
    "kafka-jobs": "kafka_job_fixtures.py",
    "kafka-sources": "kafka_sources_fixtures.py",
    "kafka-shapes": "kafka_shapes_fixtures.py",
    "delta": "delta_fixtures.py",
    "delta-schema": "delta_schema_fixtures.py",
    "delta-txn": "delta_txn_fixtures.py",
    "delta-union": "delta_union_fixtures.py",
    "tws": "tws_fixtures.py",
    "sdp": "sdp_fixtures.py",
    # The plan/apply/restart record of each refused restart: record_*_repairs.py, one per family.
    "repairs": "record_repairs.py",
}
ALL_VERSIONS = WRITERS + VERSIONS
#: The two lines whose restarts tests re-run live; damaged scenarios written by one of them are
#: also restarted on the other (recorded in the two-line era, kept: they cost nothing to replay).
CI_VERSIONS = ("3.5.9", "4.3.0")
SCHEMA_VERSION = 1
#: When set, a lock file every sparklab process holds while it runs (``flock``), so that on a
#: shared machine only one Spark JVM runs at a time.
SPARK_LOCK_ENV = "CHECKPOINT_DOCTOR_SPARK_LOCK"
RESTART_TIMEOUT_S = 45
RUN_TIMEOUT_S = 90
# Fixed ids for the temp files that damage operations create (no randomness, no clocks).
TMP_UUID_1 = "6f1e2d3c-4b5a-4697-8877-665544332211"
TMP_UUID_2 = "0a9b8c7d-6e5f-4a3b-9c2d-1e0f2a3b4c5d"
# Input files of the file-source base get fixed modification times: the file source orders
# files by mtime, so with maxFilesPerTrigger=1 this fixes which file each batch reads.
INPUT_MTIME_BASE = 1_700_000_000
DEFAULT_TRIGGER = {"micro-batch": "once", "async": "processing", "continuous": "continuous"}
DEFAULT_TRIGGER_INTERVAL = {"async": "100 milliseconds", "continuous": "1 second"}

# ------------------------------------------------------------------------------------------
# BASES: real queries. "runs" = number of jobs (each job is one start..stop of the query);
# "batches" = batches per run for self-stopping triggers only used as a sanity value.
# ------------------------------------------------------------------------------------------

_HDFS = {
    "spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
}


#: Bases the older WRITERS write too (stateless, stateful HDFS and RocksDB, file sink; async below).
_CROSS = ALL_VERSIONS


def _q(name, *, sources=1, stateful=False, mode="micro-batch", sink="noop", args=None):
    return {
        "name": name,
        "args": args or {},
        "sources": sources,
        "stateful": stateful,
        "mode": mode,
        "sink": sink,
    }


BASES: dict[str, dict[str, Any]] = {
    "stateless": {
        "description": "rate-micro-batch -> select -> noop, 4 runs with Trigger.Once: offsets and commits 0..3.",
        "query": _q("stateless"),
        "trigger": "once",
        "runs": 4,
        "confs": {},
        "options": {},
        "versions": _CROSS,
        "shape": {"offsets": [0, 1, 2, 3], "commits": [0, 1, 2, 3]},
    },
    "stateless_purged": {
        "description": "stateless query with minBatchesToRetain=3 run for 8 batches (Trigger.Once): "
        "batches 0..3 purged, offsets and commits 4..7 remain.",
        "query": _q("stateless"),
        "trigger": "once",
        "runs": 8,
        "confs": {
            "spark.sql.streaming.minBatchesToRetain": "3",
            # synchronous purge so that the purged prefix does not depend on timing
            "spark.sql.streaming.asyncLogPurge.enabled": "false",
        },
        "options": {},
        "shape": {"offsets": [4, 5, 6, 7], "commits": [4, 5, 6, 7]},
    },
    "window_agg": {
        "description": "withWatermark + groupBy(window).count, append, HDFS state store, 4 runs with "
        "Trigger.Once: offsets/commits 0..3, state versions 1..4.",
        "query": _q("window_agg", stateful=True),
        "trigger": "once",
        "runs": 4,
        "confs": dict(_HDFS),
        "options": {},
        "versions": _CROSS,
        "shape": {"offsets": [0, 1, 2, 3], "commits": [0, 1, 2, 3]},
    },
    "rocksdb": {
        "description": "withWatermark + groupBy(window).count, append, RocksDB state store without "
        "changelog checkpointing (a snapshot zip per state version), 4 Trigger.Once runs.",
        "query": _q("rocksdb", stateful=True),
        "trigger": "once",
        "runs": 4,
        "confs": {},
        "options": {},
        "versions": _CROSS,
        "shape": {"offsets": [0, 1, 2, 3], "commits": [0, 1, 2, 3]},
    },
    "rate_source": {
        "description": "the micro-batch 'rate' source (it keeps its start time in sources/0/0) -> noop, "
        "one processing-time run (1 s) stopped after 3 batches with aligned logs.",
        "query": _q("rate_source"),
        "trigger": "processing",
        "trigger_interval": "1 second",
        "runs": 1,
        "batches": 3,
        "stop_when_aligned": True,
        "confs": {},
        "options": {},
        "attempts": 2,
    },
    "dedup": {
        "description": "withWatermark + dropDuplicates(key, timestamp), HDFS state store, 4 Trigger.Once runs.",
        "query": _q("dedup", stateful=True),
        "trigger": "once",
        "runs": 4,
        "confs": dict(_HDFS),
        "options": {},
        "shape": {"offsets": [0, 1, 2, 3], "commits": [0, 1, 2, 3]},
    },
    "stream_join": {
        "description": "stream-stream inner join of two rate-micro-batch sources with watermarks and a "
        "time-range condition, HDFS state store, 4 Trigger.Once runs.",
        "query": _q("stream_join", sources=2, stateful=True),
        "trigger": "once",
        "runs": 4,
        "confs": dict(_HDFS),
        "options": {},
        "shape": {"offsets": [0, 1, 2, 3], "commits": [0, 1, 2, 3]},
    },
    "file_to_file": {
        "description": "json file source (maxFilesPerTrigger=1) -> json file sink, one AvailableNow run "
        "over 12 input files: batches 0..11, sink log compacted at 9 (9.compact); "
        "2 more input files added afterwards so a restart has new data.",
        "query": _q("file_to_file", sink="file"),
        "trigger": "available-now",
        "runs": 1,
        "confs": {},
        "options": {},
        "input_files": 12,
        "extra_input_files": 2,
        "versions": _CROSS,
        "shape": {"offsets": list(range(12)), "commits": list(range(12))},
    },
    "rocksdb_changelog": {
        "description": "window_agg with the RocksDB provider and changelog checkpointing "
        "(minDeltasForSnapshot=2), 7 batches in one processing-time run (1 s) so that "
        "the maintenance thread uploads some snapshot zips (timing-dependent).",
        "query": _q("rocksdb_changelog", stateful=True),
        "trigger": "processing",
        "trigger_interval": "1 second",
        "runs": 1,
        "batches": 7,
        "confs": {},
        "options": {},
        "attempts": 2,
        "shape": {"offsets": list(range(7)), "commits": list(range(7))},
    },
    "async": {
        "description": "stateless rate-micro-batch -> noop with async progress tracking (interval 1000 ms, "
        "trigger 100 ms), ~40 batches: sparse offsets/commits, stopped when the newest "
        "offsets and commit were aligned on disk.",
        "query": _q("async", mode="async"),
        "trigger": "processing",
        "trigger_interval": "100 milliseconds",
        "async_interval_ms": 1000,
        "runs": 1,
        "batches": 40,
        "stop_when_aligned": True,
        "confs": {},
        "options": {},
        "attempts": 3,
        # async progress tracking exists since 3.4 (SPARK-39591)
        "versions": ("3.4.4", *VERSIONS),
    },
    "continuous": {
        "description": "continuous-mode rate source -> noop, trigger Continuous(1 second), stopped after "
        "4 committed epochs.",
        "query": _q("continuous", mode="continuous"),
        "trigger": "continuous",
        "trigger_interval": "1 second",
        "runs": 1,
        "batches": 4,
        "confs": {},
        "options": {},
    },
    "rocksdb_v2": {
        "description": "window_agg on RocksDB with stateStore.checkpointFormatVersion=2 (commits v2 with "
        "stateUniqueIds, <version>_<uuid>.zip state files), 4 Trigger.Once runs.",
        "query": _q("rocksdb_v2", stateful=True),
        "trigger": "once",
        "runs": 4,
        "confs": {},
        # stateStore.checkpointFormatVersion exists since 4.0 (4.0/4.1 write the commit header v<conf>)
        "options": {},
        "versions": ["4.0.5", "4.1.4", "4.2.1", "4.3.0"],
        "shape": {"offsets": [0, 1, 2, 3], "commits": [0, 1, 2, 3]},
    },
    "two_kinds": {
        "description": "rate-micro-batch (source 0) unioned with the micro-batch rate source (source 1) -> "
        "noop, 4 Trigger.Once runs: each offsets file holds a rate-micro-batch offset, then a LongOffset.",
        "query": _q("two_kinds", sources=2),
        "trigger": "once",
        "runs": 4,
        "confs": {},
        "options": {},
        "shape": {"offsets": [0, 1, 2, 3], "commits": [0, 1, 2, 3]},
    },
    "offsets_v2": {
        "description": "stateless query whose source is named (DataStreamReader.name('src_a')) with "
        "queryEvolution.enableSourceEvolution=true: offsets files are v2, 4 Trigger.Once runs.",
        "query": _q("offsets_v2"),
        "trigger": "once",
        "runs": 4,
        "confs": {},
        "options": {},
        # DataStreamReader.name and offsets v2 (OffsetMap) exist since 4.2
        "versions": ["4.2.1", "4.3.0"],
        "shape": {"offsets": [0, 1, 2, 3], "commits": [0, 1, 2, 3]},
    },
}

# ------------------------------------------------------------------------------------------
# SCENARIOS: damaged copies of the bases. Paths are relative to the checkpoint root (or to the
# sink with "in": "sink"). Templates in paths: {L} = newest offsets id of the base, {K} = newest
# commit id, {P} = newest offsets id below L, with optional +n/-n ({L-1}).
# Ops: delete (file or dir; a file's Hadoop ".<name>.crc" goes too unless keep_crc), truncate,
# write (text or hex), replace_line (1-based), edit_json_line (drop_keys, set: nested merge), copy,
# copy_dir, delete_glob (one delete per matching file), mkdir,
# keep_only, delete_rocksdb_sst (resolved to a delete of one SST named by the newest zip of the
# first partition that has one, plus "also_delete" names in that partition).
# Content changes rewrite a valid Hadoop checksum when the file had one ("crc": "rewrite",
# default), or leave it stale ("keep") or remove it ("drop"); new files get one only with
# "crc": "create" (copies inherit the source's).
# restarts: list of {"spark": "default"|"own"|"other"|"3.5.9"|"4.3.0", "mode", "query", "confs"};
# default: own version and the other one, same mode as written.
# ------------------------------------------------------------------------------------------

SCENARIOS: list[dict[str, Any]] = [
    # --- async progress tracking -----------------------------------------------------------
    {
        "name": "async-tail",
        "base": "async",
        "description": "Healthy async-progress-tracking checkpoint (sparse aligned logs) restarted with "
        "async off (needs offsets/{L-1}) and with async on.",
        "damage": [],
        "restarts": [{"spark": "default", "mode": "micro-batch"}, {"spark": "default", "mode": "async"}],
    },
    # --- offsets / commits consistency (window_agg, L = K = 3) -----------------------------
    {
        "name": "uncommitted-tail",
        "base": "window_agg",
        "description": "commits/{L} deleted: the newest batch is planned but not committed.",
        "damage": [{"op": "delete", "path": "commits/{L}"}],
    },
    {
        "name": "missing-prev-offsets",
        "base": "window_agg",
        "description": "offsets/{L-1} deleted by hand in a synchronous (non-async) log.",
        "damage": [{"op": "delete", "path": "offsets/{L-1}"}],
    },
    {
        "name": "missing-prev-offsets-uncommitted",
        "base": "window_agg",
        "description": "offsets/{L-1} deleted by hand and commits/{L} missing too (uncommitted tail).",
        "damage": [{"op": "delete", "path": "offsets/{L-1}"}, {"op": "delete", "path": "commits/{L}"}],
    },
    {
        "name": "offsets-latest-empty",
        "base": "window_agg",
        "description": "offsets/{L} is 0 bytes and has no commit.",
        "damage": [
            {"op": "delete", "path": "commits/{L}"},
            {"op": "truncate", "path": "offsets/{L}", "bytes": 0},
        ],
    },
    {
        "name": "offsets-latest-truncated",
        "base": "window_agg",
        "description": "offsets/{L} cut after 300 bytes (inside the metadata JSON) and has no commit.",
        "damage": [
            {"op": "delete", "path": "commits/{L}"},
            {"op": "truncate", "path": "offsets/{L}", "bytes": 300},
        ],
    },
    {
        "name": "offsets-latest-header-only",
        "base": "window_agg",
        "description": "offsets/{L} holds only the version line 'v1' and has no commit.",
        "damage": [
            {"op": "delete", "path": "commits/{L}"},
            {"op": "write", "path": "offsets/{L}", "text": "v1"},
        ],
    },
    {
        "name": "commit-latest-empty",
        "base": "window_agg",
        "description": "commits/{L} is 0 bytes.",
        "damage": [{"op": "truncate", "path": "commits/{L}", "bytes": 0}],
    },
    {
        "name": "commit-latest-header-only",
        "base": "window_agg",
        "description": "commits/{L} holds only the version line 'v1'.",
        "damage": [{"op": "write", "path": "commits/{L}", "text": "v1"}],
    },
    {
        "name": "commit-ahead",
        "base": "window_agg",
        "description": "offsets/{L} deleted while commits/{L} is kept: the newest commit is ahead of the "
        "newest offsets.",
        "damage": [{"op": "delete", "path": "offsets/{L}"}],
    },
    {
        "name": "offsets-too-new",
        "base": "window_agg",
        "description": "offsets/{L} has the version line v99.",
        "damage": [{"op": "replace_line", "path": "offsets/{L}", "line": 1, "text": "v99"}],
    },
    {
        "name": "commit-too-new",
        "base": "window_agg",
        "description": "commits/{L} has the version line v99.",
        "damage": [{"op": "replace_line", "path": "commits/{L}", "line": 1, "text": "v99"}],
    },
    {
        "name": "metadata-missing",
        "base": "window_agg",
        "description": "The metadata file (query id) deleted while offsets and commits exist.",
        "damage": [{"op": "delete", "path": "metadata"}],
    },
    {
        "name": "metadata-unreadable",
        "base": "window_agg",
        "description": "The metadata file replaced by the truncated JSON '{'.",
        "damage": [{"op": "write", "path": "metadata", "text": "{"}],
    },
    {
        "name": "metadata-id-not-uuid",
        "base": "window_agg",
        "description": "The metadata file's id replaced by 'not-a-uuid', which java.util.UUID.fromString "
        "rejects (what 'plan --query-id not-a-uuid' used to write).",
        "damage": [{"op": "write", "path": "metadata", "text": '{"id":"not-a-uuid"}'}],
    },
    {
        "name": "metadata-id-not-hex",
        "base": "window_agg",
        "description": "The metadata file's id has five dash-separated groups, the last not hexadecimal.",
        "damage": [{"op": "write", "path": "metadata", "text": '{"id":"0-0-0-0-xyz"}'}],
    },
    {
        "name": "metadata-id-lenient",
        "base": "window_agg",
        "description": "The metadata file's id is '+1-2-3-4-5': not canonical, but java.util.UUID.fromString "
        "parses each group as a hexadecimal long (a sign, any length up to 36 characters in all).",
        "damage": [{"op": "write", "path": "metadata", "text": '{"id":"+1-2-3-4-5"}'}],
    },
    {
        "name": "orphan-crc",
        "base": "window_agg",
        "description": "commits/{L} deleted with rm, leaving its Hadoop checksum commits/.{L}.crc behind.",
        "damage": [{"op": "delete", "path": "commits/{L}", "keep_crc": True}],
    },
    {
        "name": "commits-two-behind",
        "base": "window_agg",
        "description": "commits/{L} and commits/{L-1} deleted: the newest commit is two batches behind.",
        "damage": [{"op": "delete", "path": "commits/{L}"}, {"op": "delete", "path": "commits/{L-1}"}],
    },
    {
        "name": "offsets-gap-ahead",
        "base": "window_agg",
        "description": "offsets/{L-1}, commits/{L-1} and commits/{L} deleted: offsets jump from {L-2} to "
        "{L} and the newest offsets have no commit.",
        "damage": [
            {"op": "delete", "path": "offsets/{L-1}"},
            {"op": "delete", "path": "commits/{L-1}"},
            {"op": "delete", "path": "commits/{L}"},
        ],
    },
    {
        "name": "commits-hole",
        "base": "window_agg",
        "description": "commits/1 deleted: a hole in the middle of the commit log.",
        "damage": [{"op": "delete", "path": "commits/1"}],
    },
    {
        "name": "commits-dir-deleted",
        "base": "window_agg",
        "description": "The whole commits/ directory deleted.",
        "damage": [{"op": "delete", "path": "commits"}],
    },
    {
        "name": "leftover-temp-files",
        "base": "window_agg",
        "description": "Healthy checkpoint plus leftover hidden temp files of a crashed writer: "
        "offsets/.{L+1}.<uuid>.tmp (complete copy of offsets/{L}) and an empty "
        "commits/.{L}.<uuid>.tmp.",
        "damage": [
            {"op": "copy", "src": "offsets/{L}", "path": f"offsets/.{{L+1}}.{TMP_UUID_1}.tmp"},
            {"op": "write", "path": f"commits/.{{L}}.{TMP_UUID_2}.tmp", "text": "", "crc": "create"},
        ],
    },
    {
        "name": "noncanonical-names",
        "base": "window_agg",
        "description": "offsets/03 (copy of offsets/1, with its .03.crc) next to offsets/3, and an unknown "
        "file offsets/foo.",
        "damage": [
            {"op": "copy", "src": "offsets/1", "path": "offsets/03"},
            {"op": "write", "path": "offsets/foo", "text": "not a batch\n"},
        ],
    },
    {
        "name": "offsets-void-source",
        "base": "window_agg",
        "description": "The source line of offsets/{L} replaced by '-' (no offset), no commit for {L}.",
        "damage": [
            {"op": "delete", "path": "commits/{L}"},
            {"op": "replace_line", "path": "offsets/{L}", "line": 3, "text": "-"},
        ],
    },
    {
        "name": "offsets-java-serialized",
        "base": "window_agg",
        "description": "offsets/{L} replaced by a Spark 2.0-style Java-serialized object (bytes AC ED 00 05 ...).",
        "damage": [
            {
                "op": "write",
                "path": "offsets/{L}",
                "hex": "aced0005737200386f72672e6170616368652e737061726b2e73716c2e657865637574696f6e2e"
                "73747265616d696e672e436f6d706f736974654f6666736574"
                "c4a3f1e20b5d6a7f0200014c00076f6666736574737400164c7363616c612f636f6c6c656374696f6e"
                "2f5365713b7870",
            }
        ],
    },
    {
        "name": "offsets-no-conf",
        "base": "stateless",
        "description": "Spark 2.1-style offsets/{L} of a stateless query: metadata line without the 'conf' map.",
        "damage": [{"op": "edit_json_line", "path": "offsets/{L}", "line": 2, "drop_keys": ["conf"]}],
    },
    {
        "name": "offsets-no-conf-stateful",
        "base": "window_agg",
        "description": "Spark 2.1-style offsets/{L} of a stateful aggregation: metadata line without the "
        "'conf' map (state format versions fall back to their legacy defaults).",
        "damage": [{"op": "edit_json_line", "path": "offsets/{L}", "line": 2, "drop_keys": ["conf"]}],
    },
    {
        "name": "offsets-blank-metadata",
        "base": "window_agg",
        "description": "Line 2 (batch metadata) of micro-batch offsets/{L} is blank (query with a watermark).",
        "damage": [{"op": "replace_line", "path": "offsets/{L}", "line": 2, "text": ""}],
    },
    {
        "name": "offsets-blank-metadata-stateless",
        "base": "stateless",
        "description": "Line 2 (batch metadata) of micro-batch offsets/{L} of a stateless query is blank.",
        "damage": [{"op": "replace_line", "path": "offsets/{L}", "line": 2, "text": ""}],
    },
    {
        "name": "offsets-dir-deleted",
        "base": "window_agg",
        "description": "The whole offsets/ directory deleted while commits/ is kept.",
        "damage": [{"op": "delete", "path": "offsets"}],
    },
    {
        "name": "commit-stale-crc",
        "base": "window_agg",
        "description": "commits/{L} rewritten with different content of the same length, its Hadoop "
        "checksum .{L}.crc left stale.",
        "damage": [
            {
                "op": "replace_line",
                "path": "commits/{L}",
                "line": 2,
                "text": '{"nextBatchWatermarkMs":9000}',
                "crc": "keep",
            }
        ],
    },
    # --- state store -----------------------------------------------------------------------
    {
        "name": "state-delta-missing",
        "base": "window_agg",
        "description": "state/0/0/{L+1}.delta deleted: the state version the restart (batch {L+1}) loads.",
        "damage": [{"op": "delete", "path": "state/0/0/{L+1}.delta"}],
    },
    {
        "name": "state-deleted",
        "base": "window_agg",
        "description": "The whole state/ directory deleted.",
        "damage": [{"op": "delete", "path": "state"}],
    },
    {
        "name": "state-partition-deleted",
        "base": "window_agg",
        "description": "state/0/1 (one shuffle partition of operator 0) deleted.",
        "damage": [{"op": "delete", "path": "state/0/1"}],
    },
    {
        "name": "state-operator-metadata-deleted",
        "base": "window_agg",
        "versions": ["4.0.5", "4.1.4", "4.2.1", "4.3.0"],  # operator metadata exists since 4.0
        "description": "state/0/_metadata (4.x operator metadata) deleted.",
        "damage": [{"op": "delete", "path": "state/0/_metadata"}],
    },
    {
        "name": "rocksdb-sst-missing",
        "base": "rocksdb_changelog",
        "description": "One SST file named by the newest snapshot zip of a partition deleted (all "
        "changelog files kept).",
        "damage": [{"op": "delete_rocksdb_sst", "operator_dir": "state/0"}],
        "restarts": [
            {"spark": "default"},
            {
                "spark": "own",
                "lines": ["4.2.1", "4.3.0"],
                "confs": {"spark.sql.streaming.stateStore.autoSnapshotRepair.enabled": "false"},
            },
        ],
    },
    {
        "name": "rocksdb-sst-missing-no-changelog",
        "base": "rocksdb_changelog",
        "description": "One SST file named by the newest snapshot zip of a partition deleted, and that "
        "partition's 1.changelog too (no full changelog chain from version 0).",
        "damage": [{"op": "delete_rocksdb_sst", "operator_dir": "state/0", "also_delete": ["1.changelog"]}],
    },
    # --- fresh / empty directories ---------------------------------------------------------
    {
        "name": "fresh-temp-only",
        "base": "stateless",
        "description": "A checkpoint directory that contains only offsets/.0.<uuid>.tmp (with its Hadoop "
        "checksum): a first start that crashed before its first rename.",
        "damage": [
            {"op": "copy", "src": "offsets/0", "path": f"offsets/.0.{TMP_UUID_1}.tmp"},
            {"op": "keep_only", "paths": [f"offsets/.0.{TMP_UUID_1}.tmp"]},
        ],
    },
    {
        "name": "fresh-empty-commits-dir",
        "base": "stateless",
        "description": "A checkpoint directory that contains only an empty commits/ directory "
        "(git does not keep it: see facts.empty_dirs).",
        "damage": [{"op": "keep_only", "paths": []}, {"op": "mkdir", "path": "commits"}],
    },
    # --- sources ---------------------------------------------------------------------------
    {
        "name": "source-count-mismatch",
        "base": "stateless",
        "description": "Healthy one-source checkpoint restarted by a query with two sources (union).",
        "damage": [],
        "restart_query": "stateless_two_sources",
    },
    # --- continuous ------------------------------------------------------------------------
    {
        "name": "continuous-commit-without-offsets",
        "base": "continuous",
        "description": "offsets/{K} deleted while commits/{K} is kept (continuous mode).",
        "damage": [{"op": "delete", "path": "offsets/{K}"}],
    },
    # --- file source / file sink (L = K = 11, sink log has 0..8, 9.compact, 10, 11) ------------
    {
        "name": "file-sink-uncommitted",
        "base": "file_to_file",
        "description": "commits/{L} deleted while the file sink's _spark_metadata/{L} exists.",
        "damage": [{"op": "delete", "path": "commits/{L}"}],
    },
    {
        "name": "file-sink-rollback",
        "base": "file_to_file",
        "description": "offsets/{L} and commits/{L} deleted (rolled back) while the file sink already "
        "committed batch {L} in _spark_metadata.",
        "damage": [{"op": "delete", "path": "offsets/{L}"}, {"op": "delete", "path": "commits/{L}"}],
    },
    {
        "name": "file-sink-compact-missing",
        "base": "file_to_file",
        "description": "The sink's first compaction file _spark_metadata/9.compact deleted.",
        "damage": [{"op": "delete", "in": "sink", "path": "_spark_metadata/9.compact"}],
    },
    # --- more consistency and history damage (added with the diagnosis codes) -----------------
    {
        "name": "async-tail-uncommitted",
        "base": "async",
        "description": "Async-progress-tracking checkpoint whose newest commit commits/{L} is gone: sparse "
        "logs with an uncommitted newest batch, restarted with async off and on.",
        "damage": [{"op": "delete", "path": "commits/{L}"}],
        "restarts": [{"spark": "default", "mode": "micro-batch"}, {"spark": "default", "mode": "async"}],
    },
    {
        "name": "metadata-missing-keep-crc",
        "base": "window_agg",
        "description": "metadata deleted with rm, leaving its Hadoop checksum .metadata.crc behind.",
        "damage": [{"op": "delete", "path": "metadata", "keep_crc": True}],
    },
    {
        "name": "unfinished-repartition",
        "base": "window_agg",
        "description": "commits/{L} deleted and offsets/{L} pins spark.sql.shuffle.partitions=3 while "
        "offsets/{L-1} pins 2 (what an unfinished offline repartition leaves).",
        "damage": [
            {"op": "delete", "path": "commits/{L}"},
            {
                "op": "edit_json_line",
                "path": "offsets/{L}",
                "line": 2,
                "set": {"conf": {"spark.sql.shuffle.partitions": "3"}},
            },
        ],
    },
    {
        "name": "offsets-partitions-not-int",
        "base": "window_agg",
        "description": "offsets/{L} pins spark.sql.shuffle.partitions=123456789012345678901234567890, a "
        "number that is not a Java int (found by the fuzzer, seed 5150).",
        "damage": [
            {
                "op": "edit_json_line",
                "path": "offsets/{L}",
                "line": 2,
                "set": {"conf": {"spark.sql.shuffle.partitions": "123456789012345678901234567890"}},
            },
        ],
    },
    {
        "name": "offsets-hole-with-commit",
        "base": "window_agg",
        "description": "offsets/1 deleted while commits/1 stays: a hole in the middle of the offsets log.",
        "damage": [{"op": "delete", "path": "offsets/1"}],
    },
    {
        "name": "offsets-history-truncated",
        "base": "window_agg",
        "description": "offsets/1 (an old batch a restart does not read) cut to 20 bytes.",
        "damage": [{"op": "truncate", "path": "offsets/1", "bytes": 20}],
    },
    {
        "name": "orphan-crc-old",
        "base": "window_agg",
        "description": "offsets/1 deleted with rm, leaving offsets/.1.crc behind (batch 1 is never "
        "written again).",
        "damage": [{"op": "delete", "path": "offsets/1", "keep_crc": True}],
    },
    {
        "name": "commits-emptied",
        "base": "window_agg",
        "description": "Every file in commits/ deleted, the directory kept (see facts.empty_dirs).",
        "damage": [{"op": "delete", "path": "commits"}, {"op": "mkdir", "path": "commits"}],
    },
    {
        "name": "interleaved-runs",
        "base": "window_agg",
        "description": "commits/{L} deleted and offsets/{L}'s batchTimestampMs set before offsets/{L-1}'s, "
        "as when two runs write one checkpoint.",
        "damage": [
            {"op": "delete", "path": "commits/{L}"},
            {"op": "edit_json_line", "path": "offsets/{L}", "line": 2, "set": {"batchTimestampMs": 1000}},
        ],
    },
    {
        "name": "state-partition-extra",
        "base": "window_agg",
        "description": "state/0/1 copied to state/0/5: a partition directory beyond the 2 pinned shuffle "
        "partitions.",
        "damage": [{"op": "copy_dir", "src": "state/0/1", "path": "state/0/5"}],
    },
    {
        "name": "rocksdb-v2-state-missing",
        "base": "rocksdb_v2",
        "description": "The checkpoint-format-2 zip of state version {L+1} named by commits/{L} deleted in "
        "partition 0.",
        "damage": [{"op": "delete_glob", "pattern": "state/0/0/{L+1}_*.zip"}],
    },
    {
        "name": "stateful-async-restart",
        "base": "window_agg",
        "description": "Healthy stateful checkpoint restarted with async progress tracking on.",
        "damage": [],
        "restarts": [{"spark": "default", "mode": "async"}],
    },
    {
        "name": "sink-log-behind",
        "base": "file_to_file",
        "description": "The file sink's _spark_metadata/{L} and /{L-1} deleted: committed batches missing "
        "from the sink log.",
        "damage": [
            {"op": "delete", "in": "sink", "path": "_spark_metadata/{L}"},
            {"op": "delete", "in": "sink", "path": "_spark_metadata/{L-1}"},
        ],
    },
    {
        "name": "sink-orphan-crc",
        "base": "file_to_file",
        "description": "commits/{L} deleted, and the file sink's _spark_metadata/{L} deleted with rm, leaving "
        "its Hadoop checksum _spark_metadata/.{L}.crc behind: batch {L} runs again and the sink writes "
        "_spark_metadata/{L} again.",
        "damage": [
            {"op": "delete", "path": "commits/{L}"},
            {"op": "delete", "in": "sink", "path": "_spark_metadata/{L}", "keep_crc": True},
        ],
    },
    {
        "name": "sink-log-unreadable",
        "base": "file_to_file",
        "description": "The file sink's newest log file _spark_metadata/{L} is 0 bytes.",
        "damage": [{"op": "truncate", "in": "sink", "path": "_spark_metadata/{L}", "bytes": 0}],
    },
    {
        "name": "sink-log-missing",
        "base": "file_to_file",
        "description": "The file sink's whole _spark_metadata directory deleted.",
        "damage": [{"op": "delete", "in": "sink", "path": "_spark_metadata"}],
    },
    {
        "name": "offsets-malformed-header",
        "base": "window_agg",
        "description": "offsets/{L}'s version line replaced by 'x1', and no commit for {L}.",
        "damage": [
            {"op": "delete", "path": "commits/{L}"},
            {"op": "replace_line", "path": "offsets/{L}", "line": 1, "text": "x1"},
        ],
    },
    {
        "name": "commit-malformed-header",
        "base": "window_agg",
        "description": "commits/{L}'s version line replaced by 'x1'.",
        "damage": [{"op": "replace_line", "path": "commits/{L}", "line": 1, "text": "x1"}],
    },
    {
        "name": "metadata-empty",
        "base": "window_agg",
        "description": "The metadata file truncated to 0 bytes.",
        "damage": [{"op": "truncate", "path": "metadata", "bytes": 0}],
    },
    {
        "name": "offsets-jump-ahead",
        "base": "window_agg",
        "description": "offsets/{L} copied to offsets/{L+3}: the newest offsets file jumps three ids ahead "
        "of the previous one, with no commit after the gap.",
        "damage": [{"op": "copy", "src": "offsets/{L}", "path": "offsets/{L+3}"}],
    },
    {
        "name": "continuous-uncommitted-epoch",
        "base": "continuous",
        "description": "commits/{K} deleted in a continuous-mode checkpoint: offsets/{K} is now an epoch "
        "after the newest commit.",
        "damage": [{"op": "delete", "path": "commits/{K}"}],
    },
    # --- sources whose connectors are not installable here (no Maven): offsets transplanted --
    {
        "name": "kafka-partitions-changed",
        "base": "stateless",
        "description": "Transplant (no Kafka connector here): the source lines of offsets/{L-1} and "
        "offsets/{L} replaced by Kafka offsets in KafkaSourceOffset JSON, partition 1 "
        "vanishing and partition 2 appearing between them. Not restarted with Spark.",
        "damage": [
            {"op": "replace_line", "path": "offsets/{L-1}", "line": 3, "text": '{"events":{"0":120,"1":98}}'},
            {"op": "replace_line", "path": "offsets/{L}", "line": 3, "text": '{"events":{"0":131,"2":7}}'},
        ],
        "restarts": [],
    },
    {
        "name": "delta-table-changed",
        "base": "stateless",
        "description": "Transplant (no Delta connector here): the source lines of offsets/{L-1} and "
        "offsets/{L} replaced by DeltaSourceOffset JSON naming two different table ids. "
        "Not restarted with Spark.",
        "damage": [
            {
                "op": "replace_line",
                "path": "offsets/{L-1}",
                "line": 3,
                "text": '{"sourceVersion":1,"reservoirId":"2f9a3c1e-0b6d-4c53-9d43-7a1c9e0b5d11","reservoirVersion":12,"index":-1,"isStartingVersion":false}',
            },
            {
                "op": "replace_line",
                "path": "offsets/{L}",
                "line": 3,
                "text": '{"sourceVersion":1,"reservoirId":"8c0d4e27-51f3-4d8a-b6e2-3f9c1a7d2e45","reservoirVersion":0,"index":-1,"isStartingVersion":true}',
            },
        ],
        "restarts": [],
    },
]

# --- checkpoints real Spark refused ----------------------------------------------
SCENARIOS += [
    {
        "name": "orphan-crc-both-same",
        "base": "window_agg",
        "description": "offsets/{L} and commits/{L} deleted with rm, leaving offsets/.{L}.crc and "
        "commits/.{L}.crc behind: the restart plans batch {L} again and writes both files.",
        "damage": [
            {"op": "delete", "path": "offsets/{L}", "keep_crc": True},
            {"op": "delete", "path": "commits/{L}", "keep_crc": True},
        ],
    },
    {
        "name": "orphan-crc-both-different",
        "base": "window_agg",
        "description": "commits/{L} deleted with rm (commits/.{L}.crc kept) and offsets/1 deleted with rm "
        "(offsets/.1.crc kept): orphan checksums in both logs, for different batches.",
        "damage": [
            {"op": "delete", "path": "commits/{L}", "keep_crc": True},
            {"op": "delete", "path": "offsets/1", "keep_crc": True},
        ],
    },
    {
        "name": "offsets-header-v9",
        "base": "window_agg",
        "description": "offsets/{L}'s version line is v9, its body otherwise valid.",
        "damage": [{"op": "replace_line", "path": "offsets/{L}", "line": 1, "text": "v9"}],
    },
    {
        "name": "commit-header-v7",
        "base": "window_agg",
        "description": "commits/{L}'s version line is v7, its body otherwise valid.",
        "damage": [{"op": "replace_line", "path": "commits/{L}", "line": 1, "text": "v7"}],
    },
    {
        "name": "commit-v3-without-sink-map",
        "base": "stateless",
        "description": "commits/{L}'s version line is v3 (the sink-evolution format of 4.2+) while its body "
        "has no sinkMetadataMap, as a tool that only bumps the header leaves it.",
        "damage": [{"op": "replace_line", "path": "commits/{L}", "line": 1, "text": "v3"}],
    },
]

# --- damage Spark reads must not read as healthy ---------------------------------
_GARBAGE = "13370000deadbeef676172626167650a00ff"  # binary garbage: not UTF-8, not a zip, not LZ4
SCENARIOS += [
    {
        "name": "rate-start-garbage",
        "base": "rate_source",
        "description": "The rate source's start-time file sources/0/0 replaced by binary garbage.",
        "damage": [{"op": "write", "path": "sources/0/0", "hex": _GARBAGE}],
    },
    {
        "name": "rate-start-empty",
        "base": "rate_source",
        "description": "The rate source's start-time file sources/0/0 is 0 bytes.",
        "damage": [{"op": "truncate", "path": "sources/0/0", "bytes": 0}],
    },
    {
        "name": "rate-start-bad-header",
        "base": "rate_source",
        "description": "The version line of the rate source's sources/0/0 replaced by 'x1'.",
        "damage": [{"op": "replace_line", "path": "sources/0/0", "line": 1, "text": "x1"}],
    },
    {
        "name": "rate-start-too-new",
        "base": "rate_source",
        "description": "The version line of the rate source's sources/0/0 replaced by 'v99'.",
        "damage": [{"op": "replace_line", "path": "sources/0/0", "line": 1, "text": "v99"}],
    },
    {
        "name": "file-source-log-corrupt",
        "base": "file_to_file",
        "description": "The file source's newest log entry sources/0/{L} replaced by text that is not JSON.",
        "damage": [{"op": "write", "path": "sources/0/{L}", "text": "v1\nnot json"}],
    },
    {
        "name": "file-source-log-empty",
        "base": "file_to_file",
        "description": "The file source's newest log entry sources/0/{L} is 0 bytes.",
        "damage": [{"op": "truncate", "path": "sources/0/{L}", "bytes": 0}],
    },
    {
        "name": "file-source-log-missing",
        "base": "file_to_file",
        "description": "The file source's log entry sources/0/{L-1} (after the compaction {L-2}.compact) "
        "deleted.",
        "damage": [{"op": "delete", "path": "sources/0/{L-1}"}],
    },
    {
        "name": "file-source-log-latest-missing",
        "base": "file_to_file",
        "description": "The file source's newest log entry sources/0/{L} deleted (offsets/{L} names it).",
        "damage": [{"op": "delete", "path": "sources/0/{L}"}],
    },
    {
        "name": "rocksdb-zip-garbage",
        "base": "rocksdb",
        "description": "The snapshot zip state/0/0/{L+1}.zip that the restart loads replaced by garbage.",
        "damage": [{"op": "write", "path": "state/0/0/{L+1}.zip", "hex": _GARBAGE}],
    },
    {
        "name": "rocksdb-zip-truncated",
        "base": "rocksdb",
        "description": "The snapshot zip state/0/0/{L+1}.zip that the restart loads cut to half its size.",
        "damage": [{"op": "truncate", "path": "state/0/0/{L+1}.zip", "fraction": 0.5}],
    },
    {
        "name": "rocksdb-changelog-zip-truncated",
        "base": "rocksdb_changelog",
        "description": "The newest snapshot zip (at or below state version {L+1}) of the first partition "
        "that has one cut to half its size; changelogs kept.",
        "damage": [
            {
                "op": "rocksdb_file",
                "operator_dir": "state/0",
                "kind": "zip",
                "version": "{L+1}",
                "then": {"op": "truncate", "fraction": 0.5},
            }
        ],
    },
    {
        "name": "rocksdb-changelog-corrupt",
        "base": "rocksdb_changelog",
        "description": "The newest changelog at or below state version {L+1} (the version the restart "
        "loads) without a zip of its own version replaced by garbage, in partition 0 "
        "(read by the load only when no newer zip at or below {L+1} exists: the "
        "maintenance thread's uploads differ per run).",
        "damage": [
            {
                "op": "rocksdb_file",
                "operator_dir": "state/0",
                "kind": "changelog",
                "version": "{L+1}",
                "then": {"op": "write", "hex": _GARBAGE},
            }
        ],
    },
    {
        "name": "rocksdb-state-deleted",
        "base": "rocksdb",
        "description": "The whole state/ directory of a RocksDB (no changelog) checkpoint deleted.",
        "damage": [{"op": "delete", "path": "state"}],
    },
    {
        "name": "state-delta-corrupt",
        "base": "window_agg",
        "description": "state/0/0/{L+1}.delta (the HDFS state version the restart loads) replaced by garbage.",
        "damage": [{"op": "write", "path": "state/0/0/{L+1}.delta", "hex": _GARBAGE}],
    },
]


def kafka_initial_offsets(json_text: str, era: str) -> str:
    """Hex of a Kafka ``sources/<n>/0`` initial-offsets file, as each era of Spark wrote it.

    ``2.1``: Spark 2.1.0's KafkaSource wrote ``out.write(bytes.length)`` (one byte: the low 8 bits
    of the JSON length) and the JSON, no version line (SPARK-19517). Later releases
    (KafkaSourceInitialOffsetWriter.serialize) write a NUL byte, ``v1\n`` and the JSON; the reader
    skips the first byte whatever it is, then takes a leading ``v`` as the version line.
    """
    body = json_text.encode("utf-8")
    if era == "2.1":
        return (bytes([len(body) & 0xFF]) + body).hex()
    return (b"\x00" + f"{era}\n".encode() + body).hex()


_KAFKA_INITIAL = '{"events":{"0":100,"1":90}}'
#: Kafka offsets for offsets/0..3 of the stateless base (its L is 3), growing from the initial ones.
_KAFKA_LINES = [
    {
        "op": "replace_line",
        "path": f"offsets/{{L-{3 - b}}}" if b < 3 else "offsets/{L}",
        "line": 3,
        "text": f'{{"events":{{"0":{100 + 10 * (b + 1)},"1":{90 + 5 * (b + 1)}}}}}',
    }
    for b in range(4)
]
SCENARIOS += [
    {
        "name": "kafka-initial-offsets-2.1",
        "base": "stateless",
        "description": "Transplant (no Kafka connector here): Kafka offsets in offsets/ and the initial "
        "offsets file sources/0/0 as Spark 2.1.0 wrote it (a length byte, JSON, no version "
        "line). Not restarted with Spark.",
        "damage": [
            *_KAFKA_LINES,
            {
                "op": "write",
                "path": "sources/0/0",
                "hex": kafka_initial_offsets(_KAFKA_INITIAL, "2.1"),
                "crc": "create",
            },
        ],
        "restarts": [],
    },
    {
        "name": "kafka-initial-offsets-v1",
        "base": "stateless",
        "description": "Transplant: Kafka offsets in offsets/ and sources/0/0 as current Spark writes it "
        "(NUL byte, v1, JSON). Not restarted with Spark.",
        "damage": [
            *_KAFKA_LINES,
            {
                "op": "write",
                "path": "sources/0/0",
                "hex": kafka_initial_offsets(_KAFKA_INITIAL, "v1"),
                "crc": "create",
            },
        ],
        "restarts": [],
    },
    {
        "name": "kafka-initial-offsets-too-new",
        "base": "stateless",
        "description": "Transplant: Kafka offsets in offsets/ and sources/0/0 with the version line v99999. "
        "A restart from offsets/ does not read it. Not restarted with Spark.",
        "damage": [
            *_KAFKA_LINES,
            {
                "op": "write",
                "path": "sources/0/0",
                "hex": kafka_initial_offsets(_KAFKA_INITIAL, "v99999"),
                "crc": "create",
            },
        ],
        "restarts": [],
    },
    {
        "name": "kafka-initial-offsets-too-new-fresh",
        "base": "stateless",
        "description": "Transplant: only metadata and the Kafka initial offsets sources/0/0 with the version "
        "line v99999 (a first run that stopped before planning batch 0): the first batch "
        "reads it. Not restarted with Spark.",
        "damage": [
            {
                "op": "write",
                "path": "sources/0/0",
                "hex": kafka_initial_offsets(_KAFKA_INITIAL, "v99999"),
                "crc": "create",
            },
            {"op": "keep_only", "paths": ["metadata", "sources/0/0"]},
        ],
        "restarts": [],
    },
]

SCENARIOS.append(
    {
        "name": "continuous-as-micro-batch",
        "base": "continuous",
        "description": "Healthy continuous-mode checkpoint (blank metadata lines) restarted in micro-batch mode.",
        "damage": [],
        "restarts": [{"spark": "default", "mode": "micro-batch"}],
    }
)

# The changed query: a healthy base restarted on its own line by a job module of fixtures/jobs/
# with one change from Spark's "Recovery Semantics after Changes in a Streaming Query" (allowed,
# not allowed, depends). `diagnose --job` predicts each from the job's facts (JOB_CHANGES).
JOBS_FILE = "fixtures/jobs/changes.py"
JOB_CHANGES: dict[str, tuple[str, str, str]] = {
    # name: (base, job function, what changed)
    "job-unchanged": ("stateless", "stateless", "the same query as a job module (no change)"),
    "job-filter-added": ("stateless", "stateless_filter", "a filter added (allowed)"),
    "job-source-added": ("stateless", "stateless_two_sources", "a second source unioned in (not allowed)"),
    "job-aggregation-added": ("stateless", "stateless_add_count", "a stateful aggregation added"),
    "job-shuffle-partitions": (
        "stateless",
        "stateless_partitions",
        "the job sets spark.sql.shuffle.partitions=4 (the checkpoint pins 2)",
    ),
    "job-window-unchanged": ("window_agg", "window_agg", "the same query as a job module (no change)"),
    "job-grouping-key-added": ("window_agg", "window_agg_key_added", "a grouping key added (not allowed)"),
    "job-aggregate-changed": ("window_agg", "window_agg_avg", "count() replaced by avg(value)"),
    "job-aggregate-renamed": (
        "window_agg",
        "window_agg_renamed",
        "count() replaced by sum(value) AS s (same type, new name)",
    ),
    "job-dedup-added": (
        "window_agg",
        "window_agg_dedup_added",
        "dropDuplicates added before the aggregation",
    ),
    "job-state-provider-changed": (
        "window_agg",
        "window_agg_rocksdb",
        "the job sets the RocksDB state store provider (the checkpoint pins HDFS)",
    ),
    "job-aggregation-removed": ("window_agg", "window_agg_removed", "the aggregation removed"),
    # Sources: their type, a file source's path, the continuous rate source's options.
    "job-source-kind-changed": ("stateless", "stateless_rate_source", "rate-micro-batch replaced by rate"),
    "job-file-unchanged": ("file_to_file", "file_to_file", "the same query as a job module (no change)"),
    "job-file-source-moved": ("file_to_file", "file_source_moved", "the file source reads a copy elsewhere"),
    "job-rate-partitions-changed": ("continuous", "continuous_partitions", "rate numPartitions 1 -> 2"),
    "job-rate-rows-changed": ("continuous", "continuous_rows", "rate rowsPerSecond 5 -> 10 (allowed)"),
    "job-rate-micro-batch-rows-changed": (
        "stateless",
        "stateless_rows",
        "rate-micro-batch rowsPerBatch 5 -> 10",
    ),
    "job-rate-source-partitions-changed": (
        "rate_source",
        "rate_partitions",
        "micro-batch rate numPartitions 1 -> 2",
    ),
    # Sinks: a file sink's path, the output mode.
    "job-file-sink-moved": ("file_to_file", "file_sink_moved", "the file sink writes to another path"),
    "job-output-mode-update": ("window_agg", "window_agg_update", "output mode append -> update"),
    "job-output-mode-complete": ("window_agg", "window_agg_complete", "output mode append -> complete"),
    "job-output-mode-complete-stateless": (
        "stateless",
        "stateless_complete",
        "output mode complete without an aggregation",
    ),
    # Triggers: async progress tracking on or off, continuous on or off.
    "job-async-off": ("async", "async_off", "async progress tracking turned off (a sparse tail)"),
    "job-async-on": ("stateless", "stateless_async", "async progress tracking turned on"),
    "job-async-on-stateful": (
        "window_agg",
        "window_agg_async",
        "async progress tracking on a stateful query",
    ),
    "job-continuous-off": (
        "continuous",
        "continuous_off",
        "a continuous query run with a micro-batch trigger",
    ),
    "job-continuous-on": ("rate_source", "rate_continuous", "a micro-batch rate query run continuously"),
    # The order of sources: the same two sources unioned the other way round.
    "job-two-kinds-unchanged": ("two_kinds", "two_kinds", "the same query as a job module (no change)"),
    "job-sources-reordered": ("two_kinds", "two_kinds_swapped", "the two sources in the other order"),
}
#: How a change restarts, where not as its base did: the mode the job's trigger makes, the job's own
#: trigger ("job": sparklab keeps what the function set), a copy of the input at another path.
_JOB_TRIGGER = {"trigger": "job"}
JOB_RESTARTS: dict[str, dict[str, Any]] = {
    # The README's pre-migration example: 3.5.9's checkpoint restarted by the changed job on 4.3.0 too.
    "job-aggregate-changed": {"also": [{"spark": "4.3.0", "lines": ["3.5.9"]}]},
    "job-file-source-moved": {"input_copy": "-moved"},
    "job-file-sink-moved": {"read_sink_suffix": "-moved"},
    "job-rate-partitions-changed": _JOB_TRIGGER,
    "job-rate-rows-changed": _JOB_TRIGGER,
    "job-async-off": {"mode": "micro-batch", **_JOB_TRIGGER},
    "job-async-on": {"mode": "async", **_JOB_TRIGGER},
    "job-async-on-stateful": {"mode": "async", **_JOB_TRIGGER},
    "job-continuous-off": {"mode": "micro-batch", **_JOB_TRIGGER},
    "job-continuous-on": {"mode": "continuous", **_JOB_TRIGGER},
}
SCENARIOS += [
    {
        "name": name,
        "base": base,
        "description": f"Healthy {base} checkpoint restarted by {JOBS_FILE}:{function}: {what}.",
        "damage": [],
        "restart_query": f"job:{JOBS_FILE}:{function}",
        "restarts": [
            {"spark": "own", **{k: v for k, v in JOB_RESTARTS.get(name, {}).items() if k != "also"}},
            *JOB_RESTARTS.get(name, {}).get("also", []),
        ],
    }
    for name, (base, function, what) in JOB_CHANGES.items()
]

# ------------------------------------------------------------------------------------------
# EXPECT: the diagnosis codes each scenario must produce, reviewed by hand against what Spark
# did on the recorded restarts. "codes" is for `diagnose` with the scenario's own Spark line,
# the detected mode, and the query's source count and statefulness, live detection off; a dict
# gives codes per Spark version. "more" lists other diagnose arguments and their codes ("now":
# "latest+5s" = 5 s after the newest batch was planned; "fresh_temp" = temp files just written).
# tests/diagnosis/test_codes.py checks every scenario, and that every code has a scenario.
# ------------------------------------------------------------------------------------------
_LIVE = {"live_window_s": 600}
EXPECT: dict[str, dict[str, Any]] = {
    "stateless": {
        "codes": [],
        "more": [
            {"args": {"spark": "3.5"}, "codes": {"4.0+": ["CD601"]}},
            {"args": {**_LIVE, "now": "latest+5s"}, "codes": ["CD501"]},
        ],
    },
    "stateless_purged": {"codes": []},
    "window_agg": {"codes": [], "more": [{"args": {"stateful": False}, "codes": ["CD308"]}]},
    "dedup": {"codes": []},
    "stream_join": {"codes": []},
    "file_to_file": {"codes": []},
    "rocksdb_changelog": {"codes": []},
    "async": {"codes": ["CD102"]},
    "continuous": {"codes": []},
    # 4.0/4.1 want the session's checkpointFormatVersion (2 here) to equal the commit header: told
    # nothing, the tool assumes 1 (CD006).
    "rocksdb_v2": {
        "codes": {"4.0+": ["CD006"], "4.2+": []},
        "more": [
            {"args": {"spark": "3.5"}, "codes": ["CD005", "CD601"]},
            {"args": {"spark": "4.1"}, "codes": {"4.0+": ["CD006"], "4.2+": ["CD006", "CD601"]}},
            {
                "args": {"spark": "4.1", "checkpoint_format_version": 2},
                "codes": {"4.0+": [], "4.2+": ["CD601"]},
            },
        ],
    },
    # 4.2.1 writes v1 offsets even with source evolution on; 4.3.0 writes v2 and refuses it on v1.
    "offsets_v2": {
        "codes": [],
        "more": [
            {"args": {"spark": "3.5"}, "codes": {"4.2.1": ["CD601"], "4.3.0": ["CD005", "CD601"]}},
            {
                "args": {
                    "spark": "4.3",
                    "confs": {"spark.sql.streaming.queryEvolution.enableSourceEvolution": "true"},
                },
                "codes": {"4.2.1": ["CD603"], "4.3.0": []},
            },
        ],
    },
    "async-tail": {"codes": ["CD102"], "more": [{"args": {"mode": "micro-batch"}, "codes": ["CD101"]}]},
    "async-tail-uncommitted": {
        "codes": ["CD102", "CD106"],
        "more": [{"args": {"mode": "micro-batch"}, "codes": ["CD101", "CD105"]}],
    },
    "uncommitted-tail": {"codes": ["CD106"]},
    "missing-prev-offsets": {"codes": ["CD103", "CD108"]},
    "missing-prev-offsets-uncommitted": {"codes": ["CD103", "CD106", "CD108"]},
    "offsets-latest-empty": {"codes": ["CD003", "CD106"]},
    "offsets-latest-truncated": {"codes": ["CD003", "CD106"]},
    "offsets-latest-header-only": {"codes": ["CD003", "CD106"]},
    "commit-latest-empty": {"codes": ["CD004"]},
    "commit-latest-header-only": {"codes": []},
    "commit-stale-crc": {"codes": []},
    "commit-ahead": {"codes": ["CD104"]},
    "offsets-too-new": {"codes": ["CD005"]},
    "commit-too-new": {"codes": ["CD005"]},
    "metadata-missing": {"codes": ["CD001"]},
    "metadata-missing-keep-crc": {"codes": {"3.5+": ["CD001", "CD504"], "4.2+": ["CD001", "CD505"]}},
    "metadata-unreadable": {"codes": ["CD002"]},
    "metadata-id-not-uuid": {"codes": ["CD014"]},
    "metadata-id-not-hex": {"codes": ["CD014"]},
    "metadata-id-lenient": {"codes": []},
    "orphan-crc": {"codes": ["CD106", "CD504"]},
    "orphan-crc-old": {"codes": ["CD107", "CD108", "CD505"]},
    "commits-two-behind": {"codes": ["CD105"]},
    "offsets-gap-ahead": {"codes": ["CD103", "CD105"]},
    "offsets-jump-ahead": {"codes": ["CD105", "CD109", "CD302"]},
    "offsets-malformed-header": {"codes": ["CD003", "CD106"]},
    "commit-malformed-header": {"codes": ["CD004"]},
    "metadata-empty": {"codes": ["CD002"]},
    "commits-hole": {"codes": []},
    "commits-dir-deleted": {"codes": ["CD106"]},
    "commits-emptied": {"codes": ["CD106", "CD508"]},
    "offsets-dir-deleted": {"codes": ["CD110"]},
    "leftover-temp-files": {
        "codes": ["CD506"],
        "more": [{"args": {**_LIVE, "now": "fresh_temp"}, "codes": ["CD502", "CD506"]}],
    },
    "noncanonical-names": {"codes": ["CD509", "CD510"]},
    "offsets-void-source": {"codes": ["CD106", "CD202"]},
    "offsets-java-serialized": {"codes": ["CD007"]},
    "offsets-no-conf": {"codes": ["CD010"]},
    "offsets-no-conf-stateful": {"codes": ["CD011"]},
    "offsets-blank-metadata": {"codes": ["CD008"]},
    "offsets-blank-metadata-stateless": {"codes": ["CD008"]},
    "offsets-history-truncated": {"codes": ["CD009"]},
    "offsets-hole-with-commit": {"codes": ["CD107", "CD108"]},
    "interleaved-runs": {"codes": ["CD106", "CD503"]},
    "unfinished-repartition": {"codes": {"3.5+": ["CD106", "CD304"], "4.2+": ["CD012", "CD106", "CD304"]}},
    "state-delta-missing": {"codes": ["CD302", "CD307"]},
    "state-deleted": {"codes": ["CD301"], "more": [{"args": {"stateful": None}, "codes": ["CD310"]}]},
    "state-partition-deleted": {"codes": ["CD304"]},
    "state-partition-extra": {"codes": ["CD305"]},
    "state-operator-metadata-deleted": {"codes": []},
    "rocksdb-sst-missing": {
        "codes": {"3.5+": ["CD303"], "4.2+": ["CD309"]},
        "more": [
            {
                "args": {"confs": {"spark.sql.streaming.stateStore.autoSnapshotRepair.enabled": "false"}},
                "codes": ["CD303"],
            }
        ],
    },
    "rocksdb-sst-missing-no-changelog": {"codes": {"3.5+": ["CD303"], "4.2+": ["CD302"]}},
    "rocksdb-v2-state-missing": {
        "codes": {"4.0+": ["CD006"], "4.2+": ["CD306"]},
        "more": [{"args": {"checkpoint_format_version": 2}, "codes": ["CD306"]}],
    },
    "stateful-async-restart": {"codes": [], "more": [{"args": {"mode": "async"}, "codes": ["CD602"]}]},
    "fresh-temp-only": {"codes": {"3.5+": ["CD506"], "4.1+": ["CD507"]}},
    "fresh-empty-commits-dir": {"codes": []},
    "source-count-mismatch": {"codes": [], "more": [{"args": {"sources": 2}, "codes": ["CD201"]}]},
    # Without --job each is its healthy base (tests/diagnosis/test_job_changes.py judges the job).
    **{name: {"codes": []} for name in JOB_CHANGES},
    "job-async-off": {"codes": ["CD102"]},  # the async base's
    "two_kinds": {"codes": []},
    "continuous-commit-without-offsets": {"codes": ["CD701"]},
    "continuous-uncommitted-epoch": {"codes": ["CD702"]},
    "continuous-as-micro-batch": {
        "codes": [],
        "more": [{"args": {"mode": "micro-batch"}, "codes": ["CD008"]}],
    },
    "file-sink-uncommitted": {"codes": ["CD106", "CD401"]},
    "file-sink-rollback": {"codes": ["CD402"]},
    "file-sink-compact-missing": {"codes": ["CD404"]},
    "sink-log-behind": {"codes": ["CD403"]},
    "sink-log-unreadable": {"codes": ["CD405"]},
    "sink-orphan-crc": {"codes": ["CD106", "CD504"]},
    "sink-log-missing": {"codes": ["CD406"]},
    # CD212: the Kafka positions are not checked without a broker (issue 32 item 6; the scenarios
    # have no broker: their topics were never recorded)
    "kafka-partitions-changed": {"codes": ["CD203", "CD212"]},
    "rocksdb": {"codes": []},
    "rate_source": {"codes": []},
    "orphan-crc-both-same": {"codes": ["CD504"]},
    "orphan-crc-both-different": {"codes": ["CD106", "CD107", "CD108", "CD504", "CD505"]},
    "offsets-header-v9": {"codes": ["CD005"]},
    "commit-header-v7": {"codes": ["CD005"]},
    "offsets-partitions-not-int": {"codes": ["CD013"]},
    "commit-v3-without-sink-map": {"codes": {"3.5+": ["CD005"], "4.2+": ["CD004"]}},
    "rate-start-garbage": {"codes": ["CD205"]},
    "rate-start-empty": {"codes": ["CD205"]},
    "rate-start-bad-header": {"codes": ["CD205"]},
    "rate-start-too-new": {"codes": ["CD205"]},
    "file-source-log-corrupt": {"codes": ["CD205"]},
    "file-source-log-empty": {"codes": ["CD205"]},
    "file-source-log-missing": {"codes": ["CD205"]},
    "file-source-log-latest-missing": {"codes": ["CD205"]},
    "rocksdb-zip-garbage": {"codes": ["CD311"]},
    "rocksdb-zip-truncated": {"codes": ["CD311"]},
    "rocksdb-changelog-zip-truncated": {"codes": {"3.5+": ["CD311"], "4.2+": ["CD309"]}},
    # The changelog damaged is the one the load reads only where no zip of the loaded version was
    # uploaded (4.1.4, 4.2.1, 4.3.0 runs); elsewhere it is an older file a default read skips.
    "rocksdb-changelog-corrupt": {"codes": {"3.5+": [], "4.1+": ["CD311"]}},
    "state-delta-corrupt": {"codes": ["CD311"]},
    "rocksdb-state-deleted": {"codes": ["CD301"]},
    "kafka-initial-offsets-2.1": {"codes": ["CD212"]},
    "kafka-initial-offsets-v1": {"codes": ["CD212"]},
    "kafka-initial-offsets-too-new": {"codes": ["CD206", "CD212"]},
    "kafka-initial-offsets-too-new-fresh": {"codes": ["CD205"]},
    "delta-table-changed": {"codes": ["CD204"]},
}


def _expected(name: str) -> tuple[Any, list[dict]]:
    exp = EXPECT.get(name)
    if exp is None:
        raise KeyError(f"scenario {name} has no entry in EXPECT")
    return exp["codes"], exp.get("more", [])


_LINE_ORDER = ("3.5", "4.0", "4.1", "4.2", "4.3")


def _for_version(codes: Any, version: str) -> list[str]:
    """Codes of one version: a list is for every version; a dict maps a version ("4.0.5") or a line
    and all later ones ("4.2+") to codes, the exact version first, else the latest matching line.
    A writer-only version (3.3.4) is diagnosed for the oldest supported line (tests: test_codes)."""
    if not isinstance(codes, dict):
        return sorted(codes)
    if version in codes:
        return sorted(codes[version])
    line = ".".join(version.split(".")[:2])
    rank = _LINE_ORDER.index(line) if line in _LINE_ORDER else 0
    ranges = [k for k in codes if k.endswith("+") and _LINE_ORDER.index(k[:-1]) <= rank]
    best = max(ranges, key=lambda k: _LINE_ORDER.index(k[:-1]), default=None)
    return sorted(codes[best]) if best is not None else []


for _name, _b in BASES.items():
    _b["expect_codes"], _b["expect_more"] = _expected(_name)
for _s in SCENARIOS:
    _s["expect_codes"], _s["expect_more"] = _expected(_s["name"])


# ------------------------------------------------------------------------------------------
# helpers: files, checksums, facts, fingerprint
# ------------------------------------------------------------------------------------------


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def crc_path(path: Path) -> Path:
    """Hadoop LocalFileSystem checksum side file of ``path``."""
    return path.with_name(f".{path.name}.crc")


def hadoop_crc(data: bytes, bytes_per_checksum: int = 512) -> bytes:
    """Bytes of a Hadoop ChecksumFileSystem ``.crc`` file: 'crc\\0', int chunk size, CRC32s."""
    out = bytearray(b"crc\x00" + struct.pack(">i", bytes_per_checksum))
    for i in range(0, len(data), bytes_per_checksum):
        out += struct.pack(">I", zlib.crc32(data[i : i + bytes_per_checksum]) & 0xFFFFFFFF)
    return bytes(out)


def batch_ids(directory: Path, compact: bool = False) -> list[int]:
    """Ids of the regular files whose whole name parses as a long, as Spark lists them."""
    if not directory.is_dir():
        return []
    ids = set()
    pattern = r"[+-]?\d+(\.compact)?" if compact else r"[+-]?\d+"
    for entry in directory.iterdir():
        if entry.is_file() and re.fullmatch(pattern, entry.name):
            ids.add(int(entry.name.split(".")[0]))
    return sorted(ids)


def fingerprint(scen: Path) -> str:
    h = hashlib.sha256()
    entries = []
    for sub in ("checkpoint", "sink"):
        root = scen / sub
        if root.is_dir():
            for p in root.rglob("*"):
                if p.is_file():
                    entries.append(
                        (p.relative_to(scen).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
                    )
    for rel, digest in sorted(entries):
        h.update(f"{rel}\0{digest}\n".encode())
    return h.hexdigest()


def empty_dirs(scen: Path) -> list[str]:
    out = []
    for sub in ("checkpoint", "sink"):
        root = scen / sub
        if root.is_dir():
            for p in sorted(root.rglob("*")):
                if p.is_dir() and not any(p.iterdir()):
                    out.append(p.relative_to(scen).as_posix())
    return out


def _read_lines(path: Path) -> list[str] | None:
    try:
        return path.read_bytes().decode("utf-8").split("\n")
    except (OSError, UnicodeDecodeError):
        return None


def compute_facts(scen: Path, query: dict, fallback: dict | None = None) -> dict:
    cp = scen / "checkpoint"
    query_id = None
    with contextlib.suppress(OSError, ValueError, AttributeError):
        query_id = json.loads((cp / "metadata").read_text(encoding="utf-8")).get("id")
    offsets = batch_ids(cp / "offsets")
    commits = batch_ids(cp / "commits")
    shuffle = None
    if offsets:
        lines = _read_lines(cp / "offsets" / str(offsets[-1]))
        if lines and len(lines) > 1:
            try:
                shuffle = int(json.loads(lines[1])["conf"]["spark.sql.shuffle.partitions"])
            except (ValueError, KeyError, TypeError):
                shuffle = None
    if shuffle is None and fallback:
        shuffle = fallback.get("shuffle_partitions")
    state = cp / "state"
    ops = (
        sorted(int(p.name) for p in state.iterdir() if p.is_dir() and p.name.isdigit())
        if state.is_dir()
        else []
    )
    facts: dict[str, Any] = {
        "query_id": query_id,
        "offsets": offsets,
        "commits": commits,
        "sources": query["sources"],
        "state_operators": ops,
        "shuffle_partitions": shuffle if shuffle is not None else 2,
        "empty_dirs": empty_dirs(scen),
    }
    sink_log = scen / "sink" / "_spark_metadata"
    if sink_log.is_dir():
        facts["sink_log"] = sorted(
            e.name for e in sink_log.iterdir() if e.is_file() and not e.name.startswith(".")
        )
        facts["sink_log"].sort(key=lambda n: int(n.split(".")[0]))
    return facts


def copy_tree(src: Path, dst: Path) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=False)


def remove_stray_outputs(root: Path) -> None:
    for p in sorted(root.rglob("_temporary"), reverse=True):
        if p.is_dir():
            shutil.rmtree(p)


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def run_sparklab(version: str, jobs: list[dict], label: str, env: dict[str, str] | None = None) -> list[dict]:
    """Run the jobs in ONE sparklab process of the given Spark version (``env`` added to its environment)."""
    python = spark_envs.ensure_spark_python(version)
    work = SCRATCH / "jobs"
    work.mkdir(parents=True, exist_ok=True)
    jobs_path = work / f"{label}-{version}.jobs.json"
    results_path = work / f"{label}-{version}.results.json"
    log_path = work / f"{label}-{version}.log"
    write_json(jobs_path, jobs)
    if results_path.exists():
        results_path.unlink()
    log(f"== sparklab {version}: {len(jobs)} jobs ({label}); log: {log_path}")
    cmd = [str(python), str(SPARKLAB), str(jobs_path), str(results_path)]
    lock = os.environ.get(SPARK_LOCK_ENV)
    if lock:
        # one JVM at a time on a shared machine: every sparklab process takes the lock file
        cmd = ["flock", lock, *cmd]
    with open(log_path, "w", encoding="utf-8") as log_fh:
        proc = subprocess.run(
            cmd, stdout=log_fh, stderr=subprocess.STDOUT, cwd=str(REPO), env={**os.environ, **(env or {})}
        )
    results = load_json(results_path) if results_path.exists() else []
    if proc.returncode != 0 or len(results) != len(jobs):
        raise RuntimeError(
            f"sparklab {version} ({label}) exited {proc.returncode} after "
            f"{len(results)}/{len(jobs)} jobs; see {log_path}"
        )
    return results


def input_mtime(name: str) -> int:
    m = re.search(r"(\d+)", name)
    return INPUT_MTIME_BASE + (int(m.group(1)) if m else 0)


def write_input_file(directory: Path, i: int) -> None:
    path = directory / f"f{i:02d}.json"
    path.write_text(json.dumps({"id": i, "text": f"row {i}"}) + "\n", encoding="utf-8")
    os.utime(path, (input_mtime(path.name), input_mtime(path.name)))


def restore_input(src: Path, dst: Path) -> None:
    """Put a fixture's input files back at the path the file source recorded."""
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    for f in sorted(src.iterdir()):
        if f.is_file():
            shutil.copyfile(f, dst / f.name)
            os.utime(dst / f.name, (input_mtime(f.name), input_mtime(f.name)))


# ------------------------------------------------------------------------------------------
# stage 1: base
# ------------------------------------------------------------------------------------------


def _base_versions(name: str) -> list[str]:
    return list(BASES[name].get("versions", VERSIONS))


#: Restart policy (fixtures/README.md): a base is restarted on every line of VERSIONS in the mode it
#: was written in, and async or continuous bases in micro-batch too (switching the mode off is what
#: operators do); a damaged scenario on its own line ("default" also adds the other CI line for a
#: scenario written by a CI line). Targets: "default", "own", "all", or one version; "lines" keeps a
#: declaration only for scenarios written by those versions.
def _base_restarts(mode: str) -> list[dict]:
    decls = [{"spark": "all", "mode": mode}]
    if mode != "micro-batch":
        decls.append({"spark": "all", "mode": "micro-batch"})
    return decls


def _restart_targets(target: str, own: str) -> list[str]:
    if target == "all":
        return list(VERSIONS)
    if target == "own":
        return [own] if own in VERSIONS else []
    if target == "default":
        if own in CI_VERSIONS:
            return [own, *(v for v in CI_VERSIONS if v != own)]
        return [own] if own in VERSIONS else []
    return [target]


#: Restart settings a declaration may add (restart_job): the job's own trigger, a copy of the input
#: at another path, the (moved) output read after the restart.
RESTART_SETTINGS = ("trigger", "input_copy", "read_sink_suffix")


def _restart_specs(declared: list[dict] | None, own: str, mode: str, query: str, confs: dict) -> list[dict]:
    """Expand restart declarations into concrete {spark, mode, query, confs} entries."""
    out = []
    for decl in declared if declared is not None else [{"spark": "default"}]:
        if "lines" in decl and own not in decl["lines"]:
            continue
        for spark in _restart_targets(decl.get("spark", "default"), own):
            merged = dict(confs)
            merged.update(decl.get("confs") or {})
            spec = {
                "spark": spark,
                "mode": decl.get("mode", mode),
                "query": decl.get("query", query),
                "confs": merged,
                "fingerprint": None,
                "result": None,
            }
            # A job's own trigger ("job"), a copy of the input beside it, the output read afterwards
            # (restart_job): only when declared.
            spec.update({k: decl[k] for k in RESTART_SETTINGS if k in decl})
            out.append(spec)
    return out


def _base_jobs(version: str, name: str, attempt: int) -> tuple[list[dict], Path]:
    spec = BASES[name]
    root = SCRATCH / "base" / f"spark-{version}" / (name if attempt == 0 else f"{name}.try{attempt}")
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    q = spec["query"]
    job = {
        "op": "run",
        "query": q["name"],
        "query_args": q["args"],
        "checkpoint": str(root / "checkpoint"),
        "sink": None,
        "input": None,
        "mode": q["mode"],
        "trigger": spec["trigger"],
        "batches": spec.get("batches", 1),
        "timeout_s": RUN_TIMEOUT_S,
        "confs": spec["confs"],
        "options": spec["options"],
    }
    for key in ("trigger_interval", "async_interval_ms", "stop_when_aligned"):
        if key in spec:
            job[key] = spec[key]
    if q["sink"] == "file":
        job["sink"] = str(root / "sink")
    if "input_files" in spec:
        inp = SCRATCH / "input" / f"spark-{version}" / name
        if inp.exists():
            shutil.rmtree(inp)
        inp.mkdir(parents=True)
        for i in range(spec["input_files"]):
            write_input_file(inp, i)
        job["input"] = str(inp)
    jobs = [dict(job, id=f"base/{version}/{name}/try{attempt}/run{r}") for r in range(spec["runs"])]
    return jobs, root


def _validate_base(name: str, root: Path) -> list[str]:
    """Problems with the shape of a freshly written base (empty list = fine)."""
    spec = BASES[name]
    cp = root / "checkpoint"
    offsets, commits = batch_ids(cp / "offsets"), batch_ids(cp / "commits")
    problems = []
    shape = spec.get("shape")
    if shape:
        if offsets != shape["offsets"]:
            problems.append(f"offsets {offsets} != {shape['offsets']}")
        if commits != shape["commits"]:
            problems.append(f"commits {commits} != {shape['commits']}")
    if name == "async":
        if not offsets or not commits or offsets[-1] != commits[-1]:
            problems.append(f"async logs not aligned: offsets {offsets} commits {commits}")
        if len(offsets) < 3 or offsets == list(range(offsets[0], offsets[-1] + 1)):
            problems.append(f"async offsets not sparse: {offsets}")
    if name == "continuous" and len(commits) < 3:
        problems.append(f"continuous: only {len(commits)} epochs committed")
    if name == "file_to_file" and not (root / "sink" / "_spark_metadata" / "9.compact").is_file():
        problems.append("file sink has no _spark_metadata/9.compact")
    if name == "rocksdb" and offsets:
        # without changelog checkpointing every state version is a snapshot zip
        missing = [
            p.name
            for p in sorted((cp / "state" / "0").glob("[0-9]*"))
            if not (p / f"{offsets[-1] + 1}.zip").is_file()
        ]
        if missing or not (cp / "state" / "0").is_dir():
            problems.append(f"rocksdb: no {offsets[-1] + 1}.zip in partitions {missing}")
    if name == "rate_source":
        if not (cp / "sources" / "0" / "0").is_file():
            problems.append("rate source wrote no sources/0/0")
        if not offsets or not commits or offsets[-1] != commits[-1]:
            problems.append(f"rate_source logs not aligned: offsets {offsets} commits {commits}")
    if name == "rocksdb_changelog" and not _newest_zip_ssts(cp / "state" / "0"):
        problems.append("no snapshot zip that names an SST file")
    return problems


def stage_base(versions: list[str], names: list[str] | None) -> None:
    for version in versions:
        selected = [n for n in BASES if version in _base_versions(n) and (not names or n in names)]
        if not selected:
            continue
        pending = dict.fromkeys(selected, 0)
        chosen: dict[str, tuple[Path, list[dict], list[str]]] = {}
        while pending:
            jobs, roots = [], {}
            for name, attempt in pending.items():
                j, root = _base_jobs(version, name, attempt)
                jobs += j
                roots[name] = (root, len(jobs) - len(j), len(j))
            results = run_sparklab(version, jobs, "base")
            nxt = {}
            for name, attempt in pending.items():
                root, start, count = roots[name]
                res = results[start : start + count]
                problems = _validate_base(name, root)
                problems += [
                    f"{r['id']}: {r['error']['message'].splitlines()[0]}" for r in res if r.get("error")
                ]
                if problems and attempt + 1 < BASES[name].get("attempts", 1):
                    log(f"   base {version}/{name} attempt {attempt}: {problems}; retrying")
                    nxt[name] = attempt + 1
                else:
                    if problems:
                        log(f"   WARNING base {version}/{name}: {problems}")
                    chosen[name] = (root, res, problems)
            pending = nxt
        for name in selected:
            root, res, problems = chosen[name]
            _install_base(version, name, root, res, problems)


def _install_base(version: str, name: str, root: Path, results: list[dict], problems: list[str]) -> None:
    spec = BASES[name]
    dest = FIXTURES / f"spark-{version}" / name
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    remove_stray_outputs(root)
    copy_tree(root / "checkpoint", dest / "checkpoint")
    if (root / "sink").is_dir():
        copy_tree(root / "sink", dest / "sink")
    written_with: dict[str, Any] = {
        "trigger": spec["trigger"],
        "confs": results[0].get("confs", spec["confs"]) if results else spec["confs"],
        "options": spec["options"],
        "runs": spec["runs"],
    }
    for key in ("trigger_interval", "async_interval_ms", "batches"):
        if key in spec:
            written_with[key] = spec[key]
    if "input_files" in spec:
        inp = SCRATCH / "input" / f"spark-{version}" / name
        for i in range(spec["input_files"], spec["input_files"] + spec.get("extra_input_files", 0)):
            write_input_file(inp, i)
        copy_tree(inp, dest / "input")
        written_with["input_path"] = str(inp)
        written_with["input_files_read"] = spec["input_files"]
    written_with["batches_run"] = [b["batchId"] for r in results for b in r.get("batches", [])]
    facts = compute_facts(dest, spec["query"])
    scenario = {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "spark_version": version,
        "kind": "base",
        "base": None,
        "description": spec["description"],
        "query": spec["query"],
        "written_with": written_with,
        "damage": [],
        "expect_codes": _for_version(spec["expect_codes"], version),
        "expect_more": [
            {"args": m["args"], "codes": _for_version(m["codes"], version)} for m in spec["expect_more"]
        ],
        "facts": facts,
        "fingerprint": fingerprint(dest),
        "restarts": _restart_specs(
            _base_restarts(spec["query"]["mode"]),
            version,
            spec["query"]["mode"],
            spec["query"]["name"],
            spec["confs"],
        ),
    }
    if problems:
        scenario["generation_problems"] = problems
    write_json(dest / "scenario.json", scenario)
    log(f"   base {version}/{name}: offsets {facts['offsets']} commits {facts['commits']}")


# ------------------------------------------------------------------------------------------
# stage 2: damage
# ------------------------------------------------------------------------------------------

_TEMPLATE = re.compile(r"\{([LKP])([+-]\d+)?\}")


def _resolve(value: Any, env: dict[str, int]) -> Any:
    if isinstance(value, str):
        return _TEMPLATE.sub(lambda m: str(env[m.group(1)] + int(m.group(2) or 0)), value)
    if isinstance(value, list):
        return [_resolve(v, env) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, env) for k, v in value.items()}
    return value


def _template_env(facts: dict) -> dict[str, int]:
    offsets, commits = facts["offsets"], facts["commits"]
    latest = offsets[-1] if offsets else -1
    return {
        "L": latest,
        "K": commits[-1] if commits else -1,
        "P": max((o for o in offsets if o < latest), default=-1),
    }


def _write_with_crc(path: Path, data: bytes, crc: str, existed_crc: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    cpath = crc_path(path)
    if crc == "drop":
        if cpath.exists():
            cpath.unlink()
    elif crc == "create" or (crc == "rewrite" and existed_crc):
        cpath.write_bytes(hadoop_crc(data))


def _newest_zip_ssts(operator_dir: Path) -> list[tuple[str, str]]:
    """[(partition dir name, SST file name)] named by the newest zip of each partition."""
    out = []
    if not operator_dir.is_dir():
        return out
    for part in sorted(
        (p for p in operator_dir.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name)
    ):
        zips = [z for z in part.iterdir() if z.is_file() and re.fullmatch(r"\d+(_[\w-]+)?\.zip", z.name)]
        if not zips:
            continue
        newest = max(zips, key=lambda z: (int(re.match(r"\d+", z.name).group(0)), z.name))
        with zipfile.ZipFile(newest) as zf:
            text = zf.read("metadata").decode("utf-8")
        meta = json.loads(text.split("\n", 1)[1])
        for sst in sorted(f["dfsSstFileName"] for f in meta.get("sstFiles", [])):
            out.append((part.name, sst))
    return out


def _rocksdb_file(operator_dir: Path, kind: str, version: int) -> str:
    """``<partition>/<file>`` of the RocksDB file a load of ``version`` reads first, in the first
    partition that has one: ``zip``: the newest ``<v>.zip`` with v <= version (RocksDB.load picks
    the latest snapshot at or below the version); ``changelog``: the newest ``<v>.changelog`` with
    v <= version and no ``<v>.zip`` (replayed by the load when no zip at or above v is at or below
    the version; where the maintenance thread uploaded a zip of the version itself, it is not read)."""
    parts = sorted(
        (p for p in operator_dir.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name)
    )
    for part in parts:
        names = {f.name for f in part.iterdir() if f.is_file()}
        if kind == "zip":
            zips = [int(n[:-4]) for n in names if re.fullmatch(r"\d+\.zip", n) and int(n[:-4]) <= version]
            if zips:
                return f"{part.name}/{max(zips)}.zip"
        else:
            logs = [int(n.split(".")[0]) for n in names if re.fullmatch(r"\d+\.changelog", n)]
            logs = [v for v in logs if v <= version and f"{v}.zip" not in names]
            if logs:
                return f"{part.name}/{max(logs)}.changelog"
    raise RuntimeError(f"no RocksDB {kind} for version {version} under {operator_dir}")


def _deep_set(obj: dict, updates: dict) -> None:
    for key, value in updates.items():
        if isinstance(value, dict) and isinstance(obj.get(key), dict):
            _deep_set(obj[key], value)
        else:
            obj[key] = value


def _op_delete(scen: Path, root: Path, op: dict) -> list[dict]:
    path = root / op["path"]
    if path.is_dir():
        shutil.rmtree(path)
    elif path.is_file():
        path.unlink()
        if not op.get("keep_crc") and crc_path(path).exists():
            crc_path(path).unlink()
    else:
        raise FileNotFoundError(f"delete: {path} does not exist")
    return [op]


def _op_truncate(scen: Path, root: Path, op: dict) -> list[dict]:
    path = root / op["path"]
    data = path.read_bytes()
    data = data[: op["bytes"]] if "bytes" in op else data[: int(len(data) * op["fraction"])]
    _write_with_crc(path, data, op.get("crc", "rewrite"), crc_path(path).exists())
    return [op]


def _op_write(scen: Path, root: Path, op: dict) -> list[dict]:
    path = root / op["path"]
    data = bytes.fromhex(op["hex"]) if "hex" in op else op["text"].encode("utf-8")
    _write_with_crc(path, data, op.get("crc", "rewrite"), crc_path(path).exists())
    return [op]


def _op_edit_line(scen: Path, root: Path, op: dict) -> list[dict]:
    path = root / op["path"]
    lines = path.read_bytes().decode("utf-8").split("\n")
    idx = op["line"] - 1
    if op["op"] == "replace_line":
        lines[idx] = op["text"]
    else:
        obj = json.loads(lines[idx])
        for key in op.get("drop_keys", []):
            obj.pop(key, None)
        _deep_set(obj, op.get("set", {}))
        lines[idx] = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    _write_with_crc(path, "\n".join(lines).encode("utf-8"), op.get("crc", "rewrite"), crc_path(path).exists())
    return [op]


def _op_copy(scen: Path, root: Path, op: dict) -> list[dict]:
    src, dst = root / op["src"], root / op["path"]
    crc = op.get("crc", "create" if crc_path(src).exists() else "none")
    _write_with_crc(dst, src.read_bytes(), crc, False)
    return [op]


def _op_delete_glob(scen: Path, root: Path, op: dict) -> list[dict]:
    matches = sorted(p for p in root.glob(op["pattern"]) if p.is_file())
    if not matches:
        raise FileNotFoundError(f"delete_glob: nothing matches {op['pattern']}")
    out = []
    for m in matches:
        out += apply_op(scen, {"op": "delete", "path": str(m.relative_to(root)), "resolved_from": op})
    return out


def _op_copy_dir(scen: Path, root: Path, op: dict) -> list[dict]:
    shutil.copytree(root / op["src"], root / op["path"])
    return [op]


def _op_mkdir(scen: Path, root: Path, op: dict) -> list[dict]:
    (root / op["path"]).mkdir(parents=True, exist_ok=True)
    return [op]


def _op_keep_only(scen: Path, root: Path, op: dict) -> list[dict]:
    keep = set()
    for rel in op["paths"]:
        keep.add((root / rel).resolve())
        keep.add(crc_path(root / rel).resolve())
    for p in sorted(root.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if p.is_file() and p.resolve() not in keep:
            p.unlink()
        elif p.is_dir() and not any(p.iterdir()):
            p.rmdir()
    # the sink (if any) goes too: a fresh checkpoint has no sink output
    sink = scen / "sink"
    if sink.is_dir() and root != sink:
        shutil.rmtree(sink)
    return [op]


def _op_rocksdb_file(scen: Path, root: Path, op: dict) -> list[dict]:
    rel = _rocksdb_file(root / op["operator_dir"], op["kind"], int(op["version"]))
    return apply_op(scen, dict(op["then"], path=f"{op['operator_dir']}/{rel}", resolved_from=op))


def _op_delete_rocksdb_sst(scen: Path, root: Path, op: dict) -> list[dict]:
    found = _newest_zip_ssts(root / op["operator_dir"])
    if not found:
        raise RuntimeError(f"no SST named by a zip under {op['operator_dir']}")
    part, sst = found[0]
    pdir = f"{op['operator_dir']}/{part}"
    out = apply_op(scen, {"op": "delete", "path": f"{pdir}/SSTs/{sst}", "resolved_from": op})
    for name in op.get("also_delete", []):
        out += apply_op(scen, {"op": "delete", "path": f"{pdir}/{name}", "resolved_from": op})
    return out


DAMAGE_OPS = {
    "delete": _op_delete,
    "truncate": _op_truncate,
    "write": _op_write,
    "replace_line": _op_edit_line,
    "edit_json_line": _op_edit_line,
    "copy": _op_copy,
    "delete_glob": _op_delete_glob,
    "copy_dir": _op_copy_dir,
    "mkdir": _op_mkdir,
    "keep_only": _op_keep_only,
    "rocksdb_file": _op_rocksdb_file,
    "delete_rocksdb_sst": _op_delete_rocksdb_sst,
}


def apply_op(scen: Path, op: dict) -> list[dict]:
    """Apply one damage operation; returns the concrete operations recorded in scenario.json."""
    handler = DAMAGE_OPS.get(op["op"])
    if handler is None:
        raise ValueError(f"unknown damage op {op['op']!r}")
    return handler(scen, scen / op.get("in", "checkpoint"), op)


def _scenario_versions(spec: dict) -> list[str]:
    """Lines a damaged scenario is derived on: its base's lines that restart (never WRITERS)."""
    return [v for v in spec.get("versions", _base_versions(spec["base"])) if v in VERSIONS]


def _merge_restarts(new: list[dict], old: list[dict] | None, fp: str) -> list[dict]:
    """Keep a recorded result when the same restart was recorded against the same bytes."""
    old = old or []
    out = []
    for entry in new:
        key = (entry["spark"], entry["mode"], entry["query"], json.dumps(entry["confs"], sort_keys=True))
        for prev in old:
            pkey = (prev["spark"], prev["mode"], prev["query"], json.dumps(prev["confs"], sort_keys=True))
            if pkey == key and prev.get("fingerprint") == fp and prev.get("result") is not None:
                # The declaration's restart settings win (a result recorded without one is re-run
                # with --force).
                entry = {**prev, **{k: entry[k] for k in RESTART_SETTINGS if k in entry}}
                break
        out.append(entry)
    return out


def _refresh_bases(vdir: Path, names: list[str] | None) -> None:
    """Bases are only rewritten by the base stage (real Spark); their expectations and restart
    declarations are refreshed here (results recorded for the same bytes are kept)."""
    for name, spec in BASES.items():
        sfile = vdir / name / "scenario.json"
        if (names and name not in names) or not sfile.is_file():
            continue
        scen = load_json(sfile)
        version = scen["spark_version"]
        codes = _for_version(spec["expect_codes"], version)
        more = [{"args": m["args"], "codes": _for_version(m["codes"], version)} for m in spec["expect_more"]]
        mode = spec["query"]["mode"]
        restarts = _merge_restarts(
            _restart_specs(_base_restarts(mode), version, mode, spec["query"]["name"], spec["confs"]),
            scen.get("restarts"),
            scen["fingerprint"],
        )
        if (scen.get("expect_codes"), scen.get("expect_more"), scen.get("restarts")) != (
            codes,
            more,
            restarts,
        ):
            scen["expect_codes"], scen["expect_more"], scen["restarts"] = codes, more, restarts
            write_json(sfile, scen)


def stage_damage(versions: list[str], names: list[str] | None) -> None:
    for version in versions:
        vdir = FIXTURES / f"spark-{version}"
        _refresh_bases(vdir, names)
        declared = {b for b in BASES if version in _base_versions(b)}
        for spec in SCENARIOS:
            if version not in _scenario_versions(spec):
                continue
            declared.add(spec["name"])
            if names and spec["name"] not in names:
                continue
            base_dir = vdir / spec["base"]
            if not (base_dir / "scenario.json").is_file():
                log(f"   SKIP {version}/{spec['name']}: base {spec['base']} missing (run --stage base)")
                continue
            _build_scenario(version, spec, base_dir, vdir / spec["name"])
        if not names and vdir.is_dir():
            for d in sorted(vdir.iterdir()):
                if d.is_dir() and d.name not in declared and (d / "scenario.json").is_file():
                    log(f"   removing stale scenario {version}/{d.name}")
                    shutil.rmtree(d)


def _build_scenario(version: str, spec: dict, base_dir: Path, dest: Path) -> None:
    base = load_json(base_dir / "scenario.json")
    old = load_json(dest / "scenario.json") if (dest / "scenario.json").is_file() else None
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for sub in ("checkpoint", "sink", "input"):
        if (base_dir / sub).is_dir():
            copy_tree(base_dir / sub, dest / sub)
    env = _template_env(base["facts"])
    applied: list[dict] = []
    for op in spec["damage"]:
        applied += apply_op(dest, _resolve(op, env))
    facts = compute_facts(dest, base["query"], base["facts"])
    fp = fingerprint(dest)
    restarts = _restart_specs(
        _resolve(spec.get("restarts"), env),
        version,
        base["query"]["mode"],
        spec.get("restart_query", base["query"]["name"]),
        BASES[spec["base"]]["confs"],
    )
    scenario = {
        "schema_version": SCHEMA_VERSION,
        "name": spec["name"],
        "spark_version": version,
        "kind": "damaged",
        "base": spec["base"],
        "description": _resolve(spec["description"], env),
        "query": base["query"],
        "written_with": base["written_with"],
        "damage": applied,
        "expect_codes": _for_version(spec["expect_codes"], version),
        "expect_more": [
            {"args": m["args"], "codes": _for_version(m["codes"], version)} for m in spec["expect_more"]
        ],
        "facts": facts,
        "fingerprint": fp,
        "restarts": _merge_restarts(restarts, old.get("restarts") if old else None, fp),
    }
    write_json(dest / "scenario.json", scenario)
    kept = sum(1 for r in scenario["restarts"] if r.get("result") is not None)
    log(
        f"   scenario {version}/{spec['name']}: offsets {facts['offsets']} commits {facts['commits']}"
        f" ({kept}/{len(scenario['restarts'])} restart results kept)"
    )


# ------------------------------------------------------------------------------------------
# stage 3: oracle
# ------------------------------------------------------------------------------------------


def restart_job(
    scen_dir: Path,
    scen: dict,
    idx: int,
    entry: dict,
    tmp: Path,
    restored_inputs: set[str] | None = None,
    checkpoint: Path | None = None,
) -> dict:
    """Return the sparklab job that restarts a copy of a scenario as the oracle does.

    Copies the scenario's checkpoint (or uses ``checkpoint``, already prepared) and sink to
    ``tmp``, recreates empty dirs, restores file-source input at its recorded path. Tests use
    this too, so a re-run restarts exactly like the recorded one.
    """
    if checkpoint is None:
        copy_tree(scen_dir / "checkpoint", tmp / "checkpoint")
        for rel in scen["facts"].get("empty_dirs", []):
            (tmp / rel).mkdir(parents=True, exist_ok=True)
        checkpoint = tmp / "checkpoint"
    sink = None
    if scen["query"]["sink"] == "file":
        sink = checkpoint.parent / "sink"
        if not sink.exists() and (scen_dir / "sink").is_dir():
            copy_tree(scen_dir / "sink", sink)
    inp = scen["written_with"].get("input_path")
    if inp and (restored_inputs is None or inp not in restored_inputs):
        restore_input(scen_dir / "input", Path(inp))
        if restored_inputs is not None:
            restored_inputs.add(inp)
    if inp and entry.get("input_copy"):
        # The same input files (names, times) at another path: a job that moved its source.
        restore_input(scen_dir / "input", Path(inp + entry["input_copy"]))
    mode = entry["mode"]
    job = {
        "id": f"{scen['spark_version']}/{scen['name']}#{idx}",
        "op": "restart",
        "query": entry["query"],
        "query_args": scen["query"]["args"],
        "checkpoint": str(checkpoint),
        "sink": str(sink) if sink else None,
        "input": inp,
        "mode": mode,
        "trigger": entry.get("trigger") or DEFAULT_TRIGGER[mode],
        "async_interval_ms": 1000,
        "batches": 1,
        "timeout_s": RESTART_TIMEOUT_S,
        "confs": entry["confs"],
        "options": {},
    }
    if mode in DEFAULT_TRIGGER_INTERVAL:
        job["trigger_interval"] = DEFAULT_TRIGGER_INTERVAL[mode]
    if sink and entry.get("read_sink_suffix"):
        # What a consumer of the job's (moved) output meets after the restart.
        job["read_after"] = str(sink) + entry["read_sink_suffix"]
    return job


#: Restarts per sparklab process: a crashed JVM loses at most one chunk, and results are written
#: to the scenario files after every chunk (a long oracle run can be stopped and resumed).
ORACLE_CHUNK = 40


def _needs_restart(entry: dict, fp: str, force: bool) -> bool:
    result = entry.get("result")
    # A timeout is not an outcome: such a restart is always run again.
    return force or result is None or entry.get("fingerprint") != fp or bool(result.get("timed_out"))


def _oracle_work(versions: list[str], names: list[str] | None, force: bool) -> dict[str, list]:
    work: dict[str, list[tuple[Path, int, dict]]] = {v: [] for v in versions}
    for vdir in sorted(FIXTURES.glob("spark-*")):
        for sfile in sorted(vdir.glob("*/scenario.json")):
            scen = load_json(sfile)
            if names and scen["name"] not in names:
                continue
            fp = fingerprint(sfile.parent)
            if fp != scen["fingerprint"]:
                raise RuntimeError(
                    f"{sfile.parent}: bytes changed since generation "
                    f"(fingerprint mismatch); re-run --stage damage"
                )
            for idx, entry in enumerate(scen["restarts"]):
                if entry["spark"] in work and _needs_restart(entry, fp, force):
                    work[entry["spark"]].append((sfile, idx, entry))
    return work


def _oracle_chunk(version: str, items: list, label: str, timeout_s: int) -> None:
    oracle_root = SCRATCH / "oracle" / f"spark-{version}"
    if oracle_root.exists():
        shutil.rmtree(oracle_root)
    jobs = []
    restored_inputs: set[str] = set()
    for n, (sfile, idx, entry) in enumerate(items):
        scen = load_json(sfile)
        tmp = oracle_root / f"{n:03d}-{scen['spark_version']}-{scen['name']}"
        job = restart_job(sfile.parent, scen, idx, entry, tmp, restored_inputs)
        job["timeout_s"] = timeout_s
        jobs.append(job)
    results = run_sparklab(version, jobs, label)
    for (sfile, idx, _entry), result in zip(items, results, strict=True):
        scen = load_json(sfile)
        rec = scen["restarts"][idx]
        rec["fingerprint"] = scen["fingerprint"]
        rec["result"] = result
        write_json(sfile, scen)
        err = result.get("error")
        log(
            f"   {result['id']} on {version}: started={result['started']} "
            f"batches={[b['batchId'] for b in result['batches']]} timed_out={result['timed_out']} "
            f"error={(err['message'].splitlines() or [''])[0][:140] if err else None}"
        )
    shutil.rmtree(oracle_root, ignore_errors=True)


#: Where the job probe's file jobs read and write (fixtures/jobs/changes.py reads them from the
#: environment, as sparklab gives a restart its copies): Spark's file source wants its directory to
#: exist. Tests put the restart's paths in their place (tests/scenarios.py: PROBE_PATHS).
PROBE_ROOT = SCRATCH / "jobs" / "probe"
PROBE_PATH_ENV = {"CHECKPOINT_DOCTOR_JOB_INPUT": "input", "CHECKPOINT_DOCTOR_JOB_SINK": "sink"}


def _probe_paths() -> dict[str, str]:
    for name in ("input", "input-moved"):
        (PROBE_ROOT / name).mkdir(parents=True, exist_ok=True)
    return {env: str(PROBE_ROOT / name) for env, name in PROBE_PATH_ENV.items()}


def stage_jobs(versions: list[str]) -> None:
    """Record what each line's Spark says the JOB_CHANGES jobs would run (``diagnose --job``'s
    runner, checkpoint_doctor.execution.job_probe, one process per line) in
    fixtures/jobs/facts-<version>.json: the fast tests replay them against the recorded restarts."""
    import kafka_fixtures  # the Kafka connector's jars (Maven), for the Kafka jobs
    import kafka_job_fixtures

    specs = sorted(
        {f"{JOBS_FILE}:{function}" for _, function, _ in JOB_CHANGES.values()}
        | set(kafka_job_fixtures.job_specs())
    )
    for version in versions:
        if version not in VERSIONS:
            continue
        python = spark_envs.ensure_spark_python(version)
        cmd = [str(python), "-m", "checkpoint_doctor.execution.job_probe", *specs]
        lock = os.environ.get(SPARK_LOCK_ENV)
        if lock:
            cmd = ["flock", lock, *cmd]
        paths = _probe_paths()
        jars = kafka_fixtures._spark_env(version)[kafka_fixtures.SPARK_JARS_ENV]
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            **paths,
            # The Kafka jobs' source needs the connector on the probe's classpath, as on a job's own.
            "PYSPARK_SUBMIT_ARGS": f"--jars {jars} pyspark-shell",
        }
        t0 = time.monotonic()
        done = subprocess.run(cmd, cwd=str(REPO), env=env, capture_output=True, text=True, check=False)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("[")]
        if done.returncode != 0 or not lines:
            raise RuntimeError(f"job probe {version} exited {done.returncode}: {done.stderr[-2000:]}")
        entries = json.loads(lines[-1])
        bad = [e for e in entries if "error" in e]
        if bad:
            raise RuntimeError(f"job probe {version}: {bad}")
        for entry in entries:
            # The paths the file jobs were given: tests put the restart's own in their place.
            entry["probe_paths"] = {name: paths[env] for env, name in PROBE_PATH_ENV.items()}
        write_json(FIXTURES / "jobs" / f"facts-{version}.json", entries)
        log(f"   job facts {version}: {len(entries)} jobs in {time.monotonic() - t0:.1f} s")


def stage_oracle(versions: list[str], names: list[str] | None, force: bool) -> None:
    """Restart what has no result for the current bytes; then once more, with a doubled
    timeout, whatever timed out (a loaded machine slows a restart down; it is not an outcome)."""
    versions = [v for v in versions if v in VERSIONS]
    for attempt, timeout_s in enumerate((RESTART_TIMEOUT_S, 2 * RESTART_TIMEOUT_S)):
        work = _oracle_work(versions, names, force and attempt == 0)
        for version, items in work.items():
            for start in range(0, len(items), ORACLE_CHUNK):
                chunk = items[start : start + ORACLE_CHUNK]
                _oracle_chunk(version, chunk, f"oracle{start // ORACLE_CHUNK}", timeout_s)
    left = _oracle_work(versions, names, False)
    for version, items in left.items():
        for sfile, idx, _entry in items:
            log(f"   STILL TIMED OUT: {version} {sfile.parent.parent.name}/{sfile.parent.name}#{idx}")


# ------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--stage",
        choices=(
            "base",
            "damage",
            "oracle",
            "kafka",
            "delta",
            "jobs",
            "kafka-jobs",
            "kafka-sources",
            "kafka-shapes",
            "all",
        ),
        default="all",
    )
    parser.add_argument(
        "--spark",
        action="append",
        choices=ALL_VERSIONS,
        help="restrict to this Spark version (repeatable; oracle: the restarting line)",
    )
    parser.add_argument(
        "--scenario", action="append", help="restrict to this base or scenario name (repeatable)"
    )
    parser.add_argument(
        "--force", action="store_true", help="oracle: re-run restarts that already have a result"
    )
    args = parser.parse_args(argv)
    versions = [v for v in ALL_VERSIONS if not args.spark or v in args.spark]
    stages = ("base", "damage", "oracle", "kafka") if args.stage == "all" else (args.stage,)
    timings = {}
    for stage in stages:
        t0 = time.monotonic()
        log(f"=== stage {stage} ({', '.join(versions)})")
        if stage == "base":
            stage_base(versions, args.scenario)
        elif stage == "damage":
            stage_damage(versions, args.scenario)
        elif stage == "jobs":
            stage_jobs(versions)
        elif stage == "kafka-jobs":
            import kafka_job_fixtures  # a broker and the connector, as the kafka stage

            kafka_job_fixtures.stage_kafka_jobs(versions)
        elif stage == "kafka-sources":
            import kafka_sources_fixtures  # two Kafka sources in one query, as the kafka stage

            for version in versions:
                kafka_sources_fixtures.write_line(version)
        elif stage == "kafka-shapes":
            import kafka_shapes_fixtures  # subscribe, subscribePattern and assign, as the kafka stage

            for version in versions:
                kafka_shapes_fixtures.write_line(version)
        elif stage == "kafka":
            import kafka_fixtures  # needs confluent-kafka and Maven: only this stage

            kafka_fixtures.stage_kafka(versions, args.scenario)
        elif stage == "delta":
            import delta_fixtures  # needs Maven for delta-spark: only this stage

            delta_fixtures.stage_delta(versions, args.scenario)
        else:
            stage_oracle(versions, args.scenario, args.force)
        timings[stage] = round(time.monotonic() - t0, 1)
        log(f"=== stage {stage} done in {timings[stage]} s")
    log("timings: " + ", ".join(f"{k} {v} s" for k, v in timings.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
