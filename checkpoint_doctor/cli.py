"""The ``checkpoint-doctor`` command line: parse arguments, call one core function, render, exit.

Exit codes (fsck style, OR-ed across checkpoints by ``audit``):
0 nothing of warning or error severity; 1 warnings only; 4 an error finding (a restart will fail or
data is at risk); 8 a checkpoint could not be read; 2 usage error; 16 internal error; 130 interrupted.
This is the only module that prints or exits.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

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

F = TypeVar("F", bound=Callable[..., Any])
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


def format_option(func: F) -> F:
    """Add ``--format table|json``."""
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(["table", "json"]),
        default="table",
        show_default=True,
        help="Output format; json prints one document with a schema_version.",
    )(func)


def storage_options(func: F) -> F:
    """Add repeatable ``--storage-option key=value``."""
    return click.option(
        "--storage-option",
        "storage_option",
        multiple=True,
        metavar="KEY=VALUE",
        help="fsspec storage option, e.g. endpoint_url=http://127.0.0.1:9000 (repeatable).",
    )(func)


def diagnosis_options(func: F) -> F:
    """Add the options that describe the restart (shared by diagnose and plan)."""
    for opt in reversed(
        [
            click.option("--spark", "spark_version", type=click.Choice(["3.5", "4.0", "4.1", "4.2", "4.3"]), help="Spark line of the restart (default: newest, 4.3)."),
            click.option("--mode", type=click.Choice(["micro-batch", "async", "continuous"]), help="Restart mode (default: the mode that wrote the checkpoint)."),
            click.option("--sources", type=click.IntRange(min=1), help="Number of sources of the query, to check offsets against."),
            click.option("--stateful/--stateless", default=None, help="Whether the query has stateful operators (default: inferred from state/)."),
            click.option("--sink-path", metavar="PATH", help="Output path of a file sink, to check its _spark_metadata log."),
            click.option("--live-window", type=click.FloatRange(min=0), default=600.0, show_default=True, metavar="SECONDS", help="A batch planned or a temp file written this recently means a query may be live (0: off)."),
            click.option("--checkpoint-format-version", type=click.IntRange(1, 2), help="spark.sql.streaming.stateStore.checkpointFormatVersion of the restart (4.0/4.1 only)."),
        ]
    ):
        func = opt(func)
    return func


def _diagnose_options(kw: dict[str, Any]) -> Any:
    from checkpoint_doctor.diagnosis import DiagnoseOptions

    return DiagnoseOptions(
        spark=kw["spark_version"],
        mode=kw["mode"],
        sources=kw["sources"],
        stateful=kw["stateful"],
        checkpoint_format_version=kw["checkpoint_format_version"],
        live_window_s=kw["live_window"],
        now_ms=now_ms(),
    )


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


def _parse_storage_options(pairs: Sequence[str]) -> dict[str, Any]:
    from checkpoint_doctor.storage import parse_storage_options

    return parse_storage_options(pairs)


@cli.command("inspect")
@click.argument("checkpoint")
@format_option
@click.option("--deep", is_flag=True, help="Parse every log file, not only what a restart reads.")
@click.option("--sink-path", metavar="PATH", help="Output path of a file sink, to read its _spark_metadata log.")
@storage_options
def inspect_command(
    checkpoint: str,
    output_format: str,
    deep: bool,
    sink_path: str | None,
    storage_option: Sequence[str],
) -> None:
    """Show everything in a checkpoint: logs, latest batch, confs, state, debris, timeline."""
    from checkpoint_doctor.inspection import inspect_report
    from checkpoint_doctor.render import json_document, render_inspect

    snapshot = _load(checkpoint, storage_option, deep=deep, sink_path=sink_path)
    report = inspect_report(snapshot)
    emit(json_document("inspect", report) if output_format == "json" else render_inspect(report))


@cli.command("diagnose")
@click.argument("checkpoint")
@diagnosis_options
@click.option("--deep", is_flag=True, help="Parse every log file, not only what a restart reads.")
@format_option
@storage_options
def diagnose_command(checkpoint: str, deep: bool, output_format: str, storage_option: Sequence[str], **kw: Any) -> None:
    """Predict what Spark does on restart, and list findings with stable codes."""
    from checkpoint_doctor.diagnosis import diagnose
    from checkpoint_doctor.render import json_document, render_diagnosis

    snapshot = _load(checkpoint, storage_option, deep=deep, sink_path=kw["sink_path"])
    result = diagnose(snapshot, _diagnose_options(kw))
    data = result.to_dict()
    emit(json_document("diagnose", data) if output_format == "json" else render_diagnosis(data))
    if result.exit_code:
        raise CommandFailed(result.exit_code)


@cli.command("explain")
@click.argument("code")
@format_option
def explain_command(code: str, output_format: str) -> None:
    """Explain a finding code: what Spark does, why it breaks, what to do, what to search for."""
    from dataclasses import asdict

    from checkpoint_doctor.diagnosis.codes import CODES, lookup
    from checkpoint_doctor.render import json_document, render_explain

    info = lookup(code)
    if info is None:
        raise UsageError(f"unknown finding code {code!r}", hint=f"known codes: {', '.join(CODES)}")
    data = asdict(info)
    data["search"] = list(info.search)
    emit(json_document("explain", data) if output_format == "json" else render_explain(data))


@cli.command("plan")
@click.argument("checkpoint")
@click.option("--strategy", type=click.Choice(["bridge", "quarantine", "rollback", "recreate-metadata", "catch-up"]), help="Prefer this strategy where it applies (default: the safest ranked option).")
@click.option("-o", "--output", "output", metavar="FILE", help="Write the plan JSON to FILE.")
@click.option("--accept-data-loss", is_flag=True, help="Allow options that re-plan batches a sink already committed.")
@click.option("--query-id", metavar="UUID", help="Query id for recreate-metadata (the old id, from driver logs).")
@click.option("--job", metavar="MODULE:FUNCTION", help="The streaming job, recorded in a catch-up step's command.")
@diagnosis_options
@format_option
@storage_options
def plan_command(checkpoint: str, strategy: str | None, output: str | None, accept_data_loss: bool, query_id: str | None, job: str | None, output_format: str, storage_option: Sequence[str], **kw: Any) -> None:
    """Propose a repair plan (read-only): ranked options, consequences, steps, preconditions."""
    from checkpoint_doctor.diagnosis import diagnose
    from checkpoint_doctor.planning import PlanOptions, plan_repair
    from checkpoint_doctor.render import json_document, render_plan

    snapshot = _load(checkpoint, storage_option, deep=False, sink_path=kw["sink_path"])
    dopts = _diagnose_options(kw)
    diagnosis = diagnose(snapshot, dopts)
    plan = plan_repair(snapshot, diagnosis, PlanOptions(strategy=strategy, accept_data_loss=accept_data_loss, query_id=query_id, job=job, diagnose=dopts))
    if output:
        _write_local(output, plan.to_json())
    data = plan.to_dict()
    emit(json_document("plan", data) if output_format == "json" else render_plan(data, output))
    if plan.unresolved:
        raise CommandFailed(EXIT_ERRORS)


def _write_local(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}", hint="choose a writable -o path") from exc


def _read_plan(path: str) -> Any:
    from checkpoint_doctor.planning.plan import RepairPlan

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise UsageError(f"cannot read plan {path}: {exc.strerror or exc}", hint="pass the file written by 'plan -o'") from exc
    return RepairPlan.from_json(text)


@cli.command("apply")
@click.argument("plan_file", metavar="PLAN.json")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--backup-dir", metavar="URI", help="Where backups and the journal go (default: <checkpoint>.checkpoint-doctor/<plan-id>/).")
@click.option("--dry-run", is_flag=True, help="Check every precondition, then stop.")
@format_option
@storage_options
def apply_command(plan_file: str, yes: bool, backup_dir: str | None, dry_run: bool, output_format: str, storage_option: Sequence[str]) -> None:
    """Apply a plan: check preconditions, back up, change, journal, re-diagnose."""
    from checkpoint_doctor.execution.executor import apply_plan, default_backup_url
    from checkpoint_doctor.render import json_document, render_apply, render_plan
    from checkpoint_doctor.storage import open_store

    plan = _read_plan(plan_file)
    options = _parse_storage_options(storage_option)
    checkpoint = open_store(plan.checkpoint, options)
    sink = open_store(plan.sink, options) if plan.sink else None
    backup = open_store(backup_dir or default_backup_url(checkpoint.url, plan.plan_id), options)

    def confirm(p: Any) -> bool:
        if yes:
            return True
        if not sys.stdin.isatty():
            raise UsageError("apply changes the checkpoint and needs confirmation", hint="pass --yes when not on a terminal")
        click.echo(render_plan(p.to_dict(), None), err=True)
        return click.confirm(f"Apply plan {p.plan_id} to {p.checkpoint}?", default=False, err=True)

    result = apply_plan(plan, checkpoint, sink=sink, backup=backup, now_ms=now_ms(), dry_run=dry_run, confirm=None if dry_run else confirm)
    data = result.to_dict()
    emit(json_document("apply", data) if output_format == "json" else render_apply(data))
    if not dry_run and result.steps_done == 0 and result.journal_url is None and plan.executable_steps:
        raise CommandFailed(EXIT_USAGE, "not applied: confirmation declined")
    if result.after is not None and result.after.exit_code:
        raise CommandFailed(result.after.exit_code)


@cli.command("undo")
@click.argument("journal")
@click.option("--force", is_flag=True, help="Undo even if the checkpoint changed since the apply.")
@format_option
@storage_options
def undo_command(journal: str, force: bool, output_format: str, storage_option: Sequence[str]) -> None:
    """Restore exactly what an apply changed, from its journal (journal.jsonl) and backups."""
    from checkpoint_doctor.execution.executor import undo_journal
    from checkpoint_doctor.render import json_document, render_undo
    from checkpoint_doctor.storage import open_store

    options = _parse_storage_options(storage_option)
    location = journal[: -len("/journal.jsonl")] if journal.endswith("/journal.jsonl") else journal
    result = undo_journal(open_store(location, options), lambda url: open_store(url, options), force=force)
    data = result.to_dict()
    emit(json_document("undo", data) if output_format == "json" else render_undo(data))


def now_ms() -> int:
    """Return the wall clock in epoch millis (the one clock the CLI reads; tests patch it)."""
    import time

    return int(time.time() * 1000)


def _load(checkpoint: str, storage_option: Sequence[str], *, deep: bool, sink_path: str | None) -> Any:
    from checkpoint_doctor.loading import load_checkpoint

    snapshot = load_checkpoint(
        checkpoint,
        storage_options=_parse_storage_options(storage_option),
        depth="deep" if deep else "default",
        sink_path=sink_path,
    )
    if not snapshot.is_checkpoint:
        raise NotACheckpointError(snapshot.root, describe_non_checkpoint(snapshot.files, snapshot.dirs))
    return snapshot


def describe_non_checkpoint(files: Sequence[Any], dirs: Sequence[str]) -> str:
    """Say in words why a directory is not a checkpoint."""
    if not files and not dirs:
        return "the directory is empty (no metadata, offsets/ or commits/)"
    if any(d == "_delta_log" or d.endswith("/_delta_log") for d in dirs):
        return "it holds _delta_log/, a Delta table, not a streaming checkpoint"
    if any(d == "_spark_metadata" for d in dirs):
        return "it holds _spark_metadata/, the output of a file sink; pass it with --sink-path"
    return "no metadata file, offsets/ or commits/ directory"


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
