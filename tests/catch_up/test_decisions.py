"""The catch-up run's decisions, without Spark: the durable tail, batch counting, the writer's
settings, refusals (with Spark's texts as recorded from 3.5.9 and 4.3.0), the verdict and its next
step. The stop rule is in test_watch.py, the job in test_job.py, the Spark runs in
tests/spark/test_catch_up.py.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest

from checkpoint_doctor.cli.catch_up import render_catch_up
from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.execution.catch_up.decisions import (
    STATEFUL_TEXT,
    TRIGGER_INTERVAL,
    executed_batches,
    interruption_note,
    is_stop_artifact,
    next_command,
    pre_start_refusal,
    query_settings,
    refusal_for_spark_error,
    spark_line,
    spark_message_of,
    tail_state,
    timeout_refusal,
    with_tail,
)
from checkpoint_doctor.exit_codes import ExitCode
from checkpoint_doctor.reading.assembly import simulate_changes
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.spark import progress_dict
from tests.catch_up.checkpoints import (
    ASYNC_TAIL,
    JOB,
    caught_up,
    facts_for,
    fresh_checkpoint,
    report_for,
    snapshot_of,
)
from tests.scenarios import FIXTURES, copy_scenario

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
    truncated = simulate_changes(
        snap, removed=[("checkpoint", "commits/3")], added={("checkpoint", "commits/3"): b"v1\n{"}
    )
    state = tail_state(truncated)
    assert not state.durable and state.why == "commits/3 was not read or does not parse"
    torn = simulate_changes(
        snap, removed=[("checkpoint", "offsets/2")], added={("checkpoint", "offsets/2"): b"v1\n{"}
    )
    state = tail_state(torn)
    assert not state.durable and state.why == "offsets/2 was not read or does not parse"


def test_fresh_checkpoint_has_no_durable_tail(tmp_path):
    state = tail_state(fresh_checkpoint(tmp_path / "cp"))
    assert not state.durable and state.offsets == () and state.why == "fewer than two offsets files"


# ------------------------------------------------------------------------------------------ the query


def test_async_runs_get_interval_0_and_a_pause_between_triggers_sync_runs_available_now():
    run = query_settings("async", "/data/cp")
    assert run.options == (
        ("checkpointLocation", "/data/cp"),
        ("asyncProgressTrackingEnabled", "true"),
        ("asyncProgressTrackingCheckpointIntervalMs", "0"),
    )
    assert run.trigger == {"processingTime": TRIGGER_INTERVAL} and TRIGGER_INTERVAL != "0 seconds"
    sync = query_settings("sync", "s3://bucket/cp")
    assert sync.options == (("checkpointLocation", "s3://bucket/cp"),)
    assert sync.trigger == {"availableNow": True}


def test_only_batches_that_ran_the_sink_are_counted():
    events = [
        {"batchId": 33, "numInputRows": 5, "durationMs": {"addBatch": 1562, "triggerExecution": 2128}},
        {
            "batchId": 34,
            "numInputRows": 0,
            "durationMs": {"latestOffset": 7, "triggerExecution": 8},
        },  # no-data heartbeat
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
    assert progress_dict(object()) == {}


def test_spark_line_of_running_versions():
    assert spark_line("3.5.9") == "3.5"
    assert spark_line("4.3.0") == "4.3"
    assert spark_line("3.4.1") is None


# ------------------------------------------------------------------------------------------ before the run


def test_live_writer_is_refused_before_anything_runs(tmp_path):
    cp = copy_scenario(FIXTURES / "spark-3.5.9" / "async-tail", tmp_path)
    (cp / "offsets" / ".33.0b6d3c2e-5a5b-4f57-9d3c-1f2e3d4c5b6a.tmp").write_text("v1\n")
    snap = load_checkpoint(str(cp))
    diag = diagnose(snap, DiagnoseOptions(mode="async", now_ms=int(time.time() * 1000)))
    refusal = pre_start_refusal(snap, diag, facts_for(snap))
    assert refusal is not None and refusal.reason == "live-writer" and refusal.exit_code == ExitCode.REFUSED
    assert "may be writing to" in refusal.message and "CD502" in refusal.message
    assert "stop the query" in refusal.next_step


def test_stateful_checkpoint_is_refused_for_async_but_not_for_sync(tmp_path):
    snap = snapshot_of("3.5.9", "window_agg", tmp_path)
    refusal = pre_start_refusal(snap, diagnose(snap, DiagnoseOptions(mode="async")), facts_for(snap))
    assert refusal is not None and refusal.reason == "stateful" and refusal.exit_code == ExitCode.REFUSED
    assert refusal.spark_message == STATEFUL_TEXT and refusal.message.endswith(STATEFUL_TEXT)
    # A stateful query never tracked progress asynchronously: its synchronous restart starts, and
    # a bridge would have nothing to bridge.
    assert refusal.next_step.startswith("nothing to catch up: a synchronous restart already starts (STARTS ")
    assert "--strategy bridge" not in refusal.next_step
    sync = facts_for(snap, mode="sync")
    assert pre_start_refusal(snap, diagnose(snap, DiagnoseOptions(mode="micro-batch")), sync) is None


@pytest.mark.parametrize("version", sorted(ASYNC_TAIL))
def test_sync_mode_is_refused_where_a_synchronous_restart_already_fails(version, tmp_path):
    _, latest = ASYNC_TAIL[version]
    snap = snapshot_of(version, "async-tail", tmp_path)
    facts = facts_for(snap, version, mode="sync", master="local[2]")
    refusal = pre_start_refusal(snap, diagnose(snap, DiagnoseOptions(mode="micro-batch")), facts)
    assert refusal is not None and refusal.reason == "restart-fails"
    assert refusal.spark_message == f"batch {latest - 1} doesn't exist"
    line = spark_line(version)
    assert refusal.next_step == (
        f"run catch-up in the default async mode: checkpoint-doctor catch-up {snap.root} --job {JOB} "
        "--master 'local[2]'; or bridge the gap (the bridge needs neither the job nor new data): "
        f"checkpoint-doctor plan {snap.root} --mode micro-batch --spark {line} --strategy bridge -o plan.json"
        " && checkpoint-doctor apply plan.json"
    )
    async_facts = facts_for(snap, version)
    assert pre_start_refusal(snap, diagnose(snap, DiagnoseOptions(mode="async")), async_facts) is None


def test_an_async_restart_that_fails_is_refused_with_a_plan_for_it(tmp_path):
    snap = snapshot_of("3.5.9", "async-tail", tmp_path)
    failing = simulate_changes(
        snap, removed=[("checkpoint", "offsets/32")], added={("checkpoint", "offsets/32"): b"v1\n{"}
    )
    restart = diagnose(failing, DiagnoseOptions(spark="3.5", mode="async"))
    assert not restart.prediction.starts
    refusal = pre_start_refusal(failing, restart, facts_for(failing))
    assert refusal is not None and refusal.reason == "restart-fails"
    assert refusal.message.startswith(f"an async restart of {snap.root} fails before any batch runs (FAILS")
    assert refusal.next_step == f"checkpoint-doctor plan {snap.root} --mode async --spark 3.5"


# ------------------------------------------------------------------------------------------ Spark's refusals


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
def test_unsupported_sink_is_reported_with_sparks_message(text, tmp_path):
    snap = snapshot_of("4.3.0", "async-tail", tmp_path)
    refusal = refusal_for_spark_error(text, facts_for(snap, "4.3.0"), at_start=True)
    assert refusal.reason == "sink-unsupported" and refusal.exit_code == ExitCode.ERRORS
    assert refusal.spark_message == text
    assert refusal.message == f"Spark 4.3.0 refused the job's sink for async progress tracking: {text}"
    assert (
        f"checkpoint-doctor plan {snap.root} --mode micro-batch --spark 4.3 --strategy bridge"
        in refusal.next_step
    )


def test_a_refused_sink_on_a_checkpoint_that_restarts_needs_nothing(tmp_path):
    snap = snapshot_of("3.5.9", "stateless", tmp_path)
    refusal = refusal_for_spark_error(SINK_35, facts_for(snap), at_start=True)
    assert refusal.next_step == (
        "nothing to catch up: a synchronous restart already starts (STARTS new batch 4); "
        "restart the job without asyncProgressTrackingEnabled"
    )


def test_stateful_failure_while_running_is_reported_verbatim(tmp_path):
    facts = facts_for(snapshot_of("3.5.9", "async-tail", tmp_path))
    refusal = refusal_for_spark_error(STATEFUL_RUN, facts, at_start=False)
    assert refusal.reason == "stateful"
    assert refusal.message == f"Spark 3.5.9 refused the job: {STATEFUL_TEXT}"
    assert "--strategy bridge" in refusal.next_step


def test_other_spark_failures_keep_the_first_line_without_the_query_dump(tmp_path):
    text = (
        "[STREAM_FAILED] Query [id = a, runId = b] terminated with exception: batch 30 doesn't exist SQLSTATE: XXKST\n"
        "=== Streaming Query ===\nIdentifier: [id = a]"
    )
    assert spark_message_of(text) == "batch 30 doesn't exist SQLSTATE: XXKST"
    cp = copy_scenario(FIXTURES / "spark-4.3.0" / "async-tail", tmp_path / "my checkpoints")
    facts = facts_for(load_checkpoint(str(cp)), "4.3.0")
    refusal = refusal_for_spark_error(text, facts, at_start=False)
    assert refusal.reason == "spark-failed"
    assert (
        refusal.message
        == "the query failed while running on Spark 4.3.0: batch 30 doesn't exist SQLSTATE: XXKST"
    )
    assert refusal.next_step == (
        f"checkpoint-doctor diagnose '{cp}' --mode async --spark 4.3; fix the job or the checkpoint, then run catch-up again"
    )


def test_a_failed_run_says_what_it_left_in_the_logs(tmp_path):
    facts = facts_for(snapshot_of("3.5.9", "async-tail", tmp_path / "a"))
    refusal = refusal_for_spark_error(STATEFUL_RUN, facts, at_start=False)
    left = with_tail(refusal, tail_state(snapshot_of("3.5.9", "uncommitted-tail", tmp_path)))
    assert left.message == f"{refusal.message} (the checkpoint now has offsets 1, 2, 3; commits 0, 1, 2)"
    assert with_tail(refusal, tail_state(fresh_checkpoint(tmp_path / "empty"))) == refusal


def test_interruptions_of_our_own_stop_are_recognised():
    assert is_stop_artifact("java.util.concurrent.RejectedExecutionException: Producer interrupted")
    assert is_stop_artifact("Caused by: java.lang.InterruptedException")
    assert not is_stop_artifact(STATEFUL_RUN)
    assert interruption_note(
        "[STREAM_FAILED] Query [id = a, runId = b] terminated with exception: Producer interrupted\n\tat x.y(Z.java:1)"
    ) == ("Spark reported an interruption when the query was stopped, ignored: Producer interrupted")


# ------------------------------------------------------------------------------------------ timeouts


def test_no_new_data_says_the_checkpoint_is_left_as_is_and_points_to_the_bridge(tmp_path):
    snap = snapshot_of("3.5.9", "async-tail", tmp_path)
    facts = facts_for(snap, timeout_s=10)
    none = timeout_refusal(facts, report_for(facts, snap, timed_out=True))
    assert none.reason == "no-new-data" and none.exit_code == ExitCode.ERRORS
    assert none.message == (
        "no new data within 10 s: no batch ran; the query was stopped and the checkpoint is as the last durable "
        "batch left it (offsets 11, 21, 32; commits 11, 21, 32)"
    )
    assert none.next_step == (
        "bridge the gap (the bridge needs neither the job nor new data): "
        f"checkpoint-doctor plan {snap.root} --mode micro-batch --spark 3.5 --strategy bridge -o plan.json"
        " && checkpoint-doctor apply plan.json"
    )


def test_a_tail_made_durable_by_fewer_batches_than_asked_says_to_restart(tmp_path):
    """--batches 3, one batch ran before the data stopped: the tail is durable all the same."""
    snap = snapshot_of("3.5.9", "async-tail", tmp_path)
    facts = facts_for(snap, timeout_s=10, batches=3)
    after = caught_up(snap, 33, 34)
    some = timeout_refusal(facts, report_for(facts, after, 33, 34, timed_out=True))
    assert some.message.startswith("only 2 of 3 batch(es) ran within 10 s (no new data after batch 34)")
    assert some.next_step.startswith("restart the job without asyncProgressTrackingEnabled")
    assert f"checkpoint-doctor diagnose {snap.root} --mode micro-batch --spark 3.5" in some.next_step


def test_enough_batches_without_a_durable_tail_point_to_the_bridge(tmp_path):
    snap = snapshot_of("3.5.9", "async-tail", tmp_path)
    facts = facts_for(snap, timeout_s=10)
    after = caught_up(snap, 34)  # as if offsets/33 were not visible yet
    refusal = timeout_refusal(facts, report_for(facts, after, 33, 34, timed_out=True))
    assert refusal.message.startswith(
        "2 batch(es) ran within 10 s but the tail is not durable (offsets/33 is missing"
    )
    assert "--strategy bridge" in refusal.next_step


def test_a_sync_run_that_timed_out_is_run_again_with_more_time(tmp_path):
    snap = snapshot_of("3.5.9", "uncommitted-tail", tmp_path)
    facts = facts_for(snap, mode="sync", timeout_s=60)
    refusal = timeout_refusal(facts, report_for(facts, snap, timed_out=True))
    assert refusal.reason == "timeout"
    assert refusal.message.startswith("the query did not finish within 60 s (0 batch(es) ran)")
    assert refusal.next_step == (
        "run it again with a longer timeout: "
        f"checkpoint-doctor catch-up {snap.root} --job {JOB} --mode sync --timeout 240"
    )


# ------------------------------------------------------------------------------------------ verdict


@pytest.mark.parametrize("version", sorted(ASYNC_TAIL))
def test_verdict_renders_the_run_the_tail_and_the_synchronous_restart(version, tmp_path):
    _, latest = ASYNC_TAIL[version]
    snap = snapshot_of(version, "async-tail", tmp_path)
    facts = facts_for(snap, version)
    report = report_for(
        facts, caught_up(snap, latest + 1, latest + 2), latest + 1, latest + 2, timed_out=False
    )
    data = json.loads(json.dumps(report.to_dict()))
    assert data["before"]["outcome"] == "fails" and data["diagnosis"]["restart"]["outcome"] == "starts"
    assert data["exit_code"] == report.after.exit_code == report.exit_code
    assert data["verdict"] == f"STARTS new batch {latest + 3}"
    text = render_catch_up(report)
    assert f"Batches run   2 of 2 wanted: {latest + 1}..{latest + 2}" in text
    assert (
        f"Durable tail  yes: offsets/{latest + 1}, offsets/{latest + 2} and their commits are on disk" in text
    )
    assert (
        f"Before        synchronous restart FAILS before running any batch: batch {latest - 1} doesn't exist"
        in text
    )
    assert f"STARTS new batch {latest + 3}" in text
    assert "restart the job without asyncProgressTrackingEnabled" in text


def test_next_command_after_a_failing_verdict_is_a_plan_for_the_running_line(tmp_path):
    snap = snapshot_of("3.5.9", "async-tail", tmp_path)
    failing = diagnose(snap, DiagnoseOptions(spark="3.5", mode="micro-batch"))
    assert (
        next_command(snap.root, failing)
        == f"checkpoint-doctor plan {snap.root} --mode micro-batch --spark 3.5"
    )
    spaced = replace(failing, checkpoint="/data/my checkpoints/etl")
    assert next_command("/data/my checkpoints/etl", spaced) == (
        "checkpoint-doctor plan '/data/my checkpoints/etl' --mode micro-batch --spark 3.5"
    )


def test_no_new_data_on_a_checkpoint_that_restarts_already_needs_nothing(tmp_path):
    snap = fresh_checkpoint(tmp_path / "cp")
    facts = facts_for(snap, timeout_s=6)
    refusal = timeout_refusal(facts, report_for(facts, snap, timed_out=True))
    assert refusal.message == (
        "no new data within 6 s: no batch ran; the query was stopped and the checkpoint is as the last "
        "durable batch left it"
    )
    assert refusal.next_step == (
        "nothing to catch up: a synchronous restart already starts (STARTS new batch 0); "
        "restart the job without asyncProgressTrackingEnabled"
    )
