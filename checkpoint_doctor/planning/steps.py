"""Plan steps: one class per kind. Pure.

Each class owns everything about its kind: its JSON form (:meth:`Step.to_dict`, :func:`parse_step`),
its one-line text (:meth:`Step.describe`), what it changes (:meth:`Step.effect`, used by the
planner's simulation and by the preconditions), how it runs (:meth:`Step.execute`, through the
:class:`StepIO` the executor hands it) and how it is undone (:meth:`Step.undo_action`). A few
places outside ask for a kind and need a look when a kind is added: the planner's consequences
(:mod:`checkpoint_doctor.planning.consequences`: which files a copy restores) and preconditions
(:mod:`checkpoint_doctor.planning.preconditions`: a quarantined or copied file must be unchanged),
and the plan text (:mod:`checkpoint_doctor.render.plan`: a plan of ``run`` steps only applies nothing).

Kinds: ``quarantine`` (move a file into the backup; the checkpoint loses it), ``copy`` (create a file
as a byte copy of another, whose sha256 must still match), ``write`` (create a file with given
content, text or base64), ``remove-dir`` (remove a directory the plan emptied, so a listing does not
show it), ``run`` (an operator action the executor does not perform, e.g. the catch-up run).
"""

from __future__ import annotations

import base64
import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from checkpoint_doctor.digest import sha256_hex
from checkpoint_doctor.errors import PlanFormatError, PreconditionFailedError
from checkpoint_doctor.reading.layout import Area

#: (area, path) of a file or directory a step touches.
Key = tuple[Area, str]
T = TypeVar("T")


def check_relative_path(path: str, *, what: str = "path") -> str:
    """Return ``path`` if it is a safe relative POSIX path inside a root.

    Raises:
        PlanFormatError: for absolute paths, URLs, ``..`` components, backslashes, empty parts.
    """
    if not isinstance(path, str) or not path:
        raise PlanFormatError(f"plan {what} is empty or not a string")
    if "://" in path or path.startswith("/") or "\\" in path or ":" in path.split("/")[0]:
        raise PlanFormatError(
            f"plan {what} {path!r} is not relative to the checkpoint root",
            hint="plans may only name paths inside their checkpoint",
        )
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts) or posixpath.normpath(path) != path:
        raise PlanFormatError(
            f"plan {what} {path!r} leaves or obscures the checkpoint root",
            hint="plans may only name paths inside their checkpoint",
        )
    return path


def parse_area(data: dict[str, Any], what: str) -> Area:
    """Return the ``area`` of a step's or a precondition's JSON form (the checkpoint if absent)."""
    area = data.get("area", Area.CHECKPOINT)
    if area not in tuple(Area):
        raise PlanFormatError(f"unknown {what} area {area!r}")
    return Area(area)


class StepIO(Protocol):
    """What a step needs from storage to run; the executor provides it (planning stays pure)."""

    def read(self, area: Area, path: str) -> bytes:
        """Return a file's bytes."""

    def exists(self, area: Area, path: str) -> bool:
        """Return whether a file exists."""

    def delete(self, area: Area, path: str) -> None:
        """Delete a file."""

    def create(self, area: Area, path: str, data: bytes) -> None:
        """Create a file that must not exist yet."""

    def remove_dir(self, area: Area, path: str) -> None:
        """Remove an empty directory (nothing on object stores)."""

    def make_dir(self, area: Area, path: str) -> None:
        """Create a directory (nothing on object stores)."""


@dataclass(frozen=True)
class Effect:
    """What a step changes: files removed, files added (with their bytes), directories removed."""

    removed: tuple[Key, ...] = ()
    added: tuple[tuple[Key, bytes], ...] = ()
    removed_dirs: tuple[Key, ...] = ()


@dataclass(frozen=True)
class UndoAction:
    """What undo does for one step, decided from the file's current bytes (pure).

    ``action``: ``restore`` (write ``data`` back), ``replace`` (delete what is there, then restore;
    only with force), ``remove`` (delete the created file), ``make-dir``, or ``none`` (already as
    before). ``conflict`` names a file that changed since the apply.
    """

    action: str
    data: bytes | None = None
    conflict: bool = False


@dataclass(frozen=True)
class Step:
    """Base of every step kind (see module docstring). ``reason`` says why the planner chose it."""

    kind: ClassVar[str] = ""
    #: Whether the executor performs the step (``run`` steps are the operator's).
    executable: ClassVar[bool] = True
    #: Whether the step creates a file (it must not exist yet, unless the plan removed it first).
    creates: ClassVar[bool] = False
    #: Whether the step removes a file (a later step may then create the path again: a rewrite).
    removes: ClassVar[bool] = False
    #: Whether the step is about a directory, not a file.
    on_directory: ClassVar[bool] = False
    if TYPE_CHECKING:
        #: Why the planner chose the step: a field of every kind (declared there, with its default).
        reason: str

    def to_dict(self) -> dict[str, Any]:
        """Return the step's JSON form (only the fields of its kind)."""
        raise NotImplementedError

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        """Build a step of this kind from its JSON form, validating its fields.

        Raises:
            PlanFormatError: a bad area, an unsafe path, a missing field.
        """
        raise NotImplementedError

    def describe(self) -> str:
        """Return the step in a few words (plan and dry-run output)."""
        raise NotImplementedError

    @property
    def key(self) -> Key | None:
        """Return the (area, path) the step changes, or None (``run``)."""
        return None

    def effect(self, raw: dict[str, bytes] | Any) -> Effect:
        """Return what the step changes; ``raw`` maps checkpoint paths to the bytes read."""
        return Effect()

    def needs_backup(self) -> bool:
        """Whether apply saves the file before the step runs."""
        return False

    def optional(self) -> bool:
        """Whether a missing file skips the step instead of failing the apply."""
        return False

    def content(self, io: StepIO) -> bytes | None:
        """Return the bytes the step will create, read and verified before anything changes.

        Raises:
            PreconditionFailedError: a copy source changed since the plan was made.
        """
        return None

    def execute(self, io: StepIO, content: bytes | None) -> None:
        """Perform the step."""
        raise NotImplementedError

    def undo_action(self, current: bytes | None, backup: bytes | None, force: bool) -> UndoAction:
        """Decide how to undo the step given the file's current bytes and the verified backup of
        the path (saved by this step, or by an earlier quarantine of the same path)."""
        return UndoAction("none")


@dataclass(frozen=True)
class _PathStep(Step):
    """A step on one path of an area (every kind but ``run``)."""

    path: str = ""
    area: Area = Area.CHECKPOINT
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the step's JSON form."""
        return {"kind": self.kind, "area": self.area, "path": self.path, "reason": self.reason}

    @property
    def key(self) -> Key:
        """Return the path the step changes."""
        return (self.area, self.path)

    @staticmethod
    def path_fields(data: dict[str, Any]) -> dict[str, Any]:
        """Return the validated area, path and reason of a step's JSON form."""
        path = check_relative_path(data.get("path", ""), what="step path")
        return {"area": parse_area(data, "plan step"), "path": path, "reason": str(data.get("reason", ""))}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        """Build the step from its area, path and reason."""
        return cls(**cls.path_fields(data))


@dataclass(frozen=True)
class QuarantineStep(_PathStep):
    """Move a file into the backup location; the checkpoint (or the sink log) loses it.

    ``if_present``: the file may not exist (a sink log entry's Hadoop checksum, which the sink's
    listing does not keep); apply then skips the step. Left behind, such a checksum makes Spark's
    rename of the rewritten entry fail ("Multiple streaming queries are concurrently using").
    """

    kind: ClassVar[str] = "quarantine"
    removes: ClassVar[bool] = True
    if_present: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Return the step's JSON form (``if_present`` only when set)."""
        out = super().to_dict()
        if self.if_present:
            out = {
                **{k: v for k, v in out.items() if k != "reason"},
                "if_present": True,
                "reason": self.reason,
            }
        return out

    def describe(self) -> str:
        """Return the step in a few words."""
        return f"quarantine {self.area}:{self.path}" + (" if present" if self.if_present else "")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        """Build the step (``if_present`` only when it is ``true``)."""
        return cls(**cls.path_fields(data), if_present=data.get("if_present") is True)

    def effect(self, raw: Any) -> Effect:
        """The file is gone."""
        return Effect(removed=(self.key,))

    def needs_backup(self) -> bool:
        """The file is saved first."""
        return True

    def optional(self) -> bool:
        """Whether a missing file skips the step instead of failing the apply."""
        return self.if_present

    def execute(self, io: StepIO, content: bytes | None) -> None:
        """Delete the (already backed up) file."""
        io.delete(self.area, self.path)

    def undo_action(self, current: bytes | None, backup: bytes | None, force: bool) -> UndoAction:
        """Restore the backup unless the file is there again with other bytes."""
        if backup is None:
            return UndoAction("none")  # never backed up, so never removed
        if current is None:
            return UndoAction("restore", backup)
        if sha256_hex(current) == sha256_hex(backup):
            return UndoAction("none")
        return UndoAction("replace" if force else "none", backup, conflict=True)


@dataclass(frozen=True)
class _CreateStep(_PathStep):
    """A step that creates one file (``copy`` and ``write``)."""

    creates: ClassVar[bool] = True

    def expected_sha256(self) -> str | None:
        """Return the sha256 of the bytes the step creates."""
        raise NotImplementedError

    def execute(self, io: StepIO, content: bytes | None) -> None:
        """Create the file exclusively."""
        assert content is not None
        io.create(self.area, self.path, content)

    def undo_action(self, current: bytes | None, backup: bytes | None, force: bool) -> UndoAction:
        """Remove the file if it still holds what the step wrote. ``backup`` is what an earlier
        quarantine of the same path saved: finding those bytes means the step never ran."""
        if current is None:
            return UndoAction("none")
        digest = sha256_hex(current)
        if digest == self.expected_sha256():
            return UndoAction("remove")
        if backup is not None and digest == sha256_hex(backup):
            return UndoAction("none")
        return UndoAction("remove" if force else "none", conflict=True)


@dataclass(frozen=True)
class CopyStep(_CreateStep):
    """Create ``path`` as a byte copy of ``source`` (same area), whose sha256 must still match."""

    kind: ClassVar[str] = "copy"
    source: str = ""
    source_sha256: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the step's JSON form."""
        return {
            "kind": self.kind,
            "area": self.area,
            "path": self.path,
            "source": self.source,
            "source_sha256": self.source_sha256,
            "reason": self.reason,
        }

    def describe(self) -> str:
        """Return the step in a few words."""
        return f"copy {self.source} -> {self.path}"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        """Build the step; the source must be a safe path and its sha256 given."""
        source = check_relative_path(data.get("source") or "", what="copy source")
        digest = data.get("source_sha256")
        if not isinstance(digest, str):
            raise PlanFormatError("copy step without source_sha256")
        return cls(**cls.path_fields(data), source=source, source_sha256=digest)

    def expected_sha256(self) -> str:
        """The copy has the source's bytes."""
        return self.source_sha256

    def effect(self, raw: Any) -> Effect:
        """The copy appears with the source's bytes."""
        return Effect(added=((self.key, raw[self.source]),))

    def content(self, io: StepIO) -> bytes:
        """Read the source and check it is still the one the plan was made from."""
        data = io.read(self.area, self.source)
        if sha256_hex(data) != self.source_sha256:
            raise PreconditionFailedError(
                (f"{self.source} changed since the plan was made (sha256 differs)",)
            )
        return data


@dataclass(frozen=True)
class WriteStep(_CreateStep):
    """Create ``path`` with ``content`` (UTF-8 text, or base64 when ``encoding`` is ``base64``)."""

    kind: ClassVar[str] = "write"
    content_text: str = ""
    encoding: str = "utf-8"

    @staticmethod
    def of_bytes(path: str, data: bytes, reason: str, area: Area = Area.CHECKPOINT) -> WriteStep:
        """Return a write step for arbitrary bytes (text when they are UTF-8 without a BOM)."""
        try:
            text: str | None = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and all(c in "\n\t" or c.isprintable() for c in text):
            return WriteStep(path=path, area=area, reason=reason, content_text=text)
        return WriteStep(
            path=path,
            area=area,
            reason=reason,
            content_text=base64.b64encode(data).decode(),
            encoding="base64",
        )

    @property
    def data(self) -> bytes:
        """Return the bytes the step writes."""
        if self.encoding == "base64":
            return base64.b64decode(self.content_text)
        return self.content_text.encode("utf-8")

    def to_dict(self) -> dict[str, Any]:
        """Return the step's JSON form (``encoding`` only when not text)."""
        out: dict[str, Any] = {"kind": self.kind, "area": self.area, "path": self.path}
        if self.encoding != "utf-8":
            out["encoding"] = self.encoding
        out["content"] = self.content_text
        out["reason"] = self.reason
        return out

    def describe(self) -> str:
        """Return the step in a few words (short text content shown, binary as its size)."""
        if self.encoding == "utf-8" and len(self.content_text) <= 120 and "\n" not in self.content_text:
            return f"write {self.path} = {self.content_text}"
        return f"write {self.path} ({len(self.data)} bytes)"

    def expected_sha256(self) -> str:
        """The file gets exactly these bytes."""
        return sha256_hex(self.data)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        """Build the step; the content must be text, or base64 that decodes."""
        fields = cls.path_fields(data)
        content, encoding = data.get("content"), data.get("encoding", "utf-8")
        if not isinstance(content, str):
            raise PlanFormatError("write step without content")
        if encoding not in ("utf-8", "base64"):
            raise PlanFormatError(f"write step with unknown encoding {encoding!r}")
        step = cls(**fields, content_text=content, encoding=encoding)
        try:
            _ = step.data
        except ValueError as exc:
            raise PlanFormatError(f"write step for {fields['path']} has content that is not base64") from exc
        return step

    def effect(self, raw: Any) -> Effect:
        """The file appears with the content."""
        return Effect(added=((self.key, self.data),))

    def content(self, io: StepIO) -> bytes:
        """The content is in the plan."""
        return self.data


@dataclass(frozen=True)
class RemoveDirStep(_PathStep):
    """Remove a directory the plan's quarantines emptied (Spark 4.1+ refuses a fresh start when
    ``state/`` lists any entry, directories included). Nothing to do on object stores."""

    kind: ClassVar[str] = "remove-dir"
    on_directory: ClassVar[bool] = True

    def describe(self) -> str:
        """Return the step in a few words."""
        return f"remove empty directory {self.area}:{self.path}/"

    def effect(self, raw: Any) -> Effect:
        """The directory is gone."""
        return Effect(removed_dirs=(self.key,))

    def execute(self, io: StepIO, content: bytes | None) -> None:
        """Remove the directory (it must be empty)."""
        io.remove_dir(self.area, self.path)

    def undo_action(self, current: bytes | None, backup: bytes | None, force: bool) -> UndoAction:
        """Create the directory again."""
        return UndoAction("make-dir")


@dataclass(frozen=True)
class RunStep(Step):
    """An action for the operator (a command to run, or how to restart); apply prints it."""

    kind: ClassVar[str] = "run"
    executable: ClassVar[bool] = False
    command: str = ""
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the step's JSON form."""
        return {"kind": self.kind, "command": self.command, "reason": self.reason}

    def describe(self) -> str:
        """Return the step in a few words."""
        return f"run: {self.command}"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        """Build the step from its command and reason."""
        return cls(command=str(data.get("command", "")), reason=str(data.get("reason", "")))

    def execute(self, io: StepIO, content: bytes | None) -> None:
        """The operator runs it; the executor never does."""
        raise PlanFormatError(f"the executor does not run operator steps ({self.command})")


KINDS: dict[str, type[Step]] = {
    cls.kind: cls for cls in (QuarantineStep, CopyStep, WriteStep, RemoveDirStep, RunStep)
}


def follows(before: list[Step], step: Step) -> bool:
    """Whether ``step`` may change a path the steps ``before`` already change: only a file's one
    removal, then its creation (a rewrite)."""
    return not before or (len(before) == 1 and before[0].removes and step.creates)


def kind_class(data: Any, kinds: dict[str, type[T]], what: str) -> type[T]:
    """Return the class of a JSON object's ``kind`` from a registry of kinds.

    Raises:
        PlanFormatError: not an object, or an unknown kind.
    """
    if not isinstance(data, dict):
        raise PlanFormatError(f"a {what} is a JSON object")
    kind = data.get("kind")
    cls = kinds.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise PlanFormatError(f"unknown {what} kind {data.get('kind')!r}")
    return cls


def parse_step(data: Any) -> Step:
    """Build a step from its JSON form (its kind's class validates it).

    Raises:
        PlanFormatError: not an object, unknown kind, bad area, unsafe path, missing fields.
    """
    return kind_class(data, KINDS, "plan step").from_json(data)
