"""The repair plan: an immutable, serializable artifact. Pure.

A plan names its checkpoint (and sink) root and the non-secret storage options that reach them, the
snapshot fingerprint it was computed from, the request it was made with (the target restarts and
the operator's answers), the preconditions that must still hold when it is applied, the steps in
execution order, the options that were considered, and the diagnosis expected afterwards.

``plan_id`` is the sha256 of the canonical JSON of everything else: it names the plan, and catches
an accidental edit. It is not what makes a plan safe to apply (anyone can recompute a hash):
``apply`` requires it, checks the fingerprint against the live checkpoint, and plans again from the
live snapshot with the recorded request, refusing a plan whose steps or preconditions differ.

Steps and preconditions are one class per kind (:mod:`~checkpoint_doctor.planning.steps`,
:mod:`~checkpoint_doctor.planning.preconditions`); an unknown kind, an older or newer
``format_version``, or a path that could leave the checkpoint root is a :class:`PlanFormatError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from checkpoint_doctor.digest import sha256_hex
from checkpoint_doctor.errors import PlanFormatError
from checkpoint_doctor.planning.preconditions import Precondition, parse_precondition
from checkpoint_doctor.planning.steps import Area, Step, check_relative_path, parse_step
from checkpoint_doctor.redaction import is_secret

__all__ = ["FORMAT_VERSION", "Area", "RepairPlan", "canonical_json", "check_relative_path"]

#: 2: one class per step kind (``remove-dir``, binary ``write``), the recorded request and cells.
FORMAT_VERSION = 2


def public_storage_options(options: dict[str, Any]) -> dict[str, Any]:
    """Return the storage options a plan may record: everything but credentials, recursively."""
    out: dict[str, Any] = {}
    for k, v in sorted(options.items()):
        if is_secret(k):  # credentials come from the environment or the command line
            continue
        out[k] = public_storage_options(v) if isinstance(v, dict) else v
    return out


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
    request: dict[str, Any] = field(default_factory=dict)
    storage_options: dict[str, Any] = field(default_factory=dict)
    cells: tuple[dict[str, str], ...] = ()
    format_version: int = FORMAT_VERSION
    #: What the plan takes for granted that the checkpoint cannot tell (unknown statefulness).
    assumptions: tuple[str, ...] = ()

    def body(self) -> dict[str, Any]:
        """Return the JSON-safe content that the plan id hashes."""
        return {
            "format_version": self.format_version,
            "checkpoint": self.checkpoint,
            "sink": self.sink,
            "storage_options": self.storage_options,
            "snapshot_fingerprint": self.snapshot_fingerprint,
            "spark": self.spark,
            "mode": self.mode,
            "cells": list(self.cells),
            "request": self.request,
            "strategy": self.strategy,
            "addresses": list(self.addresses),
            "preconditions": [p.to_dict() for p in self.preconditions],
            "steps": [s.to_dict() for s in self.steps],
            "options": list(self.options),
            "unresolved": list(self.unresolved),
            "warnings": list(self.warnings),
            "expected": self.expected,
            # Only when there is one: a plan without assumptions keeps the id it had before they existed.
            **({"assumptions": list(self.assumptions)} if self.assumptions else {}),
        }

    @property
    def plan_id(self) -> str:
        """Return the sha256 of the canonical JSON of the plan body (first 16 hex digits)."""
        return sha256_hex(canonical_json(self.body()).encode())[:16]

    def to_dict(self) -> dict[str, Any]:
        """Return the plan as a JSON-safe dict, id first."""
        return {"plan_id": self.plan_id, **self.body()}

    def to_json(self) -> str:
        """Return the plan file text (stable key order, trailing newline)."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=False, ensure_ascii=False) + "\n"

    @property
    def executable_steps(self) -> tuple[Step, ...]:
        """Return the steps the executor performs (not ``run`` steps)."""
        return tuple(s for s in self.steps if s.executable)

    @staticmethod
    def from_dict(data: Any) -> RepairPlan:
        """Parse and validate a plan document.

        Raises:
            PlanFormatError: malformed, of another format version, unsafe paths, no id, or an id
                that does not match the content.
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
        if version < FORMAT_VERSION:
            raise PlanFormatError(
                f"plan format_version {version} was made by an older checkpoint-doctor",
                hint="re-run 'checkpoint-doctor plan' to make a current plan",
            )
        plan = _build(data, version)
        claimed = data.get("plan_id")
        if not isinstance(claimed, str) or not claimed:
            raise PlanFormatError(
                "the plan has no plan_id",
                hint="apply only a plan file written by 'checkpoint-doctor plan -o'",
            )
        if claimed != plan.plan_id:
            raise PlanFormatError(
                f"plan_id {claimed} does not match the plan's content ({plan.plan_id})",
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


def _build(data: dict[str, Any], version: int) -> RepairPlan:
    try:
        return RepairPlan(
            checkpoint=str(data["checkpoint"]),
            sink=data.get("sink"),
            storage_options=dict(data.get("storage_options") or {}),
            snapshot_fingerprint=str(data["snapshot_fingerprint"]),
            spark=str(data["spark"]),
            mode=str(data["mode"]),
            cells=tuple(dict(c) for c in data.get("cells", ())),
            request=dict(data.get("request") or {}),
            strategy=data.get("strategy"),
            addresses=tuple(data.get("addresses", ())),
            preconditions=tuple(parse_precondition(p) for p in data.get("preconditions", ())),
            steps=tuple(parse_step(s) for s in data.get("steps", ())),
            options=tuple(data.get("options", ())),
            unresolved=tuple(data.get("unresolved", ())),
            warnings=tuple(data.get("warnings", ())),
            expected=dict(data.get("expected", {})),
            format_version=version,
            assumptions=tuple(str(a) for a in data.get("assumptions", ())),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise PlanFormatError(f"malformed plan: {exc}") from exc


def canonical_json(value: Any) -> str:
    """Return compact JSON with sorted keys: the form plan ids hash."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
