"""``UUID.fromString`` as Spark's JVM runs it: the query id of ``metadata``.

The table was printed by ``java.util.UUID.fromString`` on OpenJDK 17.0.15 (the JDK of the recorded
restarts; fixtures ``metadata-id-*`` hold what Spark itself did with three of these ids). A run of
5,000 random strings against the same JDK found no difference when this was written.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkpoint_doctor.parsing.java_uuid import JavaUuidError, java_uuid_error, parse_java_uuid

IAE, NFE = "IllegalArgumentException", "NumberFormatException"

#: (input, canonical UUID or (exception class, message)) as JDK 17 answered.
JDK17 = [
    ("not-a-uuid", (IAE, "Invalid UUID string: not-a-uuid")),
    ("0-0-0-0-xyz", (NFE, 'Error at index 0 in: "xyz"')),
    ("+1-2-3-4-5", "00000001-0002-0003-0004-000000000005"),
    ("1-2-3-4-5", "00000001-0002-0003-0004-000000000005"),
    ("1F9FBB59-2C6D-4410-A596-D28FAB6C8F0F", "1f9fbb59-2c6d-4410-a596-d28fab6c8f0f"),
    ("", (IAE, "Invalid UUID string: ")),
    ("-----", (IAE, "Invalid UUID string: -----")),
    ("1-2-3-4-", (NFE, "")),
    ("1--3-4-5", (NFE, "")),
    ("0000000000000000000000001-2-3-4-5", "00000001-0002-0003-0004-000000000005"),
    ("12345678901234567-1-1-1-1", (NFE, 'Error at index 16 in: "12345678901234567"')),
    ("fffffffffffffffff-1-1-1-1", (NFE, 'Error at index 15 in: "fffffffffffffffff"')),
    ("7fffffffffffffff-1-1-1-1", "ffffffff-0001-0001-0001-000000000001"),
    ("8000000000000000-1-1-1-1", (NFE, 'Error at index 15 in: "8000000000000000"')),
    ("1f9fbb59-2c6d-4410-a596-d28fab6c8f0f0", (IAE, "UUID string too large")),
    ("1-2-3-4-5-6", (IAE, "Invalid UUID string: 1-2-3-4-5-6")),
    (" 1-2-3-4-5", (NFE, 'Error at index 0 in: " 1"')),
    ("1-2-3-4-+", (NFE, 'Error at index 1 in: "+"')),
    ("+-1-1-1-1", (NFE, 'Error at index 1 in: "+"')),
    ("1_2-3-4-5-6", (NFE, 'Error at index 1 in: "1_2"')),
    ("\uff11-2-3-4-5", "00000001-0002-0003-0004-000000000005"),
    ("1-2-3-4-5\n", (NFE, 'Error at index 1 in: "5\n"')),
    ("0x1-2-3-4-5", (NFE, 'Error at index 1 in: "0x1"')),
    ("1f9fbb59-2c6d-4410-a596-d28fab6c8f0+", (NFE, 'Error at index 11 in: "d28fab6c8f0+"')),
    ("1f9fbb59-2c6d-4410-a596-+28fab6c8f0f", "1f9fbb59-2c6d-4410-a596-028fab6c8f0f"),
    ("++1-2-3-4-5", (NFE, 'Error at index 1 in: "++1"')),
]


@pytest.mark.parametrize(("text", "answer"), JDK17)
def test_what_jdk17_answers(text, answer):
    if isinstance(answer, str):
        assert str(parse_java_uuid(text)) == answer and java_uuid_error(text) is None
    else:
        with pytest.raises(JavaUuidError) as info:
            parse_java_uuid(text)
        assert (info.value.exception, info.value.message) == answer


@given(st.uuids())
def test_every_canonical_uuid_parses_to_itself_in_either_case(value):
    assert parse_java_uuid(str(value)) == value
    assert parse_java_uuid(str(value).upper()) == value


@given(st.text(max_size=40))
def test_any_text_parses_or_raises_a_java_exception(text):
    error = java_uuid_error(text)
    if error is not None:
        assert error.exception in (IAE, NFE)
        return
    parsed = parse_java_uuid(text)
    assert isinstance(parsed, uuid.UUID) and text.count("-") == 4
    assert parse_java_uuid(str(parsed)) == parsed  # the canonical form Spark reports reads back


def _parsed(text):
    try:
        parse_java_uuid(text)
    except JavaUuidError as exc:
        return exc.exception, exc.message
    return None


@given(
    st.from_regex(
        r"\A[0-9a-fA-F+\-\uff10\uff21 ]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F+]{4}-[0-9a-f]{4}-[0-9a-fA-F\n]{12}\Z"
    )
)
def test_the_canonical_fast_path_answers_as_the_full_parse(text):
    # java_uuid_error skips the parse for what UUID.toString writes: it must agree with it.
    found = java_uuid_error(text)
    assert _parsed(text) == (None if found is None else (found.exception, found.message))
