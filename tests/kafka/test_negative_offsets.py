"""Negative Kafka offsets in the offsets log (issue 31 item 13): -1 (latest) and -2 (earliest) mean
something in ``startingOffsets`` only (Spark's ``KafkaOffsetRangeLimit``), never in a batch's end
offsets. A checkpoint holding one is CD211, and no count anywhere takes it as records (one was
9223372036854775826 records skipped). The checkpoint is Spark's records-deleted fixture with its
newest offsets changed here (hostile input, which Spark never writes); the topic is its recorded
world on the session's broker."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import kafka_world
import pytest

from checkpoint_doctor.diagnosis import diagnose
from checkpoint_doctor.model import KafkaLive
from checkpoint_doctor.planning import PlanOptions, plan_repair
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.kafka.repair_proof import options as diagnose_options
from tests.kafka.test_live_diagnose import cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "kafka" / "spark-4.3.0" / "kafka-stateless-records-deleted"
LONG_MIN = -(2**63)


def _copy(dest: Path, offsets: dict[str, int]) -> Path:
    shutil.copytree(FIXTURE / "checkpoint", dest)
    newest = dest / "offsets" / "1"
    *head, _ = newest.read_text(encoding="utf-8").splitlines()
    newest.write_text(
        "\n".join([*head, json.dumps({"events": offsets}, separators=(",", ":"))]), encoding="utf-8"
    )
    (dest / "offsets" / ".1.crc").unlink(missing_ok=True)
    return dest


def _live() -> KafkaLive:
    scen = json.loads((FIXTURE / "scenario.json").read_text(encoding="utf-8"))
    parts = tuple((int(p), lo, hi) for p, (lo, hi) in sorted(scen["topic_positions"].items()))
    return KafkaLive("broker:9092", (("events", parts),))


class _Case:
    data = json.loads((FIXTURE / "scenario.json").read_text(encoding="utf-8"))
    index = 0


def test_a_negative_offset_is_cd211_and_counts_no_record(tmp_path: Path) -> None:
    """Pure: the recorded positions (18..20 on each partition), no broker."""
    ckpt = _copy(tmp_path / "ckpt", {"0": LONG_MIN, "1": -1, "2": 15})
    snapshot = load_checkpoint(str(ckpt))
    result = diagnose(snapshot, diagnose_options(_Case(), _live()))  # type: ignore[arg-type]
    (neg,) = [f for f in result.findings if f.code == "CD211"]
    assert neg.severity == "error" and neg.paths == ("offsets/1",)
    assert f"events-0: {LONG_MIN}, events-1: -1 (latest)" in neg.message
    # events-2 at 15 is below the earliest 18: 3 records, the only ones counted
    (gone,) = [f for f in result.findings if f.code == "CD207"]
    details = dict(gone.details)
    assert details["skipped_with_fail_on_data_loss_false"] == 3
    assert details["skipped_per_partition"] == (("events-2", 3),)
    plan = plan_repair(
        snapshot, result, PlanOptions(accept_data_loss=True, diagnose=diagnose_options(_Case(), _live()))
    )  # type: ignore[arg-type]
    text = json.dumps(plan.to_dict())
    assert "9223372036854775" not in text.replace(str(LONG_MIN), "")
    (loss,) = plan.expected["consequences"]["loss"]
    assert "(3 records skipped in all)" in loss
    assert f"events-0: offset {LONG_MIN} is not a position (CD211)" in loss


def test_diagnose_and_audit_report_negative_offsets_against_a_real_topic(kafka: Any, tmp_path: Path) -> None:
    scen = json.loads((FIXTURE / "scenario.json").read_text(encoding="utf-8"))
    kafka_world.replay(kafka.bootstrap, scen["world"])
    root = tmp_path / "root"
    _copy(root / "q-neg", {"0": -2, "1": -1, "2": LONG_MIN})
    out = cli(
        "diagnose", str(root / "q-neg"), "--kafka-bootstrap-servers", kafka.bootstrap, "--format", "json"
    )
    doc = json.loads(out.stdout)
    assert out.returncode == 4, out.stderr
    codes = [f["code"] for f in doc["result"]["findings"]]
    assert "CD211" in codes
    assert "9223372036854775" not in out.stdout.replace(str(LONG_MIN), "")
    audit = cli("audit", str(root), "--kafka-bootstrap-servers", kafka.bootstrap, "--format", "json")
    (record,) = json.loads(audit.stdout)["result"]["records"]
    assert "CD211" in record["codes"] and record["verdict"] == "error"
    assert "9223372036854775" not in audit.stdout.replace(str(LONG_MIN), "")


@pytest.mark.parametrize("offset", [-1, -2, LONG_MIN])
def test_no_broker_still_reports_a_negative_offset(offset: int, tmp_path: Path) -> None:
    ckpt = _copy(tmp_path / "ckpt", {"0": offset, "1": 15, "2": 15})
    out = cli("diagnose", str(ckpt), "--format", "json")
    codes = [f["code"] for f in json.loads(out.stdout)["result"]["findings"]]
    assert "CD211" in codes and out.returncode & 4
