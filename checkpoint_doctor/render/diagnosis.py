"""The text of ``diagnose``: the restart prediction, the findings and the restart matrix. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from checkpoint_doctor.diagnosis.delta_pairing import FLAG
from checkpoint_doctor.diagnosis.versions import qualify_root
from checkpoint_doctor.render.hints import Hints, command, explain
from checkpoint_doctor.render.layout import (
    bullets,
    fill,
    hang,
    key_values,
    layout,
    line_width,
    section,
    table,
    wrap,
)

if TYPE_CHECKING:
    from checkpoint_doctor.diagnosis.matrix import MatrixDiagnosis


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
    lines = [hang(f"Restart on Spark {pred['spark']} ({pred['mode']}): {pred['summary']}", "", "  ")]
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


def render_findings(findings: list[dict[str, Any]], counts: dict[str, int]) -> str:
    """Return the findings as blocks: severity, code and name, the fact, the evidence."""
    if not findings:
        return "Findings: none"
    title = "Findings: " + ", ".join(
        f"{n} {sev}{'s' if n != 1 and sev != 'info' else ''}" for sev, n in counts.items() if n
    )
    blocks = []
    for f in findings:
        lines = [f"  {f['severity'].upper():<8} {f['code']} {f['slug']}", wrap(f["message"], 11)]
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
            lines.append(wrap("evidence: " + "; ".join(evidence), 11))
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


def delta_steps(result: dict[str, Any], hints: Hints) -> list[str]:
    """The commands that pair each Delta source no table paired with: ``--delta-table`` naming
    each table looked at that could be it, and an audit of the directory above the checkpoint's
    (it pairs by id with every Delta table below it). Every one runs as printed."""
    pairing = result.get("delta_pairing") or {}
    unpaired = pairing.get("unpaired_sources") or []
    if not unpaired:
        return []
    checkpoint = result["checkpoint"]
    candidates = list(
        dict.fromkeys([*pairing.get("ambiguous", []), *pairing.get("other_queries_tables", [])])
    )
    what = ", ".join(f"source {u['source']} (table {u['table_id']})" for u in unpaired)
    lines = [f"Pair Delta {what}: name the table it reads"]
    for candidate in candidates[:3]:
        with_table = Hints(**{**hints.__dict__, "delta_tables": (*hints.delta_tables, candidate)})
        lines.append("  " + with_table.diagnose(checkpoint))
    parent = checkpoint.rstrip("/").rpartition("/")[0]
    above = parent.rpartition("/")[0]
    if above and not above.endswith((":/", ":")):
        lines.append(f"or pair it by id with any Delta table below {above}:")
        lines.append("  " + command("audit", above, *hints.storage_flags()))
    else:
        lines.append(f"  ({FLAG} PATH: the path of the table the query reads)")
    return ["\n".join(lines)]


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
    blocks += delta_steps(result, hints or Hints())
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
    return section("Restart matrix", body + "\n" + "\n".join(fill(t, line_width()) for t in legend))


def _configured_words(result: dict[str, Any]) -> str:
    named = result["named"]
    lines = ("Spark " + ", ".join(named["lines"])) if named["lines"] else "the line that wrote the checkpoint"
    modes = ", ".join(named["modes"]) or f"the {result['mode_detected']} mode that wrote the logs"
    return f"{modes}, on {lines}"


def _details_hint(matrix: MatrixDiagnosis, hints: Hints) -> str:
    shown = (matrix.failing_cells or matrix.as_configured)[0].cell
    return "One restart in detail:\n  " + hints.diagnose(matrix.checkpoint, shown.spark, shown.mode)


def render_matrix(matrix: MatrixDiagnosis, width: int | None = None, hints: Hints | None = None) -> str:
    """Return the no-flag ``diagnose`` result as text: the restart matrix first, then the findings
    (with Spark's words), the assumptions and what to do next."""
    result = matrix.to_dict()
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
    blocks += delta_steps(result, hints)
    blocks.append(_details_hint(matrix, hints))
    blocks += _next_steps(result, bool(matrix.failing_cells), hints)
    return "\n\n".join(blocks) + "\n"
