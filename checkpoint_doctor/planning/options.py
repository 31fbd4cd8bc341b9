"""Repair options and the context strategies propose them from. Pure.

An :class:`Option` is one way to address one finding: the steps, what it addresses, a note, and
either why it is unavailable or what it inherently costs (``loss``, which always needs the
operator's consent). A :class:`Strategy` proposes options for the finding codes it registers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar, cast

from checkpoint_doctor.diagnosis.model import Diagnosis, Finding
from checkpoint_doctor.model import OffsetSeqMetadata
from checkpoint_doctor.planning.preconditions import Precondition
from checkpoint_doctor.planning.request import Cell, PlanOptions
from checkpoint_doctor.planning.steps import Area, QuarantineStep, RemoveDirStep, Step
from checkpoint_doctor.reading.layout import hadoop_crc_path
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot

T = TypeVar("T")


@dataclass(frozen=True)
class Option:
    """One way to address a finding (see module docstring).

    ``restart`` is set for options that change how the query restarts instead of the checkpoint
    (restart on the Spark line that wrote it, or in the mode that wrote it): the planner judges them
    by diagnosing the unchanged checkpoint for that cell.
    """

    strategy: str
    steps: tuple[Step, ...]
    addresses: tuple[str, ...]
    note: str = ""
    unavailable: str | None = None
    loss: str | None = None
    restart: Cell | None = None
    #: What the option relies on outside the checkpoint (a Kafka topic's positions), checked again
    #: at apply time beside the preconditions derived from the steps.
    holds: tuple[Precondition, ...] = ()
    #: What the operator does instead, in this checkpoint's words, when no change the tool makes
    #: repairs the finding (a restart with a Delta source option and a SQL conf): the plan's
    #: "what you can do" for it, before the code's general text.
    manual: str | None = None

    @property
    def executable(self) -> bool:
        """Whether the option changes files (the executor runs it)."""
        return self.unavailable is None and any(s.executable for s in self.steps)

    @property
    def key(self) -> tuple[str, tuple[Step, ...]]:
        """Return what makes two proposals the same option."""
        return (self.strategy, self.steps)


def unavailable(strategy: str, code: str, why: str) -> Option:
    """Return an option that cannot be used, saying why."""
    return Option(strategy, (), (code,), unavailable=why)


#: Steps one option may hold. ``apply`` reads a plan file of 16 MiB at most
#: (``parsing.documents.MAX_DOCUMENT_BYTES``) and a step takes a few hundred bytes there, more with
#: its preconditions: an option of more steps makes a plan ``apply`` refuses (issue 31: a Delta
#: sink txn version of 10^5 made a 150 MB plan, 10^12 exhausted memory while it was made).
MAX_OPTION_STEPS = 10_000


def too_many_steps(strategy: str, code: str, steps: int) -> Option | None:
    """Return the unavailable option for ``steps`` steps when that is more than a plan holds, else
    None: a strategy asks before making its steps, so that their number, any long, is never counted
    out one by one; the planner asks again of every option it is given."""
    if steps <= MAX_OPTION_STEPS:
        return None
    why = (
        f"it takes {steps} file changes, a plan holds {MAX_OPTION_STEPS} at most (apply reads plan files of "
        "16 MiB at most): repair by hand or from a backup"
    )
    return unavailable(strategy, code, why)


@dataclass(frozen=True)
class PlanContext:
    """What a strategy sees: the snapshot, the diagnosis of one target cell, the operator's options."""

    snapshot: CheckpointSnapshot
    diagnosis: Diagnosis
    options: PlanOptions
    #: Shared by the contexts of one plan: what does not depend on the cell is computed once.
    shared: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def once(self, key: str, compute: Callable[[], T]) -> T:
        """Return ``compute()``, computed once per plan for ``key`` (cell-independent results only)."""
        if key not in self.shared:
            self.shared[key] = compute()
        return cast(T, self.shared[key])

    @property
    def cell(self) -> Cell:
        """Return the target cell this diagnosis is for."""
        return Cell(self.diagnosis.spark, self.diagnosis.mode)

    @cached_property
    def pinned(self) -> OffsetSeqMetadata | None:
        """Return the metadata line of the newest readable offsets file that has one."""
        for e in reversed(self.snapshot.offsets.entries):
            if e.record is not None and e.record.metadata is not None:
                return e.record.metadata
        return None

    def conf(self, key: str) -> str | None:
        """Return a SQL conf pinned in the offsets log."""
        return self.pinned.conf_value(key) if self.pinned is not None else None

    @property
    def stateful(self) -> bool:
        """Whether the query is stateful (as told, or from state/ contents)."""
        told = self.options.diagnose.stateful
        if told is not None:
            return told
        return any(op.stores for op in self.snapshot.state.operators)


Propose = Callable[[Finding, PlanContext], list[Option]]


@dataclass(frozen=True)
class Strategy:
    """A registered way to repair: ``name`` (its module), ``family`` (what plans and ``--strategy``
    call it), the finding codes it addresses, and its proposer."""

    name: str
    family: str
    codes: tuple[str, ...]
    propose: Propose


def quarantine(snapshot: CheckpointSnapshot, path: str, reason: str) -> tuple[Step, ...]:
    """Quarantine a checkpoint file with its side files: Hadoop's ``.<name>.crc`` and Spark 4.1+'s
    ``<name>.crc`` checksum file of state files (they travel together)."""
    steps: list[Step] = [QuarantineStep(path=path, reason=reason)]
    crc = snapshot.crc_of(path)
    if crc is not None:
        steps.append(QuarantineStep(path=crc, reason=f"Hadoop checksum of {path}"))
    spark_crc = f"{path}.crc"
    if path.startswith("state/") and snapshot.file(spark_crc) is not None:
        steps.append(QuarantineStep(path=spark_crc, reason=f"Spark checksum of {path}"))
        hadoop = hadoop_crc_path(spark_crc)
        if snapshot.file(hadoop) is not None:
            steps.append(QuarantineStep(path=hadoop, reason=f"Hadoop checksum of {spark_crc}"))
    return tuple(steps)


def emptied_dirs(
    snapshot: CheckpointSnapshot, under: str, removed: set[str], reason: str
) -> tuple[Step, ...]:
    """Return ``remove-dir`` steps, deepest first, for directories below ``under`` that hold no file
    once ``removed`` is gone (and for ``under``'s own subdirectories only, never ``under`` itself)."""
    prefix = under + "/"
    left: set[str] = set()
    for f in snapshot.files:
        if f.path.startswith(prefix) and f.path not in removed:
            parent = f.parent
            while parent.startswith(prefix):
                left.add(parent)
                parent = parent.rpartition("/")[0]
    dirs = [d for d in snapshot.dirs if d.startswith(prefix) and d not in left]
    dirs.sort(key=lambda d: (-d.count("/"), d))
    return tuple(RemoveDirStep(path=d, area=Area.CHECKPOINT, reason=reason) for d in dirs)
