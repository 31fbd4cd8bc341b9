"""A live sample of issue 32 item 1: a subscribePattern query whose topic was deleted, its world rebuilt
on this run's broker, diagnosed and planned with the query's own subscription (what ``--job`` gives),
applied, and restarted by real Spark with the connector: Spark starts batch 2 without the deleted
topic's partitions, from exactly the positions the plan wrote."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.execution.apply import apply_plan
from checkpoint_doctor.execution.journal import tool_url
from checkpoint_doctor.model import KafkaOffset
from checkpoint_doctor.planning import PlanOptions, plan_repair
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.storage import open_storage
from checkpoint_doctor.world.kafka import read_positions
from tests import sparkrun
from tests.kafka.test_subscription_shapes import job_of, next_offsets

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import kafka_fixtures  # noqa: E402
import kafka_shapes_fixtures  # noqa: E402
import kafka_world  # noqa: E402

VERSION = "4.3.0"
NAME = "kafka-pattern-topic-deleted"


@pytest.mark.spark
def test_a_pattern_query_planned_past_its_deleted_topic_restarts_on_spark(kafka: Any, tmp_path: Path) -> None:
    folder = REPO / "fixtures" / "kafka-shapes" / f"spark-{VERSION}" / NAME
    scen = json.loads((folder / "scenario.json").read_text(encoding="utf-8"))
    kafka_world.replay(kafka.bootstrap, scen["world"])
    cp = tmp_path / "checkpoint"
    shutil.copytree(folder / "checkpoint", cp)
    offsets: KafkaOffset = next_offsets(cp)
    live = read_positions(kafka.bootstrap, [offsets])
    assert live.live["events"] is None

    unknown = DiagnoseOptions(spark="4.3", mode="micro-batch", live_window_s=0, kafka=live)
    judged = diagnose(load_checkpoint(str(cp)), unknown)
    assert {"CD207", "CD230"} <= set(judged.codes)

    plain = PlanOptions(diagnose=replace(unknown, job=job_of(scen, "true")))
    snapshot = load_checkpoint(str(cp))
    diagnosis = diagnose(snapshot, plain.diagnose)
    assert not diagnosis.prediction.starts and "CD230" not in diagnosis.codes
    assert not plan_repair(snapshot, diagnosis, plain).executable_steps  # data loss: consent first
    plan = plan_repair(snapshot, diagnosis, replace(plain, accept_data_loss=True))
    (loss,) = plan.expected["consequences"]["loss"]
    assert "events-0: topic deleted" in loss and "events-2: topic deleted" in loss
    store = open_storage(str(cp))
    apply_plan(plan, store, sink=None, tool=open_storage(tool_url(store.url)), now_ms=None, kafka=live)
    line = (cp / "offsets" / "1").read_text(encoding="utf-8").split("\n")[2]
    assert json.loads(line) == {"events-audit": {"0": 8, "1": 8}}

    world = tmp_path / "world.json"
    world.write_text(json.dumps(scen["world"]), encoding="utf-8")
    job = kafka_shapes_fixtures._job(scen["base"], cp, kafka.bootstrap, {"failOnDataLoss": "true"})
    job.update(id=NAME, op="restart", before_argv=kafka_fixtures._world_argv(world, kafka.bootstrap))
    (result,) = sparkrun.run_jobs(VERSION, [job], tmp_path / "spark", env=kafka_fixtures._spark_env(VERSION))
    assert result["started"] and not result["timed_out"], (result.get("error") or {}).get("message", "")[:400]
    (batch,) = result["batches"]
    start = batch["sources"][0]["startOffset"]
    start = json.loads(start) if isinstance(start, str) else start
    assert batch["batchId"] == 2 and start == {"events-audit": {"0": 8, "1": 8}}
    assert batch["numInputRows"] == 2 * (12 - 8)
