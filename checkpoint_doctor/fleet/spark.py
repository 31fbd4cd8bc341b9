"""Run a fleet audit on a Spark cluster: Spark is the distributed engine operators already run.

The driver lists each root once and discovers the targets (:func:`~checkpoint_doctor.fleet.run.plan_fleet`);
here the tasks (URL + its slice of the listing) are parallelized, each Spark task opens its own
fsspec storage for its targets, runs the same per-target audit as a local run
(:func:`~checkpoint_doctor.fleet.run.audit_task`: reads, pure diagnosis, record dict), and the
records come back to the driver with ``collect``. No listing request is repeated on the executors.

Spark is reached through :mod:`checkpoint_doctor.spark` (the one module that imports pyspark), which
creates the session like catch-up's. Executors need checkpoint-doctor (and s3fs for S3) installed in
their Python environment.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from checkpoint_doctor.diagnosis.matrix import MatrixOptions
from checkpoint_doctor.fleet.run import DEFAULT_JOBS, AuditTask, run_tasks
from checkpoint_doctor.spark import SessionOptions, map_partitions, spark_session
from checkpoint_doctor.spark import require_pyspark as _require_pyspark

#: Tasks per core of the cluster: small tasks balance uneven checkpoints.
SLICES_PER_CORE = 4


def require_pyspark() -> None:
    """Check that pyspark can be imported.

    Raises:
        MissingDependencyError: pyspark is not installed (names ``--on-spark`` and the ``spark`` extra).
    """
    _require_pyspark("--on-spark")


def audit_partition(
    storage_options: Mapping[str, Any], options: MatrixOptions, jobs: int, tasks: Iterable[AuditTask]
) -> Iterator[dict[str, Any]]:
    """Audit one Spark partition of tasks on an executor; yield one record per task."""
    from checkpoint_doctor.reading.storage import open_storage

    stores: dict[str, Any] = {}

    def store_for(task: AuditTask) -> Any:
        # One store per root on this executor; each target is a child of it (one fsspec client).
        if task.root not in stores:
            stores[task.root] = open_storage(task.root, storage_options)
        root = stores[task.root]
        return root.child(task.path) if task.path else root

    yield from run_tasks(list(tasks), store_for, options, jobs=jobs)


def run_on_spark(
    tasks: Sequence[AuditTask],
    storage_options: Mapping[str, Any] | None,
    options: MatrixOptions,
    *,
    master: str | None = None,
    jobs: int = DEFAULT_JOBS,
) -> list[dict[str, Any]]:
    """Audit the tasks on Spark (``master`` None: the master spark-submit or the session gives).

    Stops the SparkSession afterwards if this call created it.

    Raises:
        MissingDependencyError: pyspark is not installed.
        SparkStartError: Spark cannot start (no Java, a bad master URL).
    """
    require_pyspark()
    if not tasks:
        return []
    work = partial(audit_partition, dict(storage_options or {}), options, jobs)
    with spark_session(SessionOptions("checkpoint-doctor audit", master)) as spark:
        return map_partitions(spark, tasks, work, per_core=SLICES_PER_CORE)
