"""The text of ``explain``: a finding code in words. Pure."""

from __future__ import annotations

from typing import Any

from checkpoint_doctor.render.layout import (
    hang,
    section,
)


def _rule_differs(info: dict[str, Any]) -> bool:
    return bool(info.get("severity_rule", info["severity"]) != info["severity"])


def _severity_words(info: dict[str, Any]) -> str:
    """``error`` codes are errors as configured and warnings for a plausible restart (the rule)."""
    return "error as configured, warning for a plausible restart" if _rule_differs(info) else info["severity"]


def render_explain(info: dict[str, Any]) -> str:
    """Return one code's explanation."""
    lines = [
        hang(f"{info['code']} {info['slug']} ({_severity_words(info)})", "", "  "),
        hang(info["title"], "", ""),
        "",
        *([section("Severity", hang(info["severity_rule"], "", "")), ""] if _rule_differs(info) else []),
        section("What Spark does", hang(info["spark_does"], "", "")),
        "",
        section("Why it breaks", hang(info["why"], "", "")),
        "",
        section("What you can do", hang(info["action"], "", "")),
    ]
    if info["search"]:
        lines += ["", section("Search your driver log for", "\n".join(f"  {s}" for s in info["search"]))]
    return "\n".join(lines) + "\n"
