"""``--job``: ask a Spark line what the job would run (the I/O edge of the changed-query check).

The job is described in a child process (:mod:`.job_probe`) on the chosen interpreter, the one
that has the Spark line's pyspark: ``--job-python`` (default: this one). It analyses the job's
plan and never starts it, so the operator's checkpoint, sink and sources are not touched. The
child gets a time limit; its time is part of the facts (and printed). Every failure (no pyspark,
no Java, the job cannot be imported or built, the time limit) is a usage error naming the job.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from checkpoint_doctor.diagnosis.changes.facts import JobFacts, job_facts_from_dict
from checkpoint_doctor.errors import MissingDependencyError, UsageError

#: Seconds a description may take (a JVM start is ~10 s on a loaded 2-core machine).
DEFAULT_TIMEOUT_S = 180.0
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def probe_command(python: str, specs: list[str]) -> list[str]:
    """Return the child's command line."""
    return [python, "-m", "checkpoint_doctor.execution.job_probe", *specs]


def describe_jobs(
    specs: list[str], *, python: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
) -> list[JobFacts]:
    """Return the facts of each job, in order, as the interpreter ``python``'s Spark sees them.

    Raises:
        UsageError: a job's file does not exist (said before the child starts), the child failed,
            timed out, or a job could not be built (the message names it).
    """
    from checkpoint_doctor.execution.catch_up.job import parse_job_spec

    for spec in specs:
        # Said before the child starts its JVM (seconds), as the child would say it after.
        job = parse_job_spec(spec)
        if job.is_path and not Path(job.target).expanduser().is_file():
            raise UsageError(
                f"--job {spec}: job file {job.target} does not exist",
                hint="name the job's file (PATH.py:FUNCTION, from the current directory) or its module "
                "(MODULE:FUNCTION)",
            )
    if python is None and importlib.util.find_spec("pyspark") is None:
        # The job runs in a child python: the Spark line's own venv is the usual answer (issue 34).
        raise MissingDependencyError(
            "--job",
            "spark",
            "pyspark",
            or_else="name a python that has it (the Spark line's own) with --job-python PATH",
        )
    exe = python or sys.executable
    env = dict(os.environ)
    # This checkpoint-doctor and the operator's modules (the current directory, as ``python -m``).
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.getcwd(), _PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p
    )
    started = time.monotonic()
    try:
        done = subprocess.run(
            probe_command(exe, specs), capture_output=True, text=True, env=env, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise UsageError(
            f"--job {' '.join(specs)}: Spark did not describe the job within {timeout_s:g} s",
            hint="raise --job-timeout, or check that the job builds its query without waiting on anything",
        ) from exc
    except OSError as exc:
        raise UsageError(
            f"--job-python {exe}: cannot run it: {exc.strerror or exc}", hint="name a python with pyspark"
        ) from exc
    elapsed = time.monotonic() - started
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("[")]
    if done.returncode != 0 or not lines:
        last = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
        # The child's last line is its exception (``pkg.SomeError: message``): keep the message.
        reason = last[-1].strip().split(": ", 1)[-1] if last else f"exit code {done.returncode}"
        raise UsageError(
            f"--job {' '.join(specs)}: Spark could not describe the job ({exe}): {reason}",
            hint="--job-python must name a python with pyspark (and Java on the PATH)",
        )
    entries = json.loads(lines[-1])
    out = []
    for entry in entries:
        if "error" in entry:
            raise UsageError(
                f"--job {entry['job']}: {entry['error']}",
                hint="the function must take a SparkSession and return df.writeStream... not started",
            )
        out.append(job_facts_from_dict(entry["job"], entry["facts"], elapsed))
    return out
