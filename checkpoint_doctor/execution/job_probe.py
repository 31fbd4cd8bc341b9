"""``python -m checkpoint_doctor.execution.job_probe MODULE:FUNCTION...``: ask Spark what each job
would run, without running it, and print one JSON document (a list, one entry per job) on stdout.

Runs in the interpreter of the Spark line being asked (the runner, :mod:`.job_facts`, starts it
with a time limit). Each job is built in its own session (``SparkSession.newSession``: the confs one
job sets do not leak into the next) and described from its analysed plan and its writer's fields
(:func:`checkpoint_doctor.spark.describe_writer`): no source is read, no sink or checkpoint is
touched, no query is started. A job that cannot be imported or built is an entry with ``error``.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from checkpoint_doctor.execution.catch_up.job import load_job, parse_job_spec
from checkpoint_doctor.spark import (
    SessionOptions,
    describe_writer,
    exception_text,
    require_pyspark,
    spark_session,
    stop_quietly,
)


def _one(spark: Any, spec: str) -> dict[str, Any]:
    started = time.monotonic()
    try:
        job = load_job(parse_job_spec(spec))
        session = spark.newSession()
        writer = job(session)
    except Exception as exc:  # noqa: BLE001 - every failure of the operator's job is a result
        message = getattr(exc, "refusal", None)
        text = message.message if message is not None else f"{type(exc).__name__}: {exception_text(exc)}"
        return {"job": spec, "error": text.strip().splitlines()[0] if text.strip() else type(exc).__name__}
    kind = type(writer).__name__
    if kind != "DataStreamWriter":
        if kind == "StreamingQuery":
            stop_quietly(writer)
        return {"job": spec, "error": f"job {spec} returned {kind}, not a DataStreamWriter"}
    facts = describe_writer(session, writer)
    facts["elapsed_s"] = round(time.monotonic() - started, 2)
    return {"job": spec, "facts": facts}


def main(argv: list[str]) -> int:
    """Describe each job in ``argv``; print the JSON list; exit 0 (errors are entries)."""
    require_pyspark("--job")
    started = time.monotonic()
    opts = SessionOptions("checkpoint-doctor-job-facts", "local[1]", (("spark.ui.enabled", "false"),))
    with spark_session(opts) as spark:
        session_s = round(time.monotonic() - started, 2)
        out = [_one(spark, spec) for spec in argv]
    for entry in out:
        entry["session_s"] = session_s
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
