"""The project's exception hierarchy.

Every error a user can act on derives from :class:`CheckpointDoctorError` and carries a one-line message
that names what failed, where, and what to do. This module imports nothing from the package.
"""

from __future__ import annotations


class CheckpointDoctorError(Exception):
    """Raised for any failure the user can act on (never for programming errors)."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}; {self.hint}"
        return self.message


class StorageError(CheckpointDoctorError):
    """Raised when the storage behind a checkpoint cannot be used (translated at the storage boundary)."""

    def __init__(self, url: str, op: str, reason: str, *, hint: str | None = None) -> None:
        super().__init__(f"cannot {op} {url}: {reason}", hint=hint)
        self.url = url
        self.op = op
        self.reason = reason


class CheckpointNotFoundError(StorageError):
    """Raised when the checkpoint path does not exist."""


class NotADirectoryStorageError(StorageError):
    """Raised when a directory was expected but the path is a file."""


class AccessDeniedError(StorageError):
    """Raised when the storage refuses access (permissions, bucket policy)."""


class CredentialsError(StorageError):
    """Raised when no usable credentials are available for an object store."""


class EndpointUnreachableError(StorageError):
    """Raised when the storage endpoint cannot be reached (DNS, connection refused, timeout)."""


class TargetExistsError(StorageError):
    """Raised when an exclusive write finds its target already present."""


class FileTooLargeError(StorageError):
    """Raised when a file is larger than the bound a read allows (``size`` is what was seen)."""

    def __init__(self, url: str, size: int, limit: int) -> None:
        super().__init__(
            url,
            "read",
            f"{size} bytes or more, over the {limit}-byte bound for one file",
            hint="no checkpoint file Spark writes is that large; inspect it by hand",
        )
        self.size = size
        self.limit = limit


class NotACheckpointError(CheckpointDoctorError):
    """Raised when a readable directory holds no streaming checkpoint (no metadata, offsets/ or commits/)."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url} is not a Structured Streaming checkpoint: {reason}")
        self.url = url


class MissingDependencyError(CheckpointDoctorError):
    """Raised when an optional feature needs an extra that is not installed."""

    def __init__(self, feature: str, extra: str, module: str, *, or_else: str | None = None) -> None:
        hint = f"install it with: pip install 'checkpoint-doctor[{extra}]'"
        super().__init__(
            f"{feature} needs the '{module}' package, which is not installed",
            hint=f"{hint}, or {or_else}" if or_else else hint,
        )
        self.extra = extra
        self.module = module


class MissingStorageBackendError(MissingDependencyError):
    """Raised when a path's storage cannot be reached because its fsspec backend (s3fs, gcsfs) is
    not installed: the checkpoint could not be read (exit 8, as for any storage that cannot be)."""


class UsageError(CheckpointDoctorError):
    """Raised for invalid arguments detected after parsing (bad storage option, unknown version)."""


class CheckpointParseError(CheckpointDoctorError):
    """Raised by a parser when bytes are not a valid file of the expected kind.

    ``kind`` is a stable machine-readable reason (see :mod:`checkpoint_doctor.model` ``FailureKind``),
    ``line`` the 1-based line number the problem was found on, when there is one.
    """

    def __init__(
        self,
        path: str,
        kind: str,
        reason: str,
        *,
        line: int | None = None,
        version: int | None = None,
        found: str | None = None,
    ) -> None:
        where = f"{path}, line {line}" if line is not None else path
        super().__init__(f"cannot parse {where}: {reason}")
        self.path = path
        self.kind = kind
        self.reason = reason
        self.line = line
        self.version = version
        self.found = found


class PlanFormatError(CheckpointDoctorError):
    """Raised when a plan file is malformed, of a newer format, or points outside its checkpoint."""


class RefusedError(CheckpointDoctorError):
    """Raised when a change is refused and nothing was changed (exit code ``REFUSED``)."""


class ConsentNeededError(RefusedError):
    """Raised when a plan would lose or repeat data and the operator did not consent; ``consents`` are
    the flags that give it (``--accept-duplicates``, ``--accept-data-loss``), every one the plan needs,
    so the CLI can print the whole command that plans it anyway. Nothing was planned."""

    def __init__(self, message: str, consents: tuple[str, ...], *, hint: str) -> None:
        super().__init__(message, hint=hint)
        self.consents = consents


class PreconditionFailedError(RefusedError):
    """Raised when one or more preconditions of a plan do not hold; ``failures`` lists all of them."""

    def __init__(self, failures: tuple[str, ...]) -> None:
        super().__init__(
            f"{len(failures)} precondition(s) failed, nothing was changed: " + "; ".join(failures),
            hint="re-run 'checkpoint-doctor plan' on the current checkpoint",
        )
        self.failures = failures


class PlanMismatchError(RefusedError):
    """Raised when a plan is not what the planner makes for the live checkpoint (stale or edited)."""


class LockHeldError(RefusedError):
    """Raised when another apply or undo holds the checkpoint's lock."""

    def __init__(self, url: str, holder: dict[str, object], hint: str) -> None:
        who = ", ".join(
            f"{k} {holder[k]}" for k in ("what", "pid", "host", "since_ms") if holder.get(k) is not None
        )
        super().__init__(
            f"another checkpoint-doctor apply or undo holds {url} ({who or 'holder unknown'}); nothing was changed",
            hint=hint,
        )
        self.url = url
        self.holder = holder


class JournalError(CheckpointDoctorError):
    """Raised when an apply journal cannot be read or undone safely."""


class UndoRefusedError(JournalError, RefusedError):
    """Raised when undo refuses (already undone, the checkpoint changed since); nothing was restored."""


class UndoFailedError(CheckpointDoctorError):
    """Raised when an undo fails after it began restoring: the message says the checkpoint is partly
    restored and that running undo again finishes it."""


class ApplyFailedError(CheckpointDoctorError):
    """Raised when an apply fails after it began changing the checkpoint: the message says that the
    checkpoint was changed, which journal holds the record, and the command that undoes it."""


class RunnerError(CheckpointDoctorError):
    """Raised when the catch-up runner cannot run the operator's job."""


class SparkStartError(RunnerError):
    """Raised when Spark cannot start (no Java, a bad master URL or conf): nothing was read or run."""


class SparkExecutorError(SparkStartError):
    """Raised when Spark's executors cannot run checkpoint-doctor's tasks (a package missing from
    their Python environment): nothing was audited."""
