"""Proof by real Spark, shared by the live test (tests/spark/test_repairs_restart.py) and the recorder
(scripts/record_repairs.py): for a fixture restart real Spark refused, plan (with consent only where
the plan asks for it), apply, restart with real Spark, check that it started and skipped no source
range, undo, check that the damaged bytes are back.

Records live in ``fixtures/repairs/spark-<version>.json``, one per Spark release, keyed by
``<scenario id>#<restart index>`` and holding the scenario fingerprint the restart was recorded for
and the plan key (a digest of the plan's strategy and steps, which do not depend on where the copy
lives or when it was made): a changed fixture or a changed plan makes a record stale.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from checkpoint_doctor.diagnosis import diagnose
from checkpoint_doctor.execution.apply import apply_plan
from checkpoint_doctor.execution.journal import JOURNAL, tool_url
from checkpoint_doctor.execution.undo import undo_journal
from checkpoint_doctor.model import FileSourceOffset, LongOffset, RatePerMicroBatchOffset
from checkpoint_doctor.parsing.java_uuid import java_uuid_error
from checkpoint_doctor.parsing.source_offsets import decode_offset
from checkpoint_doctor.planning import PlanOptions, RepairPlan, plan_repair
from checkpoint_doctor.planning.plan import canonical_json
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.reading.storage import open_storage
from tests.scenarios import FIXTURES, Scenario, options_for_restart, restart_cases

RECORDS = FIXTURES / "repairs"
SCHEMA_VERSION = 1


def tree_bytes(root: Path) -> dict[str, str]:
    """Return relative path -> sha256 of every file below root."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def refused(version: str) -> list[tuple[Scenario, int, dict]]:
    """Return every recorded restart on Spark ``version`` (e.g. ``4.3.0``) that did not start."""
    return [(s, i, r) for s, i, r in restart_cases() if r["spark"] == version and not r["result"]["started"]]


def case_id(scenario: Scenario, index: int) -> str:
    """Return the record key of a restart."""
    return f"{scenario.id}#{index}"


def query_id(scenario: Scenario) -> str | None:
    """Return the query's id as the operator knows it (driver logs): the scenario's, or, when its
    metadata is damaged or holds an id Spark cannot parse (no run had it), the id of the checkpoint
    it was derived from."""
    own = scenario.data.get("facts", {}).get("query_id")
    base = scenario.path.parent / str(scenario.data.get("base")) / "scenario.json"
    if (own is None or java_uuid_error(own) is not None) and base.exists():
        return json.loads(base.read_text()).get("facts", {}).get("query_id")
    return own


def plan_options(scenario: Scenario, restart: dict, *, accept: bool) -> PlanOptions:
    """Return what an operator tells the planner: the restart, the sink kind, the old query id."""
    sink = scenario.data["query"].get("sink")
    return PlanOptions(
        diagnose=options_for_restart(scenario, restart),
        sink_kind=sink if sink != "file" else None,  # a file sink is known from its --sink-path
        query_id=query_id(scenario),
        accept_data_loss=accept,
    )


def plan_case(scenario: Scenario, restart: dict, snapshot: CheckpointSnapshot) -> tuple[RepairPlan, bool]:
    """Return (the plan, whether it needed consent): the default plan, or the consented one when
    the default has no steps and the planner asked for ``--accept-data-loss``."""
    plain = plan_options(scenario, restart, accept=False)
    diagnosis = diagnose(snapshot, plain.diagnose)
    plan = plan_repair(snapshot, diagnosis, plain)
    if not plan.executable_steps and _asks_for_deep(plan):
        # What an operator does when the plan says so: read every batch file.
        snapshot = load_checkpoint(
            snapshot.root, depth="deep", sink_path=snapshot.sink.url if snapshot.sink else None
        )
        plain = replace(plain, depth="deep")
        plan = plan_repair(snapshot, diagnosis, plain)
    if plan.executable_steps or not any("--accept-data-loss" in u["manual"] for u in plan.unresolved):
        return plan, False
    return plan_repair(snapshot, diagnosis, replace(plain, accept_data_loss=True)), True


def _asks_for_deep(plan: RepairPlan) -> bool:
    return any("--deep" in str(o.get("reason", "")) for group in plan.options for o in group["options"])


def plan_key(plan: RepairPlan) -> str:
    """Return a digest of what the plan does (strategy and steps), independent of paths and times."""
    body = {"strategy": plan.strategy, "steps": [s.to_dict() for s in plan.steps]}
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()[:16]


def position(raw: Any) -> int | None:
    """Return a comparable position for the offsets of the fixture sources (None if unknown)."""
    text = raw if isinstance(raw, str) else json.dumps(raw)
    decoded = decode_offset(text) if text is not None else None
    if isinstance(decoded, RatePerMicroBatchOffset):
        return decoded.offset
    if isinstance(decoded, FileSourceOffset):
        return decoded.log_offset
    if isinstance(decoded, LongOffset):
        return decoded.value
    return None


def committed_end(
    snapshot: CheckpointSnapshot, repaired: CheckpointSnapshot | None = None
) -> list[int | None] | None:
    """End positions of the newest committed batch, from its offsets file as it was, or as the
    repair made it readable (a rewritten version line keeps the body)."""
    for batch_id in reversed(snapshot.commits.ids):
        for view in (snapshot, repaired):
            entry = view.offsets.get(batch_id) if view is not None else None
            if entry is not None and entry.record is not None:
                return [position(s.raw) for s in entry.record.sources]
    return None


@dataclass
class Prepared:
    """A repaired copy ready for a real restart, and what is needed to judge it."""

    key: str
    scenario: Scenario
    index: int
    restart: dict
    snapshot: CheckpointSnapshot
    plan: RepairPlan
    consent: bool
    before: dict[str, str]
    checkpoint: Path
    journal: str | None
    job: dict | None
    problems: list[str] = field(default_factory=list)
    repaired: CheckpointSnapshot | None = None


def prepare(scenario: Scenario, index: int, restart: dict, work: Path, restart_job: Any) -> Prepared:
    """Plan and apply on a copy in ``work``; copy the repaired checkpoint for Spark and build its job."""
    snapshot = scenario.load(work)
    cp = work / "checkpoint"
    before = tree_bytes(cp)
    plan, consent = plan_case(scenario, restart, snapshot)
    out = Prepared(
        case_id(scenario, index), scenario, index, restart, snapshot, plan, consent, before, cp, None, None
    )
    if not plan.executable_steps:
        return out
    checkpoint = open_storage(str(cp))
    sink = open_storage(plan.sink) if plan.sink else None
    result = apply_plan(plan, checkpoint, sink=sink, tool=open_storage(tool_url(checkpoint.url)), now_ms=None)
    out.journal = result.journal_url
    out.repaired = load_checkpoint(str(cp), depth="deep")
    if result.after is None or not result.after.prediction.starts:
        out.problems.append("the diagnosis after apply does not start")
    spark_copy = work.parent / f"{work.name}-spark" / "checkpoint"
    shutil.copytree(cp, spark_copy)
    if (work / "sink").exists():
        shutil.copytree(work / "sink", spark_copy.parent / "sink")
    out.job = restart_job(
        scenario.path, scenario.data, index, restart, spark_copy.parent, checkpoint=spark_copy
    )
    return out


def declares_reread(plan: RepairPlan) -> bool:
    """Whether the plan says committed data is read again (duplicates) or can be lost."""
    c = plan.expected.get("consequences") or {}
    return bool(c.get("duplicates") or c.get("data_loss"))


def skipped_ranges(prepared: Prepared, result: dict) -> list[str]:
    """Return the source ranges the first batch skipped (starts after the committed end), and
    re-reads the plan did not declare."""
    problems = []
    end = committed_end(prepared.snapshot, prepared.repaired)
    if not result.get("batches") or end is None:
        return problems
    for i, src in enumerate(result["batches"][0]["sources"]):
        start = position(src.get("startOffset"))
        if start is None or i >= len(end) or end[i] is None:
            continue
        if start > end[i]:
            problems.append(f"source {i} starts at {start}, after the committed end {end[i]}: data skipped")
        elif start < end[i] and not declares_reread(prepared.plan):
            problems.append(f"source {i} re-reads {start}..{end[i]} but the plan did not say so")
    return problems


def judge(prepared: Prepared, result: dict | None) -> dict[str, Any]:
    """Undo, and return the record of one case (``outcome``: started, failed or no-plan)."""
    plan = prepared.plan
    record: dict[str, Any] = {
        "fingerprint": prepared.restart.get("fingerprint"),
        "plan_key": plan_key(plan),
        "strategy": plan.strategy,
        "consent": prepared.consent,
        "unresolved": [f"{u['code']}: {u['manual']}" for u in plan.unresolved],
    }
    if result is None:
        return {**record, "outcome": "no-plan"}
    undone = False
    if prepared.journal is not None:
        undo_journal(open_storage(prepared.journal[: -len(JOURNAL)].rstrip("/")), open_storage)
        undone = tree_bytes(prepared.checkpoint) == prepared.before
    error = (result.get("error") or {}).get("message", "")
    return {
        **record,
        "outcome": "started" if result.get("started") else "failed",
        "error": error[:600],
        "first_batch": (result.get("batches") or [{}])[0].get("batchId"),
        "problems": prepared.problems + skipped_ranges(prepared, result),
        "undo_restored": undone,
    }


def records_path(version: str) -> Path:
    """Return the records file of a Spark release."""
    return RECORDS / f"spark-{version}.json"


def load_records(version: str) -> dict[str, Any]:
    """Return the records of a Spark release (empty when none were made)."""
    path = records_path(version)
    if not path.exists():
        return {}
    return json.loads(path.read_text())["records"]


def recorded_versions() -> list[str]:
    """Return the Spark releases with records."""
    return sorted(p.stem.removeprefix("spark-") for p in RECORDS.glob("spark-*.json"))


def save_records(version: str, records: dict[str, Any]) -> Path:
    """Write the records of a Spark release (sorted, stable)."""
    RECORDS.mkdir(parents=True, exist_ok=True)
    path = records_path(version)
    doc = {"schema_version": SCHEMA_VERSION, "spark": version, "records": dict(sorted(records.items()))}
    path.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")
    return path
