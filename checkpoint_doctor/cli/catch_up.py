"""``catch-up``: run the operator's job until a synchronous restart works (see ``execution.catch_up``).

Runs in the operator's Python with pyspark (the ``spark`` extra). The status line goes to stderr and
is quiet in ``--format json``; stdout carries the verdict (a table, or one JSON document).
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

import click

from checkpoint_doctor.cli.app import CommandFailed, emit, now_ms
from checkpoint_doctor.cli.options import (
    format_option,
    live_window_option,
    parse_storage_options,
    storage_options,
)
from checkpoint_doctor.errors import UsageError

if TYPE_CHECKING:
    from checkpoint_doctor.execution.catch_up import CatchUpRefusedError, CatchUpReport
    from checkpoint_doctor.execution.catch_up.model import CatchUpProgress


@click.command("catch-up")
@click.argument("checkpoint")
@click.option(
    "--job",
    required=True,
    metavar="MODULE:FUNCTION|PATH.py:FUNCTION",
    help="Function that takes a SparkSession and returns the job's DataStreamWriter, not started.",
)
@click.option(
    "--batches",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Batches to run before stopping (async mode).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=1),
    default=300.0,
    show_default=True,
    metavar="SECONDS",
    help="Stop and give up if the batches have not run by then.",
)
@click.option(
    "--mode",
    type=click.Choice(["async", "sync"]),
    default="async",
    show_default=True,
    help="async: async progress tracking with interval 0; sync: re-run the uncommitted batch with Trigger.AvailableNow.",
)
@click.option(
    "--master",
    metavar="URL",
    help="Spark master (default: Spark's own, e.g. spark-defaults.conf or local[*]).",
)
@click.option(
    "--conf", "confs", multiple=True, metavar="KEY=VALUE", help="Spark conf for the session (repeatable)."
)
@live_window_option("Refuse if a batch was planned or a temp file written this recently (0: off).")
@format_option
@storage_options
def catch_up_command(
    checkpoint: str,
    job: str,
    batches: int,
    timeout_s: float,
    mode: str,
    master: str | None,
    confs: Sequence[str],
    live_window: float,
    output_format: str,
    storage_option: Sequence[str],
) -> None:
    """Run the streaming job with async progress tracking (interval 0) until the tail is durable,
    stop it, and re-diagnose for a synchronous restart."""
    from checkpoint_doctor.execution.catch_up import CatchUpOptions, CatchUpRefusedError, run_catch_up
    from checkpoint_doctor.render.layout import json_document

    opts = CatchUpOptions(
        checkpoint=checkpoint,
        job=job,
        mode=mode,
        batches=batches,
        timeout_s=timeout_s,
        master=master,
        confs=_conf_pairs(confs),
        storage_options=parse_storage_options(storage_option),
        live_window_s=live_window,
        now_ms=now_ms(),
    )
    status = None if output_format == "json" else _StatusLine(mode)
    try:
        report = run_catch_up(opts, on_progress=status.update if status else None)
    except CatchUpRefusedError as exc:
        if status:
            status.close()
        _refused(exc, output_format)
    finally:
        # Also before any other error (Spark cannot start, the checkpoint cannot be read): the
        # status line must not be left unfinished in front of the error message.
        if status:
            status.close()
    emit(json_document("catch-up", report.to_dict()) if output_format == "json" else render_catch_up(report))
    if report.exit_code:
        raise CommandFailed(report.exit_code)


def _refused(exc: CatchUpRefusedError, output_format: str) -> NoReturn:
    """Report a refusal: the run (if the query ran) on stdout, the refusal on stderr (and in JSON).

    With ``--debug``, the job's own exception (a failed import or build) is printed with its
    traceback: the refusal's one line is its first line only.
    """
    from checkpoint_doctor.render.layout import json_document

    refusal = exc.refusal
    if output_format == "json":
        run = exc.report.to_dict() if exc.report is not None else None
        error = {"type": "CatchUpRefused", "message": refusal.message, **refusal.to_dict(), "run": run}
        emit(json_document("catch-up", error=error))
    elif exc.report is not None:
        emit(render_catch_up(exc.report))
    ctx = click.get_current_context(silent=True)
    debug = bool(ctx and (ctx.find_root().obj or {}).get("debug"))
    if debug and refusal.usage and exc.__cause__ is not None:
        traceback.print_exception(type(exc.__cause__), exc.__cause__, exc.__cause__.__traceback__)
    raise CommandFailed(
        refusal.exit_code, f"catch-up refused: {refusal.message}\nnext: {refusal.next_step}"
    ) from exc


def _conf_pairs(confs: Sequence[str]) -> tuple[tuple[str, str], ...]:
    out = []
    for item in confs:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(
                f"--conf {item!r} is not KEY=VALUE", hint="e.g. --conf spark.sql.shuffle.partitions=2"
            )
        out.append((key.strip(), value))
    return tuple(out)


class _StatusLine:
    """One status line on stderr: rewritten in place on a terminal, one line per change otherwise."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.tty = sys.stderr.isatty()
        self.width = 0
        self.key: tuple[str, int] | None = None

    def update(self, p: CatchUpProgress) -> None:
        if p.phase == "starting Spark":
            # A whole line even on a terminal: Spark's launcher and the JVM write to the same
            # stderr next (a missing java, log lines before the log level is set).
            self.close()
            click.echo("catch-up: starting Spark", err=True)
            self.key = (p.phase, p.batches)
            return
        done = f"{p.batches}/{p.wanted}" if self.mode == "async" else f"{p.batches}"
        text = f"catch-up: batches {done}, rows {p.rows}, {p.elapsed_s:.0f} s elapsed ({p.phase})"
        if self.tty:
            click.echo("\r" + text.ljust(self.width), nl=False, err=True)
            self.width = max(self.width, len(text))
        elif (p.phase, p.batches) != self.key:
            click.echo(text, err=True)
        self.key = (p.phase, p.batches)

    def close(self) -> None:
        if self.tty and self.width:
            click.echo("", err=True)
            self.width = 0


def render_catch_up(report: CatchUpReport) -> str:
    """Return the verdict as text: what ran, the logs' tail, the synchronous restart, what next."""
    from checkpoint_doctor.diagnosis.versions import at_root
    from checkpoint_doctor.render.diagnosis import render_findings, render_prediction
    from checkpoint_doctor.render.layout import key_values, section

    tail = report.tail
    ids = report.batch_ids
    ran = f"{len(ids)}" + (f" of {report.batches_wanted} wanted" if report.mode == "async" else "")
    before = report.before
    head = key_values(
        [
            ("Checkpoint", report.checkpoint),
            ("Job", f"{report.job} ({report.mode} mode, Spark {report.spark_version})"),
            (
                "Batches run",
                ran + (f": {ids[0]}..{ids[-1]}" if len(ids) > 1 else (f": {ids[0]}" if ids else "")),
            ),
            ("Rows", report.rows),
            # As the JSON has it (CatchUpReport.to_dict): tenths of a second.
            ("Elapsed", f"{round(report.elapsed_s, 1)} s" + (" (timed out)" if report.timed_out else "")),
            ("Offsets tail", ", ".join(map(str, tail.offsets)) or "none"),
            ("Commits tail", ", ".join(map(str, tail.commits)) or "none"),
            ("Durable tail", ("yes: " if tail.durable else "no: ") + tail.why),
            ("Before", f"synchronous restart {at_root(before.prediction.summary, before.checkpoint)}"),
        ]
    )
    after = report.after
    blocks = [
        head,
        "Verdict for a synchronous restart (async progress tracking off):\n"
        + render_prediction(after.prediction, after.checkpoint),
    ]
    if after.findings:
        blocks.append(render_findings(after.findings, after.checkpoint))
    for note in report.notes:
        blocks.append(f"Note: {note}")
    blocks.append(section("Next", f"  {report.next_command}"))
    return "\n\n".join(blocks) + "\n"
