"""The ``checkpoint-doctor`` command line: parse arguments, call one core function, render, exit.

Exit codes (fsck style, OR-ed across checkpoints by ``audit``):
0 nothing of warning or error severity; 1 warnings only; 4 an error finding (a restart will fail or
data is at risk); 8 a checkpoint could not be read; 2 usage error; 16 internal error; 130 interrupted.
The ``cli`` package is the only place that prints or exits.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Sequence

import click

from checkpoint_doctor import __version__
from checkpoint_doctor.errors import (
    CheckpointDoctorError,
    MissingDependencyError,
    NotACheckpointError,
    PlanFormatError,
    StorageError,
    UsageError,
)

EXIT_OK = 0
EXIT_WARNINGS = 1
EXIT_USAGE = 2
EXIT_ERRORS = 4
EXIT_UNREADABLE = 8
EXIT_INTERNAL = 16
EXIT_INTERRUPTED = 130

log = logging.getLogger("checkpoint_doctor")


class CommandFailed(Exception):
    """Carries an exit code and a message out of a command (raised only inside this module)."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or "")
        self.code = code
        self.message = message


def exit_code_for(exc: CheckpointDoctorError) -> int:
    """Map a user-actionable error to the exit code contract."""
    if isinstance(exc, (StorageError, NotACheckpointError)):
        return EXIT_UNREADABLE
    if isinstance(exc, (UsageError, PlanFormatError, MissingDependencyError)):
        return EXIT_USAGE
    return EXIT_ERRORS


def emit(text: str) -> None:
    """Write command output to stdout."""
    click.echo(text, nl=not text.endswith("\n"))


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="checkpoint-doctor")
@click.option("--debug", is_flag=True, help="Show tracebacks for internal errors.")
@click.option(
    "--log-level",
    type=click.Choice(["ERROR", "WARNING", "INFO", "DEBUG"], case_sensitive=False),
    default="WARNING",
    envvar="CHECKPOINT_DOCTOR_LOG_LEVEL",
    help="Logging level for messages on stderr.",
)
@click.pass_context
def cli(ctx: click.Context, debug: bool, log_level: str) -> None:
    """Inspect, diagnose and safely repair Spark Structured Streaming checkpoints, without a JVM."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    logging.basicConfig(level=log_level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


def now_ms() -> int:
    """Return the wall clock in epoch millis (the one clock the CLI reads; tests patch it)."""
    import time

    return int(time.time() * 1000)


def _run(args: Sequence[str] | None) -> int:
    try:
        cli.main(args=list(args) if args is not None else None, prog_name="checkpoint-doctor", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except CommandFailed as exc:
        if exc.message:
            click.echo(f"checkpoint-doctor: {exc.message}", err=True)
        return exc.code
    return EXIT_OK


def _format_of(args: Sequence[str]) -> str:
    for i, a in enumerate(args):
        if a == "--format" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--format="):
            return a.partition("=")[2]
    return "table"


def _command_of(args: Sequence[str]) -> str:
    for a in args:
        if not a.startswith("-"):
            return a
    return ""


def _report_error(args: Sequence[str], kind: str, message: str) -> None:
    if _format_of(args) == "json":
        from checkpoint_doctor.render import json_document

        click.echo(json_document(_command_of(args), error={"type": kind, "message": message}))
    click.echo(f"checkpoint-doctor: error: {message}", err=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code (the console script exits with it)."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        return _run(args)
    except click.exceptions.Abort:
        click.echo("checkpoint-doctor: interrupted", err=True)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        click.echo("checkpoint-doctor: interrupted", err=True)
        return EXIT_INTERRUPTED
    except click.exceptions.ClickException as exc:
        exc.show()
        return EXIT_USAGE if isinstance(exc, click.exceptions.UsageError) else exc.exit_code
    except CheckpointDoctorError as exc:
        _report_error(args, type(exc).__name__, str(exc))
        if debug:
            traceback.print_exc()
        return exit_code_for(exc)
    except Exception as exc:  # noqa: BLE001 - the one place that turns bugs into exit code 16
        _report_error(args, "InternalError", f"internal error: {type(exc).__name__}: {exc}")
        if debug:
            traceback.print_exc()
        else:
            click.echo("checkpoint-doctor: rerun with --debug for the traceback", err=True)
        return EXIT_INTERNAL
