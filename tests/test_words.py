"""One word for each thing: the package's word enums are their words in JSON and text, a plan's
area and a fleet target's kind are two types, and a parsed value carries its enum member."""

from __future__ import annotations

import json

import pytest

from checkpoint_doctor.diagnosis.codes import CODES, Code, Severity
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.enums import TextEnum
from checkpoint_doctor.errors import PlanFormatError
from checkpoint_doctor.execution.journal import Event
from checkpoint_doctor.fleet.discovery import TargetKind, discover
from checkpoint_doctor.model import FileStat, Listing
from checkpoint_doctor.planning.steps import parse_step
from checkpoint_doctor.reading.layout import SINK_LOG, Area

WORDS: tuple[type[TextEnum], ...] = (Area, TargetKind, Severity, Event, Code)


@pytest.mark.parametrize("enum", WORDS, ids=lambda e: e.__name__)
def test_a_word_is_its_value_in_json_text_and_lookups(enum: type[TextEnum]) -> None:
    for member in enum:
        word = member.value
        assert json.dumps({member: [member]}) == json.dumps({word: [word]})
        assert (str(member), f"{member}", f"{member:>3}", f"{member}") == (word, word, f"{word:>3}", word)
        assert {word: 1}[member] == 1 and member == word


def test_an_area_and_a_target_kind_are_different_types_with_the_same_words() -> None:
    assert [a.value for a in Area] == [k.value for k in TargetKind] == ["checkpoint", "sink"]
    assert not isinstance(Area.SINK, TargetKind) and not isinstance(TargetKind.SINK, Area)


def test_a_parsed_step_carries_its_area_and_writes_the_same_json() -> None:
    data = {"kind": "quarantine", "area": "sink", "path": f"{SINK_LOG}/7", "reason": "ahead"}

    step = parse_step(data)

    assert step.key == (Area.SINK, f"{SINK_LOG}/7") and type(step.key[0]) is Area
    assert json.loads(json.dumps(step.to_dict()))["area"] == "sink"
    with pytest.raises(PlanFormatError, match="unknown plan step area 'lake'"):
        parse_step({**data, "area": "lake"})


def test_discovery_names_its_targets_by_kind() -> None:
    files = [FileStat("q/offsets/0", 1, 0), FileStat(f"out/{SINK_LOG}/0", 1, 0)]
    found = discover(Listing(tuple(files), ("out", f"out/{SINK_LOG}", "q", "q/offsets")))

    assert [(type(t.kind), t.kind, t.path) for t in found.targets] == [
        (TargetKind, TargetKind.SINK, "out"),
        (TargetKind, TargetKind.CHECKPOINT, "q"),
    ]


def test_a_finding_is_typed_by_its_code_and_severity() -> None:
    finding = Finding(Code.SINK_LOG_MISSING, "no log")

    assert finding.severity is CODES[Code.SINK_LOG_MISSING].severity
    assert isinstance(finding.severity, Severity)
    assert json.dumps(finding.to_dict()["code"]) == json.dumps(Code.SINK_LOG_MISSING.value)
