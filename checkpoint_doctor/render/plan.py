"""The text of ``plan``: the ranked options, the steps, what to expect and what to run next. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from checkpoint_doctor.render.hints import Hints
from checkpoint_doctor.render.layout import (
    bullets,
    hang,
    key_values,
    section,
    wrap,
)

if TYPE_CHECKING:
    from checkpoint_doctor.planning.plan import RepairPlan

#: The planner's own records of options, expectations and unresolved findings (``RepairPlan``'s
#: ``options``, ``expected``, ``unresolved``: JSON-shaped in the plan model itself).
PlanPart = Mapping[str, Any]


def _option_lines(group: PlanPart) -> list[str]:
    lines = [hang(f"{group['finding']}: {group['message']}", "", "  ")]
    for opt in group["options"]:
        if opt.get("available") is False:
            lines.append(hang(f"{opt['strategy']}: not possible ({opt['reason']})", "  -  ", "     "))
            continue
        mark = " (chosen)" if opt["chosen"] else ""
        alone = opt["consequences"].get("starts_in_every_cell")
        mark += " (not enough on its own)" if alone is False else ""
        lines.append(
            hang(
                f"{opt['strategy']}{mark}" + (f": {opt['note']}" if opt["note"] else ""),
                f"  {opt['rank']}. ",
                "      ",
            )
        )
        summary = opt["consequences"].get("summary")
        if summary:
            lines.append(wrap(summary, 6))
    return lines


def _expected_text(exp: PlanPart) -> str:
    cells = exp.get("cells") or []
    text = "Expected after apply: " + exp["restart"]
    if exp.get("codes"):
        text += f" (remaining codes: {', '.join(exp['codes'])})"
    text = hang(text, "", "  ")
    if len(cells) > 1:
        text += "".join(
            "\n"
            + hang(
                f"{c['label']}: {c['before']} -> {c.get('after') or 'after the run: diagnose again'}",
                "  ",
                "    ",
            )
            for c in cells
        )
    if exp.get("after"):
        text += "\n" + hang(f"Then: {exp['after']}", "", "  ")
    return text


def _unresolved_text(items: Sequence[PlanPart]) -> str:
    lines = []
    for u in items:
        where = ", ".join(f"Spark {c['spark']} {c['mode']}" for c in u.get("cells") or [])
        lines.append(hang(f"{u['code']}: {u['reason']}" + (f" ({where})" if where else ""), "  - ", "    "))
        lines.append(hang(f"what you can do: {u['manual']}", "    ", "    "))
    return "\n".join(lines)


def _sink_text(plan: RepairPlan) -> str:
    """The sink output the plan checked, else the kind the operator named with ``--sink``."""
    if plan.sink:
        return str(plan.sink)
    # A Delta sink is paired by its txn, not by --sink-path (issue 36: the header said "not checked"
    # above the Delta sink's own finding).
    from checkpoint_doctor.world.delta_pairing import SINK_PAIRED

    paired = next((a for a in plan.assumptions if a.startswith(SINK_PAIRED)), None)
    if paired is not None:
        return "Delta table " + paired.removeprefix(SINK_PAIRED).replace(" by txn", ", paired by txn", 1)
    kind = plan.request.get("sink_kind")
    return f"{kind} (--sink {kind}; no sink output checked)" if kind else "not checked (no --sink-path)"


#: A plan with more steps (or preconditions) than this lists the first SHOWN and counts them by kind.
LISTED = 40
SHOWN = 10


@dataclass(frozen=True)
class PlanFollowUp:
    """What ``plan`` says after the plan: where it went (``-o``; not written when it has no step),
    the command that writes it, and the one that plans it accepting data loss (when only that
    would repair it)."""

    output: str | None = None
    written: bool = False
    write: str | None = None
    consent: str | None = None
    #: The same plan without the live-writer check (``--live-window 0``), when only a writer that
    #: may be live (CD501, CD502) stopped it: a copy just made looks like one.
    live: str | None = None


def _consent_cost(plan: RepairPlan) -> str:
    """What ``--accept-data-loss`` accepts here: rows written twice when that is all (delta-sink-txn
    skips nothing), else data loss."""
    from checkpoint_doctor.planning.planner import CONSENT_MANUAL, TWICE_REASON

    reasons = [str(u["reason"]) for u in plan.unresolved if u["manual"] == CONSENT_MANUAL]
    return (
        "rows written twice" if reasons and all(r.startswith(TWICE_REASON) for r in reasons) else "data loss"
    )


def _plan_ending(plan: RepairPlan, follow: PlanFollowUp, hints: Hints) -> list[str]:
    runnable = bool(plan.executable_steps)
    if follow.written and follow.output:
        tail = f" Apply it with: {hints.apply(follow.output)}" if runnable else ""
        return [f"Plan written to {follow.output}.{tail}"]
    blocks = []
    if plan.steps and follow.write:
        blocks.append(f"Write the plan to a file, then apply it:\n  {follow.write}")
    if plan.steps:
        return blocks
    if follow.output:
        blocks.append(f"Nothing to apply: no plan file was written to {follow.output}.")
    if follow.live:
        blocks.append(
            f"If no query writes to it (a copy just made), plan it without the live check:\n  {follow.live}"
        )
    elif follow.consent:
        blocks.append(
            f"To plan it anyway, accepting the {_consent_cost(plan)} named above:\n  {follow.consent}"
        )
    elif plan.unresolved:
        blocks.append(
            "No plan can be applied: no change checkpoint-doctor can make repairs the errors above; "
            "their 'what you can do' says what can."
        )
    elif not plan.options:
        restart = (plan.expected or {}).get("restart")
        said = "Nothing to repair: no error needs a change" + (f" (restart: {restart})" if restart else "")
        blocks.append(
            hang(said + ". Every finding, warnings included:", "", "")
            + f"\n  {hints.diagnose(plan.checkpoint)}"
        )
    return blocks


def render_plan(
    plan: RepairPlan,
    written_to: str | None,
    hints: Hints | None = None,
    follow: PlanFollowUp | None = None,
) -> str:
    """Return a plan as text: options with consequences, steps, preconditions, expected result, and
    the next command (apply the written file, write it, or plan it accepting data loss)."""
    blocks = [
        key_values(
            [
                ("Plan", plan.plan_id),
                ("Checkpoint", plan.checkpoint),
                ("Sink", _sink_text(plan)),
                (
                    "Restart",
                    "; ".join(f"Spark {c['spark']}, {c['mode']}" for c in plan.cells)
                    or f"Spark {plan.spark}, {plan.mode}",
                ),
                ("Strategy", plan.strategy or "none"),
                ("Addresses", ", ".join(plan.addresses) or "nothing"),
            ]
        )
    ]
    for i, group in enumerate(plan.options):
        text = "\n".join(_option_lines(group))
        blocks.append(section("Options", text) if i == 0 else text)
    if plan.steps:
        where = f"in {written_to}" if written_to else "in the plan file (-o) and --format json"
        if len(plan.steps) > LISTED:
            # A plan of 1,600 steps is read by kind; every step is in the file apply reads (issue 36).
            kinds = Counter(s.kind for s in plan.steps)
            by_kind = ", ".join(f"{n:,} {kind}" for kind, n in kinds.most_common())
            steps = f"  {len(plan.steps):,} steps: {by_kind}; the first {SHOWN}, every one {where}:\n"
        else:
            steps = ""
        steps += "\n".join(
            hang(f"{s.describe()}  ({s.reason})", f"  {i}. ", "     ")
            for i, s in enumerate(plan.steps[: SHOWN if len(plan.steps) > LISTED else None], 1)
        )
        blocks.append(section("Steps, in order", steps))
        shown_pres = plan.preconditions[: SHOWN if len(plan.preconditions) > LISTED else None]
        pres = "\n".join(hang(p.describe(), "  - ", "    ") for p in shown_pres)
        if len(shown_pres) < len(plan.preconditions):
            pres += f"\n  ... and {len(plan.preconditions) - len(shown_pres):,} more, every one {where}"
        blocks.append(section("Preconditions checked by apply", pres))
        blocks.append(_expected_text(plan.expected))
    for w in plan.warnings:
        blocks.append(hang(f"WARNING: {w}", "", "  "))
    if plan.assumptions:
        blocks.append(section("Assumptions", bullets(list(plan.assumptions))))
    if plan.unresolved:
        blocks.append(section("Unresolved (no safe automatic repair)", _unresolved_text(plan.unresolved)))
    if follow is None:  # the plan shown before apply's question: written already
        follow = PlanFollowUp(output=written_to, written=written_to is not None)
    blocks += _plan_ending(plan, follow, hints or Hints())
    return "\n\n".join(blocks) + "\n"
