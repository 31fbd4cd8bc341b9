"""The JVM-exact text rules: line splitting, Java integer parsing, version lines, lenient JSON."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from checkpoint_doctor.errors import CheckpointParseError
from checkpoint_doctor.parsing.text import (
    java_parse_int,
    java_parse_long,
    java_trim,
    parse_json_value,
    parse_version_line,
    split_lines,
)


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("v1", ["v1"]),
        ("v1\n", ["v1"]),
        ("v1\n\n", ["v1", ""]),
        ("v1\r\n{}", ["v1", "{}"]),
        ("v1\r{}", ["v1", "{}"]),
        ("a\n\nb", ["a", "", "b"]),
        ("\n", [""]),
    ],
)
def test_split_lines_matches_buffered_reader(text, lines):
    assert split_lines(text) == lines


@given(st.text())
def test_split_lines_never_keeps_terminators(text):
    lines = split_lines(text)
    assert all("\n" not in line and "\r" not in line for line in lines)
    assert "".join(lines) == text.replace("\r", "").replace("\n", "")


@pytest.mark.parametrize(
    ("text", "value"),
    [("7", 7), ("+7", 7), ("-7", -7), ("007", 7), ("2147483647", 2**31 - 1), ("\u0663", 3)],
)
def test_java_parse_int_accepts_what_integer_parseint_accepts(text, value):
    assert java_parse_int(text) == value


@pytest.mark.parametrize("text", ["", " 1", "1 ", "1_0", "2147483648", "0x1", "+", "-", "1.0"])
def test_java_parse_int_rejects_what_integer_parseint_rejects(text):
    assert java_parse_int(text) is None


def test_java_parse_long_range():
    assert java_parse_long("9223372036854775807") == 2**63 - 1
    assert java_parse_long("9223372036854775808") is None


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_java_parse_long_round_trips_decimal_text(n):
    assert java_parse_long(str(n)) == n


def test_java_trim_strips_control_characters_but_not_unicode_spaces():
    assert java_trim("\t v1 \x00") == "v1"
    assert java_trim("\u00a0v1") == "\u00a0v1"


@pytest.mark.parametrize(("line", "version"), [("v1", 1), ("v2", 2), ("v+2", 2)])
def test_version_line_accepted(line, version):
    assert parse_version_line(line, max_version=3, path="p") == version


@pytest.mark.parametrize("line", ["", "1", "v", "v0", "v-1", "x1", "v1 ", " v1", "V1"])
def test_version_line_malformed(line):
    with pytest.raises(CheckpointParseError) as info:
        parse_version_line(line, max_version=3, path="offsets/2")
    assert info.value.kind == "malformed-header"
    assert info.value.path == "offsets/2"


def test_version_line_too_new_records_version():
    with pytest.raises(CheckpointParseError) as info:
        parse_version_line("v99", max_version=2, path="offsets/2")
    assert (info.value.kind, info.value.version) == ("unsupported-version", 99)


def test_json_value_ignores_trailing_content_like_jackson():
    assert parse_json_value('{"a":1} trailing', path="p", line=2) == {"a": 1}


@pytest.mark.parametrize(
    ("text", "kind"),
    [('{"a":', "truncated-json"), ('{"a" 1}', "bad-json"), ("", "truncated-json"), ("NaN", "bad-json")],
)
def test_json_value_errors_are_classified(text, kind):
    with pytest.raises(CheckpointParseError) as info:
        parse_json_value(text, path="p", line=2)
    assert info.value.kind == kind
    assert info.value.line == 2


@given(st.text())
@example("\x00")
def test_json_value_returns_or_raises_parse_error(text):
    with contextlib.suppress(CheckpointParseError):
        parse_json_value(text, path="p", line=1)
