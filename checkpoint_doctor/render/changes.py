"""The text of ``apply``, ``undo`` and ``history``: what changed a checkpoint. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from checkpoint_doctor.render.diagnosis import render_prediction
from checkpoint_doctor.render.documents import JsonObject
from checkpoint_doctor.render.hints import Hints
from checkpoint_doctor.render.layout import (
    fill,
    line_width,
    local_time,
    tabulate,
)

if TYPE_CHECKING:
    from checkpoint_doctor.diagnosis.model import Diagnosis


# What the texts read of execution's results (``execution.apply.ApplyResult``,
# ``execution.undo.UndoResult``), as protocols: renderers do not import the layer that changes files.


class ApplyOutcome(Protocol):
    @property
    def plan_id(self) -> str: ...
    @property
    def dry_run(self) -> bool: ...
    @property
    def cancelled(self) -> bool: ...
    @property
    def backup_url(self) -> str | None: ...
    @property
    def journal_url(self) -> str | None: ...
    @property
    def steps_done(self) -> int: ...
    @property
    def manual_steps(self) -> Sequence[str]: ...
    @property
    def would(self) -> Sequence[Mapping[str, Any]]: ...
    @property
    def after(self) -> Diagnosis | None: ...


class UndoOutcome(Protocol):
    @property
    def journal_url(self) -> str: ...
    @property
    def restored(self) -> Sequence[str]: ...
    @property
    def removed(self) -> Sequence[str]: ...
    @property
    def unchanged(self) -> Sequence[str]: ...


def render_apply(result: ApplyOutcome, hints: Hints | None = None, checkpoint: str | None = None) -> str:
    """Return an apply result as text: what was done (or, dry run / cancelled, what would be); its
    first line names the checkpoint the plan is for (issue 36: a plan file says no name)."""
    would = _would_text(result.would)
    to = f" to {checkpoint}" if checkpoint else ""
    if result.dry_run:
        text = (
            fill(
                f"Dry run of plan {result.plan_id}{to}: the plan is what checkpoint-doctor plans for the "
                "live checkpoint and every precondition holds; nothing was changed.",
                line_width(),
            )
            + f"\nApply would do:\n{would}"
        )
    elif result.cancelled:
        text = f"Cancelled: plan {result.plan_id} was not applied{to}; nothing was changed."
    elif result.steps_done == 0 and not result.journal_url:
        text = f"Plan {result.plan_id} has no changes to make{to}; nothing was changed."
    else:
        text = (
            f"Applied plan {result.plan_id}{to}: {result.steps_done} step(s).\n"
            f"Backups and journal: {result.backup_url}\n"
            f"Undo with: {(hints or Hints()).undo(result.journal_url or '')}"
        )
    blocks = [text]
    for cmd in result.manual_steps:
        what = (
            "Run this yourself next (the plan's catch-up step)"
            if "catch-up" in cmd
            else "Do this yourself next"
        )
        blocks.append(f"{what}:\n  {cmd}")
    if result.after is not None:
        blocks.append(
            "Diagnosis after apply:\n" + render_prediction(result.after.prediction, result.after.checkpoint)
        )
    return "\n\n".join(blocks) + "\n"


def _would_text(would: Sequence[Mapping[str, Any]]) -> str:
    """The steps a dry run would make: all of them, or (a plan of 1,600 steps) the count by kind and
    the first few (issue 36); every one is in the plan file."""
    from collections import Counter

    from checkpoint_doctor.render.plan import LISTED, SHOWN

    if len(would) <= LISTED:
        return "\n".join(f"  {w['step']}. {w['what']}" for w in would)
    kinds = Counter(str(w["what"]).split(" ", 1)[0] for w in would)
    by_kind = ", ".join(f"{n:,} {kind}" for kind, n in kinds.most_common())
    first = "\n".join(f"  {w['step']}. {w['what']}" for w in would[:SHOWN])
    return f"  {len(would):,} steps: {by_kind}; the first {SHOWN}, every one in the plan file:\n{first}"


def render_undo(result: UndoOutcome) -> str:
    """Return an undo result as text."""
    lines = [f"Undid {result.journal_url}"]
    lines += [f"  restored {p}" for p in result.restored]
    lines += [f"  removed {p}" for p in result.removed]
    lines += [f"  already as before: {p}" for p in result.unchanged]
    return "\n".join(lines) + "\n"


def render_history(data: JsonObject, hints: Hints | None = None) -> str:
    """Return the applies made to a checkpoint as a table, oldest first (``data``: the ``history``
    document's result, the rows :func:`~checkpoint_doctor.reading.history.apply_history` reads
    from the journals)."""
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
    notes = "".join(
        f"\n{r['journal']}: {r['note']}"
        for r in rows
        if r["state"] in ("partly undone", "failed", "interrupted") and r.get("note")
    )
    hint = f"\nUndo the newest with: {(hints or Hints()).undo(undo[-1]['journal'])}" if undo else ""
    return f"Applies to {data['checkpoint']}:\n{text}{notes}{hint}\n"


def render_unfinished(rows: Sequence[JsonObject], hints: Hints | None = None) -> str:
    """Return the warning of ``diagnose`` and ``plan`` about applies to the checkpoint that changed
    it and did not finish, each with the command that undoes it (issue 31: diagnose was silent);
    empty when there are none. ``rows``: those of :func:`checkpoint_doctor.world.load.tool_records_for`."""
    lines = []
    for row in rows:
        steps = row.get("steps_done")
        how = str(row.get("note") or "").removeprefix("the apply did not finish: ")
        lines.append(
            f"\nWARNING: an apply of plan {row.get('plan_id')} to this checkpoint did not finish "
            f"({row.get('state')}{'' if steps is None else f', {steps} step(s) done'}): {how}.\n"
            f"  undo it with: {(hints or Hints()).undo(str(row.get('journal')))}"
            "  (then apply the plan again to finish the repair)\n"
        )
    return "".join(lines)
