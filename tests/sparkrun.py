"""Run real PySpark from tests: one subprocess per Spark version and batch of jobs.

Spark work runs in the PySpark venvs of ``scripts/spark_envs.py`` (``.spark-envs/pyspark-<v>``,
created by ``scripts/test.sh`` in CI, or on first use here) through the harness
``scripts/sparklab.py``; restarts are built by ``generate_fixtures.restart_job``, so a test
restarts a checkpoint exactly as the recorded oracle did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import generate_fixtures  # noqa: E402
import spark_envs  # noqa: E402

SPARK_VERSIONS = ("3.5.9", "4.3.0")
restart_job = generate_fixtures.restart_job


def spark_python(version: str) -> Path:
    """Return the python of the PySpark venv for a version (created if missing)."""
    return spark_envs.ensure_spark_python(version)


def run_jobs(
    version: str, jobs: list[dict], workdir: Path, timeout_s: int = 1800, env: dict[str, str] | None = None
) -> list[dict]:
    """Run sparklab jobs in one Spark process (``env`` added to its environment); return one result per job."""
    workdir.mkdir(parents=True, exist_ok=True)
    jobs_file = workdir / f"jobs-{version}.json"
    results_file = workdir / f"results-{version}.json"
    jobs_file.write_text(json.dumps(jobs))
    cmd = [str(spark_python(version)), str(SCRIPTS / "sparklab.py"), str(jobs_file), str(results_file)]
    lock = os.environ.get(generate_fixtures.SPARK_LOCK_ENV)
    if lock:
        # The fixture script's rule: on a shared machine every sparklab process holds the lock file.
        cmd = ["flock", lock, *cmd]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**os.environ, **(env or {})},
    )
    if proc.returncode != 0 or not results_file.exists():
        raise AssertionError(f"sparklab failed ({proc.returncode}): {proc.stderr[-3000:]}")
    results = json.loads(results_file.read_text())
    assert len(results) == len(jobs)
    return results


def error_text(result: dict) -> str:
    """Return the error message and streaming log lines of a sparklab result."""
    return (result.get("error") or {}).get("message", "") + "\n" + "\n".join(result.get("log") or [])
