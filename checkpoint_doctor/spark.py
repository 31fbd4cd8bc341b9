"""The PySpark edge: the ONLY module of the package that imports pyspark (lazily, inside functions,
so the package works without the ``spark`` extra) or calls a Spark object.

Its two users: the catch-up run (:mod:`checkpoint_doctor.execution.catch_up.run`) starts the
operator's streaming query and watches it; the audit's distributed mode
(:mod:`checkpoint_doctor.fleet.spark`) runs the per-checkpoint audit in Spark tasks. For both it
checks that pyspark is installed (:func:`require_pyspark`), creates the session the same way
(:func:`spark_session`: Spark's log at ERROR, no stage progress bar, the JVM's stdout on stderr,
local executors with this interpreter; stopped afterwards if this call created it), and turns Spark's
exceptions into their message text (:func:`exception_text`). Catch-up also gets
:func:`start_query` and :class:`Query` (active, between triggers, progress, stop, failure); the audit
:func:`map_partitions`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from checkpoint_doctor.errors import MissingDependencyError, SparkStartError

T = TypeVar("T")
R = TypeVar("R")


def require_pyspark(feature: str) -> str:
    """Return the installed pyspark version.

    Raises:
        MissingDependencyError: pyspark is not installed (names ``feature`` and the ``spark`` extra).
    """
    try:
        import pyspark
    except ImportError as exc:
        raise MissingDependencyError(feature, "spark", "pyspark") from exc
    return str(pyspark.__version__)


@dataclass(frozen=True)
class SessionOptions:
    """How to create the session: the application's name, ``--master`` (None: Spark's own, e.g.
    spark-submit's or ``local[*]``) and ``--conf`` pairs."""

    app_name: str
    master: str | None = None
    confs: tuple[tuple[str, str], ...] = ()


@contextlib.contextmanager
def spark_session(opts: SessionOptions) -> Iterator[Any]:
    """Yield a SparkSession: the active one if there is one, else a new one, stopped afterwards.

    Raises:
        SparkStartError: Spark cannot start (no Java, a bad master URL or conf), with Spark's message.
    """
    from pyspark.sql import SparkSession

    created = SparkSession.getActiveSession() is None
    if opts.master is not None and opts.master.startswith("local") and "PYSPARK_PYTHON" not in os.environ:
        # Local executors are forked from the driver machine: run them with this interpreter
        # (PySpark's default is whatever "python3" is on PATH, which may lack checkpoint-doctor or
        # the job's own modules).
        os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = SparkSession.builder.appName(opts.app_name)
    if opts.master:
        builder = builder.master(opts.master)
    if "spark.ui.showConsoleProgress" not in {k for k, _ in opts.confs}:
        # The commands show their own status; Spark's stage bar would interleave with it.
        builder = builder.config("spark.ui.showConsoleProgress", "false")
    for key, value in opts.confs:
        builder = builder.config(key, value)
    try:
        with _jvm_stdout_to_stderr():
            spark = builder.getOrCreate()
    except Exception as exc:  # Spark's own reasons (no Java, a bad master URL) are the message
        where = f" (--master {opts.master})" if opts.master else ""
        raise SparkStartError(
            f"cannot start Spark{where}: {(exception_text(exc).strip().splitlines() or [type(exc).__name__])[0]}",
            hint="check that Java is installed (JAVA_HOME or java on PATH) and the --master and --conf values",
        ) from exc
    if created:
        spark.sparkContext.setLogLevel("ERROR")
        _local_workers_use_this_interpreter(spark.sparkContext)
    try:
        yield spark
    finally:
        if created:
            with contextlib.suppress(Exception):
                spark.stop()


def _local_workers_use_this_interpreter(sc: Any) -> None:
    """Run the Python workers of a local master with this interpreter, also when the master came
    from Spark's own default (``local[*]``) or spark-submit rather than ``--master``.

    ``SparkContext.__init__`` takes ``pythonExec`` from ``PYSPARK_PYTHON`` (default ``python3`` on
    PATH, which may lack checkpoint-doctor or the job's modules); each Python function is wrapped
    with ``sc.pythonExec`` when its job is submitted, so setting it now covers every job.
    """
    if "PYSPARK_PYTHON" in os.environ or "spark.pyspark.python" in dict(sc.getConf().getAll()):
        return
    if str(sc.master).startswith("local"):
        sc.pythonExec = sys.executable


def ship_py_file(spark: Any, path: str) -> None:
    """Put a zip of Python packages on every executor's ``sys.path`` (``SparkContext.addPyFile``),
    and not on the driver's.

    ``SparkContext.addPyFile`` also inserts the zip's copy (in Spark's temp ``userFiles-*``
    directory) at ``sys.path[1]`` of the driver ("for tests in local mode", pyspark's comment): the
    driver would then import a module it has not imported yet (``tabulate``, lazily, to print the
    table) from a zip that ``SparkSession.stop`` deletes, a ``FileNotFoundError`` after the audit
    (issue 31 item 14). The workers do not need it there: ``pyspark.worker`` puts each of the job's
    Python includes on its own path.
    """
    import importlib

    before = set(sys.path)
    spark.sparkContext.addPyFile(path)
    added = [entry for entry in sys.path if entry not in before]
    for entry in added:
        sys.path.remove(entry)
        sys.path_importer_cache.pop(entry, None)
    if added:
        importlib.invalidate_caches()


def task_failure_text(exc: BaseException) -> str:
    """Return the one line that says why a Spark job's Python task failed: the last
    ``SomeError: message`` line of the worker's traceback inside Spark's message, else its first line."""
    text = exception_text(exc)
    found = re.findall(r"^\s*((?:[A-Za-z_][\w.]*)?(?:Error|Exception)\b: .*)$", text, flags=re.M)
    if found:
        return str(found[-1]).strip()
    return (text.strip().splitlines() or [type(exc).__name__])[0]


@contextlib.contextmanager
def _jvm_stdout_to_stderr() -> Iterator[None]:
    """Point fd 1 at stderr while the JVM is launched: the JVM inherits it for good.

    Spark writes to the JVM's stdout (console sinks, some log4j setups, progress bars) and the
    launcher (``pyspark.java_gateway.launch_gateway``) does not redirect it, so it would mix with the
    command's output (one JSON document in ``--format json``).
    """
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def exception_text(exc: BaseException) -> str:
    """Return the message of an exception pyspark raised (its ``desc`` for captured JVM errors)."""
    desc = getattr(exc, "desc", None)
    return str(desc) if desc else str(exc)


def raised_by_spark(exc: BaseException) -> bool:
    """Return whether pyspark (or py4j, for the JVM) raised ``exc``: its message is Spark's own."""
    return type(exc).__module__.split(".")[0] in ("pyspark", "py4j")


# ------------------------------------------------------------------------------------------ queries


class QueryStartError(Exception):
    """Raised when ``DataStreamWriter.start()`` fails; ``text`` is Spark's message."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def start_query(writer: Any, options: Sequence[tuple[str, str]], trigger: Mapping[str, Any]) -> Query:
    """Add ``options`` and the trigger (``DataStreamWriter.trigger`` keywords) and start the query.

    Raises:
        QueryStartError: Spark refused the query at ``start()``.
    """
    for key, value in options:
        writer = writer.option(key, value)
    writer = writer.trigger(**trigger)
    try:
        return Query(writer.start())
    except Exception as exc:  # Spark's refusals at start() are results, in its words
        raise QueryStartError(exception_text(exc)) from exc


#: What ``--job`` refuses while the operator's code runs (issue 31 item 3: a job that started its
#: query left ``offsets/4`` in the checkpoint after a ``diagnose``). ``DataStreamWriter.start`` and
#: ``toTable`` reach ``StreamingQueryManager.startQuery``, whose first micro-batch writes the offsets
#: log; the batch writers write wherever their path says (the checkpoint too).
_PYTHON_WRITES = (
    ("pyspark.sql.streaming.readwriter", "DataStreamWriter", ("start", "toTable")),
    (
        "pyspark.sql.readwriter",
        "DataFrameWriter",
        ("save", "saveAsTable", "insertInto", "json", "parquet", "text", "csv", "xml", "orc", "jdbc"),
    ),
    (
        "pyspark.sql.readwriter",
        "DataFrameWriterV2",
        ("create", "replace", "createOrReplace", "append", "overwrite", "overwritePartitions"),
    ),
)
#: The same through py4j, on the JVM objects themselves (``df._jdf.writeStream().start()`` passes by
#: the Python classes): ``DataStreamWriter.start/toTable``, ``StreamingQueryManager.startQuery``,
#: ``DataFrameWriter.save/saveAsTable/insertInto``, and the RDD saves PySpark's ``RDD.saveAs*``
#: reach (``JavaRDD.saveAsTextFile``, ``PythonRDD.saveAsHadoopFile`` ...). No JVM method of these
#: names builds a query.
_JVM_WRITES = frozenset(
    {
        *("start", "toTable", "startQuery", "save", "saveAsTable", "insertInto"),
        *("saveAsTextFile", "saveAsObjectFile", "saveAsSequenceFile", "saveAsHadoopFile"),
        *("saveAsNewAPIHadoopFile", "saveAsHadoopDataset", "saveAsNewAPIHadoopDataset"),
    }
)


class StartRefusedError(RuntimeError):
    """The operator's code asked to start a query or write while ``--job`` only describes it."""


@contextlib.contextmanager
def nothing_starts(what: str) -> Iterator[None]:
    """While inside: every call that starts a streaming query or writes a DataFrame raises
    :class:`StartRefusedError` before Spark is asked (``what``: the job, for the message).

    PySpark's writer methods and py4j's ``JavaMember.__call__`` are replaced for the time of the
    block, in this process only (the ``--job`` probe, a child that exits afterwards).
    """
    import importlib

    java_member = importlib.import_module("py4j.java_gateway").JavaMember

    def refuse(name: str) -> Callable[..., Any]:
        def refused(*_args: Any, **_kwargs: Any) -> Any:
            raise StartRefusedError(
                f"{what} called {name}(): --job only analyses the query, it must not start or write "
                "anything (return the DataStreamWriter, not started)"
            )

        return refused

    saved: list[tuple[Any, str, Any]] = []
    for module_name, class_name, methods in _PYTHON_WRITES:
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):  # a class this line does not have
            continue
        for method in methods:
            if method in cls.__dict__:
                saved.append((cls, method, cls.__dict__[method]))
                setattr(cls, method, refuse(f"{class_name}.{method}"))
    java_call = java_member.__call__

    def guarded_call(self: Any, *args: Any) -> Any:
        if self.name in _JVM_WRITES:
            raise StartRefusedError(
                f"{what} called the JVM's {self.name}() through py4j: --job only analyses the query, it "
                "must not start or write anything (return the DataStreamWriter, not started)"
            )
        return java_call(self, *args)

    saved.append((java_member, "__call__", java_call))
    java_member.__call__ = guarded_call
    try:
        yield
    finally:
        for cls, method, original in reversed(saved):
            setattr(cls, method, original)


def active_queries(spark: Any) -> list[Any]:
    """Return the session's active streaming queries (none when it cannot say)."""
    try:
        return list(spark.streams.active)
    except Exception:  # noqa: BLE001 - a session that cannot list its queries has started none we know of
        return []


def stop_quietly(query: Any) -> None:
    """Stop a ``StreamingQuery`` and ignore how it went (it is not the one being watched)."""
    with contextlib.suppress(Exception):
        query.stop()


class Query:
    """A running ``StreamingQuery`` (classic or Spark Connect) as the catch-up run reads it."""

    def __init__(self, query: Any) -> None:
        self._query = query

    @property
    def active(self) -> bool:
        """Return whether the query is still running."""
        return bool(self._query.isActive)

    def trigger_active(self) -> bool:
        """Return whether a trigger (a batch) is running now, from ``StreamingQuery.status``."""
        status = self._query.status or {}
        return bool(status.get("isTriggerActive", False))

    def progress(self) -> list[dict[str, Any]]:
        """Return the query's recent progress events as dicts."""
        return [progress_dict(p) for p in self._query.recentProgress]

    def stop(self) -> str | None:
        """Stop the query; return Spark's message if stop() raised, for the caller to judge."""
        try:
            self._query.stop()
        except Exception as exc:  # noqa: BLE001 - judged by the caller like the query's own exception
            return exception_text(exc)
        return None

    def failure(self) -> str | None:
        """Return the message of the exception that terminated the query, if any."""
        exc = self._query.exception()
        return exception_text(exc) if exc is not None else None


def progress_dict(p: Any) -> dict[str, Any]:
    """Return a progress event as a dict (3.5 returns dicts, 4.x StreamingQueryProgress objects)."""
    if isinstance(p, Mapping):
        return dict(p)
    text = getattr(p, "json", None)
    if callable(text):
        text = text()
    if isinstance(text, str):
        loaded = json.loads(text)
        if isinstance(loaded, dict):
            return loaded
    return {}


# ------------------------------------------------------------------------------------------ tasks


def map_partitions(
    spark: Any, items: Sequence[T], work: Callable[[Iterable[T]], Iterable[R]], *, per_core: int
) -> list[R]:
    """Run ``work`` over slices of ``items`` in Spark tasks and collect the results on the driver.

    ``per_core`` slices per core of the cluster: small tasks balance uneven work. ``work`` is
    pickled to the executors, so it must be importable there (a module-level function or a partial).
    """
    if not items:
        return []
    sc = spark.sparkContext
    slices = max(1, min(len(items), sc.defaultParallelism * per_core))
    return list(sc.parallelize(list(items), slices).mapPartitions(work).collect())


# ------------------------------------------------------------------------------------------ job facts


def describe_writer(spark: Any, writer: Any) -> dict[str, Any]:
    """Return what a not-started ``DataStreamWriter`` would run, as Spark itself sees it, without
    starting it: nothing is read from its sources and nothing is written anywhere.

    * ``sources``: the streaming relations of the DataFrame's analysed plan, in the order
      ``MicroBatchExecution.logicalPlan`` numbers them (a pre-order walk, left child first: that
      order is the index of each source in the offsets log and in ``sources/<n>``);
    * ``operators``: the stateful operators, numbered in the same order as
      ``IncrementalExecution``'s ``state`` rule assigns operator ids (``plan transform``, top
      down), each with the key and value schema its state store keeps (a streaming aggregation:
      its grouping attributes and its aggregate buffer, ``StreamingAggregationStateManagerImplV2``);
    * ``sink``: the writer's own fields (format, output mode, trigger, ``path`` option);
    * ``confs``: the session's ``spark.sql.*`` confs that are set (``SET``), the ones a restart
      compares with the confs the checkpoint pins (``OffsetSeqMetadata.setSessionConf``);
    * ``unsupported``: what ``UnsupportedOperationChecker.checkForStreaming`` says of the plan and the
      output mode (``StreamingQueryManager.createQuery`` runs it in ``start()``, before the
      checkpoint is read), or None when it accepts them.
    """
    jwrite = writer._jwrite
    fields = _declared_fields(jwrite)
    options = _java_map(spark, fields.get("extraOptions"))
    sources: list[dict[str, Any]] = []
    operators: list[dict[str, Any]] = []
    analyzed = writer._df._jdf.queryExecution().analyzed()
    _walk_plan(spark, analyzed, sources, operators)
    confs = {
        str(r[0]): str(r[1])
        for r in spark.sql("SET").collect()
        if str(r[0]).startswith("spark.sql.") and str(r[0]) != "spark.sql.warehouse.dir"
    }
    return {
        "spark_version": str(spark.version),
        "sources": sources,
        "operators": operators,
        "confs": confs,
        "unsupported": _unsupported_operation(spark, analyzed, fields.get("outputMode")),
        "sink": {
            "format": _scala_option_text(fields.get("source")),
            "output_mode": _scala_option_text(fields.get("outputMode")),
            "trigger": _scala_option_text(fields.get("trigger")),
            "path": options.get("path"),
            "options": options,
        },
    }


def _unsupported_operation(spark: Any, analyzed: Any, output_mode: Any) -> str | None:
    """Spark's refusal of the plan in the output mode (``UnsupportedOperationChecker``), or None.

    ``start()`` checks this only while ``spark.sql.streaming.unsupportedOperationCheck`` is on (the
    default), and it runs before anything is read, so the answer does not depend on the checkpoint."""
    enabled = str(spark.conf.get("spark.sql.streaming.unsupportedOperationCheck", "true")).lower()
    if output_mode is None or enabled != "true":
        return None
    checker = spark._jvm.org.apache.spark.sql.catalyst.analysis.UnsupportedOperationChecker
    try:
        checker.checkForStreaming(analyzed, output_mode)
    except Exception as exc:  # noqa: BLE001 - Spark's refusal is the answer, in its words
        return exception_text(exc).strip() or type(exc).__name__
    return None


def _declared_fields(obj: Any) -> dict[str, Any]:
    """The JVM object's private fields by name (``DataStreamWriter`` keeps its settings in vars
    with no getters: ``source``, ``outputMode``, ``trigger``, ``extraOptions``)."""
    out: dict[str, Any] = {}
    for field in obj.getClass().getDeclaredFields():
        name = str(field.getName()).rpartition("$")[2]
        with contextlib.suppress(Exception):  # a field the JVM will not open is not one we need
            field.setAccessible(True)
            out[name] = field.get(obj)
    return out


def _scala_option_text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value.toString()) if hasattr(value, "toString") else str(value)
    if text == "None":
        return None
    return text[5:-1] if text.startswith("Some(") and text.endswith(")") else text


def _java_map(spark: Any, value: Any) -> dict[str, str]:
    """A Scala ``Map`` or a ``CaseInsensitiveMap`` as a dict (keys as the job wrote them)."""
    if value is None:
        return {}
    for keeper in ("originalMap", "asCaseSensitiveMap"):  # what the job wrote, not lower-cased
        with contextlib.suppress(Exception):
            value = getattr(value, keeper)()
            break
    try:
        converted = spark._jvm.scala.collection.JavaConverters.mapAsJavaMapConverter(value).asJava()
    except Exception:  # noqa: BLE001 - already a java.util.Map (CaseInsensitiveStringMap)
        converted = value
    try:
        return {str(k): str(converted.get(k)) for k in converted.keySet()}
    except Exception:  # noqa: BLE001 - an unknown map type: no options rather than a failure
        return {}


def _seq(value: Any) -> list[Any]:
    return [value.apply(i) for i in range(value.size())]


def _struct(attributes: list[Any]) -> dict[str, Any]:
    """The StructType JSON of attributes (``DataTypeUtils.fromAttributes``), as the schema files keep it."""
    return {
        "type": "struct",
        "fields": [
            {
                "name": _expression_name(a),
                "type": json.loads(str(a.dataType().json())),
                "nullable": bool(a.nullable()),
                "metadata": {},
            }
            for a in attributes
        ],
    }


def _expression_name(expression: Any) -> str:
    try:
        return str(expression.name())
    except Exception:  # noqa: BLE001 - a grouping expression that is not a named one
        return str(expression.toString())


def _aggregate_buffers(expression: Any, seen: dict[str, Any]) -> None:
    if str(expression.getClass().getSimpleName()) == "AggregateExpression":
        key = str(expression.canonicalized().toString())
        if key not in seen:
            seen[key] = _seq(expression.aggregateFunction().aggBufferAttributes())
        return
    for child in _seq(expression.children()):
        _aggregate_buffers(child, seen)


#: The logical nodes of PySpark's transformWithState (``TransformWithStateInPandas`` 4.0,
#: ``TransformWithStateInPySpark`` 4.1+, both APIs).
_TWS_NODES = ("TransformWithStateInPandas", "TransformWithStateInPySpark")
#: The PySpark methods that build one: ``GroupedData.transformWithStateInPandas`` (4.0+) and the
#: Row-based ``transformWithState`` (4.1+), each the API its operator is named after.
_TWS_METHODS = (("transformWithStateInPandas", "pandas"), ("transformWithState", "row"))


@contextlib.contextmanager
def recording_processors() -> Iterator[list[dict[str, Any]]]:
    """While inside: each transformWithState the job builds is recorded (its API and its
    ``StatefulProcessor``) in the yielded list, in call order, and built as usual."""
    import importlib

    grouped = importlib.import_module("pyspark.sql.group").GroupedData
    calls: list[dict[str, Any]] = []
    saved: list[tuple[str, Any]] = []
    for method, api in _TWS_METHODS:
        original = getattr(grouped, method, None)
        if original is None:  # a line without this API (4.0 has no Row-based one)
            continue

        def recorded(self: Any, *args: Any, _original: Any = original, _api: str = api, **kwargs: Any) -> Any:
            processor = kwargs.get("statefulProcessor", args[0] if args else None)
            calls.append({"api": _api, "processor": processor})
            return _original(self, *args, **kwargs)

        saved.append((method, grouped.__dict__.get(method)))
        setattr(grouped, method, recorded)
    try:
        yield calls
    finally:
        for method, original in saved:
            if original is None:
                delattr(grouped, method)
            else:
                setattr(grouped, method, original)


class _Inert:
    """What a recorded state variable or handle call returns: anything called on it does nothing."""

    def __getattr__(self, _name: str) -> Any:
        return lambda *_a, **_k: None


class _RecordingHandle:
    """A ``StatefulProcessorHandle`` for ``init``: it records each state variable as the driver's
    pre-init run of the processor does (``TransformWithStateInPySparkPythonPreInitRunner``, the
    handle in ``StatefulProcessorHandleState.PRE_INIT``), whose schemas become the column families
    ``TransformWithStateExec.validateAndMaybeEvolveStateSchema`` compares with the schema files."""

    def __init__(self, spark: Any) -> None:
        self._spark = spark
        self.variables: list[dict[str, Any]] = []

    def _schema(self, schema: Any) -> dict[str, Any]:
        if isinstance(schema, str):  # a DDL string, parsed as PySpark's handle has the JVM parse it
            return json.loads(
                str(self._spark._jvm.org.apache.spark.sql.types.StructType.fromDDL(schema).json())
            )
        return json.loads(schema.json())

    def _add(self, name: str, kind: str, value: Any, ttl: Any, user_key: Any = None) -> _Inert:
        self.variables.append(
            {
                "name": str(name),
                "kind": kind,
                "value_schema": self._schema(value),
                "user_key_schema": None if user_key is None else self._schema(user_key),
                "ttl": ttl is not None,
            }
        )
        return _Inert()

    def getValueState(self, stateName: Any, schema: Any, ttlDurationMs: Any = None) -> _Inert:
        return self._add(stateName, "ValueState", schema, ttlDurationMs)

    def getListState(self, stateName: Any, schema: Any, ttlDurationMs: Any = None) -> _Inert:
        return self._add(stateName, "ListState", schema, ttlDurationMs)

    def getMapState(
        self,
        stateName: Any,
        userKeySchema: Any,
        valueSchema: Any,
        ttlDurationMs: Any = None,
    ) -> _Inert:
        return self._add(stateName, "MapState", valueSchema, ttlDurationMs, userKeySchema)

    def __getattr__(self, _name: str) -> Any:  # timers, query info: nothing to record in init
        return lambda *_a, **_k: _Inert()


def describe_processors(spark: Any, calls: list[dict[str, Any]], operators: list[dict[str, Any]]) -> None:
    """Give each transformWithState operator of ``operators`` its API and the state variables its
    processor's ``init`` declares (a processor whose ``init`` fails gets ``init_error``). The plan is
    walked top down, so the operator built last comes first."""
    tws = [o for o in operators if o["kind"] in _TWS_NODES]
    for operator, call in zip(tws, reversed(calls), strict=False):
        operator["api"] = call["api"]
        handle = _RecordingHandle(spark)
        try:
            call["processor"].init(handle)
        except Exception as exc:  # noqa: BLE001 - the operator's code: its failure is a fact
            operator["init_error"] = f"{type(exc).__name__}: {exc}"
        operator["state_variables"] = handle.variables


def _walk_plan(spark: Any, plan: Any, sources: list[dict[str, Any]], operators: list[dict[str, Any]]) -> None:
    kind = str(plan.getClass().getSimpleName())
    children = _seq(plan.children())
    streaming = any(bool(c.isStreaming()) for c in children)
    if kind == "StreamingRelationV2":
        sources.append({"name": str(plan.sourceName()), "options": _java_map(spark, plan.extraOptions())})
    elif kind == "StreamingRelation":
        sources.append(
            {"name": str(plan.sourceName()), "options": _java_map(spark, plan.dataSource().options())}
        )
    elif kind == "Aggregate" and streaming:
        buffers: dict[str, Any] = {}
        for expr in _seq(plan.aggregateExpressions()):
            _aggregate_buffers(expr, buffers)
        keys = list(_seq(plan.groupingExpressions()))
        operators.append(
            {
                "kind": "aggregate",
                "key_schema": _struct(keys),
                "value_schema": _struct([a for attrs in buffers.values() for a in attrs]),
            }
        )
    elif kind in ("Deduplicate", "DeduplicateWithinWatermark") and streaming:
        dedup = "dedup" if kind == "Deduplicate" else "dedupWithinWatermark"
        operators.append({"kind": dedup, "key_schema": _struct(_seq(plan.keys())), "value_schema": None})
    elif kind in _TWS_NODES and streaming:
        # A Python transformWithState (4.0 TransformWithStateInPandas, 4.1+ TransformWithStateInPySpark):
        # its state key is the grouping attributes, the first ``groupingAttributesLen`` of the child's
        # output; the state variables are the processor's (:func:`describe_processors`).
        grouping = _seq(plan.child().output())[: int(plan.groupingAttributesLen())]
        operators.append(
            {
                "kind": kind,
                "key_schema": _struct(grouping),
                "value_schema": None,
                "time_mode": str(plan.timeMode().toString()),
                "output_mode": str(plan.outputMode().toString()),
            }
        )
    elif kind == "Join" and all(bool(c.isStreaming()) for c in children):
        operators.append({"kind": "join", "key_schema": None, "value_schema": None})
    elif streaming and kind in (
        "FlatMapGroupsWithState",
        "TransformWithState",
        "FlatMapGroupsInPandasWithState",
        "GlobalLimit",
        "Limit",
    ):
        operators.append({"kind": kind, "key_schema": None, "value_schema": None})
    for child in children:
        _walk_plan(spark, child, sources, operators)
