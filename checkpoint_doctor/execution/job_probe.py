"""``python -m checkpoint_doctor.execution.job_probe MODULE:FUNCTION...``: ask Spark what each job
would run, without running it, and print one JSON document (a list, one entry per job) on stdout.

Runs in the interpreter of the Spark line being asked (the runner, :mod:`.job_facts`, starts it
with a time limit, in its own process group). Each job is built in its own session
(``SparkSession.newSession``: the confs one job sets do not leak into the next) and described from
its analysed plan and its writer's fields (:func:`checkpoint_doctor.spark.describe_writer`): no
source is read, no sink or checkpoint is touched, no query is started. A job that cannot be
imported or built is an entry with ``error``.

Read-only by construction, not by trust (issue 31 item 3): while the operator's code is imported
and called, every call that starts a query or writes raises
(:func:`checkpoint_doctor.spark.nothing_starts`), and a query that got started anyway is stopped
and reported. Everything the job (or the JVM) prints goes to stderr: stdout carries the answer
only, so no line a job prints can pass for it.

A child that cannot answer says why on stdout as ``{"fatal": KIND, "message": ...}`` (``no-pyspark``,
``spark-start``), so that an exit of the operator's own code (``os._exit(3)``) is not taken for a
missing pyspark.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import IO, Any

from checkpoint_doctor.errors import MissingDependencyError, SparkStartError
from checkpoint_doctor.execution.catch_up.job import load_job, parse_job_spec
from checkpoint_doctor.spark import (
    SessionOptions,
    StartRefusedError,
    active_queries,
    describe_processors,
    describe_writer,
    exception_text,
    nothing_starts,
    recording_processors,
    require_pyspark,
    spark_session,
    stop_quietly,
)


def _answer_stream() -> IO[str]:
    """Return a stream on the original stdout and point fd 1 (and ``sys.stdout``) at stderr: what
    the job and the JVM print (inherited fds) cannot mix with the answer."""
    sys.stdout.flush()
    answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    return answer


def _error(spec: str, exc: BaseException) -> dict[str, Any]:
    message = getattr(exc, "refusal", None)
    if isinstance(exc, StartRefusedError):  # the runner names the job (``--job SPEC: ...``)
        text = str(exc)
    elif message is not None:
        text = message.message
    else:
        text = f"{type(exc).__name__}: {exception_text(exc)}"
    return {"job": spec, "error": text.strip().splitlines()[0] if text.strip() else type(exc).__name__}


def _load(spec: str) -> tuple[Callable[..., Any] | None, dict[str, Any] | None]:
    """Import the job; return its function or its error entry."""
    try:
        return load_job(parse_job_spec(spec)), None
    except Exception as exc:  # noqa: BLE001 - every failure of the operator's job is a result
        return None, _error(spec, exc)


def _one(spark: Any, spec: str, job: Callable[..., Any], load_s: float) -> dict[str, Any]:
    started = time.monotonic()
    session = None
    try:
        session = spark.newSession()
        # The transformWithState processors it builds: their init declares the state (below).
        with recording_processors() as processors:
            writer = job(session)
    except Exception as exc:  # noqa: BLE001 - every failure of the operator's job is a result
        return _error(spec, exc)
    finally:
        # A query started anyway (a way around the guard): stopped at once, and the job refused.
        started_queries = active_queries(session) if session is not None else []
        for query in started_queries:
            stop_quietly(query)
    kind = type(writer).__name__
    if started_queries or kind == "StreamingQuery":
        if kind == "StreamingQuery":
            stop_quietly(writer)
        return {
            "job": spec,
            "error": f"job {spec} started a streaming query (stopped at once): --job only analyses the "
            "query, return the DataStreamWriter, not started",
        }
    if kind != "DataStreamWriter":
        return {"job": spec, "error": f"job {spec} returned {kind}, not a DataStreamWriter"}
    facts = describe_writer(session, writer)
    describe_processors(session, processors, facts["operators"])
    facts["elapsed_s"] = round(load_s + time.monotonic() - started, 2)
    return {"job": spec, "facts": facts}


def main(argv: list[str]) -> int:
    """Describe each job in ``argv``; print the JSON list; exit 0 (errors are entries)."""
    answer = _answer_stream()

    def say(document: object) -> None:
        answer.write(json.dumps(document) + "\n")
        answer.flush()

    try:
        require_pyspark("--job")
    except MissingDependencyError:
        say({"fatal": "no-pyspark", "message": f"{sys.executable} has no pyspark"})
        return 2
    # Nothing may start from here on, in this process's whole life: not at import, not in the job's
    # function, not from a thread it leaves running while its writer is described.
    with nothing_starts("the job"):
        return _describe(argv, say)


def _describe(argv: list[str], say: Callable[[object], None]) -> int:
    # The jobs are imported before Spark starts: a job that cannot be imported is said in a second,
    # not after a JVM start.
    loaded: list[tuple[str, Callable[..., Any] | None, dict[str, Any] | None, float]] = []
    for spec in argv:
        started = time.monotonic()
        job, error = _load(spec)
        loaded.append((spec, job, error, time.monotonic() - started))
    out: list[dict[str, Any]] = []
    session_s = 0.0
    if any(job is not None for _, job, _, _ in loaded):
        started = time.monotonic()
        opts = SessionOptions("checkpoint-doctor-job-facts", "local[1]", (("spark.ui.enabled", "false"),))
        try:
            with spark_session(opts) as spark:
                session_s = round(time.monotonic() - started, 2)
                for spec, job, error, load_s in loaded:
                    out.append(error if job is None else _one(spark, spec, job, load_s))  # type: ignore[arg-type]
        except SparkStartError as exc:
            say({"fatal": "spark-start", "message": exc.message})
            return 2
    else:
        out = [error for _, _, error, _ in loaded if error is not None]
    for entry in out:
        entry["session_s"] = session_s
    say(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
