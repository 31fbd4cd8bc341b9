"""The audit as one self-contained HTML page. Pure: records in, a string out.

For the scheduled-audit use case: a headline (how many checkpoints will not restart), counts by
verdict and by finding code, then one row per audited directory, worst first, with a small picture
of its newest batch ids: one column per batch id (oldest left, newest right), one row each for
``offsets/``, ``commits/`` and the state version the batch commits (a sink output: one row for its
``_spark_metadata`` log). A missing file is a red cell, so a broken tail is seen, not read.

No network resources: inline CSS and inline SVG only, no scripts, no fonts, no images to fetch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from checkpoint_doctor.audit.report import (
    ABSENT,
    COMPACT,
    ERROR,
    FOLDED,
    MISSING,
    NONE,
    OK,
    PARTIAL,
    PENDING,
    PRESENT,
    UNREADABLE,
    VERDICT_ORDER,
    WARNING,
)

#: Cell fills of the timeline picture. ``MISSING_COLOUR`` is used for nothing else on the page.
MISSING_COLOUR = "#e0301e"
CELL_FILL = {
    PRESENT: "#3a9e5c",
    MISSING: MISSING_COLOUR,
    PENDING: "#ffffff",
    PARTIAL: "#f2a93b",
    ABSENT: "#e3e6ea",
    COMPACT: "#1f6f43",
    FOLDED: "#c4e3cf",
}
CELL_STROKE = {PENDING: "#7a818c"}
CELL_TEXT = {
    PRESENT: "present",
    MISSING: "missing",
    PENDING: "not written yet (batch in flight when the query stopped)",
    PARTIAL: "present in some stores only",
    ABSENT: "absent (expected gap)",
    COMPACT: "compact file",
    FOLDED: "folded into a .compact file",
}
VERDICT_COLOUR = {ERROR: "#a8231b", UNREADABLE: "#6b4fa0", WARNING: "#9a6a12", OK: "#2f7d4a"}

CELL = 14
GAP = 2
LABEL_W = 16
ROW_LABELS = (("offsets", "o"), ("commit", "c"), ("state", "s"))

CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 28px 40px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI",
  "Liberation Sans", Arial, sans-serif; color: #1d232b; background: #f6f7f9; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 8px; }
.meta { color: #5b6470; margin: 0 0 18px; word-break: break-all; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.card { background: #fff; border: 1px solid #dde1e6; border-radius: 8px; padding: 10px 16px; min-width: 150px; }
.card .n { font-size: 26px; font-weight: 650; }
.card .l { color: #5b6470; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card.alert { border-color: #a8231b; }
.card.alert .n { color: #a8231b; }
table { border-collapse: collapse; background: #fff; border: 1px solid #dde1e6; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #eceef1; vertical-align: top; }
th { background: #eef0f3; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: #46505c; }
table.fleet { width: 100%; }
table.codes td, table.codes th { padding: 3px 10px; font-size: 13px; }
td.url { word-break: break-all; font-family: ui-monospace, "Liberation Mono", monospace; font-size: 12.5px; }
td.codes { font-family: ui-monospace, "Liberation Mono", monospace; font-size: 12px; }
.chip { display: inline-block; color: #fff; border-radius: 10px; padding: 1px 9px; font-size: 12px; font-weight: 600; }
.kind { color: #5b6470; font-size: 11px; margin-left: 6px; }
.fails { color: #a8231b; font-weight: 600; }
details { margin-top: 4px; }
summary { cursor: pointer; color: #46505c; font-size: 12px; }
ul.findings { margin: 4px 0 0; padding-left: 18px; font-size: 12.5px; }
ul.findings .error { color: #a8231b; }
ul.findings .warning { color: #9a6a12; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; align-items: center; color: #46505c; font-size: 12px; margin: 6px 0 10px; }
.legend span { display: inline-flex; align-items: center; gap: 5px; }
svg { display: block; }
svg text { font: 9px ui-monospace, "Liberation Mono", monospace; fill: #5b6470; }
.none { color: #5b6470; }
"""


def _chip(verdict: str) -> str:
    return f'<span class="chip" style="background:{VERDICT_COLOUR[verdict]}">{escape(verdict)}</span>'


def _cell(x: int, y: int, state: str, title: str) -> str:
    stroke = CELL_STROKE.get(state)
    extra = f' stroke="{stroke}" stroke-width="1" stroke-dasharray="2 1"' if stroke else ""
    w = CELL - 1 if stroke else CELL
    off = 0.5 if stroke else 0
    body = f'<rect x="{x + off}" y="{y + off}" width="{w}" height="{w}" fill="{CELL_FILL[state]}"{extra}>'
    if state == PRESENT:
        return body[:-1] + "/>"
    return f"{body}<title>{escape(title)}</title></rect>"


def timeline_svg(record: Mapping[str, Any]) -> str:
    """Return the picture of a record's newest batch ids (empty when it has none)."""
    cells = list(reversed(record.get("timeline") or []))
    if not cells:
        return '<span class="none">no batches</span>'
    if record["kind"] == "sink":
        rows = [("sink", "log")]
    else:
        rows = [(key, label) for key, label in ROW_LABELS if any(c[key] != NONE for c in cells)]
    width = LABEL_W + len(cells) * (CELL + GAP)
    height = len(rows) * (CELL + GAP) + 12
    parts = [
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="newest batch ids {cells[0]["batch_id"]} to {cells[-1]["batch_id"]}">'
    ]
    for r, (key, label) in enumerate(rows):
        y = r * (CELL + GAP)
        parts.append(f'<text x="0" y="{y + CELL - 2}">{label}</text>')
        for i, cell in enumerate(cells):
            state = cell[key]
            if state == NONE:
                continue
            what = {"offsets": "offsets", "commit": "commits", "state": "state", "sink": "_spark_metadata"}[key]
            title = f"batch {cell['batch_id']}: {what} {CELL_TEXT[state]}"
            if key == "state" and "state_stores" in cell:
                title += f" ({cell['state_stores'][0]}/{cell['state_stores'][1]} stores)"
            parts.append(_cell(LABEL_W + i * (CELL + GAP), y, state, title))
    base = len(rows) * (CELL + GAP) + 9
    parts.append(f'<text x="{LABEL_W}" y="{base}">{cells[0]["batch_id"]}</text>')
    last = str(cells[-1]["batch_id"])
    parts.append(f'<text x="{width - GAP}" y="{base}" text-anchor="end">{escape(last)}</text>')
    parts.append("</svg>")
    return "".join(parts)


LEGEND = (
    (PRESENT, "present"),
    (MISSING, "missing"),
    (PENDING, "batch in flight"),
    (PARTIAL, "in some stores"),
    (ABSENT, "expected gap"),
    (COMPACT, "sink .compact"),
    (FOLDED, "folded into .compact"),
)


def cell_states(records: Sequence[Mapping[str, Any]]) -> set[str]:
    """Return the cell states the pictures of these records use."""
    states: set[str] = set()
    for record in records:
        if record.get("error"):
            continue
        for cell in record.get("timeline") or ():
            states.update(v for k, v in cell.items() if k in ("offsets", "commit", "state", "sink"))
    return states


def _legend(states: set[str]) -> str:
    """Return the legend of the states shown on the page (no red swatch on a healthy page)."""
    spans = []
    for state, text in LEGEND:
        if state not in states:
            continue
        stroke = CELL_STROKE.get(state)
        extra = f' stroke="{stroke}" stroke-dasharray="2 1"' if stroke else ""
        spans.append(
            f'<span><svg width="{CELL}" height="{CELL}"><rect x="0.5" y="0.5" width="{CELL - 1}" height="{CELL - 1}" '
            f'fill="{CELL_FILL[state]}"{extra}/></svg>{escape(text)}</span>'
        )
    return (
        '<div class="legend"><span>newest batch ids, oldest left: o = offsets/, c = commits/, '
        "s = state version the batch commits</span>" + "".join(spans) + "</div>"
    )


def _findings(record: Mapping[str, Any]) -> str:
    findings = record.get("findings")
    if findings is None and record.get("diagnosis"):
        findings = record["diagnosis"].get("findings")
    if not findings:
        return ""
    items = "".join(
        f'<li class="{escape(f["severity"])}"><b>{escape(f["code"])}</b> {escape(f["message"])}</li>' for f in findings
    )
    noun = "finding" if len(findings) == 1 else "findings"
    return f'<details><summary>{len(findings)} {noun}</summary><ul class="findings">{items}</ul></details>'


def _restart(record: Mapping[str, Any]) -> str:
    if record.get("error"):
        return escape(record["error"]["message"])
    restart = record.get("restart")
    if restart:
        cls = ' class="fails"' if restart["outcome"] == "fails" else ""
        return f"<span{cls}>{escape(restart['summary'])}</span>"
    sink = record.get("sink") or {}
    latest = sink.get("latest")
    return escape(f"file sink output; latest sink batch {latest if latest is not None else '-'}")


def _row(record: Mapping[str, Any]) -> str:
    kind = '<span class="kind">sink output</span>' if record["kind"] == "sink" else ""
    if record["kind"] == "root":
        kind = '<span class="kind">root</span>'
    picture = "" if record.get("error") else timeline_svg(record)
    return (
        f"<tr><td>{_chip(record['verdict'])}</td>"
        f'<td class="url">{escape(record["checkpoint"])}{kind}</td>'
        f"<td>{_restart(record)}{_findings(record)}</td>"
        f'<td class="codes">{escape(" ".join(record["codes"])) or "-"}</td>'
        f"<td>{picture}</td></tr>"
    )


def _code_table(codes: Sequence[Mapping[str, Any]]) -> str:
    rows = "".join(
        f'<tr><td class="codes">{escape(c["code"])}</td><td>{escape(str(c["severity"]))}</td>'
        f'<td>{c["count"]}</td><td>{escape(str(c["title"]))}</td></tr>'
        for c in codes
    )
    return '<table class="codes"><tr><th>code</th><th>severity</th><th>checkpoints</th><th>title</th></tr>' + rows + "</table>"


def render_html(
    roots: Sequence[str],
    records: Sequence[Mapping[str, Any]],
    notes: Sequence[Mapping[str, Any]],
    summary: Mapping[str, Any],
    *,
    generated_at: str | None = None,
    version: str | None = None,
) -> str:
    """Return the audit page (UTF-8 HTML5, no external resources)."""
    kinds = summary["kinds"]
    verdicts = summary["verdicts"]
    fails = summary["restart_fails"]
    head = ", ".join(roots)
    meta = [f"roots: {head}"]
    if generated_at:
        meta.append(f"generated {generated_at}")
    if version:
        meta.append(f"checkpoint-doctor {version}")
    meta.append(f"exit code {summary['exit_code']}")
    cards = [
        ("alert" if fails else "", None, fails, "will not restart"),
        *(("", v, verdicts[v], v) for v in (ERROR, UNREADABLE, WARNING, OK)),
        ("", None, kinds["checkpoint"], "checkpoints"),
        ("", None, kinds["sink"], "file sink outputs"),
    ]
    card_html = "".join(
        f'<div class="card {cls}">'
        + (f'<div class="n" style="color:{VERDICT_COLOUR[v]}">{n}</div>' if v and n else f'<div class="n">{n}</div>')
        + f'<div class="l">{escape(label)}</div></div>'
        for cls, v, n, label in cards
    )
    serious = [c for c in summary["codes"] if c["severity"] in (ERROR, WARNING)]
    info = [c for c in summary["codes"] if c["severity"] not in (ERROR, WARNING)]
    ordered = sorted(records, key=lambda r: (VERDICT_ORDER[r["verdict"]], r["checkpoint"], r["kind"]))
    rows = "".join(_row(r) for r in ordered)
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>checkpoint-doctor audit: {escape(head)}</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>Checkpoint audit</h1>",
        f'<p class="meta">{escape(" · ".join(meta))}</p>',
        f'<div class="cards">{card_html}</div>',
    ]
    if serious:
        parts.append("<h2>By finding code</h2>" + _code_table(serious))
    if info:
        noun = "code" if len(info) == 1 else "codes"
        parts.append(f"<details><summary>{len(info)} informational {noun}</summary>{_code_table(info)}</details>")
    parts.append(f"<h2>Checkpoints ({len(records)})</h2>")
    parts.append(_legend(cell_states(records)))
    parts.append(
        '<table class="fleet"><tr><th>verdict</th><th>checkpoint</th><th>restart</th><th>codes</th>'
        "<th>newest batches</th></tr>" + rows + "</table>"
    )
    if notes:
        note_rows = "".join(
            f'<tr><td class="url">{escape(n["url"])}</td><td>{escape(n["message"])}</td></tr>' for n in notes
        )
        parts.append(f"<h2>Skipped ({len(notes)})</h2><table><tr><th>path</th><th>note</th></tr>{note_rows}</table>")
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p) + "\n"
