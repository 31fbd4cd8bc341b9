"""``audit``: every checkpoint and file sink output under one or more roots or prefixes, at once."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO

import click

from checkpoint_doctor.cli import app
from checkpoint_doctor.cli.app import CommandFailed, echo_err, emit, invocation, shown
from checkpoint_doctor.cli.audit_jobs import audit_job_options, audit_jobs_for, jobs_text, unmatched_notes
from checkpoint_doctor.cli.options import (
    kafka_options,
    live_window_option,
    normalize_url,
    parse_storage_options,
    spark_option,
    storage_options,
    terminal_width,
)
from checkpoint_doctor.cli.outputs import (
    Destination,
    check_destination,
    check_outside,
    destination_exists,
    write_destination,
)
from checkpoint_doctor.diagnosis.detect import MODES
from checkpoint_doctor.diagnosis.matrix import MatrixOptions
from checkpoint_doctor.diagnosis.options import matrix_options
from checkpoint_doctor.errors import UsageError
from checkpoint_doctor.exit_codes import ExitCode
from checkpoint_doctor.fleet.discovery import TargetKind
from checkpoint_doctor.fleet.kafka import retention_rows
from checkpoint_doctor.fleet.records import OK, ROOT, Record
from checkpoint_doctor.fleet.report import render_audit, summary_line
from checkpoint_doctor.fleet.run import (
    DEFAULT_JOBS,
    AuditResult,
    FleetPlan,
    RecordStream,
    audit_plan,
    audited_stores,
    delta_index,
    finish,
    finish_tallied,
    plan_fleet,
)
from checkpoint_doctor.render.documents import dumps, iso_utc
from checkpoint_doctor.render.hints import Hints
from checkpoint_doctor.render.layout import json_document, layout
from checkpoint_doctor.version import __version__

if TYPE_CHECKING:
    from checkpoint_doctor.fleet.baseline import AuditChanges, Baseline
    from checkpoint_doctor.fleet.jobs import AuditJobs
    from checkpoint_doctor.fleet.kafka import AuditKafka


def now_ms() -> int:
    """The CLI's one clock (:func:`checkpoint_doctor.cli.app.now_ms`), looked up at each call: a
    record's "stopped 3 h ago" is on the clock a test injects there, as every other output is."""
    return app.now_ms()


def _kafka_options(func: Any) -> Any:
    """Add --kafka-bootstrap-servers and --kafka-option (as diagnose has them)."""
    for opt in reversed(kafka_options()):
        func = opt(func)
    return func


class Progress:
    """Progress on a terminal (stderr): the listing of each root, then click's progress bar of the
    directories audited (click.progressbar: redrawn only when its line changes, the cursor hidden
    while it runs, the last state left on its line). Nothing when stderr is not a terminal."""

    WIDTH = 28

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.attention = 0
        self.last = 0.0
        self.drawn = 0
        self.bar: Any = None

    def _draw(self, line: str) -> None:
        line = shown(line)
        self.stream.write("\r" + line.ljust(self.drawn))
        self.drawn = max(self.drawn, len(line))
        self.stream.flush()

    def listing(self, root: str, done: bool, found: int) -> None:
        """Say which root is being listed, then how many entries it holds (a status line, not a bar)."""
        self._draw(f"audit: listed {root}: {found} entries" if done else f"audit: listing {root} ...")

    def __call__(self, done: int, total: int, record: Record) -> None:
        if record.verdict != OK:
            self.attention += 1
        if self.bar is None:
            if self.drawn:  # the listing's status line gives way to the bar
                self.stream.write("\r" + " " * self.drawn + "\r")
                self.drawn = 0
            self.bar = click.progressbar(
                length=total,
                label="audit",
                file=self.stream,
                width=self.WIDTH,
                fill_char="#",
                empty_char=".",
                bar_template="%(label)s [%(bar)s] %(info)s",
                show_percent=False,
                show_pos=False,
                show_eta=False,
                item_show_func=lambda text: text,
            )
            self.bar.__enter__()
        now = time.monotonic()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        self.bar.update(done - self.bar.pos, f"{done}/{total}, {self.attention} need attention")

    def close(self) -> None:
        """End the bar (click leaves its last state on its line) or erase the listing's line."""
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None
        elif self.drawn:
            self.stream.write("\r" + " " * self.drawn + "\r")
            self.stream.flush()
            self.drawn = 0


@click.command("audit")
@click.argument("roots", nargs=-1, required=True, metavar="ROOT-OR-PREFIX...")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    help="Directories audited at once: storage requests in flight (default: 16; 1 when every root is on local disk).",
)
@click.option(
    "--include",
    multiple=True,
    metavar="GLOB",
    help="Audit only directories whose path (relative to its root) or URL matches (repeatable; * also matches /).",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="GLOB",
    help="Leave out directories whose relative path or URL matches (repeatable).",
)
@spark_option
@click.option(
    "--mode",
    type=click.Choice(MODES),
    multiple=True,
    help="Restart mode of every query, repeatable (default: each checkpoint's plausible modes).",
)
@live_window_option()
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json", "jsonl"]),
    default="table",
    show_default=True,
    help="table: summary; json: one document; jsonl: one record per line, then a summary line.",
)
@click.option(
    "--html",
    "html_file",
    metavar="FILE-OR-URL",
    help="Also write a self-contained HTML page (sortable and filterable, a picture of the newest "
    "batches and the next command per checkpoint); a local file or any fsspec URL (s3://...), "
    "checked before the audit starts.",
)
@click.option(
    "--metrics",
    "metrics_file",
    metavar="FILE",
    help="Also write Prometheus metrics (text format, atomically) for node_exporter's textfile "
    "collector, e.g. /var/lib/node_exporter/textfile/checkpoints.prom.",
)
@click.option("--force", is_flag=True, help="Overwrite the --html and --metrics files if they exist.")
@click.option(
    "--baseline",
    "baseline_file",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="A previous audit's --format jsonl (or json) output: also say what changed since (new "
    "failures, resolved ones, time to loss shrinking, directories appeared or gone), in every output; "
    "exit code 64 is OR-ed in when something got worse.",
)
@click.option(
    "--on-spark",
    is_flag=True,
    help="Distribute the checkpoints over a Spark cluster (needs the 'spark' extra).",
)
@click.option(
    "--spark-master",
    metavar="URL",
    help="Spark master for --on-spark, e.g. local[4] or spark://host:7077 (implies --on-spark).",
)
@_kafka_options
@audit_job_options
@storage_options
def audit_command(
    roots: Sequence[str],
    jobs: int | None,
    include: Sequence[str],
    exclude: Sequence[str],
    spark_version: tuple[str, ...],
    mode: tuple[str, ...],
    live_window: float,
    output_format: str,
    html_file: str | None,
    metrics_file: str | None,
    force: bool,
    baseline_file: str | None,
    on_spark: bool,
    spark_master: str | None,
    kafka_bootstrap_servers: str | None,
    kafka_option: Sequence[str],
    loss_horizon: float,
    job_assignments: Sequence[str],
    job_python: str | None,
    job_timeout: float,
    storage_option: Sequence[str],
) -> None:
    """Diagnose every checkpoint under the given roots or prefixes and say which will not restart.

    A directory is a checkpoint when it holds offsets/, commits/ or a metadata file, and a file sink
    output when it holds _spark_metadata/; nested ones are found, Delta tables and other directories
    are skipped with a note. Each root is listed once. Checkpoints get the diagnosis of 'diagnose';
    a sink output is checked on its own and with the checkpoint whose logs prove it is its. With
    --format jsonl each record is written as soon as its directory is audited and a summary line
    comes last; Ctrl-C keeps what was written and exits 130. The exit code is the bitwise OR of the
    per-directory codes: 1 warnings, 4 errors, 8 unreadable (16 an internal error on one directory).

    With --kafka-bootstrap-servers one client reads the live positions of every Kafka checkpoint's
    topics (each topic once) and the audit lists, soonest first, when retention may delete records
    a stopped query has not read; a checkpoint whose broker fails is unreadable (exit code 8) and
    the audit goes on.

    With --job GLOB=MODULE:FUNCTION each checkpoint matching GLOB is judged with the query that will
    restart it, as 'diagnose --job' judges it: Spark analyses every distinct job once (one process
    on --job-python) before the audit starts, and each record names its job.

    With --baseline FILE (the previous run's --format jsonl) the outputs also say what changed since
    it, and exit code 64 is OR-ed in when something got worse: a directory newly fails or is
    unreadable, one is gone, a new one fails, or a Kafka time to loss shrank. Settings a cron job
    sets once (broker, Kafka and storage options, live window) may come from CHECKPOINT_DOCTOR_*
    variables or --config FILE; the output names where each came from.
    """
    from checkpoint_doctor.fleet.run import fleet_storage_options

    storage = parse_storage_options(storage_option)
    run = AuditRun(
        roots=[normalize_url(r) for r in roots],
        output_format=output_format,
        hints=Hints.from_options(
            {
                "spark_version": spark_version,
                "mode": mode,
                "live_window": live_window,
                "kafka_bootstrap_servers": kafka_bootstrap_servers,
                "kafka_option": kafka_option,
                "job_python": job_python,
            },
            storage_option,
        ),
        # Destinations first: a wrong one is said now, not after an hour of auditing.
        html=check_destination(html_file, "--html", storage, force=force) if html_file else None,
        metrics=check_destination(metrics_file, "--metrics", local_only=True, force=force)
        if metrics_file
        else None,
        # Read before the audit starts: a wrong baseline is said now, not after an hour of auditing.
        baseline=_read_baseline(baseline_file) if baseline_file else None,
    )
    run.storage_options = storage
    run.spark_lines = spark_version
    distributed = on_spark or spark_master is not None
    if job_assignments and distributed:
        raise UsageError("--job is not supported with --on-spark", hint="audit with --job on this machine")
    if distributed:
        from checkpoint_doctor.fleet.spark import require_pyspark

        require_pyspark()
    run.kafka = _open_kafka(kafka_bootstrap_servers, kafka_option, distributed)
    # Spark describes every job before anything is listed: a job that cannot be built is said now.
    run.job_facts = audit_jobs_for(job_assignments, job_python, job_timeout)
    options = fleet_storage_options(run.roots, storage, jobs or DEFAULT_JOBS)
    dopts = matrix_options(
        now_ms=run.started,
        spark=spark_version,
        modes=mode,
        live_window_s=live_window,
        loss_horizon_s=loss_horizon,
    )
    run.execute(
        options,
        dopts,
        include=include,
        exclude=exclude,
        jobs=jobs,
        spark_master=spark_master if distributed else None,
        distributed=distributed,
    )
    run.finish()


class AuditRun:
    """One audit from the command line: records written as they finish, the summary last."""

    def __init__(
        self,
        *,
        roots: list[str],
        output_format: str,
        hints: Hints,
        html: Destination | None,
        metrics: Destination | None,
        baseline: Baseline | None = None,
    ) -> None:
        self.roots = roots
        self.baseline = baseline
        self.changes: AuditChanges | None = None
        self.output_format = output_format
        self.hints = hints
        self.html = html
        self.metrics = metrics
        self.started = now_ms()
        # --format jsonl writes each record as it finishes; nothing else asks for them afterwards
        # unless a page, the metrics or a comparison with a baseline are made of them: then the
        # records are not kept and the summary is counted as they go (memory flat in the fleet).
        keep = output_format != "jsonl" or html is not None or metrics is not None or baseline is not None
        self.stream = RecordStream(hints, now_ms, keep=keep)
        self.plan: FleetPlan | None = None
        self.interrupted = False
        self.progress = Progress(sys.stderr) if _isatty(sys.stderr) and not invocation().quiet else None
        self.kafka: AuditKafka | None = None
        self.job_facts: AuditJobs | None = None
        #: Declarative Pipelines' storage roots among the roots, and their verdicts per line.
        self.storage_options: dict[str, Any] = {}
        self.spark_lines: tuple[str, ...] = ()
        self.pipeline_roots: list[str] = []
        self.pipeline_reports: list[Any] = []

    @property
    def records(self) -> list[Record]:
        """The records finished so far (the roots' included)."""
        return self.stream.records

    def _written(self, record: Record) -> None:
        if self.output_format == "jsonl":
            _write_line(dumps(record.to_json(), compact=True))

    def execute(
        self,
        options: Mapping[str, Any],
        dopts: MatrixOptions,
        *,
        include: Sequence[str],
        exclude: Sequence[str],
        jobs: int | None,
        spark_master: str | None,
        distributed: bool,
    ) -> None:
        """List, discover and audit; Ctrl-C stops it and keeps what finished."""
        try:
            self.plan = plan_fleet(
                self.roots,
                options,
                include=include,
                exclude=exclude,
                on_listing=self.progress.listing if self.progress else None,
                # Shipped to Spark executors, a task carries its listing; here each checkpoint
                # is listed when it is audited.
                pruned=not distributed,
            )
            self._pipeline_history()
            # Inside a checkpoint or sink found under the roots (the listing names them): refused
            # before a record is written.
            audited = audited_stores(self.plan)
            for dest in (self.html, self.metrics):
                if dest is not None:
                    check_outside(dest, audited)
            total = len(self.plan.tasks)
            done = 0

            def finished(record: Record) -> None:
                nonlocal done
                self._written(record)
                if record.kind != ROOT:
                    done += 1
                    if self.progress is not None:
                        self.progress(done, total, record)

            if distributed:
                from checkpoint_doctor.fleet.spark import run_on_spark

                for record in self.plan.records:
                    finished(self.stream.add(record))
                # Checkpoints first, then sink outputs, as on this machine (see audit_plan).
                tasks = sorted(self.plan.tasks, key=lambda t: t.kind == TargetKind.SINK)
                # The Delta tables are read for pairing here, once, and shipped with the tasks.
                delta = delta_index(self.plan, jobs or DEFAULT_JOBS)
                for record in run_on_spark(
                    tasks, options, dopts, master=spark_master, jobs=jobs or DEFAULT_JOBS, delta=delta
                ):
                    finished(self.stream.add(record))
                return
            if self.job_facts is not None:
                self.plan.notes.extend(unmatched_notes(self.plan, self.job_facts))
            audit_plan(
                self.plan,
                dopts,
                self.stream,
                jobs=jobs,
                on_record=finished,
                kafka=self.kafka,
                job_facts=self.job_facts,
                release=True,
            )
        except KeyboardInterrupt:
            self.interrupted = True
        finally:
            if self.progress is not None:
                self.progress.close()
            if self.kafka is not None:
                self.kafka.close()

    def _pipeline_history(self) -> None:
        """A Declarative Pipeline's storage root among the roots: each flow's older versions (left by
        full refreshes, never read again: SystemMetadata.getLatestCheckpointDir reads the largest)
        are history, noted and not judged; the flows' live versions are judged as checkpoints."""
        from dataclasses import replace

        from checkpoint_doctor.fleet.records import AuditNote
        from checkpoint_doctor.pipelines.layout import flow_dir_parts
        from checkpoint_doctor.pipelines.load import read_flow_code, read_layout
        from checkpoint_doctor.reading.storage import open_storage

        assert self.plan is not None
        # Each root as the storage layer names it (a relative local path made absolute), once per name.
        urls: dict[str, str] = {}

        def url_of(name: str) -> str:
            if name not in urls:
                urls[name] = open_storage(name, self.storage_options).url.rstrip("/")
            return urls[name]

        for root in self.roots:
            own = [t for t in self.plan.tasks if url_of(t.root) == url_of(root)]
            # Told from the one listing already made (a flow's version below _checkpoints/): a root
            # that is no pipeline costs no request more.
            if not any(flow_dir_parts(t.path.rpartition("/")[0]) for t in own):
                continue
            layout = read_layout(root, self.storage_options)
            if layout is None:
                continue
            self.pipeline_roots.append(root)
            history = {f.version_dir(v): (f, v) for f in layout.flows for v in f.history}
            # The pipeline's own code says which flows are stateful and which are not
            # (read_flow_code): their live versions are judged so, not "assumed stateless".
            code = read_flow_code(root, self.storage_options)
            live = {
                f.version_dir(f.live): code[f.flow].stateful
                for f in layout.flows
                if f.live is not None and f.flow in code
            }
            dropped = []
            for i, task in enumerate(self.plan.tasks):
                if task.path in live and url_of(task.root) == url_of(root):
                    self.plan.tasks[i] = replace(task, stateful=live[task.path])
            own = [t for t in self.plan.tasks if url_of(t.root) == url_of(root)]
            for task in own:
                found = history.get(task.path)
                if found is None:
                    continue
                dropped.append(task)
                flow, version = found
                self.plan.notes.append(
                    AuditNote(
                        task.url,
                        task.root,
                        task.path,
                        "pipeline-history",
                        f"{flow.name} version {version}: history, never read again (version {flow.live} "
                        "is live: Spark reads only the largest number); not judged",
                    )
                )
            self.plan.tasks[:] = [t for t in self.plan.tasks if not any(t is d for d in dropped)]

    def _pipelines(self) -> list[Any]:
        """Each pipeline storage root among the roots, judged on the Spark lines asked (4.1+)."""
        from checkpoint_doctor.pipelines.load import judge_lines, pipeline_lines

        lines = pipeline_lines(self.spark_lines)
        return [
            judge_lines(root, lines, storage_options=self.storage_options) for root in self.pipeline_roots
        ]

    def _with_pipelines(self, code: int) -> int:
        """Judge the pipelines among the roots; OR their exit-code bits into ``code``."""
        if self.pipeline_roots and not self.interrupted:
            from checkpoint_doctor.cli.read import pipeline_exit_code

            self.pipeline_reports = self._pipelines()
            for reports in self.pipeline_reports:
                code |= pipeline_exit_code(reports)
        return code

    def _emit_pipelines(self) -> None:
        from checkpoint_doctor.render.pipeline import render_pipeline

        for reports in self.pipeline_reports:
            emit("\n" + render_pipeline(reports))

    def _extra_json(self) -> dict[str, Any]:
        """The optional keys of the JSON outputs: where settings came from, what changed."""
        extra: dict[str, Any] = {}
        if self.pipeline_reports:
            from checkpoint_doctor.cli.read import pipeline_json

            extra["pipelines"] = [pipeline_json(r) for r in self.pipeline_reports]
        settings = invocation().settings
        if settings:
            extra["settings"] = {s.name: s.to_json() for s in settings}
        if self.changes is not None:
            extra["changes"] = self.changes.to_json()
        return extra

    def _exit_code(self, result: AuditResult) -> int:
        if self.interrupted:
            return ExitCode.INTERRUPTED
        if not result.summary.total:
            return ExitCode.UNREADABLE
        return result.exit_code

    def _write_outputs(self, result: AuditResult, code: int) -> tuple[int, list[str]]:
        """Write --html and --metrics; a failure is said, the page saved elsewhere, and USAGE is
        OR-ed into the exit code (the audit itself is kept)."""
        problems: list[str] = []
        finished = now_ms()
        if self.html is not None and self.interrupted and destination_exists(self.html):
            # Ctrl-C: the page of the last complete audit stays (a partial page replaced it, its
            # header saying exit code 5 while the process said 130).
            problems.append(
                f"--html {self.html.url} kept as it was: the audit was interrupted (a partial page would replace it)"
            )
        elif self.html is not None:
            # Imported when asked for: the page's module is not part of every audit's start.
            from checkpoint_doctor.fleet.html import render_html

            try:
                page = render_html(
                    result.roots,
                    result.records,
                    result.notes,
                    replace(result.summary, exit_code=code),
                    generated_at=iso_utc(self.started),
                    version=__version__,
                    kafka=retention_rows(result.records),
                    changes=self.changes,
                    now_ms=self.started,
                )
                write_destination(self.html, page)
            except UsageError as exc:
                problems.append(str(exc))
        if self.metrics is not None and self.interrupted:
            problems.append(
                f"--metrics {self.metrics.url} not written: the audit was interrupted (a partial audit would hide checkpoints)"
            )
        elif self.metrics is not None:
            from checkpoint_doctor.fleet.metrics import render_metrics

            try:
                text = render_metrics(
                    result.records,
                    result.summary,
                    started_ms=self.started,
                    finished_ms=finished,
                    exit_code=code,
                    changes=self.changes,
                )
                write_destination(self.metrics, text)
            except UsageError as exc:
                problems.append(str(exc))
        if problems and not self.interrupted:
            code |= ExitCode.USAGE
        return code, problems

    def finish(self) -> None:
        """Write the outputs, then the summary (or the document, or the table), then exit."""
        plan = self.plan if self.plan is not None else FleetPlan(roots=list(self.roots))
        if self.stream.keep:
            result = finish(
                plan.roots,
                plan.notes,
                self.records,
                interrupted=self.interrupted,
                delta_reads=plan.delta_reads,
            )
        else:
            result = finish_tallied(
                plan.roots,
                plan.notes,
                self.stream,
                interrupted=self.interrupted,
                delta_reads=plan.delta_reads,
            )
        code = self._with_pipelines(self._exit_code(result))
        if self.baseline is not None:
            from checkpoint_doctor.fleet.baseline import compare

            self.changes = compare(self.baseline, result.records, result.roots, interrupted=self.interrupted)
            if self.changes.worse:
                code |= ExitCode.WORSE
        code, problems = self._write_outputs(result, code)
        summary = replace(result.summary, exit_code=code)
        extra = self._extra_json()
        if self.output_format == "jsonl":
            _write_line(summary_line(result.roots, result.notes, summary, now_ms(), extra=extra))
        elif self.output_format == "json":
            emit(json_document("audit", {**replace(result, summary=summary).to_json(), **extra}))
        else:
            with layout(terminal_width()):
                emit(
                    render_audit(
                        result.roots, result.records, result.notes, summary, verbose=invocation().verbose > 0
                    )
                )
                kafka_text = _kafka_text(result.records)
                if kafka_text:
                    emit(kafka_text)
                self._emit_pipelines()
                if self.job_facts is not None:
                    emit("\n" + jobs_text(self.job_facts, result.records))
                if self.changes is not None:
                    from checkpoint_doctor.fleet.baseline import render_changes

                    emit("\n" + render_changes(self.changes))
                settings = invocation().settings
                if settings:
                    # Where a setting not given as a flag came from (never its value: a Kafka
                    # option may be a password): a cron job's broker is not a mystery.
                    emit("\nSettings not given as flags: " + ", ".join(s.text for s in settings))
        for problem in problems:
            echo_err(f"checkpoint-doctor: error: {problem}")
        if self.interrupted:
            raise CommandFailed(code, "interrupted: the records written so far are kept")
        if not result.summary.total:
            raise CommandFailed(
                code,
                f"no checkpoint or file sink output found under {', '.join(result.roots)}; check the root or prefix",
            )
        if code:
            raise CommandFailed(code)


def _read_baseline(path: str) -> Baseline:
    """Read a previous audit's output (one-line error naming it if unreadable)."""
    from checkpoint_doctor.fleet.baseline import read_baseline

    return read_baseline(path)


def _open_kafka(bootstrap: str | None, pairs: Sequence[str], distributed: bool) -> AuditKafka | None:
    """Return the audit's broker connection (None without --kafka-bootstrap-servers)."""
    if not bootstrap:
        if pairs:
            raise UsageError("--kafka-option needs --kafka-bootstrap-servers", hint="name the broker too")
        return None
    if distributed:
        raise UsageError(
            "--kafka-bootstrap-servers is not supported with --on-spark",
            hint="audit Kafka checkpoints on this machine (without --on-spark)",
        )
    from checkpoint_doctor.fleet.kafka import AuditKafka
    from checkpoint_doctor.world.kafka import parse_options

    return AuditKafka(bootstrap, parse_options(pairs))


def _kafka_text(records: Sequence[Record]) -> str:
    """The countdowns soonest first, then how many Kafka checkpoints were not checked and how."""
    from checkpoint_doctor.fleet.kafka import NOT_CHECKED, not_checked_count, render_retention

    parts = [render_retention(retention_rows(records))]
    unchecked = not_checked_count(records)
    if unchecked:
        parts.append(f"{unchecked} checkpoint(s) read Kafka: {NOT_CHECKED}")
    return "\n".join(p for p in parts if p)


def _write_line(line: str) -> None:
    """Write one JSON Lines line and flush it: a consumer (or a Ctrl-C) sees every finished record."""
    sys.stdout.write(shown(line) + "\n")
    sys.stdout.flush()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
