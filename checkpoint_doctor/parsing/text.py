"""Text rules shared by every Spark checkpoint log parser, written to match the JVM exactly.

Spark reads log files with ``scala.io.Source.getLines`` (a ``BufferedReader.readLine`` loop), parses
version lines with ``String.toInt`` (``Integer.parseInt``), batch file names with ``toLong``, and JSON
with json4s on Jackson. Small differences matter: Python's ``int()`` accepts ``" 1"`` and ``"1_0"``,
Java does not; Jackson ignores trailing content after the first JSON value, Python's ``json.loads``
does not. Pure functions only; no I/O.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterator
from typing import Any

from checkpoint_doctor.errors import CheckpointParseError

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1

# Stable failure kinds (model.FailureKind mirrors these values).
EMPTY = "empty"
HEADER_ONLY = "header-only"
MALFORMED_HEADER = "malformed-header"
UNSUPPORTED_VERSION = "unsupported-version"
BAD_JSON = "bad-json"
TRUNCATED_JSON = "truncated-json"
INVALID_CONTENT = "invalid-content"
NOT_TEXT = "not-text"
JAVA_SERIALIZED = "java-serialized"
#: Over a bound this tool reads (bytes of one file, lines of one log file): not checked further.
TOO_LARGE = "too-large"

JAVA_SERIALIZATION_MAGIC = b"\xac\xed"
#: How much of a malformed first line a failure quotes (Spark quotes all of it).
FOUND_CHARS = 1024


def _java_digits(text: str) -> int | None:
    if not text:
        return None
    value = 0
    for ch in text:
        try:
            digit = unicodedata.decimal(ch)
        except ValueError:
            return None
        value = value * 10 + digit
    return value


def _java_parse(text: str, lo: int, hi: int) -> int | None:
    sign = 1
    body = text
    if body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    magnitude = _java_digits(body)
    if magnitude is None:
        return None
    value = sign * magnitude
    if value < lo or value > hi:
        return None
    return value


def java_parse_int(text: str) -> int | None:
    """Return ``Integer.parseInt(text)``, or None where Java throws ``NumberFormatException``."""
    return _java_parse(text, _INT_MIN, _INT_MAX)


def java_parse_long(text: str) -> int | None:
    """Return ``Long.parseLong(text)``, or None where Java throws ``NumberFormatException``."""
    return _java_parse(text, _LONG_MIN, _LONG_MAX)


#: The characters ``String.trim()`` strips: every one <= U+0020.
_JAVA_TRIMMED = "".join(map(chr, range(0x21)))


def java_trim(text: str) -> str:
    """Return ``String.trim()``: strips every character <= U+0020 at both ends (not Unicode spaces).

    ``str.strip`` with those characters, not a loop in Python: a line of 63 million NULs (a sparse
    file, issue 31) took seconds a line."""
    return text.strip(_JAVA_TRIMMED)


def decode_text(data: bytes, *, path: str) -> str:
    """Decode UTF-8 like Spark's ``Source.fromInputStream(in, UTF_8)``: invalid bytes are an error."""
    if data.startswith(JAVA_SERIALIZATION_MAGIC):
        raise CheckpointParseError(
            path,
            JAVA_SERIALIZED,
            "Java-serialized object stream (bytes AC ED), the offsets format of Spark 2.0",
            line=1,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CheckpointParseError(
            path, NOT_TEXT, f"not UTF-8 text (invalid byte at offset {exc.start})", line=line
        ) from exc


_LINE_END = re.compile(r"\r\n|\r|\n")


def iter_lines(text: str) -> Iterator[str]:
    r"""Yield lines like ``BufferedReader.readLine``: ``\n``, ``\r`` and ``\r\n`` end a line; no final
    empty line. Lazy: a parser that stops early never holds the other lines."""
    start = 0
    if "\r" in text:
        for match in _LINE_END.finditer(text):
            yield text[start : match.start()]
            start = match.end()
    else:
        # Only \n ends a line: str.find is a fifth of the regex's time, and a compact sink log
        # holds a line per file it lists (bench: audit).
        find = text.find
        end = find("\n")
        while end >= 0:
            yield text[start:end]
            start = end + 1
            end = find("\n", start)
    if start < len(text):
        yield text[start:]


def split_lines(text: str) -> list[str]:
    r"""Return every line of ``text`` (:func:`iter_lines`) as a list: for short texts only."""
    return list(iter_lines(text))


def parse_version_line(text: str, *, max_version: int, path: str, line: int = 1) -> int:
    """Validate a ``v<N>`` line like ``MetadataVersionUtil.validateVersion`` and return N.

    Raises:
        CheckpointParseError: ``malformed-header`` when the line is not ``v<positive int>``, or
            ``unsupported-version`` (with ``version`` set) when N exceeds ``max_version``.
    """
    if text[:1] == "v":
        version = java_parse_int(text[1:])
        if version is not None and version > 0:
            if version > max_version:
                raise CheckpointParseError(
                    path,
                    UNSUPPORTED_VERSION,
                    f"log version v{version} is newer than any Spark release this tool knows "
                    f"(maximum v{max_version})",
                    line=line,
                    version=version,
                )
            return version
    shown = text if len(text) <= 40 else text[:40] + "..."
    # Spark's message quotes the whole line; a line of a 63 MB NUL-filled file (issue 31) is quoted
    # by its first FOUND_CHARS characters (every message, JSON answer and comparison holds it).
    found = text if len(text) <= FOUND_CHARS else text[:FOUND_CHARS] + "..."
    raise CheckpointParseError(
        path, MALFORMED_HEADER, f"first line {shown!r} is not a version line v<N>", line=line, found=found
    )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
#: The decoder of :func:`parse_json_value`, for a hot loop's fast path (``DECODER.raw_decode``).
DECODER = _DECODER


def parse_json_value(text: str, *, path: str, line: int) -> Any:
    """Parse the first JSON value of ``text`` like json4s/Jackson, which ignore trailing content.

    Raises:
        CheckpointParseError: ``truncated-json`` when the text ends inside the value, ``bad-json``
            otherwise.
    """
    stripped = text.lstrip(" \t\r\n")
    if not stripped:
        raise CheckpointParseError(path, TRUNCATED_JSON, "no JSON value (end of input)", line=line)
    try:
        value, _ = _DECODER.raw_decode(stripped)
    except json.JSONDecodeError as exc:
        # Cut inside a string: Python reports the string's start, Jackson "end-of-input".
        if exc.pos >= len(stripped.rstrip()) or exc.msg.startswith("Unterminated string"):
            raise CheckpointParseError(
                path, TRUNCATED_JSON, f"JSON ends early ({exc.msg})", line=line
            ) from exc
        raise CheckpointParseError(
            path, BAD_JSON, f"bad JSON at column {exc.colno} ({exc.msg})", line=line
        ) from exc
    except (ValueError, RecursionError) as exc:
        raise CheckpointParseError(path, BAD_JSON, str(exc) or "JSON nested too deeply", line=line) from exc
    return value


def java_long(value: int | float) -> int:
    """Return a JSON number as json4s extracts a ``Long`` field: an integer keeps its low 64 bits
    (``BigInt.longValue``); a fraction or exponent form is a double, truncated and clamped to the
    long range (``Double.longValue``: ``1e999`` is infinity, then ``Long.MaxValue``; NaN is 0)."""
    if isinstance(value, int):
        return ((value - _LONG_MIN) % 2**64) + _LONG_MIN
    if math.isnan(value):
        return 0
    if value >= 2.0**63:
        return _LONG_MAX
    if value <= -(2.0**63):
        return _LONG_MIN
    return int(value)


def json_long(obj: dict[str, Any], key: str, *, path: str, line: int, default: int = 0) -> int:
    """Read an optional JSON number field as json4s does for a ``Long`` case-class field."""
    value = obj.get(key, default)
    if type(value) is int and _LONG_MIN <= value <= _LONG_MAX:
        return value  # the common case, first: a compact sink log holds one per file it lists
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CheckpointParseError(
            path, INVALID_CONTENT, f"field {key!r} is not a number: {_shown(value)}", line=line
        )
    return java_long(value)


def json_int(obj: dict[str, Any], key: str, *, default: int) -> int | None:
    """Read an optional JSON number field as json4s does for an ``Int`` field (low 32 bits of an
    integer, a double clamped to the int range); None when it is not a number."""
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int):
        return ((value - _INT_MIN) % 2**32) + _INT_MIN
    return max(_INT_MIN, min(_INT_MAX, java_long(value)))


def _shown(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
