"""The text of ``explain``: a finding code in words. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from checkpoint_doctor.render.layout import (
    hang,
    section,
    table,
)

if TYPE_CHECKING:
    from checkpoint_doctor.diagnosis.codes import CodeInfo


def code_rows(infos: Iterable[CodeInfo]) -> list[dict[str, Any]]:
    """Return every finding code for ``explain --list``, sorted by code (the JSON rows)."""
    return [
        {
            "code": str(i.code),
            "slug": i.slug,
            "severity": str(i.severity),
            "title": i.title,
            "retired": i.retired,
        }
        for i in sorted(infos, key=lambda i: str(i.code))
    ]


def render_code_list(rows: Iterable[dict[str, Any]]) -> str:
    """Return ``explain --list`` as a table: code, slug, severity, title (retired codes say so)."""
    body = [
        [r["code"], r["slug"], r["severity"], r["title"] + (" (retired)" if r["retired"] else "")]
        for r in rows
    ]
    return table(["code", "slug", "severity", "title"], body, keep=(0, 1)) + "\n"


def _severity_words(info: CodeInfo, severity_rule: str) -> str:
    """``error`` codes are errors as configured and warnings for a plausible restart (the rule)."""
    return (
        "error as configured, warning for a plausible restart"
        if severity_rule != info.severity
        else info.severity
    )


def render_explain(info: CodeInfo, severity_rule: str) -> str:
    """Return one code's explanation (``severity_rule``: how diagnose sets its severity,
    :func:`~checkpoint_doctor.diagnosis.severity.rule_text`)."""
    lines = [
        hang(f"{info.code} {info.slug} ({_severity_words(info, severity_rule)})", "", "  "),
        hang(info.title, "", ""),
        "",
        *([section("Severity", hang(severity_rule, "", "")), ""] if severity_rule != info.severity else []),
        section("What Spark does", hang(info.spark_does, "", "")),
        "",
        section("Why it breaks", hang(info.why, "", "")),
        "",
        section("What you can do", hang(info.action, "", "")),
    ]
    if info.search:
        lines += ["", section("Search your driver log for", "\n".join(f"  {s}" for s in info.search))]
    return "\n".join(lines) + "\n"
