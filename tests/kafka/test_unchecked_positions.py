"""No broker, no health (issue 32 item 6): a Kafka checkpoint judged without --kafka-bootstrap-servers
is CD212, a warning (exit 1), naming the command that checks it; the audit counts it a warning, apart
from the healthy ones, in its text, JSON, HTML and metrics. The checkpoint is Spark's records-deleted
fixture (its records are gone: the broker alone says so); its recorded world is replayed on the
session's broker for the command the warning prints."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import kafka_world

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.cli.test_schemas import validate
from tests.kafka.test_live_diagnose import cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "kafka" / "spark-4.3.0" / "kafka-stateless-records-deleted"
NON_KAFKA = ROOT / "fixtures" / "spark-3.5.9" / "async" / "checkpoint"


def test_without_a_broker_a_kafka_checkpoint_is_a_warning_not_healthy() -> None:
    result = diagnose(
        load_checkpoint(str(FIXTURE / "checkpoint")), DiagnoseOptions(spark="4.3", live_window_s=0)
    )
    (found,) = [f for f in result.findings if f.code == "CD212"]
    assert found.severity == "warning" and result.exit_code == 1
    assert found.message.startswith("Kafka positions not checked (topics events)")


def test_the_printed_command_runs_and_finds_what_the_broker_knows(kafka: Any) -> None:
    out = cli("diagnose", str(FIXTURE / "checkpoint"), "--live-window", "0", "--format", "json")
    assert out.returncode == 1, out.stdout
    doc = json.loads(out.stdout)
    validate("diagnose", doc)
    (found,) = [f for f in doc["result"]["findings"] if f["code"] == "CD212"]
    command = (
        dict(found["details"])["command"]
        if isinstance(found["details"], list)
        else found["details"]["command"]
    )
    assert command in found["message"]
    argv = shlex.split(command.replace("HOST:PORT", kafka.bootstrap))
    assert argv[:2] == ["checkpoint-doctor", "diagnose"]
    scen = json.loads((FIXTURE / "scenario.json").read_text(encoding="utf-8"))
    kafka_world.replay(kafka.bootstrap, scen["world"])
    checked = cli(*argv[1:], "--live-window", "0")
    assert checked.returncode == 4, checked.stdout  # the records are gone: CD207, as Spark refused it
    assert "CD207" in checked.stdout and "CD212" not in checked.stdout


def test_the_audit_counts_unchecked_kafka_checkpoints_apart_from_healthy_ones(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(FIXTURE / "checkpoint", root / "q-kafka")
    shutil.copytree(NON_KAFKA, root / "q-rate")
    page, prom = tmp_path / "audit.html", tmp_path / "audit.prom"
    args = ["audit", str(root), "--live-window", "0"]
    out = cli(*args, "--format", "json", "--html", str(page), "--metrics", str(prom))
    doc = json.loads(out.stdout)
    validate("audit", doc)
    assert out.returncode == doc["exit_code"] == 1, out.stdout
    records = {Path(r["url"]).name: r for r in doc["result"]["records"]}
    kafka_record = records["q-kafka"]
    assert kafka_record["verdict"] == "warning" and "CD212" in kafka_record["codes"]
    assert kafka_record["kafka"]["checked"] is False
    assert kafka_record["next_step"].endswith("--kafka-bootstrap-servers HOST:PORT")
    assert "CD212" not in records["q-rate"]["codes"]
    verdicts = doc["result"]["summary"]["verdicts"]
    assert verdicts["warning"] >= 1 and verdicts["ok"] == sum(r["verdict"] == "ok" for r in records.values())
    assert kafka_record["verdict"] != "ok"
    assert 'code="CD212"' in prom.read_text(encoding="utf-8")
    assert "CD212" in page.read_text(encoding="utf-8")
    table = cli(*args)
    assert "CD212" in table.stdout and "kafka-positions-unchecked" not in table.stderr
