"""One builder of the restart matrix's options, for the CLI, the Python API and the audit. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from checkpoint_doctor.diagnosis.matrix import MatrixOptions
from checkpoint_doctor.diagnosis.model import DEFAULT_LIVE_WINDOW_S, DEFAULT_LOSS_HORIZON_S, DiagnoseOptions
from checkpoint_doctor.diagnosis.versions import line_of
from checkpoint_doctor.model import KafkaLive
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.world.delta_pairing import DeltaPairing
from checkpoint_doctor.world.model import World


def matrix_options(
    *,
    now_ms: int,
    spark: Sequence[str] = (),
    modes: Sequence[str] = (),
    sources: int | None = None,
    stateful: bool | None = None,
    checkpoint_format_version: int | None = None,
    live_window_s: float = DEFAULT_LIVE_WINDOW_S,
    sink_note: str | None = None,
    own_writes: frozenset[tuple[str, int | str]] = frozenset(),
    kafka: KafkaLive | None = None,
    delta: tuple[DeltaTable, ...] | None = None,
    delta_pairing: DeltaPairing | None = None,
    loss_horizon_s: float = DEFAULT_LOSS_HORIZON_S,
    world: World | None = None,
) -> MatrixOptions:
    """Return the options of a restart matrix: ``spark`` names lines or versions (``4.3``,
    ``4.3.0``: each its line, once), ``modes`` the restart modes (both empty: every plausible
    restart); the rest is what every cell's diagnosis takes. ``world``: everything a verdict read
    outside the checkpoint, as one value (its sink note, the tool's own writes, the Kafka positions
    and the Delta tables; the loose arguments are then not read).

    Raises:
        ValueError: a Spark version names no supported line.
    """
    if world is not None:
        sink_note, own_writes, kafka = world.sink_note, world.own_writes, world.kafka
        delta, delta_pairing = world.delta_named, world.delta
    return MatrixOptions(
        lines=tuple(dict.fromkeys(line_of(v) for v in spark)),
        modes=tuple(modes),
        base=DiagnoseOptions(
            sources=sources,
            stateful=stateful,
            checkpoint_format_version=checkpoint_format_version,
            # A float whoever passes it (the CLI's option is one): a plan's request records it, and
            # its id hashes the text (``0`` and ``0.0`` would name two plans).
            live_window_s=float(live_window_s),
            now_ms=now_ms,
            own_writes=own_writes,
            kafka=kafka,
            loss_horizon_s=float(loss_horizon_s),
            delta=delta,
            delta_pairing=delta_pairing,
        ),
        sink_note=sink_note,
    )


def as_matrix_options(options: MatrixOptions | DiagnoseOptions | None) -> MatrixOptions:
    """Return matrix options; a single-cell ``DiagnoseOptions`` names its line and mode, if any."""
    if isinstance(options, MatrixOptions):
        return options
    base = options or DiagnoseOptions()
    return MatrixOptions(
        lines=(line_of(base.spark),) if base.spark else (),
        modes=(base.mode,) if base.mode else (),
        base=replace(base, spark=None, mode=None),
    )


def with_world(options: MatrixOptions, world: World) -> MatrixOptions:
    """Return matrix options with what the world around one checkpoint holds, for a caller that
    built its options before it read that world (the audit: its options serve every checkpoint, its
    world is read per checkpoint from its one listing). What the world did not find is left as the
    options have it."""
    changes: dict[str, Any] = {}
    if world.kafka is not None:
        changes["kafka"] = world.kafka
    if world.delta is not None:
        changes["delta_pairing"] = world.delta
    if world.delta_named is not None:
        changes["delta"] = world.delta_named
    if world.own_writes:
        changes["own_writes"] = world.own_writes
    if changes:
        options = replace(options, base=replace(options.base, **changes))
    if world.sink_note is not None:
        options = replace(options, sink_note=world.sink_note)
    return options
