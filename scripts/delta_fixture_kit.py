"""What ``scripts/delta_union_fixtures.py`` and ``scripts/delta_txn_fixtures.py`` share: installing a
scenario's parts, naming its tables, the scenario record, and the tool's own repair (``plan
--accept-data-loss`` then ``apply --yes``, run as an operator runs them) before Spark restarts it.

Stdlib only, like the fixture scripts (Spark runs in sparklab, ``generate_fixtures.run_sparklab``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import delta_fixtures as df
import generate_fixtures as gf
import jars


def install(src: Path, dest: Path, parts: Sequence[str]) -> None:
    """Copy the ``parts`` (checkpoint, tables) of a scenario from ``src`` to a fresh ``dest``."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for sub in parts:
        if (src / sub).exists():
            shutil.copytree(src / sub, dest / sub)


def tables(result: dict[str, Any]) -> dict[str, Any]:
    """A sparklab result's described tables by their directory name: sparklab scrubs the job's paths
    to ``<input>`` (``source``; ``source2`` beside it reads ``<input>2``) and ``<sink>``."""
    out = {}
    for key, value in (result.get("tables") or {}).items():
        out[Path(key.replace("<input>", "source").replace("<sink>", "sink")).name] = value
    return out


def problems(results: Sequence[dict[str, Any]]) -> list[str]:
    """The first line of every failed world or run job (recorded as the scenario's generation problems)."""
    return [f"{r['id']}: {r['error']['message'].splitlines()[0]}" for r in results if r.get("error")]


def restart_entry(version: str, query: dict[str, Any], fp: str, **extra: Any) -> dict[str, Any]:
    """One restart of a scenario, its result filled in when Spark has run it."""
    return {
        "spark": version,
        "mode": "micro-batch",
        "query": query["name"],
        "source_options": {},
        "fingerprint": fp,
        **extra,
        "result": None,
    }


def scenario(
    version: str,
    name: str,
    dest: Path,
    query: dict[str, Any],
    *,
    base: str | None,
    description: str,
    query_id: str | None,
    tables_now: dict[str, Any],
    restarts: int = 1,
    generation_problems: Sequence[str] = (),
) -> dict[str, Any]:
    """The ``scenario.json`` of a fixture installed at ``dest`` (restart results not yet run)."""
    release = jars.delta_release(version)
    assert release is not None
    fp = df.fingerprint(dest)
    data: dict[str, Any] = {
        "schema_version": gf.SCHEMA_VERSION,
        "name": name,
        "spark_version": version,
        "kind": "damaged" if base else "base",
        "base": base,
        "description": description,
        "query": query,
        "written_with": {"trigger": "once", "delta_spark": f"io.delta:{release[0]}:{release[1]}"},
        "query_id": query_id,
        "tables": tables_now,
        "facts": gf.compute_facts(dest, query),
        "fingerprint": fp,
        "restarts": [
            restart_entry(version, query, fp, **({"after_restart": i} if i else {})) for i in range(restarts)
        ],
    }
    if generation_problems:
        data["generation_problems"] = list(generation_problems)
    return data


def plan_and_apply(checkpoint: Path, plan_file: Path, *flags: str) -> dict[str, Any]:
    """Plan the tool's repair of ``checkpoint`` (``--accept-data-loss``: what a repair skips or writes
    again is named, and consented to) into ``plan_file``, apply it, and return the plan."""
    py = [sys.executable, "-m", "checkpoint_doctor"]
    env = {**os.environ, "PYTHONPATH": str(gf.REPO)}
    for argv in (
        [
            *py,
            "plan",
            str(checkpoint),
            "--live-window",
            "0",
            "--accept-data-loss",
            *flags,
            "-o",
            str(plan_file),
        ],
        [*py, "apply", str(plan_file), "--yes"],
    ):
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(gf.REPO))
        if proc.returncode != 0:
            raise RuntimeError(
                f"{' '.join(argv)} exited {proc.returncode}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
            )
    return gf.load_json(plan_file)


def copy_job(name: str, src: Path, dest: Path, parts: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """A sparklab world job copying ``src/<a>`` to ``dest/<b>`` for each (a, b): a restart's own copy,
    made in the JVM's run after the damage and before any restart touches it."""
    job = df._world(name, dest, [{"copy": [str(src / a), str(dest / b)]} for a, b in parts])
    job["describe_tables"] = []
    return job


def plan_apply_argv(checkpoint: Path, plan_file: Path) -> list[str]:
    """The command sparklab runs before a restart job (``before_argv``) to plan and apply the tool's
    repair of ``checkpoint`` in the same JVM run: this module's own command line."""
    return [sys.executable, str(Path(__file__).resolve()), "plan-apply", str(checkpoint), str(plan_file)]


def applied_plan(plan_file: Path, result: dict[str, Any]) -> dict[str, Any]:
    """The plan a ``before_argv`` wrote and applied before the restart ``result``.

    Raises:
        RuntimeError: the plan or its apply failed (the restart's error says how).
    """
    if not plan_file.is_file() or (result.get("error") or {}).get("phase") == "start":
        raise RuntimeError(f"{result['id']}: the tool's plan was not applied: {result.get('error')}")
    return gf.load_json(plan_file)


def repair_record(plan: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """What a repair's recording keeps: the plan's strategy and consequences, what Spark did."""
    return {"strategy": plan["strategy"], "expected": plan["expected"], "result": result}


def log_result(result: dict[str, Any], *, rows: bool = False) -> None:
    """One line per restart in the script's log: batches run, tables or rows read, Spark's error."""
    err = result.get("error")
    extra = (
        f" rows={[[s['numInputRows'] for s in b['sources']] for b in result['batches']]}"
        if rows
        else f" tables={result.get('tables')}"
    )
    gf.log(
        f"   {result['id']}: started={result['started']} batches={[b['batchId'] for b in result['batches']]}"
        f"{extra} error={(err['message'].splitlines() or [''])[0][:160] if err else None}"
    )


if __name__ == "__main__":  # pragma: no cover - run by sparklab before a restart (plan_apply_argv)
    if len(sys.argv) != 4 or sys.argv[1] != "plan-apply":
        raise SystemExit("usage: delta_fixture_kit.py plan-apply CHECKPOINT PLAN_FILE")
    plan_and_apply(Path(sys.argv[2]), Path(sys.argv[3]))
