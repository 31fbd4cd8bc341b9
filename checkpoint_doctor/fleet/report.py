"""Audit records, the fleet summary, and their text and JSON renderings. Pure: dicts and strings out.

One **record** per audited directory (JSON Schema ``schemas/audit-record.json``)::

    {"schema_version", "tool_version", "generated_at", "kind": "checkpoint" | "sink" | "root",
     "url": <URL of the directory>, "root": <root URL>, "path": <path relative to the root>,
     "verdict": "ok" | "warning" | "error" | "unreadable", "exit_code": 0 | 1 | 4 | 8 | 16,
     "codes": [...], "next_step": <a command that runs as printed> | null, ...}

* ``kind`` ``checkpoint`` (``checkpoint``: its URL): diagnosed exactly as ``diagnose`` does
  (default options apart from ``--spark``/``--mode``/``--live-window``): ``restart``, ``matrix``,
  ``lines``, ``latest`` (newest offsets and commit ids, the gap between them, the newest batch's
  planning time), ``timeline`` (the shape ``inspect`` prints) and ``diagnosis`` (``diagnose``'s result).
* ``kind`` ``sink`` (``sink``: its URL): a file sink output directory (it holds
  ``_spark_metadata/``), checked on its own (CD404 files readers need are missing, CD405 unreadable
  log file, CD406 no log): ``findings``, ``sink_log``, ``paired_with`` (the audited checkpoints
  whose logs prove it is theirs, checked with it: CD401-CD403) and ``pairing`` in words.
* ``kind`` ``root``: a root that could not be listed, or a directory below a root and outside every
  checkpoint and sink that could not be listed (``path`` names it; always ``unreadable``). A
  directory inside a checkpoint that could not be listed makes that checkpoint's record
  ``unreadable``, naming the directory.
* ``verdict`` ``unreadable`` (exit code 8): the directory could not be read; ``error`` says why
  (``{"type", "message"}``). An internal error while auditing one directory is recorded the same
  way with exit code 16 and ``error.type`` ``InternalError``.

The exit code of the audit is the bitwise OR of the records' exit codes (fsck style).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from typing import Any

from checkpoint_doctor.diagnosis.codes import CODES, SEVERITY_ORDER
from checkpoint_doctor.diagnosis.versions import qualify_root
from checkpoint_doctor.exit_codes import ExitCode
from checkpoint_doctor.fleet.delta_report import delta_headline, paired_table_note
from checkpoint_doctor.ids import count_text
from checkpoint_doctor.render.documents import dumps, iso_utc, schema_version
from checkpoint_doctor.render.hints import Hints
from checkpoint_doctor.render.layout import key_values, section, table


class Verdict(str, Enum):
    """A record's verdict (a ``str``, so it compares and serializes as its word), in the one order
    every output uses: the worst first. An error (a restart that fails, a sink readers cannot use)
    is what to fix; an unreadable directory may hide one; a warning may need nothing."""

    ERROR = "error"
    UNREADABLE = "unreadable"
    WARNING = "warning"
    OK = "ok"

    def __str__(self) -> str:
        return self.value


OK = Verdict.OK
WARNING = Verdict.WARNING
ERROR = Verdict.ERROR
UNREADABLE = Verdict.UNREADABLE
#: The verdicts, worst first: the triage order, the tables, the summary and the metrics.
VERDICTS = tuple(Verdict)
#: How bad a verdict is (0: worst).
VERDICT_ORDER = {v: i for i, v in enumerate(VERDICTS)}

NOTES_SHOWN = 20


def _cells(items: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    return {(str(c["spark"]), str(c["mode"])) for c in items}


def only_elsewhere(record: Mapping[str, Any]) -> bool:
    """Whether a warning concerns only restarts other than the configured one (async switched off,
    a newer line): the configured restart starts and no warning or error finding names it."""
    if record["verdict"] != WARNING or (record.get("restart") or {}).get("outcome") == "fails":
        return False
    configured = _cells(c for c in record.get("matrix") or () if c["role"] == "as-configured")
    serious = [f for f in record_findings(record) if f["severity"] in ("error", "warning")]
    return bool(configured and serious) and all(
        f.get("cells") and not (_cells(f["cells"]) & configured) for f in serious
    )


def batches_at_risk(record: Mapping[str, Any]) -> int:
    """Return how many batch ids the record's error and warning findings name (re-run, skipped,
    lost or unreadable batches): the data at risk, as far as a checkpoint shows it."""
    ids = {
        b for f in record_findings(record) if f["severity"] in ("error", "warning") for b in f["batch_ids"]
    }
    return len(ids)


def record_findings(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Return a record's findings (a sink's own, or its checkpoint's merged diagnosis)."""
    findings = record.get("findings")
    if findings is None and record.get("diagnosis"):
        findings = record["diagnosis"].get("findings")
    return list(findings or [])


def triage_key(record: Mapping[str, Any]) -> tuple[Any, ...]:
    """Order records for triage: the restart that counts fails first, then by verdict, then a
    warning about the configured restart before one about other restarts only, then by the data at
    risk (most batches first), then by path."""
    fails = (record.get("restart") or {}).get("outcome") == "fails"
    return (
        0 if fails else 1,
        VERDICT_ORDER[record["verdict"]],
        1 if only_elsewhere(record) else 0,
        -batches_at_risk(record),
        record["url"],
        record["kind"],
    )


def verdict_of(exit_code: int) -> Verdict:
    """Return the verdict of a record's exit code."""
    if exit_code & (ExitCode.UNREADABLE | ExitCode.INTERNAL):
        return UNREADABLE
    if exit_code & ExitCode.ERRORS:
        return ERROR
    if exit_code & ExitCode.WARNINGS:
        return WARNING
    return OK


def combined_exit_code(records: Iterable[Mapping[str, Any]]) -> int:
    """Return the bitwise OR of the records' exit codes."""
    code = 0
    for record in records:
        code |= int(record["exit_code"])
    return code


def _base(kind: str, url: str, root: str, path: str, exit_code: int) -> dict[str, Any]:
    record: dict[str, Any] = {
        "schema_version": schema_version("audit-record"),
        "kind": kind,
        "url": url,
        "root": root,
        "path": path,
        "verdict": verdict_of(exit_code).value,
        "exit_code": int(exit_code),
        "codes": [],
        "next_step": None,
    }
    if kind in ("checkpoint", "sink"):
        record[kind] = url
    return record


def failing_cells(cells: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Return a record's matrix cells whose restart counts and fails: what
    :attr:`MatrixDiagnosis.failing_cells <checkpoint_doctor.diagnosis.matrix.MatrixDiagnosis.failing_cells>`
    returned, as the record holds it."""
    return [c for c in cells if c["counted"] and c["outcome"] == "fails"]


def line_verdicts(cells: Sequence[Mapping[str, Any]]) -> str:
    """Return the counted cells of a restart matrix per Spark line, compactly: ``4.3 ok``,
    ``3.5-4.1 ok; 4.2-4.3 FAILS`` or ``3.5-4.3 FAILS (micro-batch)`` (the modes that fail)."""
    groups: list[tuple[str, list[str]]] = []
    lines = list(dict.fromkeys(c["spark"] for c in cells if c["counted"]))
    for line in lines:
        failing = [c["mode"] for c in failing_cells(cells) if c["spark"] == line]
        stateless_only = any(c["counted"] and c["spark"] == line and fails_if_stateful(c) for c in cells)
        verdict = (
            ("ok if stateless" if stateless_only else "ok")
            if not failing
            else "FAILS"
            + (
                f" ({', '.join(failing)})"
                if len(failing) < len([c for c in cells if c["counted"] and c["spark"] == line])
                else ""
            )
        )
        if groups and groups[-1][0] == verdict:
            groups[-1][1].append(line)
        else:
            groups.append((verdict, [line]))
    return "; ".join(
        f"{members[0]}{'-' + members[-1] if len(members) > 1 else ''} {verdict}"
        for verdict, members in groups
    )


def fails_if_stateful(cell: Mapping[str, Any]) -> bool:
    """Whether a restart that starts fails if the query is stateful (statefulness unknown, CD310)."""
    return cell["outcome"] == "starts" and str(cell.get("if_stateful") or "").startswith("FAILS")


def assumed_stateless(record: Mapping[str, Any]) -> bool:
    """Whether a checkpoint is judged as stateless though nothing tells and nothing suggests state
    (no state/, no watermark), while a stateful query's restart on it fails (``stateful.if_stateful``)."""
    stateful = record.get("stateful") or {}
    return not stateful.get("suspected") and any(
        str(o["restart"]).startswith("FAILS") for o in stateful.get("if_stateful") or []
    )


def checkpoint_record(
    *,
    url: str,
    root: str,
    path: str,
    matrix: Any,
    timeline: Sequence[Any],
    latest: Mapping[str, Any],
    files: int,
    reads: int,
    sink: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return the record of a checkpoint diagnosed for its restart matrix (``matrix`` is a
    :class:`~checkpoint_doctor.diagnosis.matrix.MatrixDiagnosis`, ``timeline`` its
    :class:`~checkpoint_doctor.diagnosis.timeline.TimelineRow` values, ``latest`` what
    :func:`latest_batches` returns); ``sink`` says which file sink output was checked with it
    (``checked``, ``url``, ``evidence``) or why none (``note``)."""
    data = matrix.to_dict()
    record = _base("checkpoint", url, root, path, matrix.exit_code)
    restart = data["restart"]
    primary = matrix.primary.to_dict()
    record["restart"] = {
        "outcome": restart["outcome"],
        "summary": restart["summary"],
        "next_batch_id": restart["next_batch_id"],
        "caused_by": restart["caused_by"],
        "if_stateful": primary["if_stateful"],
    }
    if fails_if_stateful(record["restart"]):
        # As diagnose's "?": the restart starts only if the query is stateless (CD310).
        record["restart"]["summary"] += f" if stateless; if stateful: {primary['if_stateful']}"
    record["matrix"] = [
        {k: c[k] for k in ("spark", "mode", "role", "counted", "label", "outcome", "summary", "if_stateful")}
        for c in data["matrix"]
    ]
    record["lines"] = line_verdicts(record["matrix"])
    record["stateful"] = data["stateful"]
    record["file_sink"] = (
        dict(sink) if sink is not None else {"checked": False, "url": None, "note": "sink not checked"}
    )
    record["codes"] = sorted({f["code"] for f in data["findings"]})
    record["query_id"] = data["query_id"]
    record["files"] = files
    record["reads"] = reads
    record["latest"] = dict(latest)
    record["timeline"] = [row.to_dict() for row in timeline]
    record["diagnosis"] = data
    return record


def latest_batches(offsets: int | None, commit: int | None, batch_time_ms: int | None) -> dict[str, Any]:
    """Return a checkpoint's newest offsets and commit ids, the batches planned but not committed
    between them, and when the newest batch was planned (``batchTimestampMs``)."""
    gap = None if offsets is None else offsets - (commit if commit is not None else -1)
    return {
        "offsets": offsets,
        "commit": commit,
        "uncommitted": gap,
        "batch_time_ms": batch_time_ms,
        "batch_time": iso_utc(batch_time_ms) if batch_time_ms else None,
    }


def paired_sinks(records: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Return, per file sink URL, the checkpoints whose logs proved it is theirs (checked with it)."""
    paired: dict[str, list[str]] = {}
    for r in records:
        sink = r.get("file_sink") or {}
        if r["kind"] == "checkpoint" and sink.get("checked"):
            paired.setdefault(sink["url"], []).append(r["url"])
    return paired


def linked(record: Mapping[str, Any], paired: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """Return a sink record that names the checkpoint checked with it, or says that none was
    ("sink not checked": CD401-CD403 need the checkpoint); other records unchanged (copied)."""
    if record["kind"] != "sink" or "error" in record:
        return dict(record)
    with_it = list(paired.get(record["url"], []))
    if not with_it:
        pairing = (
            "sink not checked against a checkpoint: no audited checkpoint's logs match this log "
            "(pass it to 'diagnose <checkpoint> --sink-path' for the cross checks)"
        )
    else:
        pairing = "checked with " + ", ".join(with_it) + " (see its record)"
    return {**record, "paired_with": with_it, "pairing": pairing}


def link_sinks(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return the records with each sink record linked to its checkpoint (:func:`linked`)."""
    paired = paired_sinks(records)
    return [linked(r, paired) for r in records]


def sink_record(
    *,
    url: str,
    root: str,
    path: str,
    findings: Sequence[Any],
    log: Mapping[str, Any],
    timeline: Sequence[Any],
    files: int,
    reads: int,
) -> dict[str, Any]:
    """Return the record of a file sink output (``findings`` are :class:`Finding` values,
    ``timeline`` :class:`~checkpoint_doctor.diagnosis.timeline.SinkRow` values)."""
    severities = {f.severity for f in findings}
    code = (
        ExitCode.ERRORS
        if "error" in severities
        else ExitCode.WARNINGS
        if "warning" in severities
        else ExitCode.OK
    )
    record = _base("sink", url, root, path, code)
    record["codes"] = sorted({f.code for f in findings})
    record["files"] = files
    record["reads"] = reads
    record["timeline"] = [row.to_dict() for row in timeline]
    record["sink_log"] = dict(log)
    record["findings"] = [f.to_dict() for f in findings]
    record["paired_with"] = []
    record["pairing"] = None
    return record


def unreadable_record(
    *, kind: str, url: str, root: str, path: str, error_type: str, message: str, internal: bool = False
) -> dict[str, Any]:
    """Return the record of a directory that could not be audited."""
    record = _base(kind, url, root, path, ExitCode.INTERNAL if internal else ExitCode.UNREADABLE)
    record["error"] = {"type": error_type, "message": message}
    return record


def sort_records(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Return records in a stable order: by URL, then kind."""
    return sorted(records, key=lambda r: (r["url"], r["kind"]))


def summarize(
    records: Sequence[Mapping[str, Any]],
    notes: Sequence[Mapping[str, Any]] = (),
    *,
    interrupted: bool = False,
) -> dict[str, Any]:
    """Return the fleet summary: counts by kind and verdict, restarts that fail, records per code;
    ``interrupted``: the audit was stopped (Ctrl-C) and the counts cover what had finished."""
    verdicts = Counter(r["verdict"] for r in records)
    kinds = Counter(r["kind"] for r in records)
    per_code = _records_per_code(records)
    worst = _effective_severities(records)
    codes = []
    for code, count in per_code.items():
        info = CODES.get(code)
        codes.append(
            {
                "code": code,
                "slug": info.slug if info else None,
                "severity": worst.get(code) or (info.severity if info else None),
                "title": info.title if info else None,
                "count": count,
            }
        )
    codes.sort(
        key=lambda c: (SEVERITY_ORDER.get(str(c["severity"]), 9), -int(c["count"] or 0), str(c["code"]))
    )
    return {
        "total": len(records),
        "kinds": {k: kinds.get(k, 0) for k in ("checkpoint", "sink", "root")},
        "verdicts": {v.value: verdicts.get(v, 0) for v in VERDICTS},
        "restart_fails": sum(1 for r in records if (r.get("restart") or {}).get("outcome") == "fails"),
        "restart_fails_if_stateful": sum(
            1 for r in records if r.get("restart") and fails_if_stateful(r["restart"])
        ),
        "assumed_stateless": sum(1 for r in records if assumed_stateless(r)),
        "some_restart_fails": sum(1 for r in records if failing_cells(r.get("matrix") or ())),
        "codes": codes,
        "note_count": len(notes),
        "exit_code": combined_exit_code(records),
        "interrupted": interrupted,
    }


def _records_per_code(records: Sequence[Mapping[str, Any]]) -> Counter[str]:
    """Count, per code, the places it was found: a sink checked together with its checkpoint shows
    the sink's findings in both records, and they count once (on the checkpoint)."""
    seen_by_checkpoint: dict[str, set[str]] = {}
    for r in records:
        sink = r.get("file_sink") or {}
        if r["kind"] == "checkpoint" and sink.get("checked") and sink.get("url"):
            seen_by_checkpoint.setdefault(sink["url"], set()).update(r["codes"])
    per_code: Counter[str] = Counter()
    for r in records:
        codes = set(r["codes"])
        if r["kind"] == "sink":
            codes -= seen_by_checkpoint.get(r.get("url") or "", set())
        per_code.update(codes)
    return per_code


def _effective_severities(records: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Return each code's worst severity as the findings had it (a failing restart that does not
    count is a warning, whatever the registry's default severity)."""
    worst: dict[str, str] = {}
    for r in records:
        findings = r.get("findings") or (r.get("diagnosis") or {}).get("findings") or ()
        for f in findings:
            code, severity = f.get("code"), f.get("severity")
            if (
                code
                and severity
                and SEVERITY_ORDER.get(severity, 9) < SEVERITY_ORDER.get(worst.get(code, ""), 9)
            ):
                worst[code] = severity
    return worst


def audit_document(
    roots: Sequence[str],
    records: Sequence[Mapping[str, Any]],
    notes: Sequence[Mapping[str, Any]],
    summary: Mapping[str, Any],
) -> dict[str, Any]:
    """Return the ``result`` of ``audit --format json``."""
    return {"roots": list(roots), "summary": dict(summary), "records": list(records), "notes": list(notes)}


def stamped(record: Mapping[str, Any], generated_at_ms: int) -> dict[str, Any]:
    """Return a record with the envelope fields every document carries (tool version, time)."""
    from checkpoint_doctor import __version__

    return {
        "schema_version": record["schema_version"],
        "tool_version": __version__,
        "generated_at": iso_utc(generated_at_ms),
        **{k: v for k, v in record.items() if k != "schema_version"},
    }


def record_line(record: Mapping[str, Any], generated_at_ms: int) -> str:
    """Return one JSON Lines line of a record (no newline)."""
    return dumps(stamped(record, generated_at_ms), compact=True)


def summary_line(
    roots: Sequence[str],
    notes: Sequence[Mapping[str, Any]],
    summary: Mapping[str, Any],
    generated_at_ms: int,
) -> str:
    """Return the last JSON Lines line, ``"kind": "summary"`` (with the roots and the notes), so a
    consumer can tell a complete output from a cut one."""
    from checkpoint_doctor import __version__

    final = {
        "schema_version": schema_version("audit-summary"),
        "tool_version": __version__,
        "generated_at": iso_utc(generated_at_ms),
        "kind": "summary",
        "roots": list(roots),
        **summary,
        "notes": list(notes),
    }
    return dumps(final, compact=True)


def next_step(record: Mapping[str, Any], hints: Hints) -> str | None:
    """Return the command to run next for a record, with the flags that shaped the audit (None:
    nothing to do, or nothing that runs as printed)."""
    kind, verdict, url = record["kind"], record["verdict"], record["url"]
    if verdict == OK or kind == "root":
        return None
    if kind == "sink":
        paired = record.get("paired_with") or []
        if "error" in record or not paired:
            return None
        return Hints(**{**hints.__dict__, "sink_path": url}).diagnose(paired[0])
    if "error" in record:
        return hints.inspect(url)
    failing = failing_cells(record.get("matrix") or ())
    sink = (
        (record.get("file_sink") or {}).get("url") if (record.get("file_sink") or {}).get("checked") else None
    )
    local = Hints(**{**hints.__dict__, "sink_path": sink}) if sink else hints
    if verdict == ERROR or failing:
        return local.plan(url)
    return local.diagnose(url)


def _what(record: Mapping[str, Any]) -> str:
    if record.get("error"):
        return record["error"]["message"]
    if record.get("restart"):
        # The directory is in the next column: Spark's path to one of its files is shown relative.
        return str(record["restart"]["summary"]).replace(qualify_root(record["url"]) + "/", "")
    if record["kind"] == "sink":
        latest = (record.get("sink_log") or {}).get("latest")
        return f"file sink output, latest sink batch {latest if latest is not None else '-'}"
    return "-"


def _lines(record: Mapping[str, Any]) -> str:
    if record["kind"] == "sink":
        return "checked with its checkpoint" if record.get("paired_with") else "sink not checked"
    return str(record.get("lines") or "-")


def render_audit(
    roots: Sequence[str],
    records: Sequence[Mapping[str, Any]],
    notes: Sequence[Mapping[str, Any]],
    summary: Mapping[str, Any],
    *,
    verbose: bool = False,
) -> str:
    """Return the audit as text: headline, the directories that need attention (``verbose``: every
    directory), the next command for each, counts by verdict and by finding code, what was skipped
    (``verbose``: all of it)."""
    kinds = summary["kinds"]
    v = summary["verdicts"]
    head = [
        ("Audited", ", ".join(roots)),
        (
            "Found",
            f"{count_text(kinds['checkpoint'], 'checkpoint')}, "
            f"{count_text(kinds['sink'], 'file sink output')}",
        ),
        ("Will not restart", summary["restart_fails"]),
        *(
            [("Fails if stateful", summary["restart_fails_if_stateful"])]
            if summary.get("restart_fails_if_stateful")
            else []
        ),
        *(
            [
                (
                    "Stateful unknown",
                    f"{summary['assumed_stateless']} assumed stateless (no state/, nothing tells): a stateful "
                    "query's restart would fail; settle it with diagnose --stateful or --stateless",
                )
            ]
            if summary.get("assumed_stateless")
            else []
        ),
        *([("Delta", delta_headline(summary))] if delta_headline(summary) else []),
        ("Verdicts", f"{v[ERROR]} error, {v[UNREADABLE]} unreadable, {v[WARNING]} warning, {v[OK]} ok"),
        ("Exit code", summary["exit_code"]),
    ]
    if summary.get("interrupted"):
        head.append(("Interrupted", "yes: the counts cover the directories finished before Ctrl-C"))
    blocks = [key_values(head)]
    shown = sorted((r for r in records if verbose or r["verdict"] != OK), key=triage_key)
    if shown:
        rows = [
            [
                r["verdict"],
                r["url"] + ("  (sink)" if r["kind"] == "sink" else ""),
                _what(r),
                _lines(r),
                " ".join(r["codes"]),
            ]
            for r in shown
        ]
        hidden = 0 if verbose else v[OK]
        title = ("Every directory" if verbose else "Needs attention") + (
            f" ({hidden} ok not shown; -v or --format jsonl lists every record)" if hidden else ""
        )
        blocks.append(
            section(
                title, table(["verdict", "directory", "restart", "by Spark line", "codes"], rows, keep=(1,))
            )
        )
        steps = [r["next_step"] for r in shown if r.get("next_step")]
        if steps:
            blocks.append(section("Next steps", "\n".join(f"  {c}" for c in steps)))
    blocks.append(
        section("By verdict", table(["verdict", "count"], [[name.value, v[name]] for name in VERDICTS]))
    )
    if summary["codes"]:
        rows = [[c["code"], c["severity"], c["count"], c["title"]] for c in summary["codes"]]
        blocks.append(section("By finding code", table(["code", "severity", "count", "title"], rows)))
    if not verbose:
        # The Delta tables read to pair them are counted in the head (Delta), not skipped.
        notes = [n for n in notes if not paired_table_note(n)]
    if notes:
        listed = list(notes) if verbose else list(notes)[:NOTES_SHOWN]
        more = len(notes) - len(listed)
        title = "Skipped" + (f" (first {NOTES_SHOWN} of {len(notes)}; -v lists all)" if more > 0 else "")
        blocks.append(
            section(title, table(["path", "note"], [[n["url"], n["message"]] for n in listed], keep=(0,)))
        )
    return "\n\n".join(blocks) + "\n"
