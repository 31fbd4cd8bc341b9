"""The catch-up runner's decisions, without Spark: job specs and imports, the durable tail, batch
counting, refusals (with Spark's texts as recorded from 3.5.9 and 4.3.0), the verdict's rendering, the
missing-pyspark error, and the plan's catch-up step. The Spark runs are in tests/spark/test_catch_up.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from checkpoint_doctor.cli import cli, main
from checkpoint_doctor.cli.catch_up import render_catch_up
from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.errors import UsageError
from checkpoint_doctor.execution.runner import (
    STATEFUL_TEXT,
    CatchUpRefusedError,
    CatchUpReport,
    executed_batches,
    is_stop_artifact,
    load_job,
    next_command,
    parse_job_spec,
    pre_start_refusal,
    progress_dict,
    refusal_for_spark_error,
    should_stop,
    spark_line,
    spark_message_of,
    tail_state,
    timeout_refusal,
    with_tail,
)
from checkpoint_doctor.loading import load_checkpoint
from checkpoint_doctor.snapshot import simulate_changes
from tests.conftest import FIXTURES, copy_scenario

ASYNC_TAIL = {"3.5.9": (21, 32), "4.3.0": (20, 31)}  # (newest durable offsets below L, L) per fixture


def snapshot_of(version: str, scenario: str, tmp_path: Path):
    return load_checkpoint(str(copy_scenario(FIXTURES / f"spark-{version}" / scenario, tmp_path)))


def caught_up(snapshot, *batch_ids: int):
    """The async-tail snapshot after the runner's batches: offsets and commits written for each id."""
    latest = snapshot.offsets.latest_id
    offsets = snapshot.raw[f"offsets/{latest}"]
    commit = snapshot.raw[f"commits/{snapshot.commits.latest_id}"]
    added = {}
    for b in batch_ids:
        added[("checkpoint", f"offsets/{b}")] = offsets
        added[("checkpoint", f"commits/{b}")] = commit
    return simulate_changes(snapshot, added=added)


# ------------------------------------------------------------------------------------------ job spec


@pytest.mark.parametrize(
    ("spec", "target", "function", "is_path"),
    [
        ("examples.rate_job:build", "examples.rate_job", "build", False),
        ("jobs/etl.py:make_writer", "jobs/etl.py", "make_writer", True),
        ("etl.py:build", "etl.py", "build", True),
        ("/abs/dir/job.py:build", "/abs/dir/job.py", "build", True),
    ],
)
def test_job_spec_module_and_path_forms_parse(spec, target, function, is_path):
    parsed = parse_job_spec(spec)
    assert (parsed.target, parsed.function, parsed.is_path) == (target, function, is_path)
    assert parsed.text == spec


@pytest.mark.parametrize("spec", ["examples.rate_job", ":build", "examples.rate_job:", "mod:not-a-name", "my-mod:build"])
def test_job_spec_malformed_is_a_usage_error(spec):
    with pytest.raises(UsageError, match="--job"):
        parse_job_spec(spec)


def test_job_from_a_path_is_imported_with_its_directory_on_the_path(tmp_path):
    (tmp_path / "helper_for_job.py").write_text("VALUE = 41\n")
    (tmp_path / "job.py").write_text("import helper_for_job\n\ndef build(spark):\n    return helper_for_job.VALUE + 1\n")
    func = load_job(parse_job_spec(f"{tmp_path}/job.py:build"))
    assert func(None) == 42


def test_job_module_missing_names_the_module_and_the_error():
    with pytest.raises(CatchUpRefusedError) as info:
        load_job(parse_job_spec("no_such_pkg.jobs:build"))
    refusal = info.value.refusal
    assert refusal.reason == "job-import" and refusal.exit_code == 2
    assert "cannot import job module 'no_such_pkg.jobs': ModuleNotFoundError: No module named 'no_such_pkg'" in refusal.message


def test_job_file_with_an_error_names_the_file_and_the_error(tmp_path):
    (tmp_path / "broken.py").write_text("def build(spark):\n    return (\n")
    with pytest.raises(CatchUpRefusedError) as info:
        load_job(parse_job_spec(f"{tmp_path}/broken.py:build"))
    assert info.value.refusal.exit_code == 2
    assert f"cannot import job file '{tmp_path}/broken.py': SyntaxError" in info.value.refusal.message


def test_job_file_missing_or_without_the_function_is_refused(tmp_path):
    with pytest.raises(CatchUpRefusedError, match="does not exist"):
        load_job(parse_job_spec(f"{tmp_path}/nope.py:build"))
    (tmp_path / "job.py").write_text("build = 3\n\ndef other(spark):\n    return None\n")
    with pytest.raises(CatchUpRefusedError, match="has no function 'missing'"):
        load_job(parse_job_spec(f"{tmp_path}/job.py:missing"))
    with pytest.raises(CatchUpRefusedError, match="has a non-callable 'build'"):
        load_job(parse_job_spec(f"{tmp_path}/job.py:build"))


# ------------------------------------------------------------------------------------------ durable tail


@pytest.mark.parametrize("version", sorted(ASYNC_TAIL))
def test_async_tail_is_not_durable_until_two_consecutive_batches_are_committed(version, tmp_path):
    prev, latest = ASYNC_TAIL[version]
    snap = snapshot_of(version, "async-tail", tmp_path)
    state = tail_state(snap)
    assert not state.durable
    assert state.why == f"offsets/{latest - 1} is missing (offsets/{latest} follows offsets/{prev})"
    one = tail_state(caught_up(snap, latest + 1))
    assert one.durable, one.why  # L and L+1 consecutive, both committed
    two = tail_state(caught_up(snap, latest + 1, latest + 2))
    assert two.durable and two.offsets == (latest, latest + 1, latest + 2) and two.commits == two.offsets


def test_uncommitted_newest_batch_is_not_durable(tmp_path):
    snap = snapshot_of("3.5.9", "uncommitted-tail", tmp_path)
    state = tail_state(snap)
    assert not state.durable and state.why == "commits/3 is missing"
    assert tail_state(snapshot_of("3.5.9", "stateless", tmp_path / "b")).durable


def test_commit_ahead_or_unparsable_tail_is_not_durable(tmp_path):
    ahead = tail_state(snapshot_of("3.5.9", "commit-ahead", tmp_path))
    assert not ahead.durable and "newer than offsets" in ahead.why
    snap = snapshot_of("3.5.9", "stateless", tmp_path / "b")
    truncated = simulate_changes(snap, removed=[("checkpoint", "commits/3")], added={("checkpoint", "commits/3"): b"v1\n{"})
    state = tail_state(truncated)
    assert not state.durable and state.why == "commits/3 was not read or does not parse"


def test_fresh_checkpoint_has_no_durable_tail(tmp_path):
    cp = tmp_path / "cp"
    cp.mkdir()
    (cp / "metadata").write_text('{"id":"8d6b5c9e-1111-4222-8333-444455556666"}')
    state = tail_state(load_checkpoint(str(cp)))
    assert not state.durable and state.offsets == () and state.why == "fewer than two offsets files"


# ------------------------------------------------------------------------------------------ progress


def test_only_batches_that_ran_the_sink_are_counted():
    events = [
        {"batchId": 33, "numInputRows": 5, "durationMs": {"addBatch": 1562, "triggerExecution": 2128}},
        {"batchId": 34, "numInputRows": 0, "durationMs": {"latestOffset": 7, "triggerExecution": 8}},  # no-data heartbeat
        {"batchId": 34, "numInputRows": 5, "durationMs": {"addBatch": 20}},
        {"batchId": 33, "numInputRows": 5, "durationMs": {"addBatch": 1562}},  # seen again in a later poll
        {"batchId": None, "durationMs": {"addBatch": 1}},
    ]
    assert executed_batches(events) == {33: 5, 34: 5}


def test_progress_objects_of_spark_4_are_read_through_their_json():
    class Progress:  # the shape of pyspark 4's StreamingQueryProgress: a ``json`` property
        json = '{"batchId": 7, "numInputRows": 5, "durationMs": {"addBatch": 3}}'

    assert executed_batches([progress_dict(Progress())]) == {7: 5}
    assert progress_dict({"batchId": 1}) == {"batchId": 1}


@pytest.mark.parametrize(
    ("ran", "wanted", "durable", "stop"),
    [(0, 2, False, False), (2, 2, False, False), (1, 2, True, False), (2, 2, True, True), (5, 2, True, True)],
)
def test_the_run_stops_only_with_enough_batches_and_a_durable_tail(ran, wanted, durable, stop):
    assert should_stop(ran, wanted, durable) is stop


def test_spark_line_of_running_versions():
    assert spark_line("3.5.9") == "3.5"
    assert spark_line("4.3.0") == "4.3"
    assert spark_line("3.4.1") is None


# ------------------------------------------------------------------------------------------ refusals


def test_live_writer_is_refused_before_anything_runs(tmp_path):
    cp = copy_scenario(FIXTURES / "spark-3.5.9" / "async-tail", tmp_path)
    (cp / "offsets" / ".33.0b6d3c2e-5a5b-4f57-9d3c-1f2e3d4c5b6a.tmp").write_text("v1\n")
    snap = load_checkpoint(str(cp))
    diag = diagnose(snap, DiagnoseOptions(mode="async", now_ms=int(time.time() * 1000)))
    refusal = pre_start_refusal(snap, diag, "async")
    assert refusal is not None and refusal.reason == "live-writer" and refusal.exit_code == 4
    assert "may be writing to" in refusal.message and "CD502" in refusal.message
    assert "stop the query" in refusal.next_step


def test_stateful_checkpoint_is_refused_for_async_but_not_for_sync(tmp_path):
    snap = snapshot_of("3.5.9", "window_agg", tmp_path)
    refusal = pre_start_refusal(snap, diagnose(snap, DiagnoseOptions(mode="async")), "async")
    assert refusal is not None and refusal.reason == "stateful" and refusal.exit_code == 4
    assert refusal.spark_message == STATEFUL_TEXT
    assert "--strategy bridge" in refusal.next_step
    assert pre_start_refusal(snap, diagnose(snap, DiagnoseOptions(mode="micro-batch")), "sync") is None


@pytest.mark.parametrize("version", sorted(ASYNC_TAIL))
def test_sync_mode_is_refused_where_a_synchronous_restart_already_fails(version, tmp_path):
    _, latest = ASYNC_TAIL[version]
    snap = snapshot_of(version, "async-tail", tmp_path)
    refusal = pre_start_refusal(snap, diagnose(snap, DiagnoseOptions(mode="micro-batch")), "sync")
    assert refusal is not None and refusal.reason == "restart-fails"
    assert refusal.spark_message == f"batch {latest - 1} doesn't exist"
    assert "default async mode" in refusal.next_step
    assert pre_start_refusal(snap, diagnose(snap, DiagnoseOptions(mode="async")), "async") is None


# Texts as Spark raised them (pyspark str() of the captured exception), 3.5.9 and 4.3.0.
SINK_35 = "Sink FileSink[/tmp/out] does not support async progress tracking"
SINK_43 = "Sink FileSink[file:/tmp/out] does not support async progress tracking"
FOREACH_BATCH = "Sink ForeachBatchSink does not support async progress tracking"
STATEFUL_RUN = (
    "[STREAM_FAILED] Query [id = 1f9fbb59-2c6d-4410-a596-d28fab6c8f0f, runId = c9d67981-8565-475b-a86e-96ba43ae0afc] "
    "terminated with exception: Stateful streaming queries does not support async progress tracking at this moment.\n"
    "=== Streaming Query ===\nIdentifier: [id = 1f9fbb59]\nCurrent State: ACTIVE"
)


@pytest.mark.parametrize("text", [SINK_35, SINK_43, FOREACH_BATCH])
def test_unsupported_sink_is_reported_with_sparks_message(text):
    refusal = refusal_for_spark_error(text, "/cp", at_start=True, spark_version="4.3.0")
    assert refusal.reason == "sink-unsupported" and refusal.exit_code == 4
    assert refusal.spark_message == text
    assert refusal.message.endswith(text)
    assert "checkpoint-doctor plan /cp --mode micro-batch --strategy bridge" in refusal.next_step


def test_stateful_failure_while_running_is_reported_verbatim():
    refusal = refusal_for_spark_error(STATEFUL_RUN, "/cp", at_start=False, spark_version="3.5.9")
    assert refusal.reason == "stateful"
    assert refusal.message == f"Spark 3.5.9 refused the job: {STATEFUL_TEXT}"
    assert "bridge" in refusal.next_step


def test_other_spark_failures_keep_the_first_line_without_the_query_dump():
    text = (
        "[STREAM_FAILED] Query [id = a, runId = b] terminated with exception: batch 30 doesn't exist SQLSTATE: XXKST\n"
        "=== Streaming Query ===\nIdentifier: [id = a]"
    )
    assert spark_message_of(text) == "batch 30 doesn't exist SQLSTATE: XXKST"
    refusal = refusal_for_spark_error(text, "/cp", at_start=False, spark_version="4.3.0")
    assert refusal.reason == "spark-failed"
    assert refusal.message == "the query failed while running on Spark 4.3.0: batch 30 doesn't exist SQLSTATE: XXKST"


def test_a_failed_run_says_what_it_left_in_the_logs(tmp_path):
    refusal = refusal_for_spark_error(STATEFUL_RUN, "/cp", at_start=False, spark_version="3.5.9")
    left = with_tail(refusal, tail_state(snapshot_of("3.5.9", "uncommitted-tail", tmp_path)))
    assert left.message == f"{refusal.message} (the checkpoint now has offsets 1, 2, 3; commits 0, 1, 2)"
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "metadata").write_text('{"id":"8d6b5c9e-1111-4222-8333-444455556666"}')
    assert with_tail(refusal, tail_state(load_checkpoint(str(empty)))) == refusal


def test_interruptions_of_our_own_stop_are_recognised():
    assert is_stop_artifact("java.util.concurrent.RejectedExecutionException: Producer interrupted")
    assert is_stop_artifact("Caused by: java.lang.InterruptedException")
    assert not is_stop_artifact(STATEFUL_RUN)


def test_no_new_data_says_the_checkpoint_is_left_as_is_and_points_to_the_bridge(tmp_path):
    snap = snapshot_of("3.5.9", "async-tail", tmp_path)
    tail = tail_state(snap)
    none = timeout_refusal(snap.root, "async", 2, [], 10, tail)
    assert none.reason == "no-new-data" and none.exit_code == 4
    assert none.message == (
        "no new data within 10 s: no batch ran; the query was stopped and the checkpoint is as the last durable "
        "batch left it (offsets 11, 21, 32; commits 11, 21, 32)"
    )
    assert "the bridge needs no new data" in none.next_step and "--strategy bridge" in none.next_step
    some = timeout_refusal(snap.root, "async", 2, [33], 10, tail)
    assert some.message.startswith("only 1 of 2 batch(es) ran within 10 s (no new data after batch 33)")
    assert timeout_refusal(snap.root, "sync", 2, [], 10, tail).reason == "timeout"


# ------------------------------------------------------------------------------------------ verdict


@pytest.mark.parametrize("version", sorted(ASYNC_TAIL))
def test_verdict_renders_the_run_the_tail_and_the_synchronous_restart(version, tmp_path):
    _, latest = ASYNC_TAIL[version]
    snap = snapshot_of(version, "async-tail", tmp_path)
    line = spark_line(version)
    before = diagnose(snap, DiagnoseOptions(spark=line, mode="micro-batch"))
    after_snap = caught_up(snap, latest + 1, latest + 2)
    after = diagnose(after_snap, DiagnoseOptions(spark=line, mode="micro-batch"))
    report = CatchUpReport(
        checkpoint=snap.root, job="examples.rate_job:build", mode="async", spark_version=version, batches_wanted=2,
        batch_ids=(latest + 1, latest + 2), rows=10, elapsed_s=3.25, timed_out=False, before=before,
        tail=tail_state(after_snap), after=after,
    )
    data = json.loads(json.dumps(report.to_dict()))
    assert data["before"]["outcome"] == "fails" and data["diagnosis"]["restart"]["outcome"] == "starts"
    assert data["exit_code"] == after.exit_code == report.exit_code
    assert data["verdict"] == f"STARTS: starts new batch {latest + 3}"
    text = render_catch_up(data)
    assert f"Batches run   2 of 2 wanted: {latest + 1}..{latest + 2}" in text
    assert f"Durable tail  yes: offsets/{latest + 1}, offsets/{latest + 2} and their commits are on disk" in text
    assert f"Before        synchronous restart FAILS before running any batch: batch {latest - 1} doesn't exist" in text
    assert f"STARTS: starts new batch {latest + 3}" in text
    assert "restart the job without asyncProgressTrackingEnabled" in text


def test_next_command_after_a_failing_verdict_is_a_plan(tmp_path):
    snap = snapshot_of("3.5.9", "async-tail", tmp_path)
    failing = diagnose(snap, DiagnoseOptions(mode="micro-batch"))
    assert next_command(snap.root, failing) == f"checkpoint-doctor plan {snap.root} --mode micro-batch"


# ------------------------------------------------------------------------------------------ CLI


def test_without_pyspark_catch_up_names_the_spark_extra(tmp_path, capsys):
    assert importlib.util.find_spec("pyspark") is None, "the dev venv must not have pyspark for this test"
    cp = copy_scenario(FIXTURES / "spark-3.5.9" / "async-tail", tmp_path)
    code = main(["catch-up", str(cp), "--job", "examples.rate_job:build"])
    err = capsys.readouterr().err
    assert code == 2
    assert "catch-up needs the 'pyspark' package, which is not installed" in err
    assert "pip install 'checkpoint-doctor[spark]'" in err
    code = main(["catch-up", str(cp), "--job", "examples.rate_job:build", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 2 and doc["error"]["type"] == "MissingDependencyError"


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--job", "examples.rate_job"], "is not MODULE:FUNCTION or PATH.py:FUNCTION"),
        (["--job", "examples.rate_job:build", "--conf", "spark.master"], "--conf 'spark.master' is not KEY=VALUE"),
        (["--job", "examples.rate_job:build", "--batches", "0"], "Invalid value for '--batches'"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args, text, tmp_path, capsys):
    cp = copy_scenario(FIXTURES / "spark-3.5.9" / "async-tail", tmp_path)
    code = main(["catch-up", str(cp), *args])
    err = capsys.readouterr().err
    assert code == 2 and text in err
    assert "Traceback" not in err


def test_plan_records_the_catch_up_command_and_apply_tells_the_operator_to_run_it(tmp_path):
    cp = copy_scenario(FIXTURES / "spark-3.5.9" / "async-tail", tmp_path)
    plan_file = tmp_path / "plan.json"
    runner = CliRunner()
    result = runner.invoke(
        cli,
        ["plan", str(cp), "--mode", "micro-batch", "--strategy", "catch-up", "--job", "examples.rate_job:build", "-o", str(plan_file)],
    )
    assert result.exit_code == 0, result.output
    command = f"checkpoint-doctor catch-up {cp} --job examples.rate_job:build --batches 2"
    steps = json.loads(plan_file.read_text())["steps"]
    assert [(s["kind"], s["command"]) for s in steps] == [("run", command)]
    applied = runner.invoke(cli, ["apply", str(plan_file), "--yes", "--backup-dir", str(tmp_path / "backup")])
    assert applied.exit_code == 0, applied.output
    assert f"Run this yourself next (the plan's catch-up step):\n  {command}" in applied.output
    # The command the plan records is one catch-up accepts (it stops at the missing pyspark here).
    args = command.split()[1:]
    assert main(args) == 2
    assert sorted(os.listdir(cp / "offsets")) == sorted(os.listdir(FIXTURES / "spark-3.5.9" / "async-tail" / "checkpoint" / "offsets"))
