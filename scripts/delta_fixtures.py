"""Delta fixtures: checkpoints and Delta tables written by real Spark + delta-spark, damaged in the world.

Used by ``scripts/generate_fixtures.py --stage delta`` (stdlib in the calling python; Spark runs in
sparklab with delta-spark from ``scripts/jars.py delta``). Layout:
``fixtures/delta/spark-<v>/<name>/{checkpoint, source, sink, scenario.json}``: ``source`` is the Delta
table a Delta-source query reads, ``sink`` the table a Delta-sink query writes. The tables are real
and small (a few rows each); a damaged scenario is its base's checkpoint and tables with the damage
done to the tables (or the checkpoint lost / rolled back) by Spark SQL or by removing files as Delta's
log cleanup does (``MetadataCleanup``).

Each scenario is restarted on its own line in ONE sparklab process per line; what Spark did is
recorded under ``restarts``, with each table's version, rows and rows per rate batch after the
restart (``tables``), so what the Delta sink skipped or wrote twice SILENTLY is on record.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import generate_fixtures as gf
import jars

DELTA_FIXTURES = gf.FIXTURES / "delta"
SPARK_JARS_ENV = "CHECKPOINT_DOCTOR_SPARK_JARS"
SESSION_CONFS_ENV = "CHECKPOINT_DOCTOR_SPARK_SESSION_CONFS"
#: What every Delta session needs (Delta's quickstart): the SQL extension and the catalog.
DELTA_SESSION_CONFS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
#: A Delta checkpoint every 2 commits (default 10), so a few commits give a checkpoint Parquet file
#: that log cleanup can leave as the earliest state (Delta's MetadataCleanup keeps a checkpoint).
CHECKPOINT_INTERVAL = 2
#: A restart's wait for its batch: longer than the other stages' (gf.RESTART_TIMEOUT_S), since the first
#: Delta query of a JVM loads delta-spark's classes and, on a loaded 2-core machine, took more than 45 s
#: (the 3.5.9 delta-sink-rolled-back restart timed out with no batch at 45 s).
RESTART_TIMEOUT_S = 150


def _t(path: str) -> str:
    return "delta.`" + path.replace("`", "``") + "`"


def _create(path: str, properties: dict[str, str] | None = None) -> dict[str, str]:
    props = {"delta.checkpointInterval": str(CHECKPOINT_INTERVAL), **(properties or {})}
    listed = ", ".join(f"'{k}' = '{v}'" for k, v in props.items())
    return {
        "sql": f"CREATE TABLE {_t(path)} (id BIGINT, key INT, text STRING) USING delta TBLPROPERTIES ({listed})"
    }


def _insert(path: str, start: int, end: int) -> dict[str, str]:
    """One commit holding one file with ids [start, end)."""
    return {
        "sql": f"INSERT INTO {_t(path)} SELECT /*+ COALESCE(1) */ id, CAST(id % 3 AS INT) AS key, "
        f"concat('r', CAST(id AS STRING)) AS text FROM range({start}, {end})"
    }


def _log_files_below(table: str, version: int) -> list[str]:
    """Globs of every _delta_log file (commit, checksum, checkpoint, their .crc) of versions < version."""
    out = []
    for v in range(version):
        stem = f"{v:020d}"
        out += [f"{table}/_delta_log/{stem}.*", f"{table}/_delta_log/.{stem}.*"]
    return out


SOURCE_QUERIES = {
    "delta-source-stateless": {
        "description": "Delta table 'source' (id, key, text; checkpointInterval 2) -> select -> noop; "
        "table v0 create, v1 ids 0..4, v2 ids 5..9; run 0 (Trigger.Once) reads v1..v2, v3 ids 10..14, run 1 "
        "reads v3; then v4 ids 15..19 that no batch has read.",
        "query": gf._q("delta_stateless", sink="noop"),
    },
    "delta-source-count": {
        "description": "Delta table 'source' (as delta-source-stateless) -> groupBy(key).count, update, HDFS "
        "state -> noop; runs 0 and 1 as delta-source-stateless, state versions 1..2.",
        "query": gf._q("delta_count", stateful=True, sink="noop"),
    },
    "delta-source-cdf": {
        "description": "Delta table 'source' with delta.enableChangeDataFeed = true (otherwise as "
        "delta-source-stateless) read as its change data feed (readChangeFeed = true: a job option, not in "
        "the checkpoint) -> select -> noop; runs 0 and 1 as delta-source-stateless, v4 unread.",
        "query": gf._q("delta_stateless", sink="noop"),
        "table_properties": {"delta.enableChangeDataFeed": "true"},
        "source_options": {"readChangeFeed": "true"},
    },
}

#: The rows a MERGE brings: id 3 (in v1's file: that file is rewritten with the row updated) and ids
#: 30..32, inserted (numTargetRowsInserted 3).
_MERGE_SOURCE = (
    "SELECT id, CAST(id % 3 AS INT) AS key, concat('m', CAST(id AS STRING)) AS text "
    "FROM VALUES (3), (30), (31), (32) AS v(id)"
)


def _merge(path: str) -> dict[str, str]:
    return {
        "sql": f"MERGE INTO {_t(path)} t USING ({_MERGE_SOURCE}) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET t.text = s.text WHEN NOT MATCHED THEN INSERT *"
    }


SINK_QUERIES = {
    "delta-sink": {
        "description": "rate-micro-batch (5 rows a batch: batch b holds values 5b..5b+4) -> Delta table "
        "'sink', three Trigger.Once runs: batches 0..2, table versions 0..2, txn appId = query id, version 2.",
        "query": gf._q("rate_to_delta", sink="delta"),
        "runs": 3,
    },
}

#: Damage done to the source table after its base was written; ``{s}`` is the table's path. The
#: stateful base takes the damages the table id and log decide (``bases``): its state is not what
#: a data change in the source breaks, and the 2-core machine's Spark time is shared.
SOURCE_DAMAGE: dict[str, dict[str, Any]] = {
    "replaced": {
        "description": "source replaced in place with CREATE OR REPLACE TABLE ... AS SELECT (ids 100..102)",
        "steps": lambda s: [
            {
                "sql": f"CREATE OR REPLACE TABLE {_t(s)} USING delta "
                f"TBLPROPERTIES ('delta.checkpointInterval' = '{CHECKPOINT_INTERVAL}') AS SELECT /*+ COALESCE(1) */ "
                "id, CAST(id % 3 AS INT) AS key, concat('r', CAST(id AS STRING)) AS text FROM range(100, 103)"
            }
        ],
    },
    "recreated": {
        "bases": ("delta-source-stateless",),
        "description": "source directory deleted and a new table written at the same path (new table id): "
        "v0 create, v1 ids 100..102",
        "steps": lambda s: [{"remove": [s]}, _create(s), _insert(s, 100, 103)],
    },
    "log-cleaned": {
        "bases": ("delta-source-stateless", "delta-source-count", "delta-source-cdf"),
        "variants_for": {"delta-source-cdf": ({}, {"failOnDataLoss": "false"})},
        "description": "two more commits (v5 ids 20..24, v6 ids 25..29; checkpoint at v6), then every "
        "_delta_log file below v6 removed, as log cleanup (delta.logRetentionDuration) does: the earliest "
        "version left is 6, the checkpoint's next version is lower",
        "steps": lambda s: [_insert(s, 20, 25), _insert(s, 25, 30), {"remove": _log_files_below(s, 6)}],
    },
    "rows-deleted": {
        "bases": ("delta-source-stateless",),
        "description": "DELETE FROM source WHERE id < 5: the file of v1 removed (a delete the stream had read)",
        "steps": lambda s: [{"sql": f"DELETE FROM {_t(s)} WHERE id < 5"}],
        "variants": ({}, {"ignoreDeletes": "true"}, {"skipChangeCommits": "true"}),
    },
    "rows-updated": {
        "bases": ("delta-source-stateless",),
        "description": "UPDATE source SET text = 'changed' WHERE id = 1: the file of v1 rewritten",
        "steps": lambda s: [{"sql": f"UPDATE {_t(s)} SET text = 'changed' WHERE id = 1"}],
        "variants": ({}, {"skipChangeCommits": "true"}),
    },
    "row-deleted": {
        "bases": ("delta-source-stateless",),
        "description": "DELETE FROM source WHERE id = 1: one row of v1's file deleted, the file rewritten "
        "(a remove with an add: not a whole-file delete)",
        "steps": lambda s: [{"sql": f"DELETE FROM {_t(s)} WHERE id = 1"}],
        "variants": ({}, {"ignoreDeletes": "true"}, {"skipChangeCommits": "true"}, {"startingVersion": "0"}),
    },
    "merged": {
        "bases": ("delta-source-stateless", "delta-source-cdf"),
        "description": "MERGE INTO source of ids 3, 30, 31, 32: id 3 updated (v1's file rewritten), ids "
        "30..32 inserted, in one commit",
        "steps": lambda s: [_merge(s)],
        "variants": ({}, {"ignoreDeletes": "true"}, {"skipChangeCommits": "true"}),
        "variants_for": {"delta-source-cdf": ({}, {"skipChangeCommits": "true"})},
    },
    "cdf-disabled": {
        "bases": ("delta-source-cdf",),
        "description": "ALTER TABLE source SET TBLPROPERTIES (delta.enableChangeDataFeed = false) (v5), then "
        "ids 20..24 appended (v6): the change data of v5 on is not recorded",
        "steps": lambda s: [
            {"sql": f"ALTER TABLE {_t(s)} SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'false')"},
            _insert(s, 20, 25),
        ],
    },
    "cdf-disabled-read": {
        "bases": ("delta-source-cdf",),
        "description": "ALTER TABLE source SET TBLPROPERTIES (delta.enableChangeDataFeed = false) (v5), ids "
        "20..24 appended (v6), the query run once more (batch 2 reads v4..v6 and ends at v7), then ids 25..29 "
        "appended (v7): the position is now a version the feed is off at",
        "steps": lambda s: [
            {"sql": f"ALTER TABLE {_t(s)} SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'false')"},
            _insert(s, 20, 25),
        ],
        "steps_after": lambda s: [_insert(s, 25, 30)],
    },
    "cdf-reenabled-read": {
        "bases": ("delta-source-cdf",),
        "description": "as cdf-disabled-read (the feed off at v5, batch 2 read to v7, ids 25..29 at v7), then the "
        "feed turned on again (v8) and ids 30..34 appended (v9)",
        "steps": lambda s: [
            {"sql": f"ALTER TABLE {_t(s)} SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'false')"},
            _insert(s, 20, 25),
        ],
        "steps_after": lambda s: [
            _insert(s, 25, 30),
            {"sql": f"ALTER TABLE {_t(s)} SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"},
            _insert(s, 30, 35),
        ],
    },
    "schema-changed": {
        "bases": ("delta-source-stateless",),
        "description": "ALTER TABLE source ADD COLUMNS (extra STRING), then ids 20..24 appended",
        "steps": lambda s: [
            {"sql": f"ALTER TABLE {_t(s)} ADD COLUMNS (extra STRING)"},
            {
                "sql": f"INSERT INTO {_t(s)} SELECT /*+ COALESCE(1) */ id, CAST(id % 3 AS INT), "
                f"concat('r', CAST(id AS STRING)), 'x' FROM range(20, 25)"
            },
        ],
    },
}

#: Damage done to the sink table or the checkpoint of ``delta-sink``; ``{k}`` sink path, ``{c}`` checkpoint.
SINK_DAMAGE: dict[str, dict[str, Any]] = {
    "rolled-back": {
        "description": "checkpoint rolled back two batches (offsets/1..2 and commits/1..2 removed with their "
        ".crc files): the sink's txn version (2) is above the checkpoint's last batch (0)",
        "steps": lambda k, c: [
            {
                "remove": [
                    f"{c}/{log}/{p}{b}{s}"
                    for log in ("offsets", "commits")
                    for b in (1, 2)
                    for p, s in (("", ""), (".", ".crc"))
                ]
            }
        ],
    },
    "table-dropped": {
        "description": "sink table directory deleted",
        "steps": lambda k, c: [{"remove": [k]}],
    },
    "table-replaced": {
        "description": "sink table replaced in place with CREATE OR REPLACE TABLE ... AS SELECT of one row "
        "(value 1000)",
        "steps": lambda k, c: [
            {
                "sql": f"CREATE OR REPLACE TABLE {_t(k)} USING delta AS SELECT CAST(1000 AS BIGINT) AS value, "
                "CAST(1 AS BIGINT) AS key"
            }
        ],
    },
    "checkpoint-lost": {
        "description": "checkpoint deleted: a new query id writes to the old table, whose txn names the "
        "old query id at version 2",
        "steps": lambda k, c: [{"remove": [c]}],
    },
}


def fingerprint(scen: Path) -> str:
    h = hashlib.sha256()
    entries = []
    for sub in ("checkpoint", "source", "sink"):
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


def _spark_env(version: str) -> dict[str, str]:
    pyspark_jars = None
    python = gf.spark_envs.ensure_spark_python(version)
    for cand in sorted(python.parent.parent.glob("lib/python3*/site-packages/pyspark/jars")):
        pyspark_jars = cand
    chosen = jars.spark_jars(version, pyspark_jars, kind="delta")
    import json

    return {
        SPARK_JARS_ENV: ",".join(str(j) for j in chosen),
        SESSION_CONFS_ENV: json.dumps(DELTA_SESSION_CONFS),
    }


def _job(
    name: str, query: dict[str, Any], root: Path, op: str, source_options: dict[str, str]
) -> dict[str, Any]:
    return {
        "id": name,
        "op": op,
        "query": query["name"],
        "query_args": {"source_options": source_options},
        "checkpoint": str(root / "checkpoint"),
        "input": str(root / "source"),
        "sink": str(root / "sink"),
        "mode": "micro-batch",
        "trigger": "once",
        "batches": 1,
        "timeout_s": RESTART_TIMEOUT_S,
        "confs": {},
        "options": {},
        "describe_tables": [str(root / "source"), str(root / "sink")],
    }


def _world(name: str, root: Path, steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": name,
        "op": "world",
        "steps": steps,
        "checkpoint": str(root / "checkpoint"),
        "input": str(root / "source"),
        "sink": str(root / "sink"),
        "describe_tables": [str(root / "source"), str(root / "sink")],
    }


def _base_jobs(version: str, work: Path, bases: list[str]) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = []
    for name in bases:
        root = work / name
        if name in SOURCE_QUERIES:
            q = SOURCE_QUERIES[name]["query"]
            s = str(root / "source")
            props = SOURCE_QUERIES[name].get("table_properties")
            opts = dict(SOURCE_QUERIES[name].get("source_options") or {})
            jobs += [
                _world(
                    f"delta-base/{version}/{name}/world0",
                    root,
                    [_create(s, props), _insert(s, 0, 5), _insert(s, 5, 10)],
                ),
                _job(f"delta-base/{version}/{name}/run0", q, root, "run", opts),
                _world(f"delta-base/{version}/{name}/world1", root, [_insert(s, 10, 15)]),
                _job(f"delta-base/{version}/{name}/run1", q, root, "run", opts),
                _world(f"delta-base/{version}/{name}/world2", root, [_insert(s, 15, 20)]),
            ]
        else:
            q = SINK_QUERIES[name]["query"]
            jobs += [
                _job(f"delta-base/{version}/{name}/run{r}", q, root, "run", {})
                for r in range(SINK_QUERIES[name]["runs"])
            ]
    return jobs


def _damage_jobs(
    version: str, work: Path, bases: list[str]
) -> list[tuple[str, str, dict[str, Any], list[dict[str, Any]]]]:
    """(base, scenario name, damage spec, jobs) for every damaged scenario of the bases: the world job
    that copies the base and damages it, and for a damage with ``steps_after`` a run of the base's
    query on the damaged copy (one Trigger.Once batch, the base's reader options) then those steps.
    The last job is named ``delta-damage/<v>/<scenario>``: the tables it describes are the scenario's."""
    out = []
    for name in bases:
        base_root = work / name
        damages = SOURCE_DAMAGE if name in SOURCE_QUERIES else SINK_DAMAGE
        for damage, spec in damages.items():
            if name not in spec.get("bases", (name,)):
                continue
            scen = f"{name}-{damage}"
            root = work / "damaged" / scen
            steps: list[dict[str, Any]] = [
                {"copy": [str(base_root / sub), str(root / sub)]}
                for sub in ("checkpoint", "source", "sink")
                if sub == "checkpoint" or (sub == "source") == (name in SOURCE_QUERIES)
            ]
            if name in SOURCE_QUERIES:
                steps += spec["steps"](str(root / "source"))
            else:
                steps += spec["steps"](str(root / "sink"), str(root / "checkpoint"))
            last = f"delta-damage/{version}/{scen}"
            if "steps_after" not in spec:
                out.append((name, scen, spec, [_world(last, root, steps)]))
                continue
            info = SOURCE_QUERIES[name]
            opts = dict(info.get("source_options") or {})
            jobs = [
                _world(f"{last}/before", root, steps),
                _job(f"{last}/run", info["query"], root, "run", opts),
                _world(last, root, spec["steps_after"](str(root / "source"))),
            ]
            out.append((name, scen, spec, jobs))
    return out


def _install(src: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for sub in ("checkpoint", "source", "sink"):
        if (src / sub).is_dir():
            gf.copy_tree(src / sub, dest / sub)
            gf.remove_stray_outputs(dest / sub)


def write_line(version: str, names: list[str] | None) -> None:
    """Write the bases of one line, damage them and restart every scenario, in two sparklab runs."""
    if jars.delta_release(version) is None:
        gf.log(f"== delta {version}: skipped, {jars.DELTA_NOTE.get(version, 'no delta-spark release')}")
        return
    every = [*SOURCE_QUERIES, *SINK_QUERIES]
    bases = [n for n in every if not names or n in names or any(n in s for s in names)]
    work = gf.SCRATCH / "delta" / f"spark-{version}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = _spark_env(version)

    # A scenario named alone (``--scenario delta-sink-rolled-back``) is regenerated alone: its base is
    # written again in the scratch directory to be damaged, but only the named scenario is installed
    # and restarted; a base named installs the base and every scenario damaged from it.
    def wanted(base: str, scen: str) -> bool:
        return not names or scen in names or base in names

    damaged = [d for d in _damage_jobs(version, work, bases) if wanted(d[0], d[1])]
    release = jars.delta_release(version)
    scenarios: list[tuple[str, str, dict[str, Any], Path]] = [
        (n, n, {"description": "", "steps": None}, work / n) for n in bases
    ] + [(base, scen, spec, work / "damaged" / scen) for base, scen, spec, _ in damaged]
    scenarios = [s for s in scenarios if wanted(s[0], s[1])]
    # Each restart runs on a copy of the scenario made in the same Spark process, right after the
    # world was written and damaged: ONE sparklab run (one JVM, one hold of the Spark lock) a line.
    restart_jobs: list[dict[str, Any]] = []
    restarts: dict[str, list[tuple[dict[str, str], str]]] = {}
    for base, scen, spec, root in scenarios:
        info = SOURCE_QUERIES.get(base) or SINK_QUERIES[base]
        variants = (
            (spec.get("variants_for", {}).get(base) or spec.get("variants") or ({},))
            if base in SOURCE_QUERIES
            else ({},)
        )
        # The base's own reader options (readChangeFeed) are the job's, on every restart of it.
        base_options = dict(SOURCE_QUERIES.get(base, {}).get("source_options") or {})
        for variant in variants:
            options = {**base_options, **variant}
            label = "-".join(f"{k}={v}" for k, v in options.items()) or "default"
            tmp = work / "oracle" / f"{scen}-{label}"
            copies = [
                {"copy_present": [str(root / sub), str(tmp / sub)]}
                for sub in ("checkpoint", "source", "sink")
            ]
            job_id = f"delta/{version}/{scen}#{label}"
            restart_jobs += [
                _world(f"{job_id}/copy", tmp, copies),
                _job(job_id, info["query"], tmp, "restart", dict(options)),
            ]
            restarts.setdefault(scen, []).append((options, job_id))
    results = gf.run_sparklab(
        version,
        _base_jobs(version, work, bases) + [j for d in damaged for j in d[3]] + restart_jobs,
        "delta",
        env,
    )
    problems = [f"{r['id']}: {r['error']['message'].splitlines()[0]}" for r in results if r.get("error")]
    by_id = {r["id"]: r for r in results}
    for base, scen, spec, root in scenarios:
        dest = DELTA_FIXTURES / f"spark-{version}" / scen
        _install(root, dest)
        info = SOURCE_QUERIES.get(base) or SINK_QUERIES[base]
        world = by_id.get(f"delta-damage/{version}/{scen}") or by_id.get(
            f"delta-base/{version}/{base}/world2"
        )
        last_run = [r for r in results if r["id"].startswith(f"delta-base/{version}/{base}/run")][-1]
        tables = (world or last_run).get("tables") or {}
        fp = fingerprint(dest)
        scenario = {
            "schema_version": gf.SCHEMA_VERSION,
            "name": scen,
            "spark_version": version,
            "kind": "damaged" if scen != base else "base",
            "base": base if scen != base else None,
            "description": info["description"] + (f" Damage: {spec['description']}." if scen != base else ""),
            "query": info["query"],
            "written_with": {"trigger": "once", "delta_spark": f"io.delta:{release[0]}:{release[1]}"},
            "query_id": last_run.get("query_id"),
            "tables": {
                k.replace("<input>", "source").replace("<sink>", "sink"): v for k, v in tables.items()
            },
            "facts": gf.compute_facts(dest, info["query"]) if (dest / "checkpoint").is_dir() else None,
            "fingerprint": fp,
            "restarts": [],
        }
        if problems:
            scenario["generation_problems"] = problems
        for options, job_id in restarts.get(scen, []):
            result = by_id[job_id]
            result["tables"] = {
                k.replace("<input>", "source").replace("<sink>", "sink"): v
                for k, v in (result.get("tables") or {}).items()
            }
            scenario["restarts"].append(
                {
                    "spark": version,
                    "mode": "micro-batch",
                    "query": info["query"]["name"],
                    "source_options": dict(options),
                    "fingerprint": fp,
                    "result": result,
                }
            )
            err = result.get("error")
            gf.log(
                f"   {result['id']}: started={result['started']} batches={[b['batchId'] for b in result['batches']]}"
                f" error={(err['message'].splitlines() or [''])[0][:160] if err else None}"
            )
        gf.write_json(dest / "scenario.json", scenario)
    shutil.rmtree(work, ignore_errors=True)


def stage_delta(versions: list[str], names: list[str] | None) -> None:
    for version in versions:
        if version in gf.VERSIONS:
            write_line(version, names)


if __name__ == "__main__":  # pragma: no cover - run through generate_fixtures.py --stage delta
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    stage_delta(sys.argv[1:] or list(gf.VERSIONS), None)
