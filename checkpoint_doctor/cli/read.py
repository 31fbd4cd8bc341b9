"""Read-only commands: inspect, diagnose, explain."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from checkpoint_doctor.cli.app import CommandFailed, emit
from checkpoint_doctor.cli.options import (
    diagnose_options_from,
    diagnosis_options,
    format_option,
    load,
    storage_options,
)
from checkpoint_doctor.errors import UsageError


@click.command("inspect")
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

    snapshot = load(checkpoint, storage_option, deep=deep, sink_path=sink_path)
    report = inspect_report(snapshot)
    emit(json_document("inspect", report) if output_format == "json" else render_inspect(report))


@click.command("diagnose")
@click.argument("checkpoint")
@diagnosis_options
@click.option("--deep", is_flag=True, help="Parse every log file, not only what a restart reads.")
@format_option
@storage_options
def diagnose_command(checkpoint: str, deep: bool, output_format: str, storage_option: Sequence[str], **kw: Any) -> None:
    """Predict what Spark does on restart, and list findings with stable codes."""
    from checkpoint_doctor.diagnosis import diagnose
    from checkpoint_doctor.render import json_document, render_diagnosis

    snapshot = load(checkpoint, storage_option, deep=deep, sink_path=kw["sink_path"])
    result = diagnose(snapshot, diagnose_options_from(kw))
    data = result.to_dict()
    emit(json_document("diagnose", data) if output_format == "json" else render_diagnosis(data))
    if result.exit_code:
        raise CommandFailed(result.exit_code)


@click.command("explain")
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


