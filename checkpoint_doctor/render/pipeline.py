"""The text of a pipeline's verdict: each flow's live version and the next ``spark-pipelines run``
per Spark line, then the pipeline's findings. Pure."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from checkpoint_doctor.render.layout import hang, key_values, table

if TYPE_CHECKING:
    from checkpoint_doctor.pipelines.load import PipelineReport


def render_pipeline(reports: Sequence[PipelineReport], job: str | None = None) -> str:
    """Return the pipeline block: one column per Spark line judged. ``job``: the pipeline code the
    flows were judged with (``--job``), which a printed reset command reads too."""
    first = reports[0]
    layout = first.layout
    tables = layout.tables()
    history = sum(len(f.history) for f in layout.flows)
    head = key_values(
        [
            ("Pipeline", first.root),
            ("Warehouse", first.warehouse or "none found beside the storage root (table sink logs not read)"),
            (
                "Flows",
                f"{len(layout.flows)} in {len(tables)} tables; each judged on its live version (the largest "
                f"number), {history} older {'version' if history == 1 else 'versions'} kept as history",
            ),
        ]
    )
    rows = []
    for f in layout.flows:
        cells = []
        for r in reports:
            v = r.verdict.flow(f.name)
            cells.append(v.short if v is not None else "-")
        version = f.live if f.live is not None else "-"
        older = f" (history {', '.join(f.history)})" if f.history else ""
        rows.append([f.name, f"{version}{older}", *cells])
    grid = table(["flow", "live version", *(f"Spark {r.spark}" for r in reports)], rows)
    runs = ", ".join(f"{r.spark} {r.verdict.run_outcome}" for r in reports)
    out = [head, "", "Next spark-pipelines run", grid, f"run: {runs}"]
    seen: dict[tuple[str, str], list[str]] = {}
    for r in reports:
        for finding in r.verdict.findings:
            seen.setdefault((str(finding.code), finding.message), []).append(r.spark)
    if seen:
        out += ["", "Findings"]
        for (code, message), lines in seen.items():
            from checkpoint_doctor.diagnosis.codes import CODES

            info = CODES[code]
            where = "" if len(lines) == len(reports) else f" (Spark {', '.join(lines)})"
            out.append(hang(f"{info.severity.upper():<8} {code} {info.slug}{where}", "  ", "  "))
            out.append(hang(message, "           ", "           "))
    else:
        out += ["", "Findings: none"]
    failing = {v.layout.name: v for r in reports for v in r.verdict.flows if v.next_run == "FAILED"}
    if failing:
        # The flow directory: plan picks its live version, the one spark-pipelines reads.
        spark = " ".join(
            f"--spark {r.spark}" for r in reports if any(v.next_run == "FAILED" for v in r.verdict.flows)
        )
        out += ["", "Repair options (each flow's live version):"]
        for verdict in failing.values():
            flow = verdict.layout
            # What the checkpoint no longer says and the pipeline's code does (a join's stores).
            told = "".join(f" {f}" for f in (verdict.restart.plan_flags if verdict.restart else ()))
            out.append(
                f"  checkpoint-doctor plan {first.root}/{flow.dir} {spark}{told} "
                f"-o plan-{flow.table}-{flow.flow}.json"
            )
        # Where no repair of the live version exists: a new version past its last committed batch
        # that keeps the table's data (pipelines.reset); a stateful flow's asks for consent itself.
        out += ["", "Or reset a flow into a new live version that keeps its table's data:"]
        for verdict in failing.values():
            flow = verdict.layout
            code = f" --job {shlex.quote(job)}" if job else ""
            out.append(
                f"  checkpoint-doctor plan {first.root}/{flow.dir} --reset-flow {spark}{code} "
                f"-o reset-{flow.table}-{flow.flow}.json"
            )
    if seen:
        out += [
            "",
            "What to do: "
            + "; ".join(f"checkpoint-doctor explain {c}" for c in sorted({c for c, _ in seen})),
        ]
    return "\n".join(out)
