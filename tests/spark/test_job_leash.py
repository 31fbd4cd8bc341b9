"""``--job`` runs the operator's code: held read-only and on a short leash (issue 31 items 3, 12, 13).

Jobs that misbehave as an operator's can: start their query on the checkpoint (through PySpark, through
py4j, from a thread), write a batch into it, end the process (``os._exit(3)``), print hundreds of MB,
or hang with a process of their own started. The probe runs in the PySpark 4.3.0 venv (real pyspark
and py4j); only the first test starts a JVM, the others misbehave while the job is imported, before
Spark starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.repair_proof import tree_bytes
from tests.scenarios import FIXTURES, REPO, copy_scenario, run_cli
from tests.sparkrun import spark_python

#: Jobs that start their query or write while --job only describes them (CHECKPOINT: the one asked).
HOSTILE_JOBS = """
import os, threading, time

CP = os.environ["HOSTILE_CHECKPOINT"]


def _writer(spark):
    df = spark.readStream.format("rate").load()
    return df.writeStream.format("noop").option("checkpointLocation", CP)


def returns_started_query(spark):
    return _writer(spark).start()


def starts_then_returns_writer(spark):
    writer = _writer(spark)
    try:
        writer.start()
    except Exception:
        pass
    return writer


def starts_through_py4j(spark):
    writer = _writer(spark)
    writer._jwrite.start()
    return writer


def starts_to_table(spark):
    return _writer(spark).toTable("hostile_table")


def starts_to_table_through_py4j(spark):
    writer = _writer(spark)
    writer._jwrite.toTable("hostile_jvm_table")
    return writer


def starts_foreach_batch(spark):
    return _writer(spark).foreachBatch(lambda df, i: None).start()


def starts_from_a_thread(spark):
    writer = _writer(spark)
    threading.Thread(target=writer.start, daemon=True).start()
    time.sleep(1)
    return writer


def batch_write_into_checkpoint(spark):
    spark.range(1).write.mode("append").json(CP + "/offsets")
    return _writer(spark)


def batch_save_through_py4j(spark):
    spark.range(1)._jdf.write().mode("append").format("json").save(CP + "/sources")
    return _writer(spark)


def rdd_save_into_checkpoint(spark):
    spark.sparkContext.parallelize([1]).saveAsTextFile(CP + "/commits-copy")
    return _writer(spark)


def v2_create(spark):
    spark.range(1).writeTo("hostile_v2").create()
    return _writer(spark)
"""
#: Each hostile job -> what the probe answers: refused (the call named), or described (the job caught
#: the refusal itself, or its thread's start was refused: nothing started either way).
REFUSED = {
    "returns_started_query": "DataStreamWriter.start()",
    "starts_through_py4j": "the JVM's start() through py4j",
    "starts_to_table": "DataStreamWriter.toTable()",
    "starts_to_table_through_py4j": "the JVM's toTable() through py4j",
    "starts_foreach_batch": "DataStreamWriter.start()",
    "batch_write_into_checkpoint": "DataFrameWriter.json()",
    "batch_save_through_py4j": "the JVM's save() through py4j",
    "v2_create": "DataFrameWriterV2.create()",
    "rdd_save_into_checkpoint": "the JVM's saveAsTextFile() through py4j",
}
DESCRIBED = ("starts_then_returns_writer", "starts_from_a_thread")


def _probe_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**env, **extra}


@pytest.mark.spark
def test_no_job_can_start_its_query_or_write_while_it_is_described(tmp_path):
    """One probe (one JVM) over every hostile job: each start or write is refused before Spark is
    asked, and the checkpoint is byte for byte what it was (main: ``offsets/4`` and more appeared)."""
    checkpoint = copy_scenario(FIXTURES / "spark-4.3.0" / "window_agg", tmp_path / "job")
    before = tree_bytes(tmp_path / "job")
    (tmp_path / "hostile.py").write_text(HOSTILE_JOBS)
    specs = [f"hostile.py:{name}" for name in (*REFUSED, *DESCRIBED)]

    done = subprocess.run(
        [str(spark_python("4.3.0")), "-m", "checkpoint_doctor.execution.job_probe", *specs],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_probe_env(HOSTILE_CHECKPOINT=str(checkpoint)),
        timeout=600,
        check=False,
    )

    answer = [json.loads(ln) for ln in done.stdout.splitlines() if ln.startswith("[")]
    assert answer, done.stderr[-3000:]
    entries = {e["job"].rpartition(":")[2]: e for e in answer[-1]}
    for name, call in REFUSED.items():
        assert entries[name].get("error") == (
            f"the job called {call}: --job only analyses the query, it must not start or write anything "
            "(return the DataStreamWriter, not started)"
        ), entries[name]
    for name in DESCRIBED:
        assert "facts" in entries[name], entries[name]
    assert tree_bytes(tmp_path / "job") == before
    assert not (tmp_path / "spark-warehouse").exists()


# --------------------------------------------------------------- jobs that misbehave before Spark starts


EXIT_JOB = """
import os, sys
print("connecting to the metastore", flush=True)
print("giving up: no metastore", file=sys.stderr, flush=True)
os._exit(3)
"""


@pytest.mark.spark
@pytest.mark.parametrize("command", ["diagnose", "plan", "audit"])
def test_a_job_that_ends_the_process_is_reported_with_its_exit_code_and_last_output(
    command, tmp_path, capsys, monkeypatch
):
    """``os._exit(3)`` in the job is not a missing pyspark (main said "--job-python must name a python
    with pyspark"): the exit code and the last lines the job printed, on every command with --job."""
    copy_scenario(FIXTURES / "spark-4.3.0" / "window_agg", tmp_path / "job")
    (tmp_path / "exits.py").write_text(EXIT_JOB + "\ndef build(spark):\n    pass\n")
    monkeypatch.chdir(tmp_path)
    job = "exits.py:build" if command != "audit" else "job/*=exits.py:build"
    target = "job/checkpoint" if command != "audit" else "."

    code, out, err = run_cli(
        capsys, command, target, "--job", job, "--job-python", str(spark_python("4.3.0"))
    )

    assert code == 2, out + err
    assert "exited with code 3 before it described the job" in err, err
    assert "its last output: connecting to the metastore | giving up: no metastore" in err, err
    assert "with pyspark" not in err and "no pyspark" not in err


LOUD_JOB = """
import os, sys
block = ("x" * 1023 + "\\n") * 1024  # 1 MiB
for _ in range(384):
    sys.stdout.write(block)
sys.stdout.write("the job's last words\\n")
sys.stdout.flush()
os._exit(5)
"""


@pytest.mark.spark
def test_a_job_printing_384_mb_costs_the_tool_a_bounded_head_and_tail(tmp_path):
    """The tool's peak memory (ru_maxrss of the CLI process) stays far below what the job
    printed (main: ~1.2 GB for 384 MB, captured whole, twice), and the error says how much was not kept."""
    copy_scenario(FIXTURES / "spark-4.3.0" / "window_agg", tmp_path / "job")
    (tmp_path / "loud.py").write_text(LOUD_JOB + "\ndef build(spark):\n    pass\n")
    # The CLI's own peak: VmHWM, its address space's high-water mark (not the probe child's, which
    # prints the bytes). Not ru_maxrss: Linux carries that across execve from the forking process
    # (pytest's own RSS, hundreds of MB late in a full run).
    cli = (
        "import re, sys\n"
        "from checkpoint_doctor.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
        "sys.stderr.write(f'PEAK_KIB={hwm}\\n')\n"
        "sys.exit(code)\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            cli,
            *("diagnose", "job/checkpoint", "--job", "loud.py:build"),
            *("--job-python", str(spark_python("4.3.0"))),
        ],
        capture_output=True,
        cwd=tmp_path,
        env=_probe_env(),
        timeout=600,
        check=False,
    )
    err = proc.stderr
    peak_kib = int(err.decode().rsplit("PEAK_KIB=", 1)[1])
    text = err.decode()

    assert proc.returncode == 2, text[-3000:]
    assert "exited with code 5 before it described the job" in text
    assert "bytes of its output before them not kept" in text and "the job's last words" in text
    dropped = int(text.split("its last output (", 1)[1].split(" bytes", 1)[0])
    assert dropped > 384 * 1024 * 1024 - 100 * 1024
    assert peak_kib < 200 * 1024, f"peak RSS {peak_kib} KiB"


HANGING_JOB = """
import os, subprocess, sys, time
helper = subprocess.Popen(["sleep", "600"])
with open(os.environ["HELPER_PID_FILE"], "w") as f:
    f.write(str(helper.pid))
print("waiting for the metastore", file=sys.stderr, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    """Whether a process runs (a zombie, killed and not yet reaped by init, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def _dies(pid: int) -> bool:
    """Whether a process is dead or dies within 30 s: a SIGKILL sent is delivered a moment later
    (a bound for a loaded machine, not a measure of speed)."""
    import time

    deadline = time.monotonic() + 30
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.spark
def test_a_job_past_its_timeout_is_stopped_with_every_process_it_started(tmp_path, capsys, monkeypatch):
    """--job-timeout kills the child's whole process group: the helper the job started (as a Spark
    JVM is started) is gone when the command returns (main: only the child was killed)."""
    copy_scenario(FIXTURES / "spark-4.3.0" / "window_agg", tmp_path / "job")
    (tmp_path / "hangs.py").write_text(HANGING_JOB + "\ndef build(spark):\n    pass\n")
    pid_file = tmp_path / "helper.pid"
    monkeypatch.setenv("HELPER_PID_FILE", str(pid_file))
    monkeypatch.chdir(tmp_path)
    helper = None
    try:
        code, out, err = run_cli(
            capsys,
            "diagnose",
            "job/checkpoint",
            "--job",
            "hangs.py:build",
            "--job-python",
            str(spark_python("4.3.0")),
            "--job-timeout",
            "5",
        )
        helper = int(pid_file.read_text())

        assert code == 2, out + err
        assert "Spark did not describe the job within 5 s" in err
        assert "its last output: waiting for the metastore" in " ".join(err.split())
        assert _dies(helper)
    finally:
        if helper is not None and _alive(helper):
            os.kill(helper, 9)
