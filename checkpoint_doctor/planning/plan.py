"""The repair plan: an immutable, serializable artifact. Pure.

A plan names its checkpoint (and sink) root, the snapshot fingerprint it was computed from, the
preconditions that must still hold when it is applied, the steps in execution order, the options
that were considered, and the diagnosis expected afterwards. ``plan_id`` is the sha256 of the
canonical JSON of everything else, so the same checkpoint gives a byte-identical plan.

Steps and preconditions are tagged unions (``kind``); an unknown kind, a newer ``format_version``,
or a path that could leave the checkpoint root is a :class:`PlanFormatError`.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from dataclasses import dataclass, field
from typing import Any

from checkpoint_doctor.errors import PlanFormatError

FORMAT_VERSION = 1
CHECKPOINT = "checkpoint"
SINK = "sink"
AREAS = (CHECKPOINT, SINK)


def check_relative_path(path: str, *, what: str = "path") -> str:
    """Return ``path`` if it is a safe relative POSIX path inside a root.

    Raises:
        PlanFormatError: for absolute paths, URLs, ``..`` components, backslashes, empty parts.
    """
    if not isinstance(path, str) or not path:
        raise PlanFormatError(f"plan {what} is empty or not a string")
    if "://" in path or path.startswith("/") or "\\" in path or ":" in path.split("/")[0]:
        raise PlanFormatError(f"plan {what} {path!r} is not relative to the checkpoint root", hint="plans may only name paths inside their checkpoint")
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts) or posixpath.normpath(path) != path:
        raise PlanFormatError(f"plan {what} {path!r} leaves or obscures the checkpoint root", hint="plans may only name paths inside their checkpoint")
    return path


@dataclass(frozen=True)
class Step:
    """One change, in execution order.

    Kinds: ``quarantine`` (move ``path`` and its Hadoop ``.crc`` into the backup; the checkpoint loses
    it), ``copy`` (create ``path`` as a byte copy of ``source``, whose sha256 must equal
    ``source_sha256``), ``write`` (create ``path`` with ``content``), ``run`` (an operator action the
    executor does not perform, e.g. the catch-up run: ``command``).
    """

    kind: str
    path: str = ""
    area: str = CHECKPOINT
    source: str | None = None
    source_sha256: str | None = None
    content: str | None = None
    command: str | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict (only the fields of its kind)."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind != "run":
            out.update({"area": self.area, "path": self.path})
        if self.kind == "copy":
            out.update({"source": self.source, "source_sha256": self.source_sha256})
        if self.kind == "write":
            out["content"] = self.content
        if self.kind == "run":
            out["command"] = self.command
        out["reason"] = self.reason
        return out

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Step:
        """Build from a dict, validating kind and paths.

        Raises:
            PlanFormatError: unknown kind, bad area or unsafe path.
        """
        kind = data.get("kind")
        if kind not in ("quarantine", "copy", "write", "run"):
            raise PlanFormatError(f"unknown plan step kind {kind!r}")
        if kind == "run":
            return Step(kind="run", command=str(data.get("command", "")), reason=str(data.get("reason", "")))
        area = data.get("area", CHECKPOINT)
        if area not in AREAS:
            raise PlanFormatError(f"unknown plan step area {area!r}")
        path = check_relative_path(data.get("path", ""), what="step path")
        source = data.get("source")
        if kind == "copy":
            source = check_relative_path(source or "", what="copy source")
            if not isinstance(data.get("source_sha256"), str):
                raise PlanFormatError("copy step without source_sha256")
        if kind == "write" and not isinstance(data.get("content"), str):
            raise PlanFormatError("write step without content")
        return Step(
            kind=kind,
            path=path,
            area=area,
            source=source,
            source_sha256=data.get("source_sha256"),
            content=data.get("content"),
            reason=str(data.get("reason", "")),
        )


@dataclass(frozen=True)
class Precondition:
    """Something that must still hold when the plan is applied.

    Kinds: ``query_id`` (``value`` None means "metadata absent"), ``latest_batches``
    (``offsets``/``commits`` newest ids, None for empty), ``file_unchanged`` (size and mtime or
    ETag of ``path``), ``file_absent``, ``no_live_writer`` (``window_s``).
    """

    kind: str
    path: str = ""
    area: str = CHECKPOINT
    value: str | None = None
    offsets: int | None = None
    commits: int | None = None
    size: int | None = None
    mtime_ms: int | None = None
    etag: str | None = None
    window_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict (only the fields of its kind)."""
        if self.kind == "query_id":
            return {"kind": self.kind, "value": self.value}
        if self.kind == "latest_batches":
            return {"kind": self.kind, "offsets": self.offsets, "commits": self.commits}
        if self.kind == "file_unchanged":
            return {"kind": self.kind, "area": self.area, "path": self.path, "size": self.size, "mtime_ms": self.mtime_ms, "etag": self.etag}
        if self.kind == "file_absent":
            return {"kind": self.kind, "area": self.area, "path": self.path}
        return {"kind": self.kind, "window_s": float(self.window_s or 0)}

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Precondition:
        """Build from a dict.

        Raises:
            PlanFormatError: unknown kind or unsafe path.
        """
        kind = data.get("kind")
        if kind == "query_id":
            return Precondition(kind=kind, value=data.get("value"))
        if kind == "latest_batches":
            return Precondition(kind=kind, offsets=data.get("offsets"), commits=data.get("commits"))
        if kind in ("file_unchanged", "file_absent"):
            area = data.get("area", CHECKPOINT)
            if area not in AREAS:
                raise PlanFormatError(f"unknown precondition area {area!r}")
            return Precondition(
                kind=kind,
                area=area,
                path=check_relative_path(data.get("path", ""), what="precondition path"),
                size=data.get("size"),
                mtime_ms=data.get("mtime_ms"),
                etag=data.get("etag"),
            )
        if kind == "no_live_writer":
            return Precondition(kind=kind, window_s=float(data.get("window_s") or 0))
        raise PlanFormatError(f"unknown precondition kind {kind!r}")


@dataclass(frozen=True)
class RepairPlan:
    """A repair plan (see module docstring). ``steps`` empty means nothing safe to do."""

    checkpoint: str
    snapshot_fingerprint: str
    spark: str
    mode: str
    strategy: str | None
    addresses: tuple[str, ...]
    preconditions: tuple[Precondition, ...]
    steps: tuple[Step, ...]
    options: tuple[dict[str, Any], ...] = ()
    unresolved: tuple[dict[str, Any], ...] = ()
    expected: dict[str, Any] = field(default_factory=dict)
    sink: str | None = None
    warnings: tuple[str, ...] = ()
    format_version: int = FORMAT_VERSION

    def body(self) -> dict[str, Any]:
        """Return the JSON-safe content that the plan id hashes."""
        return {
            "format_version": self.format_version,
            "checkpoint": self.checkpoint,
            "sink": self.sink,
            "snapshot_fingerprint": self.snapshot_fingerprint,
            "spark": self.spark,
            "mode": self.mode,
            "strategy": self.strategy,
            "addresses": list(self.addresses),
            "preconditions": [p.to_dict() for p in self.preconditions],
            "steps": [s.to_dict() for s in self.steps],
            "options": list(self.options),
            "unresolved": list(self.unresolved),
            "warnings": list(self.warnings),
            "expected": self.expected,
        }

    @property
    def plan_id(self) -> str:
        """Return the sha256 of the canonical JSON of the plan body (first 16 hex digits)."""
        return hashlib.sha256(canonical_json(self.body()).encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        """Return the plan as a JSON-safe dict, id first."""
        return {"plan_id": self.plan_id, **self.body()}

    def to_json(self) -> str:
        """Return the plan file text (stable key order, trailing newline)."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=False, ensure_ascii=False) + "\n"

    @property
    def executable_steps(self) -> tuple[Step, ...]:
        """Return the steps the executor performs (not ``run`` steps)."""
        return tuple(s for s in self.steps if s.kind != "run")

    @staticmethod
    def from_dict(data: Any) -> RepairPlan:
        """Parse and validate a plan document.

        Raises:
            PlanFormatError: malformed, newer format, unsafe paths, or an id that does not match.
        """
        if not isinstance(data, dict):
            raise PlanFormatError("a plan is a JSON object")
        version = data.get("format_version")
        if not isinstance(version, int):
            raise PlanFormatError("plan has no format_version")
        if version > FORMAT_VERSION:
            raise PlanFormatError(
                f"plan format_version {version} is newer than this checkpoint-doctor reads ({FORMAT_VERSION})",
                hint="upgrade checkpoint-doctor",
            )
        try:
            plan = RepairPlan(
                checkpoint=str(data["checkpoint"]),
                sink=data.get("sink"),
                snapshot_fingerprint=str(data["snapshot_fingerprint"]),
                spark=str(data["spark"]),
                mode=str(data["mode"]),
                strategy=data.get("strategy"),
                addresses=tuple(data.get("addresses", ())),
                preconditions=tuple(Precondition.from_dict(p) for p in data.get("preconditions", ())),
                steps=tuple(Step.from_dict(s) for s in data.get("steps", ())),
                options=tuple(data.get("options", ())),
                unresolved=tuple(data.get("unresolved", ())),
                warnings=tuple(data.get("warnings", ())),
                expected=dict(data.get("expected", {})),
                format_version=version,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PlanFormatError(f"malformed plan: {exc}") from exc
        if data.get("plan_id") is not None and data["plan_id"] != plan.plan_id:
            raise PlanFormatError(
                f"plan_id {data['plan_id']} does not match the plan's content ({plan.plan_id})",
                hint="the plan was edited after it was made; re-run 'checkpoint-doctor plan'",
            )
        return plan

    @staticmethod
    def from_json(text: str) -> RepairPlan:
        """Parse a plan file.

        Raises:
            PlanFormatError: not JSON, or see :meth:`from_dict`.
        """
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise PlanFormatError(f"plan is not JSON: {exc}") from exc
        return RepairPlan.from_dict(data)


def canonical_json(value: Any) -> str:
    """Return compact JSON with sorted keys: the form plan ids hash."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
