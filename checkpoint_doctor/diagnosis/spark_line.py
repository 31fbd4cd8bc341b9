"""A Spark release line as the restart model sees it: its order among the supported lines, whether
it prints error classes, and the error value every rule returns. Pure.

Split from :mod:`checkpoint_doctor.diagnosis.versions` so that the texts of each area (state
stores, per-source files) live in their own small modules as mixins of :class:`SparkLine`.
"""

from __future__ import annotations

from checkpoint_doctor.valueclasses import frozen

LINES = ("3.5", "4.0", "4.1", "4.2", "4.3")
NEWEST = LINES[-1]
#: Each line's place in ``LINES``: every rule of every cell of a restart matrix compares two.
_RANK = {line: i for i, line in enumerate(LINES)}


@frozen
class SparkError:
    """An error Spark raises on restart.

    ``message`` is the text that release prints (with ``<cp>`` for the checkpoint root);
    ``search`` is the part of it that is stable enough to grep a driver log for;
    ``headline`` what a one-line summary quotes when ``search`` is a fragment;
    ``phase`` is when it happens: ``start`` (DataStreamWriter.start), ``init`` (query thread before
    the first batch), ``batch`` (planning or running the first batch), ``commit`` (end of the first
    batch), ``task`` (inside the first batch's tasks).
    """

    message: str
    search: str
    phase: str
    error_class: str | None = None
    alternatives: tuple[str, ...] = ()
    #: What a one-line summary quotes when ``search`` is only a fragment of a sentence (default: it).
    headline: str | None = None

    @property
    def summary(self) -> str:
        """Return the words a one-line summary quotes."""
        return self.headline or self.search

    def matches(self, text: str) -> bool:
        """Return whether a driver log or exception text shows this error."""
        return self.search in text or any(a in text for a in self.alternatives)

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-safe dict."""
        return {
            "error_class": self.error_class,
            "message": self.message,
            "search": self.search,
            "also_seen_as": list(self.alternatives),
            "phase": self.phase,
        }


@frozen
class SparkLine:
    """A supported release line (``3.5`` .. ``4.3``)."""

    line: str

    def _at_least(self, line: str) -> bool:
        return _RANK[self.line] >= _RANK[line]

    def older_than(self, line: str) -> bool:
        """Whether this line is older than ``line`` (a restart on it is a downgrade)."""
        return _RANK[self.line] < _RANK[line]

    @property
    def error_classes(self) -> bool:
        """4.0+ prefix errors with ``[ERROR_CLASS]`` and append ``SQLSTATE``."""
        return self._at_least("4.0")

    def sqlstate(self, state: str) -> str:
        """Return the `` SQLSTATE: X`` suffix 4.x appends."""
        return f" SQLSTATE: {state}" if self.error_classes else ""
