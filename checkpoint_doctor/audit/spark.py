"""Run a fleet audit on a Spark cluster: Spark is the distributed engine operators already run.

The driver lists each root once and discovers the targets (:func:`~checkpoint_doctor.audit.runner.plan_fleet`);
here the tasks (URL + its slice of the listing) are parallelized, each Spark task opens its own
fsspec storage for its targets, runs the same per-target audit as a local run
(:func:`~checkpoint_doctor.audit.runner.audit_task`: reads, pure diagnosis, record dict), and the
records come back to the driver with ``collect``. No listing request is repeated on the executors.

This is the only module of the package that imports pyspark, lazily. Executors need
checkpoint-doctor (and s3fs for S3) installed in their Python environment.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from checkpoint_doctor.audit.runner import DEFAULT_JOBS, AuditTask, run_tasks
from checkpoint_doctor.diagnosis import DiagnoseOptions
from checkpoint_doctor.errors import MissingDependencyError

#: Tasks per core of the cluster: small tasks balance uneven checkpoints.
SLICES_PER_CORE = 4


def require_pyspark() -> None:
    """Check that pyspark can be imported.

    Raises:
        MissingDependencyError: pyspark is not installed (names the ``spark`` extra).
    """
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("--on-spark", "spark", "pyspark") from exc


def audit_partition(
    storage_options: Mapping[str, Any], options: DiagnoseOptions, jobs: int, tasks: Iterable[AuditTask]
) -> Iterator[dict[str, Any]]:
    """Audit one Spark partition of tasks on an executor; yield one record per task."""
    from checkpoint_doctor.storage import open_store

    stores: dict[str, Any] = {}

    def store_for(task: AuditTask) -> Any:
        # One store per root on this executor; each target is a child of it (one fsspec client).
        if task.root not in stores:
            stores[task.root] = open_store(task.root, storage_options)
        root = stores[task.root]
        return root.child(task.path) if task.path else root

    yield from run_tasks(list(tasks), store_for, options, jobs=jobs)


def run_on_spark(
    tasks: Sequence[AuditTask],
    storage_options: Mapping[str, Any] | None,
    options: DiagnoseOptions,
    *,
    master: str | None = None,
    jobs: int = DEFAULT_JOBS,
) -> list[dict[str, Any]]:
    """Audit the tasks on Spark (``master`` None: the master spark-submit or the session gives).

    Stops the SparkSession afterwards if this call created it.

    Raises:
        MissingDependencyError: pyspark is not installed.
    """
    require_pyspark()
    from pyspark.sql import SparkSession

    if not tasks:
        return []
    if master is not None and master.startswith("local") and "PYSPARK_PYTHON" not in os.environ:
        # Local executors are forked from the driver machine: run them with this interpreter
        # (PySpark's default is whatever "python3" is on PATH, which may lack checkpoint-doctor).
        os.environ["PYSPARK_PYTHON"] = sys.executable
    created = SparkSession.getActiveSession() is None
    builder = SparkSession.builder.appName("checkpoint-doctor audit")
    if master is not None:
        builder = builder.master(master)
    spark = builder.getOrCreate()
    try:
        sc = spark.sparkContext
        if created:
            sc.setLogLevel("ERROR")
        slices = max(1, min(len(tasks), sc.defaultParallelism * SLICES_PER_CORE))
        work = partial(audit_partition, dict(storage_options or {}), options, jobs)
        return list(sc.parallelize(list(tasks), slices).mapPartitions(work).collect())
    finally:
        if created:
            spark.stop()
