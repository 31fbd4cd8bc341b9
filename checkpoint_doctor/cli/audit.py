"""``audit``: every checkpoint and file sink output under one or more roots or prefixes, at once."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import click

from checkpoint_doctor.cli.app import EXIT_UNREADABLE, CommandFailed, emit, now_ms
from checkpoint_doctor.cli.options import parse_storage_options, storage_options, write_local_file

#: The same lines as ``diagnose --spark`` (checkpoint_doctor.diagnosis.versions.LINES).
SPARK_LINES = ("3.5", "4.0", "4.1", "4.2", "4.3")


class ProgressBar:
    """A one-line progress bar on a terminal (stderr), redrawn at most ten times a second."""

    WIDTH = 28

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.attention = 0
        self.last = 0.0
        self.drawn = 0

    def __call__(self, done: int, total: int, record: Mapping[str, Any]) -> None:
        if record.get("verdict") not in (None, "ok"):
            self.attention += 1
        now = time.monotonic()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        filled = self.WIDTH * done // max(total, 1)
        line = f"\raudit [{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{total}, {self.attention} need attention"
        self.drawn = max(self.drawn, len(line))
        self.stream.write(line)
        self.stream.flush()

    def close(self) -> None:
        """Erase the bar."""
        if self.drawn:
            self.stream.write("\r" + " " * self.drawn + "\r")
            self.stream.flush()


@click.command("audit")
@click.argument("roots", nargs=-1, required=True, metavar="ROOT-OR-PREFIX...")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Directories audited at once: storage requests in flight (default: 16; 1 when every root is on local disk).")
@click.option("--include", multiple=True, metavar="GLOB", help="Audit only directories whose path (relative to its root) or URL matches (repeatable; * also matches /).")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Leave out directories whose relative path or URL matches (repeatable).")
@click.option("--spark", "spark_version", type=click.Choice(SPARK_LINES), help="Spark line of the restart (default: newest, 4.3).")
@click.option("--mode", type=click.Choice(["micro-batch", "async", "continuous"]), help="Restart mode of every query (default: the mode that wrote each checkpoint).")
@click.option("--live-window", type=click.FloatRange(min=0), default=600.0, show_default=True, metavar="SECONDS", help="A batch planned or a temp file written this recently means a query may be live (0: off).")
@click.option("--format", "output_format", type=click.Choice(["table", "json", "jsonl"]), default="table", show_default=True, help="table: summary; json: one document; jsonl: one record per line, then a summary line.")
@click.option("--html", "html_file", metavar="FILE", help="Also write a self-contained HTML page (summary, a row and a picture of the newest batches per checkpoint).")
@click.option("--on-spark", is_flag=True, help="Distribute the checkpoints over a Spark cluster (needs the 'spark' extra).")
@click.option("--spark-master", metavar="URL", help="Spark master for --on-spark, e.g. local[4] or spark://host:7077 (implies --on-spark).")
@storage_options
def audit_command(
    roots: Sequence[str],
    jobs: int | None,
    include: Sequence[str],
    exclude: Sequence[str],
    spark_version: str | None,
    mode: str | None,
    live_window: float,
    output_format: str,
    html_file: str | None,
    on_spark: bool,
    spark_master: str | None,
    storage_option: Sequence[str],
) -> None:
    """Diagnose every checkpoint under the given roots or prefixes and say which will not restart.

    A directory is a checkpoint when it holds offsets/, commits/ or a metadata file, and a file sink
    output when it holds _spark_metadata/; nested ones are found, Delta tables and other directories
    are skipped with a note. Each root is listed once. Checkpoints get the diagnosis of 'diagnose';
    a sink output is checked on its own (CD404-CD406; pair it with its checkpoint with 'diagnose
    --sink-path' for the cross checks). The exit code is the bitwise OR of the per-directory codes:
    1 warnings, 4 errors, 8 unreadable (16 an internal error on one directory).
    """
    from checkpoint_doctor import __version__
    from checkpoint_doctor.audit.html import render_html
    from checkpoint_doctor.audit.report import audit_document, jsonl_lines, render_audit
    from checkpoint_doctor.audit.runner import (
        DEFAULT_JOBS,
        default_jobs,
        finish,
        fleet_storage_options,
        local_store_for,
        plan_fleet,
        run_tasks,
    )
    from checkpoint_doctor.diagnosis import DiagnoseOptions
    from checkpoint_doctor.inspection import iso_ms
    from checkpoint_doctor.render import json_document

    distributed = on_spark or spark_master is not None
    if distributed:
        from checkpoint_doctor.audit.spark import require_pyspark

        require_pyspark()
    options = fleet_storage_options(roots, parse_storage_options(storage_option), jobs or DEFAULT_JOBS)
    started = now_ms()
    dopts = DiagnoseOptions(spark=spark_version, mode=mode, live_window_s=live_window, now_ms=started)
    plan = plan_fleet(roots, options, include=include, exclude=exclude)
    if distributed:
        from checkpoint_doctor.audit.spark import run_on_spark

        records = run_on_spark(plan.tasks, options, dopts, master=spark_master, jobs=jobs or DEFAULT_JOBS)
    else:
        bar = ProgressBar(sys.stderr) if output_format == "table" and _isatty(sys.stderr) else None
        try:
            records = run_tasks(plan.tasks, local_store_for(plan), dopts, jobs=jobs or default_jobs(plan), progress=bar)
        finally:
            if bar is not None:
                bar.close()
    result = finish(plan, records)
    args = (result.roots, result.records, result.notes, result.summary)
    if html_file:
        write_local_file(html_file, render_html(*args, generated_at=iso_ms(started), version=__version__), "--html")
    if output_format == "json":
        emit(json_document("audit", audit_document(*args)))
    elif output_format == "jsonl":
        emit(jsonl_lines(*args))
    else:
        emit(render_audit(*args))
    if not result.records:
        raise CommandFailed(
            EXIT_UNREADABLE,
            f"no checkpoint or file sink output found under {', '.join(result.roots)}; check the root or prefix",
        )
    if result.exit_code:
        raise CommandFailed(result.exit_code)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False

