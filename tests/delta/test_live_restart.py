"""A live sample of the recorded Delta restarts, re-run by real Spark + delta-spark on copies of the
fixtures: Spark still does what was recorded (one line, one refusal and one silent duplicate, so the
default run stays short)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis.sinks.delta import predict as predict_sink
from checkpoint_doctor.diagnosis.sources.delta import predict as predict_source
from checkpoint_doctor.world.delta_log import read_table
from tests import sparkrun
from tests.delta.test_recorded_restarts import last_offsets

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import delta_fixtures  # noqa: E402

VERSION = "3.5.9"
SAMPLE = ("delta-source-stateless-log-cleaned", "delta-sink-checkpoint-lost")


@pytest.mark.spark
def test_live_restarts_do_what_was_recorded(tmp_path: Path) -> None:
    root = REPO / "fixtures" / "delta" / f"spark-{VERSION}"
    jobs, scenarios = [], []
    for name in SAMPLE:
        scen = json.loads((root / name / "scenario.json").read_text(encoding="utf-8"))
        work = tmp_path / name
        for sub in ("checkpoint", "source", "sink"):
            if (root / name / sub).is_dir():
                shutil.copytree(root / name / sub, work / sub)
        info = delta_fixtures.SOURCE_QUERIES.get(scen["base"]) or delta_fixtures.SINK_QUERIES[scen["base"]]
        jobs.append(delta_fixtures._job(name, info["query"], work, "restart", {}))
        scenarios.append(scen)
    results = sparkrun.run_jobs(VERSION, jobs, tmp_path, env=delta_fixtures._spark_env(VERSION))
    source, sink = zip(scenarios, results, strict=True)
    # the source refuses, in the words predicted from the checkpoint and the table's log
    scen, live = source
    recorded = scen["restarts"][0]["result"]
    assert not live["started"] and live["error"]["type"] == recorded["error"]["type"]
    offset, previous = last_offsets(root / scen["name"] / "checkpoint")
    got = predict_source(offset, read_table(str(root / scen["name"] / "source")), "3.5", None, previous)
    assert got.error is not None and got.error.matches(live["error"]["message"])
    # a new query id on the old table: batch 0 is written again, without a word from Spark
    scen, live = sink
    assert live["error"] is None and [b["batchId"] for b in live["batches"]] == [0]
    recorded = scen["restarts"][0]["result"]["tables"]["sink"]["rows_per_batch"]
    assert live["tables"]["<sink>"]["rows_per_batch"] == recorded == {"0": 10, "1": 5, "2": 5}
    table = read_table(str(root / scen["name"] / "sink"))
    got = predict_sink(live["query_id"], 0, table)
    assert got.writes and got.txn_version is None and got.other_queries == table.txns
