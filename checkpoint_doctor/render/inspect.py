"""The text of ``inspect``: what a checkpoint holds. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from checkpoint_doctor.render.layout import (
    fill,
    human_bytes,
    key_values,
    line_width,
    section,
    table,
)

if TYPE_CHECKING:
    from checkpoint_doctor.diagnosis.inspection import InspectReport, LogSummary


def _ranges_text(runs: Sequence[Sequence[int]]) -> str:
    if not runs:
        return "none"
    return ", ".join(f"{a}..{b}" if b > a else str(a) for a, b in runs)


def _log_row(name: str, log: LogSummary) -> list[Any]:
    if not log.present:
        return [name, "directory missing", 0, "-", "-", "-"]
    problems = [f"{f.path}: {f.kind}" for f in log.failures]
    problems += [f"non-canonical name {n}" for n, _ in log.noncanonical]
    problems += [f"directory {d}/ ignored by Spark" for d in log.ignored_dirs]
    return [
        name,
        _ranges_text(log.ranges),
        log.count,
        _ranges_text(log.holes),
        ", ".join(f"v{v}" for v in log.versions) or "-",
        "; ".join(problems) or "-",
    ]


def render_inspect(report: InspectReport) -> str:
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


def _inspect_head(report: InspectReport) -> str:
    query = report.query_id or ("metadata missing" if not report.metadata_present else "unreadable")
    return key_values(
        [
            ("Checkpoint", report.checkpoint),
            ("Query id", query),
            ("Mode", f"{report.mode.mode} ({report.mode.evidence})"),
            ("Written by", f"Spark {report.writer.label}"),
            (
                "Files",
                f"{report.file_count} files, {human_bytes(report.bytes)} "
                f"(read {report.read_count}, depth {report.depth})",
            ),
        ]
    )


def _inspect_logs(report: InspectReport) -> str:
    return section(
        "Logs",
        table(
            ["log", "batches", "count", "holes", "versions", "problems"],
            [_log_row("offsets", report.offsets), _log_row("commits", report.commits)],
        ),
    )


def _inspect_latest(report: InspectReport) -> str | None:
    latest = report.latest_batch
    if latest is None:
        return None
    head = f"Latest batch {latest.batch_id} ({'committed' if latest.committed else 'not committed'})"
    if latest.error is not None:
        return section(head, f"{latest.error.path}: {latest.error.reason}")
    read = latest.read
    watermark = read.watermark_ms if read is not None else None
    facts = [
        ("planned at", (read.batch_time if read is not None else None) or "-"),
        ("watermark", f"{watermark} ms" if watermark is not None else "-"),
    ]
    if latest.next_batch_watermark_ms is not None:
        facts.append(("next watermark", f"{latest.next_batch_watermark_ms} ms (latest commit)"))
    sources = read.sources if read is not None else ()
    rows = [[s.index, s.name, s.source_type, s.describe()] for s in sources]
    return section(head, key_values(facts) + "\n\n" + table(["source", "name", "type", "offset"], rows))


def _inspect_confs(report: InspectReport) -> str | None:
    if not report.pinned_conf:
        return None
    pairs = sorted(report.pinned_conf.items())
    # A conf key is copied into a session conf: never broken; a long value (a provider class)
    # wraps after its dots (issue 36: inspect ran to 142 columns at COLUMNS=80).
    text = table(["conf", "value"], pairs, keep=(0,))
    if max(len(line) for line in text.splitlines()) > line_width():
        # The keys leave the values no room: each value goes under its key, indented.
        width, column = line_width(), max(len(k) for k, _ in pairs)
        text = "\n".join(
            f"{k.ljust(column)}  {v}"
            if column + 2 + len(str(v)) <= width
            else f"{k}\n" + _indented(str(v), width)
            for k, v in pairs
        )
    return section("Pinned confs (from the latest offsets file; applied on restart)", text)


def _indented(value: str, width: int) -> str:
    return "\n".join("    " + line for line in fill(value, width - 4).splitlines())


def _inspect_sources(report: InspectReport) -> str | None:
    if not report.sources:
        return None
    rows = [
        [s.path, s.kind, s.batches, ", ".join(map(str, s.compacts)), s.files, human_bytes(s.bytes)]
        for s in report.sources
    ]
    return section(
        "Source metadata (sources/)", table(["path", "kind", "batches", "compact", "files", "bytes"], rows)
    )


def _inspect_state(report: InspectReport) -> str | None:
    state = report.state
    if not state.operators:
        return (
            section("State (state/)", "directory present, no operator directories") if state.present else None
        )
    rows = [
        [
            op.operator_id,
            op.operator_name,
            op.provider,
            op.partitions,
            ", ".join(op.stores),
            f"{op.versions[0]}..{op.versions[1]}" if op.versions else "-",
            op.files,
            human_bytes(op.bytes),
        ]
        for op in state.operators
    ]
    body = table(["op", "name", "provider", "partitions", "stores", "versions", "files", "bytes"], rows)
    for op in state.operators:
        tws = op.transform_with_state
        if tws:
            body += "\n\n" + _transform_with_state(op.operator_id, tws)
    return section("State (state/)", body)


def _transform_with_state(operator_id: int, tws: dict[str, Any]) -> str:
    """A transformWithState operator: its modes, encoding, state variables and schema files."""
    head = key_values(
        [
            (f"Operator {operator_id}", tws["operator"]),
            ("Time mode", tws["time_mode"]),
            ("Output mode", tws["output_mode"]),
            ("Encoding", tws["encoding"] or "-"),
            (
                "Metadata",
                f"_metadata/v2/{tws['metadata_batch']}" if tws["metadata_batch"] is not None else "-",
            ),
        ]
    )
    rows = [
        [
            v["name"],
            v["kind"],
            "yes" if v["ttl"] else "no",
            v["key"] or "-",
            v["user_key"] or "-",
            v["value"] or "-",
            "-" if v["value_schema_id"] is None else f"{v['key_schema_id']}/{v['value_schema_id']}",
        ]
        for v in tws["variables"]
    ]
    variables = table(["variable", "kind", "ttl", "key", "map key", "value", "schema ids"], rows)
    files = "\n".join(f"  {p}" for p in tws["schema_files"]) or "  -"
    internal = ", ".join(tws["internal_column_families"]) or "-"
    return f"{head}\n{variables}\nInternal column families: {internal}\nSchema files (as recorded):\n{files}"


def _inspect_sink(report: InspectReport) -> str | None:
    sink = report.sink
    if sink is None:
        return None
    return section(
        "File sink log (_spark_metadata)",
        key_values(
            [
                ("sink", sink.url),
                ("batches", sink.batches if sink.present else "directory missing"),
                ("compact interval", sink.compact_interval),
                ("missing for readers", ", ".join(sink.missing_for_readers) or "none"),
            ]
        ),
    )


def _inspect_debris(report: InspectReport) -> str | None:
    if not report.debris:
        return None
    return section(
        "Debris (ignored by Spark)",
        table(
            ["kind", "path", "for", "bytes"],
            [[d.kind, d.file.path, d.target, d.file.size] for d in report.debris],
        ),
    )


def _inspect_timeline(report: InspectReport) -> str | None:
    if not report.timeline:
        return None
    rows = [
        [
            row.batch_id,
            row.offsets,
            row.commit,
            "-"
            if row.state_stores is None
            else f"{row.state} ({row.state_stores[0]}/{row.state_stores[1]} stores)",
        ]
        for row in report.timeline
    ]
    return section(
        "Timeline, newest batch first (state = the version the batch commits)",
        table(["batch", "offsets", "commit", "state"], rows),
    )
