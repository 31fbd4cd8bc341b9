"""The ``checkpoint-doctor`` command line (see :mod:`checkpoint_doctor.cli.app`).

Commands are listed here explicitly; nothing registers itself on import.
"""

from checkpoint_doctor.cli.app import cli, main
from checkpoint_doctor.cli.audit import audit_command
from checkpoint_doctor.cli.catch_up import catch_up_command
from checkpoint_doctor.cli.read import diagnose_command, explain_command, inspect_command
from checkpoint_doctor.cli.repair import apply_command, plan_command, undo_command

for _command in (
    inspect_command,
    diagnose_command,
    explain_command,
    plan_command,
    apply_command,
    undo_command,
    audit_command,
    catch_up_command,
):
    cli.add_command(_command)

__all__ = ["cli", "main"]
