"""Kafka restarts per subscription shape (issue 32 item 1) equal what real Spark did.

fixtures/kafka-shapes/ (scripts/kafka_shapes_fixtures.py): one world (topics ``events``, 3 partitions,
and ``events-audit``, 2), three queries over it (``subscribe``, ``subscribePattern``, ``assign``), each
damage restarted by real Spark with the connector against a real broker, failOnDataLoss true and
false. The checkpoint cannot say which shape wrote it: with ``--job`` the query's own shape is judged
(every recorded restart, both failOnDataLoss values); without it the cell is ``subscribe``'s with the
other shapes' refusals as its alternative texts, and CD230 gives each shape's outcome where they differ.
Replayed without Spark or a broker, from the positions recorded beside each checkpoint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.diagnosis.changes.facts import JobFacts, JobSource
from checkpoint_doctor.diagnosis.sources.kafka_positions import Subscription, predict
from checkpoint_doctor.diagnosis.spark_line import SparkLine
from checkpoint_doctor.model import KafkaLive, KafkaOffset
from checkpoint_doctor.parsing.source_offsets import decode_offset
from checkpoint_doctor.reading.pipeline import load_checkpoint

SHAPES_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "kafka-shapes"
SCENARIOS = sorted(SHAPES_FIXTURES.glob("spark-*/*/scenario.json"))
CASES = [
    (path, idx)
    for path in SCENARIOS
    for idx in range(len(json.loads(path.read_text(encoding="utf-8"))["restarts"]))
]
IDS = [f"{p.parent.parent.name}/{p.parent.name}#{i}" for p, i in CASES]


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def next_offsets(checkpoint: Path) -> KafkaOffset:
    last = max(int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit())
    lines = (checkpoint / "offsets" / str(last)).read_text(encoding="utf-8").split("\n")
    decoded = decode_offset(lines[2])  # v1, metadata, then the one Kafka source
    assert isinstance(decoded, KafkaOffset)
    return decoded


def recorded_live(scen: dict[str, Any]) -> KafkaLive:
    """The topics' positions the restart met, as the broker reader returns them."""
    topics = tuple(
        (t, None if parts is None else tuple(sorted((int(p), lo, hi) for p, (lo, hi) in parts.items())))
        for t, parts in sorted(scen["topic_positions"].items())
    )
    return KafkaLive("recorded", topics)


def job_of(scen: dict[str, Any], fail_on_data_loss: str) -> JobFacts:
    """The query as the job probe describes it: one Kafka source with its subscription option."""
    options = ((scen["shape"], scen["subscription"]), ("failOnDataLoss", fail_on_data_loss))
    return JobFacts(
        job="kafka_shapes:query",
        spark_version=scen["spark_version"],
        sources=(JobSource("kafka", options),),
        operators=(),
        confs=(),
        sink_format="noop",
        sink_path=None,
        output_mode="append",
        trigger="once",
        elapsed_s=0.0,
    )


def _line(scen: dict[str, Any]) -> str:
    return ".".join(scen["spark_version"].split(".")[:2])


#: The lines whose fixtures were written and restarted by real Spark (scripts/kafka_shapes_fixtures.py).
LINES = ("3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0")


def test_every_line_has_recorded_shape_restarts() -> None:
    lines = {p.parent.parent.name for p in SCENARIOS}
    assert lines == {f"spark-{v}" for v in LINES}, lines
    for line in lines:
        names = {p.parent.name for p in SCENARIOS if p.parent.parent.name == line}
        for base in ("kafka-subscribe", "kafka-pattern", "kafka-assign"):
            for damage in ("", "-topic-deleted", "-topic-recreated-smaller", "-partitions-added-trimmed"):
                assert base + damage in names, (line, base + damage)


@pytest.mark.parametrize(("path", "idx"), CASES, ids=IDS)
def test_prediction_per_shape_equals_the_recorded_restart(path: Path, idx: int) -> None:
    scen = _load(path)
    entry = scen["restarts"][idx]
    result = entry["result"]
    live = recorded_live(scen).live
    sub = Subscription(scen["shape"], scen["subscription"])
    fol = entry["options"]["failOnDataLoss"] == "true"
    got = predict(next_offsets(path.parent / "checkpoint"), live, SparkLine(_line(scen)), fol, sub)
    if got.error is None:
        assert result["error"] is None, result["error"]["message"][:300]
        batch = result["batches"][0]
        assert got.rows == batch["numInputRows"]
        end = batch["sources"][0]["endOffset"]
        end = json.loads(end) if isinstance(end, str) else end
        ends: dict[str, dict[str, int]] = {}
        for r in got.reads:
            ends.setdefault(r.topic, {})[str(r.partition)] = r.end
        assert ends == end
    else:
        assert result["error"] is not None and not result["batches"]
        assert got.error.matches(result["error"]["message"]), (
            got.error.search,
            result["error"]["message"][:400],
        )


@pytest.mark.parametrize(("path", "idx"), CASES, ids=IDS)
def test_diagnose_with_the_job_gives_the_recorded_restart(path: Path, idx: int) -> None:
    """``--job`` settles the shape and failOnDataLoss: the whole diagnosis says what Spark did."""
    scen = _load(path)
    entry = scen["restarts"][idx]
    result = entry["result"]
    got = diagnose(
        load_checkpoint(str(path.parent / "checkpoint")),
        DiagnoseOptions(
            spark=_line(scen),
            stateful=False,
            live_window_s=0,
            kafka=recorded_live(scen),
            job=job_of(scen, entry["options"]["failOnDataLoss"]),
        ),
    )
    assert "CD230" not in got.codes  # the job says how it subscribes
    fol = entry["options"]["failOnDataLoss"]
    said = (
        f"the job's Kafka sources: source 0 {scen['shape']}={scen['subscription']} with failOnDataLoss={fol}"
    )
    assert any(said in a for a in got.assumptions), got.assumptions
    if result["error"] is None:
        assert got.prediction.starts, got.prediction.summary
        rows = result["batches"][0]["numInputRows"]
        assert any(f"reads {rows} records" in n for n in got.prediction.notes), got.prediction.notes
    else:
        assert not got.prediction.starts
        assert got.prediction.caused_by == ("CD207",)
        assert got.prediction.error is not None and got.prediction.error.matches(result["error"]["message"])


#: failOnDataLoss=true restarts (Spark's default, what a diagnosis without --job assumes).
STRICT = [(p, i) for p, i in CASES if _load(p)["restarts"][i]["options"]["failOnDataLoss"] == "true"]


@pytest.mark.parametrize(
    ("path", "idx"), STRICT, ids=[f"{p.parent.parent.name}/{p.parent.name}#{i}" for p, i in STRICT]
)
def test_without_the_job_the_cell_names_every_shape(path: Path, idx: int) -> None:
    """Without --job the cell is subscribe's (the shape that refuses the most), and whatever shape the
    query really had, the log holds the cell's text or one of its alternatives; a shape that starts
    where subscribe fails (assign over added partitions) is named by CD230."""
    scen = _load(path)
    result = scen["restarts"][idx]["result"]
    got = diagnose(
        load_checkpoint(str(path.parent / "checkpoint")),
        DiagnoseOptions(spark=_line(scen), stateful=False, live_window_s=0, kafka=recorded_live(scen)),
    )
    if result["error"] is not None:
        assert not got.prediction.starts
        assert got.prediction.error is not None and got.prediction.error.matches(result["error"]["message"])
    elif not got.prediction.starts:
        cd230 = next(f for f in got.findings if f.code.value == "CD230")
        rows = result["batches"][0]["numInputRows"]
        assert f"{scen['shape']}: STARTS, reading {rows} records" in cd230.message, cd230.message


def _outcomes(line: str, damage: str) -> dict[str, tuple[Any, ...]]:
    """What Spark did per shape for one damage on one line: (started, rows) per failOnDataLoss."""
    out = {}
    for base in ("kafka-subscribe", "kafka-pattern", "kafka-assign"):
        scen = _load(SHAPES_FIXTURES / line / f"{base}{damage}" / "scenario.json")
        out[base] = tuple(
            (r["result"]["started"], (r["result"]["batches"] or [{}])[0].get("numInputRows"))
            for r in scen["restarts"]
        )
    return out


@pytest.mark.parametrize(
    "path", SCENARIOS, ids=[f"{p.parent.parent.name}/{p.parent.name}" for p in SCENARIOS]
)
def test_cd230_exactly_where_the_recorded_shapes_differ(path: Path) -> None:
    scen = _load(path)
    damage = scen["name"][len(scen["base"] or scen["name"]) :]
    differ = len(set(_outcomes(path.parent.parent.name, damage).values())) > 1
    got = diagnose(
        load_checkpoint(str(path.parent / "checkpoint")),
        DiagnoseOptions(spark=_line(scen), stateful=False, live_window_s=0, kafka=recorded_live(scen)),
    )
    assert ("CD230" in got.codes) == differ, (damage, got.codes)


def test_a_pattern_query_over_a_deleted_topic_in_words() -> None:
    """The deleted topic's three shapes on 4.3.0, as CD207 and CD230 say them."""
    path = SHAPES_FIXTURES / "spark-4.3.0" / "kafka-pattern-topic-deleted" / "scenario.json"
    scen = _load(path)
    got = diagnose(
        load_checkpoint(str(path.parent / "checkpoint")),
        DiagnoseOptions(spark="4.3", stateful=False, live_window_s=0, kafka=recorded_live(scen)),
    )
    cd207 = next(f for f in got.findings if f.code.value == "CD207")
    assert "a subscribe or assign query fails too (the topic is gone)" in cd207.message, cd207.message
    assert (
        "a subscribePattern query starts and drops 3 partitions the broker no longer lists, never reading "
        "their records (events-0 from offset 15, events-1 from offset 15, events-2 from offset 15"
    ) in cd207.message, cd207.message
    cd230 = next(f for f in got.findings if f.code.value == "CD230")
    assert (
        "subscribePattern: FAILS: Reason: Partitions Set(events-0, events-1, events-2) have been deleted."
        in (cd230.message)
    ), cd230.message
    assert got.prediction.error is not None
    assert "have been deleted." in got.prediction.error.alternatives


REPAIRS = sorted((SHAPES_FIXTURES.parent / "repairs").glob("kafka-shapes-spark-*.json"))


def test_every_line_has_its_refused_shapes_restarted_after_the_plan() -> None:
    assert {p.stem.removeprefix("kafka-shapes-spark-") for p in REPAIRS} == {
        p.parent.parent.name.removeprefix("spark-") for p in SCENARIOS
    }


def _plan_now(scen: dict[str, Any], checkpoint: Path, fol: str, live: KafkaLive) -> Any:
    from dataclasses import replace

    from checkpoint_doctor.planning import PlanOptions, plan_repair

    snapshot = load_checkpoint(str(checkpoint))
    plain = PlanOptions(
        diagnose=DiagnoseOptions(
            spark=_line(scen), mode="micro-batch", live_window_s=0, kafka=live, job=job_of(scen, fol)
        )
    )
    return plan_repair(snapshot, diagnose(snapshot, plain.diagnose), replace(plain, accept_data_loss=True))


@pytest.mark.parametrize("path", REPAIRS, ids=lambda p: p.stem)
def test_every_refused_shape_was_brought_back_on_real_spark(path: Path) -> None:
    """scripts/record_kafka_shapes_repairs.py: every refused restart of the line, planned with the
    query's own subscription (``--job``) and consent, applied to a copy and restarted by real Spark
    with the connector: batch 2 starts from exactly the positions the plan wrote, every partition the
    plan dropped or skipped is named in its loss, undo gives the bytes back. A deleted topic under
    subscribe or assign is first recreated, as the plan says. The plan made here from the recorded
    positions is the same plan."""
    from tests.repair_proof import plan_key

    doc = _load(path)
    line = doc["spark"]
    refused = [
        (p, i)
        for p, i in CASES
        if p.parent.parent.name == f"spark-{line}" and not _load(p)["restarts"][i]["result"]["started"]
    ]
    assert refused and sorted(doc["records"]) == sorted(f"{p.parent.name}#{i}" for p, i in refused)
    for scen_path, idx in refused:
        rec = doc["records"][f"{scen_path.parent.name}#{idx}"]
        scen = _load(scen_path)
        assert rec["fingerprint"] == scen["fingerprint"]
        assert rec["outcome"] == "started", (scen_path.parent.name, rec.get("error"), rec.get("unavailable"))
        assert rec["undo_restored"] is True and rec["first_batch"] == 2
        (source,) = rec["sources"]
        start = source["startOffset"]
        start = json.loads(start) if isinstance(start, str) else start
        (written,) = rec["positions"]
        assert start == written, (start, written)
        if rec.get("operator_steps"):
            # a deleted topic under subscribe or assign: recreated empty first, as the plan says; then
            # with failOnDataLoss=true the plan moves the positions above the new latest to 0, with
            # false Spark starts on the checkpoint as it is (nothing to change: plan_steps 0)
            assert scen["shape"] in ("subscribe", "assign") and "topic-deleted" in scen["name"]
            assert rec["operator_steps"] == [{"op": "create_topic", "topic": "events", "partitions": 3}]
            moved = rec["failOnDataLoss"] == "true"
            assert rec["plan_steps"] == (3 if moved else 0)
            assert written["events"] == dict.fromkeys(("0", "1", "2"), 0 if moved else 15)
            assert source["numInputRows"] == 2 * (12 - 8)
            continue
        (loss,) = rec["loss"]
        if scen["name"].endswith("topic-deleted"):  # a pattern query: the deleted topic's partitions dropped
            assert scen["shape"] == "subscribePattern" and "events" not in start
            assert all(f"events-{p}: topic deleted" in loss for p in range(3)), loss
            assert source["numInputRows"] == 2 * (12 - 8)
        elif scen["name"].endswith("topic-recreated-smaller"):
            assert "events-2: partition gone" in loss and "2" not in start["events"], loss
            # issue 32 item 5: events-2 gone proves the topic recreated, so events-0 and -1 read
            # the new topic from 0 (2 x 25 records, and 2 x 4 of events-audit), each named
            assert start["events"] == {"0": 0, "1": 0}, start
            assert all(f"events-{p}: 0 records of the new topic skipped" in loss for p in (0, 1)), loss
            assert source["numInputRows"] == 2 * 25 + 2 * (12 - 8)
        else:  # added partitions trimmed to start at 1: added at 1, the record below counted
            assert scen["name"].endswith("partitions-added-trimmed") and scen["shape"] != "assign"
            assert start["events"]["3"] == 1 and start["events"]["4"] == 1
            assert "events-3: 1 records skipped" in loss and "events-4: 1 records skipped" in loss, loss
        plan = _plan_now(scen, scen_path.parent / "checkpoint", rec["failOnDataLoss"], recorded_live(scen))
        assert plan_key(plan) == rec["plan_key"]


def test_the_plan_drops_a_deleted_topic_only_for_a_pattern_query(tmp_path: Path) -> None:
    """A subscribePattern query (named with --job) gets a plan that drops the deleted topic's partitions
    with consent, each named as data loss, and holds the topic still absent at apply time; without the
    job (or for subscribe) no change of the checkpoint can help, and the plan says how to settle it."""
    from dataclasses import replace

    from checkpoint_doctor.planning import PlanOptions, plan_repair
    from checkpoint_doctor.planning.preconditions import KafkaPositionsPre

    folder = SHAPES_FIXTURES / "spark-4.3.0" / "kafka-pattern-topic-deleted"
    scen = _load(folder / "scenario.json")
    live = recorded_live(scen)
    snapshot = load_checkpoint(str(folder / "checkpoint"))

    def plan(job: JobFacts | None, accept: bool) -> Any:
        plain = PlanOptions(diagnose=DiagnoseOptions(spark="4.3", live_window_s=0, kafka=live, job=job))
        return plan_repair(
            snapshot, diagnose(snapshot, plain.diagnose), replace(plain, accept_data_loss=accept)
        )

    unknown = plan(None, True)
    assert not unknown.executable_steps
    (reason,) = [o["reason"] for f in unknown.to_dict()["options"] for o in f["options"] if o.get("reason")]
    assert "a subscribePattern query no longer lists it: name the query with --job MODULE:FUNCTION" in reason
    subscribe = dict(scen, shape="subscribe", subscription="events,events-audit")
    assert not plan(job_of(subscribe, "true"), True).executable_steps
    assert not plan(job_of(scen, "true"), False).executable_steps  # consent first
    made = plan(job_of(scen, "true"), True)
    assert made.strategy == "kafka-positions" and made.expected["starts"]
    (loss,) = made.expected["consequences"]["loss"]
    for p in range(3):
        assert (
            f"events-{p}: topic deleted (the subscribePattern no longer lists it): its records from offset 15 on"
            in loss
        )
    (write,) = [s for s in made.steps if getattr(s, "data", None) is not None]
    assert json.loads(write.data.decode().split("\n")[2]) == {"events-audit": {"0": 8, "1": 8}}
    (hold,) = [p for p in made.preconditions if isinstance(p, KafkaPositionsPre)]
    assert hold.gone_topics == ("events",)
    assert hold.check_live(live) is None
    again = KafkaLive("b:9092", (("events", ((0, 0, 0), (1, 0, 0), (2, 0, 0))), *live.topics[1:]))
    assert "topic events is listed again" in (hold.check_live(again) or "")
    assert KafkaPositionsPre.from_json(hold.to_dict()) == hold


def test_apply_plans_a_pattern_query_again_without_its_job(tmp_path: Path) -> None:
    """apply verifies a plan by planning again from its request, where the job is not at hand: the
    request keeps how the Kafka source subscribes, so the pattern plan applies (main: 'the plan has 3
    steps, the planner makes 0') and writes the line without the deleted topic."""
    import shutil
    from dataclasses import replace

    from checkpoint_doctor.execution.apply import apply_plan
    from checkpoint_doctor.execution.journal import tool_url
    from checkpoint_doctor.planning import PlanOptions, plan_repair
    from checkpoint_doctor.reading.storage import open_storage

    folder = SHAPES_FIXTURES / "spark-4.3.0" / "kafka-pattern-topic-deleted"
    scen = _load(folder / "scenario.json")
    live = recorded_live(scen)
    cp = tmp_path / "checkpoint"
    shutil.copytree(folder / "checkpoint", cp)
    snapshot = load_checkpoint(str(cp))
    plain = PlanOptions(
        diagnose=DiagnoseOptions(spark="4.3", live_window_s=0, kafka=live, job=job_of(scen, "true"))
    )
    plan = plan_repair(snapshot, diagnose(snapshot, plain.diagnose), replace(plain, accept_data_loss=True))
    assert plan.request["kafka_subscriptions"] == [
        {"source": 0, "shape": "subscribePattern", "subscription": "events.*", "fail_on_data_loss": True}
    ]
    store = open_storage(str(cp))
    apply_plan(plan, store, sink=None, tool=open_storage(tool_url(store.url)), now_ms=None, kafka=live)
    line = (cp / "offsets" / "1").read_text(encoding="utf-8").split("\n")[2]
    assert json.loads(line) == {"events-audit": {"0": 8, "1": 8}}


def test_cd207_says_failondataloss_false_reads_added_partitions_from_their_earliest() -> None:
    """Spark with failOnDataLoss=false read the trimmed added partitions from 1 (27 rows recorded, not
    29): CD207 says so, where main said 'skips the partitions whose positions are gone'."""
    path = SHAPES_FIXTURES / "spark-4.3.0" / "kafka-subscribe-partitions-added-trimmed" / "scenario.json"
    scen = _load(path)
    lenient = scen["restarts"][1]
    assert (
        lenient["options"]["failOnDataLoss"] == "false"
        and lenient["result"]["batches"][0]["numInputRows"] == 27
    )
    got = diagnose(
        load_checkpoint(str(path.parent / "checkpoint")),
        DiagnoseOptions(spark="4.3", stateful=False, live_window_s=0, kafka=recorded_live(scen)),
    )
    cd207 = next(f for f in got.findings if f.code.value == "CD207")
    assert (
        "with failOnDataLoss=false a subscribe or subscribePattern query starts and reads the added partitions "
        "from their earliest offsets, never the records below (events-3 from 1, events-4 from 1)"
    ) in cd207.message, cd207.message
