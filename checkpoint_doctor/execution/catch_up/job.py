"""The operator's job: ``--job MODULE:FUNCTION`` or ``PATH.py:FUNCTION``, imported and called with a
SparkSession; it must return the job's ``DataStreamWriter``, not started.

Every way this goes wrong is a usage refusal (exit 2) with one line that names the job and what is
wrong, and a next step; the exception stays attached (``__cause__``) for ``--debug``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkpoint_doctor.errors import UsageError
from checkpoint_doctor.execution.catch_up.decisions import catch_up_command, first_line, spark_message_of
from checkpoint_doctor.execution.catch_up.model import CatchUpRefusedError, Refusal, RunFacts
from checkpoint_doctor.spark import exception_text, raised_by_spark, stop_quietly

#: What a job function must return, in the words of the hints.
_SHAPE = "df.writeStream... with source, sink and options, without start() or a checkpointLocation"


@dataclass(frozen=True)
class JobSpec:
    """``--job``: a module (``pkg.mod:build``) or a Python file (``jobs/etl.py:build``) and a function."""

    target: str
    function: str
    is_path: bool

    @property
    def text(self) -> str:
        """Return the spec as the operator wrote it."""
        return f"{self.target}:{self.function}"


def parse_job_spec(spec: str) -> JobSpec:
    """Parse ``MODULE:FUNCTION`` or ``PATH.py:FUNCTION``.

    Raises:
        UsageError: no ``:``, an empty part, or a function name that is not an identifier.
    """
    target, sep, function = spec.rpartition(":")
    if not sep or not target or not function:
        raise UsageError(
            f"--job {spec!r} is not MODULE:FUNCTION or PATH.py:FUNCTION",
            hint="e.g. --job examples.rate_job:build",
        )
    if not function.isidentifier():
        raise UsageError(
            f"--job {spec!r}: {function!r} is not a function name", hint="e.g. --job examples.rate_job:build"
        )
    is_path = target.endswith(".py") or "/" in target or os.sep in target
    if not is_path and not all(part.isidentifier() for part in target.split(".")):
        raise UsageError(
            f"--job {spec!r}: {target!r} is not a module name", hint="use MODULE:FUNCTION or PATH.py:FUNCTION"
        )
    return JobSpec(target, function, is_path)


#: The next step when ``--job`` names nothing importable.
_CHECK_JOB = "check --job (MODULE:FUNCTION with the module importable from the current directory or PYTHONPATH, or PATH.py:FUNCTION)"


def _import_refusal(message: str, next_step: str = _CHECK_JOB) -> CatchUpRefusedError:
    return CatchUpRefusedError(Refusal("job-import", message, next_step, usage=True))


def load_job(spec: JobSpec, *, debug_command: str | None = None) -> Callable[..., Any]:
    """Import the job and return its function.

    A module is imported like ``python -m`` would (the current directory is on the path); a file is
    imported by path with its directory on the path, so it can import its siblings. When the job's
    own code fails on import, the next step is ``debug_command`` (the same run with ``--debug``,
    which prints the traceback).

    Raises:
        CatchUpRefusedError: the module or file cannot be imported, or has no such function (usage).
    """
    what = "job file" if spec.is_path else "job module"
    try:
        module = _import_file(spec.target) if spec.is_path else _import_module(spec.target)
    except CatchUpRefusedError:
        raise
    except (Exception, SystemExit) as exc:  # any failure of the operator's import is reported, not raised
        # First line only: the refusal is one line (a SyntaxError's text is its own first line).
        message = f"cannot import {what} {spec.target!r}: {type(exc).__name__}: {first_line(str(exc))}"
        if _names_the_job(exc, spec):
            raise _import_refusal(message.rstrip(": ")) from exc
        step = (
            f"fix the job's import; its traceback: {debug_command}"
            if debug_command
            else "fix the job's import"
        )
        raise _import_refusal(message.rstrip(": "), step) from exc
    func = getattr(module, spec.function, None)
    if func is None or not callable(func):
        problem = "has no function" if func is None else "has a non-callable"
        raise _import_refusal(f"{what} {spec.target!r} {problem} {spec.function!r}")
    return func


def _names_the_job(exc: BaseException, spec: JobSpec) -> bool:
    """Return whether an import error is about ``--job`` itself (its module or a parent package is
    missing), not about something the job's code imports."""
    if spec.is_path or not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return False
    return spec.target == exc.name or spec.target.startswith(exc.name + ".")


def _import_module(name: str) -> Any:
    _prepend_path(os.getcwd())
    return importlib.import_module(name)


def _import_file(target: str) -> Any:
    path = Path(target).expanduser().resolve()
    if not path.is_file():
        raise _import_refusal(f"job file {target} does not exist")
    _prepend_path(str(path.parent))
    name = "checkpoint_doctor_job_" + re.sub(r"\W", "_", path.stem)
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise _import_refusal(f"cannot import job file {target}: not a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    return module


def _prepend_path(entry: str) -> None:
    if entry not in sys.path:
        sys.path.insert(0, entry)


def build_writer(job: Callable[..., Any], spark: Any, facts: RunFacts) -> Any:
    """Call the job with the session and return its ``DataStreamWriter``.

    Raises:
        CatchUpRefusedError: the job raised, or returned anything else (usage); a started
            ``StreamingQuery`` is stopped first.
    """
    spec = facts.options.job
    try:
        writer = job(spark)
    except Exception as exc:  # the operator's function failing is a refusal, not a crash
        message = spark_message_of(exception_text(exc))
        first = first_line(message)
        debug = catch_up_command(facts.options, facts.checkpoint, debug=True)
        raise CatchUpRefusedError(
            Refusal(
                "job-failed",
                f"job {spec} raised {type(exc).__name__}" + (f": {first}" if first else ""),
                f"fix the job, it must return {_SHAPE}; its traceback: {debug}",
                # An AnalysisException while the job builds its query (a missing table, a bad
                # column) is Spark's refusal: keep its words whole.
                spark_message=(message or None) if raised_by_spark(exc) else None,
                usage=True,
            )
        ) from exc
    kind = type(writer).__name__
    if kind == "DataStreamWriter":  # classic and Spark Connect
        return writer
    extra = ""
    if kind == "StreamingQuery":
        # The job already started a query, with its own options and checkpoint: stop it at once so
        # it does not keep writing next to (or into) the checkpoint being repaired.
        stop_quietly(writer)
        extra = " (the query it started was stopped)"
    raise CatchUpRefusedError(
        Refusal(
            "job-returned",
            f"job {spec} returned {kind}, not a DataStreamWriter{extra}",
            f"make {spec} return {_SHAPE}",
            usage=True,
        )
    )
