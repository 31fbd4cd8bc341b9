"""Read-only commands: inspect, diagnose, explain."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from checkpoint_doctor.cli.app import CommandFailed, emit
from checkpoint_doctor.cli.options import (
    diagnosis_options,
    format_option,
    load,
    load_for_verdict,
    matrix_options_from,
    storage_options,
    terminal_width,
    with_kafka_from,
)
from checkpoint_doctor.errors import UsageError


@click.command("inspect")
@click.argument("checkpoint")
@format_option
@click.option("--deep", is_flag=True, help="Parse every log file, not only what a restart reads.")
@click.option(
    "--sink-path", metavar="PATH", help="Output path of a file sink, to read its _spark_metadata log."
)
@storage_options
def inspect_command(
    checkpoint: str,
    output_format: str,
    deep: bool,
    sink_path: str | None,
    storage_option: Sequence[str],
) -> None:
    """Show everything in a checkpoint: logs, latest batch, confs, state, debris, timeline."""
    from checkpoint_doctor.diagnosis.inspection import InspectReport
    from checkpoint_doctor.render.inspect import render_inspect
    from checkpoint_doctor.render.layout import json_document, layout

    snapshot = load(checkpoint, storage_option, deep=deep, sink_path=sink_path)
    report = InspectReport.of(snapshot)
    if output_format == "json":
        emit(json_document("inspect", report.to_json()))
        return
    with layout(terminal_width()):
        emit(render_inspect(report))


@click.command("diagnose")
@click.argument("checkpoint")
@diagnosis_options
@click.option("--deep", is_flag=True, help="Parse every log file, not only what a restart reads.")
@format_option
@storage_options
def diagnose_command(
    checkpoint: str, deep: bool, output_format: str, storage_option: Sequence[str], **kw: Any
) -> None:
    """Predict what Spark does on restart, for every Spark line and plausible restart mode (the
    restart matrix; --spark and --mode narrow it), and list findings with stable codes."""
    from checkpoint_doctor.cli.options import parse_storage_options
    from checkpoint_doctor.diagnosis.matrix import diagnose_matrix, with_unfinished
    from checkpoint_doctor.errors import NotACheckpointError
    from checkpoint_doctor.render.diagnosis import render_diagnosis, render_matrix
    from checkpoint_doctor.render.hints import Hints
    from checkpoint_doctor.render.layout import json_document, layout

    # A flow directory is told by its path's shape (a request only for that shape); a pipeline's
    # storage root only once the ordinary read found no checkpoint there: a checkpoint's diagnose
    # waits for no listing more (tests/s3/test_request_counts.py).
    flow = flow_target(checkpoint, parse_storage_options(storage_option))
    if flow is not None:
        checkpoint = flow["live_checkpoint"]
    job = kw.get("job")
    if flow is None and job and (":" not in job.rpartition("/")[2] or job.endswith((".yml", ".yaml"))):
        # --job naming a pipeline's spec (or its project directory), not MODULE:FUNCTION: the
        # storage root is judged with that code (the code the next spark-pipelines run runs).
        pipeline = _pipeline_root(checkpoint, storage_option, kw)
        if pipeline is not None:
            _diagnose_pipeline(*pipeline, output_format=output_format, job=job)
            return
    try:
        loaded = load_for_verdict(
            checkpoint,
            storage_option,
            deep=deep,
            sink_path=kw["sink_path"],
            delta_tables=kw["delta_table"] or (),
            kw=kw,
        )
    except NotACheckpointError:
        pipeline = None if flow is not None else _pipeline_root(checkpoint, storage_option, kw)
        if pipeline is None:
            raise
        _diagnose_pipeline(*pipeline, output_format=output_format)
        return
    loaded = with_kafka_from(loaded, kw)
    options = matrix_options_from(kw, loaded)
    result = with_unfinished(diagnose_matrix(loaded.snapshot, options), loaded.unfinished)
    hints = Hints.from_options(kw, storage_option)
    if output_format == "json":
        doc = result.to_dict()
        if flow is not None:
            doc["pipeline_flow"] = flow
        emit(json_document("diagnose", doc))
    else:
        with layout(terminal_width()):
            if flow is not None:
                emit(flow_text(flow))
            if len(result.cells) == 1:
                sink = (result.sink_assumption,) if result.sink_assumption else ()
                emit(render_diagnosis(result.cells[0].diagnosis, hints, result.delta_pairing, sink))
            else:
                emit(render_matrix(result, hints=hints))
            if result.unfinished_applies:
                from checkpoint_doctor.render.changes import render_unfinished

                emit(render_unfinished(result.unfinished_applies, hints))
    if result.exit_code:
        raise CommandFailed(result.exit_code)


def _pipeline_root(
    checkpoint: str, storage_option: Sequence[str], kw: dict[str, Any]
) -> tuple[str, Sequence[str], dict[str, Any]] | None:
    """A Declarative Pipeline's storage root (it holds ``_checkpoints/``): ``(root, lines, options)``;
    anything else: None."""
    from checkpoint_doctor.cli.options import parse_storage_options
    from checkpoint_doctor.pipelines.load import is_storage_root, pipeline_lines
    from checkpoint_doctor.reading.storage.urls import normalize_url

    options = parse_storage_options(storage_option)
    url = normalize_url(checkpoint).rstrip("/")
    if is_storage_root(url, options):
        return url, pipeline_lines(kw.get("spark_version") or ()), options
    return None


def flow_target(checkpoint: str, options: dict[str, Any]) -> dict[str, Any] | None:
    """A Declarative Pipeline's flow directory (``.../_checkpoints/<c>/<s>/<t>/<f>``, no version):
    what it is and its live version (the largest number); anything else: None."""
    from checkpoint_doctor.pipelines.layout import flow_dir_parts, is_version, live_of
    from checkpoint_doctor.reading.storage import open_storage
    from checkpoint_doctor.reading.storage.urls import normalize_url

    url = normalize_url(checkpoint).rstrip("/")
    parts = flow_dir_parts(url)
    if parts is None:
        return None
    try:
        names = open_storage(url, options).subdirs()
    except Exception:  # noqa: BLE001 - unreadable: the ordinary read says why
        return None
    live = live_of(names)
    if live is None:
        return None
    root, catalog, schema, table, flow = parts
    versions = sorted((n for n in names if is_version(n)), key=int)
    return {
        "pipeline": root,
        "catalog": catalog,
        "schema": schema,
        "table": table,
        "flow": flow,
        "pipeline_flow": f"{table}/{flow}",
        "version": live,
        "versions": versions,
        "history": versions[:-1],
        "live_checkpoint": f"{url}/{live}",
    }


def flow_text(flow: dict[str, Any]) -> str:
    history = flow["history"]
    older = f"; {', '.join(history)} older, never read again" if history else ""
    return (
        f"Pipeline flow {flow['pipeline_flow']}: version {flow['version']} is live (the largest number, "
        f"the one spark-pipelines reads{older})\n"
    )


def _diagnose_pipeline(
    root: str, lines: Sequence[str], options: dict[str, Any], *, output_format: str, job: str | None = None
) -> None:
    from checkpoint_doctor.api import diagnose_pipeline
    from checkpoint_doctor.exit_codes import ExitCode
    from checkpoint_doctor.render.layout import json_document, layout
    from checkpoint_doctor.render.pipeline import render_pipeline

    # The Python API's answer, printed: the CLI and the API judge a pipeline alike.
    reports = diagnose_pipeline(root, spark=lines, storage_options=options, job=job)
    code = pipeline_exit_code(reports)
    if output_format == "json":
        emit(json_document("diagnose", pipeline_json(reports)))
    else:
        with layout(terminal_width()):
            emit(render_pipeline(reports, job))
    if code:
        raise CommandFailed(ExitCode(code))


def pipeline_json(reports: Sequence[Any]) -> dict[str, Any]:
    """The JSON of a pipeline judged on each line: the root, and per line the run and its flows."""
    first = reports[0]
    return {
        "pipeline": first.root,
        "warehouse": first.warehouse,
        "lines": [
            {k: v for k, v in r.to_dict().items() if k not in ("pipeline", "warehouse")} for r in reports
        ],
    }


def pipeline_exit_code(reports: Sequence[Any]) -> int:
    """4 when a flow fails on a line judged, 1 for a warning, else 0 (the exit-code bits)."""
    from checkpoint_doctor.diagnosis.codes import ERROR, WARNING

    severities = {f.severity for r in reports for f in r.verdict.findings}
    return 4 if ERROR in severities else 1 if WARNING in severities else 0


@click.command("explain")
@click.argument("code", required=False)
@click.option("--list", "list_codes", is_flag=True, help="List every finding code: slug, severity, title.")
@format_option
def explain_command(code: str | None, list_codes: bool, output_format: str) -> None:
    """Explain a finding code: what Spark does, why it breaks, what to do, what to search for
    (--list: every code)."""
    from dataclasses import asdict

    from checkpoint_doctor.diagnosis.codes import CODES, lookup
    from checkpoint_doctor.diagnosis.severity import rule_text
    from checkpoint_doctor.render.explain import code_rows, render_code_list, render_explain
    from checkpoint_doctor.render.layout import json_document, layout

    if list_codes:
        if code is not None:
            raise UsageError("explain takes a CODE or --list, not both", hint="drop one of them")
        rows = code_rows(CODES.values())
        with layout(terminal_width()):
            emit(
                json_document("explain", {"codes": rows})
                if output_format == "json"
                else render_code_list(rows)
            )
        return
    if code is None:
        raise UsageError(
            "explain needs a finding CODE", hint="checkpoint-doctor explain --list names them all"
        )
    info = lookup(code)
    if info is None:
        raise UsageError(f"unknown finding code {code!r}", hint=f"known codes: {', '.join(CODES)}")
    if output_format == "json":
        data = asdict(info)
        data["search"] = list(info.search)
        data["severity_rule"] = rule_text(info.code)
        emit(json_document("explain", data))
        return
    with layout(terminal_width()):
        emit(render_explain(info, rule_text(info.code)))
