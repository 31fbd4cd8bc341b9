"""The ``checkpoint-doctor`` command line (see :mod:`checkpoint_doctor.cli.app`).

Commands are listed here explicitly; nothing registers itself on import. Each gets the global
options (``--debug``, ``--log-level``, ``-q``, ``-v``), so they work before or after its name.
"""

import click

from checkpoint_doctor.cli.app import cli, main, with_global_options
from checkpoint_doctor.cli.audit import audit_command
from checkpoint_doctor.cli.catch_up import catch_up_command
from checkpoint_doctor.cli.read import diagnose_command, explain_command, inspect_command
from checkpoint_doctor.cli.repair import apply_command, history_command, plan_command, undo_command

#: The ``Examples:`` epilog of each command's ``--help``.
EXAMPLES = {
    "inspect": [
        "checkpoint-doctor inspect ./checkpoint",
        "checkpoint-doctor inspect s3://bucket/ckpt --storage-option endpoint_url=http://127.0.0.1:9000",
        "checkpoint-doctor inspect file:/data/ckpt --deep --format json",
    ],
    "diagnose": [
        "checkpoint-doctor diagnose ./checkpoint",
        "checkpoint-doctor diagnose ./checkpoint --spark 4.3 --mode micro-batch",
        "checkpoint-doctor diagnose ./checkpoint --sink-path ./output --format json",
    ],
    "explain": ["checkpoint-doctor explain CD101", "checkpoint-doctor explain CD103 --format json"],
    "plan": [
        "checkpoint-doctor plan ./checkpoint -o plan.json",
        "checkpoint-doctor plan ./checkpoint --spark 4.3 --mode micro-batch --strategy bridge -o plan.json",
    ],
    "apply": ["checkpoint-doctor apply plan.json --dry-run", "checkpoint-doctor apply plan.json --yes"],
    "undo": ["checkpoint-doctor undo ./checkpoint.checkpoint-doctor/<plan-id>/journal.jsonl"],
    "history": ["checkpoint-doctor history ./checkpoint"],
    "audit": [
        "checkpoint-doctor audit s3://bucket/checkpoints/ --format jsonl > audit.jsonl",
        "checkpoint-doctor audit /data/streams --html s3://reports/audit.html --metrics /var/lib/node_exporter/textfile/checkpoints.prom -q --force",
        "checkpoint-doctor audit s3://bucket/checkpoints/ --on-spark --spark-master yarn",
    ],
    "catch-up": ["checkpoint-doctor catch-up ./checkpoint --job etl.jobs:build"],
}


def _with_examples(command: click.Command) -> click.Command:
    lines = EXAMPLES.get(command.name or "", [])
    if lines and not command.epilog:
        command.epilog = "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)
    return command


for _command in (
    inspect_command,
    diagnose_command,
    explain_command,
    plan_command,
    apply_command,
    undo_command,
    history_command,
    audit_command,
    catch_up_command,
):
    cli.add_command(_with_examples(with_global_options(_command)))

__all__ = ["cli", "main"]
