"""Format command results as text tables (tabulate) or JSON. No click, no I/O: strings out.

JSON output is always one document ``{"schema_version": 1, "command": ..., "result": ...}``;
adding keys is compatible, renaming or removing one is a breaking change. Tables use one fixed
``tablefmt`` and fixed column order, and never truncate paths.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from tabulate import tabulate

SCHEMA_VERSION = 1
TABLEFMT = "simple"


def json_document(command: str, result: Any = None, *, error: dict[str, Any] | None = None) -> str:
    """Return the one JSON document a command prints."""
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "command": command}
    if error is not None:
        doc["error"] = error
    else:
        doc["result"] = result
    return json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Return a table in the project's fixed format ('-' for empty cells)."""
    body = [["-" if c is None or c == "" else c for c in row] for row in rows]
    return tabulate(body, headers=list(headers), tablefmt=TABLEFMT, disable_numparse=True)


def key_values(pairs: Iterable[tuple[str, Any]]) -> str:
    """Return aligned ``key  value`` lines."""
    items = [(k, "-" if v is None or v == "" else str(v)) for k, v in pairs]
    width = max((len(k) for k, _ in items), default=0)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in items)


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


def _yes(flag: bool) -> str:
    return "yes" if flag else "-"


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
    """Return the ``inspect`` report as text."""
    blocks: list[str] = []
    meta = report["metadata"]
    query = report["query_id"] or ("metadata missing" if not meta["present"] else "unreadable")
    blocks.append(
        key_values(
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
    )
    blocks.append(
        section(
            "Logs",
            table(
                ["log", "batches", "count", "holes", "versions", "problems"],
                [_log_row("offsets", report["offsets"]), _log_row("commits", report["commits"])],
            ),
        )
    )
    latest = report["latest_batch"]
    if latest is not None:
        head = f"Latest batch {latest['batch_id']} ({'committed' if latest['committed'] else 'not committed'})"
        if latest.get("error"):
            blocks.append(section(head, f"{latest['error']['path']}: {latest['error']['reason']}"))
        else:
            facts = [
                ("planned at", latest.get("batch_time") or "-"),
                ("watermark", f"{latest.get('watermark_ms')} ms" if latest.get("watermark_ms") is not None else "-"),
            ]
            if latest.get("next_batch_watermark_ms") is not None:
                facts.append(("next watermark", f"{latest['next_batch_watermark_ms']} ms (latest commit)"))
            rows = [[s["index"], s["name"], s["type"], s["text"]] for s in latest.get("sources", [])]
            blocks.append(
                section(head, key_values(facts) + "\n\n" + table(["source", "name", "type", "offset"], rows))
            )
    if report["pinned_conf"]:
        blocks.append(
            section(
                "Pinned confs (from the latest offsets file; applied on restart)",
                table(["conf", "value"], sorted(report["pinned_conf"].items())),
            )
        )
    if report["sources"]:
        blocks.append(
            section(
                "Source metadata (sources/)",
                table(
                    ["path", "kind", "batches", "compact", "files", "bytes"],
                    [
                        [s["path"], s["kind"], s["batches"], ", ".join(map(str, s["compacts"])), s["files"], human_bytes(s["bytes"])]
                        for s in report["sources"]
                    ],
                ),
            )
        )
    state = report["state"]
    if state["operators"]:
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
        blocks.append(
            section(
                "State (state/)",
                table(["op", "name", "provider", "partitions", "stores", "versions", "files", "bytes"], rows),
            )
        )
    elif state["present"]:
        blocks.append(section("State (state/)", "directory present, no operator directories"))
    sink = report.get("sink")
    if sink is not None:
        blocks.append(
            section(
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
        )
    if report["debris"]:
        blocks.append(
            section(
                "Debris (ignored by Spark)",
                table(
                    ["kind", "path", "for", "bytes"],
                    [[d["kind"], d["path"], d["target"], d["size"]] for d in report["debris"]],
                ),
            )
        )
    if report["timeline"]:
        rows = []
        for row in report["timeline"]:
            st = row["state"]
            rows.append(
                [
                    row["batch_id"],
                    _yes(row["offsets"]),
                    _yes(row["commit"]),
                    f"{st['present']}/{st['stores']}" if st is not None else "-",
                ]
            )
        blocks.append(
            section(
                "Timeline, newest batch first (state = stores holding version batch+1)",
                table(["batch", "offsets", "commit", "state"], rows),
            )
        )
    return "\n\n".join(blocks) + "\n"


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
    lines = [f"Restart on Spark {pred['spark']} ({pred['mode']}): {pred['summary']}"]
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
        kind = {"rerun": "re-run of a planned batch, same end offsets", "new": "new batch, end offsets chosen by the sources"}
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


def _wrap(text: str, indent: int, width: int = 100) -> str:
    import textwrap

    return textwrap.fill(
        text, width=width, initial_indent=" " * indent, subsequent_indent=" " * indent,
        break_long_words=False, break_on_hyphens=False,
    )


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
            evidence.append(", ".join(shown) + (f" (+{len(f['paths']) - 8} more)" if len(f["paths"]) > 8 else ""))
        if f["batch_ids"]:
            ids = f["batch_ids"]
            evidence.append("batch " + ", ".join(map(str, ids[:10])) + (" ..." if len(ids) > 10 else ""))
        if evidence:
            lines.append(_wrap("evidence: " + "; ".join(evidence), 11))
        blocks.append("\n".join(lines))
    return title + "\n" + "\n".join(blocks)


def render_diagnosis(result: dict[str, Any]) -> str:
    """Return the ``diagnose`` result as text: the prediction first, then findings."""
    head = key_values(
        [
            ("Checkpoint", result["checkpoint"]),
            ("Query id", result["query_id"] or "-"),
            (
                "Target",
                f"Spark {result['spark']}, {result['mode']} restart"
                + (f" (written in {result['mode_detected']} mode)" if result["mode_detected"] != result["mode"] else ""),
            ),
        ]
    )
    blocks = [head, render_prediction(result["restart"]), render_findings(result["findings"], result["counts"])]
    if result["assumptions"]:
        blocks.append(section("Assumptions", "\n".join(f"- {a}" for a in result["assumptions"])))
    codes = sorted({f["code"] for f in result["findings"] if f["severity"] != "info"})
    if codes:
        blocks.append(f"What to do: checkpoint-doctor explain {codes[0]}" + (f" (also {', '.join(codes[1:])})" if len(codes) > 1 else ""))
    if result["restart"]["outcome"] == "fails" or any(f["severity"] == "error" for f in result["findings"]):
        blocks.append(f"Repair options: checkpoint-doctor plan {result['checkpoint']}")
    return "\n\n".join(blocks) + "\n"


def render_explain(info: dict[str, Any]) -> str:
    """Return one code's explanation."""
    lines = [
        f"{info['code']} {info['slug']} ({info['severity']})",
        info["title"],
        "",
        section("What Spark does", info["spark_does"]),
        "",
        section("Why it breaks", info["why"]),
        "",
        section("What you can do", info["action"]),
    ]
    if info["search"]:
        lines += ["", section("Search your driver log for", "\n".join(f"  {s}" for s in info["search"]))]
    return "\n".join(lines) + "\n"


def _pre_text(p: dict[str, Any]) -> str:
    kind = p["kind"]
    if kind == "query_id":
        return f"query id is {p['value']}" if p["value"] else "metadata is absent"
    if kind == "latest_batches":
        return f"newest offsets id {p['offsets']}, newest commit id {p['commits']}"
    if kind == "file_unchanged":
        stamp = f"ETag {p['etag']}" if p.get("etag") else f"mtime {p.get('mtime_ms')}"
        return f"{p['area']}:{p['path']} unchanged ({p['size']} bytes, {stamp})"
    if kind == "file_absent":
        return f"{p['area']}:{p['path']} does not exist"
    return f"no live writer (window {p.get('window_s')} s)"


def _step_text(s: dict[str, Any]) -> str:
    kind = s["kind"]
    if kind == "quarantine":
        return f"quarantine {s['area']}:{s['path']}"
    if kind == "copy":
        return f"copy {s['source']} -> {s['path']}"
    if kind == "write":
        return f"write {s['path']} = {s['content']}"
    return f"run: {s['command']}"


def render_plan(plan: dict[str, Any], written_to: str | None) -> str:
    """Return a plan as text: options with consequences, steps, preconditions, expected result."""
    blocks = [
        key_values(
            [
                ("Plan", plan["plan_id"]),
                ("Checkpoint", plan["checkpoint"]),
                ("Sink", plan["sink"]),
                ("Restart", f"Spark {plan['spark']}, {plan['mode']}"),
                ("Strategy", plan["strategy"] or "none"),
                ("Addresses", ", ".join(plan["addresses"]) or "nothing"),
            ]
        )
    ]
    for group in plan["options"]:
        lines = [f"{group['finding']}: {group['message']}"]
        for opt in group["options"]:
            if opt.get("available") is False:
                lines.append(f"  -  {opt['strategy']}: not possible ({opt['reason']})")
                continue
            mark = " (chosen)" if opt["chosen"] else ""
            lines.append(f"  {opt['rank']}. {opt['strategy']}{mark}" + (f": {opt['note']}" if opt["note"] else ""))
            summary = opt["consequences"].get("summary")
            if summary:
                lines.append(_wrap(summary, 6))
        blocks.append(section("Options", "\n".join(lines)) if group is plan["options"][0] else "\n".join(lines))
    if plan["steps"]:
        blocks.append(
            section(
                "Steps, in order",
                "\n".join(f"  {i}. {_step_text(s)}  ({s['reason']})" for i, s in enumerate(plan["steps"], 1)),
            )
        )
        blocks.append(section("Preconditions checked by apply", "\n".join(f"  - {_pre_text(p)}" for p in plan["preconditions"])))
        exp = plan["expected"]
        blocks.append(
            "Expected after apply: "
            + exp["restart"]
            + (f" (remaining codes: {', '.join(exp['codes'])})" if exp.get("codes") else "")
            + (f"\nThen: {exp['after']}" if exp.get("after") else "")
        )
    for w in plan["warnings"]:
        blocks.append(f"WARNING: {w}")
    if plan["unresolved"]:
        blocks.append(
            section(
                "Unresolved (no safe automatic repair)",
                "\n".join(f"  - {u['code']}: {u['reason']}\n    what you can do: {u['manual']}" for u in plan["unresolved"]),
            )
        )
    if written_to:
        runnable = any(s["kind"] != "run" for s in plan["steps"])
        blocks.append(f"Plan written to {written_to}." + (f" Apply it with: checkpoint-doctor apply {written_to}" if runnable else ""))
    return "\n\n".join(blocks) + "\n"


def render_apply(result: dict[str, Any]) -> str:
    """Return an apply result as text."""
    if result["dry_run"]:
        text = f"Dry run of plan {result['plan_id']}: every precondition holds; nothing was changed."
    elif result["steps_done"] == 0 and not result["journal"]:
        text = f"Plan {result['plan_id']} has no changes to make."
    else:
        text = (
            f"Applied plan {result['plan_id']}: {result['steps_done']} step(s).\n"
            f"Backups and journal: {result['backup']}\n"
            f"Undo with: checkpoint-doctor undo {result['journal']}"
        )
    blocks = [text]
    for cmd in result["manual_steps"]:
        blocks.append(f"Run this yourself next (the plan's catch-up step):\n  {cmd}")
    if result["after"] is not None:
        blocks.append("Diagnosis after apply:\n" + render_prediction(result["after"]["restart"]))
    return "\n\n".join(blocks) + "\n"


def render_undo(result: dict[str, Any]) -> str:
    """Return an undo result as text."""
    lines = [f"Undid {result['journal']}"]
    for p in result["restored"]:
        lines.append(f"  restored {p}")
    for p in result["removed"]:
        lines.append(f"  removed {p}")
    for p in result["already_as_before"]:
        lines.append(f"  already as before: {p}")
    return "\n".join(lines) + "\n"
