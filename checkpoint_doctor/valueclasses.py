"""Frozen value classes for the modules every command imports, made at a fifth of the cost. Pure.

``@dataclass(frozen=True)`` compiles six functions per class from generated source (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``): about a third of a
``diagnose``'s start-up was spent there (issue 24; ``python -X importtime``, cProfile of the import).
:func:`frozen` makes the same dataclass: ``dataclasses`` still collects the fields (so ``fields``,
``replace``, ``asdict`` and ``is_dataclass`` see a frozen dataclass with eq, and a subclass can be one),
only ``__init__`` is compiled (instances are built often: it is the generated code, field for
field), and the other five are the same few closures for every class, with the same behaviour:
``__eq__`` and ``__hash__`` compare and hash the tuple of the fields (``operator.attrgetter``),
``__repr__`` is ``Name(field=value, ...)``, assigning or deleting a field raises
``FrozenInstanceError``. A method the class defines itself is kept, as ``dataclass`` keeps it.

Supported: fields with defaults and ``field(default=..., default_factory=..., compare=..., hash=...,
repr=...)``, ``ClassVar``, ``__post_init__``, generic classes. Not: ``InitVar``, ``kw_only``,
``init=False`` fields or ``__slots__`` (use ``dataclass(frozen=True)`` there; those raise ``TypeError``
here). A dataclass base must be frozen, as for ``dataclass(frozen=True)``. ``tests/test_valueclasses.py`` holds both decorators to the same behaviour.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError
from operator import attrgetter
from types import CodeType, FunctionType
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda decorator: decorator


T = TypeVar("T")

#: The default a parameter shows for a field with a default factory (``<factory>``, as dataclasses).
_FACTORY: Any = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", object())


@overload
def frozen(cls: type[T], /) -> type[T]: ...


@overload
def frozen(*, slots: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: type[T] | None = None, /, *, slots: bool = False) -> Any:
    """Return ``cls`` as ``dataclass(frozen=True, slots=slots)`` would make it (see the module's
    docstring); ``@frozen`` or ``@frozen(slots=True)``."""
    if cls is None:
        return lambda klass: _make(klass, frozen=True, slots=slots)
    return _make(cls, frozen=True, slots=slots)


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def mutable(cls: type[T]) -> type[T]:
    """Return ``cls`` as ``dataclass`` (not frozen, eq: no ``__hash__``) would make it."""
    return _make(cls, frozen=False, slots=False)


def _make(cls: type[T], *, frozen: bool, slots: bool) -> type[T]:
    _refuse_unsupported(cls)
    own = set(vars(cls))
    undocumented = not cls.__doc__
    class_hash = vars(cls).get("__hash__", MISSING)
    explicit_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in own))
    # A subclass of a frozen dataclass must be frozen for dataclasses to accept it: there it compiles
    # __setattr__ and __delattr__ itself (two functions instead of six).
    frozen_base = _frozen_base(cls, frozen)
    dataclasses.dataclass(cls, init=False, repr=False, eq=False, frozen=frozen_base)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if any(not f.init or f.kw_only is True for f in vars(cls)["__dataclass_fields__"].values()):
        raise TypeError(f"{cls.__qualname__}: InitVar, kw_only and init=False fields need dataclass()")
    names = tuple(f.name for f in fields)
    if slots:
        cls = _slotted(cls, names)
    if "__init__" not in own:
        _set(cls, "__init__", _lazy_init(cls, fields, frozen))
    if "__repr__" not in own:
        _set(cls, "__repr__", _repr(tuple(f.name for f in fields if f.repr)))
    if "__eq__" not in own:
        _set(cls, "__eq__", _eq(_key(tuple(f.name for f in fields if f.compare))))
    if not frozen:
        if not explicit_hash:
            cls.__hash__ = None  # type: ignore[assignment]  # eq without frozen: unhashable
    elif not explicit_hash:
        hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        _set(cls, "__hash__", _hash(_key(hashed)))
    if frozen and not frozen_base:
        _set(cls, "__setattr__", _frozen_setattr(cls, names))
        _set(cls, "__delattr__", _frozen_delattr(cls, names))
    if frozen and slots:
        _set(cls, "__getstate__", _getstate(names))
        _set(cls, "__setstate__", _setstate(names))
    if undocumented:
        import inspect  # as dataclasses does, for the few classes without a docstring

        cls.__doc__ = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
    params = vars(cls)["__dataclass_params__"]
    params.init = params.repr = params.eq = True
    params.frozen = frozen
    return cls


def _slotted(cls: type[T], names: tuple[str, ...]) -> type[T]:
    """The class again with ``__slots__`` for its fields (what ``dataclass(slots=True)`` does)."""
    body = dict(vars(cls))
    body["__slots__"] = names
    for name in (*names, "__dict__", "__weakref__"):
        body.pop(name, None)
    slotted = cast(Any, type(cls))(cls.__name__, cls.__bases__, body)
    slotted.__qualname__ = cls.__qualname__
    return cast("type[T]", slotted)


def _frozen_base(cls: type, frozen: bool) -> bool:
    """Whether a base is a dataclass; all must be frozen for a frozen class, none for another."""
    params = [vars(b)["__dataclass_params__"] for b in cls.__mro__[1:] if "__dataclass_params__" in vars(b)]
    if frozen and any(not p.frozen for p in params):
        raise TypeError("cannot inherit frozen dataclass from a non-frozen one")
    if not frozen and any(p.frozen for p in params):
        raise TypeError("cannot inherit non-frozen dataclass from a frozen one")
    return frozen and bool(params)


def _refuse_unsupported(cls: type) -> None:
    for name in ("__setattr__", "__delattr__"):
        if name in vars(cls):
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    if "__slots__" in vars(cls):
        raise TypeError(f"{cls.__qualname__}: __slots__ of its own needs dataclass()")
    for annotation in vars(cls).get("__annotations__", {}).values():
        text = annotation if isinstance(annotation, str) else repr(annotation)
        if "InitVar" in text or "KW_ONLY" in text:
            raise TypeError(f"{cls.__qualname__}: InitVar and KW_ONLY need dataclass()")


def _set(cls: type, name: str, fn: Callable[..., Any]) -> None:
    fn.__qualname__ = f"{cls.__qualname__}.{name}"
    setattr(cls, name, fn)


#: Calls of a class's ``__init__`` before its generated code is compiled: a command builds most of
#: its value classes a few times or never (compiling is most of what making a class costs), the
#: hot ones (a listing's files, a log's entries) thousands of times.
COMPILE_AFTER = 16


def _lazy_init(cls: type, fields: tuple[dataclasses.Field[Any], ...], frozen: bool) -> Callable[..., None]:
    """Return an ``__init__`` with the generated one's signature that sets the fields as the
    generated one does (in order, default factories called, then ``__post_init__``) and, after
    :data:`COMPILE_AFTER` calls, compiles the generated one and makes it the class's.

    The signature is a template's code object (one per number of fields, compiled once) with the
    parameters renamed: ``def __init__(self, a, b=<default>): return __first__(self, a, b)``."""
    names = [f.name for f in fields]
    defaults = []
    makers = []
    for f in fields:
        makers.append(None if f.default_factory is MISSING else f.default_factory)
        if f.default is not MISSING:
            defaults.append(f.default)
        elif f.default_factory is not MISSING:
            defaults.append(_FACTORY)
        elif defaults:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    plan = tuple(zip(names, makers, strict=True))
    assign = object.__setattr__ if frozen else setattr
    post_init = hasattr(cls, "__post_init__")
    calls = 0

    def first(self: Any, *args: Any) -> None:
        nonlocal calls
        calls += 1
        if calls > COMPILE_AFTER:
            init = _init(cls, fields, frozen)
            init.__qualname__ = f"{cls.__qualname__}.__init__"
            setattr(cls, "__init__", init)  # noqa: B010 - the class's own, replacing this stub
            init(self, *args)
            return
        for (name, make), value in zip(plan, args, strict=True):
            assign(self, name, make() if make is not None and value is _FACTORY else value)
        if post_init:
            self.__post_init__()

    template = _template(len(names))
    code = template.replace(co_varnames=("self", *names, *template.co_varnames[len(names) + 1 :]))
    stub = FunctionType(code, {"__first__": first}, "__init__", tuple(defaults) or None)
    stub.__annotations__ = {**{f.name: f.type for f in fields}, "return": None}
    return stub


_TEMPLATES: dict[int, CodeType] = {}


def _template(arity: int) -> CodeType:
    """The code of ``def __init__(self, p0, ..., pN): return __first__(self, p0, ..., pN)``."""
    code = _TEMPLATES.get(arity)
    if code is None:
        params = "".join(f", p{i}" for i in range(arity))
        namespace: dict[str, Any] = {}
        exec(f"def __init__(self{params}):\n return __first__(self{params})", {}, namespace)
        code = _TEMPLATES[arity] = namespace["__init__"].__code__
    return code


def _init(cls: type, fields: tuple[dataclasses.Field[Any], ...], frozen: bool) -> Callable[..., None]:
    """The ``__init__`` dataclasses generates, compiled from the same source."""
    params, body = [], []
    env: dict[str, Any] = {"__object__": object, "__factory__": _FACTORY}
    for f in fields:
        value = f.name
        if f.default is not MISSING:
            env[f"__default_{f.name}__"] = f.default
            params.append(f"{f.name}=__default_{f.name}__")
        elif f.default_factory is not MISSING:
            env[f"__make_{f.name}__"] = f.default_factory
            params.append(f"{f.name}=__factory__")
            value = f"__make_{f.name}__() if {f.name} is __factory__ else {f.name}"
        else:
            params.append(f.name)
        if frozen:
            body.append(f"  __object__.__setattr__(self, {f.name!r}, {value})")
        else:
            body.append(f"  self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("  self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "  pass")
    namespace: dict[str, Any] = {}
    exec(source, env, namespace)
    fn: Callable[..., None] = namespace["__init__"]
    fn.__annotations__ = {**{f.name: f.type for f in fields}, "return": None}
    return fn


def _getstate(names: tuple[str, ...]) -> Callable[[Any], list[Any]]:
    def __getstate__(self: Any) -> list[Any]:
        return [getattr(self, name) for name in names]

    return __getstate__


def _setstate(names: tuple[str, ...]) -> Callable[[Any, list[Any]], None]:
    def __setstate__(self: Any, state: list[Any]) -> None:
        for name, value in zip(names, state, strict=False):
            object.__setattr__(self, name, value)

    return __setstate__


def _key(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """Return a function of an instance giving the tuple of these fields (a tuple even for one)."""
    if len(names) > 1:
        return attrgetter(*names)
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda self: (one(self),)
    return lambda self: ()


def _eq(key: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return __eq__


def _hash(key: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(key(self))

    return __hash__


def _repr(names: tuple[str, ...]) -> Callable[[Any], str]:
    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({fields})"

    return __repr__


def _frozen_setattr(cls: type, names: tuple[str, ...]) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cast(Any, cls), self).__setattr__(name, value)

    return __setattr__


def _frozen_delattr(cls: type, names: tuple[str, ...]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cast(Any, cls), self).__delattr__(name)

    return __delattr__
