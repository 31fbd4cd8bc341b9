"""The text of ``apply``, ``undo`` and ``history``: what changed a checkpoint. Pure."""

from __future__ import annotations

from typing import Any

from checkpoint_doctor.render.diagnosis import render_prediction
from checkpoint_doctor.render.hints import Hints
from checkpoint_doctor.render.layout import (
    local_time,
    tabulate,
)


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
