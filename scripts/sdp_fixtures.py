#!/usr/bin/env python3
"""Spark Declarative Pipelines fixtures: a pipeline run by real ``spark-pipelines``, damaged, run again.

    CHECKPOINT_DOCTOR_SPARK_LOCK=/tmp/checkpoint-doctor-spark.lock python scripts/sdp_fixtures.py 4.3.0
    python scripts/sdp_fixtures.py 4.3.0 --only healthy state-deleted

Layout: ``fixtures/sdp/spark-<v>/<scenario>/{storage/, warehouse/<table>/_spark_metadata/, run.json}``.
``storage/`` is the pipeline's storage root as the recorded run found it
(``_checkpoints/spark_catalog/default/<table>/<flow>/<version>/``); ``warehouse/`` holds only each
table's file sink log (no data files); ``run.json`` holds each ``spark-pipelines`` run after the
damage: its arguments, every flow's final state (COMPLETED, FAILED with Spark's error, QUEUED
never started), how often a flow failed, and each table's sink log batch ids before and after.

The pipeline (``PROJECT`` below): ``events`` a streaming table over ``rate-micro-batch`` (10 rows a
batch); ``merged`` a streaming table fed by two append flows ``merged_a`` (even values) and
``merged_b`` (odd) reading ``events``; ``joined`` a SQL stream-stream self join of ``events``
(stateful, two shuffle partitions). Two plain runs make the base (every flow at batch 1); each
scenario restores the base *at the same path* (the Derby metastore records absolute table
locations, so a copied project must run where it was written), damages it, and runs again.

Each ``spark-pipelines`` process takes the lock file ``CHECKPOINT_DOCTOR_SPARK_LOCK`` names (``flock``,
as ``generate_fixtures.run_sparklab`` does), so one JVM at a time runs on a shared machine.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import generate_fixtures as gf

SDP_FIXTURES = gf.FIXTURES / "sdp"
SDP_SCRATCH = gf.SCRATCH / "sdp"
#: The lines with Declarative Pipelines (SPARK-51727, open-sourced in 4.1).
LINES = ("4.1.4", "4.2.1", "4.3.0")
CATALOG, SCHEMA = "spark_catalog", "default"
#: A run's own time limit, not counting the wait for the Spark lock (flock -w is not used: a
#: shared machine's queue may be long).
RUN_TIMEOUT_S = 1800

SPEC = """name: sdp_fixture
storage: file://{storage}
configuration:
  spark.sql.shuffle.partitions: "2"
libraries:
  - glob:
      include: transformations/**
"""

FLOWS_PY = """from pathlib import Path

from pyspark import pipelines as dp
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

# 4.1 gives a pipeline's Python files no `spark` global (4.2+ do): the active session works on every line.
spark = SparkSession.active()
#: The JSON files scripts/sdp_fixtures.py writes before each run (the project's input/ directory).
INPUT = str(Path(__file__).resolve().parent.parent / "input")


@dp.table
def events():
    return (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", 10)
        .option("numPartitions", 1)
        .load()
    )


dp.create_streaming_table("merged")


@dp.append_flow(target="merged", name="merged_a")
def merged_a():
    return spark.readStream.table("events").where("value % 2 = 0").select("value", F.lit("a").alias("src"))


@dp.append_flow(target="merged", name="merged_b")
def merged_b():
    return spark.readStream.table("events").where("value % 2 = 1").select("value", F.lit("b").alias("src"))


@dp.table
def uploads():
    return spark.readStream.format("json").schema("id LONG, name STRING").load(INPUT)
"""

JOINED_SQL = """CREATE STREAMING TABLE joined AS
SELECT a.value AS value, a.timestamp AS ts_a, b.timestamp AS ts_b
FROM STREAM(events) a JOIN STREAM(events) b ON a.value = b.value;
"""

#: table -> its flows (the flow named like its table is the table's own query).
FLOWS = {
    "events": ("events",),
    "merged": ("merged_a", "merged_b"),
    "joined": ("joined",),
    "uploads": ("uploads",),
}

#: scenario -> (description, [spark-pipelines run arguments, one list per recorded run]).
SCENARIOS: dict[str, tuple[str, list[list[str]]]] = {
    # In the order they are written (the most telling first: the Spark lock is shared).
    "offsets-sparse": ("events/events's live offsets/0 deleted, offsets/1 kept (a sparse tail)", [[]]),
    "state-deleted": ("joined/joined's live state/ deleted (a stream-stream join)", [[]]),
    "empty-version": (
        "an empty directory merged/merged_a/1 beside the live 0 (a newer, empty version)",
        [[]],
    ),
    "healthy": ("no damage: a plain re-run", [[]]),
    "metadata-deleted": ("merged/merged_a's live metadata file deleted", [[]]),
    "full-refresh": (
        "`--full-refresh joined` ran (joined/joined/1 made, 0 left behind); then a plain run",
        [[]],
    ),
    "file-source-log-deleted": (
        "uploads/uploads's live sources/0/1 deleted (the file source's log of batch 1's files)",
        [[]],
    ),
    "code-new-stateful": (
        "the pipeline's code changed: merged_b's flow gained .dropDuplicates(['value']) (a new stateful operator)",
        [[]],
    ),
}


def flow_dir(storage: Path, table: str, flow: str) -> Path:
    return storage / "_checkpoints" / CATALOG / SCHEMA / table / flow


def live_version(storage: Path, table: str, flow: str) -> Path:
    """The live version dir: the largest numeric name (SystemMetadata.getLatestCheckpointDir)."""
    versions = [p for p in flow_dir(storage, table, flow).iterdir() if p.name.isdigit()]
    return max(versions, key=lambda p: int(p.name))


def _delete(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
    crc = path.parent / f".{path.name}.crc"
    if crc.exists():
        crc.unlink()


def damage(project: Path, scenario: str, version: str) -> list[str]:
    """Apply a scenario's damage to the project at ``project``; return what changed, relative to storage."""
    storage = project / "storage"
    changed: list[Path] = []
    if scenario == "state-deleted":
        changed = [live_version(storage, "joined", "joined") / "state"]
    elif scenario == "offsets-sparse":
        changed = [live_version(storage, "events", "events") / "offsets" / "0"]
    elif scenario == "metadata-deleted":
        changed = [live_version(storage, "merged", "merged_a") / "metadata"]
    elif scenario == "file-source-log-deleted":
        changed = [live_version(storage, "uploads", "uploads") / "sources" / "0" / "1"]
    for path in changed:
        _delete(path)
    if scenario == "empty-version":
        newer = flow_dir(storage, "merged", "merged_a") / "1"
        newer.mkdir()
        changed = [newer]
    if scenario == "code-new-stateful":
        code = project / "transformations" / "flows.py"
        text = code.read_text(encoding="utf-8")
        changed_text = text.replace(
            '.where("value % 2 = 1")', '.where("value % 2 = 1").dropDuplicates(["value"])'
        )
        if changed_text == text:
            raise RuntimeError("merged_b's definition not found in flows.py")
        code.write_text(changed_text, encoding="utf-8")
        return ["../transformations/flows.py"]
    if scenario == "full-refresh":
        # The damage is Spark's own: a full refresh of one table (State.reset makes version n+1).
        run = run_pipeline(project, version, ["--full-refresh", "joined"], "full-refresh-before")
        if run["outcome"] != "COMPLETED":
            raise RuntimeError(f"--full-refresh joined did not complete on {version}: {run}")
        changed = [flow_dir(storage, "joined", "joined") / "1"]
    return [str(p.relative_to(storage)) for p in changed]


def empty_dirs(dest: Path) -> list[str]:
    """The empty directories below a fixture's storage root (git keeps none; tests make them again)."""
    root = dest / "storage"
    return [
        p.relative_to(dest).as_posix() for p in sorted(root.rglob("*")) if p.is_dir() and not any(p.iterdir())
    ]


def write_input(project: Path, n: int) -> str:
    """The file source's next input file ``input/part-<n>.json``: 5 rows, ids 5n..5n+4."""
    (project / "input").mkdir(exist_ok=True)
    path = project / "input" / f"part-{n}.json"
    path.write_text(
        "".join(f'{{"id": {i}, "name": "u{i}"}}\n' for i in range(5 * n, 5 * n + 5)), encoding="utf-8"
    )
    return path.name


def write_project(project: Path) -> None:
    (project / "transformations").mkdir(parents=True)
    (project / "spark-pipeline.yml").write_text(SPEC.format(storage=project / "storage"), encoding="utf-8")
    (project / "transformations" / "flows.py").write_text(FLOWS_PY, encoding="utf-8")
    (project / "transformations" / "joined.sql").write_text(JOINED_SQL, encoding="utf-8")


_EVENT = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d: (.*)$")
_FLOW_STATE = re.compile(r"^Flow '?([\w.]+?)'? (?:is|has) ([A-Z]+)\.?$")
#: The third failure (PipelinesErrors): "Flow 'x' has FAILED more than 2 times and will not be restarted."
_FLOW_GAVE_UP = re.compile(r"^Flow '?([\w.]+?)'? has (FAILED) more than \d+ times")
#: A flow downstream of a failed one (TriggeredGraphExecution): "Flow 'x' SKIPPED due to upstream failure(s)."
_FLOW_SKIPPED = re.compile(r"^Flow '?([\w.]+?)'? (SKIPPED) due to upstream")
_STREAM_FAILED = re.compile(r"^Error: \[STREAM_FAILED\] Query \[id = [^\]]*\] terminated with exception: ")


def parse_events(text: str, project: Path) -> dict[str, Any]:
    """Every flow's final state, failures and first error line from a ``spark-pipelines`` log."""
    flows: dict[str, dict[str, Any]] = {}
    run_state = None
    lines = text.replace(str(project), "<project>").splitlines()
    for i, line in enumerate(lines):
        m = _EVENT.match(line.strip())
        if not m:
            continue
        message = m.group(1)
        if message.startswith("Run is "):
            run_state = message[len("Run is ") :].rstrip(".")
            continue
        fm = _FLOW_STATE.match(message) or _FLOW_GAVE_UP.match(message) or _FLOW_SKIPPED.match(message)
        if not fm:
            continue
        name, state = fm.group(1).split(".")[-1], fm.group(2)
        flow = flows.setdefault(name, {"state": None, "attempts": 0, "failures": 0, "errors": []})
        flow["state"] = state
        if state == "STARTING":
            flow["attempts"] += 1
        if state == "FAILED":
            flow["failures"] += 1
            for following in lines[i + 1 : i + 4]:
                if following.startswith("Error: "):
                    error = following[len("Error: ") :]
                    if _STREAM_FAILED.match(following):
                        error = _STREAM_FAILED.sub("", following)
                    flow["errors"].append(error[:600])
                    break
    for flow in flows.values():
        flow["errors"] = list(dict.fromkeys(flow["errors"]))
    not_restarted = sorted(
        {m.group(1).split(".")[-1] for m in re.finditer(r"Flow '?([\w.]+?)'? has FAILED more than", text)}
    )
    return {"run_state": run_state, "flows": flows, "not_restarted": not_restarted}


def sink_batches(project: Path) -> dict[str, list[int]]:
    """Each table's file sink log batch ids (``spark-warehouse/<table>/_spark_metadata``)."""
    out: dict[str, list[int]] = {}
    for table in FLOWS:
        log_dir = project / "spark-warehouse" / table / "_spark_metadata"
        ids = sorted(int(p.name.split(".")[0]) for p in log_dir.glob("*") if p.name.split(".")[0].isdigit())
        out[table] = ids
    return out


def flow_batches(project: Path) -> dict[str, dict[str, list[int]]]:
    """Each flow's live version's offsets and commits batch ids."""
    out: dict[str, dict[str, list[int]]] = {}
    storage = project / "storage"
    for table, flows in FLOWS.items():
        for flow in flows:
            live = live_version(storage, table, flow)
            out[flow] = {
                "version": [int(live.name)],
                "offsets": sorted(int(p.name) for p in (live / "offsets").glob("[0-9]*")),
                "commits": sorted(int(p.name) for p in (live / "commits").glob("[0-9]*")),
            }
    return out


def run_pipeline(project: Path, version: str, args: list[str], label: str) -> dict[str, Any]:
    """One ``spark-pipelines run`` in the project directory, under the Spark lock; its outcome."""
    launcher = gf.spark_envs.ensure_pipelines(version)
    cmd = [
        str(launcher),
        "run",
        *args,
        "--conf",
        "spark.sql.catalogImplementation=hive",
        "--conf",
        "spark.ui.enabled=false",
    ]
    lock = os.environ.get(gf.SPARK_LOCK_ENV)
    if lock and not _HELD:
        cmd = ["flock", lock, *cmd]
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PATH": f"{launcher.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYSPARK_PYTHON": str(launcher.parent / "python"),
    }
    before = sink_batches(project)
    log_path = project.parent / f"{project.name}-{label}.log"
    gf.log(f"== spark-pipelines {version} run {' '.join(args)} ({label}); log: {log_path}")
    with open(log_path, "w", encoding="utf-8") as fh:
        proc = subprocess.run(
            cmd, cwd=project, env=env, stdout=fh, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S
        )
    events = parse_events(log_path.read_text(encoding="utf-8", errors="replace"), project)
    outcome = "COMPLETED" if proc.returncode == 0 and events["run_state"] == "COMPLETED" else "FAILED"
    return {
        "args": args,
        "exit_code": proc.returncode,
        "outcome": outcome,
        **events,
        "sink_batches_before": before,
        "sink_batches_after": sink_batches(project),
        "flow_batches_after": flow_batches(project),
    }


#: Set while this process holds the Spark lock for a whole line (``--hold-lock``): the runs then
#: take no lock of their own (a second flock on the same file would wait for this one forever).
_HELD: list[int] = []


@contextlib.contextmanager
def spark_lock(hold: bool) -> Iterator[None]:
    """Hold the Spark lock (``CHECKPOINT_DOCTOR_SPARK_LOCK``) for a line's whole batch of runs: one
    wait in a long queue instead of one per run, one JVM at a time all the same."""
    lock = os.environ.get(gf.SPARK_LOCK_ENV)
    if not hold or not lock:
        yield
        return
    with open(lock, "a") as fh:
        gf.log(f"== waiting for the Spark lock {lock} (held for the whole line)")
        fcntl.flock(fh, fcntl.LOCK_EX)
        _HELD.append(1)
        try:
            yield
        finally:
            _HELD.clear()
            fcntl.flock(fh, fcntl.LOCK_UN)


def _restore(base: Path, project: Path) -> None:
    if project.exists():
        shutil.rmtree(project)
    shutil.copytree(base, project, symlinks=True)


def _copy_fixture(project: Path, dest: Path) -> None:
    """The storage root and each table's sink log (no data files, no metastore) into ``dest``."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copytree(project / "storage", dest / "storage")
    for table in FLOWS:
        log_dir = project / "spark-warehouse" / table / "_spark_metadata"
        if log_dir.is_dir():
            shutil.copytree(log_dir, dest / "warehouse" / table / "_spark_metadata")
    (dest / "spark-pipeline.yml").write_text(
        SPEC.format(storage="<project>/storage").replace("file://<project>/storage", "storage"),
        encoding="utf-8",
    )
    shutil.copytree(project / "transformations", dest / "transformations")
    if (project / "input").is_dir():
        shutil.copytree(project / "input", dest / "input")


def write_base(version: str) -> None:
    """The base project (two plain runs, every flow at batch 1), unless the line's scratch holds it."""
    line = SDP_SCRATCH / f"spark-{version}"
    project, base = line / "project", line / "base"
    if not base.exists():
        if project.exists():
            shutil.rmtree(project)
        write_project(project)
        for i in range(2):
            write_input(project, i)
            run = run_pipeline(project, version, [], f"base-run{i}")
            if run["outcome"] != "COMPLETED":
                raise RuntimeError(f"base run {i} failed on {version}: {run}")
        if base.exists():
            shutil.rmtree(base)
        shutil.copytree(project, base, symlinks=True)


def write_line(version: str, only: list[str] | None = None) -> None:
    line = SDP_SCRATCH / f"spark-{version}"
    project, base = line / "project", line / "base"
    write_base(version)
    for scenario, (description, runs) in SCENARIOS.items():
        if only and scenario not in only:
            continue
        _restore(base, project)
        changed = damage(project, scenario, version)
        write_input(project, 2)  # new input for the file source, as rate-micro-batch has new rows
        dest = SDP_FIXTURES / f"spark-{version}" / scenario
        staged = line / f"{scenario}-as-damaged"
        if staged.exists():
            shutil.rmtree(staged)
        _copy_fixture(project, staged)
        recorded = [run_pipeline(project, version, args, f"{scenario}-run{i}") for i, args in enumerate(runs)]
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(staged, dest)
        gf.write_json(
            dest / "run.json",
            {
                "schema_version": gf.SCHEMA_VERSION,
                "spark_version": version,
                "scenario": scenario,
                "description": description,
                "damage": changed,
                "written_at": str(project),
                "empty_dirs": empty_dirs(dest),
                "runs": recorded,
            },
        )
        for run in recorded:
            states = {f: v["state"] for f, v in run["flows"].items()}
            gf.log(f"   {scenario} on {version}: {run['outcome']} {states}")


#: The scenarios whose flow fails, repaired on its live version by the tool's own plan: (table, flow,
#: plan flags). A deleted offsets/0 below offsets/1 has no plan (nothing to bridge from).
REPAIRS: dict[str, tuple[str, str, list[str]]] = {
    "metadata-deleted": ("merged", "merged_a", []),
    # A stream-stream join keeps four stores per partition (SymmetricHashJoinStateManager: left and
    # right keyToNumValues and keyWithIndexToValue), none of them 'default': with state/ gone the plan
    # is told them, as docs/sdp.md tells an operator.
    "state-deleted": (
        "joined",
        "joined",
        [
            "--stateful",
            "--accept-data-loss",
            *(
                f"--state-store=0:{side}-{kind}"
                for side in ("left", "right")
                for kind in ("keyToNumValues", "keyWithIndexToValue")
            ),
        ],
    ),
    "offsets-sparse": ("events", "events", []),
}


def repair_line(version: str, only: list[str] | None = None) -> None:
    """Each failing scenario again from the base: the damage, then ``plan`` on the flow directory (the
    tool picks the live version) and ``apply``, then a real ``spark-pipelines run``, recorded in
    ``run.json`` under ``repair``."""
    line = SDP_SCRATCH / f"spark-{version}"
    project, base = line / "project", line / "base"
    cli = [str(gf.REPO / ".venv" / "bin" / "python"), "-m", "checkpoint_doctor"]
    cli_env = {**os.environ, "PYTHONPATH": str(gf.REPO)}
    spark = ["--spark", ".".join(version.split(".")[:2]), "--live-window", "0"]
    for scenario, (table, flow, flags) in REPAIRS.items():
        dest = SDP_FIXTURES / f"spark-{version}" / scenario / "run.json"
        if (only and scenario not in only) or not dest.exists():
            continue
        _restore(base, project)
        damage(project, scenario, version)
        write_input(project, 2)
        target = flow_dir(project / "storage", table, flow)
        plan_path = line / f"{scenario}-plan.json"
        planned = subprocess.run(
            [*cli, "plan", str(target), *spark, *flags, "-o", str(plan_path), "--force"],
            capture_output=True,
            text=True,
            cwd=str(gf.REPO),
            env=cli_env,
        )
        applied = subprocess.run(
            [*cli, "apply", str(plan_path), "--yes"],
            capture_output=True,
            text=True,
            cwd=str(gf.REPO),
            env=cli_env,
        )
        gf.log(f"   {scenario}: plan exited {planned.returncode}, apply exited {applied.returncode}")
        plan = gf.load_json(plan_path) if plan_path.exists() and planned.returncode in (0, 1) else {}
        rec = gf.load_json(dest)
        if not plan or applied.returncode != 0:
            # Nothing applied: no run proves anything; the record says the tool had no repair.
            rec["repair"] = {
                "flow": f"{table}/{flow}",
                "plan_exit": planned.returncode,
                "apply_exit": applied.returncode,
                "run": None,
            }
            gf.write_json(dest, rec)
            continue
        run = run_pipeline(project, version, [], f"{scenario}-repaired")
        rec["repair"] = {
            "flow": f"{table}/{flow}",
            "plan_exit": planned.returncode,
            "flags": flags,
            "strategy": plan.get("strategy"),
            "plan_steps": [st.get("kind") for st in plan.get("steps", [])],
            "apply_exit": applied.returncode,
            "run": run,
        }
        gf.write_json(dest, rec)
        gf.log(f"   {scenario} repaired on {version}: {run['outcome']}")


#: The selective resets (``plan <flow dir> --reset-flow``, pipelines.reset) recorded: scenario ->
#: (table, flow, plan flags). Each makes version n+1 past the last committed batch and keeps the data.
RESETS: dict[str, tuple[str, str, list[str]]] = {
    # offsets/0 gone below offsets/1: no ordinary plan (nothing to bridge from); the reset starts
    # version 1 past batch 1 (offsets/1 copied, and as the offsets/0 populateStartOffsets reads).
    "offsets-sparse": ("events", "events", []),
    # The join's state gone: the new version's four stores start empty (consent: buffered rows lost).
    "state-deleted": ("joined", "joined", ["--accept-data-loss"]),
    # An empty newer version 1 (a silent loss, CD803): the reset copies from 0 into 2.
    "empty-version": ("merged", "merged_a", []),
    # merged_b's code gained a dropDuplicates: its new version's dedup store starts empty (consent).
    "code-new-stateful": ("merged", "merged_b", ["--accept-data-loss"]),
}


_ROWS_PY = """
import json, sys
import pyarrow.parquet as pq
out = {}
for path in sys.argv[1:]:
    out[path] = pq.read_metadata(path).num_rows
print(json.dumps(out))
"""


def sink_rows(project: Path, version: str) -> dict[str, dict[str, int]]:
    """Each table's rows per sink log batch id (the Parquet footers of the files each entry adds),
    read by the line's own Python (the Spark environment has pyarrow; the tool's need not)."""
    import json

    adds: dict[str, dict[str, list[str]]] = {}
    for table in FLOWS:
        log_dir = project / "spark-warehouse" / table / "_spark_metadata"
        entries = adds.setdefault(table, {})
        for entry in sorted(log_dir.glob("[0-9]*"), key=lambda p: int(p.name.split(".")[0])):
            if not entry.name.isdigit():
                continue
            entries[entry.name] = [
                f["path"].removeprefix("file://")
                for f in map(json.loads, entry.read_text(encoding="utf-8").splitlines()[1:])
                if f.get("action") == "add"
            ]
    files = [f for entries in adds.values() for paths in entries.values() for f in paths]
    python = gf.spark_envs.ensure_pipelines(version).parent / "python"
    rows = json.loads(
        subprocess.run(
            [str(python), "-c", _ROWS_PY, *files], check=True, capture_output=True, text=True
        ).stdout
    )
    return {
        t: {b: sum(rows[f] for f in paths) for b, paths in entries.items()} for t, entries in adds.items()
    }


#: The resets from another start than the last committed offsets (``--reset-start``), each recorded in
#: ``run.json`` under its key: merged_a's file source back at the start of events (its table shared
#: with merged_b, CD804), and joined's two (its table its own; its join state starts empty).
RESET_STARTS: dict[str, dict[str, tuple[str, str, list[str]]]] = {
    "reset_earliest": {
        "healthy": ("merged", "merged_a", ["--reset-start", "earliest", "--accept-duplicates"]),
    },
    # events alone runs first (spark-pipelines run --refresh events): merged_a then has a file of
    # events it never read, which the reset from the latest skips.
    "reset_latest": {
        "healthy": ("merged", "merged_a", ["--reset-start", "latest", "--accept-data-loss"]),
    },
    "reset_earliest_joined": {
        "healthy": (
            "joined",
            "joined",
            ["--reset-start", "earliest", "--accept-duplicates", "--accept-data-loss"],
        ),
    },
}


#: A run before the reset is planned, by RESET_STARTS key: its spark-pipelines arguments.
BEFORE_RESET = {"reset_latest": ["--refresh", "events"]}


def _source_log(flow: Path) -> dict[str, int]:
    """The live version's file source log of source 0: the files each entry lists."""
    log = flow / "sources" / "0"
    if not log.is_dir():
        return {}
    return {
        e.name: len(e.read_text(encoding="utf-8").splitlines()) - 1
        for e in sorted(log.iterdir(), key=lambda e: e.name)
        if e.name.split(".")[0].isdigit()
    }


def reset_line(
    version: str,
    only: list[str] | None = None,
    resets: dict[str, tuple[str, str, list[str]]] | None = None,
    key: str = "reset",
) -> None:
    """Each reset scenario again from the base: the damage, ``plan <flow dir> --reset-flow``, ``apply``,
    then a real ``spark-pipelines run``, recorded in ``run.json`` under ``key`` with each table's rows
    per sink log batch id after the run (``resets``: RESETS, or RESET_STARTS under ``reset_earliest``)."""
    line = SDP_SCRATCH / f"spark-{version}"
    project, base = line / "project", line / "base"
    cli = [str(gf.REPO / ".venv" / "bin" / "python"), "-m", "checkpoint_doctor"]
    cli_env = {**os.environ, "PYTHONPATH": str(gf.REPO)}
    spark = ["--spark", ".".join(version.split(".")[:2]), "--live-window", "0"]
    for scenario, (table, flow, flags) in (RESETS if resets is None else resets).items():
        dest = SDP_FIXTURES / f"spark-{version}" / scenario / "run.json"
        if (only and scenario not in only) or not dest.exists():
            continue
        _restore(base, project)
        damage(project, scenario, version)
        write_input(project, 2)
        before_run = None
        if key in BEFORE_RESET:
            before_run = run_pipeline(project, version, BEFORE_RESET[key], f"{scenario}-{key}-before")
        target = flow_dir(project / "storage", table, flow)
        plan_path = line / f"{scenario}-{key}-plan.json"
        if plan_path.exists():
            plan_path.unlink()
        planned = subprocess.run(
            [*cli, "plan", str(target), "--reset-flow", *spark, *flags, "-o", str(plan_path), "--force"],
            capture_output=True,
            text=True,
            cwd=str(gf.REPO),
            env=cli_env,
        )
        applied = subprocess.run(
            [*cli, "apply", str(plan_path), "--yes"],
            capture_output=True,
            text=True,
            cwd=str(gf.REPO),
            env=cli_env,
        )
        gf.log(f"   {scenario} reset: plan exited {planned.returncode}, apply exited {applied.returncode}")
        rec = gf.load_json(dest)
        plan = gf.load_json(plan_path) if plan_path.exists() else {}
        facts = (plan.get("request") or {}).get("reset_flow") or {}
        entry: dict[str, Any] = {
            "flow": f"{table}/{flow}",
            "flags": flags,
            "plan_exit": planned.returncode,
            "apply_exit": applied.returncode,
            "from_version": facts.get("source"),
            "version": facts.get("version"),
            "batch": facts.get("batch"),
            "start": facts.get("start"),
            "reread_files": facts.get("reread_files"),
            "skipped_files": facts.get("skipped_files"),
            "sink_rows_before": sink_rows(project, version),
            "plan_steps": [st.get("kind") for st in plan.get("steps", [])],
            "run": None,
        }
        if before_run is not None:
            entry["before_run"] = before_run
        if plan and applied.returncode == 0:
            entry["run"] = run_pipeline(project, version, [], f"{scenario}-{key}")
            entry["sink_rows_after"] = sink_rows(project, version)
            entry["source_log_after"] = _source_log(live_version(project / "storage", table, flow))
            gf.log(f"   {scenario} reset on {version}: {entry['run']['outcome']}")
        else:
            entry["stderr"] = (planned.stderr + applied.stderr)[-600:]
        rec[key] = entry
        gf.write_json(dest, rec)


def reparse_line(version: str) -> None:
    """Parse the kept logs of a line's recorded runs again (the flows' states, failures, errors)."""
    line = SDP_SCRATCH / f"spark-{version}"
    for dest in sorted((SDP_FIXTURES / f"spark-{version}").glob("*/run.json")):
        rec = gf.load_json(dest)
        for i, run in enumerate(rec["runs"]):
            log_path = line / f"project-{rec['scenario']}-run{i}.log"
            if log_path.exists():
                run.update(
                    parse_events(log_path.read_text(encoding="utf-8", errors="replace"), line / "project")
                )
        repair = rec.get("repair") or {}
        log_path = line / f"project-{rec['scenario']}-repaired.log"
        if repair.get("run") and log_path.exists():
            repair["run"].update(
                parse_events(log_path.read_text(encoding="utf-8", errors="replace"), line / "project")
            )
        gf.write_json(dest, rec)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="+", choices=LINES)
    parser.add_argument("--only", nargs="*", choices=sorted(SCENARIOS))
    parser.add_argument("--fresh", action="store_true", help="write the base project again")
    parser.add_argument("--repair-only", action="store_true", help="only the repairs of recorded scenarios")
    parser.add_argument("--reset-only", action="store_true", help="only the resets of recorded scenarios")
    parser.add_argument(
        "--reset-start-only", action="store_true", help="only the resets from another start (RESET_STARTS)"
    )
    parser.add_argument(
        "--start-key", choices=sorted(RESET_STARTS), help="with --reset-start-only: only this one"
    )
    parser.add_argument("--reparse", action="store_true", help="parse the kept run logs again (no Spark)")
    parser.add_argument(
        "--hold-lock", action="store_true", help="hold the Spark lock for each line's whole batch of runs"
    )
    args = parser.parse_args(argv)
    for version in args.versions:
        if args.reparse:
            reparse_line(version)
            continue
        if args.fresh and (SDP_SCRATCH / f"spark-{version}" / "base").exists():
            shutil.rmtree(SDP_SCRATCH / f"spark-{version}" / "base")
        with spark_lock(args.hold_lock):
            if args.reset_start_only:
                write_base(version)
                for key, resets in RESET_STARTS.items():
                    if args.start_key is None or key == args.start_key:
                        reset_line(version, args.only, resets, key)
                continue
            if not args.repair_only and not args.reset_only:
                write_line(version, args.only)
            if not args.reset_only:
                repair_line(version, args.only)
            reset_line(version, args.only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
