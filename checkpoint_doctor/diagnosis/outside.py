"""What the checkpoint alone cannot say: the notes on the world outside it (Kafka positions and
retention, Delta tables, a file sink read in part), the same for one cell and for the matrix. Pure."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.model import DiagnoseOptions
from checkpoint_doctor.diagnosis.sinks.checks import sink_not_checked
from checkpoint_doctor.diagnosis.sources import checks_delta
from checkpoint_doctor.diagnosis.sources import kafka as checks_kafka
from checkpoint_doctor.diagnosis.sources.files import newest_sources
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
