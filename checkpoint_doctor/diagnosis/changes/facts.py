"""Job facts: what Spark says a not-started streaming job would run (sources, stateful operators
with their state schemas, session confs, sink, trigger), read by ``checkpoint_doctor.spark.
describe_writer`` in a subprocess on a Spark line and carried here as typed values. Pure."""

from __future__ import annotations

import json
from typing import Any

from checkpoint_doctor.redaction import is_secret
from checkpoint_doctor.valueclasses import frozen


@frozen
class JobSource:
    """One streaming relation of the job's plan, in Spark's source order: its short name
    (``kafka``, ``rate-micro-batch``, ``parquet``...) and its options (secrets hidden)."""

    name: str
    options: tuple[tuple[str, str], ...] = ()

    @property
    def text(self) -> str:
        """Return the source as one line: its name and the options that identify it."""
        ident = [f"{k}={v}" for k, v in self.options if k.lower() in _IDENTITY_OPTIONS]
        return self.name + (f" ({', '.join(ident)})" if ident else "")


#: The options that say which data a source reads (Kafka's topics, a file source's path).
_IDENTITY_OPTIONS = frozenset({"subscribe", "subscribepattern", "assign", "path", "table"})


@frozen
class TwsVariable:
    """A state variable a transformWithState processor's ``init`` declares (the driver's pre-init
    run of the processor): its name, kind (``ValueState``, ``ListState``, ``MapState``), value
    schema, a MapState's user key schema (StructType JSON) and whether it has a TTL."""

    name: str
    kind: str
    value_schema: str
    user_key_schema: str | None = None
    ttl: bool = False


@frozen
class TwsFacts:
    """A Python transformWithState operator as the job builds it: its API (``pandas`` for
    ``transformWithStateInPandas``, ``row`` for ``transformWithState``), ``timeMode`` and output mode
    as the analysed plan holds them (``NoTime``, ``ProcessingTime``, ``EventTime``; ``Update``,
    ``Append``), and its state variables; ``init_error`` when the processor's ``init`` failed."""

    api: str
    time_mode: str
    output_mode: str
    variables: tuple[TwsVariable, ...] = ()
    init_error: str | None = None


@frozen
class JobOperator:
    """A stateful operator with the id ``IncrementalExecution`` gives it and the key and value
    schemas (StructType JSON) its state store keeps; None where not derived. A transformWithState
    operator's key schema is its grouping key, and ``tws`` holds the rest."""

    operator_id: int
    kind: str
    key_schema: str | None = None
    value_schema: str | None = None
    tws: TwsFacts | None = None

    @property
    def name(self) -> str:
        """Return the name Spark writes to the operator metadata (``StateStoreWriter.shortName``):
        a Python transformWithState's depends on its API (``TransformWithStateInPySparkExec``:
        ``transformWithStateInPandasExec`` for pandas, ``transformWithStateInPySparkExec`` for Row)."""
        if self.tws is not None:
            return _TWS_SHORT_NAMES.get(self.tws.api, self.kind)
        return _SHORT_NAMES.get(self.kind, self.kind)


#: The operator metadata's name of a Python transformWithState per API (4.0's
#: ``TransformWithStateInPandasExec`` and 4.1+'s ``TransformWithStateInPySparkExec`` alike)
#: [exp: fixtures/tws/spark-*/tws_pandas-healthy, tws_row-healthy].
_TWS_SHORT_NAMES = {"pandas": "transformWithStateInPandasExec", "row": "transformWithStateInPySparkExec"}


#: ``StateStoreWriter.shortName`` of each operator kind the probe reports.
_SHORT_NAMES = {
    "aggregate": "stateStoreSave",
    "dedup": "dedupe",
    "dedupWithinWatermark": "dedupeWithinWatermark",
    "join": "symmetricHashJoin",
    "FlatMapGroupsWithState": "flatMapGroupsWithState",
    "TransformWithState": "transformWithStateExec",
    "GlobalLimit": "globalLimit",
}


@frozen
class JobFacts:
    """What the job would run, as the Spark line ``spark_version`` analysed it in ``elapsed_s``."""

    job: str
    spark_version: str
    sources: tuple[JobSource, ...]
    operators: tuple[JobOperator, ...]
    confs: tuple[tuple[str, str], ...]
    sink_format: str | None
    sink_path: str | None
    output_mode: str | None
    trigger: str | None
    elapsed_s: float
    #: ``asyncProgressTrackingEnabled`` among the writer's options.
    async_tracking: bool = False
    #: Spark's refusal of the plan in its output mode (``UnsupportedOperationChecker``, run by
    #: ``start()`` before the checkpoint is read), first line; None when Spark accepts it.
    unsupported: str | None = None

    @property
    def mode(self) -> str:
        """Return the restart mode the job's trigger and options make: ``continuous`` for a
        ContinuousTrigger, ``real-time`` for a RealTimeTrigger, ``async`` with async progress
        tracking, else ``micro-batch``."""
        trigger = self.trigger or ""
        if trigger.startswith("ContinuousTrigger"):
            return "continuous"
        if trigger.startswith("RealTimeTrigger"):
            return "real-time"
        return "async" if self.async_tracking else "micro-batch"

    @property
    def summary(self) -> str:
        """Return the job in one line, as the assumptions print it."""
        sources = ", ".join(s.text for s in self.sources) or "none"
        ops = ", ".join(f"{o.operator_id}: {o.name}" for o in self.operators) or "none (stateless)"
        sink = self.sink_format or "?"
        if self.sink_path:
            sink += f" at {self.sink_path}"
        return (
            f"query from --job {self.job}, as Spark {self.spark_version} analysed it in {self.elapsed_s:g} s "
            f"(not started): {len(self.sources)} source(s) [{sources}]; stateful operators [{ops}]; "
            f"sink {sink} ({self.output_mode or '?'}); trigger {self.trigger or '?'}; mode {self.mode}"
        )

    @property
    def stateful(self) -> bool:
        """Return whether the job has a stateful operator."""
        return bool(self.operators)

    def conf(self, key: str) -> str | None:
        """Return a session conf the job's session sets, or None."""
        return dict(self.confs).get(key)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "job": self.job,
            "spark_version": self.spark_version,
            "sources": [{"name": s.name, "options": dict(s.options)} for s in self.sources],
            "operators": [
                {
                    "operator_id": o.operator_id,
                    "kind": o.kind,
                    "key_schema": o.key_schema,
                    "value_schema": o.value_schema,
                    **({"tws": _tws_dict(o.tws)} if o.tws is not None else {}),
                }
                for o in self.operators
            ],
            "confs": dict(self.confs),
            "sink": {
                "format": self.sink_format,
                "path": self.sink_path,
                "output_mode": self.output_mode,
                "trigger": self.trigger,
            },
            "mode": self.mode,
            "unsupported": self.unsupported,
            "elapsed_s": self.elapsed_s,
        }


def _options(raw: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        return ()
    return tuple(sorted((str(k), "***" if is_secret(str(k)) else str(v)) for k, v in raw.items()))


def _schema(raw: Any) -> str | None:
    if raw is None:
        return None
    return raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True)


def job_facts_from_dict(job: str, data: dict[str, Any], elapsed_s: float) -> JobFacts:
    """Return the facts of the probe's JSON (``describe_writer``'s dict).

    Raises:
        ValueError: the document is not the probe's shape.
    """
    if not isinstance(data, dict) or not isinstance(data.get("sources"), list):
        raise ValueError("not a job description (no sources)")
    sink = data.get("sink") if isinstance(data.get("sink"), dict) else {}
    assert isinstance(sink, dict)
    operators = data.get("operators") or []
    return JobFacts(
        job=job,
        spark_version=str(data.get("spark_version", "")),
        sources=tuple(
            JobSource(str(s.get("name", "")), _options(s.get("options")))
            for s in data["sources"]
            if isinstance(s, dict)
        ),
        operators=tuple(
            JobOperator(
                operator_id=int(o.get("operator_id", i)),
                kind=str(o.get("kind", "")),
                key_schema=_schema(o.get("key_schema")),
                value_schema=_schema(o.get("value_schema")),
                tws=_tws(o),
            )
            for i, o in enumerate(operators)
            if isinstance(o, dict)
        ),
        confs=tuple(sorted((str(k), str(v)) for k, v in (data.get("confs") or {}).items())),
        sink_format=sink.get("format"),
        sink_path=sink.get("path"),
        output_mode=sink.get("output_mode"),
        trigger=sink.get("trigger"),
        elapsed_s=round(float(elapsed_s), 2),
        async_tracking=_async_tracking(sink.get("options")),
        unsupported=_first_line(data.get("unsupported")),
    )


def _tws_dict(tws: TwsFacts) -> dict[str, Any]:
    return {
        "api": tws.api,
        "time_mode": tws.time_mode,
        "output_mode": tws.output_mode,
        "state_variables": [
            {
                "name": v.name,
                "kind": v.kind,
                "value_schema": v.value_schema,
                "user_key_schema": v.user_key_schema,
                "ttl": v.ttl,
            }
            for v in tws.variables
        ],
        "init_error": tws.init_error,
    }


def _tws(raw: dict[str, Any]) -> TwsFacts | None:
    """The transformWithState part of a probed operator (``api`` set by the probe), or None."""
    if not raw.get("api"):
        return None
    variables = tuple(
        TwsVariable(
            name=str(v.get("name", "")),
            kind=str(v.get("kind", "")),
            value_schema=_schema(v.get("value_schema")) or "",
            user_key_schema=_schema(v.get("user_key_schema")),
            ttl=bool(v.get("ttl")),
        )
        for v in raw.get("state_variables") or []
        if isinstance(v, dict)
    )
    return TwsFacts(
        api=str(raw["api"]),
        time_mode=str(raw.get("time_mode", "")),
        output_mode=str(raw.get("output_mode", "")),
        variables=variables,
        init_error=raw.get("init_error"),
    )


def _first_line(text: Any) -> str | None:
    # An AnalysisException's text goes on with the plan after its first line.
    if not isinstance(text, str) or not text.strip():
        return None
    return text.strip().splitlines()[0]


def _async_tracking(options: Any) -> bool:
    if not isinstance(options, dict):
        return False
    lowered = {str(k).lower(): str(v).strip().lower() for k, v in options.items()}
    return lowered.get("asyncprogresstrackingenabled") == "true"
