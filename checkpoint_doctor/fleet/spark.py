"""Run a fleet audit on a Spark cluster: Spark is the distributed engine operators already run.

The driver lists each root once and discovers the targets (:func:`~checkpoint_doctor.fleet.run.plan_fleet`);
here the tasks (URL + its slice of the listing) are parallelized, each Spark task opens its own
fsspec storage for its targets, runs the same per-target audit as a local run
(:func:`~checkpoint_doctor.fleet.run.audit_task`: reads, pure diagnosis, typed record), and the
records come back to the driver with ``collect``. No listing request is repeated on the executors.

Spark is reached through :mod:`checkpoint_doctor.spark` (the one module that imports pyspark), which
creates the session like catch-up's. The driver ships its own checkpoint-doctor and pure-Python
dependencies with the job (:mod:`checkpoint_doctor.fleet.shipping`); a first one-task job checks that
an executor can open each root's storage (s3fs for S3 must be installed there: it is not pure
Python), so a missing package is one line naming the install, not a worker traceback.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checkpoint_doctor.diagnosis.matrix import MatrixOptions
from checkpoint_doctor.errors import SparkExecutorError
from checkpoint_doctor.fleet.delta import DeltaIndex, TableTask
from checkpoint_doctor.fleet.records import Record
from checkpoint_doctor.fleet.run import DEFAULT_JOBS, AuditTask, run_tasks
from checkpoint_doctor.fleet.shipping import package_zip
from checkpoint_doctor.spark import (
    SessionOptions,
    map_partitions,
    raised_by_spark,
    ship_py_file,
    spark_session,
    task_failure_text,
)
from checkpoint_doctor.spark import require_pyspark as _require_pyspark

if TYPE_CHECKING:
    from checkpoint_doctor.reading.storage import Storage

#: Tasks per core of the cluster: small tasks balance uneven checkpoints.
SLICES_PER_CORE = 4


def require_pyspark() -> None:
    """Check that pyspark can be imported.

    Raises:
        MissingDependencyError: pyspark is not installed (names ``--on-spark`` and the ``spark`` extra).
    """
    _require_pyspark("--on-spark")


def audit_partition(
    storage_options: Mapping[str, Any],
    options: MatrixOptions,
    jobs: int,
    tasks: Iterable[AuditTask],
    delta: DeltaIndex | None = None,
) -> Iterator[Record]:
    """Audit one Spark partition of tasks on an executor; yield one record per task (``delta``: the
    Delta tables the driver read for pairing, read on here through this executor's stores)."""
    from checkpoint_doctor.reading.storage import open_storage

    stores: dict[str, Storage] = {}

    def store_for(task: AuditTask | TableTask) -> Storage:
        # One store per root on this executor; each target (or Delta table) is a child of it.
        if task.root not in stores:
            stores[task.root] = open_storage(task.root, storage_options)
        root = stores[task.root]
        return root.child(task.path) if task.path else root

    if delta is not None:
        delta.bind(store_for)
    yield from run_tasks(list(tasks), store_for, options, jobs=jobs, delta=delta)


def _audit_partition(
    storage_options: Mapping[str, Any],
    options: MatrixOptions,
    jobs: int,
    delta: DeltaIndex | None,
    tasks: Iterable[AuditTask],
) -> Iterator[Record]:
    yield from audit_partition(storage_options, options, jobs, tasks, delta)


def probe_executor(
    roots: Sequence[str], storage_options: Mapping[str, Any], _items: Iterable[Any]
) -> Iterator[str]:
    """Open each root's storage on an executor (no request is made); yield why one cannot be
    opened there (an empty iterator: every one can)."""
    from checkpoint_doctor.errors import MissingDependencyError
    from checkpoint_doctor.reading.storage import open_storage

    for root in roots:
        try:
            open_storage(root, storage_options)
        except MissingDependencyError as exc:
            yield f"{exc.message}; {exc.hint}" if exc.hint else exc.message
            return
        except Exception:  # noqa: BLE001 - any other failure is the audit's to report, per target
            continue


def _executor_error(reason: str) -> SparkExecutorError:
    return SparkExecutorError(
        f"the Spark executors cannot run the audit: {reason}",
        hint="install checkpoint-doctor (with the extra its storage needs, e.g. 'checkpoint-doctor[s3]') "
        "in the executors' Python environment, or point PYSPARK_PYTHON at a Python that has it",
    )


def run_on_spark(
    tasks: Sequence[AuditTask],
    storage_options: Mapping[str, Any] | None,
    options: MatrixOptions,
    *,
    master: str | None = None,
    jobs: int = DEFAULT_JOBS,
    delta: DeltaIndex | None = None,
) -> list[Record]:
    """Audit the tasks on Spark (``master`` None: the master spark-submit or the session gives;
    ``delta``: the Delta tables to pair with, read for pairing on the driver, shipped with the job).

    Stops the SparkSession afterwards if this call created it.

    Raises:
        MissingDependencyError: pyspark is not installed.
        SparkStartError: Spark cannot start (no Java, a bad master URL).
    """
    require_pyspark()
    if not tasks:
        return []
    storage = dict(storage_options or {})
    work = partial(_audit_partition, storage, options, jobs, delta)
    roots = tuple(dict.fromkeys(t.root for t in tasks))
    with (
        tempfile.TemporaryDirectory(prefix="checkpoint-doctor-ship-") as ship,
        spark_session(SessionOptions("checkpoint-doctor audit", master)) as spark,
    ):
        ship_py_file(spark, str(package_zip(Path(ship) / "checkpoint_doctor_job.zip")))
        try:
            problems = map_partitions(spark, [0], partial(probe_executor, roots, storage), per_core=1)
        except Exception as exc:  # the worker could not even start the task: its Python lacks a package
            if not raised_by_spark(exc):
                raise
            raise _executor_error(task_failure_text(exc)) from exc
        if problems:
            raise _executor_error(problems[0])
        return map_partitions(spark, tasks, work, per_core=SLICES_PER_CORE)
