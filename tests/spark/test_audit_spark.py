"""``audit --on-spark --spark-master local[2]``: real PySpark 4.3.0 distributes the checkpoints of a
fleet on the moto S3 server; every executor task opens its own fsspec storage and returns the same
records a local audit gives, and the fleet is still listed once (by the driver)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from checkpoint_doctor.audit.runner import audit
from checkpoint_doctor.diagnosis import DiagnoseOptions
from tests.audit.conftest import CHECKPOINTS, GARBAGE_CHECKPOINT, SINKS, place_fleet
from tests.s3.conftest import AWS_ENV, AWS_UNSET, moto_server, s3, s3_observer  # noqa: F401 - fixtures place_fleet asks for
from tests.sparkrun import spark_python


@pytest.mark.spark
@pytest.mark.s3
def test_audit_on_spark_local_mode_against_s3_gives_the_local_records(tmp_path, request) -> None:
    fleet = place_fleet("s3", tmp_path, request)
    assert fleet.s3 is not None
    server = fleet.s3.server
    env = {k: v for k, v in os.environ.items() if k not in AWS_UNSET}
    env.update(AWS_ENV)
    env.pop("PYSPARK_PYTHON", None)
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

    assert proc.returncode == 0 | 1 | 4, proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    records, summary = lines[:-1], lines[-1]
    assert summary["kind"] == "summary"
    assert summary["exit_code"] == 5
    assert len(records) == len(CHECKPOINTS) + 1 + len(SINKS)
    # The driver listed the fleet once; the executors only read (a few GETs per checkpoint).
    assert spark_kinds["ListObjectsV2"] == 1
    assert spark_kinds["GetObject"] == sum(r["reads"] for r in records)
    # An executor's s3fs client has not listed anything, so s3fs probes each object's size (HEAD)
    # before its GET (S3FileSystem._cat_file with max_concurrency > 1): at most one per GET.
    assert spark_kinds["HeadObject"] in (0, spark_kinds["GetObject"])
    assert set(spark_kinds) <= {"ListObjectsV2", "GetObject", "HeadObject"}
    assert "Traceback" not in proc.stderr

    local = audit([fleet.root], fleet.options, options=DiagnoseOptions(live_window_s=0))
    assert records == list(local.records)
    by_path = {r["path"]: r for r in records if r["kind"] == "checkpoint"}
    assert by_path["team b/broken tail"]["restart"]["outcome"] == "fails"
    assert by_path[GARBAGE_CHECKPOINT]["exit_code"] == 4
