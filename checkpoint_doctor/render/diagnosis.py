"""The text of ``diagnose``: the restart prediction, the findings and the restart matrix. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from checkpoint_doctor.diagnosis.codes import ERROR, INFO, SILENT_LOSS, WARNING, Code
from checkpoint_doctor.diagnosis.versions import at_root, qualify_root
from checkpoint_doctor.render.hints import Hints, explain, plan_file
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
from checkpoint_doctor.world.delta_pairing import FLAG, DeltaPairing

if TYPE_CHECKING:
    from checkpoint_doctor.diagnosis.matrix import CellDiagnosis, MatrixDiagnosis
    from checkpoint_doctor.diagnosis.model import Diagnosis, Finding, RestartPrediction
    from checkpoint_doctor.model import SourceOffset


def _offsets_text(items: Sequence[SourceOffset] | None, checkpoint: str) -> str:
    if items is None:
        return "-"
    parts = []
    for s in items:
        label = s.name or str(s.index)
        parts.append(f"[{label}] {'-' if s.raw is None else at_root(s.raw, checkpoint)}")
    return "; ".join(parts) or "(no sources)"


def render_prediction(pred: RestartPrediction, checkpoint: str) -> str:
    """Return the restart prediction block (every text naming the checkpoint as Spark prints it)."""

    def shown(text: str) -> str:
        return str(at_root(text, checkpoint))

    lines = [hang(f"Restart on Spark {pred.spark} ({pred.mode}): {shown(pred.summary)}", "", "  ")]
    facts: list[tuple[str, Any]] = []
    if not pred.starts:
        if pred.error is not None:
            facts.append(("Spark error", shown(pred.error.message)))
            facts.append(("search log for", shown(pred.error.search)))
            facts.extend(("also seen as", shown(a)) for a in pred.error.alternatives)
        facts.extend(("Spark logs", shown(w)) for w in pred.warnings)
        facts.append(("caused by", ", ".join(pred.caused_by)))
        facts.extend(("note", shown(n)) for n in pred.notes)
        return "\n".join([*lines, key_values(facts)])
    if pred.next_batch_id is not None:
        unit = "epoch" if pred.mode == "continuous" else "batch"
        kind = (
            "re-run of a planned batch, same end offsets"
            if pred.rerun
            else "new batch, end offsets chosen by the sources"
        )
        facts.append((f"next {unit}", f"{pred.next_batch_id} ({kind})"))
    if pred.start_from:
        facts.append(
            ("start offsets", f"{shown(pred.start_from)}: {_offsets_text(pred.start_offsets, checkpoint)}")
        )
    elif pred.next_batch_id is not None:
        facts.append(("start offsets", "the sources' initial offsets"))
    if pred.end_from:
        facts.append(
            ("end offsets", f"{shown(pred.end_from)}: {_offsets_text(pred.end_offsets, checkpoint)}")
        )
    if pred.watermark_ms is not None:
        facts.append(("watermark", f"{pred.watermark_ms} ms"))
    if pred.new_query_id:
        facts.append(("query id", "a NEW random id (metadata is missing)"))
    for w in pred.warnings:
        facts.append(("Spark logs", shown(w)))
    if pred.caused_by:
        facts.append(("caused by", ", ".join(pred.caused_by)))
    for n in pred.notes:
        facts.append(("note", shown(n)))
    if facts:
        lines.append(key_values(facts))
    return "\n".join(lines)


def render_findings(findings: Sequence[Finding], checkpoint: str) -> str:
    """Return the findings as blocks: severity, code and name, the fact, the evidence (the checkpoint
    named as Spark prints it)."""
    if not findings:
        return "Findings: none"
    counts = {s: sum(1 for f in findings if f.severity == s) for s in (ERROR, WARNING, INFO)}
    title = "Findings: " + ", ".join(
        f"{n} {sev}{'s' if n != 1 and sev != INFO else ''}" for sev, n in counts.items() if n
    )
    blocks = []
    for f in findings:
        lines = [f"  {f.severity.upper():<8} {f.code} {f.slug}", wrap(at_root(f.message, checkpoint), 11)]
        evidence = []
        if f.paths:
            paths = [at_root(p, checkpoint) for p in f.paths]
            shown = paths[:8]
            evidence.append(", ".join(shown) + (f" (+{len(paths) - 8} more)" if len(paths) > 8 else ""))
        if f.batch_ids:
            ids = f.batch_ids
            evidence.append("batch " + ", ".join(map(str, ids[:10])) + (" ..." if len(ids) > 10 else ""))
        if evidence:
            lines.append(wrap("evidence: " + "; ".join(evidence), 11))
        blocks.append("\n".join(lines))
    return title + "\n" + "\n".join(blocks)


def _next_steps(checkpoint: str, findings: Sequence[Finding], failing: bool, hints: Hints) -> list[str]:
    blocks = []
    codes = sorted({str(f.code) for f in findings if f.severity != INFO})
    if codes:
        blocks.append(
            f"What to do: {explain(codes[0])}" + (f" (also {', '.join(codes[1:])})" if len(codes) > 1 else "")
        )
    manual = _nothing_to_plan(findings)
    if manual:
        # No strategy addresses any of them (planning.manual.MANUAL says why): printing 'plan ...
        # --job' would re-run the job's analysis (tens of seconds) only to say so (issue 34).
        blocks.append("Nothing to plan (no repair of the checkpoint addresses it):\n" + "\n".join(manual))
    elif failing or any(f.severity == ERROR or f.code in SILENT_LOSS for f in findings):
        blocks.append(f"Repair options:\n  {hints.plan(checkpoint, '-o', plan_file(checkpoint))}")
    return blocks


def _nothing_to_plan(findings: Sequence[Finding]) -> list[str]:
    """What to do instead, per code, when every finding a plan would repair is one no strategy
    addresses (CD201: the sources changed); empty when a plan may offer something."""
    # planning.manual, not planning.strategies: the strategies are not imported to render a diagnosis
    from checkpoint_doctor.planning.manual import MANUAL, PLANNED

    wanted = [f for f in findings if f.severity == ERROR or f.code in SILENT_LOSS]
    if not wanted or any(f.code in PLANNED or f.code not in MANUAL for f in findings if f.severity != INFO):
        return []
    codes = dict.fromkeys(str(f.code) for f in wanted)
    return [wrap(f"{code}: {MANUAL[code]}", 2) for code in codes]


def delta_steps(checkpoint: str, pairing: DeltaPairing | None, hints: Hints) -> list[str]:
    """The commands that pair each Delta source no table paired with: ``--delta-table`` naming
    each table looked at that could be it, and an audit of the directory above the checkpoint's
    (it pairs by id with every Delta table below it). Every one runs as printed."""
    if pairing is None or not pairing.unpaired:
        return []
    candidates = list(dict.fromkeys([*pairing.ambiguous, *(t.url for t in pairing.others)]))
    what = ", ".join(f"source {n} (table {table_id})" for n, table_id in pairing.unpaired)
    lines = [f"Pair Delta {what}: name the table it reads"]
    for candidate in candidates[:3]:
        with_table = Hints(**{**hints.__dict__, "delta_tables": (*hints.delta_tables, candidate)})
        lines.append("  " + with_table.diagnose(checkpoint))
    parent = checkpoint.rstrip("/").rpartition("/")[0]
    above = parent.rpartition("/")[0]
    if above and not above.endswith((":/", ":")):
        lines.append(f"or pair it by id with any Delta table below {above}:")
        lines.append("  " + hints.audit(above))
    else:
        lines.append(f"  ({FLAG} PATH: the path of the table the query reads)")
    return ["\n".join(lines)]


def render_diagnosis(
    diagnosis: Diagnosis,
    hints: Hints | None = None,
    delta_pairing: DeltaPairing | None = None,
    also: Sequence[str] = (),
) -> str:
    """Return one restart's diagnosis as text: the prediction first, then findings, then the next
    commands (with the flags that shaped this answer). ``also``: assumptions of the whole answer
    that the restart's own do not hold (what was checked of a file sink)."""
    d = diagnosis
    head = key_values(
        [
            ("Checkpoint", d.checkpoint),
            ("Query id", d.query_id or "-"),
            (
                "Target",
                f"Spark {d.spark}, {d.mode} restart"
                + (f" (written in {d.mode_detected} mode)" if d.mode_detected != d.mode else ""),
            ),
        ]
    )
    blocks = [
        head,
        render_prediction(d.prediction, d.checkpoint),
        render_findings(d.findings, d.checkpoint),
    ]
    assumptions = [*d.assumptions, *(a for a in also if a not in d.assumptions)]
    if assumptions:
        blocks.append(section("Assumptions", bullets(assumptions)))
    blocks += delta_steps(d.checkpoint, delta_pairing, hints or Hints())
    if d.prediction.no_delta_release and d.prediction.not_judged:
        # The operator asked a line that cannot read the tables: the lines that can judge them.
        blocks.append(
            f"Not judged on Spark {d.spark}; the lines with a Delta Lake release judge its tables:\n  "
            + replace(hints or Hints(), lines=()).diagnose(d.checkpoint)
        )
    blocks += _next_steps(d.checkpoint, d.findings, not d.prediction.starts, hints or Hints())
    return "\n\n".join(blocks) + "\n"


#: Column words of a restart mode that differs from the mode that wrote the checkpoint.
_MODE_WORDS = {
    "asyncProgressTrackingEnabled off": "async off",
    "continuous checkpoint restarted with a micro-batch trigger": "trigger changed",
}


#: The longest text a matrix cell shows (wrapped in its column).
MAX_CELL = 240


def _cell_text(cell: CellDiagnosis, root: str, configured: bool) -> str:
    summary = str(at_root(cell.diagnosis.prediction.summary, cell.diagnosis.checkpoint))
    if cell.delta_not_judged:
        # Not a start (issue 36): the legend says why; the JSON cell keeps what the checkpoint says.
        return ("* " if configured else "  ") + "NOT JUDGED ~"
    if cell.fails:
        # The checkpoint is named above the matrix: a cell names its files relative to it.
        # RestartPrediction.summary: "FAILS <when>: <Spark's words>"; the cell keeps Spark's words.
        text = "FAILS: " + summary.partition(": ")[2].replace(root, "")
    else:
        text = summary  # RestartPrediction.summary: "STARTS new batch 32"
    if len(text) > MAX_CELL:
        # Spark quotes a malformed file's text in its error (a fuzzed log line runs to 600 KB): the
        # cell keeps a sentence's worth; the findings and the one-cell diagnose show it all.
        text = text[: MAX_CELL - 3] + "..."
    if (cell.if_stateful or "").startswith("FAILS"):
        text += " ?"
    return ("* " if configured else "  ") + text


def render_matrix_table(matrix: MatrixDiagnosis, width: int | None = None) -> str:
    """Return the restart matrix as a compact table: rows are Spark lines, columns restart modes."""
    cells = matrix.cells
    configured = {c.cell for c in matrix.as_configured}
    modes = list(dict.fromkeys(c.cell.mode for c in cells))
    lines = list(dict.fromkeys(c.cell.spark for c in cells))
    by_key = {(c.cell.spark, c.cell.mode): c for c in cells}
    heads = ["spark"]
    for mode in modes:
        label = next(c.label for c in cells if c.cell.mode == mode)
        words = next((w for long, w in _MODE_WORDS.items() if long in label), None)
        heads.append(f"{mode} ({words})" if words else mode)
    rows = []
    root = qualify_root(matrix.checkpoint) + "/"
    for line in lines:
        row_cells = [by_key.get((line, m)) for m in modes]
        shown = [c for c in row_cells if c is not None]
        label = shown[0].label
        # A row of downgrades only (they are shown, not counted: CellDiagnosis.counted).
        tag = (
            " downgrade"
            if not any(c.counted for c in shown)
            else " upgrade"
            if "upgrade from" in label
            else ""
        )
        rows.append(
            [line + tag]
            + [_cell_text(c, root, c.cell in configured) if c is not None else "" for c in row_cells]
        )
    legend = ["* as configured: " + _configured_words(matrix)]
    if any(not c.counted for c in cells):
        legend.append("downgrade rows (older than the writer) are shown, not counted")
    if any((c.if_stateful or "").startswith("FAILS") for c in cells):
        legend.append("? fails if the query has stateful operators (CD310)")
    unjudged = list(
        dict.fromkeys(
            c.cell.spark for c in cells if c.delta_not_judged and c.diagnosis.prediction.no_delta_release
        )
    )
    if unjudged:
        legend.append(
            f"~ not judged: no Delta Lake release exists for Spark {', '.join(unjudged)}, so nothing"
            " reads the query's Delta tables there"
        )
    if any(c.delta_not_judged and not c.diagnosis.prediction.no_delta_release for c in cells):
        legend.append(
            "~ not judged: a Delta table the query may read or write could not be judged (unreadable: "
            f"{Code.DELTA_TABLE_UNREADABLE}; copies none is guessed of: {Code.DELTA_TABLE_COPIES})"
        )
    # Spark's words are wrapped inside their cell, never cut: they are what the driver log shows.
    with layout(width or line_width()):
        body = table(heads, rows, keep=(0,))
    return section("Restart matrix", body + "\n" + "\n".join(fill(t, line_width()) for t in legend))


def _configured_words(matrix: MatrixDiagnosis) -> str:
    named_lines, named_modes = matrix.named_lines, matrix.named_modes
    lines = ("Spark " + ", ".join(named_lines)) if named_lines else "the line that wrote the checkpoint"
    modes = ", ".join(named_modes) or f"the {matrix.mode_detected} mode that wrote the logs"
    return f"{modes}, on {lines}"


def _details_hint(matrix: MatrixDiagnosis, hints: Hints) -> str:
    shown = (matrix.failing_cells or matrix.as_configured)[0].cell
    return "One restart in detail:\n  " + hints.diagnose(matrix.checkpoint, shown.spark, shown.mode)


def render_matrix(matrix: MatrixDiagnosis, width: int | None = None, hints: Hints | None = None) -> str:
    """Return the no-flag ``diagnose`` result as text: the restart matrix first, then the findings
    (with Spark's words), the assumptions and what to do next."""
    head = key_values(
        [
            ("Checkpoint", matrix.checkpoint),
            ("Query id", matrix.query_id or "-"),
            ("Written by", f"Spark {matrix.writer.label}, {matrix.mode_detected} mode"),
            ("Stateful", matrix.statefulness.text),
        ]
    )
    blocks = [
        head,
        render_matrix_table(matrix, width),
        render_findings(matrix.findings, matrix.checkpoint),
    ]
    if matrix.assumptions:
        blocks.append(section("Assumptions", bullets(list(matrix.assumptions))))
    hints = hints or Hints()
    blocks += delta_steps(matrix.checkpoint, matrix.delta_pairing, hints)
    blocks.append(_details_hint(matrix, hints))
    blocks += _next_steps(matrix.checkpoint, matrix.findings, bool(matrix.failing_cells), hints)
    return "\n\n".join(blocks) + "\n"
