"""Layout of the text the commands print: tables, key-value blocks, sections, wrapped lines, and
the one JSON document. No click, no I/O: strings out.

JSON output is always one document (:mod:`checkpoint_doctor.render.documents`: the envelope, the schema
versions and the JSON Schemas). Tables use one fixed ``tablefmt`` and fixed column order, and never
truncate paths.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from checkpoint_doctor.render.documents import JsonObject, dumps, envelope


def tabulate(*args: Any, **kwargs: Any) -> str:
    """tabulate's table, imported on first use (JSON output never pays for it at start-up)."""
    from tabulate import tabulate as _tabulate

    return str(_tabulate(*args, **kwargs))


TABLEFMT = "simple"

#: Control characters a name or a file's text may carry (an ESC sequence in an object key would
#: recolour or rewrite the operator's terminal): shown as ``\xNN`` like non-UTF-8 bytes. Newline
#: and tab are the renderers' own.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if c not in (0x09, 0x0A)}


def printable(text: str) -> str:
    """Return text with control characters (other than newline and tab) shown as escapes."""
    return text.translate(_CONTROLS)


def one_line(text: str) -> str:
    """Return text for one table cell: every control character, newline and tab too, as an escape."""
    return printable(text).replace("\n", "\\x0a").replace("\t", "\\x09")


class JsonDocument(str):
    """A command's JSON document, as text, with what it holds: the CLI writes it once the exit
    code is known (the envelope's ``exit_code`` is the process's exit code)."""

    command: str
    result: Any
    error: JsonObject | None

    def __new__(cls, command: str, result: Any = None, error: JsonObject | None = None) -> JsonDocument:
        doc = envelope(command, generated_at_ms=0, exit_code=0, result=result, error=error)
        self = super().__new__(cls, dumps(doc))
        self.command = command
        self.result = result
        self.error = error
        return self

    def final(self, *, exit_code: int, generated_at_ms: int) -> str:
        """Return the document's text with its exit code and time."""
        return dumps(
            envelope(
                self.command,
                generated_at_ms=generated_at_ms,
                exit_code=exit_code,
                result=self.result,
                error=self.error,
            )
        )


def json_document(command: str, result: Any = None, *, error: JsonObject | None = None) -> JsonDocument:
    """Return the one JSON document a command prints (see :mod:`checkpoint_doctor.render.documents`)."""
    return JsonDocument(command, result, error)


#: The width text is laid out for (the CLI sets the terminal's: ``COLUMNS`` or the tty's).
_WIDTH: ContextVar[int] = ContextVar("width", default=100)
#: A column is never wrapped narrower than this.
MIN_COLUMN = 30


@contextmanager
def layout(width: int) -> Iterator[None]:
    """Lay text out for ``width`` columns inside the block."""
    token = _WIDTH.set(max(40, width))
    try:
        yield
    finally:
        _WIDTH.reset(token)


def line_width() -> int:
    """Return the width text is laid out for."""
    return _WIDTH.get()


def _column_limits(
    headers: Sequence[str], body: Sequence[Sequence[Any]], width: int, keep: Sequence[int] = ()
) -> list[int | None]:
    """Return per-column maximum widths so that the table fits ``width``: the widest columns are
    narrowed first, never below :data:`MIN_COLUMN` and never those in ``keep`` (paths, which must
    stay whole to be copied; a table that cannot fit stays wider)."""
    # tabulate pads a header by two (its MIN_PADDING): a column is never narrower than that.
    widths = [
        max([len(str(h)) + 2] + [max((len(x) for x in str(r[i]).splitlines()), default=0) for r in body])
        for i, h in enumerate(headers)
    ]
    natural = list(widths)
    # A column is not narrowed below its longest word (fill never breaks one): narrowing it more
    # would leave the others too wide for nothing.
    floors = [
        max(
            min(MIN_COLUMN, natural[i]), max((_longest_piece(str(r[i]), MIN_COLUMN) for r in body), default=0)
        )
        for i in range(len(headers))
    ]
    narrowable = [j for j in range(len(widths)) if j not in keep]
    while narrowable and sum(widths) + 2 * (len(widths) - 1) > width:
        i = max(narrowable, key=lambda j: widths[j] - floors[j])
        if widths[i] <= floors[i]:
            break
        widths[i] -= 1
    return [w if w < n else None for w, n in zip(widths, natural, strict=True)]


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, keep: Sequence[int] = ()) -> str:
    """Return a table in the project's fixed format ('-' for empty cells), its widest text columns
    wrapped so that it fits the layout width (the columns in ``keep`` never are)."""
    # Escaped before the widths are measured, so a name with control characters keeps its column;
    # a newline too (a file named "junk\nstate  fake" printed a row of its own).
    body = [
        ["-" if c is None or c == "" else (one_line(c) if isinstance(c, str) else c) for c in row]
        for row in rows
    ]
    limits = _column_limits(headers, body, line_width(), keep) if body else []
    if any(limits):
        # Wrapped here, not by tabulate's maxcolwidths: it cuts a word at the column's edge
        # (``DELTA_MISSIN|G_FILES_UNEXPECTED_VERSION``); fill breaks at spaces and dots only.
        body = [
            [
                "\n".join(fill(part, limit) for part in str(c).split("\n"))
                if limit and isinstance(c, str)
                else c
                for c, limit in zip(row, limits, strict=True)
            ]
            for row in body
        ]
    text = tabulate(body, headers=list(headers), tablefmt=TABLEFMT, disable_numparse=True)
    if max(map(len, text.splitlines()), default=0) > line_width():
        # Still too wide (columns of short values under long headers: inspect's state table ran to
        # 84 of 80): tabulate's two spaces of header padding go (its MIN_PADDING), the gaps stay.
        import tabulate as module

        padding = module.MIN_PADDING
        module.MIN_PADDING = 0
        try:
            text = tabulate(body, headers=list(headers), tablefmt=TABLEFMT, disable_numparse=True)
        finally:
            module.MIN_PADDING = padding
    return text


def key_values(pairs: Iterable[tuple[str, Any]]) -> str:
    """Return aligned ``key  value`` lines, long values wrapped under their column."""
    items = [(k, "-" if v is None or v == "" else str(v)) for k, v in pairs]
    width = max((len(k) for k, _ in items), default=0)
    room = max(line_width() - width - 2, 20)
    out = []
    for k, v in items:
        wrapped = "\n".join(fill(part, room) for part in v.split("\n"))
        out.append(f"{k.ljust(width)}  " + wrapped.replace("\n", "\n" + " " * (width + 2)))
    return "\n".join(out)


def bullets(items: Iterable[str]) -> str:
    """Return ``- item`` lines, each wrapped to the layout width under its text."""
    import textwrap

    return "\n".join(
        textwrap.fill(
            item,
            width=line_width(),
            initial_indent="- ",
            subsequent_indent="  ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        for item in items
    )


def fill(text: str, width: int) -> str:
    """Return text wrapped to ``width`` at spaces; a word longer than the width is broken after a
    dot (a provider class, a conf key: ``org.apache.spark.sql.``), never inside a name, and a path
    or a word without a dot stands whole on its own line (issue 36: never ``MISSIN|G``)."""
    if len(text) <= width:
        return text
    lines: list[str] = []
    current = ""
    for word in text.split():
        pieces = _dot_pieces(word, width) if len(word) > width and "/" not in word else [word]
        for i, piece in enumerate(pieces):
            joined = current + ("" if i else " ") + piece if current else piece
            if len(joined) <= width or not current:
                current = joined
            else:
                lines.append(current)
                current = piece
    lines.append(current)
    return "\n".join(lines)


def _longest_piece(text: str, width: int) -> int:
    """Return the widest line :func:`fill` makes of one word of ``text`` at ``width``."""
    return max(
        (
            max(len(p) for p in (_dot_pieces(w, width) if len(w) > width and "/" not in w else [w]))
            for w in text.split()
        ),
        default=0,
    )


def _dot_pieces(word: str, width: int) -> list[str]:
    """Return a long word cut after its dots into pieces of at most ``width`` (a piece without a dot
    inside may be longer)."""
    import re

    pieces: list[str] = []
    for part in re.findall(r"[^.]*\.|[^.]+$", word):
        if pieces and len(pieces[-1]) + len(part) <= width:
            pieces[-1] += part
        else:
            pieces.append(part)
    return pieces


def human_bytes(n: int) -> str:
    """Return a byte count in B/KiB/MiB/GiB."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def section(title: str, body: str) -> str:
    """Return a titled block."""
    return f"{title}\n{body}" if body else title


def wrap(text: str, indent: int) -> str:
    import textwrap

    return textwrap.fill(
        text,
        width=line_width(),
        initial_indent=" " * indent,
        subsequent_indent=" " * indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


#: A command the operator copies: printed whole on its own line, never wrapped.
_COMMAND = "checkpoint-doctor "


def hang(text: str, first: str, rest: str) -> str:
    """Return ``text`` wrapped to the layout width, its first line after ``first``, the others
    indented by ``rest``; a ``checkpoint-doctor`` command in it goes whole on a line of its own."""
    import textwrap

    def fill(part: str, head: str) -> str:
        return textwrap.fill(
            part,
            width=line_width(),
            initial_indent=head,
            subsequent_indent=rest,
            break_long_words=False,
            break_on_hyphens=False,
        )

    lead, mark, command = text.partition(_COMMAND)
    if not mark or "'" in command[:1] or lead.endswith("'"):
        return fill(text, first)
    lead = lead.rstrip()
    head = fill(lead, first) + "\n" if lead else first
    return head + (rest if lead else "") + mark + command


def local_time(ms: Any) -> str:
    """Return epoch millis as the reader's local time with its UTC offset (``-`` when unknown)."""
    if not isinstance(ms, int) or isinstance(ms, bool):
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M:%S %z")
    except (OverflowError, OSError, ValueError):  # a hand-edited record: show what it holds
        return str(ms)
