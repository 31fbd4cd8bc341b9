"""The process exit codes: the one definition (docs/exit-codes.md's table mirrors it; a test keeps
the two equal).

fsck style: the codes that describe a checkpoint are bits, so ``audit`` ORs them over checkpoints
(``5`` = some checkpoint has errors and another only warnings). ``USAGE``, ``REFUSED`` and
``INTERRUPTED`` describe the command itself, never a checkpoint.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What the process exit status means."""

    OK = 0
    """No finding of warning or error severity."""
    WARNINGS = 1
    """Warnings only: every restart that counts starts, but something deserves a look."""
    USAGE = 2
    """The command line, a plan file, an apply journal or an option value is wrong (nothing was read or changed)."""
    ERRORS = 4
    """An error finding: a restart that counts fails, or data is at risk."""
    UNREADABLE = 8
    """A checkpoint (or the storage behind it) could not be read."""
    INTERNAL = 16
    """A bug in checkpoint-doctor (rerun with --debug for the traceback)."""
    REFUSED = 32
    """A change was refused: a precondition failed, an undo was refused, or there was nothing to do."""
    WORSE = 64
    """``audit --baseline``: something got worse since the baseline audit (a directory newly fails
    or is unreadable, one is gone, a new one fails, or a Kafka time to loss shrank); OR-ed in."""
    INTERRUPTED = 130
    """Interrupted (Ctrl-C); what was finished is kept."""

    @property
    def describes_checkpoint(self) -> bool:
        """Whether the code is a checkpoint bit that ``audit`` ORs (0, 1, 4, 8, 16)."""
        return self in (
            ExitCode.OK,
            ExitCode.WARNINGS,
            ExitCode.ERRORS,
            ExitCode.UNREADABLE,
            ExitCode.INTERNAL,
        )
