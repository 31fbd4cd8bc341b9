"""The code registry, the checks and the fixtures agree.

Every scenario's expected codes (maintained in the EXPECT table of scripts/generate_fixtures.py,
reviewed against what Spark did) equal what diagnose reports; every registered code is triggered
by at least one scenario; codes are never dropped from the registry.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from checkpoint_doctor.diagnosis import ALL_CHECKS, DiagnoseOptions, diagnose
from checkpoint_doctor.diagnosis.codes import CODES, SEVERITY_ORDER
from checkpoint_doctor.diagnosis.versions import LINES
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.scenarios import all_scenarios

SCENARIOS = all_scenarios()

#: Every code ever released. A code may be retired (kept, marked) but never removed or reused.
KNOWN_CODES = frozenset(
    [
        "CD001",
        "CD002",
        "CD003",
        "CD004",
        "CD005",
        "CD006",
        "CD007",
        "CD008",
        "CD009",
        "CD010",
        "CD011",
        "CD012",
        "CD013",
        "CD014",
        "CD015",
        "CD101",
        "CD102",
        "CD103",
        "CD104",
        "CD105",
        "CD106",
        "CD107",
        "CD108",
        "CD109",
        "CD110",
        "CD201",
        "CD202",
        "CD203",
        "CD204",
        "CD205",
        "CD206",
        "CD207",
        "CD211",
        "CD212",
        "CD213",
        "CD214",
        "CD230",
        "CD235",
        "CD208",
        "CD209",
        "CD210",
        "CD240",
        "CD241",
        "CD215",
        "CD216",
        "CD245",
        "CD246",
        "CD247",
        "CD301",
        "CD302",
        "CD303",
        "CD304",
        "CD305",
        "CD306",
        "CD307",
        "CD308",
        "CD309",
        "CD310",
        "CD311",
        "CD312",
        "CD313",
        "CD320",
        "CD321",
        "CD322",
        "CD323",
        "CD324",
        "CD325",
        "CD326",
        "CD327",
        "CD328",
        "CD401",
        "CD402",
        "CD403",
        "CD404",
        "CD405",
        "CD406",
        "CD407",
        "CD408",
        "CD220",
        "CD221",
        "CD222",
        "CD223",
        "CD420",
        "CD421",
        "CD630",
        "CD501",
        "CD502",
        "CD503",
        "CD504",
        "CD505",
        "CD506",
        "CD507",
        "CD508",
        "CD509",
        "CD510",
        "CD601",
        "CD602",
        "CD603",
        "CD620",
        "CD290",
        "CD701",
        "CD702",
        "CD800",
        "CD801",
        "CD802",
        "CD803",
        "CD804",
        "CD805",
        "CD806",
    ]
)


def options(scenario, args: dict, snapshot) -> DiagnoseOptions:
    """Turn a scenario's expectation arguments into diagnose options."""
    q = scenario.data["query"]
    a = dict(args)
    now = a.pop("now", None)
    if now == "latest+5s":
        entry = [e for e in snapshot.offsets.entries if e.record and e.record.metadata][-1]
        now = entry.record.metadata.batch_timestamp_ms + 5_000
    elif now == "fresh_temp":
        now = max(d.file.mtime_ms for d in snapshot.debris if d.kind == "temp") + 1_000
    if "confs" in a:
        a["confs"] = tuple(sorted(a["confs"].items()))
    # A writer-only line (3.3.4, 3.4.4) is diagnosed for the oldest supported line: where it upgrades to.
    own = ".".join(scenario.data["spark_version"].split(".")[:2])
    a.setdefault("spark", own if own in LINES else LINES[0])
    a.setdefault("sources", q.get("sources"))
    a.setdefault("stateful", q.get("stateful"))
    a.setdefault("live_window_s", 0)
    return DiagnoseOptions(now_ms=now, **a)


def _freshen_temp_files(cp, snapshot) -> None:
    """Make temp files look just written, long after the newest batch (the clock is the mock)."""
    entry = [e for e in snapshot.offsets.entries if e.record and e.record.metadata][-1]
    stamp = (entry.record.metadata.batch_timestamp_ms + 3_600_000) / 1000
    for d in snapshot.debris:
        if d.kind == "temp":
            os.utime(cp / d.file.path, (stamp, stamp))


CASES = [(s, {}, s.data["expect_codes"]) for s in SCENARIOS] + [
    (s, m["args"], m["codes"]) for s in SCENARIOS for m in s.data.get("expect_more", [])
]


@pytest.mark.parametrize(("scenario", "args", "expected"), CASES, ids=[f"{s.id}:{a}" for s, a, _ in CASES])
def test_scenario_codes(scenario, args, expected, tmp_path):
    if args.get("now") == "fresh_temp":
        snapshot = scenario.load(tmp_path)  # a copy: the temp files' times are changed
        _freshen_temp_files(tmp_path / "checkpoint", snapshot)
        snapshot = load_checkpoint(str(tmp_path / "checkpoint"))
    else:
        snapshot = scenario.read(tmp_path)
    result = diagnose(snapshot, options(scenario, args, snapshot))
    assert list(result.codes) == sorted(expected), result.prediction.summary
    for code in result.prediction.caused_by:
        assert code in result.codes


#: Codes that need what a checkpoint does not hold, proven on fixtures elsewhere: CD207 needs the
#: topics' positions, recorded beside each Kafka fixture (tests/kafka/test_positions_replay.py
#: diagnoses every recorded Kafka restart with them).
TRIGGERED_ELSEWHERE = {
    "CD207",
    # CD211: a negative Kafka offset is hostile input Spark never writes (tests/kafka/test_negative_offsets.py)
    "CD211",
    # CD213: a retention deadline needs a broker and a clock (tests/kafka/test_retention_deadline.py)
    "CD213",
    # CD214 needs the record timestamps of the recreated topic (tests/kafka/test_two_sources.py)
    "CD214",
    # CD230 needs the broker's positions of the subscription shapes' fixtures (tests/kafka/test_subscription_shapes.py)
    "CD230",
    # CD235: an uncommitted batch over records retention deleted, with the topics' recorded positions
    # (fixtures/kafka-loss/, tests/kafka/test_kafka_loss.py)
    "CD235",
    # CD015, CD312 and CD313 need the changed job's facts, recorded per line in fixtures/jobs/
    # (tests/diagnosis/test_job_changes.py)
    "CD015",
    "CD312",
    "CD313",
    # CD208-CD210, CD407 and CD408 need the Delta tables, kept beside each Delta fixture
    # (tests/delta/test_recorded_restarts.py)
    "CD208",
    "CD209",
    "CD210",
    # CD215 and CD216 need a damaged or copied table beside a Delta fixture
    # (tests/delta/test_hostile_logs.py)
    "CD215",
    "CD216",
    # CD240 and CD241 need a Delta table whose schema changed under column mapping or type widening
    # (fixtures/delta-schema/, tests/delta/test_schema_changes.py)
    "CD240",
    "CD241",
    # CD245-CD247 need the Delta tables and the job's source options (readChangeFeed,
    # skipChangeCommits, startingVersion): tests/delta/test_delta_options.py
    "CD245",
    "CD246",
    "CD247",
    "CD407",
    "CD408",
    # real-time restarts on 4.3 of checkpoints 4.1/4.2 wrote: fixtures/kafka-realtime/, proven by
    # tests/kafka/test_realtime_restarts.py
    "CD620",
    # 4.1's Kafka connector failing a re-run batch: the same fixtures and test
    "CD290",
    # The changed query's sources, sink, output mode and trigger: the job-* fixtures with the job's
    # facts (tests/diagnosis/test_job_changes.py; CD223: fixtures/kafka-jobs/, tests/kafka/test_kafka_job_changes.py)
    "CD220",
    "CD221",
    "CD222",
    "CD223",
    "CD420",
    "CD421",
    "CD630",
    # transformWithState: fixtures/tws/ put back where Spark restarted them (the metadata names its
    # schema files by absolute path), tests/tws/test_recorded_restarts.py
    "CD320",
    "CD321",
    "CD322",
    # a changed transformWithState processor (--job): the recorded restarts of fixtures/tws/spark-*/jobs.json
    # with the line's job facts, tests/tws/test_job_changes.py
    "CD323",
    "CD324",
    "CD325",
    "CD326",
    # ... and with the Avro state encoding: fixtures/tws/spark-*/avro-jobs.json
    "CD327",
    "CD328",
    # A Declarative Pipeline's flows: fixtures/sdp/ as spark-pipelines ran them, judged from the
    # storage root and the tables' sink logs (tests/pipelines/test_recorded_runs.py)
    "CD800",
    "CD801",
    "CD802",
    "CD803",
    "CD804",
    # ... and with the pipeline's code (the spec beside the root, or --job): tests/pipelines/test_cli.py
    "CD805",
    # ... started before its upstream on 4.1/4.2 (a deduplicating Python flow): test_recorded_runs.py
    "CD806",
}


def test_every_registered_code_is_triggered_by_a_fixture():
    triggered = {c for _, _, codes in CASES for c in codes} | TRIGGERED_ELSEWHERE
    untested = sorted(set(CODES) - triggered)
    assert not untested, f"codes without a fixture scenario: {untested}"


def test_codes_are_never_removed_and_well_formed():
    assert set(CODES) >= KNOWN_CODES, f"codes removed from the registry: {sorted(KNOWN_CODES - set(CODES))}"
    assert set(CODES) <= KNOWN_CODES, "a new code must be added to KNOWN_CODES (and never removed)"
    slugs = [c.slug for c in CODES.values()]
    assert len(slugs) == len(set(slugs))
    for info in CODES.values():
        assert info.severity in SEVERITY_ORDER
        assert info.title and info.spark_does and info.why and info.action


def test_checks_are_an_explicit_tuple_of_callables():
    assert isinstance(ALL_CHECKS, tuple) and all(callable(c) for c in ALL_CHECKS)
    assert len({c.__name__ for c in ALL_CHECKS}) == len(ALL_CHECKS)


def test_codes_are_symbols_named_by_their_slugs() -> None:
    from checkpoint_doctor.diagnosis.codes import Code

    assert {c.value for c in Code} == set(CODES)
    for member in Code:
        assert member.name == CODES[member.value].slug.upper().replace("-", "_")
        assert str(member) == f"{member}" == member.value
    assert json.dumps({"code": Code.ASYNC_TAIL_SYNC_RESTART}) == '{"code": "CD101"}'


def test_every_code_written_in_the_package_is_registered_and_only_the_registry_spells_one() -> None:
    """A ``CDnnn`` anywhere in the package (code, text, templates, schemas) is a registered code; as a
    Python string literal it appears only in the registry: everything else says ``Code.NAME``."""
    package = Path(__file__).resolve().parents[2] / "checkpoint_doctor"
    registry = package / "diagnosis" / "code_info.py"  # the Code enum spells each code once
    unknown, literals = [], []
    for path in sorted(p for p in package.rglob("*") if p.suffix in {".py", ".j2", ".json", ".html"}):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(package)
        unknown += [f"{rel}: {m}" for m in re.findall(r"\bCD\d{3}\b", text) if m not in CODES]
        if path.suffix == ".py" and path != registry:
            literals += [f"{rel}: {m}" for m in re.findall(r"[\"']CD\d{3}[\"']", text)]
    assert not unknown, unknown
    assert not literals, literals


def test_each_topic_keeps_the_texts_of_its_codes_beside_its_checks() -> None:
    """Issue 35: a topic's codes, texts and checks together; the registry gathers them in one order."""
    from checkpoint_doctor.diagnosis import codes_logs, codes_writers, pipeline_codes
    from checkpoint_doctor.diagnosis.changes import codes as changes
    from checkpoint_doctor.diagnosis.sinks import codes as sinks
    from checkpoint_doctor.diagnosis.sources import codes as sources
    from checkpoint_doctor.diagnosis.state import codes as state

    def numbers(infos: tuple[Any, ...]) -> set[str]:
        return {str(i.code) for i in infos}

    changed_query = {"CD220", "CD221", "CD222", "CD223", "CD420", "CD421", "CD630"}
    assert numbers(changes.CODES) == changed_query
    assert all(c[2] in "01" for c in numbers(codes_logs.LOG_CODES))
    assert all(c[2] == "7" for c in numbers(codes_logs.CONTINUOUS_CODES))
    assert all(c[2] == "2" for c in numbers(sources.CODES))
    assert all(c[2] == "3" for c in numbers(state.CODES))
    assert all(c[2] == "4" for c in numbers(sinks.CODES))
    assert all(c[2] in "56" or c == "CD290" for c in numbers(codes_writers.CODES))
    assert all(c[2] == "8" for c in numbers(pipeline_codes.CODES))
    topics = (
        codes_logs.LOG_CODES,
        sources.CODES,
        state.CODES,
        sinks.CODES,
        codes_writers.CODES,
        codes_logs.CONTINUOUS_CODES,
        changes.CODES,
        pipeline_codes.CODES,
    )
    assert [i for t in topics for i in t] == list(CODES.values())
