"""What ``spark-pipelines run`` does next with each flow. Pure: takes the layout and each live
version's predicted restart, returns the flows' verdicts and the pipeline's findings.

A pipeline run (TriggeredGraphExecution, Spark 4.1+) starts each flow when the flows writing its
input tables have finished; a flow whose query fails is tried again, and after the third failure
("FAILED more than 2 times and will not be restarted") the run fails, and the flows reading its
table (directly or further down) never start ("SKIPPED due to upstream failure(s)"). Each flow's query is an ordinary
streaming query on the flow's live checkpoint version, so its restart is the ordinary prediction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkpoint_doctor.diagnosis.code_info import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.pipelines.layout import FlowLayout, PipelineLayout
from checkpoint_doctor.valueclasses import frozen

COMPLETED, FAILED, SKIPPED = "COMPLETED", "FAILED", "SKIPPED"
#: How often a pipeline run tries a failing flow (its retry budget: 2 restarts after the first).
TRIES = 3


@frozen
class FlowRestart:
    """A flow's live version as the ordinary diagnosis predicts its restart on one Spark line."""

    starts: bool
    summary: str
    #: Spark's error text when it fails (the message), and the words that find it in a log.
    error: str | None = None
    search: str | None = None
    #: The batch id the restart runs next (None when it fails).
    next_batch_id: int | None = None
    #: The codes of the ordinary diagnosis' findings on the live version.
    codes: tuple[str, ...] = ()
    #: What ``plan`` on the flow must be told that the pipeline's code says (spec.plan_flags).
    plan_flags: tuple[str, ...] = ()
    #: Whether the live version committed a batch, and holds any state file.
    committed: bool = False
    has_state: bool = False
    #: What the pipeline's code does that makes the flow stateful (None: the code says nothing).
    code_stateful: str | None = None
    #: The line gives the flow no upstream flow (spec.FlowCode.eager_input on 4.1 and 4.2): it starts
    #: with the flows that write what it reads, before they commit this run's batch.
    unordered: bool = False
    #: For an unordered flow: how many files its input tables' sink logs list that its file sources
    #: never read (None: not known). With none, it finds no new data when it starts.
    unread_files: int | None = None


@frozen
class FlowVerdict:
    """One flow of the pipeline: where its live checkpoint is and what the next run does with it."""

    layout: FlowLayout
    #: COMPLETED, FAILED (after 3 tries) or SKIPPED (an upstream flow failed).
    next_run: str
    summary: str
    restart: FlowRestart | None
    #: The tables this flow reads (from its file sources' logs).
    reads: tuple[str, ...] = ()
    #: The flows whose failure keeps this one SKIPPED.
    blocked_by: tuple[str, ...] = ()

    @property
    def short(self) -> str:
        """The next run in a few words, for a grid: the state and why."""
        if self.next_run == FAILED and self.restart is not None:
            return f"FAILED: {self.restart.search or self.restart.summary}"
        if self.next_run == SKIPPED:
            return f"SKIPPED: upstream {', '.join(self.blocked_by)} failed"
        return f"COMPLETED: {self.summary.removeprefix('STARTS ')}"

    def to_dict(self) -> dict[str, Any]:
        f = self.layout
        return {
            "pipeline_flow": f.name,
            "catalog": f.catalog,
            "schema": f.schema,
            "table": f.table,
            "flow": f.flow,
            "version": f.live,
            "versions": list(f.versions),
            "history": list(f.history),
            "checkpoint": f.version_dir(f.live) if f.live is not None else None,
            "next_run": self.next_run,
            "summary": self.summary,
            "error": self.restart.error if self.restart else None,
            "reads": list(self.reads),
            "blocked_by": list(self.blocked_by),
        }


@frozen
class PipelineVerdict:
    """Every flow's verdict, the run's outcome and the pipeline's own findings (CD8xx)."""

    flows: tuple[FlowVerdict, ...]
    findings: tuple[Finding, ...]

    @property
    def run_outcome(self) -> str:
        return FAILED if any(v.next_run == FAILED for v in self.flows) else COMPLETED

    def flow(self, name: str) -> FlowVerdict | None:
        return next((v for v in self.flows if v.layout.name == name or v.layout.flow == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_outcome,
            "flows": [v.to_dict() for v in self.flows],
            "findings": [
                {
                    "code": str(f.code),
                    "slug": f.slug,
                    "severity": str(f.severity),
                    "message": f.message,
                    "paths": list(f.paths),
                    "batch_ids": list(f.batch_ids),
                }
                for f in self.findings
            ],
        }


def _downstream_blockers(
    failing: set[str], reads: Mapping[str, tuple[str, ...]], table_of: Mapping[str, str]
) -> dict[str, tuple[str, ...]]:
    """For each flow, the failing flows upstream of it (through the tables they write)."""
    writers: dict[str, set[str]] = {}
    for flow, table in table_of.items():
        writers.setdefault(table, set()).add(flow)
    blocked: dict[str, tuple[str, ...]] = {}
    for flow in table_of:
        seen: set[str] = set()
        stack = list(reads.get(flow, ()))
        blockers: set[str] = set()
        while stack:
            table = stack.pop()
            if table in seen:
                continue
            seen.add(table)
            for w in writers.get(table, ()):
                if w in failing:
                    blockers.add(w)
                stack.extend(reads.get(w, ()))
        if blockers and flow not in failing:
            blocked[flow] = tuple(sorted(blockers))
    return blocked


def pipeline_verdict(
    layout: PipelineLayout,
    restarts: Mapping[str, FlowRestart],
    reads: Mapping[str, tuple[str, ...]],
    sink_batches: Mapping[str, tuple[int, ...] | None],
) -> PipelineVerdict:
    """The next run of every flow. ``restarts``, ``reads`` by flow name (``table/flow``);
    ``sink_batches`` by table: the batch ids its file sink log holds (None: not read)."""
    findings: list[Finding] = []
    table_of = {f.name: f.table for f in layout.flows}
    failing: set[str] = set()
    #: Flows started at once (no upstream on this line) whose input tables other flows write: their
    #: AvailableNow query (TriggeredGraphExecution.streamTrigger) fixes its end at what those tables'
    #: sink logs held before the run, so it finds no new data, runs no batch and never reaches the
    #: state it lacks (the missing-state check runs with a batch); it COMPLETES with its live version
    #: unchanged (recorded: fixtures/sdp/spark-4.1.4 and spark-4.2.1, code-new-stateful).
    idle: dict[str, tuple[str, ...]] = {}
    written = {f.table for f in layout.flows}
    for f in layout.flows:
        r = restarts.get(f.name)
        upstream = tuple(t for t in reads.get(f.name, ()) if t in written and t != f.table)
        if r is not None and r.unordered and r.unread_files == 0 and upstream and not f.live_is_empty:
            idle[f.name] = upstream
            continue
        if r is not None and not r.starts and not f.live_is_empty:
            failing.add(f.name)
    blocked = _downstream_blockers(failing, reads, table_of)
    verdicts = []
    for f in layout.flows:
        r = restarts.get(f.name)
        live = f.version_dir(f.live) if f.live is not None else f.dir
        if f.history:
            findings.append(
                Finding(
                    Code.PIPELINE_OLD_VERSIONS,
                    f"{f.name}: version {f.live} is live; "
                    f"{'versions' if len(f.history) > 1 else 'version'} {', '.join(f.history)} "
                    f"{'are' if len(f.history) > 1 else 'is'} history (Spark reads only the largest "
                    "number), never read again.",
                    paths=tuple(f.version_dir(v) for v in f.history),
                )
            )
        if r is not None and r.code_stateful and r.committed and not r.has_state:
            findings.append(
                Finding(
                    Code.PIPELINE_CODE_STATEFUL_NO_STATE,
                    f"{f.name}: the pipeline's code {r.code_stateful}, but its live version {f.live} "
                    "committed batches without any state: the code gained a stateful operator the "
                    "query never ran, or state/ was deleted; the flow restarts as a stateful query.",
                    paths=(live,),
                )
            )
        if f.name in idle and r is not None:
            ups = ", ".join(idle[f.name])
            then = f" (a batch would fail: {r.search or r.summary})" if not r.starts else ""
            findings.append(
                Finding(
                    Code.PIPELINE_FLOW_UNORDERED,
                    f"{f.name} starts at once on the next spark-pipelines run, beside the flows that "
                    f"write {ups}: its code deduplicates, and Spark Connect analyses a Deduplicate's input "
                    "on its own, so this line gives the flow no upstream flow. Its Trigger.AvailableNow "
                    f"query reads only what {ups} held before the run, and it has read every file of it: "
                    f"no new data, no batch{then}, and the flow COMPLETES with its checkpoint unchanged. "
                    "The rows this run adds are read by the next run, which then runs a batch.",
                    paths=(live,),
                )
            )
            verdicts.append(
                FlowVerdict(
                    f,
                    COMPLETED,
                    f"STARTS before {ups} is written: no new data, no batch",
                    r,
                    reads.get(f.name, ()),
                )
            )
            continue
        if f.name in failing and r is not None:
            error = (r.error or r.summary).rstrip()
            error = error if error.endswith((".", "!", "?")) else f"{error}."
            findings.append(
                Finding(
                    Code.PIPELINE_FLOW_FAILS,
                    f"{f.name} fails on the next spark-pipelines run: {error} The flow is tried "
                    f"{TRIES} times (FAILED more than 2 times and will not be restarted) and the run fails.",
                    paths=(live,),
                )
            )
            verdicts.append(FlowVerdict(f, FAILED, f"FAILS: {error}", r, reads.get(f.name, ())))
            continue
        if f.name in blocked:
            by = blocked[f.name]
            findings.append(
                Finding(
                    Code.PIPELINE_FLOW_SKIPPED,
                    f"{f.name} never runs (SKIPPED due to upstream failure(s)): it reads what {', '.join(by)} "
                    f"{'write' if len(by) > 1 else 'writes'}, and "
                    f"{'they fail' if len(by) > 1 else 'that flow fails'}.",
                    paths=(live,),
                )
            )
            verdicts.append(
                FlowVerdict(
                    f, SKIPPED, f"SKIPPED: upstream {', '.join(by)} failed", r, reads.get(f.name, ()), by
                )
            )
            continue
        summary = r.summary if r is not None else "STARTS a new query at batch 0"
        if f.live_is_empty:
            held = sink_batches.get(f.table)
            summary = f"STARTS a new query at batch 0 (version {f.live} is empty)"
            if held:
                findings.append(
                    Finding(
                        Code.PIPELINE_EMPTY_LIVE_VERSION,
                        f"{f.name}: the live version {f.live} is empty, so the flow starts a new query at "
                        f"batch 0 and reads its input from the start; table {f.table}'s file sink log "
                        f"already holds batches {_ids(held)}, so those batch ids are skipped "
                        "('Skipping already committed batch') and their rows are lost.",
                        paths=(live, *(f.version_dir(v) for v in f.history[-1:])),
                        batch_ids=tuple(held),
                    )
                )
        verdicts.append(FlowVerdict(f, COMPLETED, summary, r, reads.get(f.name, ())))
    for table, flows in layout.tables().items():
        held = sink_batches.get(table)
        if len(flows) > 1 and held is not None:
            names = ", ".join(f.name for f in flows)
            findings.append(
                Finding(
                    Code.PIPELINE_SHARED_SINK_LOG,
                    f"table {table} is written by {len(flows)} append flows ({names}) that share its one "
                    f"file sink log (batches {_ids(held) or 'none yet'}): a batch whose id another flow "
                    "already committed is skipped, and its rows are not in the table.",
                    paths=tuple(f.dir for f in flows),
                    batch_ids=tuple(held),
                )
            )
    return PipelineVerdict(tuple(verdicts), tuple(findings))


def _ids(ids: tuple[int, ...]) -> str:
    if not ids:
        return ""
    if list(ids) == list(range(ids[0], ids[-1] + 1)) and len(ids) > 2:
        return f"{ids[0]}..{ids[-1]}"
    return ", ".join(str(i) for i in ids)
