"""What the checkpoint alone cannot say: the notes on the world outside it (Kafka positions and
retention, Delta tables, a file sink read in part), the same for one cell and for the matrix. Pure."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.facts import SnapshotFacts
from checkpoint_doctor.diagnosis.model import DiagnoseOptions
from checkpoint_doctor.diagnosis.sinks.checks import sink_not_checked
from checkpoint_doctor.diagnosis.sources import checks_delta
from checkpoint_doctor.diagnosis.sources import kafka as checks_kafka
from checkpoint_doctor.reading.positions import newest_sources
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot


def outside_notes(snapshot: CheckpointSnapshot, opts: DiagnoseOptions) -> list[str]:
    """Return the assumption lines about the sources' and sinks' own state (each None is left out)."""
    sources = newest_sources(snapshot)
    notes = (
        checks_kafka.assumption(sources, opts.kafka, opts),
        checks_kafka.retention_note(snapshot, opts.kafka, opts.now_ms),
        checks_delta.assumption(sources, opts.delta, snapshot.query_id, opts.delta_pairing),
        sink_not_checked(snapshot),
    )
    return [n for n in notes if n is not None]


def shared_outside_notes(facts: SnapshotFacts, opts: DiagnoseOptions) -> list[str]:
    """Return :func:`outside_notes` for ``opts``, kept in ``facts``: asked by each mode's first cell
    and by the matrix, the same answer (it reads neither the line nor the mode). Here, not a method
    of the facts: the facts are what the checks read, and these notes are the checks' own texts."""
    key = (opts.kafka, opts.now_ms, opts.delta, opts.delta_pairing)
    try:
        found = facts.outside.get(key)
    except TypeError:  # an option that cannot be hashed: asked anew
        return outside_notes(facts.snapshot, opts)
    if found is None:
        found = facts.outside[key] = tuple(outside_notes(facts.snapshot, opts))
    return list(found)
