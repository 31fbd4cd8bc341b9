"""The finding code registry: stable codes, never reused or renumbered; severity belongs to the code.

Ranges: CD0xx files and ``metadata``; CD1xx offsets <-> commits; CD2xx sources; CD3xx state;
CD4xx file sink; CD5xx writers and debris; CD6xx Spark versions and modes; CD7xx continuous mode;
CD8xx a Declarative Pipeline's flows (``pipeline_codes.py``).
A retired code stays with ``retired=True``. Each topic keeps its codes' texts beside its checks
(``codes_logs.py``, ``sources/codes.py``, ``state/codes.py``, ``sinks/codes.py``,
``codes_writers.py``, ``changes/codes.py``; the names in :mod:`~checkpoint_doctor.diagnosis.code_info`);
this module gathers them into the one registry. ``explain`` text says what Spark does, why it
breaks, what the operator can do, and which Spark texts to search for in a driver log.
"""

from __future__ import annotations

from checkpoint_doctor.diagnosis import codes_logs, codes_writers, pipeline_codes
from checkpoint_doctor.diagnosis.changes import codes as changes
from checkpoint_doctor.diagnosis.code_info import (
    ERROR,
    INFO,
    SEVERITY_ORDER,
    WARNING,
    Code,
    CodeInfo,
    Severity,
)
from checkpoint_doctor.diagnosis.sinks import codes as sinks
from checkpoint_doctor.diagnosis.sources import codes as sources
from checkpoint_doctor.diagnosis.state import codes as state

__all__ = [
    "CODES",
    "CODES_BY_SLUG",
    "ERROR",
    "INFO",
    "SEVERITY_ORDER",
    "SILENT_LOSS",
    "TABLES_NOT_JUDGED",
    "WARNING",
    "Code",
    "CodeInfo",
    "Severity",
    "lookup",
]

#: Every code's text, each kept by its topic beside its checks, in the registry's one order.
_ALL = (
    *codes_logs.LOG_CODES,
    *sources.CODES,
    *state.CODES,
    *sinks.CODES,
    *codes_writers.CODES,
    *codes_logs.CONTINUOUS_CODES,
    *changes.CODES,
    *pipeline_codes.CODES,
)

CODES: dict[str, CodeInfo] = {c.code: c for c in _ALL}

#: Warnings whose restart starts but loses data without a word from Spark (a Delta sink skipping the
#: re-planned batch ids its txn holds, CD407: DeltaSink.addBatch's "Skipping already complete epoch"):
#: they are repaired like errors, with consent, and every output points at the plan.
SILENT_LOSS: frozenset[str] = frozenset({Code.DELTA_SINK_SKIPS_BATCHES})
#: Findings that leave a Delta table the query may read or write not judged (unreadable, CD215;
#: copies none is guessed of, CD216): no plan step clears them, and a plan names them as left
#: unresolved whatever their severity, rather than "nothing to repair" (issue 31 items 1 and 8).
TABLES_NOT_JUDGED: frozenset[str] = frozenset({Code.DELTA_TABLE_UNREADABLE, Code.DELTA_TABLE_COPIES})
CODES_BY_SLUG: dict[str, CodeInfo] = {c.slug: c for c in _ALL}


def lookup(code_or_slug: str) -> CodeInfo | None:
    """Return the code info by code (case-insensitive) or slug."""
    return CODES.get(code_or_slug.upper()) or CODES_BY_SLUG.get(code_or_slug.lower())
