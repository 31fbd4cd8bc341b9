"""Proof by real Spark and a real broker that a refused Kafka restart comes back after plan/apply,
shared by the recorder (scripts/record_kafka_repairs.py), its replay (tests/kafka/test_kafka_plans.py)
and the live sample (tests/kafka/test_kafka_plans_live.py).

A case is a restart recorded in ``fixtures/kafka/spark-<v>/<name>/scenario.json`` that Spark refused.
Its world (the topic's history) is rebuilt on a broker, the topic's positions read from it through the
tool's own I/O edge (``checkpoint_doctor.world.kafka``), the plan made with consent only where it
asks for it, applied to a copy, and the copy restarted by real Spark with the same options after the
world is rebuilt again. Judged: Spark starts batch 2 from exactly the positions the plan wrote (no
range skipped beyond the consented one), reads up to the topic's latest offsets (``numInputRows`` is
the sum), and undo restores the bytes. Planning needs no broker: the positions the plan was made from
are the scenario's recorded ``topic_positions``, which the fast replay uses.

Records: ``fixtures/repairs/kafka-spark-<v>.json``, keyed ``<name>#<restart index>``, with the
scenario's fingerprint and the plan key (strategy and steps: no broker address, no time).
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
from checkpoint_doctor.model import KafkaLive
from checkpoint_doctor.planning import PlanOptions, RepairPlan, plan_repair
from checkpoint_doctor.planning.preconditions import KafkaPositionsPre
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.storage import open_storage
from tests.repair_proof import RECORDS, plan_key, tree_bytes

REPO = Path(__file__).resolve().parents[2]
KAFKA_FIXTURES = REPO / "fixtures" / "kafka"
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import kafka_fixtures  # noqa: E402

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Case:
    """One refused Kafka restart of a fixture."""

    path: Path
    data: dict[str, Any]
    index: int

    @property
    def key(self) -> str:
        return f"{self.data['name']}#{self.index}"

    @property
    def restart(self) -> dict[str, Any]:
        return dict(self.data["restarts"][self.index])

    @property
    def fail_on_data_loss(self) -> str:
        return str(self.restart["options"]["failOnDataLoss"])


#: The lines with Kafka fixtures.
LINES = sorted(p.name.removeprefix("spark-") for p in KAFKA_FIXTURES.glob("spark-*"))


def snapshot_of(case: Case, work: Path) -> Any:
    """Copy the case's checkpoint into ``work`` and read it."""
    shutil.copytree(case.path / "checkpoint", work / "checkpoint")
    return load_checkpoint(str(work / "checkpoint"))


def refused(version: str) -> list[Case]:
    """Return every recorded Kafka restart on Spark ``version`` that did not start."""
    out = []
    for path in sorted((KAFKA_FIXTURES / f"spark-{version}").glob("*/scenario.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for i, restart in enumerate(data["restarts"]):
            if not restart["result"]["started"]:
                out.append(Case(path.parent, data, i))
    return out


def recorded_live(case: Case, bootstrap: str = "broker:9092") -> KafkaLive:
    """The topic's positions the restart met, as recorded beside it."""
    pos = case.data["topic_positions"]
    parts = (
        None
        if pos is None
        else tuple((int(p), lo, hi) for p, (lo, hi) in sorted(pos.items(), key=lambda kv: int(kv[0])))
    )
    return KafkaLive(bootstrap, ((kafka_fixtures.TOPIC, parts),))


def options(case: Case, live: KafkaLive) -> DiagnoseOptions:
    """What an operator tells diagnose: the line, the query's statefulness, the broker's positions."""
    line = ".".join(case.data["spark_version"].split(".")[:2])
    stateful = bool(case.data["query"].get("stateful"))
    return DiagnoseOptions(spark=line, mode="micro-batch", stateful=stateful, live_window_s=0, kafka=live)


def plan_case(case: Case, snapshot: Any, live: KafkaLive) -> tuple[RepairPlan, bool]:
    """Return (the plan, whether it needed consent): consent only when the plan asks for it."""
    plain = PlanOptions(diagnose=options(case, live))
    diagnosis = diagnose(snapshot, plain.diagnose)
    plan = plan_repair(snapshot, diagnosis, plain)
    if plan.executable_steps or not any("--accept-data-loss" in u["manual"] for u in plan.unresolved):
        return plan, False
    return plan_repair(snapshot, diagnosis, replace(plain, accept_data_loss=True)), True


def written_positions(plan: RepairPlan) -> dict[str, int] | None:
    """The positions Spark must start the topic's partitions from after the plan (from its Kafka
    precondition: moved, kept and new partitions alike), as ``{"partition": offset}``."""
    for pre in plan.preconditions:
        if isinstance(pre, KafkaPositionsPre):
            return {str(p): pos for _, p, pos, _ in pre.partitions}
    return None


@dataclass
class Prepared:
    """A repaired copy ready for a real restart."""

    case: Case
    plan: RepairPlan
    consent: bool
    live: KafkaLive
    checkpoint: Path
    before: dict[str, str]
    journal: str | None = None
    job: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)


def prepare(case: Case, work: Path, live: KafkaLive, bootstrap: str) -> Prepared:
    """Plan and apply on a copy in ``work`` (``live``: the positions read from the broker at
    ``bootstrap``, where the world is rebuilt); build the restart job of the repaired copy."""
    cp = work / "checkpoint"
    shutil.copytree(case.path / "checkpoint", cp)
    snapshot = load_checkpoint(str(cp))
    plan, consent = plan_case(case, snapshot, live)
    out = Prepared(case, plan, consent, live, cp, tree_bytes(cp))
    if not plan.executable_steps:
        return out
    store = open_storage(str(cp))
    result = apply_plan(
        plan, store, sink=None, tool=open_storage(tool_url(store.url)), now_ms=None, kafka=live
    )
    out.journal = result.journal_url
    if result.after is None or not result.after.prediction.starts:
        out.problems.append("the diagnosis after apply does not start")
    spark_copy = work.parent / f"{work.name}-spark" / "checkpoint"
    shutil.copytree(cp, spark_copy)
    world = work.parent / f"{work.name}.world.json"
    world.write_text(json.dumps(case.data["world"]), encoding="utf-8")
    version = case.data["spark_version"]
    job = kafka_fixtures._job(
        version, case.data["base"], spark_copy, bootstrap, {"failOnDataLoss": case.fail_on_data_loss}
    )
    job.update(id=case.key, op="restart", before_argv=kafka_fixtures._world_argv(world, bootstrap))
    out.job = job
    return out


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def read_problems(prepared: Prepared, result: dict[str, Any]) -> list[str]:
    """Where the first batch started and how much it read, against the plan and the topic."""
    problems = []
    batches = result.get("batches") or []
    if not batches:
        return ["no batch ran"]
    batch = batches[0]
    if batch["batchId"] != 2:
        problems.append(f"the first batch is {batch['batchId']}, not the new batch 2")
    (source,) = batch["sources"]
    start = (_json(source["startOffset"]) or {}).get(kafka_fixtures.TOPIC, {})
    end = (_json(source["endOffset"]) or {}).get(kafka_fixtures.TOPIC, {})
    wanted = written_positions(prepared.plan) or {}
    # A new partition Spark reads from 0 itself is not in the start offsets.
    shown = {p: o for p, o in wanted.items() if p in start or o != 0}
    if start != shown:
        problems.append(f"batch 2 starts from {start}, the plan wrote {shown}: a range skipped or re-read")
    latest = {str(p): hi for p, _, hi in dict(prepared.live.topics)[kafka_fixtures.TOPIC] or ()}
    if end != latest:
        problems.append(f"batch 2 ends at {end}, the topic's latest offsets are {latest}")
    rows = sum(latest[p] - wanted.get(p, 0) for p in latest)
    if batch["numInputRows"] != rows:
        problems.append(f"batch 2 read {batch['numInputRows']} records, the positions say {rows}")
    return problems


def judge(prepared: Prepared, result: dict[str, Any] | None) -> dict[str, Any]:
    """Undo, and return the record of one case (``outcome``: started, failed or no-plan)."""
    plan = prepared.plan
    consequences = plan.expected.get("consequences") or {}
    record: dict[str, Any] = {
        "fingerprint": prepared.case.data["fingerprint"],
        "failOnDataLoss": prepared.case.fail_on_data_loss,
        "plan_key": plan_key(plan),
        "strategy": plan.strategy,
        "consent": prepared.consent,
        "loss": list(consequences.get("loss") or []),
        "positions": written_positions(plan),
        "unresolved": [f"{u['code']}: {u['manual']}" for u in plan.unresolved],
    }
    if result is None:
        return {**record, "outcome": "no-plan"}
    undone = False
    if prepared.journal is not None:
        undo_journal(open_storage(prepared.journal[: -len(JOURNAL)].rstrip("/")), open_storage)
        undone = tree_bytes(prepared.checkpoint) == prepared.before
    batch = (result.get("batches") or [{}])[0]
    error = (result.get("error") or {}).get("message", "")
    return {
        **record,
        "outcome": "started" if result.get("started") else "failed",
        "error": error[:600],
        "first_batch": batch.get("batchId"),
        "num_input_rows": batch.get("numInputRows"),
        "problems": prepared.problems + (read_problems(prepared, result) if result.get("started") else []),
        "undo_restored": undone,
    }


def records_path(version: str) -> Path:
    """Return the records file of a Spark release."""
    return RECORDS / f"kafka-spark-{version}.json"


def load_records(version: str) -> dict[str, Any]:
    """Return the records of a Spark release (empty when none were made)."""
    path = records_path(version)
    return json.loads(path.read_text(encoding="utf-8"))["records"] if path.exists() else {}


def recorded_versions() -> list[str]:
    """Return the Spark releases with Kafka repair records."""
    return sorted(p.stem.removeprefix("kafka-spark-") for p in RECORDS.glob("kafka-spark-*.json"))


def save_records(version: str, records: dict[str, Any]) -> Path:
    """Write the records of a Spark release (sorted, stable)."""
    path = records_path(version)
    doc = {"schema_version": SCHEMA_VERSION, "spark": version, "records": dict(sorted(records.items()))}
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path
