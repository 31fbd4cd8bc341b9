"""Format command results as text tables (tabulate) or JSON. No click, no I/O: strings out.

JSON output is always one document (:mod:`checkpoint_doctor.render.documents`: the envelope, the schema
versions and the JSON Schemas). Tables use one fixed
``tablefmt`` and fixed column order, and never truncate paths.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from checkpoint_doctor.diagnosis.versions import qualify_root
from checkpoint_doctor.render.documents import dumps, envelope
from checkpoint_doctor.render.hints import Hints, explain


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
    error: dict[str, Any] | None

    def __new__(cls, command: str, result: Any = None, error: dict[str, Any] | None = None) -> JsonDocument:
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


def json_document(command: str, result: Any = None, *, error: dict[str, Any] | None = None) -> JsonDocument:
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
    widths = [
        max([len(str(h))] + [max((len(x) for x in str(r[i]).splitlines()), default=0) for r in body])
        for i, h in enumerate(headers)
    ]
    natural = list(widths)
    narrowable = [j for j in range(len(widths)) if j not in keep]
    while narrowable and sum(widths) + 2 * (len(widths) - 1) > width:
        i = max(narrowable, key=lambda j: widths[j])
        if widths[i] <= MIN_COLUMN:
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
        return tabulate(
            body, headers=list(headers), tablefmt=TABLEFMT, disable_numparse=True, maxcolwidths=limits
        )
    return tabulate(body, headers=list(headers), tablefmt=TABLEFMT, disable_numparse=True)


def key_values(pairs: Iterable[tuple[str, Any]]) -> str:
    """Return aligned ``key  value`` lines, long values wrapped under their column."""
    items = [(k, "-" if v is None or v == "" else str(v)) for k, v in pairs]
    width = max((len(k) for k, _ in items), default=0)
    room = max(line_width() - width - 2, 20)
    out = []
    for k, v in items:
        wrapped = "\n".join(_fill(part, room) for part in v.split("\n"))
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


def _fill(text: str, width: int) -> str:
    import textwrap

    if len(text) <= width:
        return text
    return textwrap.fill(text, width=width, break_long_words=False, break_on_hyphens=False)


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


def _ranges_text(runs: list[list[int]]) -> str:
    if not runs:
        return "none"
    return ", ".join(f"{a}..{b}" if b > a else str(a) for a, b in runs)


def _log_row(name: str, log: dict[str, Any]) -> list[Any]:
    if not log["present"]:
        return [name, "directory missing", 0, "-", "-", "-"]
    problems = [f"{f['path']}: {f['kind']}" for f in log["failures"]]
    problems += [f"non-canonical name {n['name']}" for n in log["noncanonical"]]
    problems += [f"directory {d}/ ignored by Spark" for d in log["ignored_dirs"]]
    return [
        name,
        _ranges_text(log["ranges"]),
        log["count"],
        _ranges_text(log["holes"]),
        ", ".join(f"v{v}" for v in log["versions"]) or "-",
        "; ".join(problems) or "-",
    ]


def render_inspect(report: dict[str, Any]) -> str:
    """Return the ``inspect`` report as text: one block per part of the checkpoint."""
    blocks = [_inspect_head(report), _inspect_logs(report)]
    for part in (
        _inspect_latest,
        _inspect_confs,
        _inspect_sources,
        _inspect_state,
        _inspect_sink,
        _inspect_debris,
        _inspect_timeline,
    ):
        block = part(report)
        if block:
            blocks.append(block)
    return "\n\n".join(blocks) + "\n"


def _inspect_head(report: dict[str, Any]) -> str:
    meta = report["metadata"]
    query = report["query_id"] or ("metadata missing" if not meta["present"] else "unreadable")
    return key_values(
        [
            ("Checkpoint", report["checkpoint"]),
            ("Query id", query),
            ("Mode", f"{report['mode']['mode']} ({report['mode']['evidence']})"),
            ("Written by", f"Spark {report['written_by']['spark']}"),
            (
                "Files",
                f"{report['files']['count']} files, {human_bytes(report['files']['bytes'])} "
                f"(read {report['files']['read']}, depth {report['depth']})",
            ),
        ]
    )


def _inspect_logs(report: dict[str, Any]) -> str:
    return section(
        "Logs",
        table(
            ["log", "batches", "count", "holes", "versions", "problems"],
            [_log_row("offsets", report["offsets"]), _log_row("commits", report["commits"])],
        ),
    )


def _inspect_latest(report: dict[str, Any]) -> str | None:
    latest = report["latest_batch"]
    if latest is None:
        return None
    head = f"Latest batch {latest['batch_id']} ({'committed' if latest['committed'] else 'not committed'})"
    if latest.get("error"):
        return section(head, f"{latest['error']['path']}: {latest['error']['reason']}")
    facts = [
        ("planned at", latest.get("batch_time") or "-"),
        ("watermark", f"{latest.get('watermark_ms')} ms" if latest.get("watermark_ms") is not None else "-"),
    ]
    if latest.get("next_batch_watermark_ms") is not None:
        facts.append(("next watermark", f"{latest['next_batch_watermark_ms']} ms (latest commit)"))
    rows = [[s["index"], s["name"], s["type"], s["text"]] for s in latest.get("sources", [])]
    return section(head, key_values(facts) + "\n\n" + table(["source", "name", "type", "offset"], rows))


def _inspect_confs(report: dict[str, Any]) -> str | None:
    if not report["pinned_conf"]:
        return None
    return section(
        "Pinned confs (from the latest offsets file; applied on restart)",
        # A conf key and its value (a class name) are copied into a session conf: never broken.
        table(["conf", "value"], sorted(report["pinned_conf"].items()), keep=(0, 1)),
    )


def _inspect_sources(report: dict[str, Any]) -> str | None:
    if not report["sources"]:
        return None
    rows = [
        [
            s["path"],
            s["kind"],
            s["batches"],
            ", ".join(map(str, s["compacts"])),
            s["files"],
            human_bytes(s["bytes"]),
        ]
        for s in report["sources"]
    ]
    return section(
        "Source metadata (sources/)", table(["path", "kind", "batches", "compact", "files", "bytes"], rows)
    )


def _inspect_state(report: dict[str, Any]) -> str | None:
    state = report["state"]
    if not state["operators"]:
        return (
            section("State (state/)", "directory present, no operator directories")
            if state["present"]
            else None
        )
    rows = [
        [
            op["operator_id"],
            op["operator_name"],
            op["provider"],
            op["partitions"],
            ", ".join(op["stores"]),
            f"{op['versions']['first']}..{op['versions']['last']}" if op["versions"] else "-",
            op["files"],
            human_bytes(op["bytes"]),
        ]
        for op in state["operators"]
    ]
    return section(
        "State (state/)",
        table(["op", "name", "provider", "partitions", "stores", "versions", "files", "bytes"], rows),
    )


def _inspect_sink(report: dict[str, Any]) -> str | None:
    sink = report.get("sink")
    if sink is None:
        return None
    return section(
        "File sink log (_spark_metadata)",
        key_values(
            [
                ("sink", sink["url"]),
                ("batches", sink["batches"] if sink["present"] else "directory missing"),
                ("compact interval", sink["compact_interval"]),
                ("missing for readers", ", ".join(sink["missing_for_readers"]) or "none"),
            ]
        ),
    )


def _inspect_debris(report: dict[str, Any]) -> str | None:
    if not report["debris"]:
        return None
    return section(
        "Debris (ignored by Spark)",
        table(
            ["kind", "path", "for", "bytes"],
            [[d["kind"], d["path"], d["target"], d["size"]] for d in report["debris"]],
        ),
    )


def _inspect_timeline(report: dict[str, Any]) -> str | None:
    if not report["timeline"]:
        return None
    rows = [
        [
            row["batch_id"],
            row["offsets"],
            row["commit"],
            "-"
            if row["state_stores"] is None
            else f"{row['state']} ({row['state_stores'][0]}/{row['state_stores'][1]} stores)",
        ]
        for row in report["timeline"]
    ]
    return section(
        "Timeline, newest batch first (state = the version the batch commits)",
        table(["batch", "offsets", "commit", "state"], rows),
    )


def _offsets_text(items: list[dict[str, Any]] | None) -> str:
    if items is None:
        return "-"
    parts = []
    for s in items:
        label = s["name"] or str(s["index"])
        raw = s["raw"]
        parts.append(f"[{label}] {'-' if raw is None else raw}")
    return "; ".join(parts) or "(no sources)"


def render_prediction(pred: dict[str, Any]) -> str:
    """Return the restart prediction block."""
    lines = [_hang(f"Restart on Spark {pred['spark']} ({pred['mode']}): {pred['summary']}", "", "  ")]
    facts: list[tuple[str, Any]] = []
    if pred["outcome"] == "fails":
        facts.append(("Spark error", pred["error"].get("text", pred["error"]["message"])))
        facts.append(("search log for", pred["error"]["search"]))
        facts.extend(("also seen as", a) for a in pred["error"].get("also_seen_as", []))
        facts.extend(("Spark logs", w) for w in pred["warnings"])
        facts.append(("caused by", ", ".join(pred["caused_by"])))
        facts.extend(("note", n) for n in pred["notes"])
        return "\n".join([*lines, key_values(facts)])
    if pred["next_batch_id"] is not None:
        unit = "epoch" if pred["mode"] == "continuous" else "batch"
        kind = {
            "rerun": "re-run of a planned batch, same end offsets",
            "new": "new batch, end offsets chosen by the sources",
        }
        facts.append((f"next {unit}", f"{pred['next_batch_id']} ({kind[pred['batch_kind']]})"))
    if pred["start_from"]:
        facts.append(("start offsets", f"{pred['start_from']}: {_offsets_text(pred['start_offsets'])}"))
    elif pred["next_batch_id"] is not None:
        facts.append(("start offsets", "the sources' initial offsets"))
    if pred["end_from"]:
        facts.append(("end offsets", f"{pred['end_from']}: {_offsets_text(pred['end_offsets'])}"))
    if pred["watermark_ms"] is not None:
        facts.append(("watermark", f"{pred['watermark_ms']} ms"))
    if pred["new_query_id"]:
        facts.append(("query id", "a NEW random id (metadata is missing)"))
    for w in pred["warnings"]:
        facts.append(("Spark logs", w))
    if pred["caused_by"]:
        facts.append(("caused by", ", ".join(pred["caused_by"])))
    for n in pred["notes"]:
        facts.append(("note", n))
    if facts:
        lines.append(key_values(facts))
    return "\n".join(lines)


def _wrap(text: str, indent: int) -> str:
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


def _hang(text: str, first: str, rest: str) -> str:
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


def render_findings(findings: list[dict[str, Any]], counts: dict[str, int]) -> str:
    """Return the findings as blocks: severity, code and name, the fact, the evidence."""
    if not findings:
        return "Findings: none"
    title = "Findings: " + ", ".join(
        f"{n} {sev}{'s' if n != 1 and sev != 'info' else ''}" for sev, n in counts.items() if n
    )
    blocks = []
    for f in findings:
        lines = [f"  {f['severity'].upper():<8} {f['code']} {f['slug']}", _wrap(f["message"], 11)]
        evidence = []
        if f["paths"]:
            shown = f["paths"][:8]
            evidence.append(
                ", ".join(shown) + (f" (+{len(f['paths']) - 8} more)" if len(f["paths"]) > 8 else "")
            )
        if f["batch_ids"]:
            ids = f["batch_ids"]
            evidence.append("batch " + ", ".join(map(str, ids[:10])) + (" ..." if len(ids) > 10 else ""))
        if evidence:
            lines.append(_wrap("evidence: " + "; ".join(evidence), 11))
        blocks.append("\n".join(lines))
    return title + "\n" + "\n".join(blocks)


def _next_steps(result: dict[str, Any], failing: bool, hints: Hints) -> list[str]:
    blocks = []
    codes = sorted({f["code"] for f in result["findings"] if f["severity"] != "info"})
    if codes:
        blocks.append(
            f"What to do: {explain(codes[0])}" + (f" (also {', '.join(codes[1:])})" if len(codes) > 1 else "")
        )
    if failing or any(f["severity"] == "error" for f in result["findings"]):
        blocks.append(f"Repair options:\n  {hints.plan(result['checkpoint'], '-o', 'plan.json')}")
    return blocks


def render_diagnosis(result: dict[str, Any], hints: Hints | None = None) -> str:
    """Return the ``diagnose`` result as text: the prediction first, then findings, then the next
    commands (with the flags that shaped this answer)."""
    head = key_values(
        [
            ("Checkpoint", result["checkpoint"]),
            ("Query id", result["query_id"] or "-"),
            (
                "Target",
                f"Spark {result['spark']}, {result['mode']} restart"
                + (
                    f" (written in {result['mode_detected']} mode)"
                    if result["mode_detected"] != result["mode"]
                    else ""
                ),
            ),
        ]
    )
    blocks = [
        head,
        render_prediction(result["restart"]),
        render_findings(result["findings"], result["counts"]),
    ]
    if result["assumptions"]:
        blocks.append(section("Assumptions", bullets(result["assumptions"])))
    blocks += _next_steps(result, result["restart"]["outcome"] == "fails", hints or Hints())
    return "\n\n".join(blocks) + "\n"


#: Column words of a restart mode that differs from the mode that wrote the checkpoint.
_MODE_WORDS = {
    "asyncProgressTrackingEnabled off": "async off",
    "continuous checkpoint restarted with a micro-batch trigger": "trigger changed",
}


#: The longest text a matrix cell shows (wrapped in its column).
MAX_CELL = 240


def _cell_text(cell: dict[str, Any], root: str) -> str:
    if cell["outcome"] == "fails":
        # The checkpoint is named above the matrix: a cell names its files relative to it.
        # RestartPrediction.summary: "FAILS <when>: <Spark's words>"; the cell keeps Spark's words.
        text = "FAILS: " + cell["summary"].partition(": ")[2].replace(root, "")
    else:
        text = cell["summary"]  # RestartPrediction.summary: "STARTS new batch 32"
    if len(text) > MAX_CELL:
        # Spark quotes a malformed file's text in its error (a fuzzed log line runs to 600 KB): the
        # cell keeps a sentence's worth; the findings and the one-cell diagnose show it all.
        text = text[: MAX_CELL - 3] + "..."
    if cell.get("if_stateful") and cell["if_stateful"].startswith("FAILS"):
        text += " ?"
    return ("* " if cell["role"] == "as-configured" else "  ") + text


def render_matrix_table(result: dict[str, Any], width: int | None = None) -> str:
    """Return the restart matrix as a compact table: rows are Spark lines, columns restart modes."""
    cells = result["matrix"]
    modes = list(dict.fromkeys(c["mode"] for c in cells))
    lines = list(dict.fromkeys(c["spark"] for c in cells))
    by_key = {(c["spark"], c["mode"]): c for c in cells}
    heads = ["spark"]
    for mode in modes:
        label = next(c["label"] for c in cells if c["mode"] == mode)
        words = next((w for long, w in _MODE_WORDS.items() if long in label), None)
        heads.append(f"{mode} ({words})" if words else mode)
    rows = []
    root = qualify_root(result["checkpoint"]) + "/"
    for line in lines:
        row_cells = [by_key.get((line, m)) for m in modes]
        roles = {c["role"] for c in row_cells if c is not None}
        label = next(c["label"] for c in row_cells if c is not None)
        tag = " downgrade" if roles == {"downgrade"} else " upgrade" if "upgrade from" in label else ""
        rows.append([line + tag] + [_cell_text(c, root) if c is not None else "" for c in row_cells])
    legend = ["* as configured: " + _configured_words(result)]
    if any(c["role"] == "downgrade" for c in cells):
        legend.append("downgrade rows (older than the writer) are shown, not counted")
    if any((c.get("if_stateful") or "").startswith("FAILS") for c in cells):
        legend.append("? fails if the query has stateful operators (CD310)")
    # Spark's words are wrapped inside their cell, never cut: they are what the driver log shows.
    with layout(width or line_width()):
        body = table(heads, rows, keep=(0,))
    return section("Restart matrix", body + "\n" + "\n".join(_fill(t, line_width()) for t in legend))


def _configured_words(result: dict[str, Any]) -> str:
    named = result["named"]
    lines = ("Spark " + ", ".join(named["lines"])) if named["lines"] else "the line that wrote the checkpoint"
    modes = ", ".join(named["modes"]) or f"the {result['mode_detected']} mode that wrote the logs"
    return f"{modes}, on {lines}"


def _details_hint(result: dict[str, Any], hints: Hints) -> str:
    cells = result["matrix"]
    failing = [c for c in cells if c["counted"] and c["outcome"] == "fails"]
    shown = failing[0] if failing else next(c for c in cells if c["role"] == "as-configured")
    return "One restart in detail:\n  " + hints.diagnose(result["checkpoint"], shown["spark"], shown["mode"])


def render_matrix(result: dict[str, Any], width: int | None = None, hints: Hints | None = None) -> str:
    """Return the no-flag ``diagnose`` result as text: the restart matrix first, then the findings
    (with Spark's words), the assumptions and what to do next."""
    written = result["written_by"]
    head = key_values(
        [
            ("Checkpoint", result["checkpoint"]),
            ("Query id", result["query_id"] or "-"),
            ("Written by", f"Spark {written['label']}, {result['mode_detected']} mode"),
            ("Stateful", result["stateful"]["text"]),
        ]
    )
    blocks = [
        head,
        render_matrix_table(result, width),
        render_findings(result["findings"], result["counts"]),
    ]
    if result["assumptions"]:
        blocks.append(section("Assumptions", bullets(result["assumptions"])))
    hints = hints or Hints()
    blocks.append(_details_hint(result, hints))
    failing = any(c["counted"] and c["outcome"] == "fails" for c in result["matrix"])
    blocks += _next_steps(result, failing, hints)
    return "\n\n".join(blocks) + "\n"


def _rule_differs(info: dict[str, Any]) -> bool:
    return bool(info.get("severity_rule", info["severity"]) != info["severity"])


def _severity_words(info: dict[str, Any]) -> str:
    """``error`` codes are errors as configured and warnings for a plausible restart (the rule)."""
    return "error as configured, warning for a plausible restart" if _rule_differs(info) else info["severity"]


def render_explain(info: dict[str, Any]) -> str:
    """Return one code's explanation."""
    lines = [
        _hang(f"{info['code']} {info['slug']} ({_severity_words(info)})", "", "  "),
        _hang(info["title"], "", ""),
        "",
        *([section("Severity", _hang(info["severity_rule"], "", "")), ""] if _rule_differs(info) else []),
        section("What Spark does", _hang(info["spark_does"], "", "")),
        "",
        section("Why it breaks", _hang(info["why"], "", "")),
        "",
        section("What you can do", _hang(info["action"], "", "")),
    ]
    if info["search"]:
        lines += ["", section("Search your driver log for", "\n".join(f"  {s}" for s in info["search"]))]
    return "\n".join(lines) + "\n"


def _pre_text(p: dict[str, Any]) -> str:
    # Imported here: only plan renderings need the planner's types (start-up of the other commands).
    from checkpoint_doctor.planning.preconditions import parse_precondition

    return parse_precondition(p).describe()


def _step_text(s: dict[str, Any]) -> str:
    from checkpoint_doctor.planning.steps import parse_step

    return parse_step(s).describe()


def _option_lines(group: dict[str, Any]) -> list[str]:
    lines = [_hang(f"{group['finding']}: {group['message']}", "", "  ")]
    for opt in group["options"]:
        if opt.get("available") is False:
            lines.append(_hang(f"{opt['strategy']}: not possible ({opt['reason']})", "  -  ", "     "))
            continue
        mark = " (chosen)" if opt["chosen"] else ""
        alone = opt["consequences"].get("starts_in_every_cell")
        mark += " (not enough on its own)" if alone is False else ""
        lines.append(
            _hang(
                f"{opt['strategy']}{mark}" + (f": {opt['note']}" if opt["note"] else ""),
                f"  {opt['rank']}. ",
                "      ",
            )
        )
        summary = opt["consequences"].get("summary")
        if summary:
            lines.append(_wrap(summary, 6))
    return lines


def _expected_text(exp: dict[str, Any]) -> str:
    cells = exp.get("cells") or []
    text = "Expected after apply: " + exp["restart"]
    if exp.get("codes"):
        text += f" (remaining codes: {', '.join(exp['codes'])})"
    text = _hang(text, "", "  ")
    if len(cells) > 1:
        text += "".join(
            "\n"
            + _hang(
                f"{c['label']}: {c['before']} -> {c.get('after') or 'after the run: diagnose again'}",
                "  ",
                "    ",
            )
            for c in cells
        )
    if exp.get("after"):
        text += "\n" + _hang(f"Then: {exp['after']}", "", "  ")
    return text


def _unresolved_text(items: list[dict[str, Any]]) -> str:
    lines = []
    for u in items:
        where = ", ".join(f"Spark {c['spark']} {c['mode']}" for c in u.get("cells") or [])
        lines.append(_hang(f"{u['code']}: {u['reason']}" + (f" ({where})" if where else ""), "  - ", "    "))
        lines.append(_hang(f"what you can do: {u['manual']}", "    ", "    "))
    return "\n".join(lines)


def _sink_text(plan: dict[str, Any]) -> str:
    """The sink output the plan checked, else the kind the operator named with ``--sink``."""
    if plan["sink"]:
        return str(plan["sink"])
    kind = (plan.get("request") or {}).get("sink_kind")
    return f"{kind} (--sink {kind}; no sink output checked)" if kind else "not checked (no --sink-path)"


@dataclass(frozen=True)
class PlanFollowUp:
    """What ``plan`` says after the plan: where it went (``-o``; not written when it has no step),
    the command that writes it, and the one that plans it accepting data loss (when only that
    would repair it)."""

    output: str | None = None
    written: bool = False
    write: str | None = None
    consent: str | None = None


def _plan_ending(plan: dict[str, Any], follow: PlanFollowUp, hints: Hints) -> list[str]:
    runnable = any(s["kind"] != "run" for s in plan["steps"])
    if follow.written and follow.output:
        tail = f" Apply it with: {hints.apply(follow.output)}" if runnable else ""
        return [f"Plan written to {follow.output}.{tail}"]
    blocks = []
    if plan["steps"] and follow.write:
        blocks.append(f"Write the plan to a file, then apply it:\n  {follow.write}")
    if plan["steps"]:
        return blocks
    if follow.output:
        blocks.append(f"Nothing to apply: no plan file was written to {follow.output}.")
    if follow.consent:
        blocks.append(f"To plan it anyway, accepting the data loss named above:\n  {follow.consent}")
    elif plan["unresolved"]:
        blocks.append(
            "No plan can be applied: no change checkpoint-doctor can make repairs the errors above; "
            "their 'what you can do' says what can."
        )
    return blocks


def render_plan(
    plan: dict[str, Any],
    written_to: str | None,
    hints: Hints | None = None,
    follow: PlanFollowUp | None = None,
) -> str:
    """Return a plan as text: options with consequences, steps, preconditions, expected result, and
    the next command (apply the written file, write it, or plan it accepting data loss)."""
    blocks = [
        key_values(
            [
                ("Plan", plan["plan_id"]),
                ("Checkpoint", plan["checkpoint"]),
                ("Sink", _sink_text(plan)),
                (
                    "Restart",
                    "; ".join(f"Spark {c['spark']}, {c['mode']}" for c in plan.get("cells") or [])
                    or f"Spark {plan['spark']}, {plan['mode']}",
                ),
                ("Strategy", plan["strategy"] or "none"),
                ("Addresses", ", ".join(plan["addresses"]) or "nothing"),
            ]
        )
    ]
    for group in plan["options"]:
        text = "\n".join(_option_lines(group))
        blocks.append(section("Options", text) if group is plan["options"][0] else text)
    if plan["steps"]:
        steps = "\n".join(
            _hang(f"{_step_text(s)}  ({s['reason']})", f"  {i}. ", "     ")
            for i, s in enumerate(plan["steps"], 1)
        )
        blocks.append(section("Steps, in order", steps))
        pres = "\n".join(_hang(_pre_text(p), "  - ", "    ") for p in plan["preconditions"])
        blocks.append(section("Preconditions checked by apply", pres))
        blocks.append(_expected_text(plan["expected"]))
    for w in plan["warnings"]:
        blocks.append(_hang(f"WARNING: {w}", "", "  "))
    if plan.get("assumptions"):
        blocks.append(section("Assumptions", bullets(plan["assumptions"])))
    if plan["unresolved"]:
        blocks.append(section("Unresolved (no safe automatic repair)", _unresolved_text(plan["unresolved"])))
    if follow is None:  # the plan shown before apply's question: written already
        follow = PlanFollowUp(output=written_to, written=written_to is not None)
    blocks += _plan_ending(plan, follow, hints or Hints())
    return "\n\n".join(blocks) + "\n"


def render_apply(result: dict[str, Any], hints: Hints | None = None) -> str:
    """Return an apply result as text: what was done (or, dry run / cancelled, what would be)."""
    would = "\n".join(f"  {w['step']}. {w['what']}" for w in result.get("would") or [])
    if result["dry_run"]:
        text = (
            f"Dry run of plan {result['plan_id']}: the plan is what checkpoint-doctor plans for the live "
            f"checkpoint and every precondition holds; nothing was changed. Apply would do:\n{would}"
        )
    elif result.get("cancelled"):
        text = f"Cancelled: plan {result['plan_id']} was not applied; nothing was changed."
    elif result["steps_done"] == 0 and not result["journal"]:
        text = f"Plan {result['plan_id']} has no changes to make; nothing was changed."
    else:
        text = (
            f"Applied plan {result['plan_id']}: {result['steps_done']} step(s).\n"
            f"Backups and journal: {result['backup']}\n"
            f"Undo with: {(hints or Hints()).undo(result['journal'])}"
        )
    blocks = [text]
    for cmd in result["manual_steps"]:
        what = (
            "Run this yourself next (the plan's catch-up step)"
            if "catch-up" in cmd
            else "Do this yourself next"
        )
        blocks.append(f"{what}:\n  {cmd}")
    if result["after"] is not None:
        blocks.append("Diagnosis after apply:\n" + render_prediction(result["after"]["restart"]))
    return "\n\n".join(blocks) + "\n"


def render_undo(result: dict[str, Any]) -> str:
    """Return an undo result as text."""
    lines = [f"Undid {result['journal']}"]
    lines += [f"  restored {p}" for p in result["restored"]]
    lines += [f"  removed {p}" for p in result["removed"]]
    lines += [f"  already as before: {p}" for p in result["already_as_before"]]
    return "\n".join(lines) + "\n"


def local_time(ms: Any) -> str:
    """Return epoch millis as the reader's local time with its UTC offset (``-`` when unknown)."""
    if not isinstance(ms, int) or isinstance(ms, bool):
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M:%S %z")
    except (OverflowError, OSError, ValueError):  # a hand-edited record: show what it holds
        return str(ms)


def render_history(data: dict[str, Any], hints: Hints | None = None) -> str:
    """Return the applies made to a checkpoint as a table, oldest first."""
    rows = data["applies"]
    if not rows:
        return f"No apply was recorded for {data['checkpoint']}.\n"
    table = [
        [
            r["plan_id"],
            r["state"],
            "-" if r["steps_done"] is None else r["steps_done"],
            local_time(r["at_ms"]),
            r["journal"],
        ]
        for r in rows
    ]
    text = tabulate(table, headers=["plan", "state", "steps", "at", "journal"], tablefmt="plain")
    undo = [r for r in rows if r["state"] in ("applied", "failed", "interrupted", "partly undone")]
    notes = "".join(f"\n{r['journal']}: {r['note']}" for r in rows if r["state"] == "partly undone")
    hint = f"\nUndo the newest with: {(hints or Hints()).undo(undo[-1]['journal'])}" if undo else ""
    return f"Applies to {data['checkpoint']}:\n{text}{notes}{hint}\n"
