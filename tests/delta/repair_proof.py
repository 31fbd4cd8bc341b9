"""Proof by real Spark + delta-spark that a refused Delta restart comes back after plan/apply, shared by
the recorder (scripts/record_delta_repairs.py), its replay (tests/delta/test_delta_repair_records.py)
and the live case (tests/delta/test_delta_plans_live.py).

A case is a restart recorded in ``fixtures/delta/spark-<v>/<name>/scenario.json`` that Spark refused.
Its checkpoint and tables are copied; the tables are read through the tool's own I/O edge
(``checkpoint_doctor.world.delta_log``) and named as ``--delta-table`` names them; the plan is made
with consent only where it asks for it, applied to the copy (the tables read again, as ``apply``
does), and a copy of the result restarted by real Spark with the scenario's query and source
options; where the plan changes no byte and names a source option instead (CD210), the restart
runs with that option. Judged: Spark starts the planned batch from the position the plan wrote,
reads exactly the rows the table's log says it reads from there (``numInputRows``), and undo
restores the bytes.

Records: ``fixtures/repairs/delta-spark-<v>.json``, keyed ``<name>#<restart index>``, with the
scenario's fingerprint and the plan key (strategy and steps: no path, no time).
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.execution.apply import apply_plan
from checkpoint_doctor.execution.journal import JOURNAL, tool_url
from checkpoint_doctor.execution.undo import undo_journal
from checkpoint_doctor.model import DeltaOffset
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.parsing.source_offsets import decode_offset
from checkpoint_doctor.planning import PlanOptions, RepairPlan, plan_repair
from checkpoint_doctor.planning.strategies.delta_change_commits import OPTION
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.world.delta_log import read_table
from tests.repair_proof import RECORDS, plan_key, tree_bytes

REPO = Path(__file__).resolve().parents[2]
DELTA_FIXTURES = REPO / "fixtures" / "delta"
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

SCHEMA_VERSION = 1
#: What the query's folder holds: the checkpoint and the tables beside it.
PARTS = ("checkpoint", "source", "sink")
#: The lines with Delta fixtures (no delta-spark release exists for Spark 4.3).
LINES = sorted(p.name.removeprefix("spark-") for p in DELTA_FIXTURES.glob("spark-*"))


@dataclass(frozen=True)
class Case:
    """One refused Delta restart of a fixture, or (``damage``) a fixture damaged on the copy."""

    path: Path
    data: dict[str, Any]
    index: int
    damage: str | None = None
    #: ``plan --delta-version``: the version the re-pointed source reads the new table's changes from.
    delta_version: int | None = None

    @property
    def key(self) -> str:
        version = f"@delta-version-{self.delta_version}" if self.delta_version is not None else ""
        return f"{self.data['name']}#{self.damage or self.index}{version}"

    @property
    def restart(self) -> dict[str, Any]:
        return dict(self.data["restarts"][self.index])

    @property
    def source_options(self) -> dict[str, str]:
        return dict(self.restart.get("source_options") or {})


def refused(version: str) -> list[Case]:
    """Return every recorded Delta restart on Spark ``version`` that did not start."""
    out = []
    for path in sorted((DELTA_FIXTURES / f"spark-{version}").glob("*/scenario.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for i, restart in enumerate(data["restarts"]):
            if not restart["result"]["started"]:
                out.append(Case(path.parent, data, i))
    return out


#: A rollback against a Delta sink: ``delta-sink`` (batches 0..2 written, txn version 2) with its
#: newest offsets file torn (an unreadable ``offsets/2``, as a crash mid-write leaves it, its checksum
#: gone with it). The plan rolls back to batch 1 and Spark re-plans batch 2, which the sink skips.
ROLLBACK = "offsets-2-torn"


def rollback_case(version: str) -> Case:
    """The rollback case of a line, built on its ``delta-sink`` fixture."""
    path = DELTA_FIXTURES / f"spark-{version}" / "delta-sink"
    return Case(path, json.loads((path / "scenario.json").read_text(encoding="utf-8")), 0, ROLLBACK)


#: The restart that starts but loses batches silently: a checkpoint rolled back below its Delta sink's
#: txn version (CD407, the sink skips the re-planned batch ids it holds).
SKIPPING = "delta-sink-rolled-back"


def skipping_case(version: str) -> Case:
    """The rolled-back sink case of a line (its fixture's one restart, which Spark ran and the sink skipped)."""
    path = DELTA_FIXTURES / f"spark-{version}" / SKIPPING
    return Case(path, json.loads((path / "scenario.json").read_text(encoding="utf-8")), 0)


#: A replaced table re-pointed at an operator's version: the recreated table's changes from version 1
#: (its insert) instead of the table as of version 0.
CHOSEN = ("delta-source-stateless-recreated", 1)


def cases(version: str) -> list[Case]:
    """Every case of a line: its refused restarts (the recreated table also with ``--delta-version``),
    the rollback against its Delta sink, and the checkpoint rolled back below its Delta sink."""
    chosen = [replace(c, delta_version=CHOSEN[1]) for c in refused(version) if c.data["name"] == CHOSEN[0]]
    return [*refused(version), *chosen, rollback_case(version), skipping_case(version)]


def copy_case(case: Case, work: Path) -> Path:
    """Copy the case's checkpoint and tables into ``work`` (damaged as the case says); return ``work``."""
    for part in PARTS:
        if (case.path / part).is_dir():
            shutil.copytree(case.path / part, work / part)
    if case.damage == ROLLBACK:
        (work / "checkpoint" / "offsets" / "2").write_text("v1\n{torn", encoding="utf-8")
        (work / "checkpoint" / "offsets" / ".2.crc").unlink()
    return work


def tables_of(root: Path) -> tuple[DeltaTable, ...]:
    """The Delta tables beside the checkpoint, read as ``--delta-table`` reads them."""
    return tuple(
        read_table(str(root / part)) for part in ("source", "sink") if (root / part / "_delta_log").is_dir()
    )


def options(case: Case, tables: tuple[DeltaTable, ...]) -> DiagnoseOptions:
    """What an operator tells diagnose: the line, the query's statefulness, the tables."""
    line = ".".join(case.data["spark_version"].split(".")[:2])
    stateful = bool(case.data["query"].get("stateful"))
    return DiagnoseOptions(spark=line, mode="micro-batch", stateful=stateful, live_window_s=0, delta=tables)


def plan_case(case: Case, root: Path) -> tuple[RepairPlan, bool, tuple[DeltaTable, ...]]:
    """Return (the plan for the copy at ``root``, whether it needed consent, the tables read)."""
    tables = tables_of(root)
    snapshot = load_checkpoint(str(root / "checkpoint"))
    plain = PlanOptions(diagnose=options(case, tables), delta_version=case.delta_version)
    diagnosis = diagnose(snapshot, plain.diagnose)
    plan = plan_repair(snapshot, diagnosis, plain)
    if plan.executable_steps or not any("--accept-data-loss" in u["manual"] for u in plan.unresolved):
        return plan, False, tables
    return plan_repair(snapshot, diagnosis, replace(plain, accept_data_loss=True)), True, tables


def named_option(plan: RepairPlan) -> dict[str, str]:
    """The Delta source option a plan without steps tells the operator to restart with (CD210)."""
    if plan.executable_steps:
        return {}
    return {OPTION[0]: OPTION[1]} if any(OPTION[0] in u["manual"] for u in plan.unresolved) else {}


def _delta_line(checkpoint: Path, batch: int) -> DeltaOffset:
    lines = (checkpoint / "offsets" / str(batch)).read_text(encoding="utf-8").split("\n")
    decoded = decode_offset(lines[2])  # v1, metadata, then the one source's line
    assert isinstance(decoded, DeltaOffset)
    return decoded


def expected_read(
    checkpoint: Path, table: DeltaTable, source_options: dict[str, str]
) -> tuple[DeltaOffset, int]:
    """The offset the next batch starts from (the newest offsets file's) and the rows it reads to
    the table's latest version, as the table's log says: the snapshot as of the offset's version
    when it is a starting version (the commit that begins the table there holds all of it), else
    the changes of every version from it; ``skipChangeCommits`` skips commits that remove files."""
    newest = max(int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit())
    off = _delta_line(checkpoint, newest)
    skip = source_options.get("skipChangeCommits") == "true"
    rows = 0
    for commit in table.commits:
        if commit.version < off.reservoir_version or (skip and commit.removes):
            continue
        assert commit.rows is not None
        rows += commit.rows
    return off, rows


@dataclass
class Prepared:
    """A repaired copy ready for a real restart."""

    case: Case
    plan: RepairPlan
    consent: bool
    root: Path
    before: dict[str, str]
    source_options: dict[str, str]
    journal: str | None = None
    job: dict[str, Any] | None = None
    expected: tuple[DeltaOffset, int] | None = None
    problems: list[str] = field(default_factory=list)


def prepare(case: Case, work: Path) -> Prepared:
    """Plan and apply on a copy in ``work``; build the restart job of a copy of the result."""
    import delta_fixtures

    root = copy_case(case, work)
    plan, consent, _ = plan_case(case, root)
    option = named_option(plan)
    out = Prepared(
        case, plan, consent, root, tree_bytes(root / "checkpoint"), {**case.source_options, **option}
    )
    if not plan.executable_steps and not option:
        return out
    if plan.executable_steps:
        from checkpoint_doctor.reading.storage import open_storage

        store = open_storage(str(root / "checkpoint"))
        again = tables_of(root)  # apply reads the tables again
        result = apply_plan(
            plan, store, sink=None, tool=open_storage(tool_url(store.url)), now_ms=None, delta=again
        )
        out.journal = result.journal_url
        if result.after is None or not result.after.prediction.starts:
            out.problems.append("the diagnosis after apply does not start")
    spark_root = work.parent / f"{work.name}-spark"
    copy_case(Case(root, case.data, case.index), spark_root)  # the repaired copy, as it is
    source = next((t for t in tables_of(spark_root) if t.url.endswith("/source")), None)
    if source is not None:
        out.expected = expected_read(spark_root / "checkpoint", source, out.source_options)
    query = case.data["query"]
    job = delta_fixtures._job(case.key, query, spark_root, "restart", out.source_options)
    out.job = job
    return out


def read_problems(prepared: Prepared, result: dict[str, Any]) -> list[str]:
    """Where the first batch started and how much it read, against the plan and the table's log."""
    batches = result.get("batches") or []
    if not batches:
        return ["no batch ran"]
    batch = batches[0]
    problems = []
    wanted = prepared.plan.expected["next_batch_id"]
    if batch["batchId"] != wanted:
        problems.append(f"the first batch is {batch['batchId']}, not the planned batch {wanted}")
    sink = (result.get("tables") or {}).get("<sink>") or {}
    if prepared.case.data["name"] == SKIPPING:
        # batch 3 written, nothing skipped: the table one version on, with the batch's rows added
        before = prepared.case.data["tables"]["sink"]
        grown = (sink.get("version"), sink.get("rows"))
        if (
            grown != (before["version"] + 1, before["rows"] + batch["numInputRows"])
            or not batch["numInputRows"]
        ):
            problems.append(f"the sink table did not take batch {wanted}: {before} -> {sink}")
    if prepared.case.damage == ROLLBACK:
        # the sink skipped the re-planned batch 2 (txn version 2): the table is as it was
        before = prepared.case.data["tables"]["sink"]
        if (sink.get("version"), sink.get("rows_per_batch")) != (before["version"], before["rows_per_batch"]):
            problems.append(f"the sink table changed: {before} -> {sink}")
    if prepared.expected is None:
        return problems
    off, rows = prepared.expected
    (source,) = batch["sources"]
    start = source["startOffset"]
    start = json.loads(start) if isinstance(start, str) else start
    if (start or {}).get("reservoirId") != off.reservoir_id or start.get(
        "reservoirVersion"
    ) != off.reservoir_version:
        problems.append(f"batch 2 starts from {start}, the plan wrote {off.describe()}")
    if batch["numInputRows"] != rows:
        problems.append(f"batch 2 read {batch['numInputRows']} rows, the table's log says {rows}")
    return problems


def judge(prepared: Prepared, result: dict[str, Any] | None) -> dict[str, Any]:
    """Undo, and return the record of one case (``outcome``: started, failed or no-plan)."""
    plan = prepared.plan
    consequences = plan.expected.get("consequences") or {}
    record: dict[str, Any] = {
        "fingerprint": prepared.case.data["fingerprint"],
        "source_options": prepared.source_options,
        "plan_key": plan_key(plan),
        "strategy": plan.strategy,
        "consent": prepared.consent,
        "loss": list(consequences.get("loss") or []),
        "unresolved": [f"{u['code']}: {u['manual']}" for u in plan.unresolved],
    }
    if result is None:
        return {**record, "outcome": "no-plan"}
    undone = None
    if prepared.journal is not None:
        undo_journal(open_storage_of(prepared.journal), _open)
        undone = tree_bytes(prepared.root / "checkpoint") == prepared.before
    batch = (result.get("batches") or [{}])[0]
    error = (result.get("error") or {}).get("message", "")
    return {
        **record,
        "outcome": "started" if result.get("started") else "failed",
        "error": error[:600],
        "first_batch": batch.get("batchId"),
        "start_offset": (batch.get("sources") or [{}])[0].get("startOffset"),
        "num_input_rows": batch.get("numInputRows"),
        "sink_table": ((result.get("tables") or {}).get("<sink>") or {}).get("version"),
        "expected_rows": prepared.expected[1] if prepared.expected else None,
        "problems": prepared.problems + (read_problems(prepared, result) if result.get("started") else []),
        "undo_restored": undone,
    }


def _open(url: str) -> Any:
    from checkpoint_doctor.reading.storage import open_storage

    return open_storage(url)


def open_storage_of(journal: str) -> Any:
    """The journal's directory of an apply."""
    return _open(journal[: -len(JOURNAL)].rstrip("/"))


def records_path(version: str) -> Path:
    """Return the records file of a Spark release."""
    return RECORDS / f"delta-spark-{version}.json"


def load_records(version: str) -> dict[str, Any]:
    """Return the records of a Spark release (empty when none were made)."""
    path = records_path(version)
    return json.loads(path.read_text(encoding="utf-8"))["records"] if path.exists() else {}


def recorded_versions() -> list[str]:
    """Return the Spark releases with Delta repair records."""
    return sorted(p.stem.removeprefix("delta-spark-") for p in RECORDS.glob("delta-spark-*.json"))


def save_records(version: str, records: dict[str, Any]) -> Path:
    """Write the records of a Spark release (sorted, stable)."""
    path = records_path(version)
    doc = {"schema_version": SCHEMA_VERSION, "spark": version, "records": dict(sorted(records.items()))}
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path
