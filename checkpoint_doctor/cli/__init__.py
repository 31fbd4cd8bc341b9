"""The ``checkpoint-doctor`` command line (see :mod:`checkpoint_doctor.cli.app`).

Commands are listed here explicitly; nothing registers itself on import. Each gets the global
options (``--debug``, ``--log-level``, ``-q``, ``-v``), so they work before or after its name.
"""

import contextlib
import gc
import importlib
from collections.abc import Iterator


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while modules are imported: they build thousands of
    long-lived objects and no garbage, and the collector walked them again and again (a twentieth
    of a verdict's start-up, ``scripts/bench.py --section diagnose``). Restored after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


with _collector_paused():
    import click

    from checkpoint_doctor.cli.app import cli, main, with_global_options

#: Each command and where it lives. A command's module is imported when the command runs (or its
#: help is shown), not at start-up: ``diagnose`` does not pay for the audit's HTML report or the
#: planner (start-up is most of a verdict's time, see ``scripts/bench.py --section diagnose``).
COMMANDS = {
    "inspect": "checkpoint_doctor.cli.read:inspect_command",
    "diagnose": "checkpoint_doctor.cli.read:diagnose_command",
    "explain": "checkpoint_doctor.cli.read:explain_command",
    "plan": "checkpoint_doctor.cli.repair:plan_command",
    "apply": "checkpoint_doctor.cli.repair:apply_command",
    "undo": "checkpoint_doctor.cli.repair:undo_command",
    "history": "checkpoint_doctor.cli.repair:history_command",
    "audit": "checkpoint_doctor.cli.audit:audit_command",
    "catch-up": "checkpoint_doctor.cli.catch_up:catch_up_command",
}

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


_loaded: dict[str, click.Command] = {}


def _load(name: str) -> click.Command | None:
    """Return a command by name, importing its module the first time (with the global options and
    its examples)."""
    if name not in _loaded:
        where = COMMANDS.get(name)
        if where is None:
            return None
        module, _, attr = where.partition(":")
        with _collector_paused():
            command = getattr(importlib.import_module(module), attr)
        _loaded[name] = _with_examples(with_global_options(command))
    return _loaded[name]


cli.names = tuple(COMMANDS)
cli.loader = _load

__all__ = ["cli", "main"]
