"""Two Kafka sources in one query (issue 32 item 2), replayed without Spark or a broker: every restart
real Spark recorded in fixtures/kafka-sources/ (scripts/kafka_sources_fixtures.py: ``events`` is
source 0, ``orders`` source 1, each damage touches one topic) against the prediction, the diagnosis
and the plan, each source judged against its own topics only (one KafkaMicroBatchStream per source).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.diagnosis.sources.kafka_positions import predict
from checkpoint_doctor.diagnosis.spark_line import SparkLine
from checkpoint_doctor.model import KafkaLive, KafkaOffset
from checkpoint_doctor.parsing.source_offsets import decode_offset
from checkpoint_doctor.planning import PlanOptions, plan_repair
from checkpoint_doctor.planning.steps import WriteStep
from checkpoint_doctor.reading.pipeline import load_checkpoint

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "kafka-sources"
SCENARIOS = sorted(FIXTURES.glob("spark-*/*/scenario.json"))
CASES = [
    (path, idx)
    for path in SCENARIOS
    for idx in range(len(json.loads(path.read_text(encoding="utf-8"))["restarts"]))
]
IDS = [f"{p.parent.parent.name}/{p.parent.name}#{i}" for p, i in CASES]


def _scenario(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _sources(checkpoint: Path) -> list[KafkaOffset]:
    """The next offsets of each source, from the newest offsets file (v1, metadata, one line per source)."""
    last = max(int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit())
    lines = (checkpoint / "offsets" / str(last)).read_text(encoding="utf-8").split("\n")[2:]
    decoded = [decode_offset(line) for line in lines]
    assert all(isinstance(d, KafkaOffset) for d in decoded)
    return decoded  # type: ignore[return-value]


def _live(scen: dict) -> KafkaLive:
    """Every topic's positions the restart met, as the reader gives them (all the checkpoint's topics)."""
    topics = tuple(
        (t, None if pos is None else tuple(sorted((int(p), lo, hi) for p, (lo, hi) in pos.items())))
        for t, pos in sorted(scen["topic_positions"].items())
    )
    return KafkaLive("recorded", topics)


def _line(scen: dict) -> str:
    return ".".join(scen["spark_version"].split(".")[:2])


def _offsets(raw: object) -> dict:
    return json.loads(raw) if isinstance(raw, str) else raw  # type: ignore[return-value]


def test_there_are_two_source_fixtures_on_the_lines_asked() -> None:
    lines = {p.parent.parent.name for p in SCENARIOS}
    assert {"spark-3.5.9", "spark-4.3.0"} <= lines
    for line in lines:
        names = {p.parent.name for p in SCENARIOS if p.parent.parent.name == line}
        assert names == {
            "kafka-two-sources",
            "kafka-two-sources-orders-records-deleted",
            "kafka-two-sources-events-recreated-grown",
            "kafka-two-sources-events-recreated-more-partitions",
        }


@pytest.mark.parametrize(("path", "idx"), CASES, ids=IDS)
def test_each_source_is_predicted_against_its_own_topics(path: Path, idx: int) -> None:
    """Per source, the prediction equals what Spark did: the batch's start and end offsets and rows per
    source, or the refusal in Spark's words naming the damaged topic (never the other source's)."""
    scen = _scenario(path)
    entry = scen["restarts"][idx]
    result = entry["result"]
    strict = entry["options"]["failOnDataLoss"] == "true"
    live = _live(scen).live
    offs = _sources(path.parent / "checkpoint")
    assert [sorted({t for t, _, _ in o.partitions}) for o in offs] == [["events"], ["orders"]]
    got = [predict(o, live, SparkLine(_line(scen)), strict) for o in offs]
    if result["error"] is None:
        assert [g.error for g in got] == [None, None]
        (batch,) = result["batches"]
        assert batch["numInputRows"] == sum(g.rows for g in got)
        for n, g in enumerate(got):
            source = batch["sources"][n]
            assert source["numInputRows"] == g.rows
            topic = ("events", "orders")[n]
            assert {str(r.partition): r.end for r in g.reads} == _offsets(source["endOffset"])[topic]
            start = _offsets(source["startOffset"])[topic]
            # a partition new to the checkpoint is read from its earliest offset and is not in Spark's start
            assert {str(r.partition): r.start for r in g.reads if str(r.partition) in start} == start
            assert all(r.start == 0 for r in g.reads if str(r.partition) not in start)
    else:
        assert not result["started"]
        errors = [(n, g.error) for n, g in enumerate(got) if g.error is not None]
        # only the source whose topic was damaged refuses: orders is source 1
        assert [n for n, _ in errors] == [1]
        assert errors[0][1].matches(result["error"]["message"]), result["error"]["message"][:400]
        assert "orders" in errors[0][1].search


STRICT = [(c, i) for c, i in zip(CASES, IDS, strict=True) if c[1] == 0]


@pytest.mark.parametrize(("path", "idx"), [c for c, _ in STRICT], ids=[i for _, i in STRICT])
def test_diagnose_reports_the_lossy_source_and_only_it(path: Path, idx: int) -> None:
    """failOnDataLoss=true (Spark's default, what diagnose assumes): CD207 for the source whose records
    are gone, naming its own partitions only; no false 'Added partition' for the other source."""
    scen = _scenario(path)
    result = scen["restarts"][idx]["result"]
    snapshot = load_checkpoint(str(path.parent / "checkpoint"))
    got = diagnose(snapshot, DiagnoseOptions(spark=_line(scen), live_window_s=0, kafka=_live(scen)))
    text = " ".join(f.message for f in got.findings)
    assert "Added partition" not in (got.prediction.error.search if got.prediction.error else "")
    if result["error"] is None:
        assert got.prediction.starts and "CD207" not in got.codes, got.prediction.summary
        rows = result["batches"][0]["numInputRows"]
        reads = [n for n in got.prediction.notes if "reads" in n and "Kafka source" in n]
        assert sum(int(n.split(" reads ")[1].split()[0]) for n in reads) == rows, reads
        return
    assert not got.prediction.starts and got.prediction.caused_by == ("CD207",)
    assert got.prediction.error is not None and got.prediction.error.matches(result["error"]["message"])
    (finding,) = [f for f in got.findings if f.code == "CD207"]
    details = dict(finding.details)
    assert details["source"] == 1
    # orders: next offsets 8, log start 10 on both partitions; failOnDataLoss=false skips 2 each
    assert details["skipped_per_partition"] == (("orders-0", 2), ("orders-1", 2))
    lenient = scen["restarts"][1]["result"]
    assert lenient["error"] is None
    assert lenient["batches"][0]["sources"][1]["numInputRows"] == 2 * (12 - 10)
    assert "events-" not in text.split("Kafka source 1:")[1].split(";")[0]


@pytest.mark.parametrize("line", sorted({p.parent.parent.name for p in SCENARIOS}))
def test_the_plan_moves_the_lossy_source_and_keeps_the_other(line: str, tmp_path: Path) -> None:
    """The plan for orders-records-deleted rewrites source 1's line only (orders 8 -> 10, 4 records
    named as skipped, with consent) and keeps source 0's line byte for byte."""
    folder = FIXTURES / line / "kafka-two-sources-orders-records-deleted"
    scen = _scenario(folder / "scenario.json")
    shutil.copytree(folder / "checkpoint", tmp_path / "checkpoint")
    snapshot = load_checkpoint(str(tmp_path / "checkpoint"))
    plain = PlanOptions(diagnose=DiagnoseOptions(spark=_line(scen), live_window_s=0, kafka=_live(scen)))
    diagnosis = diagnose(snapshot, plain.diagnose)
    unconsented = plan_repair(snapshot, diagnosis, plain)
    assert not unconsented.executable_steps
    plan = plan_repair(snapshot, diagnosis, replace(plain, accept_data_loss=True))
    (write,) = [s for s in plan.steps if isinstance(s, WriteStep)]
    assert write.path == "offsets/1"
    old = (folder / "checkpoint" / "offsets" / "1").read_text(encoding="utf-8").split("\n")
    lines = write.data.decode("utf-8").split("\n")
    assert lines[:3] == old[:3]  # v1, the metadata, source 0 (events) untouched
    assert json.loads(lines[3]) == {"orders": {"1": 10, "0": 10}}
    (loss,) = plan.expected["consequences"]["loss"]
    assert "Kafka source 1: " in loss and "Kafka source 0" not in loss
    assert "orders-0: 2 records skipped" in loss and "orders-1: 2 records skipped" in loss
    assert "(4 records skipped in all)" in loss


REPAIRS = sorted((FIXTURES.parent / "repairs").glob("kafka-sources-spark-*.json"))


def test_every_line_with_two_source_fixtures_has_its_plans_restarted_by_spark() -> None:
    assert {p.stem.removeprefix("kafka-sources-spark-") for p in REPAIRS} == {
        p.parent.parent.name.removeprefix("spark-") for p in SCENARIOS
    }


@pytest.mark.parametrize("path", REPAIRS, ids=lambda p: p.stem)
def test_the_plan_brought_the_refused_restart_back_on_real_spark(path: Path, tmp_path: Path) -> None:
    """scripts/record_kafka_sources_repairs.py: the plan made from the broker's positions, applied to a
    copy and restarted by real Spark with the connector: batch 2 starts from the positions the plan
    wrote (orders 10, events kept at 15) and reads up to the latest offsets; undo gives the bytes back.
    The plan made here from the recorded positions is the same plan (same steps)."""
    from tests.repair_proof import plan_key

    doc = json.loads(path.read_text(encoding="utf-8"))
    line = doc["spark"]
    refused = [
        (p, i)
        for p, i in CASES
        if p.parent.parent.name == f"spark-{line}" and not _scenario(p)["restarts"][i]["result"]["started"]
    ]
    assert sorted(doc["records"]) == sorted(f"{p.parent.name}#{i}" for p, i in refused)
    assert refused
    for scen_path, idx in refused:
        rec = doc["records"][f"{scen_path.parent.name}#{idx}"]
        scen = _scenario(scen_path)
        assert rec["fingerprint"] == scen["fingerprint"]
        assert rec["outcome"] == "started", rec["error"]
        assert rec["undo_restored"] is True
        assert rec["first_batch"] == 2
        events, orders = rec["sources"]
        assert _offsets(events["startOffset"]) == {"events": {"0": 15, "1": 15, "2": 15}}
        assert _offsets(orders["startOffset"]) == {"orders": {"0": 10, "1": 10}}
        assert rec["positions"] == [{"events": {"2": 15, "1": 15, "0": 15}}, {"orders": {"1": 10, "0": 10}}]
        assert events["numInputRows"] == 3 * (20 - 15) and orders["numInputRows"] == 2 * (12 - 10)
        (loss,) = rec["loss"]
        assert "Kafka source 1: " in loss and "(4 records skipped in all)" in loss
        shutil.copytree(scen_path.parent / "checkpoint", tmp_path / line / "checkpoint")
        snapshot = load_checkpoint(str(tmp_path / line / "checkpoint"))
        plain = PlanOptions(
            diagnose=DiagnoseOptions(
                spark=_line(scen), mode="micro-batch", live_window_s=0, kafka=_live(scen)
            )
        )
        plan = plan_repair(
            snapshot, diagnose(snapshot, plain.diagnose), replace(plain, accept_data_loss=True)
        )
        assert plan_key(plan) == rec["plan_key"]


@pytest.mark.kafka
@pytest.mark.parametrize("line", ["spark-3.5.9", "spark-4.3.0"])
def test_live_diagnose_judges_each_source_against_its_own_topic(kafka: object, line: str) -> None:
    """The world rebuilt on a real broker, the CLI as an operator runs it: source 1's loss is CD207 in
    Spark's words for orders, source 0 (events, untouched) is not refused."""
    import os
    import subprocess
    import sys

    import kafka_world

    from tests.cli.test_schemas import validate

    folder = FIXTURES / line / "kafka-two-sources-orders-records-deleted"
    scen = _scenario(folder / "scenario.json")
    bootstrap = kafka.bootstrap  # type: ignore[attr-defined]
    kafka_world.replay(bootstrap, scen["world"])
    root = Path(__file__).resolve().parents[2]
    argv = [sys.executable, "-m", "checkpoint_doctor", "diagnose", str(folder / "checkpoint")]
    argv += ["--spark", _line(scen), "--kafka-bootstrap-servers", bootstrap, "--format", "json"]
    out = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        check=False,
    )
    assert out.returncode & 4, out.stderr
    doc = json.loads(out.stdout)
    validate("diagnose", doc)
    result = doc["result"]
    (finding,) = [f for f in result["findings"] if f["code"] == "CD207"]
    assert finding["details"]["source"] == 1
    assert finding["details"]["skipped_per_partition"] == [["orders-0", 2], ["orders-1", 2]]
    (cell,) = [c for c in result["matrix"] if c["spark"] == _line(scen) and c["mode"] == "micro-batch"]
    assert cell["outcome"] == "fails" and "orders-" in cell["error"]["search"]
    message = scen["restarts"][0]["result"]["error"]["message"]
    assert any(s in message for s in [cell["error"]["search"], *cell["error"]["also_seen_as"]])
