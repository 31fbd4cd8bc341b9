"""Live restarts sampled per run, all of them on request.

A live test proves that what real Spark did, recorded in the fixtures and replayed by the default
suite without a JVM, is still what Spark does. Restarting every recorded case each run costs minutes
per Spark line, so the default run restarts a deterministic sample (the same cases every run: one per
kind, e.g. per plan strategy) and the whole set is opt-in:

- ``CHECKPOINT_DOCTOR_ALL_LIVE=1``: every live test restarts every case (its sample is everything),
  and the tests marked ``live_all`` run;
- ``-m live_all``: the tests marked ``live_all`` (each restarts every case of its kind).

Without either, tests marked ``live_all`` are deselected (tests/conftest.py), not skipped: the run's
summary counts them as deselected.

Rotating samples (:data:`ROTATIONS`): the live tests of one surface that each restart a different
story (Delta's options, its schema log, its txn, its plans...) form a group of which a default run
restarts one; the others are ``live_all`` for that run (tests/conftest.py). Which one is the run's
rotation (:func:`rotation`): ``CHECKPOINT_DOCTOR_LIVE_ROTATION=<n>`` when set, else a number read from
the commit checked out, so the same commit restarts the same tests on every machine and the next
commits restart the others in turn (never the clock). Each surface keeps a live test outside any
group too (Kafka's and Delta's ``test_live_restart.py``), and every test of a group keeps its
replayed, no-JVM counterpart in the default run. The collection summary names the run's choices.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

T = TypeVar("T")

ALL_LIVE_ENV = "CHECKPOINT_DOCTOR_ALL_LIVE"
ROTATION_ENV = "CHECKPOINT_DOCTOR_LIVE_ROTATION"

#: Groups of live tests (node ids without parameters) of which a default run restarts one, in turn.
#: Their replayed counterparts, run every time, are named beside each.
ROTATIONS: dict[str, tuple[str, ...]] = {
    "delta": (
        # tests/delta/test_delta_options.py (the recorded restarts of fixtures/delta/spark-3.5.9)
        "tests/delta/test_delta_options_live.py::test_the_jobs_options_decide_the_delta_verdicts",
        # tests/delta/test_delta_plans.py, test_delta_repair_records.py (fixtures/repairs)
        "tests/delta/test_delta_plans_live.py::test_plan_apply_as_printed_then_spark_resumes_at_the_earliest_version",
        # the other tests of tests/delta/test_foreach_txn.py (fixtures/delta-txn, every Delta line)
        "tests/delta/test_foreach_txn.py::test_live_a_rolled_back_foreach_batch_is_skipped_as_predicted",
        # tests/delta/test_schema_changes.py (fixtures/delta-schema)
        "tests/delta/test_schema_changes_live.py::test_plan_names_schema_tracking_and_spark_reads_past_the_rename",
    ),
    "kafka": (
        # the other tests of tests/kafka/test_kafka_loss.py (fixtures/kafka-loss)
        "tests/kafka/test_kafka_loss.py::test_live_an_uncommitted_batch_over_deleted_records_is_planned_applied_and_rerun_by_spark",
        # tests/kafka/test_kafka_plans.py, test_kafka_repair_records.py (fixtures/repairs)
        "tests/kafka/test_kafka_plans_live.py::test_plan_apply_as_printed_then_spark_restarts_from_the_moved_positions",
        # tests/kafka/test_realtime_restarts.py (fixtures/kafka-realtime)
        "tests/kafka/test_realtime_live.py::test_a_real_time_checkpoint_is_detected_and_its_tail_restart_predicted",
        # tests/kafka/test_subscription_shapes.py (fixtures/kafka-shapes)
        "tests/kafka/test_subscription_shapes_live.py::test_a_pattern_query_planned_past_its_deleted_topic_restarts_on_spark",
    ),
    "catch-up": (
        # tests/catch_up/ (its decisions and refusals with Spark's texts as recorded from 3.5.9 and
        # 4.3.0, the stop rule, the job, the CLI) and the two no-JVM tests of test_catch_up.py
        "tests/spark/test_catch_up.py::test_catch_up_makes_a_synchronous_restart_start_without_skipping_data",
        "tests/spark/test_catch_up.py::test_no_new_data_within_the_timeout_stops_and_says_what_is_left",
        "tests/spark/test_catch_up.py::test_refusals_from_the_job_and_from_spark",
        "tests/spark/test_catch_up.py::test_sync_mode_reruns_the_uncommitted_batch_through_the_job",
    ),
    "tws": (
        # tests/tws/test_recorded_restarts.py, test_job_changes.py (fixtures/tws, every line)
        "tests/tws/test_live_restart.py::test_a_changed_processor_restarts_as_predicted",
        # tests/tws/test_moved_repair.py
        "tests/tws/test_live_restart.py::test_a_moved_checkpoint_fails_as_predicted_and_starts_once_repaired",
    ),
}


def all_live() -> bool:
    """True when the run asks for every live restart (``CHECKPOINT_DOCTOR_ALL_LIVE=1``)."""
    return os.environ.get(ALL_LIVE_ENV, "") == "1"


def one_per(cases: Iterable[T], kind: Callable[[T], Hashable]) -> list[T]:
    """The first case of each kind, in the cases' order (a deterministic sample)."""
    seen: set[Hashable] = set()
    out = []
    for case in cases:
        k = kind(case)
        if k not in seen:
            seen.add(k)
            out.append(case)
    return out


def one_line(versions: Iterable[str], sampled: str) -> list[object]:
    """``versions`` as pytest parameters of which only ``sampled`` runs by default: the others are
    marked ``live_all`` (deselected unless asked for, as above). A file whose every test restarts
    real Spark on each line samples a different line per test, so that its default run still
    starts every line once (tests/spark/test_catch_up.py; docs/test-suite.md lists them)."""
    import pytest

    versions = list(versions)
    assert sampled in versions, (sampled, versions)
    return [pytest.param(v, marks=() if v == sampled else pytest.mark.live_all) for v in versions]


def shared_among(items: Sequence[T], line: str, lines: Sequence[str]) -> list[T]:
    """The items a default run gives ``line`` when each item needs one of ``lines``, not all: every
    ``len(lines)``-th item from the line's index on, so that every item and every line is
    restarted each run (all the items with ``CHECKPOINT_DOCTOR_ALL_LIVE=1``)."""
    if all_live():
        return list(items)
    return list(items[list(lines).index(line) :: len(lines)])


def rotation(repo: str | os.PathLike[str] | None = None) -> tuple[int, str]:
    """The run's rotation and where it comes from: ``CHECKPOINT_DOCTOR_LIVE_ROTATION`` when set (an
    integer), else the first 8 hex digits of the commit checked out in ``repo`` (``git rev-parse``),
    else 0 (not a git checkout)."""
    given = os.environ.get(ROTATION_ENV, "").strip()
    if given:
        return int(given), f"{ROTATION_ENV}={given}"
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
        return int(head[:8], 16), f"commit {head[:12]}"
    except (OSError, subprocess.SubprocessError, ValueError):
        return 0, "no git commit"


def rotated(members: Sequence[str], turn: int) -> str:
    """The member of a rotating group that run ``turn`` restarts: the ``turn``-th in name order,
    modulo their number, so ``len(members)`` consecutive turns restart each member once. It depends
    on the group alone, not on what a run collected: a run of one file samples as the whole suite."""
    ordered = sorted(members)
    assert ordered, "an empty rotation group"
    return ordered[turn % len(ordered)]


def rotated_out(turn: int) -> dict[str, str]:
    """Every grouped test a default run of rotation ``turn`` leaves to ``live_all``, with its group
    (none with ``CHECKPOINT_DOCTOR_ALL_LIVE=1``)."""
    if all_live():
        return {}
    return {
        test: group
        for group, members in ROTATIONS.items()
        for test in members
        if test != rotated(members, turn)
    }
