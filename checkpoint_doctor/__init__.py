"""checkpoint-doctor: read, diagnose and repair Spark Structured Streaming checkpoints without a JVM.

The Python API (stable; see the README's "Python API" and ``examples/python-api.ipynb``)::

    import checkpoint_doctor as cd

    cd.inspect("s3://bucket/ckpt")        # Inspection: snapshot, mode, writer, timeline
    cd.diagnose("s3://bucket/ckpt")       # MatrixDiagnosis: every Spark line x restart mode
    cd.plan("s3://bucket/ckpt")           # RepairPlan (read-only; .to_json() is apply's file)
    cd.audit(["s3://bucket/"])            # AuditResult: records, summary, exit_code

Each takes ``storage_options`` (fsspec's) and raises ``CheckpointDoctorError`` subclasses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from checkpoint_doctor.version import __version__

if TYPE_CHECKING:
    from checkpoint_doctor.api import Inspection, audit, diagnose, inspect, load, plan

__all__ = ["Inspection", "__version__", "audit", "diagnose", "inspect", "load", "plan"]

_API = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> Any:
    """Load the API on first use (PEP 562): ``import checkpoint_doctor.cli`` stays light."""
    if name in _API:
        from checkpoint_doctor import api

        return getattr(api, name)
    raise AttributeError(f"module 'checkpoint_doctor' has no attribute {name!r}")
