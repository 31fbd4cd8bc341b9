"""The world around a checkpoint, as one value: what a verdict read outside the checkpoint's own
files, handed to the diagnosis whole (:func:`checkpoint_doctor.diagnosis.options.matrix_options`'s
``world``). Pure: the diagnosis may import it (``tests/test_architecture.py``); it is filled by
:func:`checkpoint_doctor.world.load.load_for_verdict` (and :func:`~checkpoint_doctor.world.load.with_kafka`)."""

from __future__ import annotations

from typing import Any

from checkpoint_doctor.model import KafkaLive
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.valueclasses import frozen
from checkpoint_doctor.world.delta_pairing import DeltaPairing

OwnWrites = frozenset[tuple[str, int | str]]
#: The applies that changed a checkpoint and did not finish (rows of ``history``).
Unfinished = tuple[dict[str, Any], ...]


@frozen
class World:
    """A checkpoint loaded for a verdict and the world around it: the snapshot (with its file sink
    when one was named or proven), what was found of that sink (None: nothing to say), the tool's own
    writes, the Delta tables paired with it (found beside it or named; None: no Delta source, no
    table found), those named with ``--delta-table`` (None: none) and the Kafka topics' live
    positions (None: not asked)."""

    snapshot: CheckpointSnapshot
    sink_note: str | None
    own_writes: OwnWrites
    delta: DeltaPairing | None = None
    delta_named: tuple[DeltaTable, ...] | None = None
    #: Every Delta table the verdict looked at (found beside it, read or not, and named): a
    #: command's output never lands inside one (issue 31: ``plan -o`` became a table's commit).
    delta_read: tuple[str, ...] = ()
    #: The applies that changed the checkpoint and did not finish (diagnose and plan say so).
    unfinished: Unfinished = ()
    #: The live positions of the Kafka topics the checkpoint reads, asked of a broker (None: no
    #: broker named, or no Kafka source).
    kafka: KafkaLive | None = None
