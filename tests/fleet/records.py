"""Audit records for tests: as JSON, and real ones changed in one field."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any

from checkpoint_doctor.fleet.records import CheckpointRecord
from tests.conftest import FIXTURES

SPARK = FIXTURES / "spark-4.3.0"


def json_records(result: Any) -> list[dict[str, Any]]:
    """Return an audit's records as ``audit --format json`` writes them (``audit-record.json``)."""
    return [r.to_json() for r in result.records]


@lru_cache(maxsize=1)
def _stateless_record() -> CheckpointRecord:
    from checkpoint_doctor.diagnosis import DiagnoseOptions
    from checkpoint_doctor.fleet.run import audit

    result = audit([str(SPARK / "stateless" / "checkpoint")], options=DiagnoseOptions(live_window_s=0))
    (record,) = result.records
    assert isinstance(record, CheckpointRecord) and record.exit_code == 0
    return record


def checkpoint_record(url: str, **changes: Any) -> CheckpointRecord:
    """Return a real checkpoint record (the healthy stateless fixture's) at ``url``, with ``changes``
    (``dataclasses.replace``): the renderers' tests vary one field of a record Spark wrote."""
    return replace(_stateless_record(), url=url, root=url, path="", **changes)
