"""The changed query (``diagnose --job``): each ``job-*`` fixture is a healthy base restarted by real
Spark with one change from Spark's "Recovery Semantics after Changes in a Streaming Query", on
every line; what each line's Spark said the job runs is recorded in fixtures/jobs/facts-<v>.json
(``scripts/generate_fixtures.py --stage jobs``). test_spark_judge.py compares every prediction with
the recorded restart; here: the codes, the statefulness the job settles, and the pure parts."""

from __future__ import annotations

import json

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.diagnosis.changes.facts import job_facts_from_dict
from checkpoint_doctor.diagnosis.changes.schemas import compatible, ddl
from checkpoint_doctor.diagnosis.changes.texts import struct_text
from tests.diagnosis.test_spark_judge import compare
from tests.scenarios import FIXTURES, JOB_PREFIX, REPO, all_scenarios, options_for_restart, run_cli

JOB_CASES = [
    (s, r)
    for s in all_scenarios()
    if s.name.startswith("job-")
    for r in s.data["restarts"]
    if r.get("result")
]

#: The codes each change gives with --job, per line where lines differ (Spark's own outcome is in
#: the fixture: test_spark_judge.py holds the prediction to it).
EXPECTED = {
    "job-unchanged": {},
    "job-filter-added": {},
    "job-source-added": {"*": ["CD201"]},
    "job-aggregation-added": {"*": ["CD301"]},
    "job-shuffle-partitions": {"*": ["CD015"]},
    "job-window-unchanged": {},
    "job-grouping-key-added": {"*": ["CD312"]},
    "job-aggregate-changed": {"*": ["CD312"]},
    # Issue 34: count() -> sum(value) AS s: same type, a nullable field over a non-nullable one,
    # which 3.5-4.2 refuse and 4.3 accepts.
    "job-aggregate-renamed": {"4.3": [], "*": ["CD312"]},
    # dropDuplicates before the aggregation takes operator id 1, whose state was never written: 4.0+
    # refuse it by the operator metadata, 3.5 fails loading state/1 in the tasks (CD313 on both).
    "job-dedup-added": {"*": ["CD313"]},
    "job-state-provider-changed": {"*": ["CD015"]},
    # state/ left for a stateless query (CD308); 4.0+ refuse the restart by the operator metadata
    # their own checkpoints hold (CD313), which a 3.5 checkpoint has not.
    "job-aggregation-removed": {"3.5": ["CD308"], "*": ["CD308", "CD313"]},
    # Sources: the kind at a place, a file source's path, the continuous rate source's partitions.
    "job-source-kind-changed": {"*": ["CD220"]},
    "job-file-unchanged": {},
    "job-file-source-moved": {"*": ["CD221"]},
    "job-rate-partitions-changed": {"*": ["CD222"]},
    "job-rate-rows-changed": {},
    "job-rate-micro-batch-rows-changed": {},
    "job-rate-source-partitions-changed": {},
    # Sinks: a file sink's path, the output mode.
    "job-file-sink-moved": {"*": ["CD420"]},
    "job-output-mode-update": {},
    "job-output-mode-complete": {},
    "job-output-mode-complete-stateless": {"*": ["CD421"]},
    # Triggers: the job's mode is the restart's; the mode's own codes follow (CD101, CD602, CD008).
    "job-async-off": {"*": ["CD101", "CD630"]},
    "job-async-on": {"*": ["CD630"]},
    "job-async-on-stateful": {"*": ["CD602", "CD630"]},
    "job-continuous-off": {"*": ["CD008", "CD220", "CD630"]},
    "job-continuous-on": {"*": ["CD220", "CD630"]},
    # The order of sources: each place holds the other kind's offset.
    "job-two-kinds-unchanged": {},
    "job-sources-reordered": {"*": ["CD220"]},
}


def _expected(name: str, line: str) -> list[str]:
    per_line = EXPECTED[name]
    return sorted(per_line.get(line, per_line.get("*", [])))


def test_every_line_restarted_every_change():
    per_line: dict[str, set[str]] = {}
    for scenario, restart in JOB_CASES:
        assert restart["query"].startswith(JOB_PREFIX)
        per_line.setdefault(restart["spark"], set()).add(scenario.name)
    assert set(per_line) == {"3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0"}
    assert all(names == set(EXPECTED) for names in per_line.values())


@pytest.mark.parametrize(("scenario", "restart"), JOB_CASES, ids=[s.id for s, _ in JOB_CASES])
def test_the_job_gives_the_changes_codes_and_spark_agrees(scenario, restart, tmp_path):
    snapshot = scenario.read(tmp_path)
    opts = options_for_restart(scenario, restart)
    result = diagnose(snapshot, opts)
    assert list(result.codes) == _expected(scenario.name, opts.spark), result.prediction.summary
    assert not compare(result.prediction, restart["result"])
    # The job settles statefulness: no guess, and the job is named in the assumptions.
    assert not any(a.startswith("stateful operators:") for a in result.assumptions)
    assert any(a.startswith(f"query from --job {opts.job.job}") for a in result.assumptions)


def test_without_the_job_an_added_aggregation_is_only_a_guess(tmp_path):
    scenario = next(s for s, _ in JOB_CASES if s.id == "spark-3.5.9/job-aggregation-added")
    snapshot = scenario.read(tmp_path)
    guess = diagnose(snapshot, DiagnoseOptions(spark="3.5", live_window_s=0))
    assert guess.prediction.starts
    assert any(a.startswith("stateful operators:") for a in guess.assumptions)


CONF_CASES = [
    (s, r) for s, r in JOB_CASES if s.name in ("job-shuffle-partitions", "job-state-provider-changed")
]


@pytest.mark.parametrize(("scenario", "restart"), CONF_CASES, ids=[s.id for s, _ in CONF_CASES])
def test_a_pinned_conf_the_job_sets_is_quoted_as_spark_warns(scenario, restart, tmp_path):
    result = diagnose(scenario.read(tmp_path), options_for_restart(scenario, restart))
    warnings = [w for w in result.prediction.warnings if w.startswith("Updating the value of conf")]
    assert len(warnings) == 1
    assert any(warnings[0] in line for line in restart["result"]["log"]), restart["result"]["log"]


def test_schema_compatibility_ignores_names_and_metadata_not_types():
    a = json.dumps(
        {"type": "struct", "fields": [{"name": "count", "type": "long", "nullable": False, "metadata": {}}]}
    )
    b = json.dumps(
        {"type": "struct", "fields": [{"name": "n", "type": "long", "nullable": True, "metadata": {"x": 1}}]}
    )
    c = json.dumps(
        {"type": "struct", "fields": [{"name": "count", "type": "double", "nullable": False, "metadata": {}}]}
    )
    assert compatible(a, b)
    assert not compatible(a, c)
    assert ddl(a) == "struct<count:long>"
    assert struct_text(a) == "StructType(StructField(count,LongType,false))"


def test_job_facts_hide_secrets_and_know_the_mode():
    facts = job_facts_from_dict(
        "jobs.etl:build",
        {
            "spark_version": "4.3.0",
            "sources": [
                {"name": "kafka", "options": {"subscribe": "events", "kafka.sasl.jaas.config": "secret"}}
            ],
            "operators": [],
            "confs": {},
            "sink": {"format": "noop", "options": {"asyncProgressTrackingEnabled": "true"}},
        },
        3.0,
    )
    assert dict(facts.sources[0].options)["kafka.sasl.jaas.config"] == "***"
    assert facts.sources[0].text == "kafka (subscribe=events)"
    assert facts.mode == "async"
    assert not facts.stateful
    with pytest.raises(ValueError):
        job_facts_from_dict("x:y", {"operators": []}, 1.0)


def _fake_spark_python(tmp_path, spec: str, version: str):
    """A 'python' that answers the runner with what Spark ``version`` recorded for ``spec`` (the
    runner's own contract: one JSON list on stdout), so the CLI path runs without a JVM."""
    entries = json.loads((FIXTURES / "jobs" / f"facts-{version}.json").read_text())
    entry = next(e for e in entries if e["job"] == spec)
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\ncat <<'EOF'\n" + json.dumps([entry]) + "\nEOF\n")
    script.chmod(0o755)
    return str(script)


def test_diagnose_with_a_job_judges_the_changed_query(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    spec = "fixtures/jobs/changes.py:window_agg_key_added"
    python = _fake_spark_python(tmp_path, spec, "4.3.0")
    cp = "fixtures/spark-4.3.0/job-grouping-key-added/checkpoint"
    code, out, err = run_cli(capsys, "diagnose", cp, "--job", spec, "--job-python", python)
    text = " ".join(out.split())
    assert code == 4, out + err
    assert (
        "Restart on Spark 4.3 (micro-batch): FAILS in batch 4: [STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE]"
        in text
    )
    assert "CD312 state-schema-incompatible" in text
    assert f"query from --job {spec}, as Spark 4.3.0 analysed it in" in text
    assert "Stateful unknown" not in text
    # The suggested commands carry the job, so that they judge the same query.
    assert f"--job {spec} --job-python {python}" in text
    code, out, _ = run_cli(capsys, "diagnose", cp, "--job", spec, "--job-python", python, "--format", "json")
    doc = json.loads(out)
    assert doc["result"]["job"]["operators"][0]["kind"] == "aggregate"
    assert doc["result"]["named"] == {"lines": ["4.3"], "modes": ["micro-batch"]}  # the job's
    assert [c["spark"] for c in doc["result"]["matrix"]] == ["4.3"]


def test_diagnose_prints_no_plan_command_when_no_repair_addresses_the_change(tmp_path, capsys, monkeypatch):
    # Issue 34: after CD201 the printed 'plan ... --job' re-ran the job's analysis only to say that
    # nothing can be planned. diagnose says so itself, with what to do instead.
    monkeypatch.chdir(REPO)
    spec = "fixtures/jobs/changes.py:stateless_two_sources"
    python = _fake_spark_python(tmp_path, spec, "3.5.9")
    cp = "fixtures/spark-3.5.9/job-source-added/checkpoint"
    code, out, err = run_cli(capsys, "diagnose", cp, "--job", spec, "--job-python", python)
    assert code == 4, out + err
    text = " ".join(out.split())
    assert "CD201" in text and "Repair options" not in text and "checkpoint-doctor plan" not in text
    assert (
        "Nothing to plan (no repair of the checkpoint addresses it): CD201: the query's sources changed: "
        "restore the original sources, or start a new checkpoint"
    ) in text


def test_plan_with_a_job_names_what_no_repair_changes(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    spec = "fixtures/jobs/changes.py:stateless_two_sources"
    python = _fake_spark_python(tmp_path, spec, "3.5.9")
    cp = "fixtures/spark-3.5.9/job-source-added/checkpoint"
    code, out, err = run_cli(capsys, "plan", cp, "--job", spec, "--job-python", python)
    assert code == 4, out + err
    text = " ".join(out.split())
    assert "Restart Spark 3.5, micro-batch" in text
    assert "CD201: offsets/3 has 1 source line(s) but the query has 2 source(s)." in text
    assert "No plan can be applied" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--job", "nocolon"], "is not MODULE:FUNCTION"),
        (
            ["--job", "a:b", "--job-python", "/nonexistent/python"],
            "--job-python /nonexistent/python: cannot run it",
        ),
        (["--job-python", "/usr/bin/python3"], "--job-python needs --job"),
    ],
)
def test_a_job_that_cannot_be_asked_is_a_usage_error(args, message, capsys):
    code, out, err = run_cli(capsys, "diagnose", str(FIXTURES / "spark-4.3.0/window_agg/checkpoint"), *args)
    assert code == 2
    assert out == ""
    assert message in err
    assert "Traceback" not in err


def test_diagnose_without_pyspark_names_the_extra_and_job_python(capsys, monkeypatch):
    # Issue 34: the way out an operator with a Spark venv elsewhere takes is --job-python.
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None if name == "pyspark" else object())
    cp = str(FIXTURES / "spark-3.5.9/stateless/checkpoint")
    code, out, err = run_cli(capsys, "diagnose", cp, "--job", "examples.rate_job:build")
    assert code == 2 and out == "" and "Traceback" not in err
    flat = " ".join(err.split())
    assert "--job needs the 'pyspark' package" in flat
    assert "pip install 'checkpoint-doctor[spark]'" in flat and "--job-python PATH" in flat


def test_plan_without_pyspark_records_the_job_and_says_it_was_not_analysed(capsys, monkeypatch):
    # plan's --job is also the job a catch-up step runs (maybe on another machine): without pyspark
    # here the plan is still made, and says the restart was not judged with the job.
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None if name == "pyspark" else object())
    cp = str(FIXTURES / "spark-3.5.9/stateless/checkpoint")
    code, out, _ = run_cli(capsys, "plan", cp, "--job", "examples.rate_job:build")
    assert code == 0, out
    assert "--job examples.rate_job:build not analysed (no pyspark here)" in " ".join(out.split())


def _facts(sources: list[dict], sink: dict | None = None):
    return job_facts_from_dict(
        "jobs.x:build",
        {"spark_version": "4.3.0", "sources": sources, "operators": [], "confs": {}, "sink": sink or {}},
        1.0,
    )


def test_a_kafka_subscription_is_compared_by_topic_pattern_and_assignment(tmp_path):
    from checkpoint_doctor.diagnosis.changes.sources import kafka_topics_changes
    from checkpoint_doctor.diagnosis.context import Context
    from checkpoint_doctor.diagnosis.versions import target
    from checkpoint_doctor.reading.pipeline import load_checkpoint

    snapshot = load_checkpoint(str(FIXTURES / "kafka-jobs/spark-4.3.0/kafka-job-unchanged/checkpoint"))

    def changes(options: dict[str, str]):
        job = _facts([{"name": "kafka", "options": options}])
        ctx = Context(snapshot, target("4.3"), DiagnoseOptions(spark="4.3", job=job, live_window_s=0))
        return kafka_topics_changes(ctx, job)

    assert changes({"subscribe": "events"}) == ()
    assert changes({"subscribe": "orders, events"}) == ()
    assert changes({"subscribePattern": "ev.*"}) == ()
    # SubscribePatternStrategy keeps a topic where topicRegex.findFirstIn(name) finds the pattern: a
    # partial match is a match (the Admin path, the default since 3.4), only a pattern found nowhere
    # in the name leaves the topic out
    assert changes({"subscribePattern": "ev"}) == ()
    assert changes({"subscribePattern": "^ev$"})[0].names == "events-0, events-1, events-2"
    gone = changes({"assign": '{"events": [0, 2]}', "failOnDataLoss": "false"})
    assert [(c.names, c.subscription, c.fail_on_data_loss) for c in gone] == [
        ("events-1", 'assign={"events": [0, 2]}', False)
    ]


def test_a_file_sink_moved_names_the_compaction_its_new_log_lacks():
    from checkpoint_doctor.diagnosis.changes.writer import SinkMove

    move = SinkMove("/data/out", "/data/out2", 12, 10)
    assert (move.first_compaction, move.next_compaction) == (9, 19)
    assert "/data/out2/_spark_metadata/9.compact doesn't exist when compacting batch 19" in move.text
    # Restarting at batch 5: the first compaction (9) needs batches 0..8, which the new log lacks too.
    early = SinkMove("/data/out", "/data/out2", 5, 10)
    assert (early.first_compaction, early.next_compaction) == (None, 9)
    assert "9.compact" not in early.text


def test_a_glob_file_source_path_is_matched_not_taken_as_a_base_path(tmp_path):
    from checkpoint_doctor.diagnosis.changes.sources import base_path_error, file_source_moves
    from checkpoint_doctor.diagnosis.context import Context
    from checkpoint_doctor.diagnosis.versions import target

    scenario = next(s for s in all_scenarios() if s.id == "spark-4.3.0/job-file-unchanged")
    snapshot = scenario.read(tmp_path)
    inp = scenario.data["written_with"]["input_path"]

    def check(path: str):
        job = _facts([{"name": f"FileSource[{path}]", "options": {"path": path}}])
        ctx = Context(snapshot, target("4.3"), DiagnoseOptions(spark="4.3", job=job, live_window_s=0))
        latest = snapshot.offsets.latest.record.sources
        previous = snapshot.offsets.entries[-2].record.sources
        return file_source_moves(ctx, job), base_path_error(ctx, job, previous, latest)

    assert check(inp) == ((), None)
    assert check(inp.rpartition("/")[0]) == ((), None)  # a parent directory holds the files too
    moved, error = check(inp + "-moved")
    assert not moved[0].glob and error is not None and error.search == "Wrong basePath"
    moved, error = check(inp + "-moved/*.json")
    assert moved[0].glob and error is None  # no basePath: the copies would be read again


SINK_MOVED = [(s, r) for s, r in JOB_CASES if s.name == "job-file-sink-moved"]


@pytest.mark.parametrize(("scenario", "restart"), SINK_MOVED, ids=[s.id for s, _ in SINK_MOVED])
def test_the_moved_sinks_output_fails_its_readers_as_the_finding_says(scenario, restart, tmp_path):
    # The oracle read the new path after the restart (sparklab read_after), as a consumer would.
    result = diagnose(scenario.read(tmp_path), options_for_restart(scenario, restart))
    (finding,) = [f for f in result.findings if f.code == "CD420"]
    spark = restart["result"]["read_after"]["error"]["message"]
    said = "_spark_metadata/9.compact doesn't exist (latestId: 12, compactInterval: 10)"
    assert said in finding.message
    assert f"<sink>/{said}" in spark, spark[:300]


KEY_CASES = [(s, r) for s, r in JOB_CASES if s.name == "job-grouping-key-added"]


@pytest.mark.parametrize(("scenario", "restart"), KEY_CASES, ids=[s.id for s, _ in KEY_CASES])
def test_a_grouping_key_expression_is_shown_as_the_job_wrote_it(scenario, restart, tmp_path):
    # Issue 34: Spark names an expression key by its analyzed text ((value#439L % cast(3 as bigint))),
    # which the job's author does not recognise; the finding shows (value % 3).
    result = diagnose(scenario.read(tmp_path), options_for_restart(scenario, restart))
    (message,) = [f.message for f in result.findings if f.code == "CD312"]
    assert "(value % 3):bigint" in message or "(value % 3):long" in message, message
    assert "#" not in message and "cast(" not in message
