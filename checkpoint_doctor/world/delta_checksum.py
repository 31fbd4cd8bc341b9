"""A Delta table's state at one version from its version checksum, ``_delta_log/<version>.crc``.

Delta writes a checksum file beside each commit (delta-spark ``Checksum.scala``, ``VersionChecksum``:
``txnId``, ``tableSizeBytes``, ``numFiles``, ``metadata``, ``protocol``, ``setTransactions``, ...):
one JSON object describing the whole table as that version left it. Its ``metadata.id`` is the
table id a Delta source's ``reservoirId`` names, and ``setTransactions`` (when present: Delta leaves
it out above ``spark.databricks.delta.maxSetTransactionsInCrc`` appIds) are every ``txn`` of the
snapshot, the appId -> version map the Delta sink asks (``Snapshot.setTransactions`` reads it from
the checksum when it is there). So the facts that pair a table with a checkpoint cost one small read,
and a log cleaned up to a checkpoint needs neither its Parquet checkpoint nor delta-rs for them.
Every line recorded in ``fixtures/delta/`` (delta-spark 3.3.3, 4.0.1, 4.4.0) writes it.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from checkpoint_doctor.errors import StorageError
from checkpoint_doctor.reading.storage import Storage

#: A checksum is a few KBs (its file size histogram included); a larger file is not read.
MAX_CHECKSUM_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class TableState:
    """What a version checksum says: the table id, its schema and every transaction (appId, version)."""

    version: int
    table_id: str
    schema: str | None
    txns: tuple[tuple[str, int], ...]


def checksum_name(version: int) -> str:
    """Return the file name of a version's checksum in ``_delta_log``."""
    return f"{version:020d}.crc"


def parse_checksum(version: int, data: bytes) -> TableState | None:
    """Return the state a checksum holds, or None when it lacks the table id or the transactions
    (an older writer, or more appIds than Delta keeps there), or is not a checksum. Pure."""
    try:
        doc: Any = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: a 200,000-deep object
        return None
    if not isinstance(doc, dict):
        return None
    meta = doc.get("metadata")
    txns = doc.get("setTransactions")
    if not isinstance(meta, dict) or not isinstance(meta.get("id"), str) or not isinstance(txns, list):
        return None
    out: dict[str, int] = {}
    for txn in txns:
        txn_version = txn.get("version") if isinstance(txn, dict) else None
        # A txn version is a Java long (delta-spark SetTransaction): anything else is no checksum of its.
        if (
            not isinstance(txn, dict)
            or not isinstance(txn.get("appId"), str)
            or isinstance(txn_version, bool)
            or not isinstance(txn_version, int)
            or not -(2**63) <= txn_version < 2**63
        ):
            return None
        out[str(txn["appId"])] = int(txn["version"])
    schema = meta.get("schemaString")
    return TableState(
        version, meta["id"], schema if isinstance(schema, str) else None, tuple(sorted(out.items()))
    )


def read_checksum(log: Storage, names: Collection[str], version: int) -> TableState | None:
    """Return the state of ``version`` from its checksum in the ``_delta_log`` store ``log`` (whose
    file ``names`` were listed), or None when there is none or it cannot be used: the caller reads
    the commits (or the Parquet checkpoint) instead."""
    name = checksum_name(version)
    if name not in names:
        return None
    try:
        data = log.read(name, max_bytes=MAX_CHECKSUM_BYTES)
    except StorageError:
        return None
    return parse_checksum(version, data)


def read_schema(log: Storage, names: Collection[str], version: int) -> str | None:
    """Return the ``metadata.schemaString`` of ``version``'s checksum (the schema that version left),
    or None when there is none or it holds none. One small read."""
    name = checksum_name(version)
    if name not in names:
        return None
    try:
        data = log.read(name, max_bytes=MAX_CHECKSUM_BYTES)
        doc: Any = json.loads(data.decode("utf-8"))
    except (StorageError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    schema = meta.get("schemaString") if isinstance(meta, dict) else None
    return schema if isinstance(schema, str) else None
