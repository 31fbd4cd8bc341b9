"""``checkpoint-doctor catch-up`` with real PySpark 3.5.9 and 4.3.0, run as the operator runs it: the
CLI in the Spark venv's python (``-m checkpoint_doctor catch-up``), on copies of real checkpoints.

The main test is the issue's story: a checkpoint written with async progress tracking at 1000 ms
(``async-tail``) -> diagnose predicts a synchronous restart fails -> catch-up -> diagnose predicts it
starts -> a real synchronous restart (sparklab's ``async`` query, the same query as
``examples/rate_job.py``) starts, and its first batch starts at or before the last committed end
offsets. The other tests are the refusals, each with its message and exit code, and ``--mode sync``.
Most refusals are decided before a JVM starts; the ones Spark itself makes cost one JVM each.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import time
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.execution.catch_up.decisions import STATEFUL_TEXT, spark_line, tail_state, tail_text
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.render.documents import SCHEMA_VERSIONS
from tests.cli.test_schemas import validate
from tests.live import one_line
from tests.repair_proof import committed_end, position
from tests.scenarios import FIXTURES, copy_scenario, scenario_at
from tests.sparkrun import REPO, SPARK_VERSIONS, error_text, restart_job, run_jobs, spark_python

pytestmark = pytest.mark.spark

#: Session settings of the tests' runs (sparklab's, so the runs look like the fixtures' writers).
SPARK_ARGS = [
    "--master",
    "local[2]",
    "--conf",
    "spark.ui.enabled=false",
    "--conf",
    "spark.driver.host=127.0.0.1",
    "--conf",
    "spark.driver.bindAddress=127.0.0.1",
    "--conf",
    "spark.sql.shuffle.partitions=2",
]
TIMEOUT_S = 240

#: Jobs that are not the example, written next to the test's checkpoints (``PATH.py:FUNCTION``).
TEST_JOBS = """
import os

from pyspark.sql import functions as F


def rate(spark):
    return (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", "5").option("numPartitions", "1")
        .option("startTimestamp", "0").option("advanceMillisPerBatch", "1000")
        .load()
    )


def returns_dataframe(spark):
    return rate(spark).select("value")


def file_sink(spark):
    return rate(spark).select("value").writeStream.format("json").option("path", os.environ["CATCH_UP_TEST_OUT"])


def stateful(spark):
    counts = rate(spark).groupBy((F.col("value") % 3).alias("k")).count()
    return counts.writeStream.format("noop").outputMode("complete")


def raises(spark):
    return spark.table("no_such_table_for_catch_up").writeStream.format("noop")


def no_new_data(spark):
    return spark.readStream.schema("id LONG").json(os.environ["CATCH_UP_TEST_INPUT"]).writeStream.format("noop")
"""


def catch_up(
    version: str, checkpoint: Path, *args: str, env: dict[str, str] | None = None, debug: bool = False
) -> subprocess.CompletedProcess:
    """Run ``checkpoint-doctor catch-up`` in the Spark venv (cwd: the repo, so ``examples`` imports)."""
    return subprocess.run(
        [
            str(spark_python(version)),
            "-m",
            "checkpoint_doctor",
            *(["--debug"] if debug else []),
            "catch-up",
            str(checkpoint),
            *args,
            *SPARK_ARGS,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=TIMEOUT_S,
        env={**os.environ, **(env or {})},
    )


def _read_all(fd: int) -> str:
    """Read a pty's parent side until the child side is closed."""
    chunks = []
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:  # EIO: the child side is closed and drained
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode(errors="replace")


def log_ids(checkpoint: Path) -> tuple[list[str], list[str]]:
    return sorted(os.listdir(checkpoint / "offsets")), sorted(os.listdir(checkpoint / "commits"))


def write_jobs(tmp_path: Path) -> Path:
    path = tmp_path / "test_jobs.py"
    path.write_text(TEST_JOBS)
    return path


def fresh_checkpoint(path: Path) -> Path:
    """A checkpoint with only ``metadata``: a query that has not run a batch yet."""
    path.mkdir(parents=True)
    (path / "metadata").write_text('{"id":"8d6b5c9e-1111-4222-8333-444455556666"}')
    return path


@pytest.mark.parametrize("version", one_line(SPARK_VERSIONS, "4.3.0"))
def test_catch_up_makes_a_synchronous_restart_start_without_skipping_data(version, tmp_path):
    scenario = FIXTURES / f"spark-{version}" / "async-tail"
    line = spark_line(version)
    cps = [copy_scenario(scenario, tmp_path / name) for name in ("json", "table")]
    latest_before = load_checkpoint(str(cps[0])).offsets.latest_id
    before = diagnose(load_checkpoint(str(cps[0])), DiagnoseOptions(spark=line, mode="micro-batch"))
    assert not before.prediction.starts and "CD101" in before.codes and before.exit_code == 4

    t0 = time.monotonic()
    run = catch_up(version, cps[0], "--job", "examples.rate_job:build", "--format", "json")
    json_s = time.monotonic() - t0
    assert run.returncode == 0, run.stderr[-3000:]
    doc = json.loads(run.stdout)  # exactly one document: the JVM's own output went to stderr
    result = doc["result"]
    assert doc["command"] == "catch-up" and doc["schema_version"] == SCHEMA_VERSIONS["catch-up"]
    validate("catch-up", doc)
    assert result["batches_run"] >= 2 and result["batch_ids"][0] == latest_before + 1
    assert result["rows"] == 5 * result["batches_run"]
    assert result["tail"]["durable"] is True
    assert result["before"]["outcome"] == "fails"
    assert result["diagnosis"]["restart"]["outcome"] == "starts" and result["exit_code"] == 0
    assert "catch-up: batches" not in run.stderr  # quiet in JSON mode

    t0 = time.monotonic()
    run = catch_up(version, cps[1], "--job", "examples/rate_job.py:build")  # the PATH.py form
    table_s = time.monotonic() - t0
    assert run.returncode == 0, run.stderr[-3000:]
    # The query runs asynchronously: a third batch may start before stop() lands, and the status
    # line counts every batch that ran (5 rows each).
    done = re.search(r"catch-up: batches (\d+)/2, rows (\d+), \d+ s elapsed \(done\)", run.stderr)
    assert done is not None, run.stderr[-2000:]
    assert int(done.group(1)) >= 2 and int(done.group(2)) == 5 * int(done.group(1))
    assert (
        f"Before        synchronous restart FAILS before running any batch: batch {latest_before - 1} doesn't exist"
        in run.stdout
    )
    assert "Verdict for a synchronous restart (async progress tracking off):" in run.stdout
    assert "restart the job without asyncProgressTrackingEnabled" in run.stdout

    jobs, ends, latest = [], [], []
    for i, cp in enumerate(cps):
        snap = load_checkpoint(str(cp))
        after = diagnose(snap, DiagnoseOptions(spark=line, mode="micro-batch", live_window_s=0))
        assert after.prediction.starts, after.prediction.summary
        ends.append(committed_end(snap))
        latest.append(snap.offsets.latest_id)
        entry = {"mode": "micro-batch", "query": "async", "confs": {}}
        jobs.append(
            restart_job(
                scenario, scenario_at(scenario).data, i, entry, tmp_path / f"restart-{i}", checkpoint=cp
            )
        )
    t0 = time.monotonic()
    results = run_jobs(version, jobs, tmp_path / "spark")
    restart_s = time.monotonic() - t0
    for result, end, last in zip(results, ends, latest, strict=True):
        assert result["started"] and result["error"] is None, error_text(result)[:1500]
        first = result["batches"][0]
        assert first["batchId"] == last + 1
        start = position(first["sources"][0]["startOffset"])
        assert start is not None and end[0] is not None and start <= end[0], (start, end)
    print(
        f"\n[timing {version}] catch-up json {json_s:.1f} s, table {table_s:.1f} s, sparklab restarts {restart_s:.1f} s"
    )


@pytest.mark.parametrize("version", one_line(SPARK_VERSIONS, "3.5.9"))
def test_sync_mode_reruns_the_uncommitted_batch_through_the_job(version, tmp_path):
    cp = copy_scenario(FIXTURES / f"spark-{version}" / "stateless", tmp_path)
    for name in ("3", ".3.crc"):
        if (cp / "commits" / name).exists():
            (cp / "commits" / name).unlink()
    run = catch_up(version, cp, "--job", "examples.rate_job:build", "--mode", "sync", "--format", "json")
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout)["result"]
    assert result["mode"] == "sync" and result["batch_ids"][0] == 3  # the uncommitted batch, re-run first
    assert result["before"]["summary"] == "STARTS re-runs batch 3"
    assert "3" in log_ids(cp)[1]
    assert result["diagnosis"]["restart"]["outcome"] == "starts" and result["exit_code"] == 0


@pytest.mark.parametrize("version", SPARK_VERSIONS)
def test_refusals_decided_before_spark_starts(version, tmp_path):
    """Job import errors, a live writer, a stateful checkpoint, sync mode on a failing restart."""
    cp = copy_scenario(FIXTURES / f"spark-{version}" / "async-tail", tmp_path / "a")
    logs = log_ids(cp)

    run = catch_up(version, cp, "--job", "no_such_module.jobs:build")
    assert run.returncode == 2
    assert (
        "cannot import job module 'no_such_module.jobs': ModuleNotFoundError: No module named 'no_such_module'"
        in run.stderr
    )
    assert "Traceback" not in run.stderr

    run = catch_up(version, cp, "--job", "examples.rate_job:build", "--mode", "sync")
    assert run.returncode == 32  # refused before Spark ran: nothing changed
    assert "catch-up refused: a synchronous restart of" in run.stderr and "doesn't exist" in run.stderr
    assert "next: run catch-up in the default async mode" in run.stderr

    (cp / "offsets" / ".99.0b6d3c2e-5a5b-4f57-9d3c-1f2e3d4c5b6a.tmp").write_text("v1\n")
    run = catch_up(version, cp, "--job", "examples.rate_job:build")
    assert run.returncode == 32
    assert f"catch-up refused: a streaming query may be writing to {cp} right now (CD502" in run.stderr
    assert "next: stop the query" in run.stderr
    (cp / "offsets" / ".99.0b6d3c2e-5a5b-4f57-9d3c-1f2e3d4c5b6a.tmp").unlink()
    assert log_ids(cp) == logs

    stateful = copy_scenario(FIXTURES / f"spark-{version}" / "window_agg", tmp_path / "s")
    run = catch_up(version, stateful, "--job", "examples.rate_job:build", "--format", "json")
    assert run.returncode == 32
    error = json.loads(run.stdout)["error"]
    assert error["reason"] == "stateful" and error["spark_message"] == STATEFUL_TEXT
    # Its synchronous restart starts already: nothing to catch up, nothing to bridge.
    assert STATEFUL_TEXT in run.stderr
    assert "next: nothing to catch up: a synchronous restart already starts (STARTS " in run.stderr


@pytest.mark.parametrize("version", SPARK_VERSIONS)
def test_spark_that_cannot_start_is_one_line_after_a_finished_status_line(version, tmp_path):
    """No Java (JAVA_HOME points nowhere): Spark's own reason, exit 2, no traceback; on a terminal
    the status line is finished before the error. No JVM starts."""
    cp = copy_scenario(FIXTURES / f"spark-{version}" / "async-tail", tmp_path / "a")
    run = catch_up(
        version, cp, "--job", "examples.rate_job:build", env={"JAVA_HOME": str(tmp_path / "no-java")}
    )
    assert run.returncode == 2, run.stderr[-2000:]
    assert (
        "checkpoint-doctor: error: cannot start Spark (--master local[2]): [JAVA_GATEWAY_EXITED] "
        "Java gateway process exited before sending its port number.; check that Java is installed"
    ) in run.stderr
    assert "Traceback" not in run.stderr

    # On a terminal (a real pty as stderr): every message starts on a line of its own.
    parent, child = pty.openpty()
    proc = subprocess.Popen(
        [
            str(spark_python(version)),
            "-m",
            "checkpoint_doctor",
            "catch-up",
            str(cp),
            "--job",
            "examples.rate_job:build",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=child,
        cwd=REPO,
        env={**os.environ, "JAVA_HOME": str(tmp_path / "no-java")},
    )
    os.close(child)
    try:
        terminal = _read_all(parent)
    finally:
        os.close(parent)
    assert proc.wait(timeout=TIMEOUT_S) == 2
    lines = [ln.strip("\r") for ln in terminal.split("\n")]
    assert "catch-up: starting Spark" in lines, terminal
    assert any(
        ln.startswith("checkpoint-doctor: error: cannot start Spark: [JAVA_GATEWAY_EXITED]") for ln in lines
    ), terminal


@pytest.mark.parametrize("version", one_line(SPARK_VERSIONS, "3.5.9"))
def test_refusals_from_the_job_and_from_spark(version, tmp_path):
    """The function returns a DataFrame; Spark refuses the sink; Spark refuses a stateful plan."""
    jobs = write_jobs(tmp_path)
    cp = copy_scenario(FIXTURES / f"spark-{version}" / "async-tail", tmp_path / "a")
    logs = log_ids(cp)

    run = catch_up(version, cp, "--job", f"{jobs}:returns_dataframe")
    assert run.returncode == 2, run.stderr[-2000:]
    assert (
        f"catch-up refused: job {jobs}:returns_dataframe returned DataFrame, not a DataStreamWriter"
        in run.stderr
    )
    assert log_ids(cp) == logs

    run = catch_up(version, cp, "--job", f"{jobs}:raises", "--format", "json", debug=True)
    assert run.returncode == 2, run.stderr[-2000:]
    error = json.loads(run.stdout)["error"]
    assert error["reason"] == "job-failed"
    assert error["spark_message"].startswith(
        "[TABLE_OR_VIEW_NOT_FOUND] The table or view `no_such_table_for_catch_up` cannot be found."
    )
    assert (
        f"catch-up refused: job {jobs}:raises raised AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] "
        in run.stderr
    )
    # --debug: the job's own traceback, down to its line; the refusal stays one line after it.
    assert "Traceback (most recent call last)" in run.stderr and f'File "{jobs}", line' in run.stderr
    assert "next: fix the job, it must return df.writeStream..." in run.stderr
    assert log_ids(cp) == logs

    out = tmp_path / "out"
    run = catch_up(
        version, cp, "--job", f"{jobs}:file_sink", "--format", "json", env={"CATCH_UP_TEST_OUT": str(out)}
    )
    assert run.returncode == 4, run.stderr[-2000:]
    error = json.loads(run.stdout)["error"]
    assert error["reason"] == "sink-unsupported"
    assert re.fullmatch(
        rf"Sink FileSink\[(file:)?{re.escape(str(out))}\] does not support async progress tracking",
        error["spark_message"],
    )
    assert error["spark_message"] in run.stderr and "--strategy bridge" in error["next_step"]
    assert log_ids(cp) == logs

    fresh = fresh_checkpoint(tmp_path / "fresh")
    run = catch_up(version, fresh, "--job", f"{jobs}:stateful")
    assert run.returncode == 4, run.stderr[-2000:]
    assert f"catch-up refused: Spark {version} refused the job: {STATEFUL_TEXT}" in run.stderr
    # Spark checks the plan when the first batch runs, after it planned it: the refusal says what is left.
    left = tail_text(tail_state(load_checkpoint(str(fresh))))
    assert (
        (f"(the checkpoint now has {left})" in run.stderr)
        if left
        else ("the checkpoint now has" not in run.stderr)
    )
    assert "next: nothing to catch up: a synchronous restart already starts" in run.stderr


@pytest.mark.parametrize("version", one_line(SPARK_VERSIONS, "4.3.0"))
def test_no_new_data_within_the_timeout_stops_and_says_what_is_left(version, tmp_path):
    jobs = write_jobs(tmp_path)
    empty = tmp_path / "input"
    empty.mkdir()
    cp = fresh_checkpoint(tmp_path / "cp")
    run = catch_up(
        version,
        cp,
        "--job",
        f"{jobs}:no_new_data",
        "--timeout",
        "6",
        "--format",
        "json",
        env={"CATCH_UP_TEST_INPUT": str(empty)},
    )
    assert run.returncode == 4, run.stderr[-2000:]
    error = json.loads(run.stdout)["error"]
    assert error["reason"] == "no-new-data"
    assert (
        error["message"]
        == "no new data within 6 s: no batch ran; the query was stopped and the checkpoint is as the last durable batch left it"
    )
    # A checkpoint that never ran a batch restarts as it is (the bridge's case is in tests/catch_up).
    assert error["next_step"].startswith("nothing to catch up: a synchronous restart already starts (STARTS ")
    assert error["run"]["batches_run"] == 0 and error["run"]["timed_out"] is True
    assert not [n for n in os.listdir(cp / "offsets") if n.isdigit()]
