#!/usr/bin/env python3
"""transformWithState fixtures: Python stateful processors written, damaged and restarted by real Spark.

    CHECKPOINT_DOCTOR_SPARK_LOCK=/tmp/checkpoint-doctor-spark.lock python scripts/tws_fixtures.py 4.3.0
    python scripts/tws_fixtures.py --repair-only 4.3.0   # the moved checkpoint's repair again

Layout: ``fixtures/tws/spark-<v>/<query>-<scenario>/{checkpoint, scenario.json}``. ``<query>`` is
``tws_pandas`` (``transformWithStateInPandas``, 4.0+) or ``tws_row`` (the Row-based
``transformWithState``, 4.1+): sparklab's processor with a ValueState, a ListState and a MapState,
RocksDB, timeMode None, output mode Update, three Trigger.Once runs over ``rate-micro-batch``.

The operator metadata v2 (``state/0/_metadata/v2/<batch>``) records its state schema files by
absolute path, so where a checkpoint lies decides its restart: every scenario is written at its own
path (``written_at``) and restarted there (``restarted_at``), except ``moved``, restarted in a copy at
another path. Tests put a fixture back at ``written_at`` (or ``restarted_at``) before they diagnose it.

Scenarios (the damage, done after the third run):

* ``healthy``: none.
* ``moved``: none; the checkpoint is moved to another directory and restarted there.
* ``copied``: none; the checkpoint is copied to another directory (the old one kept) and restarted there.
* ``schema-deleted``: every file of ``state/0/_stateSchema/`` deleted.
* ``metadata-deleted``: ``state/0/_metadata/v2/`` deleted.
* ``metadata-newest-deleted``: only the newest file of ``state/0/_metadata/v2/`` deleted.
* ``state-deleted``: ``state/`` deleted.
* ``zip-deleted``: the newest ``<version>.zip`` of every partition deleted.

Two sparklab processes per line (writes, then restarts); ``moved``'s repair (the tool's plan,
applied to the copy and restarted) is a third, recorded under ``repair``.

Changed code (``--jobs <line>``, issue 38 item 3): the ``healthy`` checkpoint of each query, put back
where it was written before each restart (sparklab's ``before_argv`` runs ``--install``), restarted
by real Spark with each job of ``fixtures/jobs/tws_changes.py`` (one change each), all in one
sparklab process; the outcomes go to ``fixtures/tws/spark-<v>/jobs.json``. Then ``diagnose --job``'s
own runner (``checkpoint_doctor.execution.job_probe``) asks the line's Spark what each job runs:
``fixtures/tws/spark-<v>/job-facts.json``, which the default tests replay without a JVM.

Avro (``--avro <line>``): each query written again with ``spark.sql.streaming.stateStore.encodingFormat=avro``
(``fixtures/tws/spark-<v>/avro/<query>-healthy``), then restarted with each ``AVRO_CHANGES`` job (schema
evolution), all in one sparklab process: ``avro-jobs.json`` and ``avro-job-facts.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import generate_fixtures as gf

TWS_FIXTURES = gf.FIXTURES / "tws"
TWS_SCRATCH = gf.SCRATCH / "tws"
LINES = ("4.0.5", "4.1.4", "4.2.1", "4.3.0")
RUNS = 3
SCENARIOS = {
    "healthy": "no damage, restarted where it was written",
    "moved": "no damage; the checkpoint moved to another directory (the old one gone) and restarted there",
    "copied": "no damage; the checkpoint copied to another directory (the old one kept) and restarted there",
    "schema-deleted": "every file of state/0/_stateSchema/ deleted",
    "metadata-deleted": "state/0/_metadata/v2/ deleted",
    "metadata-newest-deleted": "the newest file of state/0/_metadata/v2/ deleted",
    "state-deleted": "state/ deleted",
    "zip-deleted": "the newest <version>.zip of every state partition deleted",
}


def queries(version: str) -> list[str]:
    # The Row-based transformWithState in PySpark exists since 4.1 (SPARK-51187).
    return ["tws_pandas"] if version.startswith("4.0") else ["tws_pandas", "tws_row"]


def _python_env(version: str) -> dict[str, str]:
    # Python workers run the processor: the line's own venv (pandas, pyarrow, protobuf).
    python = str(gf.spark_envs.ensure_spark_python(version))
    return {"PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}


def _job(name: str, query: str, checkpoint: Path, op: str) -> dict[str, Any]:
    return {
        "id": name,
        "op": op,
        "query": query,
        "query_args": {},
        "checkpoint": str(checkpoint),
        "mode": "micro-batch",
        "trigger": "once",
        "batches": 1,
        "timeout_s": gf.RESTART_TIMEOUT_S * 2,
        "confs": {},
        "options": {},
    }


def _delete(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
    crc = path.parent / f".{path.name}.crc"
    if crc.exists():
        crc.unlink()


def damage(checkpoint: Path, scenario: str) -> list[str]:
    """Apply a scenario's damage to a checkpoint; return the deleted paths, relative."""
    op = checkpoint / "state" / "0"
    targets: list[Path] = []
    if scenario == "schema-deleted":
        targets = sorted(
            p for p in (op / "_stateSchema").rglob("*") if p.is_file() and not p.name.endswith(".crc")
        )
    elif scenario == "metadata-deleted":
        targets = [op / "_metadata" / "v2"]
    elif scenario == "metadata-newest-deleted":
        v2 = [p for p in (op / "_metadata" / "v2").iterdir() if p.name.isdigit()]
        targets = [max(v2, key=lambda p: int(p.name))]
    elif scenario == "state-deleted":
        targets = [checkpoint / "state"]
    elif scenario == "zip-deleted":
        for part in sorted(p for p in op.iterdir() if p.name.isdigit()):
            zips = [z for z in part.glob("*.zip") if z.stem.isdigit()]
            if zips:
                targets.append(max(zips, key=lambda z: int(z.stem)))
    rel = [str(t.relative_to(checkpoint)) for t in targets]
    for t in targets:
        _delete(t)
    return rel


def write_line(version: str) -> None:
    """Write every scenario of a line, restart it, and copy it into ``fixtures/tws/``."""
    env = _python_env(version)
    line_scratch = TWS_SCRATCH / f"spark-{version}"
    if line_scratch.exists():
        shutil.rmtree(line_scratch)
    names = [(q, s) for q in queries(version) for s in SCENARIOS]
    writes = []
    for query, scen in names:
        ckpt = line_scratch / f"{query}-{scen}" / "checkpoint"
        writes += [_job(f"{version}/{query}-{scen}/run{i}", query, ckpt, "run") for i in range(RUNS)]
    results = gf.run_sparklab(version, writes, "tws-write", env=env)
    failed = [r for r in results if r.get("error")]
    if failed:
        raise RuntimeError(f"tws writes failed on {version}: {failed[0]['error']}")
    restarts = []
    damaged: dict[str, list[str]] = {}
    for query, scen in names:
        root = line_scratch / f"{query}-{scen}"
        ckpt = root / "checkpoint"
        damaged[f"{query}-{scen}"] = damage(ckpt, scen)
        keep = root / "as-damaged"
        shutil.copytree(ckpt, keep)
        at = ckpt
        if scen == "moved":
            # A move: the old directory is gone, as after `mv` or a copy whose source was deleted.
            at = root / "moved" / "checkpoint"
            at.parent.mkdir(parents=True)
            shutil.move(str(ckpt), str(at))
        elif scen == "copied":
            # A copy: the old directory stays, and the restart reads its schema files from there.
            at = root / "copied" / "checkpoint"
            shutil.copytree(ckpt, at)
        restarts.append(_job(f"{version}/{query}-{scen}/restart", query, at, "restart"))
    results = gf.run_sparklab(version, restarts, "tws-restart", env=env)
    out_dir = TWS_FIXTURES / f"spark-{version}"
    for (query, scen), job, result in zip(names, restarts, results, strict=True):
        root = line_scratch / f"{query}-{scen}"
        dest = out_dir / f"{query}-{scen}"
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        shutil.copytree(root / "as-damaged", dest / "checkpoint")
        gf.write_json(
            dest / "scenario.json",
            {
                "schema_version": gf.SCHEMA_VERSION,
                "name": f"{query}-{scen}",
                "spark_version": version,
                "query": query,
                "scenario": scen,
                "description": SCENARIOS[scen],
                "runs": RUNS,
                "written_at": str(root / "checkpoint"),
                "restarted_at": job["checkpoint"],
                "damage": damaged[f"{query}-{scen}"],
                "empty_dirs": gf.empty_dirs(dest),
                "restarts": [{"spark": version, "mode": "micro-batch", "query": query, "result": result}],
            },
        )
        err = result.get("error")
        gf.log(
            f"   {dest.name} on {version}: started={result['started']} error={(err or {}).get('message', '')[:120]!r}"
        )


def install(fixture: Path, at: Path) -> Path:
    """Put a fixture's checkpoint at ``at`` (replacing what is there) with its empty dirs."""
    if at.exists():
        shutil.rmtree(at)
    shutil.copytree(fixture / "checkpoint", at)
    scen = json.loads((fixture / "scenario.json").read_text())
    for rel in scen.get("empty_dirs", []):
        (at.parent / rel).mkdir(parents=True, exist_ok=True)
    return at


def repair_line(version: str) -> None:
    """The moved checkpoints' repair: the tool's plan applied to the copy, restarted by Spark."""
    env = _python_env(version)
    jobs, dests = [], []
    for query in queries(version):
        dest = TWS_FIXTURES / f"spark-{version}" / f"{query}-moved"
        scen = json.loads((dest / "scenario.json").read_text())
        at = install(dest, Path(scen["restarted_at"]).parent.parent / "repaired" / "checkpoint")
        plan_path = at.parent / "plan.json"
        # The repository's own CLI (its .venv), on a copy nothing writes to: no live window.
        cli = [str(gf.REPO / ".venv" / "bin" / "python"), "-m", "checkpoint_doctor"]
        cli_env = {**os.environ, "PYTHONPATH": str(gf.REPO)}
        spark = ["--spark", ".".join(version.split(".")[:2])]
        subprocess.run(
            [*cli, "plan", str(at), *spark, "--live-window", "0", "-o", str(plan_path), "--force"],
            check=False,
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
        jobs.append(_job(f"{version}/{query}-moved/repaired", query, at, "restart"))
        gf.log(
            f"   {dest.name}: apply exited {applied.returncode} {applied.stdout[-300:]!r} {applied.stderr[-300:]!r}"
        )
        dests.append((dest, scen, plan_path, applied))
    results = gf.run_sparklab(version, jobs, "tws-repair", env=env)
    for (dest, scen, plan_path, applied), result in zip(dests, results, strict=True):
        plan = json.loads(plan_path.read_text()) if plan_path.exists() else None
        scen["repair"] = {
            "plan_steps": [s.get("kind") for s in (plan or {}).get("steps", [])],
            "apply_exit": applied.returncode,
            "result": result,
        }
        gf.write_json(dest / "scenario.json", scen)
        gf.log(
            f"   {dest.name} repaired on {version}: started={result['started']} error={result.get('error')}"
        )


JOBS_FILE = "fixtures/jobs/tws_changes.py"


def _changes_of_job_file() -> dict[str, Any]:
    # The job file's CHANGES, read without importing it (it imports pyspark; this script's python may not).
    import ast

    tree = ast.parse((gf.REPO / JOBS_FILE).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "CHANGES":
            assert node.value is not None
            return dict(ast.literal_eval(node.value))
    raise RuntimeError(f"{JOBS_FILE} has no CHANGES")


def job_changes(version: str, query: str) -> list[str]:
    """The changes each base is restarted with on a line: the Row-based API exists from 4.1 only."""
    changes = list(_changes_of_job_file())
    if version.startswith("4.0"):
        changes.remove("api-swapped")
    return changes


def job_spec(query: str, change: str) -> str:
    """The ``--job`` spec of a base query with one change (tws_changes.function_name)."""
    return f"{JOBS_FILE}:{query.removeprefix('tws_')}_{change.replace('-', '_')}"


def _install_argv(fixture: Path, at: Path) -> list[str]:
    # Run by sparklab before the restart, in the line's python: this script, --install.
    return [sys.executable, str(Path(__file__).resolve()), "--install", str(fixture), str(at)]


def jobs_line(version: str) -> None:
    """Restart each query's healthy checkpoint with each changed job; record the outcomes and what
    the line's Spark says each job runs (the job probe)."""
    env = _python_env(version)
    out_dir = TWS_FIXTURES / f"spark-{version}"
    restarts, names = [], []
    for query in queries(version):
        base = out_dir / f"{query}-healthy"
        at = Path(json.loads((base / "scenario.json").read_text())["written_at"])
        for change in job_changes(version, query):
            job = _job(f"{version}/{query}-job-{change}", "job:" + job_spec(query, change), at, "restart")
            job["before_argv"] = _install_argv(base, at)
            restarts.append(job)
            names.append((query, change, base.name, at))
    results = gf.run_sparklab(version, restarts, "tws-jobs", env=env)
    records = []
    for (query, change, base, at), result in zip(names, results, strict=True):
        records.append(
            {
                "query": query,
                "change": change,
                "job": job_spec(query, change),
                "base": base,
                "restarted_at": str(at),
                "spark": version,
                "mode": "micro-batch",
                "result": result,
            }
        )
        err = result.get("error")
        gf.log(
            f"   {query}-job-{change} on {version}: started={result['started']} "
            f"error={(err or {}).get('message', '')[:160]!r}"
        )
    gf.write_json(out_dir / "jobs.json", records)
    probe_line(version)


def probe_line(version: str, specs: list[str] | None = None, out_name: str = "job-facts.json") -> None:
    """What the line's Spark says each changed job runs: ``diagnose --job``'s runner, one process."""
    if specs is None:
        specs = sorted({job_spec(q, c) for q in queries(version) for c in job_changes(version, q)})
    python = gf.spark_envs.ensure_spark_python(version)
    cmd = [str(python), "-m", "checkpoint_doctor.execution.job_probe", *specs]
    lock = os.environ.get(gf.SPARK_LOCK_ENV)
    if lock:
        cmd = ["flock", lock, *cmd]
    env = {**os.environ, "PYTHONPATH": str(gf.REPO), **_python_env(version)}
    done = subprocess.run(cmd, cwd=str(gf.REPO), env=env, capture_output=True, text=True, check=False)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("[")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"job probe {version} exited {done.returncode}: {done.stderr[-2000:]}")
    entries = json.loads(lines[-1])
    bad = [e for e in entries if "error" in e]
    if bad:
        raise RuntimeError(f"job probe {version}: {bad}")
    gf.write_json(TWS_FIXTURES / f"spark-{version}" / out_name, entries)
    gf.log(f"   tws job facts {version}: {len(entries)} jobs")


AVRO = {"spark.sql.streaming.stateStore.encodingFormat": "avro"}


def _avro_changes() -> list[str]:
    import ast

    tree = ast.parse((gf.REPO / JOBS_FILE).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "AVRO_CHANGES":
            assert node.value is not None
            return list(ast.literal_eval(node.value))
    raise RuntimeError(f"{JOBS_FILE} has no AVRO_CHANGES")


def avro_line(version: str) -> None:
    """The Avro bases (``avro/<query>-healthy``: the base query written with the Avro state encoding,
    which the offsets pin) restarted with each Avro change, in ONE sparklab process: the writes, then
    each restart after its ``before_argv`` keeps the written checkpoint (``pristine``, once) and puts
    it back. Outcomes: ``avro-jobs.json``; job facts: ``avro-job-facts.json``."""
    env = _python_env(version)
    scratch = TWS_SCRATCH / f"spark-{version}" / "avro"
    if scratch.exists():
        shutil.rmtree(scratch)
    jobs, names = [], []
    for query in queries(version):
        ckpt = scratch / f"{query}-healthy" / "checkpoint"
        for i in range(RUNS):
            job = _job(f"{version}/avro/{query}-healthy/run{i}", query, ckpt, "run")
            job["confs"] = dict(AVRO)
            jobs.append(job)
    writes = len(jobs)
    for query in queries(version):
        ckpt = scratch / f"{query}-healthy" / "checkpoint"
        pristine = ckpt.parent / "pristine"
        for change in _avro_changes():
            job = _job(
                f"{version}/avro/{query}-job-{change}", "job:" + job_spec(query, change), ckpt, "restart"
            )
            job["before_argv"] = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--pristine",
                str(ckpt),
                str(pristine),
            ]
            jobs.append(job)
            names.append((query, change, ckpt))
    results = gf.run_sparklab(version, jobs, "tws-avro", env=env)
    failed = [r for r in results[:writes] if r.get("error")]
    if failed:
        raise RuntimeError(f"tws avro writes failed on {version}: {failed[0]['error']}")
    out_dir = TWS_FIXTURES / f"spark-{version}" / "avro"
    for query in queries(version):
        src = scratch / f"{query}-healthy"
        dest = out_dir / f"{query}-healthy"
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        shutil.copytree(src / "pristine", dest / "checkpoint")
        gf.write_json(
            dest / "scenario.json",
            {
                "schema_version": gf.SCHEMA_VERSION,
                "name": f"{query}-healthy",
                "spark_version": version,
                "query": query,
                "scenario": "healthy",
                "description": "no damage; written with the Avro state encoding (the offsets pin it)",
                "runs": RUNS,
                "confs": AVRO,
                "written_at": str(src / "checkpoint"),
                "restarted_at": str(src / "checkpoint"),
                "damage": [],
                "empty_dirs": gf.empty_dirs(dest),
                "restarts": [],
            },
        )
    records = []
    for (query, change, ckpt), result in zip(names, results[writes:], strict=True):
        records.append(
            {
                "query": query,
                "change": change,
                "job": job_spec(query, change),
                "base": f"avro/{query}-healthy",
                "restarted_at": str(ckpt),
                "spark": version,
                "mode": "micro-batch",
                "result": result,
            }
        )
        err = result.get("error")
        gf.log(
            f"   avro {query}-job-{change} on {version}: started={result['started']} "
            f"error={(err or {}).get('message', '')[:160]!r}"
        )
    gf.write_json(out_dir.parent / "avro-jobs.json", records)
    specs = sorted({job_spec(q, c) for q in queries(version) for c in _avro_changes()})
    probe_line(version, specs, "avro-job-facts.json")


def _pristine(ckpt: Path, pristine: Path) -> None:
    """Before an Avro restart: keep the checkpoint as written (the first time), then put it back."""
    if not pristine.exists():
        shutil.copytree(ckpt, pristine)
    if ckpt.exists():
        shutil.rmtree(ckpt)
    shutil.copytree(pristine, ckpt)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--install"]:
        install(Path(argv[1]), Path(argv[2]))
        return 0
    if argv[:1] == ["--pristine"]:
        _pristine(Path(argv[1]), Path(argv[2]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="+", choices=LINES)
    parser.add_argument("--repair-only", action="store_true")
    parser.add_argument("--no-repair", action="store_true")
    parser.add_argument("--jobs", action="store_true", help="only the changed-code restarts and job facts")
    parser.add_argument("--probe-only", action="store_true", help="only the job facts")
    parser.add_argument("--avro", action="store_true", help="only the Avro bases and their changed jobs")
    args = parser.parse_args(argv)
    for version in args.versions:
        if args.avro:
            avro_line(version)
            continue
        if args.probe_only:
            probe_line(version)
            continue
        if args.jobs:
            jobs_line(version)
            continue
        if not args.repair_only:
            write_line(version)
        if not args.no_repair:
            repair_line(version)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
