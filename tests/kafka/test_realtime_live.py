"""A live sample of real-time mode: real Spark 4.3 writes a Kafka checkpoint with Trigger.RealTime
against this run's own broker; the tool reads "real-time" from the files' times as Spark left them,
and a real-time restart of its uncommitted tail does what the prediction says (the purge, batch 1
planned again from offsets/0)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.diagnosis.detect import REAL_TIME, detect_mode
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests import sparkrun

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import kafka_fixtures  # noqa: E402
import kafka_realtime_fixtures as rt  # noqa: E402

#: The newest line, which the default run's Spark sample always includes (tests/sparkrun.py).
VERSION = sparkrun.SPARK_VERSIONS[-1]


@pytest.mark.spark
def test_a_real_time_checkpoint_is_detected_and_its_tail_restart_predicted(kafka, tmp_path: Path) -> None:
    world = tmp_path / "world.json"
    world.write_text(json.dumps(rt.BASE_WORLD), encoding="utf-8")
    checkpoint = tmp_path / "written" / "checkpoint"
    job = rt._job(checkpoint, kafka.bootstrap, "real-time")
    job.update(id="write", op="run", batches=2, timeout_s=120)
    job["before_argv"] = kafka_fixtures._world_argv(world, kafka.bootstrap)
    (written,) = sparkrun.run_jobs(VERSION, [job], tmp_path / "w", env=kafka_fixtures._spark_env(VERSION))
    assert written["error"] is None and len(written["batches"]) >= 2, written

    mode = detect_mode(load_checkpoint(str(checkpoint)))
    assert mode.mode == REAL_TIME, mode.evidence

    tail = tmp_path / "tail" / "checkpoint"
    shutil.copytree(checkpoint, tail)  # copy2: the files keep their times
    last = max(int(p.name) for p in (tail / "commits").iterdir() if p.name.isdigit())
    (tail / "commits" / str(last)).unlink()
    (tail / "commits" / f".{last}.crc").unlink(missing_ok=True)
    snapshot = load_checkpoint(str(tail))
    pred = diagnose(snapshot, DiagnoseOptions(spark="4.3", stateful=False, live_window_s=0)).prediction
    assert pred.mode == REAL_TIME and pred.starts and pred.next_batch_id == last and not pred.rerun

    job = rt._job(tail, kafka.bootstrap, "real-time")
    job.update(id="restart", op="restart", timeout_s=90)
    (restarted,) = sparkrun.run_jobs(VERSION, [job], tmp_path / "r", env=kafka_fixtures._spark_env(VERSION))
    assert restarted["error"] is None, restarted["error"]
    assert restarted["batches"][0]["batchId"] == pred.next_batch_id
    assert any(w in line for w in pred.warnings for line in restarted["log"]), restarted["log"]
