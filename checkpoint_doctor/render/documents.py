"""The JSON documents the command line prints: one envelope for every command. Pure.

Every document is ``{"schema_version", "command", "tool_version", "generated_at", "exit_code",
"result" | "error"}`` and is described by a JSON Schema shipped in the package
(``checkpoint_doctor/schemas/<command>.json``, draft 2020-12; :func:`schema_path`). ``exit_code``
is the process's exit code (the CLI writes the document after it knows it). Adding a key is a
compatible change; renaming, removing or retyping one bumps the document's ``schema_version``.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from checkpoint_doctor.model import JsonObject
from checkpoint_doctor.version import __version__

__all__ = ["JsonObject", "dumps", "envelope", "iso_utc", "schema_path", "schema_version"]

#: The schema version of each document. ``diagnose`` 2 was the restart matrix; 3 (and 2 for the
#: others) adds the envelope's ``tool_version``/``generated_at``/``exit_code`` and one timeline shape.
SCHEMA_VERSIONS = {
    "inspect": 2,
    "diagnose": 3,
    "explain": 2,
    "plan": 2,
    "apply": 2,
    "undo": 2,
    "history": 2,
    "audit": 2,
    "audit-record": 2,
    "audit-summary": 2,
    "catch-up": 2,
    "error": 2,
}
#: Where the schemas are (package data).
SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"
#: The ``$id`` prefix of every schema.
SCHEMA_BASE = "https://checkpoint-doctor.invalid/schemas/"


def schema_version(command: str) -> int:
    """Return the schema version of a command's document."""
    return SCHEMA_VERSIONS.get(command, 2)


def schema_path(name: str) -> Path:
    """Return the file of a document's JSON Schema (``inspect``, ``audit-record``, ``error``...)."""
    return SCHEMA_DIR / f"{name}.json"


def iso_utc(ms: int) -> str:
    """Return epoch millis as ISO 8601 UTC with millisecond precision (``2026-01-01T00:00:00.000Z``)."""
    stamp = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def envelope(
    command: str,
    *,
    generated_at_ms: int,
    exit_code: int,
    result: Any = None,
    error: JsonObject | None = None,
) -> JsonObject:
    """Return the document a command prints: the envelope around its result or its error."""
    doc: JsonObject = {
        "schema_version": schema_version("error" if error is not None else command),
        "command": command,
        "tool_version": __version__,
        "generated_at": iso_utc(generated_at_ms),
        "exit_code": int(exit_code),
    }
    if error is not None:
        doc["error"] = error
    else:
        doc["result"] = result
    return doc


def dumps(doc: Any, *, compact: bool = False) -> str:
    """Return a document as JSON text (indented, or one line for JSON Lines)."""
    if compact:
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(doc, indent=2, ensure_ascii=False)
