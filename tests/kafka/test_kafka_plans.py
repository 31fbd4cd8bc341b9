"""The way back from a refused Kafka restart (strategy kafka-positions), without Spark or a broker: for
every restart real Spark refused in fixtures/kafka/ on every line, the plan made from the topic's
recorded positions, its consent and counts, the bytes it writes, the precondition apply re-checks,
and the replay of what real Spark did after apply (scripts/record_kafka_repairs.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from checkpoint_doctor.errors import PreconditionFailedError
from checkpoint_doctor.execution.apply import apply_plan
from checkpoint_doctor.execution.journal import JOURNAL, tool_url
from checkpoint_doctor.execution.undo import undo_journal
from checkpoint_doctor.model import KafkaLive
from checkpoint_doctor.planning import RepairPlan
from checkpoint_doctor.planning.planner import CONSENT_MANUAL
from checkpoint_doctor.planning.preconditions import KafkaPositionsPre
from checkpoint_doctor.reading.storage import open_storage
from tests.kafka.repair_proof import (
    LINES,
    Case,
    plan_case,
    recorded_live,
    refused,
    snapshot_of,
    written_positions,
)
from tests.repair_proof import tree_bytes

CASES = [c for line in LINES for c in refused(line)]

#: What each refused damage gets: the positions Spark starts from after the plan, and the records
#: the plan says it skips (None: no plan, the topic is gone).
WANTED: dict[str, tuple[dict[str, int], int] | None] = {
    "records-deleted": ({"0": 18, "1": 18, "2": 18}, 9),  # 15..17 deleted on each partition
    "topic-recreated": ({"0": 0, "1": 0, "2": 0}, 0),  # the new topic from its beginning
    "partitions-added-trimmed": ({"0": 15, "1": 15, "2": 15, "3": 1, "4": 1}, 2),  # offset 0 of each new one
    # events-2 gone proves the topic recreated: events-0 and -1 read the new topic from 0 (keeping 15
    # skipped 30 records the plan did not name, issue 32 item 5); events-2 dropped, not countable
    "partitions-lost": ({"0": 0, "1": 0}, 0),
    "topic-deleted": None,
}


def _damage(case: Case) -> str:
    return str(case.data["name"]).removeprefix(str(case.data["base"])).removeprefix("-")


def test_every_refused_kafka_restart_is_a_case_on_every_line() -> None:
    assert len(LINES) == 5
    for line in LINES:
        damages = sorted(_damage(c) for c in refused(line))
        # failOnDataLoss=true refuses five damages (two bases each); a deleted topic refuses false too
        assert damages == sorted([*WANTED, *WANTED, "topic-deleted", "topic-deleted"])


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.data['spark_version']}/{c.key}")
def test_each_refused_restart_gets_its_plan_with_consent_and_counts(case: Case, tmp_path: Path) -> None:
    snapshot = snapshot_of(case, tmp_path)
    plan, consent = plan_case(case, snapshot, recorded_live(case))
    wanted = WANTED[_damage(case)]
    if wanted is None:
        assert not plan.executable_steps and not consent
        (left,) = plan.unresolved
        assert left["code"] == "CD207" and left["manual"].startswith("recreate the topic")
        return
    positions, skipped = wanted
    # consent is asked: the plan skips records (or cannot count what it skips)
    assert consent and plan.strategy == "kafka-positions" and not plan.unresolved
    assert plan.expected["starts"] is True and plan.expected["next_batch_id"] == 2
    assert written_positions(plan) == positions
    (loss,) = plan.expected["consequences"]["loss"]
    assert (f"({skipped} records skipped in all)" if skipped else "(no deleted record counted)") in loss
    if _damage(case) == "partitions-lost":
        # every partition of the recreated topic is named with what the restart never reads
        for p in ("events-0", "events-1"):
            assert f"{p}: 0 records of the new topic skipped" in loss
            assert "its records 0..14 are read" in loss
        assert "events-2: partition gone" in loss
    # the newest offsets file's Kafka line is rewritten, every other byte kept; its checksum goes with it
    assert [(s.kind, s.path) for s in plan.steps] == [
        ("quarantine", "offsets/1"),
        ("quarantine", "offsets/.1.crc"),
        ("write", "offsets/1"),
    ]
    old = (case.path / "checkpoint" / "offsets" / "1").read_bytes().split(b"\n")
    new = plan.steps[2].data.split(b"\n")  # type: ignore[attr-defined]
    assert new[:2] == old[:2] and len(new) == len(old) == 3
    assert json.loads(new[2]) == {"events": positions}


def test_without_consent_the_plan_says_how_to_give_it(tmp_path: Path) -> None:
    (case,) = [c for c in refused("4.3.0") if c.key == "kafka-stateless-records-deleted#0"]
    from checkpoint_doctor.diagnosis import diagnose
    from checkpoint_doctor.planning import PlanOptions, plan_repair
    from tests.kafka.repair_proof import options

    snapshot = snapshot_of(case, tmp_path)
    opts = options(case, recorded_live(case))
    plan = plan_repair(snapshot, diagnose(snapshot, opts), PlanOptions(diagnose=opts))
    assert not plan.steps
    (left,) = plan.unresolved
    assert (
        left["manual"] == CONSENT_MANUAL and "events-0: 3 records skipped (15..17 deleted)" in left["reason"]
    )


def _live(parts: tuple[tuple[int, int, int], ...] | None) -> KafkaLive:
    return KafkaLive("broker:9092", (("events", parts),))


def test_the_kafka_precondition_round_trips_and_judges_the_broker_again(tmp_path: Path) -> None:
    (case,) = [c for c in refused("3.5.9") if c.key == "kafka-stateful-records-deleted#0"]
    plan, _ = plan_case(case, snapshot_of(case, tmp_path), recorded_live(case))
    again = RepairPlan.from_json(plan.to_json())
    assert again == plan and again.plan_id == plan.plan_id
    (pre,) = [p for p in plan.preconditions if isinstance(p, KafkaPositionsPre)]
    assert pre.partitions == (("events", 0, 18, 18), ("events", 1, 18, 18), ("events", 2, 18, 18))
    assert pre.check_live(_live(((0, 18, 20), (1, 18, 20), (2, 18, 20)))) is None
    assert pre.check_live(_live(((0, 18, 90), (1, 18, 20), (2, 18, 20)))) is None  # new records: fine
    moved = pre.check_live(_live(((0, 19, 20), (1, 18, 20), (2, 18, 20))))
    assert moved == (
        "events-0's earliest offset is 19 now, the plan was made when it was 18 (the records it skips changed)"
    )
    assert "partitions [0, 1, 2, 3]" in str(
        pre.check_live(_live(((0, 18, 20), (1, 18, 20), (2, 18, 20), (3, 0, 0))))
    )
    assert pre.check_live(_live(None)) == "topic events is gone from broker:9092"
    assert "were not read again" in str(pre.check_live(None))


def test_a_kept_partition_may_lose_records_below_its_position() -> None:
    pre = KafkaPositionsPre("b:1", (("events", 0, 15, None), ("events", 3, 1, 1)))
    assert pre.check_live(_live(((0, 10, 20), (3, 1, 3)))) is None
    assert "above the position 15" in str(pre.check_live(_live(((0, 16, 20), (3, 1, 3)))))
    assert "below the position 15" in str(pre.check_live(_live(((0, 0, 12), (3, 1, 3)))))


def test_apply_refuses_when_retention_moved_on_and_applies_and_undoes_otherwise(tmp_path: Path) -> None:
    (case,) = [c for c in refused("4.3.0") if c.key == "kafka-stateful-records-deleted#0"]
    snapshot = snapshot_of(case, tmp_path)
    live = recorded_live(case)
    plan, _ = plan_case(case, snapshot, live)
    store = open_storage(str(tmp_path / "checkpoint"))
    tool = open_storage(tool_url(store.url))
    before = tree_bytes(tmp_path / "checkpoint")
    later = _live(((0, 19, 21), (1, 18, 21), (2, 18, 21)))
    with pytest.raises(PreconditionFailedError, match="events-0's earliest offset is 19 now"):
        apply_plan(plan, store, sink=None, tool=tool, now_ms=None, kafka=later)
    with pytest.raises(PreconditionFailedError, match="were not read again"):
        apply_plan(plan, store, sink=None, tool=tool, now_ms=None)
    assert tree_bytes(tmp_path / "checkpoint") == before
    grown = replace(live, topics=(("events", ((0, 18, 30), (1, 18, 30), (2, 18, 30))),))
    result = apply_plan(plan, store, sink=None, tool=tool, now_ms=None, kafka=grown)
    assert result.after is not None and result.after.prediction.starts
    assert result.after.prediction.next_batch_id == 2 and not result.after.codes
    assert any("reads 36 records" in n for n in result.after.prediction.notes)
    line = (tmp_path / "checkpoint" / "offsets" / "1").read_text().split("\n")[2]
    assert json.loads(line) == {"events": {"0": 18, "1": 18, "2": 18}}
    undo_journal(open_storage(result.journal_url[: -len(JOURNAL)].rstrip("/")), open_storage)  # type: ignore[index]
    assert tree_bytes(tmp_path / "checkpoint") == before


def test_a_kafka_plan_document_follows_the_published_schema(tmp_path: Path) -> None:
    from checkpoint_doctor.render.layout import json_document
    from tests.cli.test_schemas import validate

    (case,) = [c for c in refused("4.0.5") if c.key == "kafka-stateless-partitions-added-trimmed#0"]
    plan, _ = plan_case(case, snapshot_of(case, tmp_path), recorded_live(case))
    doc = json.loads(json_document("plan", plan.to_dict()).final(exit_code=0, generated_at_ms=0))
    validate("plan", doc)
    assert {"kind": "kafka_positions"}.items() <= plan.to_dict()["preconditions"][-1].items()


def test_apply_reads_the_broker_again_from_the_plan_and_names_it_when_it_is_down(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.scenarios import run_cli

    (case,) = [c for c in refused("4.1.4") if c.key == "kafka-stateless-topic-recreated#0"]
    down = "127.0.0.1:9"  # discard: nothing listens there
    plan, _ = plan_case(case, snapshot_of(case, tmp_path), recorded_live(case, down))
    path = tmp_path / "plan.json"
    path.write_text(plan.to_json(), encoding="utf-8")
    before = tree_bytes(tmp_path / "checkpoint")
    code, out, err = run_cli(capsys, "apply", str(path), "--yes")
    assert code == 8 and out == "" and err.count("\n") == 1
    assert f"Kafka broker {down}" in err
    assert tree_bytes(tmp_path / "checkpoint") == before


def test_the_printed_apply_carries_the_kafka_client_settings_but_no_secret() -> None:
    from checkpoint_doctor.render.hints import Hints

    kw = {
        "kafka_bootstrap_servers": "b:9093",
        "kafka_option": ["security.protocol=SSL", "sasl.password=hunter2", "ssl.key.password=env:KEY_PW"],
    }
    assert Hints.from_options(kw).apply("plan.json") == (
        "checkpoint-doctor apply plan.json --kafka-option security.protocol=SSL "
        "--kafka-option ssl.key.password=env:KEY_PW"
    )
    assert Hints().apply("plan.json") == "checkpoint-doctor apply plan.json"
