"""Audit records, the fleet summary, and their text and JSON renderings. Pure: dicts and strings out.

One **record** per audited directory (``schema_version`` 1; adding keys is compatible)::

    {"schema_version": 1, "kind": "checkpoint" | "sink" | "root", "checkpoint": <URL>,
     "root": <root URL>, "path": <path relative to the root>,
     "verdict": "ok" | "warning" | "error" | "unreadable", "exit_code": 0 | 1 | 4 | 8 | 16,
     "restart": {"outcome": "starts" | "fails", "summary": ..., "next_batch_id": ..., "caused_by": [...]},
     "codes": [...], "files": <files listed>, "reads": <files read>, "timeline": [...],
     "diagnosis": <the same dict as ``diagnose --format json`` prints as its result>}

* ``kind`` ``checkpoint``: a checkpoint, diagnosed exactly as ``diagnose`` does (default options
  apart from ``--spark``/``--mode``/``--live-window``).
* ``kind`` ``sink``: a file sink output directory (it holds ``_spark_metadata/``). The format links
  no sink to its checkpoint, so a sink is audited on its own: the checks that need no checkpoint
  (CD404 files readers need are missing, CD405 unreadable log file, CD406 no log); ``restart`` is
  null, ``findings`` lists them and ``sink`` describes the log. Pair a sink with its checkpoint with
  ``diagnose <checkpoint> --sink-path <sink>`` for the cross checks (CD401-CD403).
* ``kind`` ``root``: a root that could not be listed (always ``unreadable``).
* ``verdict`` ``unreadable`` (exit code 8): the directory could not be read; ``error`` says why
  (``{"type", "message"}``) and there is no ``diagnosis``. An internal error while auditing one
  directory is recorded the same way with exit code 16 and ``error.type`` ``InternalError``.

``checkpoint`` is the URL of the audited directory whatever its kind. The exit code of the audit is
the bitwise OR of the records' exit codes (fsck style).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from checkpoint_doctor.diagnosis.codes import CODES, SEVERITY_ORDER
from checkpoint_doctor.render import SCHEMA_VERSION, key_values, section, table

EXIT_OK = 0
EXIT_WARNINGS = 1
EXIT_ERRORS = 4
EXIT_UNREADABLE = 8
EXIT_INTERNAL = 16

OK = "ok"
WARNING = "warning"
ERROR = "error"
UNREADABLE = "unreadable"
VERDICTS = (ERROR, UNREADABLE, WARNING, OK)
#: How bad a verdict is, worst first (table order).
VERDICT_ORDER = {UNREADABLE: 0, ERROR: 1, WARNING: 2, OK: 3}

#: Cell states of the timeline picture.
PRESENT = "present"
MISSING = "missing"
PENDING = "pending"
PARTIAL = "partial"
ABSENT = "absent"
COMPACT = "compact"
FOLDED = "folded"
NONE = "none"

NOTES_SHOWN = 20


def verdict_of(exit_code: int) -> str:
    """Return the verdict of a record's exit code."""
    if exit_code & (EXIT_UNREADABLE | EXIT_INTERNAL):
        return UNREADABLE
    if exit_code & EXIT_ERRORS:
        return ERROR
    if exit_code & EXIT_WARNINGS:
        return WARNING
    return OK


def combined_exit_code(records: Iterable[Mapping[str, Any]]) -> int:
    """Return the bitwise OR of the records' exit codes."""
    code = 0
    for record in records:
        code |= int(record["exit_code"])
    return code


def _base(kind: str, url: str, root: str, path: str, exit_code: int) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": kind,
        "checkpoint": url,
        "root": root,
        "path": path,
        "verdict": verdict_of(exit_code),
        "exit_code": exit_code,
        "restart": None,
        "codes": [],
    }


def checkpoint_timeline(rows: Sequence[Mapping[str, Any]], mode: str) -> list[dict[str, Any]]:
    """Turn ``inspection.timeline`` rows (newest first) into cell states for the picture.

    ``offsets``/``commit``: present or missing; the newest planned batch's missing commit (and its
    not yet written state version) is ``pending``, which is how a query stopped mid-batch looks.
    Under async progress tracking offsets and commits are sparse by design: a gap is ``absent``,
    not ``missing``. ``state`` (the version the batch commits, in every store): present, partial,
    missing, pending, or ``none`` for a stateless query.
    """
    latest_offsets = next((r["batch_id"] for r in rows if r["offsets"]), None)
    sparse = mode == "async"
    out = []
    for row in rows:
        b = row["batch_id"]
        pending = b == latest_offsets and not row["commit"]
        gap = ABSENT if sparse else MISSING
        offsets = PRESENT if row["offsets"] else gap
        commit = PRESENT if row["commit"] else (PENDING if pending else gap)
        state = row.get("state")
        if state is None:
            state_cell = NONE
        elif state["present"] == state["stores"]:
            state_cell = PRESENT
        elif pending or (sparse and not row["commit"]):
            state_cell = PENDING if pending else ABSENT
        elif state["present"]:
            state_cell = PARTIAL
        else:
            state_cell = MISSING
        cell = {"batch_id": b, "offsets": offsets, "commit": commit, "state": state_cell}
        if state is not None:
            cell["state_stores"] = [state["present"], state["stores"]]
        out.append(cell)
    return out


def checkpoint_record(
    *,
    url: str,
    root: str,
    path: str,
    diagnosis: Any,
    timeline_rows: Sequence[Mapping[str, Any]],
    files: int,
    reads: int,
) -> dict[str, Any]:
    """Return the record of a diagnosed checkpoint (``diagnosis`` is a :class:`Diagnosis`)."""
    data = diagnosis.to_dict()
    record = _base("checkpoint", url, root, path, diagnosis.exit_code)
    restart = data["restart"]
    record["restart"] = {
        "outcome": restart["outcome"],
        "summary": restart["summary"],
        "next_batch_id": restart["next_batch_id"],
        "caused_by": restart["caused_by"],
    }
    record["codes"] = list(diagnosis.codes)
    record["query_id"] = diagnosis.query_id
    record["files"] = files
    record["reads"] = reads
    record["timeline"] = checkpoint_timeline(timeline_rows, diagnosis.mode)
    record["diagnosis"] = data
    return record


def sink_timeline(ids: Sequence[int], compacts: Sequence[int], missing: Sequence[str], length: int = 12) -> list[dict[str, Any]]:
    """Cell states of a sink log's newest ids: present, compact, folded into an older ``.compact``
    (the batch file may be gone: that is normal), missing (readers need it), or absent."""
    everything = set(ids) | set(compacts)
    if not everything:
        return []
    top = max(everything)
    present, compact = set(ids), set(compacts)
    needed = {m.rpartition("/")[2] for m in missing}
    last_compact = max(compact, default=-1)
    rows = []
    for b in range(top, max(0, top - length + 1) - 1, -1):
        if b in compact:
            state = COMPACT
        elif b in present:
            state = PRESENT
        elif str(b) in needed or f"{b}.compact" in needed:
            state = MISSING
        elif b <= last_compact:
            state = FOLDED
        else:
            state = ABSENT
        rows.append({"batch_id": b, "sink": state})
    return rows


def sink_record(
    *,
    url: str,
    root: str,
    path: str,
    findings: Sequence[Any],
    log: Mapping[str, Any],
    timeline: list[dict[str, Any]],
    files: int,
    reads: int,
) -> dict[str, Any]:
    """Return the record of a file sink output (``findings`` are :class:`Finding` values)."""
    severities = {f.severity for f in findings}
    code = EXIT_ERRORS if "error" in severities else EXIT_WARNINGS if "warning" in severities else EXIT_OK
    record = _base("sink", url, root, path, code)
    record["codes"] = sorted({f.code for f in findings})
    record["files"] = files
    record["reads"] = reads
    record["timeline"] = timeline
    record["sink"] = dict(log)
    record["findings"] = [f.to_dict() for f in findings]
    return record


def unreadable_record(
    *, kind: str, url: str, root: str, path: str, error_type: str, message: str, internal: bool = False
) -> dict[str, Any]:
    """Return the record of a directory that could not be audited."""
    record = _base(kind, url, root, path, EXIT_INTERNAL if internal else EXIT_UNREADABLE)
    record["error"] = {"type": error_type, "message": message}
    return record


def sort_records(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return records in a stable order: by URL, then kind."""
    return sorted(records, key=lambda r: (r["checkpoint"], r["kind"]))


def summarize(records: Sequence[Mapping[str, Any]], notes: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """Return the fleet summary: counts by kind and verdict, restarts that fail, records per code."""
    verdicts = Counter(r["verdict"] for r in records)
    kinds = Counter(r["kind"] for r in records)
    per_code: Counter[str] = Counter()
    for r in records:
        per_code.update(set(r["codes"]))
    codes = []
    for code, count in per_code.items():
        info = CODES.get(code)
        codes.append(
            {
                "code": code,
                "slug": info.slug if info else None,
                "severity": info.severity if info else None,
                "title": info.title if info else None,
                "count": count,
            }
        )
    codes.sort(key=lambda c: (SEVERITY_ORDER.get(str(c["severity"]), 9), -int(c["count"] or 0), str(c["code"])))
    return {
        "total": len(records),
        "kinds": {k: kinds.get(k, 0) for k in ("checkpoint", "sink", "root")},
        "verdicts": {v: verdicts.get(v, 0) for v in (OK, WARNING, ERROR, UNREADABLE)},
        "restart_fails": sum(1 for r in records if (r.get("restart") or {}).get("outcome") == "fails"),
        "codes": codes,
        "notes": len(notes),
        "exit_code": combined_exit_code(records),
    }


def audit_document(roots: Sequence[str], records: Sequence[Mapping[str, Any]], notes: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> dict[str, Any]:
    """Return the ``result`` of ``audit --format json``."""
    return {"roots": list(roots), "summary": dict(summary), "records": list(records), "notes": list(notes)}


def jsonl_lines(roots: Sequence[str], records: Sequence[Mapping[str, Any]], notes: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> str:
    """Return ``--format jsonl``: one record per line, then one final ``"kind": "summary"`` line
    (with the roots and the notes), so a consumer can tell a complete output from a cut one."""
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records]
    final = {"schema_version": SCHEMA_VERSION, "kind": "summary", "roots": list(roots), **summary, "notes": list(notes)}
    lines.append(json.dumps(final, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def _what(record: Mapping[str, Any]) -> str:
    if record.get("error"):
        return record["error"]["message"]
    if record.get("restart"):
        return record["restart"]["summary"]
    if record["kind"] == "sink":
        latest = (record.get("sink") or {}).get("latest")
        return f"file sink output, latest sink batch {latest if latest is not None else '-'}"
    return "-"


def render_audit(roots: Sequence[str], records: Sequence[Mapping[str, Any]], notes: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> str:
    """Return the audit as text: headline, the directories that need attention, counts by verdict
    and by finding code, and what was skipped."""
    kinds = summary["kinds"]
    v = summary["verdicts"]
    blocks = [
        key_values(
            [
                ("Audited", ", ".join(roots)),
                ("Found", f"{kinds['checkpoint']} checkpoints, {kinds['sink']} file sink outputs"),
                ("Will not restart", summary["restart_fails"]),
                ("Verdicts", f"{v[ERROR]} error, {v[UNREADABLE]} unreadable, {v[WARNING]} warning, {v[OK]} ok"),
                ("Exit code", summary["exit_code"]),
            ]
        )
    ]
    attention = sorted(
        (r for r in records if r["verdict"] != OK),
        key=lambda r: (VERDICT_ORDER[r["verdict"]], r["checkpoint"], r["kind"]),
    )
    if attention:
        rows = [
            [r["verdict"], r["checkpoint"] + ("  (sink)" if r["kind"] == "sink" else ""), _what(r), " ".join(r["codes"])]
            for r in attention
        ]
        hidden = v[OK]
        title = "Needs attention" + (f" ({hidden} ok not shown; --format jsonl lists every record)" if hidden else "")
        blocks.append(section(title, table(["verdict", "checkpoint", "restart", "codes"], rows)))
    blocks.append(
        section(
            "By verdict",
            table(["verdict", "count"], [[name, v[name]] for name in VERDICTS]),
        )
    )
    if summary["codes"]:
        blocks.append(
            section(
                "By finding code",
                table(
                    ["code", "severity", "count", "title"],
                    [[c["code"], c["severity"], c["count"], c["title"]] for c in summary["codes"]],
                ),
            )
        )
    if notes:
        shown = list(notes)[:NOTES_SHOWN]
        more = len(notes) - len(shown)
        title = "Skipped" + (f" (first {NOTES_SHOWN} of {len(notes)}; --format json lists all)" if more > 0 else "")
        blocks.append(section(title, table(["path", "note"], [[n["url"], n["message"]] for n in shown])))
    return "\n\n".join(blocks) + "\n"
