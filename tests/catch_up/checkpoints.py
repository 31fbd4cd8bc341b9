"""Checkpoints and run facts for the catch-up tests: copies of real fixtures, and the snapshot a
catch-up run leaves (offsets and commits written for new batches, as Spark writes them)."""

from __future__ import annotations

from pathlib import Path

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.execution.catch_up.decisions import next_command, spark_line, tail_state
from checkpoint_doctor.execution.catch_up.model import CatchUpOptions, CatchUpReport, RunFacts
from checkpoint_doctor.reading.assembly import simulate_changes
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from tests.scenarios import FIXTURES, copy_scenario

#: (newest durable offsets below L, L) of the ``async-tail`` fixture, per Spark version.
ASYNC_TAIL = {"3.5.9": (21, 32), "4.3.0": (20, 31)}
JOB = "examples.rate_job:build"


def snapshot_of(version: str, scenario: str, tmp_path: Path) -> CheckpointSnapshot:
    return load_checkpoint(str(copy_scenario(FIXTURES / f"spark-{version}" / scenario, tmp_path)))


def fresh_checkpoint(path: Path) -> CheckpointSnapshot:
    """A checkpoint with only ``metadata``: a query that has not run a batch yet."""
    path.mkdir(parents=True)
    (path / "metadata").write_text('{"id":"8d6b5c9e-1111-4222-8333-444455556666"}')
    return load_checkpoint(str(path))


def caught_up(snapshot: CheckpointSnapshot, *batch_ids: int) -> CheckpointSnapshot:
    """The async-tail snapshot after the runner's batches: offsets and commits written for each id."""
    latest = snapshot.offsets.latest_id
    offsets = snapshot.raw[f"offsets/{latest}"]
    commit = snapshot.raw[f"commits/{snapshot.commits.latest_id}"]
    added = {}
    for b in batch_ids:
        added[("checkpoint", f"offsets/{b}")] = offsets
        added[("checkpoint", f"commits/{b}")] = commit
    return simulate_changes(snapshot, added=added)


def facts_for(snapshot: CheckpointSnapshot, version: str = "3.5.9", **options) -> RunFacts:
    """The facts of a run on ``snapshot`` with PySpark ``version`` (options: CatchUpOptions fields)."""
    opts = CatchUpOptions(snapshot.root, options.pop("job", JOB), **options)
    before = diagnose(
        snapshot, DiagnoseOptions(spark=spark_line(version), mode="micro-batch", live_window_s=0)
    )
    return RunFacts(opts, snapshot.root, version, before)


def report_for(facts: RunFacts, after: CheckpointSnapshot, *batch_ids: int, timed_out: bool) -> CatchUpReport:
    """The report of a run that ran ``batch_ids`` (5 rows each) and left ``after``."""
    diagnosis = diagnose(after, DiagnoseOptions(spark=facts.line, mode="micro-batch", live_window_s=0))
    return CatchUpReport(
        checkpoint=facts.checkpoint,
        job=facts.options.job,
        mode=facts.options.mode,
        spark_version=facts.spark_version,
        batches_wanted=facts.options.batches,
        batch_ids=batch_ids,
        rows=5 * len(batch_ids),
        elapsed_s=3.25,
        timed_out=timed_out,
        before=facts.before,
        tail=tail_state(after),
        after=diagnosis,
        next_command=next_command(facts.checkpoint, diagnosis),
    )
