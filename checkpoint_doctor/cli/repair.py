"""Commands that change a checkpoint: plan (read-only), apply, undo."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from checkpoint_doctor.cli.app import EXIT_ERRORS, EXIT_USAGE, CommandFailed, emit, now_ms
from checkpoint_doctor.cli.options import (
    diagnose_options_from,
    diagnosis_options,
    format_option,
    load,
    parse_storage_options,
    storage_options,
    write_local_file,
)
from checkpoint_doctor.errors import UsageError


@click.command("plan")
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

    snapshot = load(checkpoint, storage_option, deep=False, sink_path=kw["sink_path"])
    dopts = diagnose_options_from(kw)
    diagnosis = diagnose(snapshot, dopts)
    plan = plan_repair(snapshot, diagnosis, PlanOptions(strategy=strategy, accept_data_loss=accept_data_loss, query_id=query_id, job=job, diagnose=dopts))
    if output:
        write_local_file(output, plan.to_json(), "-o")
    data = plan.to_dict()
    emit(json_document("plan", data) if output_format == "json" else render_plan(data, output))
    if plan.unresolved:
        raise CommandFailed(EXIT_ERRORS)


def _read_plan(path: str) -> Any:
    from checkpoint_doctor.planning.plan import RepairPlan

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise UsageError(f"cannot read plan {path}: {exc.strerror or exc}", hint="pass the file written by 'plan -o'") from exc
    return RepairPlan.from_json(text)


@click.command("apply")
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
    options = parse_storage_options(storage_option)
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


@click.command("undo")
@click.argument("journal")
@click.option("--force", is_flag=True, help="Undo even if the checkpoint changed since the apply.")
@format_option
@storage_options
def undo_command(journal: str, force: bool, output_format: str, storage_option: Sequence[str]) -> None:
    """Restore exactly what an apply changed, from its journal (journal.jsonl) and backups."""
    from checkpoint_doctor.execution.executor import undo_journal
    from checkpoint_doctor.render import json_document, render_undo
    from checkpoint_doctor.storage import open_store

    options = parse_storage_options(storage_option)
    location = journal[: -len("/journal.jsonl")] if journal.endswith("/journal.jsonl") else journal
    result = undo_journal(open_store(location, options), lambda url: open_store(url, options), force=force)
    data = result.to_dict()
    emit(json_document("undo", data) if output_format == "json" else render_undo(data))


