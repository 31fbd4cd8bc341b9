"""A restart matrix's cells share everything but their Spark line's rules. Pure.

A cell's diagnosis is a pure function of the snapshot, the options, the restart mode and the
target :class:`~checkpoint_doctor.diagnosis.versions.SparkTarget`; the only thing that differs
between the cells of one mode is the target, and diagnosis sees a target only through the questions
it asks of it (``target.repartition_check``, ``target.reads_offsets_version(1)``,
``target.batch_missing(30)``...). So the first cell of a mode is diagnosed with a
:class:`TracedTarget` that records each question and its answer, per part of the diagnosis (the
prediction, then each check); the next line asks only those questions again, in the same order,
and wherever its answers are the same, that part's result is the same: it is taken over, and only
the parts whose line rules answer otherwise are computed again (and recorded in turn). A matrix of
five lines thus runs the line-independent work (restorability, debris, statefulness, sink pairing,
the logs' tail) once per mode, and per cell only the line-specific rules (bench: matrix). A line
that answers every question of a diagnosis's parts alike takes that diagnosis whole
(``CellMemo.wholes``, without going through its parts); the checks that ask neither the mode nor
the prediction are shared by the modes' first cells of a line (``diagnosis.MODE_FREE_CHECKS``).

What makes this sound: nothing but the target may make a cell depend on its line. Diagnosis never
reads ``options.spark`` (the cells' options differ only in it and the mode, both part of the key),
a value :class:`~checkpoint_doctor.diagnosis.context.Context` caches never depends on the target
(it would be read without being asked again), and the line stamped on a result (``spark``) is read
from the untraced target. ``tests/diagnosis/test_line_rules.py`` diagnoses every fixture's matrix
both ways and compares them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar, cast

from checkpoint_doctor.diagnosis.model import DiagnoseOptions, Diagnosis, Finding, RestartPrediction
from checkpoint_doctor.diagnosis.tracing import Question
from checkpoint_doctor.diagnosis.versions import SparkTarget

if TYPE_CHECKING:
    from checkpoint_doctor.diagnosis.context import Context
    from checkpoint_doctor.diagnosis.facts import SnapshotFacts

_Stamped = TypeVar("_Stamped", RestartPrediction, Diagnosis, DiagnoseOptions)
Check = Callable[["Context", RestartPrediction], Iterable[Finding]]


def answers_alike(trace: tuple[Question, ...], target: SparkTarget) -> bool:
    """Return whether ``target`` answers every question of ``trace``, in order, as it was answered."""
    for name, args, kwargs, answer in trace:
        if args is None:
            value = getattr(target, name)
        elif kwargs:
            value = getattr(target, name)(*args, **dict(kwargs))
        else:
            value = getattr(target, name)(*args)
        if value != answer:
            return False
    return True


def distinct(questions: Iterable[Question]) -> tuple[Question, ...]:
    """Return the questions once each, in order: a target's rules are pure functions of its line,
    so a question asked again has the answer it had (arguments that cannot be hashed are kept)."""
    seen: set[Any] = set()
    out = []
    for question in questions:
        try:
            asked = question[:3]
            if asked in seen:
                continue
            seen.add(asked)
        except TypeError:
            pass
        out.append(question)
    return tuple(out)


def restamped(value: _Stamped, line: str, **changes: Any) -> _Stamped:
    """Return a copy of a cell's options, prediction or diagnosis stamped with another line (``spark``).

    ``dataclasses.replace`` would build it field by field through ``__init__``; these frozen values
    have no ``__post_init__`` and keep their fields in ``__dict__``, so the copy is that dict with
    ``spark`` set: a tenth of the time, asked for most cells of every matrix (bench: matrix)."""
    copy = object.__new__(type(value))
    state = copy.__dict__
    state.update(value.__dict__)
    state["spark"] = line
    state.update(changes)
    return copy


class LineCheck:
    """A check whose findings depend on the line (it asked the target something): its findings so
    far, each with the questions that led to them."""

    __slots__ = ("check", "known")

    def __init__(self, check: Check, questions: tuple[Question, ...], findings: tuple[Finding, ...]) -> None:
        self.check = check
        self.known = [(questions, findings)]

    def known_index(self, target: SparkTarget) -> int | None:
        """Return the index of earlier findings whose questions ``target`` answers alike."""
        for index, (questions, _) in enumerate(self.known):
            if answers_alike(questions, target):
                return index
        return None

    def compute(self, ctx: Context, prediction: RestartPrediction, trace: list[Question]) -> int:
        """Run the check on ``ctx`` (its target records into ``trace``); keep and index its findings."""
        start = len(trace)
        found = tuple(self.check(ctx, prediction))
        self.known.append((tuple(trace[start:]), found))
        return len(self.known) - 1


#: A cell's checks given one prediction, in order: the findings of consecutive checks that asked the
#: target nothing (the same for every line), and the checks that asked it something.
Plan = tuple[tuple[Finding, ...] | LineCheck, ...]


#: The fields of a prediction the checks may read: not the notes (what a restart reads, or that a
#: line's Delta tables are not judged) nor the line it is stamped with.
_READ_BY_CHECKS = tuple(f.name for f in fields(RestartPrediction) if f.name not in ("spark", "notes"))


class CellMemo:
    """The cells diagnosed so far for one snapshot, mode and options: the predictions, each with
    the questions its line rules asked and the plan of the checks given it, and the diagnoses by
    the parts they are made of (the prediction's index, then each line check's)."""

    __slots__ = ("assumptions", "diagnoses", "mode_findings", "plans", "predictions", "sort_keys", "wholes")

    def __init__(self) -> None:
        self.predictions: list[tuple[tuple[Question, ...], RestartPrediction]] = []
        self.plans: list[Plan] = []
        self.diagnoses: dict[tuple[int, ...], Diagnosis] = {}
        #: The findings of the checks that depend on the mode and options only (``MODE_CHECKS``).
        self.mode_findings: dict[object, tuple[Finding, ...]] | None = None
        #: The cells' assumptions (none depends on a named line).
        self.assumptions: tuple[str, ...] | None = None
        #: Each diagnosis with every question its parts asked (once each): a line that answers them
        #: all alike is that diagnosis, taken over whole without going through its parts.
        self.wholes: list[tuple[tuple[Question, ...], Diagnosis]] = []
        #: The sort keys of a diagnosis's findings, by its id (kept alive in ``diagnoses``).
        self.sort_keys: dict[int, list[Any]] = {}

    def known_prediction(self, target: SparkTarget) -> int | None:
        """Return the index of an earlier prediction whose questions ``target`` answers alike."""
        for index, (questions, _) in enumerate(self.predictions):
            if answers_alike(questions, target):
                return index
        return None

    def alike_for_checks(self, prediction: RestartPrediction) -> int | None:
        """Return the index of an earlier prediction equal to ``prediction`` in every field a check
        may read (all but its notes and line: ``tests/diagnosis/test_line_rules.py`` holds every
        check on every fixture to that), or None."""
        mine = prediction.__dict__
        for index, (_, earlier) in enumerate(self.predictions):
            theirs = earlier.__dict__
            if all(mine[name] == theirs[name] for name in _READ_BY_CHECKS):
                return index
        return None

    def add(self, questions: tuple[Question, ...], prediction: RestartPrediction, plan: list[Any]) -> int:
        """Keep a prediction computed anew and its checks' plan (static findings merged); return its index."""
        merged: list[tuple[Finding, ...] | LineCheck] = []
        for part in plan:
            if isinstance(part, tuple) and merged and isinstance(merged[-1], tuple):
                merged[-1] = merged[-1] + part
            else:
                merged.append(part)
        self.predictions.append((questions, prediction))
        self.plans.append(tuple(merged))
        return len(self.predictions) - 1

    def add_whole(self, key: tuple[int, ...], diagnosis: Diagnosis) -> None:
        """Keep the diagnosis of the parts ``key`` (the prediction's index, then each line check's)
        with the questions of all of them."""
        questions = list(self.predictions[key[0]][0])
        checks = (part for part in self.plans[key[0]] if part.__class__ is not tuple)
        for check, index in zip(checks, key[1:], strict=True):
            questions.extend(cast(LineCheck, check).known[index][0])
        # A few questions are replayed faster than told apart (the restart's reads ask each file's).
        self.wholes.append((distinct(questions) if len(questions) > 8 else tuple(questions), diagnosis))


#: The options a MODE_CHECKS finding may depend on: every field but the line and the mode (read
#: from the dataclass, so a new option is part of the key). A tuple of them keys the memo; building
#: it costs a fifth of ``dataclasses.replace`` (asked once per cell of every matrix).
MODE_KEY_FIELDS = tuple(f.name for f in fields(DiagnoseOptions) if f.name not in ("spark", "mode"))


def cell_memo(facts: SnapshotFacts, opts: DiagnoseOptions) -> CellMemo:
    """Return the memo of the cells of ``facts``' snapshot diagnosed with ``opts`` but their line."""
    key = (opts.mode, opts.spark is None, *[getattr(opts, name) for name in MODE_KEY_FIELDS])
    memo = facts.cells.get(key)
    if memo is None:
        memo = facts.cells[key] = CellMemo()
    return memo
