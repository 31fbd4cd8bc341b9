"""The world around a checkpoint reaches the diagnosis as one value (issue 35 item 1)."""

from __future__ import annotations

from pathlib import Path

from checkpoint_doctor.diagnosis.matrix import diagnose_matrix
from checkpoint_doctor.diagnosis.options import matrix_options, with_world
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.world.load import load_for_verdict
from checkpoint_doctor.world.model import World

FIXTURE = (
    Path(__file__).resolve().parents[2] / "fixtures" / "delta" / "spark-3.5.9" / "delta-sink-rolled-back"
)


def test_the_world_of_a_verdict_is_one_value_the_diagnosis_takes_whole() -> None:
    url = str(FIXTURE / "checkpoint")
    world = load_for_verdict(url, None, lambda: load_checkpoint(url))
    assert isinstance(world, World)
    assert world.delta is not None and [p.role for p in world.delta.pairs] == ["sink"]
    assert world.delta_read == (str(FIXTURE / "sink"),)
    whole = matrix_options(now_ms=1_796_083_200_000, world=world)
    loose = matrix_options(
        now_ms=1_796_083_200_000,
        sink_note=world.sink_note,
        own_writes=world.own_writes,
        kafka=world.kafka,
        delta=world.delta_named,
        delta_pairing=world.delta,
    )
    assert whole == loose
    codes = [f.code for f in diagnose_matrix(world.snapshot, whole).findings]
    assert codes == ["CD407"]  # the Delta sink skips the re-planned batches its txn holds


def test_the_audit_hands_its_world_to_the_diagnosis_as_diagnose_does() -> None:
    """The audit builds its options once and reads each checkpoint's world after: with_world gives
    the options diagnose builds from the same world (what the world did not find is left alone)."""
    url = str(FIXTURE / "checkpoint")
    world = load_for_verdict(url, None, lambda: load_checkpoint(url))
    base = matrix_options(now_ms=1_796_083_200_000, spark=["3.5"])
    assert with_world(base, world) == matrix_options(now_ms=1_796_083_200_000, spark=["3.5"], world=world)
    assert with_world(base, World(world.snapshot, None, frozenset())) is base
