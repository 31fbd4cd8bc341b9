"""Immutable values for what a Delta table's ``_delta_log`` says, as the Delta checks take them.

Kept beside ``model.py`` (same rules: standard library only, no I/O, ``to_dict()`` JSON-safe) so the
pure Delta judgements (``diagnosis/sources/delta.py``, ``diagnosis/sinks/delta.py``) take plain data
that ``world/delta_log.py`` builds from the log, locally or on an object store.
"""

from __future__ import annotations

from typing import Any

from checkpoint_doctor.valueclasses import frozen


@frozen
class DeltaCommit:
    """One commit file ``_delta_log/<version>.json`` (Delta PROTOCOL.md, Actions).

    ``adds``/``removes`` count the ``add``/``remove`` actions with ``dataChange`` true (what
    DeltaSource reads or refuses); ``schema`` is the ``metaData.schemaString`` when the commit
    carries a ``metaData`` action, ``table_id`` its ``metaData.id``; ``txns`` the ``txn`` actions
    (appId, version) it writes.
    """

    version: int
    operation: str | None
    adds: int
    removes: int
    schema: str | None = None
    table_id: str | None = None
    txns: tuple[tuple[str, int], ...] = ()
    #: The rows of the ``add`` actions with ``dataChange`` (their ``stats.numRecords``); None when an
    #: add carries no row count (stats are optional in the protocol). What a repair names as read
    #: or skipped.
    rows: int | None = 0

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "version": self.version,
            "operation": self.operation,
            "adds": self.adds,
            "removes": self.removes,
            "rows": self.rows,
            "schema_changed": self.schema is not None,
            "table_id": self.table_id,
            "txns": [list(t) for t in self.txns],
        }


@frozen
class DeltaTable:
    """A Delta table as its log stands now.

    ``earliest_version`` is the lowest version whose commit file is still in the log with every
    later one (log cleanup, ``delta.logRetentionDuration``, removes the older ones; a stream must
    read each version from its commit file). ``checkpoint_version`` is the newest checkpoint.
    ``txns`` maps each transaction appId (a streaming query id for the Delta sink) to the latest
    version it committed ("the latest version seen for a given appId wins", PROTOCOL.md).
    """

    url: str
    table_id: str | None
    latest_version: int
    earliest_version: int
    checkpoint_version: int | None
    schema: str | None
    txns: tuple[tuple[str, int], ...]
    commits: tuple[DeltaCommit, ...]
    #: (version, schemaString) in force at the first version whose commit was read, when that commit
    #: carries no ``metaData`` and a later one read does (its version checksum's, one more read only
    #: then): what :meth:`schema_at` starts from.
    first_schema: tuple[int, str] | None = None

    def schema_at(self, version: int) -> str | None:
        """Return the ``schemaString`` in force at ``version`` (after its commit), or None when the
        commits read do not tell it: the latest schema when no commit read above ``version`` changes
        it, else the newest ``metaData`` read at or below it (or :attr:`first_schema`)."""
        if version >= self.latest_version or not any(
            c.schema is not None for c in self.commits if c.version > version
        ):
            return self.schema
        found: tuple[int, str] | None = (
            self.first_schema if self.first_schema and self.first_schema[0] <= version else None
        )
        for c in self.commits:
            if c.version <= version and c.schema is not None and (found is None or c.version >= found[0]):
                found = (c.version, c.schema)
        return found[1] if found is not None else None

    def txn_version(self, app_id: str) -> int | None:
        """Return the latest batch id the Delta sink of query ``app_id`` committed, or None."""
        return dict(self.txns).get(app_id)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "url": self.url,
            "table_id": self.table_id,
            "latest_version": self.latest_version,
            "earliest_version": self.earliest_version,
            "checkpoint_version": self.checkpoint_version,
            "txns": dict(self.txns),
            "commits": [c.to_dict() for c in self.commits],
        }
