"""The catch-up run's stop rule (:class:`Watch`), poll by poll, without Spark: what the running
query reports goes in (progress events, durability checks, ``isTriggerActive``), the phase and the
outcome come out. Elapsed times are plain numbers."""

from __future__ import annotations

from checkpoint_doctor.execution.catch_up.decisions import (
    DURABLE_CHECK_S,
    ENDED,
    RUNNING,
    STOP,
    STOP_IDLE_GRACE_S,
    STOPPING,
    TIMED_OUT,
    WAITING,
    Watch,
)


def ran(*batch_ids: int, rows: int = 5) -> list[dict]:
    """Progress events of batches that ran the sink."""
    return [{"batchId": b, "numInputRows": rows, "durationMs": {"addBatch": 10}} for b in batch_ids]


def heartbeat(batch_id: int) -> dict:
    """A "no new data" progress event: it carries the next batch's id and no addBatch."""
    return {"batchId": batch_id, "numInputRows": 0, "durationMs": {"triggerExecution": 1}}


def test_an_async_run_stops_between_triggers_once_enough_batches_are_durable():
    w = Watch("async", wanted=2, timeout_s=300)
    w = w.seen([*ran(33), heartbeat(34)])
    assert w.batch_ids == (33,) and not w.wants_durability_check(1.0)  # one batch: not yet
    w = w.decide(1.0, trigger_active=False)
    assert (w.phase, w.outcome) == (RUNNING, None)

    w = w.seen(ran(33, 34))  # recentProgress repeats what was seen: counted once
    assert w.batch_ids == (33, 34) and w.rows == 10
    assert w.wants_durability_check(2.0)
    w = w.checked(2.0, durable=False)
    w = w.decide(2.0, trigger_active=True)
    assert (w.phase, w.outcome) == (WAITING, None)

    w = w.checked(2.6, durable=True).decide(2.6, trigger_active=True)  # a batch is running: wait
    assert (w.phase, w.outcome, w.ready_since) == (STOPPING, None, 2.6)
    assert not w.wants_durability_check(2.8)  # durable stays durable
    w = w.decide(3.0, trigger_active=False)
    assert (w.outcome, w.timed_out, w.notes) == (STOP, False, ())


def test_durability_is_checked_on_each_new_batch_and_otherwise_every_half_second():
    w = Watch("async", wanted=2, timeout_s=300).seen(ran(1, 2)).checked(5.0, durable=False)
    assert not w.wants_durability_check(5.0 + DURABLE_CHECK_S / 2)
    assert w.wants_durability_check(5.0 + DURABLE_CHECK_S)
    assert w.seen(ran(3)).wants_durability_check(5.1)


def test_a_query_that_never_pauses_is_stopped_after_the_grace_period_with_a_note():
    w = Watch("async", wanted=2, timeout_s=300).seen(ran(1, 2)).checked(10.0, durable=True)
    w = w.decide(10.0, trigger_active=True)
    assert w.outcome is None
    w = w.decide(10.0 + STOP_IDLE_GRACE_S - 0.1, trigger_active=True)
    assert w.outcome is None
    w = w.decide(10.0 + STOP_IDLE_GRACE_S, trigger_active=True)
    assert w.outcome == STOP and not w.timed_out
    assert w.notes == (f"stopped during a batch: no pause between triggers within {STOP_IDLE_GRACE_S:g} s",)


def test_the_timeout_with_a_durable_tail_is_a_stop_not_a_timeout():
    w = Watch("async", wanted=2, timeout_s=20).seen(ran(1, 2)).checked(19.0, durable=True)
    w = w.decide(20.0, trigger_active=True)
    assert w.outcome == STOP and not w.timed_out
    assert w.notes == ("stopped during a batch: --timeout 20 s came before a pause between triggers",)


def test_too_few_batches_or_no_durable_tail_by_the_timeout_is_a_timeout():
    few = Watch("async", wanted=2, timeout_s=20).seen(ran(1)).decide(20.0, trigger_active=False)
    assert few.outcome == TIMED_OUT and few.timed_out and few.phase == RUNNING
    stuck = Watch("async", wanted=2, timeout_s=20).seen(ran(1, 2)).checked(19.9, durable=False)
    stuck = stuck.decide(20.0, trigger_active=False)
    assert stuck.outcome == TIMED_OUT and stuck.phase == WAITING


def test_a_sync_run_ends_by_itself_and_never_checks_durability():
    w = Watch("sync", wanted=2, timeout_s=300).seen(ran(3, 4, 5))
    assert not w.wants_durability_check(1.0) and not w.ready
    assert w.decide(1.0, trigger_active=False).outcome is None  # sync never stops the query itself
    ended = w.ended()
    assert ended.outcome == ENDED and ended.final_notes() == ()
    assert Watch("sync", 2, 300).decide(300.0, trigger_active=True).outcome == TIMED_OUT


def test_a_sync_run_without_batches_says_why():
    assert Watch("sync", wanted=2, timeout_s=300).ended().final_notes() == (
        "no batch ran: nothing was uncommitted and the sources had no new data",
    )
    assert Watch("sync", 2, 300).decide(300.0, trigger_active=False).final_notes() == ()


def test_the_status_line_gets_the_batches_rows_and_newest_batch():
    w = Watch("async", wanted=2, timeout_s=300).seen(ran(33, 34, rows=7))
    p = w.progress(4.5)
    assert (p.phase, p.batches, p.wanted, p.rows, p.elapsed_s, p.batch_id) == (RUNNING, 2, 2, 14, 4.5, 34)
    assert Watch("async", 2, 300).progress(0.0, phase="done").batch_id is None
