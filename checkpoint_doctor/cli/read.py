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
    from checkpoint_doctor.diagnosis.matrix import diagnose_matrix, with_unfinished
    from checkpoint_doctor.render.diagnosis import render_diagnosis, render_matrix
    from checkpoint_doctor.render.hints import Hints
    from checkpoint_doctor.render.layout import json_document, layout

    loaded = load_for_verdict(
        checkpoint,
        storage_option,
        deep=deep,
        sink_path=kw["sink_path"],
        delta_tables=kw["delta_table"] or (),
        kw=kw,
    )
    loaded = with_kafka_from(loaded, kw)
    options = matrix_options_from(kw, loaded)
    result = with_unfinished(diagnose_matrix(loaded.snapshot, options), loaded.unfinished)
    hints = Hints.from_options(kw, storage_option)
    if output_format == "json":
        emit(json_document("diagnose", result.to_dict()))
    else:
        with layout(terminal_width()):
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
