"""``diagnose --kafka-bootstrap-servers`` against a real broker gives the restart real Spark recorded.

Each case replays a recorded scenario's world (scripts/kafka_world.py) on the session's broker, so
the topic holds what it held when Spark restarted the fixture's checkpoint, then runs the CLI on
that checkpoint for the recorded line and compares the matrix cell with the recorded restart
(failOnDataLoss=true, Spark's default, which the prediction assumes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import kafka_world
import pytest

from tests.cli.test_schemas import validate

ROOT = Path(__file__).resolve().parents[2]
KAFKA_FIXTURES = ROOT / "fixtures" / "kafka"
CASES = [
    ("3.5.9", "kafka-stateless-records-deleted"),
    ("4.3.0", "kafka-stateless-records-deleted"),
    ("3.5.9", "kafka-stateful-topic-deleted"),
    ("4.3.0", "kafka-stateless-partitions-added-trimmed"),
    ("4.3.0", "kafka-stateless-topic-recreated"),
    ("4.3.0", "kafka-stateless"),
]

pytestmark = pytest.mark.kafka


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "checkpoint_doctor", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def recorded(scen: dict[str, Any], fail_on_data_loss: str) -> dict[str, Any]:
    entry = next(r for r in scen["restarts"] if r["options"]["failOnDataLoss"] == fail_on_data_loss)
    result: dict[str, Any] = entry["result"]
    return result


@pytest.mark.parametrize(("spark", "name"), CASES, ids=[f"{s}/{n}" for s, n in CASES])
def test_live_verdict_equals_the_recorded_restart(kafka: Any, spark: str, name: str) -> None:
    folder = KAFKA_FIXTURES / f"spark-{spark}" / name
    scen = json.loads((folder / "scenario.json").read_text(encoding="utf-8"))
    kafka_world.replay(kafka.bootstrap, scen["world"])
    line = ".".join(spark.split(".")[:2])
    out = cli(
        "diagnose",
        str(folder / "checkpoint"),
        "--spark",
        line,
        "--kafka-bootstrap-servers",
        kafka.bootstrap,
        "--format",
        "json",
    )
    assert out.stdout, out.stderr
    doc = json.loads(out.stdout)
    assert "result" in doc, doc.get("error")
    validate("diagnose", doc)  # CD207's details and the Kafka assumption fit the published schema
    doc = doc["result"]
    (cell,) = [c for c in doc["matrix"] if c["spark"] == line and c["mode"] == "micro-batch"]
    strict = recorded(scen, "true")
    assert not any("Kafka positions not checked" in a for a in doc["assumptions"])
    if strict["error"] is None:
        assert cell["outcome"] == "starts", cell["summary"]
        assert "CD207" not in cell["codes"]
        assert out.returncode in (0, 1), out.stderr
        return
    assert cell["outcome"] == "fails" and cell["caused_by"] == ["CD207"], cell["summary"]
    assert out.returncode & 4
    search = [cell["error"]["search"], *cell["error"]["also_seen_as"]]
    assert any(s in strict["error"]["message"] for s in search), (search, strict["error"]["message"][:300])
    (finding,) = [f for f in doc["findings"] if f["code"] == "CD207"]
    lenient = recorded(scen, "false")
    if lenient["error"] is None:
        # what failOnDataLoss=false skips is named: Spark then read the rest of each partition
        assert isinstance(finding["details"]["skipped_with_fail_on_data_loss_false"], int)
        # one clause, or one per subscription shape where they differ (issue 32 item 1: an assign
        # query ignores an added partition that subscribe and subscribePattern read)
        lenient_words = finding["message"].split("with failOnDataLoss=false", 1)[1]
        assert lenient_words.startswith(" it starts") or " query starts" in lenient_words, finding["message"]
    else:
        assert finding["details"]["skipped_with_fail_on_data_loss_false"] is None


def test_records_deleted_names_the_skipped_count(kafka: Any) -> None:
    folder = KAFKA_FIXTURES / "spark-3.5.9" / "kafka-stateless-records-deleted"
    scen = json.loads((folder / "scenario.json").read_text(encoding="utf-8"))
    kafka_world.replay(kafka.bootstrap, scen["world"])
    out = cli(
        "diagnose", str(folder / "checkpoint"), "--spark", "3.5", "--kafka-bootstrap-servers", kafka.bootstrap
    )
    assert out.returncode == 4, out.stderr
    # next offset 15, log start 18 on each of 3 partitions: 3 records each are gone
    assert "skips 9 records (events-0: 3, events-1: 3, events-2: 3)" in " ".join(out.stdout.split())
    assert "FAILS in the tasks of batch 2" in out.stdout


def test_unreachable_broker_is_one_line_naming_it(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a local port nothing listens on: bound, never listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        folder = KAFKA_FIXTURES / "spark-3.5.9" / "kafka-stateless"
        out = cli("diagnose", str(folder / "checkpoint"), "--kafka-bootstrap-servers", f"127.0.0.1:{port}")
    assert out.returncode == 8
    assert out.stdout == ""
    (line,) = out.stderr.strip().splitlines()
    assert f"Kafka broker 127.0.0.1:{port}" in line and "Traceback" not in line


def test_without_a_broker_the_output_says_how_to_check() -> None:
    folder = KAFKA_FIXTURES / "spark-4.3.0" / "kafka-stateless-records-deleted"
    out = cli("diagnose", str(folder / "checkpoint"), "--spark", "4.3")
    text = " ".join(out.stdout.split())
    assert "Kafka positions not checked (topics events): pass --kafka-bootstrap-servers HOST:PORT" in text


def test_secret_option_values_are_never_printed(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("hunter2-secret\n", encoding="utf-8")
    folder = KAFKA_FIXTURES / "spark-3.5.9" / "kafka-stateless"
    out = cli(
        "diagnose",
        str(folder / "checkpoint"),
        "--kafka-bootstrap-servers",
        "127.0.0.1:9",
        "--kafka-option",
        "sasl.password=@" + str(secret),
        "--kafka-option",
        "no.such.setting=hunter2-secret",
    )
    assert out.returncode == 2, out.stderr
    assert "hunter2" not in out.stdout + out.stderr


def test_hints_carry_the_broker_and_never_a_literal_secret() -> None:
    from checkpoint_doctor.render.hints import Hints

    hints = Hints.from_options(
        {
            "kafka_bootstrap_servers": "b1:9092,b2:9092",
            "kafka_option": (
                "security.protocol=SASL_SSL",
                "sasl.password=hunter2",
                "sasl.username=env:KUSER",
            ),
        }
    )
    text = hints.plan("ckpt")
    assert "--kafka-bootstrap-servers b1:9092,b2:9092" in text
    assert "--kafka-option security.protocol=SASL_SSL" in text and "sasl.username=env:KUSER" in text
    assert "hunter2" not in text and "sasl.password" not in text


def test_a_missing_client_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from checkpoint_doctor.errors import MissingDependencyError
    from checkpoint_doctor.model import KafkaOffset
    from checkpoint_doctor.world.kafka import read_positions

    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # import fails as when not installed
    with pytest.raises(MissingDependencyError) as err:
        read_positions("127.0.0.1:9", [KafkaOffset((("events", 0, 0),))])
    assert "pip install 'checkpoint-doctor[kafka]'" in str(err.value)


def test_option_values_from_a_file_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from checkpoint_doctor.errors import UsageError
    from checkpoint_doctor.world.kafka import parse_options

    (tmp_path / "pw").write_text("s3cret\n", encoding="utf-8")
    monkeypatch.setenv("KUSER", "alice")
    got = parse_options(["sasl.password=@" + str(tmp_path / "pw"), "sasl.username=env:KUSER", "acks=all"])
    assert got == {"sasl.password": "s3cret", "sasl.username": "alice", "acks": "all"}
    monkeypatch.delenv("KUSER")
    with pytest.raises(UsageError, match="KUSER is not set"):
        parse_options(["sasl.username=env:KUSER"])
    with pytest.raises(UsageError, match="not KEY=VALUE"):
        parse_options(["novalue"])
