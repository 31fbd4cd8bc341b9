"""Plan repairs: options per error finding from the strategy registry, the smallest combination
that makes every target restart start, its consequences, one chosen plan. Pure.

The strategies live one per module in :mod:`checkpoint_doctor.planning.strategies`; the
combination search in :mod:`checkpoint_doctor.planning.search`. Every option is judged by
simulating its changes on the snapshot and diagnosing the result, so the consequences stated come
from the same restart model as ``diagnose``. An option that can lose data (a re-planned committed
batch a sink may skip, a state reset, a new start) is planned only with ``accept_data_loss``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from checkpoint_doctor.diagnosis import DiagnoseOptions, Diagnosis, diagnose
from checkpoint_doctor.diagnosis.codes import CODES, ERROR, TABLES_NOT_JUDGED
from checkpoint_doctor.diagnosis.model import LIVE_WRITER_CODES, Finding
from checkpoint_doctor.diagnosis.versions import at_root
from checkpoint_doctor.errors import ConsentNeededError, RefusedError
from checkpoint_doctor.planning.consequences import CATCH_UP, DUPLICATES, SinkFacts, consequences
from checkpoint_doctor.planning.manual import MANUAL
from checkpoint_doctor.planning.options import Option, PlanContext, too_many_steps
from checkpoint_doctor.planning.plan import RepairPlan, public_storage_options
from checkpoint_doctor.planning.preconditions import derive, sink_contradiction
from checkpoint_doctor.planning.request import Cell, PlanOptions, cell_dict
from checkpoint_doctor.planning.search import Search, Trial
from checkpoint_doctor.planning.steps import Area
from checkpoint_doctor.planning.strategies import FAMILIES, WARNING_REPAIRS, for_code
from checkpoint_doctor.planning.strategies.recreate_metadata import NEW_ID_NOTE
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot

STRATEGIES = FAMILIES
#: What to do about an error whose only repair can lose data (the CLI prints the command).
CONSENT_MANUAL = "re-run plan with --accept-data-loss to plan it anyway"
#: How an unresolved error whose repair needs consent begins: rows written twice only (nothing
#: skipped: delta-sink-txn), or data lost.
TWICE_REASON = "its repair writes rows twice: "
LOSS_REASON = "its repair can lose data: "


def _cells(diagnosis: Diagnosis, opts: PlanOptions) -> tuple[Cell, ...]:
    own = Cell(diagnosis.spark, diagnosis.mode)
    return tuple(dict.fromkeys(opts.cells or (own,)))


def _proposals(
    snapshot: CheckpointSnapshot, diagnoses: dict[Cell, Diagnosis], opts: PlanOptions
) -> list[tuple[Finding, list[Option]]]:
    """Return every error finding of the target cells with the options proposed for it.

    One fact met in several cells (the same code, paths and batches) is one finding, whose options
    are those proposed in each cell's context, each distinct option once.
    """
    groups: dict[tuple[str, tuple[str, ...], tuple[int, ...]], tuple[Finding, list[Option]]] = {}
    shared: dict[str, Any] = {}
    for diagnosis in diagnoses.values():
        ctx = PlanContext(snapshot, diagnosis, opts, shared)
        for finding in diagnosis.findings:
            if finding.severity != ERROR and finding.code not in WARNING_REPAIRS:
                continue
            _, options = groups.setdefault((finding.code, finding.paths, finding.batch_ids), (finding, []))
            known = {o.key for o in options}
            for strategy in for_code(finding.code):
                proposed = [_bounded(o, finding.code) for o in strategy.propose(finding, ctx)]
                options += [o for o in proposed if o.key not in known or o.unavailable]
                known |= {o.key for o in options}
    return [(finding, _distinct(options)) for finding, options in groups.values()]


def _bounded(option: Option, code: str) -> Option:
    """The option, or why it cannot be planned when it holds more steps than a plan file apply reads
    (whatever strategy made it: Delta txns, Kafka partitions, state files)."""
    return too_many_steps(option.strategy, code, len(option.steps)) or option


def _distinct(options: list[Option]) -> list[Option]:
    """Return the options without repeats; why a strategy cannot be used is said once (for the
    first cell), and not at all when another cell can use it."""
    usable = {o.strategy for o in options if o.unavailable is None}
    out: dict[Any, Option] = {}
    for o in options:
        if o.unavailable is None:
            out.setdefault(o.key, o)
        elif o.strategy not in usable:
            kept = out.setdefault(("unavailable", o.strategy), o)
            # What the operator does may differ per cell (a Delta release's conf): each is kept.
            if kept is not o and o.manual and kept.manual and o.manual not in kept.manual:
                out[("unavailable", o.strategy)] = replace(kept, manual=f"{kept.manual}; {o.manual}")
    return list(out.values())


def _candidates(proposals: list[tuple[Finding, list[Option]]]) -> list[Option]:
    """Return the executable options in rank order, each distinct option once."""
    out: dict[Any, Option] = {}
    for _, options in proposals:
        for o in options:
            if o.executable and o.key not in out:
                out[o.key] = o
    return list(out.values())


def _judge_alone(
    option: Option, search: Search, index: dict[Any, int], snapshot: CheckpointSnapshot
) -> dict[str, Any]:
    """Return the consequences of one option on its own."""
    if option.restart is not None:
        after = search.diagnose_cell(snapshot, option.restart)
        sink = SinkFacts.of(snapshot, (), search.sink_kind, search.dopts.delta_tables)
        return consequences(snapshot, (), after, sink, ())
    if not option.executable:
        return {"restart": None, "starts": None, **CATCH_UP}
    trial = search.trial((index[option.key],)) if option.key in index else None
    if trial is None:
        return {"restart": None, "starts": False, "summary": "conflicts with itself"}
    return {**trial.consequences, "starts_in_every_cell": trial.starts}


def _option_docs(
    proposals: list[tuple[Finding, list[Option]]],
    search: Search,
    chosen: Trial | None,
    snapshot: CheckpointSnapshot,
    manual: Option | None = None,
) -> list[dict[str, Any]]:
    index = {o.key: i for i, o in enumerate(search.candidates)}
    picked = {search.candidates[i].key for i in chosen.combo} if chosen is not None else set()
    if manual is not None:
        picked.add(manual.key)
    docs = []
    for finding, options in proposals:
        rows: list[dict[str, Any]] = []
        rank = 0
        for o in options:
            if o.unavailable is not None:
                rows.append({"strategy": o.strategy, "available": False, "reason": o.unavailable})
                continue
            rank += 1
            rows.append(
                {
                    "rank": rank,
                    "strategy": o.strategy,
                    "chosen": o.key in picked,
                    "note": o.note,
                    "steps": [s.to_dict() for s in o.steps],
                    "consequences": _judge_alone(o, search, index, snapshot),
                }
            )
        docs.append({"finding": finding.code, "message": finding.message, "options": rows})
    return docs


def _choose(search: Search, opts: PlanOptions) -> tuple[Trial | None, Trial | None, list[str]]:
    """Return (the chosen trial, a trial that needs consent it was not given, warnings)."""
    warnings: list[str] = []
    prefer = opts.strategy
    if prefer is not None:
        picked = search.first_with(prefer)
        if picked is not None:
            if picked.losses and not opts.accept_data_loss:
                return None, picked, warnings
            return picked, None, warnings
        warnings.append(f"strategy {prefer} does not make the restart start here; the default plan is shown")
    free, consented = search.best()
    if free is not None:
        return free, None, warnings
    if consented is not None and opts.accept_data_loss:
        return consented, None, warnings
    return None, consented, warnings


def _manual_for(code: str, proposals: list[tuple[Finding, list[Option]]]) -> str:
    """Return what the operator can do about a code no plan step fixes: an operator option's action
    (restart on the line or in the mode that wrote it), else the registry's text."""
    for finding, options in proposals:
        for o in options:
            if finding.code == code and o.unavailable is None and not o.executable and o.restart is not None:
                return f"{o.steps[0].describe().removeprefix('run: ')} (option {o.strategy})"
    for finding, options in proposals:
        for o in options:
            if finding.code == code and o.manual is not None:
                return o.manual
    return MANUAL.get(code, CODES[code].action)


def _unresolved(
    after: dict[Cell, Diagnosis],
    needs_consent: Trial | None,
    proposals: list[tuple[Finding, list[Option]]],
) -> list[dict[str, Any]]:
    """Return the error codes still met after the plan, per code with the cells and what to do."""
    out: dict[str, dict[str, Any]] = {}
    # An error left in a cell that starts is unresolved too (a sink log readers cannot use, CD404):
    # the plan says why nothing repairs it rather than ending at "Strategy none".
    for cell, diagnosis in after.items():
        for f in diagnosis.findings:
            # A warning with a repair is left unresolved only when its repair waits for consent.
            if (
                f.severity != ERROR
                and f.code not in TABLES_NOT_JUDGED
                and (f.code not in WARNING_REPAIRS or needs_consent is None)
            ):
                continue
            entry = out.setdefault(
                f.code,
                {
                    "code": f.code,
                    "reason": CODES[f.code].title,
                    "manual": _manual_for(f.code, proposals),
                    "cells": [],
                },
            )
            if cell_dict(cell) not in entry["cells"]:
                entry["cells"].append(cell_dict(cell))
    if needs_consent is not None:
        twice = all(x.startswith(DUPLICATES) for x in needs_consent.losses)
        for code in list(out):
            what = TWICE_REASON if twice else LOSS_REASON
            out[code]["reason"] = what + "; ".join(x.removeprefix(DUPLICATES) for x in needs_consent.losses)
            out[code]["manual"] = CONSENT_MANUAL
    return list(out.values())


def _expected(
    cells: tuple[Cell, ...], after: dict[Cell, Diagnosis], before: dict[Cell, Diagnosis]
) -> dict[str, Any]:
    first = after[cells[0]]
    return {
        "restart": first.prediction.summary,
        "starts": first.prediction.starts,
        "next_batch_id": first.prediction.next_batch_id,
        "codes": list(first.codes),
        "cells": [
            {
                **cell_dict(c),
                "label": c.text,
                "before": before[c].prediction.summary,
                "after": after[c].prediction.summary,
                "starts_after": after[c].prediction.starts,
            }
            for c in cells
        ],
    }


#: The plan fields that quote Spark's texts (with the checkpoint root as Spark prints it).
_TEXTS = frozenset({"options", "unresolved", "expected", "warnings"})


@dataclass(frozen=True)
class _Frame:
    """What every plan of one request shares: the snapshot, its diagnosis, the options, the target
    cells and the storage options to record."""

    snapshot: CheckpointSnapshot
    diagnosis: Diagnosis
    opts: PlanOptions
    cells: tuple[Cell, ...]
    storage: dict[str, Any]

    def artifact(self, **fields: Any) -> RepairPlan:
        """Return the plan with these steps, options, expectations (preconditions derived)."""
        snapshot = self.snapshot
        holds = fields.pop("holds", ())
        executable = tuple(s for s in fields["steps"] if s.executable)
        if not self.opts.force_sink and any(s.key is not None and s.key[0] == Area.SINK for s in executable):
            # A sink another query writes must not lose its log to this query's repair.
            problem = sink_contradiction(snapshot)
            if problem is not None:
                raise RefusedError(
                    f"refused to plan changes to a file sink: {problem}",
                    hint="check --sink-path; pass --force-sink if it is this query's output anyway",
                )
        return RepairPlan(
            checkpoint=snapshot.root,
            sink=snapshot.sink.url if snapshot.sink is not None else None,
            storage_options=public_storage_options(self.storage),
            snapshot_fingerprint=snapshot.fingerprint(),
            spark=self.diagnosis.spark,
            mode=self.diagnosis.mode,
            cells=tuple(cell_dict(c) for c in self.cells),
            request=self.opts.to_request(),
            preconditions=derive(
                snapshot, executable, self.opts.diagnose.live_window_s, force_sink=self.opts.force_sink
            )
            + tuple(dict.fromkeys(holds)),
            **{k: at_root(v, snapshot.root) if k in _TEXTS else v for k, v in fields.items()},
        )

    def live_plan(self) -> RepairPlan:
        """A writer may be live: no steps, and why."""
        live = [f for f in self.diagnosis.findings if f.code in LIVE_WRITER_CODES]
        unresolved = tuple(
            {"code": f.code, "reason": f.message, "manual": MANUAL[f.code], "cells": []} for f in live
        )
        same = dict.fromkeys(self.cells, self.diagnosis)
        expected = _expected(self.cells, same, same)
        return self.artifact(
            steps=(),
            addresses=(),
            strategy=None,
            options=(),
            unresolved=unresolved,
            expected=expected,
            warnings=(),
        )


def _manual_choice(proposals: list[tuple[Finding, list[Option]]], opts: PlanOptions) -> Option | None:
    """Return the operator's action asked for with ``--strategy`` (catch-up, a restart elsewhere)."""
    if opts.strategy is None:
        return None
    for _, options in proposals:
        for o in options:
            if o.strategy == opts.strategy and o.unavailable is None and not o.executable:
                return o
    return None


def _manual_plan(
    frame: _Frame,
    option: Option,
    proposals: list[tuple[Finding, list[Option]]],
    search: Search,
    diagnoses: dict[Cell, Diagnosis],
) -> RepairPlan:
    """The operator's action (catch-up, a restart elsewhere) asked for with ``--strategy``."""
    expected = _expected(frame.cells, diagnoses, diagnoses)
    if option.restart is not None:
        after = search.diagnose_cell(frame.snapshot, option.restart)
        expected["after"] = f"{option.steps[0].describe()}: {after.prediction.summary}"
    else:
        mode = " --mode micro-batch" if frame.diagnosis.mode == "micro-batch" else ""
        expected["after"] = f"the catch-up run; then: checkpoint-doctor diagnose {frame.snapshot.root}{mode}"
    return frame.artifact(
        steps=option.steps,
        holds=option.holds,
        addresses=option.addresses,
        strategy=option.strategy,
        options=tuple(_option_docs(proposals, search, None, frame.snapshot, option)),
        unresolved=(),
        expected=expected,
        warnings=(),
    )


def plan_repair(
    snapshot: CheckpointSnapshot,
    diagnosis: Diagnosis,
    options: PlanOptions | None = None,
    *,
    storage_options: dict[str, Any] | None = None,
) -> RepairPlan:
    """Return the repair plan for a diagnosed snapshot (read-only, deterministic)."""
    opts = options or PlanOptions()
    cells = _cells(diagnosis, opts)
    frame = _Frame(snapshot, diagnosis, opts, cells, storage_options or {})
    if opts.reset_flow is not None:
        return _reset_flow_plan(frame)
    if any(f.code in LIVE_WRITER_CODES for f in diagnosis.findings):
        return frame.live_plan()
    dopts: DiagnoseOptions = replace(opts.diagnose, spark=diagnosis.spark, mode=diagnosis.mode)
    calm = replace(dopts, now_ms=None, live_window_s=0)
    diagnoses = {c: diagnose(snapshot, replace(calm, spark=c.spark, mode=c.mode)) for c in cells}
    proposals = _proposals(snapshot, diagnoses, opts)
    search = Search(snapshot, cells, dopts, opts.sink_kind, _candidates(proposals), opts.guards)
    manual = _manual_choice(proposals, opts)
    if manual is not None:
        return _manual_plan(frame, manual, proposals, search, diagnoses)
    chosen, needs_consent, warnings = _choose(search, opts)
    steps = chosen.steps if chosen is not None else ()
    after = dict(zip(cells, chosen.after, strict=True)) if chosen is not None else diagnoses
    picked = [search.candidates[i] for i in chosen.combo] if chosen is not None else []
    if any(o.strategy == "recreate-metadata" and o.note == NEW_ID_NOTE for o in picked):
        warnings.append(
            "metadata gets a NEW query id: sinks and listeners keyed on the query id will see a new query"
        )
    remaining = {c for d in after.values() for c in d.codes}
    addresses = tuple(dict.fromkeys(c for o in picked for c in o.addresses if c not in remaining))
    strategy = ",".join(dict.fromkeys(o.strategy for o in picked)) or None
    return frame.artifact(
        steps=steps,
        holds=tuple(h for o in picked for h in o.holds),
        addresses=addresses,
        strategy=strategy,
        options=tuple(_option_docs(proposals, search, chosen, snapshot)),
        unresolved=tuple(_unresolved(after, needs_consent, proposals)),
        expected={
            **_expected(cells, after, diagnoses),
            "consequences": chosen.consequences if chosen is not None else None,
        },
        warnings=tuple(dict.fromkeys(warnings)),
    )


def _reset_flow_plan(frame: _Frame) -> RepairPlan:
    """A pipeline flow's selective reset (pipelines.reset): the plan's root is the flow directory,
    its steps write version n+1 past the last committed batch of the version it copies."""
    from checkpoint_doctor.pipelines.reset import new_query_id, reset_steps, reset_words

    rf = frame.opts.reset_flow
    assert rf is not None
    snapshot = frame.snapshot
    if rf.version in snapshot.dirs or any(f.path.startswith(f"{rf.version}/") for f in snapshot.files):
        raise RefusedError(
            f"version {rf.version} already exists in {snapshot.root}; nothing was planned",
            hint="plan the reset again: it takes the number past the largest one",
        )
    missing = [src for _, src, _ in rf.copies if snapshot.file(f"{rf.source}/{src}") is None]
    if missing:
        raise RefusedError(
            f"version {rf.source} no longer holds {', '.join(missing[:3])}; nothing was planned",
            hint="plan the reset again",
        )
    flow = "/".join(snapshot.root.rstrip("/").split("/")[-2:])
    starts, loss = reset_words(rf, flow)
    if loss is not None and not frame.opts.accept_data_loss:
        raise ConsentNeededError(
            f"resetting {flow} loses data ({loss}); nothing was planned",
            ("--accept-data-loss",),
            hint="pass --accept-data-loss to reset it anyway",
        )
    steps = reset_steps(rf, new_query_id(snapshot.fingerprint(), snapshot.root))
    consequences = {
        "data_loss": loss is not None,
        "loss": [loss] if loss else [],
        # --reset-start earliest: the file sources' rows read again (the operator consented).
        "duplicates": rf.start == "earliest",
        "summary": starts,
    }
    return frame.artifact(
        steps=steps,
        addresses=(),
        strategy="reset-flow",
        options=(),
        unresolved=(),
        expected={
            "restart": f"STARTS at batch {rf.batch + 1} in version {rf.version}",
            "starts": True,
            "next_batch_id": rf.batch + 1,
            "codes": [],
            "cells": [],
            "after": starts,
            "consequences": consequences,
        },
        warnings=(
            f"version {rf.version} gets a NEW query id: sinks and listeners keyed on the query id will see a new query",
            f"version {rf.source} and older stay as history (spark-pipelines reads only the largest number)",
        ),
    )
