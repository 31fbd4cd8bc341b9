"""``records.frozen`` makes the frozen dataclass ``dataclass(frozen=True)`` makes, cheaper."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import FrozenInstanceError, dataclass, field
from typing import ClassVar, Generic, TypeVar  # noqa: F401 - "ClassVar[str]" below resolves here

import pytest

from checkpoint_doctor.valueclasses import COMPILE_AFTER, frozen, mutable

T = TypeVar("T")


def _pair(body: dict[str, object], annotations: dict[str, str], name: str = "Value") -> tuple[type, type]:
    """The same class body made by frozen and by dataclass(frozen=True)."""

    def make(decorate):
        ns = {"__annotations__": dict(annotations), "__module__": __name__, "__qualname__": name, **body}
        return decorate(type(name, (), ns))

    return make(frozen), make(dataclass(frozen=True))


BODY = {
    "__doc__": "A value.",
    "b": 2,
    "c": field(default_factory=list, compare=False),
    "d": field(default=None, repr=False),
    "e": field(default=(), hash=False),
    "kind": "plain",
}
ANNOTATIONS = {
    "a": "int",
    "b": "int",
    "c": "list[int]",
    "d": "str | None",
    "e": "tuple[int, ...]",
    "kind": "ClassVar[str]",
}


def test_the_same_fields_signature_params_and_match_args():
    mine, theirs = _pair(BODY, ANNOTATIONS)
    assert [(f.name, f.type, f.default, f.compare, f.hash, f.repr) for f in dataclasses.fields(mine)] == [
        (f.name, f.type, f.default, f.compare, f.hash, f.repr) for f in dataclasses.fields(theirs)
    ]
    assert str(inspect.signature(mine)) == str(inspect.signature(theirs))
    assert mine.__init__.__annotations__ == theirs.__init__.__annotations__
    assert mine.__match_args__ == theirs.__match_args__ == ("a", "b", "c", "d", "e")
    for attr in ("init", "repr", "eq", "order", "unsafe_hash", "frozen"):
        assert getattr(mine.__dataclass_params__, attr) == getattr(theirs.__dataclass_params__, attr), attr
    assert dataclasses.is_dataclass(mine) and mine.kind == "plain"
    assert mine.__init__.__qualname__ == "Value.__init__" and mine.__doc__ == "A value."


def test_the_same_equality_hash_repr_and_frozen_errors():
    mine, theirs = _pair(BODY, ANNOTATIONS)
    for args, kwargs in (((1,), {}), ((1, 3), {"c": [1]}), ((5,), {"d": "x", "e": (1, 2)})):
        a, b = mine(*args, **kwargs), theirs(*args, **kwargs)
        assert repr(a) == repr(b)
        assert hash(a) == hash(b)
        assert a == mine(*args, **kwargs)
        assert (a != mine(*args, **kwargs)) is False
        assert (a == b) is False  # another class: NotImplemented both ways, then identity
    assert mine(1, c=[1]) == mine(1, c=[2])  # compare=False
    assert hash(mine(1, e=(1,))) == hash(mine(1, e=(2,)))  # hash=False
    assert mine(1).__eq__(object()) is NotImplemented
    value = mine(1)
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'a'"):
        value.a = 2
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'other'"):
        value.other = 2
    with pytest.raises(FrozenInstanceError, match="cannot delete field 'a'"):
        del value.a
    assert mine(1).c is not mine(1).c  # a new list per instance


def test_replace_asdict_copy_and_pickle_work():
    mine, _ = _pair(BODY, ANNOTATIONS)
    value = mine(1, d="x")
    assert dataclasses.replace(value, b=7) == mine(1, 7, d="x")
    assert dataclasses.asdict(value) == {"a": 1, "b": 2, "c": [], "d": "x", "e": ()}
    assert copy.copy(value) == value and copy.deepcopy(value) == value
    globals()["Value"] = mine  # pickle finds the class by its module and name
    try:
        assert pickle.loads(pickle.dumps(value)) == value
    finally:
        del globals()["Value"]


def test_one_field_and_no_field_hash_as_tuples_do():
    one, one_std = _pair({"__doc__": "x"}, {"a": "int"})
    none, none_std = _pair({"__doc__": "x"}, {})
    assert hash(one(5)) == hash(one_std(5)) == hash((5,))
    assert hash(none()) == hash(none_std()) == hash(())
    nan = float("nan")
    assert one(nan) == one(nan)  # the tuples compare by identity first, as dataclass's do
    assert repr(none()) == "Value()"


def test_methods_the_class_defines_are_kept_and_post_init_runs():
    class Base:
        def describe(self) -> str:
            return "base"

    @frozen
    class Custom(Base):
        """A value with its own equality and a derived field."""

        a: int
        derived: tuple[int, ...] = field(default=(), compare=False, repr=False)

        def __post_init__(self) -> None:
            object.__setattr__(self, "derived", (self.a,))

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Custom) and other.a % 2 == self.a % 2

        def __repr__(self) -> str:
            return "custom"

    assert Custom(1) == Custom(3) and repr(Custom(1)) == "custom" and Custom(4).derived == (4,)
    assert hash(Custom(1)) == hash((1,))  # __eq__ without __hash__: dataclass adds its hash
    assert Custom(1).describe() == "base"


def test_generic_records_and_dataclass_subclasses_of_records():
    @frozen
    class Box(Generic[T]):
        """A box."""

        item: T

    @dataclass(frozen=True)
    class Labelled(Box[int]):
        label: str = ""

    assert Box[int](1) == Box(1) and Labelled(1, "x").label == "x"
    assert [f.name for f in dataclasses.fields(Labelled)] == ["item", "label"]
    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):

        @dataclass
        class Loose(Box[int]):
            pass


def test_what_it_does_not_make_is_refused():
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        _pair({"__doc__": "x", "a": 1}, {"a": "int", "b": "int"})[0]
    with pytest.raises(TypeError, match="InitVar"):
        _pair({"__doc__": "x"}, {"a": "dataclasses.InitVar[int]"})
    with pytest.raises(TypeError, match="init=False"):
        _pair({"__doc__": "x", "a": field(default=1, init=False)}, {"a": "int"})
    with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__"):
        _pair({"__doc__": "x", "__setattr__": lambda self, n, v: None}, {"a": "int"})

    @dataclass
    class Loose:
        a: int

    with pytest.raises(TypeError, match="cannot inherit frozen dataclass from a non-frozen one"):
        frozen(type("Sub", (Loose,), {"__annotations__": {"b": "int"}, "__doc__": "x"}))


def test_records_of_records_as_dataclasses_of_dataclasses():
    @frozen
    class Line:
        """A line."""

        line: str

        def older(self) -> bool:
            return self.line < "4"

    mine = frozen(type("Texts", (Line,), {"__doc__": "Texts.", "__module__": __name__}))
    theirs = dataclass(frozen=True)(type("Texts", (Line,), {"__doc__": "Texts.", "__module__": __name__}))
    a, b = mine("3.5"), theirs("3.5")
    assert repr(a) == repr(b) == "Texts(line='3.5')" and hash(a) == hash(b) and a.older()
    assert a == mine("3.5") and a != Line("3.5")
    for value in (a, b):
        with pytest.raises(FrozenInstanceError):
            value.other = 1


def test_a_class_without_a_docstring_gets_dataclass_s():
    mine, theirs = _pair({}, {"a": "int", "b": "str"})
    assert mine.__doc__ == theirs.__doc__ == "Value(a: 'int', b: 'str')"


def test_slots_as_dataclass_slots_makes_them():
    mine = frozen(slots=True)(
        type("Stat", (), {"__annotations__": {"path": "str", "size": "int"}, "size": 0, "__doc__": "x"})
    )
    theirs = dataclass(frozen=True, slots=True)(
        type("Stat", (), {"__annotations__": {"path": "str", "size": "int"}, "size": 0, "__doc__": "x"})
    )
    assert mine.__slots__ == theirs.__slots__ == ("path", "size")
    a, b = mine("p", 3), theirs("p", 3)
    assert not hasattr(a, "__dict__") and repr(a) == repr(b) and hash(a) == hash(b)
    assert a.__getstate__() == b.__getstate__() == ["p", 3]
    with pytest.raises(FrozenInstanceError):
        a.size = 4
    globals()["Stat"] = mine
    try:
        assert pickle.loads(pickle.dumps(a)) == a and copy.copy(a) == a
    finally:
        del globals()["Stat"]


def test_mutable_as_dataclass_makes_it():
    body = {"__doc__": "x", "items": field(default_factory=list), "count": 0}
    annotations = {"name": "str", "items": "list[int]", "count": "int"}

    def make(decorate):
        return decorate(type("Index", (), {"__annotations__": dict(annotations), **body}))

    mine, theirs = make(mutable), make(dataclass)
    a, b = mine("x"), theirs("x")
    a.count += 1
    b.count += 1
    a.items.append(1)
    b.items.append(1)
    assert repr(a).replace("Index", "") == repr(b).replace("Index", "") == "(name='x', items=[1], count=1)"
    assert a == mine("x", [1], 1) and mine.__hash__ is None is theirs.__hash__
    assert str(inspect.signature(mine)) == str(inspect.signature(theirs))
    assert mine.__dataclass_params__.frozen is False and mine.__dataclass_params__.eq is True
    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):
        mutable(type("Sub", (frozen(type("Base", (), {"__doc__": "x"})),), {"__doc__": "x"}))


def test_init_is_compiled_when_first_called_with_the_signature_before():
    cls = frozen(type("Lazy", (), {"__annotations__": {"a": "int", "b": "int"}, "b": 2, "__doc__": "x"}))
    stub = cls.__init__
    assert str(inspect.signature(cls)) == "(a: 'int', b: 'int' = 2) -> None"
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'a'"):
        cls()
    assert cls(1).b == 2 and cls(1, b=3).b == 3 and cls(a=5).a == 5
    assert cls.__init__ is stub  # a few instances: not compiled
    made = [cls(i) for i in range(COMPILE_AFTER)]
    assert cls.__init__ is not stub  # compiled after COMPILE_AFTER calls, then the class's own
    assert made[-1] == cls(COMPILE_AFTER - 1) and cls(7, 8) == cls(a=7, b=8)
    assert str(inspect.signature(cls)) == "(a: 'int', b: 'int' = 2) -> None"


@pytest.mark.parametrize("calls", [1, COMPILE_AFTER + 2])
def test_before_and_after_compiling_init_makes_the_same_instances(calls):
    counter = iter(range(1000))

    class Base:
        def __post_init__(self) -> None:
            object.__setattr__(self, "seen", next(counter))

    def make(decorate):
        ns = {"__annotations__": {"a": "int", "items": "list[int]"}, "items": field(default_factory=list)}
        return decorate(type("Made", (Base,), {**ns, "__doc__": "x", "__module__": __name__}))

    mine, theirs = make(frozen), make(dataclass(frozen=True))
    for _ in range(calls):
        a, b = mine(1), theirs(1)
    assert (a.a, a.items, repr(a)) == (b.a, b.items, repr(b)) and a.items is not mine(1).items
    assert isinstance(a.seen, int)
