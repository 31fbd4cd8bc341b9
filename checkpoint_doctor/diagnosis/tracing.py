"""A Spark target that records the questions asked of it, and their answers. Pure.

The cells of a restart matrix differ only in the target's answers
(:mod:`checkpoint_doctor.diagnosis.line_rules` replays them for the next line); a
:class:`~checkpoint_doctor.diagnosis.context.Context` reads the line behind a traced target
(:func:`untraced`). Here, apart from both, so that neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from checkpoint_doctor.diagnosis.versions import SparkTarget

#: One question asked of a target: (attribute, call arguments or None for an attribute read,
#: keyword arguments, answer).
Question = tuple[str, tuple[Any, ...] | None, tuple[tuple[str, Any], ...], Any]


class TracedTarget:
    """A SparkTarget that records the questions asked of it (and their answers) in ``trace``."""

    __slots__ = ("real", "trace")

    def __init__(self, real: SparkTarget, trace: list[Question]) -> None:
        self.real = real
        self.trace = trace


def _read(name: str) -> property:
    def get(self: TracedTarget) -> Any:
        value = getattr(self.real, name)
        self.trace.append((name, None, (), value))
        return value

    return property(get)


def _call(name: str) -> Callable[..., Any]:
    def call(self: TracedTarget, *args: Any, **kwargs: Any) -> Any:
        value = getattr(self.real, name)(*args, **kwargs)
        self.trace.append((name, args, tuple(kwargs.items()), value))
        return value

    call.__name__ = name
    return call


def _build() -> None:
    """Give TracedTarget every public attribute of SparkTarget (its mixins' included)."""
    seen: set[str] = set()
    for klass in SparkTarget.__mro__:
        for name, value in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if isinstance(value, property):
                setattr(TracedTarget, name, _read(name))
            elif callable(value):
                setattr(TracedTarget, name, _call(name))
    for name in getattr(SparkTarget, "__dataclass_fields__", {}):
        setattr(TracedTarget, name, _read(name))


_build()


def traced(real: SparkTarget, trace: list[Question]) -> SparkTarget:
    """Return ``real`` recording the questions asked of it into ``trace`` (typed as a target)."""
    return cast(SparkTarget, TracedTarget(real, trace))


def untraced(target: SparkTarget) -> SparkTarget:
    """Return the target behind a traced one (a plain target as it is)."""
    return target.real if isinstance(target, TracedTarget) else target
