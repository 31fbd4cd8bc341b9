"""The ``checkpoint-doctor`` command line: parse arguments, call one core function, render, exit.

The exit codes are :class:`~checkpoint_doctor.exit_codes.ExitCode` (the one definition). The
``cli`` package is the only place that prints or exits. A command's JSON document is written by
:func:`main` after the exit code is known, so its ``exit_code`` is the process's; an error in
``--format json`` replaces it with an error document naming the command click parsed.
"""

from __future__ import annotations

import functools
import gc
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click

from checkpoint_doctor.errors import (
    CheckpointDoctorError,
    JournalError,
    MissingDependencyError,
    MissingStorageBackendError,
    NotACheckpointError,
    PlanFormatError,
    RefusedError,
    SparkStartError,
    StorageError,
    UsageError,
)
from checkpoint_doctor.exit_codes import ExitCode
from checkpoint_doctor.version import __version__

LOG_LEVELS = ("ERROR", "WARNING", "INFO", "DEBUG")


class CommandFailed(Exception):
    """Carries an exit code and a message out of a command (raised only inside this package)."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or "")
        self.code = code
        self.message = message


@dataclass
class Invocation:
    """What click parsed for this run that the edges need: the command's name, its output format,
    the global options (given before or after the command), and the document waiting for its exit
    code."""

    command: str = ""
    output_format: str = "table"
    debug: bool = False
    log_level: str | None = None
    quiet: bool = False
    verbose: int = 0
    document: Any = None
    #: The options that came from the environment or the config file, not a flag
    #: (:func:`checkpoint_doctor.cli.settings.setting_sources`).
    settings: tuple[Any, ...] = ()
    #: ``--color``: auto (a terminal, and no NO_COLOR), always or never.
    color: str = "auto"

    @property
    def json(self) -> bool:
        """Whether the command prints a JSON document (``--format json``)."""
        return self.output_format == "json"


_current = Invocation()


def invocation() -> Invocation:
    """Return the current run's invocation (what click parsed)."""
    return _current


def exit_code_for(exc: CheckpointDoctorError) -> int:
    """Map a user-actionable error to the exit code contract."""
    if isinstance(exc, RefusedError):
        return ExitCode.REFUSED
    if isinstance(exc, (StorageError, NotACheckpointError, MissingStorageBackendError)):
        return ExitCode.UNREADABLE
    # A journal undo cannot read is a file named on the command line that is wrong, like a plan file
    # (its refusals, UndoRefusedError, are REFUSED above): nothing was restored.
    if isinstance(exc, (UsageError, PlanFormatError, JournalError, MissingDependencyError, SparkStartError)):
        return ExitCode.USAGE
    return ExitCode.ERRORS


def emit(text: str) -> None:
    """Write command output to stdout; a JSON document waits for the exit code (:func:`main`);
    ``--quiet`` drops table output."""
    from checkpoint_doctor.render.layout import JsonDocument

    if isinstance(text, JsonDocument):
        _current.document = text
        return
    if _current.quiet and not _current.json:
        return
    echo_out(text)


def shown(text: str) -> str:
    """Return text as the terminal may see it: control characters as escapes, credentials in URLs
    masked (:func:`~checkpoint_doctor.redaction.redact`). Every line the CLI prints passes here."""
    from checkpoint_doctor.redaction import redact
    from checkpoint_doctor.render.layout import printable

    return redact(printable(text))


def echo_err(text: str, *, nl: bool = True) -> None:
    """Write a line to stderr through :func:`shown`."""
    click.echo(shown(text), nl=nl, err=True)


def colour_on() -> bool:
    """Whether table output is coloured: ``--color always``, or auto on a terminal without
    ``NO_COLOR`` (https://no-color.org); never for JSON."""
    import os

    if _current.json or _current.color == "never":
        return False
    if _current.color == "always":
        return True
    return not os.environ.get("NO_COLOR") and sys.stdout.isatty()


def _page(text: str) -> bool:
    """Whether output goes through a pager: table output longer than the terminal, on a terminal."""
    import shutil

    if _current.json or not sys.stdout.isatty() or not sys.stdin.isatty():
        return False
    return text.count("\n") >= shutil.get_terminal_size().lines


def echo_out(text: str) -> None:
    """Write to stdout; control characters and what its encoding cannot hold are shown as escapes,
    credentials masked, never a crash; coloured where :func:`colour_on` (after the escaping, so a
    name's own escape sequences never reach the terminal)."""
    from checkpoint_doctor.cli.colour import paint

    text = shown(text)
    colour = colour_on()
    if colour:
        text = paint(text)
    if _page(text):
        # Longer than the terminal: through the operator's PAGER (click's, less by default).
        click.echo_via_pager(text, color=colour)
        return
    try:
        click.echo(text, nl=not text.endswith("\n"), color=colour)
    except UnicodeEncodeError:
        encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
        escaped = text.encode(encoding, "backslashreplace").decode(encoding)
        click.echo(escaped, nl=not escaped.endswith("\n"), color=colour)


def now_ms() -> int:
    """Return the wall clock in epoch millis (the one clock the CLI reads; tests patch it)."""
    import time

    return int(time.time() * 1000)


# ------------------------------------------------------------------------------- global options


def _global_params(*, root: bool) -> list[click.Parameter]:
    """The options every command takes, before or after its name (``--debug inspect`` and
    ``inspect --debug`` are the same)."""
    return [
        click.Option(["--debug"], is_flag=True, default=False, help="Show tracebacks for internal errors."),
        click.Option(
            ["--log-level"],
            type=click.Choice(LOG_LEVELS, case_sensitive=False),
            default=None,
            envvar="CHECKPOINT_DOCTOR_LOG_LEVEL" if root else None,
            help="Logging level for messages on stderr (default WARNING; -v INFO, -vv DEBUG, -q ERROR).",
        ),
        click.Option(
            ["-q", "--quiet"],
            is_flag=True,
            default=False,
            help="No table output, no progress, no hints: the exit code says it (JSON, --html, "
            "--metrics and -o are still written).",
        ),
        click.Option(
            ["-v", "--verbose"],
            count=True,
            help="More detail: every audited record and skipped path in tables, INFO logs (-vv: DEBUG).",
        ),
        click.Option(
            ["--color", "color"],
            type=click.Choice(COLOR_CHOICES, case_sensitive=False),
            default=None,
            help="Colour errors, warnings, STARTS and FAILS: auto (on a terminal, unless NO_COLOR is set), "
            "always or never.",
        ),
    ]


#: The ``--color`` choices (https://no-color.org: NO_COLOR set to anything turns auto off).
COLOR_CHOICES = ("auto", "always", "never")


def _apply_globals(
    debug: bool, log_level: str | None, quiet: bool, verbose: int, color: str | None = None
) -> None:
    _current.color = color.lower() if color else _current.color
    _current.debug = _current.debug or debug
    _current.log_level = log_level.upper() if log_level else _current.log_level
    _current.quiet = _current.quiet or quiet
    _current.verbose = max(_current.verbose, verbose)


def _configure_logging() -> None:
    level = _current.log_level
    if level is None:
        level = (
            "DEBUG"
            if _current.verbose > 1
            else "INFO"
            if _current.verbose
            else "ERROR"
            if _current.quiet
            else "WARNING"
        )
    _LoggingSetup.level = level
    if "logging" in sys.modules:
        _LoggingSetup.apply()
    elif _LoggingSetup not in sys.meta_path:
        # Nothing logs before ``logging`` is imported: it is configured right after it is (by
        # fsspec, botocore, a thread pool...). A local verdict never imports it, and importing
        # it was a twentieth of the verdict's start-up (``scripts/bench.py --section diagnose``).
        sys.meta_path.insert(0, _LoggingSetup)


class _LoggingSetup:
    """The logging configuration of the command line, applied when ``logging`` is imported: a
    meta path finder that hands the import to the standard one and configures logging after."""

    level = "WARNING"

    @classmethod
    def apply(cls) -> None:
        import logging

        from checkpoint_doctor.redaction_filter import RedactingFilter

        logging.basicConfig(
            level=cls.level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s", force=True
        )
        # On the handler, not a logger: botocore's records (Authorization, X-Amz-Security-Token at
        # DEBUG) reach the root handler by propagation, where only handler filters apply.
        for handler in logging.getLogger().handlers:
            handler.addFilter(RedactingFilter())

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> Any:
        """Find ``logging`` as Python does, with a loader that configures it once it has run."""
        if name != "logging":
            return None
        if cls in sys.meta_path:
            sys.meta_path.remove(cls)
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _ConfiguredAfter(spec.loader)  # type: ignore[assignment]
        return spec


class _ConfiguredAfter:
    """The loader of ``logging``, then :meth:`_LoggingSetup.apply` (the module keeps its own loader)."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__loader__ = module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        _LoggingSetup.apply()


def with_global_options(command: click.Command) -> click.Command:
    """Give a command the global options and record what click parsed for it (its name, its
    ``--format``) before its callback runs."""
    from checkpoint_doctor.cli.settings import config_option, setting_sources, with_shared_envvars

    command.params.extend(_global_params(root=False))
    # Defaults for scheduled jobs: --config FILE and CHECKPOINT_DOCTOR_* variables (cli/settings.py).
    command.params.append(config_option())
    with_shared_envvars(command)
    callback = command.callback
    assert callback is not None

    @functools.wraps(callback)
    def wrapped(**kwargs: Any) -> Any:
        ctx = click.get_current_context()
        _apply_globals(
            kwargs.pop("debug"),
            kwargs.pop("log_level"),
            kwargs.pop("quiet"),
            kwargs.pop("verbose"),
            kwargs.pop("color"),
        )
        _current.command = ctx.info_name or command.name or ""
        _current.output_format = str(kwargs.get("output_format") or "table")
        _current.settings = setting_sources(ctx)
        ctx.ensure_object(dict)
        ctx.find_root().ensure_object(dict)["debug"] = _current.debug
        _configure_logging()
        if _process_entry:
            # What is alive now (the modules, the parsed options) lives as long as the process:
            # the collector need not walk it again at every older-generation collection of the
            # command's work (the audit of the bench's synthetic fleet spent 36 ms of its 0.7 s
            # CPU in the collector, 17 ms with it frozen). Only in the console script's process:
            # an in-process caller's garbage of the moment would stay.
            gc.freeze()
        return callback(**kwargs)

    command.callback = wrapped
    return command


#: ``\b`` before a paragraph keeps click from rewrapping it: the completion command is copied whole
#: (issue 36: it broke as ``checkpoint-`` / ``doctor`` at 80 columns).
EXAMPLES = """\b
Examples:
  checkpoint-doctor diagnose s3://bucket/checkpoints/orders
  checkpoint-doctor plan ./ckpt -o plan.json && checkpoint-doctor apply plan.json
  checkpoint-doctor audit s3://bucket/checkpoints/ --format jsonl --html audit.html
  checkpoint-doctor explain CD101

Exit codes: 0 ok, 1 warnings, 4 errors, 8 unreadable, 2 usage, 16 internal, 32 refused,
64 worse than audit --baseline, 130 interrupted (see docs/exit-codes.md).

\b
Shell completion:
  eval "$(_CHECKPOINT_DOCTOR_COMPLETE=bash_source checkpoint-doctor)"
"""


class LazyGroup(click.Group):
    """The command group: its commands are named up front and imported when one is used
    (:data:`checkpoint_doctor.cli.COMMANDS`)."""

    names: tuple[str, ...] = ()
    loader: Callable[[str], click.Command | None] | None = None

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Return the command names in the order ``--help`` lists them."""
        return list(self.names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Return the command, importing its module the first time."""
        return self.loader(cmd_name) if self.loader is not None else None


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EXAMPLES,
    params=_global_params(root=True),
)
@click.version_option(__version__, prog_name="checkpoint-doctor")
def cli(debug: bool, log_level: str | None, quiet: bool, verbose: int, color: str | None) -> None:
    """Inspect, diagnose and safely repair Spark Structured Streaming checkpoints, without a JVM."""
    _apply_globals(debug, log_level, quiet, verbose, color)
    click.get_current_context().ensure_object(dict)["debug"] = _current.debug
    _configure_logging()


# ------------------------------------------------------------------------------------------- main


def _run(args: Sequence[str] | None) -> int:
    try:
        cli.main(
            args=list(args) if args is not None else None,
            prog_name="checkpoint-doctor",
            standalone_mode=False,
        )
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except CommandFailed as exc:
        if exc.message:
            echo_err(f"checkpoint-doctor: {exc.message}")
        return exc.code
    return ExitCode.OK


def _report_error(kind: str, message: str, *, prefix: str = "checkpoint-doctor: error: ") -> None:
    """An error replaces the command's document (JSON) and is said on stderr in one line.

    Masked as a debug log is, not only as a URL (:func:`~checkpoint_doctor.redaction.redact_log`):
    an exception's text may hold a signed request's headers (``'Authorization': b'AWS4-HMAC-SHA256
    Credential=..., Signature=...'``), issue 31 item 7."""
    from checkpoint_doctor.redaction import redact_log
    from checkpoint_doctor.render.layout import json_document

    message = redact_log(message)
    # An error that names an option the operator did not type names where it came from: a cron
    # job's broker from CHECKPOINT_DOCTOR_KAFKA_BOOTSTRAP_SERVERS is not a mystery (never its value).
    sources = [f"{s.flag} from {s.source}" for s in _current.settings if s.flag in message]
    if sources:
        message += f" ({', '.join(sources)})"
    if _current.json and _current.command:
        _current.document = json_document(_current.command, error={"type": kind, "message": shown(message)})
    echo_err(prefix + message)


def _print_traceback() -> None:
    """``--debug``: the traceback of the exception being handled, masked as a debug log is
    (:func:`~checkpoint_doctor.redaction.redact_log`): an exception's text holds what it was given,
    an S3 URL's credentials, a presigned URL's ``X-Amz-Signature``, a broker's password (issue 31
    item 7); ``traceback.print_exc`` printed them as they were."""
    import traceback

    from checkpoint_doctor.redaction import redact_log
    from checkpoint_doctor.render.layout import printable

    click.echo(redact_log(printable(traceback.format_exc())), nl=False, err=True)


def _guarded(args: Sequence[str]) -> int:
    try:
        return _run(args)
    except (click.exceptions.Abort, KeyboardInterrupt):
        _report_error("Interrupted", "interrupted", prefix="checkpoint-doctor: ")
        return ExitCode.INTERRUPTED
    except click.exceptions.ClickException as exc:
        exc.show()
        return ExitCode.USAGE if isinstance(exc, click.exceptions.UsageError) else exc.exit_code
    except CheckpointDoctorError as exc:
        code = exit_code_for(exc)
        _report_error(type(exc).__name__, str(exc))
        if _current.debug:
            _print_traceback()
        return code
    except Exception as exc:  # noqa: BLE001 - the one place that turns bugs into exit code 16
        _report_error("InternalError", f"internal error: {type(exc).__name__}: {exc}")
        if _current.debug:
            _print_traceback()
        else:
            click.echo("checkpoint-doctor: rerun with --debug for the traceback", err=True)
        return ExitCode.INTERNAL


#: Whether the running :func:`main` is the console script's (``argv`` None: the process is the command's).
_process_entry = False


def process_entry() -> bool:
    """Return whether the command runs as the console script's process (not called in-process)."""
    return _process_entry


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code (the console script exits with it).

    A JSON document is printed last, with the exit code this function returns.
    """
    global _current, _process_entry
    from checkpoint_doctor.redaction import forget_secrets

    _current = Invocation()
    _process_entry = argv is None
    forget_secrets()  # a command masks the secrets it was given, not those of one before it
    code = _guarded(list(sys.argv[1:] if argv is None else argv))
    document = _current.document
    if document is not None:
        echo_out(document.final(exit_code=code, generated_at_ms=now_ms()))
    if argv is None and _current.command in READ_ONLY_COMMANDS:
        _exit_now(code)
    return code


#: Commands that read and print, nothing else: the process may end as soon as its output is out.
READ_ONLY_COMMANDS = frozenset({"diagnose", "inspect", "explain"})


def _exit_now(code: int) -> None:
    """End the process (the console script's, ``argv`` None) without the interpreter's teardown:
    clearing every module and collecting them was a tenth of a verdict's instructions (callgrind:
    ``Py_FinalizeEx``, ``scripts/bench.py --section diagnose``). Only when the teardown has nothing
    to do that anyone could see: no atexit callback (a thread pool, a temporary directory, a Spark
    gateway registers one), no other thread, the output flushed; else the process ends as usual."""
    import atexit
    import os
    import threading

    callbacks = getattr(atexit, "_ncallbacks", None)
    if callbacks is None or callbacks() or threading.active_count() > 1:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return  # a closed pipe or stream: the usual exit says so, as it did
    os._exit(code)
