#!/usr/bin/env python3
"""Delta sources whose table's schema changed under the query: written, damaged and restarted by real
Spark + delta-spark (issue 33 items 1 and 2).

    CHECKPOINT_DOCTOR_SPARK_LOCK=/tmp/checkpoint-doctor-spark.lock python scripts/delta_schema_fixtures.py 3.5.9 4.0.5 4.1.4 4.2.1

Layout: ``fixtures/delta-schema/spark-<v>/<name>/{checkpoint, source, scenario.json}``, kept apart from
``fixtures/delta/`` (whose per-line counts other tests pin). The source table has column mapping
(``delta.columnMapping.mode = name``: a column can be renamed or dropped without rewriting its files)
and type widening (``delta.enableTypeWidening``): (id BIGINT, key INT, text STRING, note STRING,
small SMALLINT). The query is sparklab's ``delta_stateless`` (id, key, text -> noop), so a change to
``note`` or ``small`` leaves the query's own columns as they are: what refuses the restart is the
Delta source itself (``DeltaSource.checkReadIncompatibleSchemaChanges``). Scenarios:

* ``delta-source-mapped``: v0 create, v1 ids 0..4, v2 ids 5..9; run 0 (Trigger.Once) reads v1..v2,
  v3 ids 10..14, run 1 reads v3; then v4 ids 15..19 that no batch has read;
* ``-renamed``: then ``ALTER TABLE ... RENAME COLUMN note TO remark`` (v5) and ids 20..24 (v6);
* ``-dropped``: then ``ALTER TABLE ... DROP COLUMN note`` (v5) and ids 20..24 (v6);
* ``-widened``: then ``ALTER TABLE ... ALTER COLUMN small TYPE INT`` (v5) and ids 20..24 with
  ``small`` = 40000 + id, beyond a SMALLINT (v6).

Each is restarted once with the default options in a copy; what Spark did is recorded under
``restarts``. Another copy of each damaged one is restarted with the Delta source option and SQL confs
the tool's plan names (``delta_schema.action``), again and again as a job's retries would (Delta stops
a restart on purpose each time it writes its schema log, ``DELTA_STREAMING_METADATA_EVOLUTION``):
every restart is recorded under ``repair`` where the default restart was refused, and the plan the
CLI prints for the fixture is checked to name exactly that restart. Everything of a line runs in ONE
sparklab process (one JVM, one hold of the Spark lock). tests/delta/test_schema_changes.py replays
the records without Spark.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import delta_fixtures as df
import generate_fixtures as gf
import jars

SCHEMA_FIXTURES = gf.FIXTURES / "delta-schema"
QUERY = gf._q("delta_stateless", sink="noop")
PARTS = ("checkpoint", "source")
BASE = "delta-source-mapped"
BASE_DESCRIPTION = (
    "Delta table 'source' (id BIGINT, key INT, text STRING, note STRING, small SMALLINT; checkpointInterval "
    "2, columnMapping.mode name, enableTypeWidening) -> select id, key, text -> noop; v0 create, v1 ids "
    "0..4, v2 ids 5..9; run 0 (Trigger.Once) reads v1..v2, v3 ids 10..14, run 1 reads v3; then v4 ids "
    "15..19 that no batch has read."
)
#: Restarts of a repaired copy, at most: Delta fails the first on purpose once it initialised its schema
#: log, the next after the batch that reaches the schema change (at its commit), then the stream goes on.
REPAIR_RESTARTS = 5


def _create(path: str) -> dict[str, str]:
    return {
        "sql": f"CREATE TABLE {df._t(path)} (id BIGINT, key INT, text STRING, note STRING, small SMALLINT) "
        f"USING delta TBLPROPERTIES ('delta.checkpointInterval' = '{df.CHECKPOINT_INTERVAL}', "
        "'delta.columnMapping.mode' = 'name', 'delta.enableTypeWidening' = 'true')"
    }


def _insert(
    path: str, start: int, end: int, *, note: bool = True, small: str = "SMALLINT", plus: int = 0
) -> dict:
    """One commit holding one file with ids [start, end): positional, as the table's columns stand."""
    cols = "id, CAST(id % 3 AS INT) AS key, concat('r', CAST(id AS STRING)) AS text"
    if note:
        cols += ", concat('n', CAST(id AS STRING)) AS note"
    cols += f", CAST(id + {plus} AS {small}) AS small"
    return {"sql": f"INSERT INTO {df._t(path)} SELECT /*+ COALESCE(1) */ {cols} FROM range({start}, {end})"}


DAMAGE: dict[str, dict[str, Any]] = {
    "renamed": {
        "description": "ALTER TABLE source RENAME COLUMN note TO remark (v5), then ids 20..24 (v6)",
        "steps": lambda s: [
            {"sql": f"ALTER TABLE {df._t(s)} RENAME COLUMN note TO remark"},
            _insert(s, 20, 25),
        ],
    },
    "dropped": {
        "description": "ALTER TABLE source DROP COLUMN note (v5), then ids 20..24 (v6)",
        "steps": lambda s: [
            {"sql": f"ALTER TABLE {df._t(s)} DROP COLUMN note"},
            _insert(s, 20, 25, note=False),
        ],
    },
    "widened": {
        "description": "ALTER TABLE source ALTER COLUMN small TYPE INT (v5, type widening SMALLINT -> INT), "
        "then ids 20..24 with small = 40000 + id (v6)",
        "steps": lambda s: [
            {"sql": f"ALTER TABLE {df._t(s)} ALTER COLUMN small TYPE INT"},
            _insert(s, 20, 25, small="INT", plus=40000),
        ],
    },
}


def _world(name: str, root: Path, steps: list[dict[str, Any]]) -> dict[str, Any]:
    job = df._world(name, root, steps)
    job["describe_tables"] = [str(root / "source")]
    return job


def _job(
    name: str,
    root: Path,
    op: str,
    source_options: dict[str, str] | None = None,
    confs: dict[str, str] | None = None,
) -> dict[str, Any]:
    job = df._job(name, QUERY, root, op, dict(source_options or {}))
    job["describe_tables"] = [str(root / "source")]
    job["confs"] = dict(confs or {})
    return job


def _install(src: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for sub in PARTS:
        if (src / sub).exists():
            shutil.copytree(src / sub, dest / sub)
            gf.remove_stray_outputs(dest / sub)


def _tables(result: dict[str, Any]) -> dict[str, Any]:
    # One table is described (the source), under the harness's placeholder for the input path.
    found = list((result.get("tables") or {}).values())
    return {"source": found[0]} if found else {}


def _summary(result: dict[str, Any]) -> str:
    err = result.get("error")
    return (
        f"   {result['id']}: started={result['started']} batches={[b['batchId'] for b in result['batches']]}"
        f" rows={[b['numInputRows'] for b in result['batches']]}"
        f" error={(err['message'].splitlines() or [''])[0][:200] if err else None}"
    )


def _settings(version: str, damage: str, checkpoint: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The restart the tool's plan names for a refused scenario (its strategy's words: checked against
    the plan the CLI prints when the outcome is recorded, ``_check_plan``)."""
    from checkpoint_doctor.diagnosis.codes import Code
    from checkpoint_doctor.planning.strategies.delta_schema import OPTION, confs, location

    release = jars.delta_release(version)
    assert release is not None
    code = Code.DELTA_SOURCE_TYPE_WIDENED if damage == "widened" else Code.DELTA_SOURCE_SCHEMA_CHANGED
    return {OPTION: location(str(checkpoint))}, confs(code, release[1])


def write_line(version: str) -> None:
    """Write the base and its damaged copies on one line, restart each in a copy, and restart another
    copy of each damaged one as its plan says, all in ONE sparklab process (one JVM: the Spark lock is
    shared by every helper on the machine)."""
    if jars.delta_release(version) is None:
        gf.log(
            f"== delta-schema {version}: skipped, {jars.DELTA_NOTE.get(version, 'no delta-spark release')}"
        )
        return
    work = gf.SCRATCH / "delta-schema" / f"spark-{version}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = df._spark_env(version)
    base = work / BASE
    s = str(base / "source")
    jobs = [
        _world(f"schema/{version}/world0", base, [_create(s), _insert(s, 0, 5), _insert(s, 5, 10)]),
        _job(f"schema/{version}/run0", base, "run"),
        _world(f"schema/{version}/world1", base, [_insert(s, 10, 15)]),
        _job(f"schema/{version}/run1", base, "run"),
        _world(f"schema/{version}/world2", base, [_insert(s, 15, 20)]),
    ]
    for damage, spec in DAMAGE.items():
        root = work / "damaged" / f"{BASE}-{damage}"
        steps: list[dict[str, Any]] = [{"copy": [str(base / sub), str(root / sub)]} for sub in PARTS]
        jobs.append(
            _world(f"schema/{version}/{BASE}-{damage}", root, steps + spec["steps"](str(root / "source")))
        )
    names = [BASE, *(f"{BASE}-{d}" for d in DAMAGE)]
    for name in names:
        src = base if name == BASE else work / "damaged" / name
        tmp = work / "oracle" / name
        copies = [{"copy": [str(src / sub), str(tmp / sub)]} for sub in PARTS]
        jobs += [
            _world(f"oracle-copy/{name}", tmp, copies),
            _job(f"delta-schema/{version}/{name}#default", tmp, "restart"),
        ]
    for damage in DAMAGE:
        name = f"{BASE}-{damage}"
        tmp = work / "repaired" / name
        copies = [{"copy": [str(work / "damaged" / name / sub), str(tmp / sub)]} for sub in PARTS]
        options, confs = _settings(version, damage, tmp / "checkpoint")
        jobs.append(_world(f"repair-copy/{name}", tmp, copies))
        jobs += [
            _job(f"delta-schema/{version}/{name}#repair{n}", tmp, "restart", options, confs)
            for n in range(REPAIR_RESTARTS)
        ]
    results = gf.run_sparklab(version, jobs, "delta-schema", env)
    by_id = {r["id"]: r for r in results}
    problems = [
        f"{r['id']}: {r['error']['message'].splitlines()[0]}"
        for r in results
        if r.get("error") and r["id"].startswith("schema/")
    ]
    for p in problems:
        gf.log(f"   problem: {p}")
    release = jars.delta_release(version)
    assert release is not None
    run1 = by_id[f"schema/{version}/run1"]
    for name in names:
        damage = name.removeprefix(f"{BASE}-") if name != BASE else ""
        root = base if name == BASE else work / "damaged" / name
        world = by_id[f"schema/{version}/world2" if name == BASE else f"schema/{version}/{name}"]
        dest = SCHEMA_FIXTURES / f"spark-{version}" / name
        _install(root, dest)
        fp = df.fingerprint(dest)
        result = by_id[f"delta-schema/{version}/{name}#default"]
        result["tables"] = _tables(result)
        gf.log(_summary(result))
        scenario: dict[str, Any] = {
            "schema_version": gf.SCHEMA_VERSION,
            "name": name,
            "spark_version": version,
            "kind": "damaged" if damage else "base",
            "base": BASE if damage else None,
            "description": BASE_DESCRIPTION
            + (f" Damage: {DAMAGE[damage]['description']}." if damage else ""),
            "query": QUERY,
            "written_with": {"trigger": "once", "delta_spark": f"io.delta:{release[0]}:{release[1]}"},
            "query_id": run1.get("query_id"),
            "tables": _tables(world),
            "facts": gf.compute_facts(dest, QUERY),
            "fingerprint": fp,
            "restarts": [
                {
                    "spark": version,
                    "mode": "micro-batch",
                    "query": QUERY["name"],
                    "source_options": {},
                    "fingerprint": fp,
                    "result": result,
                }
            ],
        }
        if problems:
            scenario["generation_problems"] = problems
        if damage and result.get("error") is not None:
            tmp = work / "repaired" / name
            options, confs = _settings(version, damage, tmp / "checkpoint")
            got = [by_id[f"delta-schema/{version}/{name}#repair{n}"] for n in range(REPAIR_RESTARTS)]
            for r in got:
                r["tables"] = _tables(r)
                gf.log(_summary(r))
            cp = str(tmp / "checkpoint")
            scenario["repair"] = {
                "settings": {
                    "source_options": {k: v.replace(cp, "<checkpoint>") for k, v in options.items()},
                    "confs": confs,
                },
                "restarts": got,
                "schema_log_files": sorted(
                    p.relative_to(tmp / "checkpoint").as_posix()
                    for p in (tmp / "checkpoint").rglob("*")
                    if p.is_file()
                    and p.relative_to(tmp / "checkpoint").as_posix().startswith("_delta_schema")
                ),
            }
        gf.write_json(dest / "scenario.json", scenario)
        if "repair" in scenario:
            _check_plan(dest, version, scenario["repair"]["settings"], work / "plan" / name)
    shutil.rmtree(work, ignore_errors=True)


def _plan(checkpoint: Path, spark_line: str) -> dict[str, Any]:
    """The tool's plan of a copy, as the CLI prints it in JSON (the command an operator runs)."""
    argv = [
        sys.executable,
        "-m",
        "checkpoint_doctor",
        "plan",
        str(checkpoint),
        "--spark",
        spark_line,
        "--live-window",
        "0",
        "--format",
        "json",
    ]
    env = {**os.environ, "PYTHONPATH": str(gf.REPO)}
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(gf.REPO))
    if proc.returncode not in (0, 1, 4):
        raise RuntimeError(
            f"{' '.join(argv)} exited {proc.returncode}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        )
    return dict(json.loads(proc.stdout)["result"])


def _check_plan(dest: Path, version: str, settings: dict[str, Any], work: Path) -> None:
    """The plan the CLI prints for a copy of the fixture names exactly the restart Spark ran."""
    from checkpoint_doctor.planning.strategies.delta_schema import restart_settings

    _install(dest, work)
    plan = _plan(work / "checkpoint", ".".join(version.split(".")[:2]))
    named = restart_settings(plan, ".".join(version.split(".")[:2]))
    cp = str(work / "checkpoint")
    got = (
        None if named is None else ({k: v.replace(cp, "<checkpoint>") for k, v in named[0].items()}, named[1])
    )
    if got != (settings["source_options"], settings["confs"]):
        gf.log(f"   PLAN MISMATCH {dest.name}: the plan names {got}, Spark ran {settings}")


if __name__ == "__main__":  # pragma: no cover - a fixture script
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    for v in sys.argv[1:] or list(gf.VERSIONS):
        write_line(v)
