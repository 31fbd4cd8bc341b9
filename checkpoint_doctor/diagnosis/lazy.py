"""A computed-once attribute for the diagnosis's per-restart values. Pure.

``functools.cached_property`` takes a lock on every first access before Python 3.12; a restart
matrix builds a :class:`~checkpoint_doctor.diagnosis.context.Context` per cell and reads each of
its derived facts once or twice, so the lock was a tenth of a cell's time (bench: matrix). The
values here are pure functions of an object no other thread sees while it is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")


class cached(Generic[T]):
    """Like ``functools.cached_property`` (the value is stored in the instance's ``__dict__`` on
    first access, so later reads do not call the descriptor), without the lock."""

    def __init__(self, fn: Callable[[Any], T]) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> cached[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> T | cached[T]:
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value
