"""``audit --on-spark --spark-master local[2]``: real PySpark 4.3.0 distributes the checkpoints of a
fleet on the moto S3 server; every executor task opens its own fsspec storage and returns the same
records a local audit gives, and the fleet is still listed once (by the driver)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Any

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions
from checkpoint_doctor.fleet.records import CheckpointRecord, SinkRecord
from checkpoint_doctor.fleet.run import audit
from tests.fleet.conftest import CHECKPOINTS, GARBAGE_CHECKPOINT, SINKS, place_fleet
from tests.fleet.records import json_records
from tests.s3.conftest import AWS_ENV, AWS_UNSET, moto_server, s3, s3_observer  # noqa: F401 - fixtures place_fleet asks for
from tests.scenarios import FIXTURES, copy_scenario
from tests.sparkrun import REPO, spark_python


def spark_env(**extra: str) -> dict[str, str]:
    """The environment of a Spark venv process that runs THIS checkout's package: the shared venvs
    install another checkout in editable mode, and the audit runs outside the repository."""
    env = {k: v for k, v in os.environ.items() if k not in AWS_UNSET}
    env.pop("PYSPARK_PYTHON", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**env, **extra}


@pytest.mark.spark
@pytest.mark.s3
def test_audit_on_spark_local_mode_against_s3_gives_the_local_records(tmp_path, request) -> None:
    fleet = place_fleet("s3", tmp_path, request)
    assert fleet.s3 is not None
    server = fleet.s3.server
    env = spark_env(**AWS_ENV)
    python = spark_python("4.3.0")

    proc = subprocess.run(
        [
            str(python),
            "-m",
            "checkpoint_doctor",
            "audit",
            fleet.root,
            "--on-spark",
            "--spark-master",
            "local[2]",
            "--storage-option",
            f"endpoint_url={server.endpoint}",
            "--format",
            "jsonl",
            "--live-window",
            "0",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    spark_kinds = server.log.kinds()

    assert proc.returncode == 5, proc.stderr[-3000:]  # errors (4) on some checkpoints, warnings (1) on others
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    records, summary = lines[:-1], lines[-1]
    assert summary["kind"] == "summary"
    assert summary["exit_code"] == 5
    assert len(records) == len(CHECKPOINTS) + 1 + len(SINKS)
    # The driver listed the fleet once; the executors only read (a few GETs per checkpoint).
    assert spark_kinds["ListObjectsV2"] == 1
    # ... and the driver read the fleet's Delta table once to pair it (the summary counts it)
    assert spark_kinds["GetObject"] == sum(r["reads"] for r in records) + summary["delta"]["reads"]
    # An executor's s3fs client has not listed anything, so s3fs probes each object's size (HEAD)
    # before its GET (S3FileSystem._cat_file with max_concurrency > 1): at most one per GET.
    assert spark_kinds["HeadObject"] in (0, spark_kinds["GetObject"])
    assert set(spark_kinds) <= {"ListObjectsV2", "GetObject", "HeadObject"}
    assert "Traceback" not in proc.stderr

    local = audit([fleet.root], fleet.options, options=DiagnoseOptions(live_window_s=0))
    # Both stamp each record with the document envelope (tool version, time made) and
    # the next command to run (the time differs); everything else must be equal.
    stamps = ("tool_version", "generated_at", "next_step")
    assert all({"tool_version", "generated_at"} <= set(r) for r in records)
    # ``reads`` is what each record's process fetched: in process a file sink's log is read once per
    # audit (fleet.run.SinkReads) and counted in the sink's own record, while on Spark each task is its
    # own process and reads the log of a sink its checkpoint may belong to again. Both sum to the
    # requests made (GetObject above), so reads are compared as sums, the rest record by record.
    assert sum(r.reads for r in local.records if isinstance(r, (CheckpointRecord, SinkRecord))) <= sum(
        r["reads"] for r in records
    )
    stamps = (*stamps, "reads")
    # "stopped N ago" is measured on each run's own clock (the CLI's; the library audit here is given
    # none): stamped like generated_at, so it is compared as present, not as equal.
    assert all(
        r["latest"]["stopped_s"] is not None for r in records if (r.get("latest") or {}).get("batch_time_ms")
    )

    def unstamped(r: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in r.items() if k not in stamps}
        if isinstance(out.get("latest"), dict):
            out["latest"] = {k: v for k, v in out["latest"].items() if k not in ("stopped", "stopped_s")}
        return out

    on_spark = {(r["kind"], r["url"]): unstamped(r) for r in records}
    in_process = {(r["kind"], r["url"]): unstamped(r) for r in json_records(local)}
    assert sorted(on_spark) == sorted(in_process)
    for key, got in on_spark.items():
        want = in_process[key]
        differing = {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)}
        assert not differing, f"{got.get('path')}: {differing}"
    by_path = {r["path"]: r for r in records if r["kind"] == "checkpoint"}
    assert by_path["team b/broken tail"]["restart"]["outcome"] == "fails"
    assert by_path[GARBAGE_CHECKPOINT]["exit_code"] == 4


@pytest.mark.spark
def test_audit_on_spark_without_java_is_one_line(tmp_path) -> None:
    """JAVA_HOME points nowhere: Spark's own reason, exit 2, no traceback (no JVM starts)."""
    copy_scenario(FIXTURES / "spark-4.3.0" / "stateless", tmp_path / "fleet" / "a")
    proc = subprocess.run(
        [
            str(spark_python("4.3.0")),
            "-m",
            "checkpoint_doctor",
            "audit",
            str(tmp_path / "fleet"),
            "--on-spark",
            "--spark-master",
            "local[2]",
            "--format",
            "jsonl",
        ],
        capture_output=True,
        text=True,
        env=spark_env(JAVA_HOME=str(tmp_path / "no-java")),
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert (
        "checkpoint-doctor: error: cannot start Spark (--master local[2]): [JAVA_GATEWAY_EXITED] "
        "Java gateway process exited before sending its port number.; check that Java is installed"
    ) in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def _bare_worker_run(
    tmp_path, *flags: str, pyspark_python: str | None, output: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """Audit two copied fixtures on Spark 4.3.0 as an operator's venv would, while the Python
    workers see none of the driver's packages: the driver finds THIS checkout on its sys.path only
    (not through PYTHONPATH, which workers inherit), PATH holds only the system directories (whose
    ``python3`` has no checkpoint-doctor, fsspec or pyspark), and PYTHONPATH gives the workers
    pyspark and py4j alone, as a Spark installation gives its executors."""
    fleet = tmp_path / "fleet"
    for name in ("window_agg", "commit-ahead"):
        copy_scenario(FIXTURES / "spark-4.3.0" / name, fleet / name)
    site = spark_python("4.3.0").parent.parent / "lib" / "python3.11" / "site-packages"
    only_spark = tmp_path / "only-spark"
    only_spark.mkdir()
    for package in ("pyspark", "py4j"):
        (only_spark / package).symlink_to(site / package)
    env = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(only_spark)}
    env.update({k: v for k, v in os.environ.items() if k in ("JAVA_HOME", "CHECKPOINT_DOCTOR_SPARK_LOCK")})
    if pyspark_python:
        env["PYSPARK_PYTHON"] = pyspark_python
    driver = f"import sys; sys.path.insert(0, {str(REPO)!r}); from checkpoint_doctor.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [
            str(spark_python("4.3.0")),
            "-c",
            driver,
            "audit",
            str(fleet),
            "--on-spark",
            *flags,
            *(output or JSONL),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=900,
        check=False,
    )


JSONL = ("--format", "jsonl", "--live-window", "0")


#: The operator's default output, a table (``-v``: every record in it): printing it imports tabulate
#: lazily, after Spark stopped and deleted the zip it had put on the driver's sys.path (issue 31 item 14).
TABLE = ("-v", "--live-window", "0")


def _table_records(proc: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """The verdict of each directory in ``audit -v``: its blocks name each directory relative to the
    one root given (the fleet), after its verdict."""
    assert "Found             2 checkpoints" in proc.stdout, proc.stdout
    assert re.search(r"^\(directories relative to \S+/fleet\)$", proc.stdout, flags=re.M), proc.stdout
    rows = re.findall(r"^(ok|warning|error|unreadable)\s+(\S+)$", proc.stdout, flags=re.M)
    return {path: verdict for verdict, path in rows if "/" in path}  # not the "By verdict" counts


@pytest.mark.spark
def test_audit_on_spark_with_spark_default_master_uses_the_drivers_python(tmp_path) -> None:
    """docs/audit.md's `audit ROOT --on-spark` (no --spark-master: Spark's default local[*]): the
    workers run the driver's interpreter, not the `python3` on PATH (which lacks pyspark here)."""
    proc = _bare_worker_run(tmp_path, pyspark_python=None, output=TABLE)

    assert proc.returncode == 4, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "ModuleNotFoundError" not in proc.stderr
    assert "FileNotFoundError" not in proc.stderr
    assert _table_records(proc) == {"window_agg/checkpoint": "ok", "commit-ahead/checkpoint": "error"}


@pytest.mark.spark
def test_audit_on_a_cluster_ships_the_package_to_executors_without_it(tmp_path) -> None:
    """local-cluster starts a worker JVM whose executors run a Python (the system one) with only
    pyspark: the job brings checkpoint-doctor and its pure-Python dependencies along."""
    proc = _bare_worker_run(
        tmp_path, "--spark-master", "local-cluster[1,1,1024]", pyspark_python="/usr/bin/python3", output=TABLE
    )

    assert proc.returncode == 4, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "ModuleNotFoundError" not in proc.stderr
    assert "FileNotFoundError" not in proc.stderr
    assert _table_records(proc) == {"window_agg/checkpoint": "ok", "commit-ahead/checkpoint": "error"}


@pytest.mark.spark
def test_audit_on_spark_pairs_the_delta_tables_as_a_local_audit_does(tmp_path) -> None:
    """The driver reads each Delta table once for pairing and ships the index with the tasks; the
    executors pair each checkpoint and read its source table's commits: the records (pairs, verdicts,
    codes) are those of a local audit of the same copy of fixtures/delta/spark-4.2.1."""
    import shutil

    root = tmp_path / "delta"
    shutil.copytree(FIXTURES / "delta" / "spark-4.2.1", root)
    proc = subprocess.run(
        [
            str(spark_python("4.3.0")),
            "-m",
            "checkpoint_doctor",
            "audit",
            str(root),
            "--on-spark",
            "--spark-master",
            "local[2]",
            "--format",
            "jsonl",
            "--live-window",
            "0",
        ],
        capture_output=True,
        text=True,
        env=spark_env(),
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 5, proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    records, summary = lines[:-1], lines[-1]
    local = audit([str(root)], options=DiagnoseOptions(live_window_s=0))
    assert summary["delta"] == local.summary.delta.to_json()
    keys = ("verdict", "codes", "delta", "restart")
    on_spark = {r["path"]: {k: r.get(k) for k in keys} for r in records}
    in_process = {r["path"]: {k: r.get(k) for k in keys} for r in json_records(local)}
    assert on_spark == in_process
    # 14 Delta scenarios, and the 9 of issue 33's change data feed and source options (delta-options)
    assert sum(1 for r in records if (r.get("delta") or {}).get("pairs")) == 23
