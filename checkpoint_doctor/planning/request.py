"""What the operator asks of the planner: a value a plan records, so that ``apply`` can plan again
from the live checkpoint and compare (a plan is verified, never trusted). Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from checkpoint_doctor.diagnosis.matrix import Cell
from checkpoint_doctor.diagnosis.model import DiagnoseOptions
from checkpoint_doctor.diagnosis.sources.kafka import known_subscriptions
from checkpoint_doctor.diagnosis.sources.kafka_positions import SHAPES
from checkpoint_doctor.errors import PlanFormatError
from checkpoint_doctor.parsing.java_uuid import java_uuid_error

if TYPE_CHECKING:
    from checkpoint_doctor.pipelines.reset import ResetFlow

#: Sinks that skip a batch id they already committed (a re-planned committed batch is lost there).
#: ``foreachBatch`` is among them: its documentation asks for writes made idempotent by batch id.
SKIPS_COMMITTED_IDS = ("file", "delta", "foreachBatch")
#: Sinks that write whatever a batch holds (a re-planned committed batch gives duplicates only).
AT_LEAST_ONCE = ("kafka", "foreach", "console", "noop", "memory")
SINK_KINDS = SKIPS_COMMITTED_IDS + AT_LEAST_ONCE


def cell_dict(cell: Cell) -> dict[str, str]:
    """Return a cell as JSON."""
    return {"spark": cell.spark, "mode": cell.mode}


def _delta_options_dict(d: DiagnoseOptions) -> dict[str, Any]:
    """The Delta sources' reader options the plan was judged with (the job's), only when there are:
    every other plan keeps its id."""
    found = d.delta_source_options()
    if not found:
        return {}
    return {"delta_source_options": {str(n): dict(opts) for n, opts in found}}


def _delta_options(raw: Any) -> tuple[tuple[int, tuple[tuple[str, str], ...]], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not all(isinstance(v, dict) and str(k).isdigit() for k, v in raw.items()):
        raise PlanFormatError("malformed plan request: delta_source_options is not {index: {option: value}}")
    return tuple(
        sorted((int(k), tuple((str(o), str(v)) for o, v in opts.items())) for k, opts in raw.items())
    )


@dataclass(frozen=True)
class PlanOptions:
    """The planner's inputs besides the snapshot.

    ``cells`` are the restarts the plan must make start (empty: the diagnosis's own line and mode);
    ``guards`` the restarts that start now and must keep starting (the matrix's other counted cells).
    ``sink_kind`` is what the operator tells about the sink (one of :data:`SINK_KINDS`); a sink path
    makes it ``file``; unknown sinks are treated as ones that may skip re-planned batch ids.
    ``depth`` is how deep the snapshot was read (``deep`` reads every batch file, so a rollback can
    consider old batches); ``apply`` reads the live checkpoint the same way. ``state_stores`` names the stateful operators' stores (operator id, store name) when ``state/``
    is gone and a reset must recreate them (default: operator 0, store ``default``).
    ``force_sink``: change the file sink even where its log contradicts the checkpoint (the
    operator knows better than the evidence, ``plan --force-sink``).
    """

    strategy: str | None = None
    accept_data_loss: bool = False
    query_id: str | None = None
    job: str | None = None
    sink_kind: str | None = None
    state_stores: tuple[tuple[int, str], ...] = ()
    cells: tuple[Cell, ...] = ()
    guards: tuple[Cell, ...] = ()
    depth: str = "default"
    diagnose: DiagnoseOptions = field(default_factory=DiagnoseOptions)
    force_sink: bool = False
    #: ``plan --delta-version N``: where a Delta source re-pointed to a replacing table starts (its
    #: changes from version N on) instead of the table as of its first version (strategy delta-table).
    delta_version: int | None = None
    #: ``plan <flow dir> --reset-flow``: a pipeline flow's new live version (pipelines.reset).
    reset_flow: ResetFlow | None = None

    def to_request(self) -> dict[str, Any]:
        """Return the JSON form a plan records (no clock: ``now_ms`` is not part of a plan)."""
        d = self.diagnose
        # Only when asked: every other plan keeps its id.
        extra: dict[str, Any] = {} if self.delta_version is None else {"delta_version": self.delta_version}
        if self.reset_flow is not None:
            extra["reset_flow"] = self.reset_flow.to_dict()
        kafka = known_subscriptions(d)
        if kafka:
            # how the job's Kafka sources subscribe: apply plans again without the job (issue 32 item 1)
            extra["kafka_subscriptions"] = [
                {"source": n, "shape": shape, "subscription": value, "fail_on_data_loss": fol}
                for n, shape, value, fol in kafka
            ]
        return {
            **extra,
            "strategy": self.strategy,
            "accept_data_loss": self.accept_data_loss,
            "query_id": self.query_id,
            "job": self.job,
            "sink_kind": self.sink_kind,
            "state_stores": [[op, name] for op, name in self.state_stores],
            "cells": [cell_dict(c) for c in self.cells],
            "guards": [cell_dict(c) for c in self.guards],
            "depth": self.depth,
            "force_sink": self.force_sink,
            "diagnose": {
                **_delta_options_dict(d),
                "spark": d.spark,
                "mode": d.mode,
                "sources": d.sources,
                "stateful": d.stateful,
                "checkpoint_format_version": d.checkpoint_format_version,
                "live_window_s": d.live_window_s,
                "confs": [[k, v] for k, v in d.confs],
            },
        }

    @staticmethod
    def from_request(data: Any) -> PlanOptions:
        """Rebuild the options a plan was made with.

        Raises:
            PlanFormatError: the request is malformed.
        """
        query_id = data.get("query_id") if isinstance(data, dict) else None
        if query_id is not None and (not isinstance(query_id, str) or java_uuid_error(query_id) is not None):
            raise PlanFormatError(
                f"malformed plan request: query_id {query_id!r} is not a UUID Spark can read"
            )
        try:
            d = data["diagnose"]
            return PlanOptions(
                strategy=data.get("strategy"),
                accept_data_loss=bool(data.get("accept_data_loss")),
                query_id=data.get("query_id"),
                job=data.get("job"),
                sink_kind=data.get("sink_kind"),
                state_stores=tuple((int(op), str(name)) for op, name in data.get("state_stores", ())),
                cells=tuple(Cell(str(c["spark"]), str(c["mode"])) for c in data.get("cells", ())),
                guards=tuple(Cell(str(c["spark"]), str(c["mode"])) for c in data.get("guards", ())),
                depth=str(data.get("depth") or "default"),
                force_sink=bool(data.get("force_sink", False)),
                delta_version=_version(data.get("delta_version")),
                reset_flow=_reset_flow(data.get("reset_flow")),
                diagnose=DiagnoseOptions(
                    spark=d.get("spark"),
                    mode=d.get("mode"),
                    sources=d.get("sources"),
                    stateful=d.get("stateful"),
                    checkpoint_format_version=d.get("checkpoint_format_version"),
                    live_window_s=float(d.get("live_window_s", 0)),
                    confs=tuple((str(k), str(v)) for k, v in d.get("confs", ())),
                    delta_options=_delta_options(d.get("delta_source_options")),
                    kafka_subscriptions=_kafka_subscriptions(data.get("kafka_subscriptions", ())),
                ),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PlanFormatError(f"malformed plan request: {exc}") from exc


def _kafka_subscriptions(rows: Any) -> tuple[tuple[int, str, str, bool], ...]:
    out = []
    for row in rows:
        shape, value = row["shape"], row["subscription"]
        if shape not in SHAPES or not isinstance(value, str):
            raise PlanFormatError(f"malformed plan request: Kafka subscription {row!r}")
        out.append((int(row["source"]), str(shape), value, bool(row["fail_on_data_loss"])))
    return tuple(out)


def _reset_flow(value: Any) -> ResetFlow | None:
    if value is None:
        return None
    from checkpoint_doctor.pipelines.reset import ResetFlow

    return ResetFlow.from_dict(value)


def _version(value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise PlanFormatError(f"malformed plan request: delta_version {value!r} is not a table version")
    return value
