"""``java.util.UUID.fromString`` as JDK 17 runs it: the query id Spark reads from ``metadata``. Pure.

``StreamExecution`` takes its id as ``UUID.fromString(streamMetadata.id)`` when the query is built
(``DataStreamWriter.start()``), so an id it cannot parse fails every restart before a batch is read.
The JDK's parser (``UUID.fromString1``, reached for anything that is not 36 canonical characters)
is lenient: at most 36 UTF-16 characters; exactly four dashes; each of the five groups parsed by
``Long.parseLong(name, begin, end, 16)`` (an optional ``+``, at least one digit, no overflow of a
signed long, any digit ``Character.digit`` accepts, such as fullwidth ones) and then masked to 32,
16, 16, 16 and 48 bits. So ``1-2-3-4-5`` is 00000001-0002-0003-0004-000000000005 to Spark. The
exceptions and their texts are the JDK's (recorded by real Spark: fixtures ``metadata-id-*``).
JDK 8's older parser (``name.split("-")``) is not modelled: Spark 4 needs JDK 17.
"""

from __future__ import annotations

import re
import unicodedata
import uuid

#: ``UUID.fromString`` refuses a longer string before looking at it (counted in UTF-16 units).
MAX_LENGTH = 36
_LONG_MAX = (1 << 63) - 1
#: What ``UUID.toString`` writes; a string of this form always parses (fast path of java_uuid_error).
_CANONICAL = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
#: Masks of the five groups (``UUID.fromString1``): time_low, time_mid, time_hi, clock_seq, node.
_MASKS = (0xFFFFFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFFFFFFFFFF)
_FULLWIDTH = {**{chr(0xFF21 + i): 10 + i for i in range(6)}, **{chr(0xFF41 + i): 10 + i for i in range(6)}}


class JavaUuidError(ValueError):
    """What the JDK throws: its class (``IllegalArgumentException``, ``NumberFormatException``)
    and message."""

    def __init__(self, exception: str, message: str) -> None:
        super().__init__(f"{exception}: {message}")
        self.exception = exception
        self.message = message

    @property
    def text(self) -> str:
        """Return the exception as a Java stack trace's first line names it."""
        return f"{self.exception}: {self.message}"

    def __str__(self) -> str:
        return self.text


def _utf16_units(text: str) -> list[str]:
    """Return the UTF-16 code units Java's ``String.charAt`` walks (astral characters give two)."""
    units: list[str] = []
    for ch in text:
        if ord(ch) > 0xFFFF:
            v = ord(ch) - 0x10000
            units += [chr(0xD800 + (v >> 10)), chr(0xDC00 + (v & 0x3FF))]
        else:
            units.append(ch)
    return units


def _join(units: list[str]) -> str:
    return "".join(units).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _hex_digit(ch: str) -> int:
    """Return ``Character.digit(ch, 16)``: ASCII and fullwidth Latin letters, any decimal digit."""
    if "0" <= ch <= "9":
        return ord(ch) - 48
    if "a" <= ch.lower() <= "f" and ch.isascii():
        return ord(ch.lower()) - 87
    if ch in _FULLWIDTH:
        return _FULLWIDTH[ch]
    if 0xD800 <= ord(ch) <= 0xDFFF:
        return -1
    try:
        return unicodedata.decimal(ch)
    except ValueError:
        return -1


def _parse_long_hex(units: list[str]) -> int:
    """``Long.parseLong(s, begin, end, 16)`` on one group (no ``-``: it is the delimiter).

    Raises:
        JavaUuidError: NumberFormatException with the JDK's text (index relative to the group).
    """
    if not units:
        raise JavaUuidError("NumberFormatException", "")

    def error(i: int) -> JavaUuidError:
        return JavaUuidError("NumberFormatException", f'Error at index {i} in: "{_join(units)}"')

    i = 0
    if units[0] < "0":
        if units[0] != "+":
            raise error(0)
        i = 1
        if i == len(units):
            raise error(i)
    value = 0
    while i < len(units):
        digit = _hex_digit(units[i])
        # Long.parseLong accumulates negatively and fails where the next digit would overflow.
        if digit < 0 or value > _LONG_MAX // 16 or value * 16 + digit > _LONG_MAX:
            raise error(i)
        value = value * 16 + digit
        i += 1
    return value


def parse_java_uuid(text: str) -> uuid.UUID:
    """Return the UUID ``java.util.UUID.fromString(text)`` returns on JDK 17.

    Raises:
        JavaUuidError: what the JDK throws for it (``Invalid UUID string: ...``, ``UUID string too
            large``, or a ``NumberFormatException`` of one group).
    """
    units = _utf16_units(text)
    if len(units) > MAX_LENGTH:
        raise JavaUuidError("IllegalArgumentException", "UUID string too large")
    dashes = [i for i, u in enumerate(units) if u == "-"]
    if len(dashes) != 4:
        raise JavaUuidError("IllegalArgumentException", f"Invalid UUID string: {text}")
    bounds = [-1, *dashes, len(units)]
    groups = [
        _parse_long_hex(units[a + 1 : b]) & mask
        for a, b, mask in zip(bounds[:-1], bounds[1:], _MASKS, strict=True)
    ]
    msb = (groups[0] << 32) | (groups[1] << 16) | groups[2]
    lsb = (groups[3] << 48) | groups[4]
    return uuid.UUID(int=(msb << 64) | lsb)


def java_uuid_error(text: str) -> JavaUuidError | None:
    """Return what ``UUID.fromString(text)`` throws, or None when it parses."""
    if _CANONICAL.fullmatch(text):
        # The form Spark writes (UUID.toString): five ASCII hex groups of 8-4-4-4-12 digits, which
        # UUID.fromString always accepts; the audit asks this once per cell of every checkpoint.
        return None
    try:
        parse_java_uuid(text)
    except JavaUuidError as exc:
        return exc
    return None
