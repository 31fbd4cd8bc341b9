"""Every predicted ``spark-pipelines run`` equals what real SDP did (fixtures/sdp/, scripts/sdp_fixtures.py).

Each fixture holds a pipeline's storage root as the recorded run found it (after the damage) and each
table's file sink log; ``run.json`` holds what ``spark-pipelines run`` then did per flow (its final
state, its failures and Spark's error), and each table's sink log batch ids before and after. The
prediction is made from the storage root and the sink logs alone, without a JVM.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from checkpoint_doctor.api import diagnose_pipeline
from checkpoint_doctor.pipelines.load import PipelineReport
from tests.conftest import FIXTURES

SDP = FIXTURES / "sdp"
CASES = sorted(SDP.glob("spark-*/*/run.json"))


def _id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}"


def install(fixture: Path, at: Path) -> Path:
    """The fixture's storage root at ``at`` with its empty directories (git keeps none), the tables'
    sink logs and the pipeline's code (its spec names which flows are stateful)."""
    shutil.copytree(fixture / "storage", at / "storage")
    shutil.copytree(fixture / "warehouse", at / "warehouse")
    shutil.copytree(fixture / "transformations", at / "transformations")
    shutil.copy2(fixture / "spark-pipeline.yml", at / "spark-pipeline.yml")
    for rel in json.loads((fixture / "run.json").read_text(encoding="utf-8"))["empty_dirs"]:
        (at / rel).mkdir(parents=True, exist_ok=True)
    return at / "storage"


def judged(path: Path, tmp_path: Path) -> tuple[dict, PipelineReport]:
    rec = json.loads(path.read_text(encoding="utf-8"))
    storage = install(path.parent, tmp_path / "project")
    line = ".".join(rec["spark_version"].split(".")[:2])
    (report,) = diagnose_pipeline(str(storage), spark=[line])
    return rec, report


SCENARIOS = {
    "healthy",
    "state-deleted",
    "offsets-sparse",
    "metadata-deleted",
    "full-refresh",
    "empty-version",
    "file-source-log-deleted",
    "code-new-stateful",
}


def test_the_recorded_lines_and_scenarios() -> None:
    per_line: dict[str, set[str]] = {}
    for path in CASES:
        per_line.setdefault(path.parent.parent.name, set()).add(path.parent.name)
    # Every line with spark-pipelines, one pipeline project (rate and file sources, two append flows
    # into one table, a stream-stream join) on all three.
    for line in ("spark-4.1.4", "spark-4.2.1", "spark-4.3.0"):
        assert per_line.get(line) == SCENARIOS, line


#: Where 4.1 and 4.2 start a flow with no upstream flow: merged_b's code gained a dropDuplicates,
#: Spark Connect analyses a Deduplicate's input on its own (SparkConnectPlanner.transformDeduplicate),
#: so the graph loses events as merged_b's input and TriggeredGraphExecution starts it beside events;
#: its AvailableNow query finds no new data and runs no batch (CD806). 4.3 orders it after events.
UNORDERED = {
    ("spark-4.1.4", "code-new-stateful"): "merged_b",
    ("spark-4.2.1", "code-new-stateful"): "merged_b",
}


@pytest.mark.parametrize("path", CASES, ids=[_id(p) for p in CASES])
def test_each_flow_s_next_run_is_what_spark_pipelines_did(path: Path, tmp_path: Path) -> None:
    rec, report = judged(path, tmp_path)
    run = rec["runs"][0]
    unordered = UNORDERED.get((path.parent.parent.name, path.parent.name))
    cd806 = [f for f in report.verdict.findings if str(f.code) == "CD806"]
    if unordered is not None:
        # Started before its upstream wrote: no new batch at all (its offsets and commits stayed at 1).
        assert run["flow_batches_after"][unordered]["offsets"] == [0, 1], run["flow_batches_after"]
        assert run["flow_batches_after"][unordered]["commits"] == [0, 1], run["flow_batches_after"]
        assert [f.message.split(" ")[0] for f in cd806] == [f"merged/{unordered}"]
    else:
        assert cd806 == []
    assert report.verdict.run_outcome == run["outcome"], report.to_dict()
    for flow, seen in run["flows"].items():
        verdict = report.verdict.flow(flow)
        assert verdict is not None, flow
        assert verdict.next_run == seen["state"], (flow, verdict.summary, seen)
        if seen["state"] == "FAILED":
            restart = verdict.restart
            assert restart is not None and restart.search is not None
            assert any(restart.search in e for e in seen["errors"]), (restart.search, seen["errors"])
            # Started 3 times, as CD800 says (FAILED more than 2 times and will not be restarted); a
            # failure at the query's start is logged twice per attempt.
            assert seen["attempts"] == 3 and flow in run["not_restarted"]
    queued = {f for f, s in run["flows"].items() if s["state"] == "SKIPPED"}
    predicted = {v.layout.flow for v in report.verdict.flows if v.next_run == "SKIPPED"}
    assert predicted == queued


@pytest.mark.parametrize("path", CASES, ids=[_id(p) for p in CASES])
def test_the_silent_losses_predicted_are_the_batches_the_table_skipped(path: Path, tmp_path: Path) -> None:
    rec, report = judged(path, tmp_path)
    run = rec["runs"][0]
    before, after = run["sink_batches_before"], run["sink_batches_after"]
    codes = {str(f.code): f for f in report.verdict.findings}
    for table, flows in report.layout.tables().items():
        new_ids = set(after[table]) - set(before[table])
        committed = [
            len(set(run["flow_batches_after"][f.flow]["commits"]) - _flow_commits_before(path.parent, f))
            for f in flows
        ]
        if len(flows) > 1:
            assert "CD804" in codes
            if sum(1 for c in committed if c) > 1:
                # Both flows committed new batches: the shared sink log gained fewer than they did.
                assert len(new_ids) < sum(committed), (table, new_ids, committed)
    empty = [f for f in report.layout.flows if f.live_is_empty]
    if empty:
        (flow,) = empty
        loss = codes["CD803"]
        got = run["flow_batches_after"][flow.flow]["commits"]
        # The flow's new query committed only batch ids the table's log already held: skipped.
        assert got and set(got) <= set(before[flow.table]) <= set(loss.batch_ids) | set(got)
    else:
        assert "CD803" not in codes


def _flow_commits_before(fixture: Path, flow) -> set[int]:  # type: ignore[no-untyped-def]
    live = fixture / "storage" / flow.version_dir(flow.live) / "commits"
    return {int(p.name) for p in live.glob("[0-9]*")} if live.is_dir() else set()


def test_a_full_refresh_leaves_history_never_a_failure(tmp_path: Path) -> None:
    path = SDP / "spark-4.3.0" / "full-refresh" / "run.json"
    _, report = judged(path, tmp_path)
    joined = report.layout.flow("joined/joined")
    assert joined is not None and joined.live == "1" and joined.history == ("0",)
    assert [str(f.code) for f in report.verdict.findings if f.paths[0].endswith("/joined/0")] == ["CD802"]
    assert report.verdict.run_outcome == "COMPLETED"


def test_each_repair_of_a_flow_s_live_version_was_followed_by_a_real_run() -> None:
    """The tool's plan on the flow directory, applied, then a real spark-pipelines run (sdp_fixtures.py
    repair_line): what that run did with the repaired flow; where the tool has no repair it says so."""
    repaired: dict[str, str] = {}
    for path in CASES:
        rec = json.loads(path.read_text(encoding="utf-8"))
        repair = rec.get("repair")
        if repair is None:
            continue
        if repair["run"] is None:
            # No plan to apply (offsets/0 gone below offsets/1: nothing to bridge from).
            assert repair["plan_exit"] != 0 or repair["apply_exit"] != 0
            repaired[_id(path)] = "no plan"
            continue
        assert repair["apply_exit"] == 0, repair
        run = repair["run"]
        flow = repair["flow"].split("/")[1]
        repaired[_id(path)] = f"{repair['strategy']} {run['flows'][flow]['state']}"
        if run["outcome"] == "COMPLETED":
            assert all(f["state"] == "COMPLETED" for f in run["flows"].values()), run["flows"]
    for line in ("spark-4.1.4", "spark-4.2.1", "spark-4.3.0"):
        assert repaired.get(f"{line}/metadata-deleted") == "recreate-metadata COMPLETED", line
        assert repaired.get(f"{line}/offsets-sparse") == "no plan", line
        # The join's four stores per partition, told by the pipeline's code (docs/sdp.md): the run completes.
        assert repaired.get(f"{line}/state-deleted") == "reset-state COMPLETED", line


RESETS = {
    "offsets-sparse": "events/events",
    "state-deleted": "joined/joined",
    "empty-version": "merged/merged_a",
    "code-new-stateful": "merged/merged_b",
}


def _resets() -> list[Path]:
    return [p for p in CASES if json.loads(p.read_text(encoding="utf-8")).get("reset") is not None]


@pytest.mark.parametrize("path", _resets(), ids=[_id(p) for p in _resets()])
def test_each_selective_reset_was_followed_by_a_completed_run_that_skipped_no_batch(path: Path) -> None:
    """plan <flow dir> --reset-flow, apply, then a real spark-pipelines run (sdp_fixtures.py reset_line):
    the flow ran its next batch in the new version, every flow completed, and the flow's table's
    sink log went on past the batches it held, without a gap and with the batch's rows."""
    rec = json.loads(path.read_text(encoding="utf-8"))
    reset = rec["reset"]
    assert reset["flow"] == RESETS[rec["scenario"]]
    assert reset["plan_exit"] == 0 and reset["apply_exit"] == 0, reset
    run = reset["run"]
    assert run["outcome"] == "COMPLETED", run["flows"]
    assert all(f["state"] == "COMPLETED" for f in run["flows"].values()), run["flows"]
    table, flow = reset["flow"].split("/")
    n = reset["batch"]
    after = run["flow_batches_after"][flow]
    # The new version is live and ran batch N+1: it started past N, not at batch 0. Where the line
    # starts the flow before its upstream writes (UNORDERED), it ran no batch at all this run.
    ran = [n] if (path.parent.parent.name, rec["scenario"]) in UNORDERED else [n, n + 1]
    assert after["version"] == [int(reset["version"])] and after["commits"] == ran, after
    before_ids, after_ids = run["sink_batches_before"][table], run["sink_batches_after"][table]
    assert after_ids == list(range(len(after_ids))) and set(before_ids) < set(after_ids), (
        before_ids,
        after_ids,
    )
    rows = reset["sink_rows_after"][table]
    assert rows[str(n + 1)] > 0
    if table in ("events", "joined"):
        # 10 rows a batch (rate-micro-batch rowsPerBatch 10; the self join matches each row once).
        assert rows[str(n + 1)] == 10, rows


def test_the_resets_recorded_per_line() -> None:
    done: dict[str, set[str]] = {}
    for path in _resets():
        rec = json.loads(path.read_text(encoding="utf-8"))
        if rec["reset"]["run"] and rec["reset"]["run"]["outcome"] == "COMPLETED":
            done.setdefault(path.parent.parent.name, set()).add(rec["scenario"])
    for line in ("spark-4.1.4", "spark-4.2.1", "spark-4.3.0"):
        assert done.get(line) == set(RESETS), line


def test_a_flow_started_before_its_upstream_runs_a_batch_once_its_input_holds_unread_files(
    tmp_path: Path,
) -> None:
    """On 4.1 merged_b (its code now deduplicating) starts beside events: with every file of events'
    sink log read it runs no batch (recorded). Once that log lists a file merged_b never read (what
    the recorded run wrote as events' batch 2), the early start still finds data, runs a batch and
    meets the missing state: the ordinary prediction, FAILED."""
    path = SDP / "spark-4.1.4" / "code-new-stateful" / "run.json"
    _, report = judged(path, tmp_path / "as-recorded")
    verdict = report.verdict.flow("merged_b")
    assert verdict is not None and verdict.next_run == "COMPLETED", verdict
    assert verdict.summary == "STARTS before events is written: no new data, no batch"
    storage = install(path.parent, tmp_path / "next-run")
    log = storage.parent / "warehouse" / "events" / "_spark_metadata"
    entry = (log / "1").read_text(encoding="utf-8").replace("part-00000-", "part-00002-")
    (log / "2").write_text(entry, encoding="utf-8")
    (report,) = diagnose_pipeline(str(storage), spark=["4.1"])
    verdict = report.verdict.flow("merged_b")
    assert verdict is not None and verdict.next_run == "FAILED", verdict
    assert "CD806" not in {str(f.code) for f in report.verdict.findings}


#: The resets from the earliest (``--reset-start earliest``) recorded by sdp_fixtures.py RESET_STARTS:
#: key -> (flow, rows of its table's batch N+1 after the run or None where two flows race for it).
EARLIEST = {
    "reset_earliest": ("merged/merged_a", None),
    # joined reads events from its start on both sides: 3 batches of 10 rows, each matching itself
    # once in the one batch (its join state starts empty): 30 rows, 20 of them already in the table.
    "reset_earliest_joined": ("joined/joined", 30),
}


def _earliest() -> list[tuple[Path, str]]:
    out = []
    for p in CASES:
        rec = json.loads(p.read_text(encoding="utf-8"))
        out += [(p, key) for key in EARLIEST if rec.get(key) is not None]
    return out


@pytest.mark.parametrize(("path", "key"), _earliest(), ids=[f"{_id(p)}/{k}" for p, k in _earliest()])
def test_each_reset_from_the_earliest_was_followed_by_a_completed_run_that_read_the_table_again(
    path: Path, key: str
) -> None:
    """plan <flow dir> --reset-flow --reset-start earliest --accept-duplicates, apply, then a real
    spark-pipelines run: the flow's file sources started from an empty log, and its next batch read
    every file of events again; every flow completed and the table's sink log went on past N."""
    rec = json.loads(path.read_text(encoding="utf-8"))
    reset = rec[key]
    flow_name, rows_expected = EARLIEST[key]
    assert reset["flow"] == flow_name and reset["start"] == "earliest"
    assert reset["plan_exit"] == 0 and reset["apply_exit"] == 0, reset
    assert reset["reread_files"] > 0
    run = reset["run"]
    assert run["outcome"] == "COMPLETED", run["flows"]
    assert all(f["state"] == "COMPLETED" for f in run["flows"].values()), run["flows"]
    table, flow = flow_name.split("/")
    n = reset["batch"]
    after = run["flow_batches_after"][flow]
    assert after["version"] == [int(reset["version"])] and after["commits"] == [n, n + 1], after
    before_ids, after_ids = run["sink_batches_before"][table], run["sink_batches_after"][table]
    assert after_ids == list(range(len(after_ids))) and set(before_ids) < set(after_ids)
    if rows_expected is not None:
        rows = reset["sink_rows_after"][table]
        assert rows[str(n + 1)] == rows_expected, rows
        # The rows batch N+1 wrote again are the ones the table already held.
        assert sum(reset["sink_rows_before"][table].values()) == rows_expected - 10


def test_the_resets_from_the_earliest_recorded_per_line() -> None:
    done: dict[str, set[str]] = {}
    for path, key in _earliest():
        run = json.loads(path.read_text(encoding="utf-8"))[key]["run"]
        if run and run["outcome"] == "COMPLETED":
            done.setdefault(path.parent.parent.name, set()).add(key)
    for line in ("spark-4.1.4", "spark-4.2.1", "spark-4.3.0"):
        assert done.get(line) == set(EARLIEST), (line, done)


def _latest() -> list[Path]:
    return [p for p in CASES if json.loads(p.read_text(encoding="utf-8")).get("reset_latest") is not None]


@pytest.mark.parametrize("path", _latest(), ids=[_id(p) for p in _latest()])
def test_each_reset_from_the_latest_was_followed_by_a_completed_run_that_skipped_what_arrived_since(
    path: Path,
) -> None:
    """spark-pipelines run --refresh events (events alone: batch 2), then plan merged/merged_a
    --reset-flow --reset-start latest --accept-data-loss, apply, and a real run: merged_a's new
    version took the source log entry the plan wrote (events' batch 2 file, skipped) as seen and read
    only the file events wrote in this run."""
    reset = json.loads(path.read_text(encoding="utf-8"))["reset_latest"]
    assert reset["flow"] == "merged/merged_a" and reset["start"] == "latest"
    assert reset["before_run"]["outcome"] == "COMPLETED"
    assert reset["before_run"]["sink_batches_after"]["events"] == [0, 1, 2]
    assert reset["before_run"]["sink_batches_after"]["merged"] == [0, 1]
    assert reset["plan_exit"] == 0 and reset["apply_exit"] == 0, reset
    assert reset["skipped_files"] == 1
    run = reset["run"]
    assert run["outcome"] == "COMPLETED", run["flows"]
    assert all(f["state"] == "COMPLETED" for f in run["flows"].values()), run["flows"]
    n = reset["batch"]
    after = run["flow_batches_after"]["merged_a"]
    assert after["version"] == [int(reset["version"])] and after["commits"] == [n, n + 1], after
    # Entries 0, 1 copied, 2 written by the plan (the skipped file), 3 the run's batch: one new file.
    assert reset["source_log_after"] == {"0": 1, "1": 1, "2": 1, "3": 1}, reset["source_log_after"]
    assert run["sink_batches_after"]["events"] == [0, 1, 2, 3]


def test_the_resets_from_the_latest_recorded_per_line() -> None:
    done = {p.parent.parent.name for p in _latest()}
    assert done == {"spark-4.1.4", "spark-4.2.1", "spark-4.3.0"}
