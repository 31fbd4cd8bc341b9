"""A live sample of the recorded Kafka restarts, re-run by real Spark with the connector against this
run's own broker (the world rebuilt from the scenario's steps): Spark still does what was recorded."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis.sources.kafka_positions import predict
from checkpoint_doctor.diagnosis.spark_line import SparkError, SparkLine
from tests import sparkrun
from tests.kafka.test_positions_replay import next_offsets
from tests.live import shared_among

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import kafka_fixtures  # noqa: E402

#: A refusal in the tasks, one while planning, and a silent loss (the restart runs). A default run
#: restarts each on one line, every line started (tests/live.shared_among); all on every line with
#: CHECKPOINT_DOCTOR_ALL_LIVE=1. Every case on every line is replayed in test_recorded_restarts.py.
SAMPLE = (
    "kafka-stateless-records-deleted",
    "kafka-stateful-partitions-lost",
    "kafka-stateless-topic-recreated-grown",
)


def _predicted(scen_dir: Path, scen: dict, fail_on_data_loss: bool) -> SparkError | None:
    positions = scen["topic_positions"]
    live = {"events": None if positions is None else {int(p): (lo, hi) for p, (lo, hi) in positions.items()}}
    line = SparkLine(".".join(scen["spark_version"].split(".")[:2]))
    return predict(next_offsets(scen_dir / "checkpoint"), live, line, fail_on_data_loss).error


@pytest.mark.spark
@pytest.mark.parametrize("version", sparkrun.SPARK_VERSIONS)
def test_live_restarts_do_what_was_recorded(kafka, version: str, tmp_path: Path) -> None:
    root = REPO / "fixtures" / "kafka" / f"spark-{version}"
    jobs, recorded = [], []
    predicted: dict[str, SparkError | None] = {}
    for name in shared_among(SAMPLE, version, sparkrun.SPARK_VERSIONS):
        scen = json.loads((root / name / "scenario.json").read_text(encoding="utf-8"))
        world = tmp_path / f"{name}.world.json"
        world.write_text(json.dumps(scen["world"]), encoding="utf-8")
        for entry in scen["restarts"]:
            fol = entry["options"]["failOnDataLoss"]
            checkpoint = tmp_path / f"{name}-{fol}" / "checkpoint"
            shutil.copytree(root / name / "checkpoint", checkpoint)
            job = kafka_fixtures._job(
                version, scen["base"], checkpoint, kafka.bootstrap, {"failOnDataLoss": fol}
            )
            job.update(
                id=f"{name}#{fol}",
                op="restart",
                before_argv=kafka_fixtures._world_argv(world, kafka.bootstrap),
            )
            jobs.append(job)
            recorded.append(entry["result"])
            predicted[job["id"]] = _predicted(root / name, scen, fol == "true")
    results = sparkrun.run_jobs(version, jobs, tmp_path, env=kafka_fixtures._spark_env(version))
    for job, live, rec in zip(jobs, results, recorded, strict=True):
        assert not live["timed_out"], job["id"]
        assert live["started"] == rec["started"], (job["id"], live["error"])
        assert [(b["batchId"], b["numInputRows"]) for b in live["batches"]] == [
            (b["batchId"], b["numInputRows"]) for b in rec["batches"]
        ], job["id"]
        if rec["error"]:
            # the same refusal (stage, task and run ids differ from run to run): the predicted text
            assert predicted[job["id"]] is not None and predicted[job["id"]].matches(
                live["error"]["message"]
            ), (
                job["id"],
                live["error"]["message"][:400],
            )
