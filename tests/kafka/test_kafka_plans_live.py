"""A live case of the Kafka way back, end to end as an operator runs it: the world of a refused fixture
rebuilt on this run's broker, ``plan --kafka-bootstrap-servers`` printing the consent command, that
command run as printed with ``-o``, the ``apply --yes`` it prints run as printed, and real Spark with
the connector restarting the copy: batch 2 starts from the moved positions and reads to the latest."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import sparkrun
from tests.scenarios import run_cli

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import kafka_fixtures  # noqa: E402
import kafka_world  # noqa: E402

VERSION = "4.3.0"
NAME = "kafka-stateful-records-deleted"


def _printed(out: str, verb: str) -> list[str]:
    """The ``checkpoint-doctor <verb> ...`` command the output ends with, as argv."""
    line = next(x for x in reversed(out.splitlines()) if f"checkpoint-doctor {verb} " in x)
    return shlex.split(line[line.index("checkpoint-doctor") :])[1:]


@pytest.mark.spark
def test_plan_apply_as_printed_then_spark_restarts_from_the_moved_positions(
    kafka: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = REPO / "fixtures" / "kafka" / f"spark-{VERSION}" / NAME
    scen = json.loads((folder / "scenario.json").read_text(encoding="utf-8"))
    kafka_world.replay(kafka.bootstrap, scen["world"])
    cp = tmp_path / "checkpoint"
    shutil.copytree(folder / "checkpoint", cp)
    monkeypatch.chdir(tmp_path)

    code, out, _ = run_cli(
        capsys, "plan", str(cp), "--spark", "4.3", "--kafka-bootstrap-servers", kafka.bootstrap
    )
    assert code == 4 and "events-0: 3 records skipped (15..17 deleted)" in out
    consent = _printed(out, "plan")
    assert "--accept-data-loss" in consent and "--kafka-bootstrap-servers" in consent
    code, out, _ = run_cli(capsys, *consent)
    assert code == 0, out
    code, out, _ = run_cli(capsys, *_printed(out, "apply"), "--yes")
    assert code == 0, out
    line = (cp / "offsets" / "1").read_text(encoding="utf-8").split("\n")[2]
    assert json.loads(line) == {"events": {"0": 18, "1": 18, "2": 18}}

    world = tmp_path / "world.json"
    world.write_text(json.dumps(scen["world"]), encoding="utf-8")
    job = kafka_fixtures._job(VERSION, scen["base"], cp, kafka.bootstrap, {"failOnDataLoss": "true"})
    job.update(id=NAME, op="restart", before_argv=kafka_fixtures._world_argv(world, kafka.bootstrap))
    (result,) = sparkrun.run_jobs(VERSION, [job], tmp_path / "spark", env=kafka_fixtures._spark_env(VERSION))
    assert result["started"] and not result["timed_out"], (result.get("error") or {}).get("message", "")[:400]
    (batch,) = result["batches"]
    start = batch["sources"][0]["startOffset"]
    start = json.loads(start) if isinstance(start, str) else start
    assert batch["batchId"] == 2 and start == {"events": {"0": 18, "1": 18, "2": 18}}
    assert batch["numInputRows"] == 3 * (20 - 18)
