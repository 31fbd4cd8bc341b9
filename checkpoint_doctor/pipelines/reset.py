"""Selective reset of a pipeline flow: a new live version n+1 that keeps the table's data. Pure.

Open-source ``spark-pipelines`` offers only ``--full-refresh <table>`` when a flow's checkpoint breaks:
it truncates the table too. Databricks resets one flow's checkpoint and keeps the data. This is the
open-source counterpart: ``plan <flow dir> --reset-flow`` writes version ``n+1`` beside the live one
(``SystemMetadata.getLatestCheckpointDir`` then reads it: the largest number) and leaves every older
version as it is (history, never read again).

A bare new version is a silent loss (CD803): a new query at batch 0 whose batch ids the table's file
sink log already holds (``FileStreamSink.addBatch``: "Skipping already committed batch"). So the new
version starts *past* the last committed batch ``N`` of the newest version that committed one: its
``offsets/N`` and ``commits/N`` are copies of that version's, its ``sources/`` logs too (a file
source's ``logOffset`` in ``offsets/N`` names entries of ``sources/<n>/``: ``FileStreamSource`` takes
its seen files from them), and its ``metadata`` holds a new query id. The restart then runs batch
``N+1`` from batch ``N``'s end offsets (``MicroBatchExecution.populateStartOffsets``): nothing read
again, nothing skipped, and the table's sink log goes on past ``N``. A stateful flow's stores start
empty at version ``N+1`` (the empty snapshots ``reset-state`` writes), which needs consent: a join
forgets the rows it buffered, an aggregation restarts from zero.

``--reset-start earliest`` starts the new version at the same batch ``N+1`` but with each file source
(a table read as a stream) back at its start: ``offsets/N-1`` and ``offsets/N`` are written with the
source's offset at ``{"logOffset":-1}`` (FileStreamSourceOffset before any entry) and its ``sources/<i>/``
log is left empty, so ``FileStreamSource`` has seen no file and batch ``N+1`` reads every file the
table's sink log lists again: the rows it already read are written twice (consent:
``--accept-duplicates``). Other sources keep their committed offsets; a flow without a file source has
no earliest to go back to and is refused.

The root of such a plan is the flow directory: every path is ``<version>/...`` inside it, so the
plan's fingerprint holds the source version unchanged and ``undo`` removes the new version.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from checkpoint_doctor.errors import PlanFormatError
from checkpoint_doctor.planning.state_files import EMPTY_LZ4_STATE, empty_rocksdb_zip, store_path
from checkpoint_doctor.planning.steps import CopyStep, Step, WriteStep
from checkpoint_doctor.valueclasses import frozen

#: Where the new version starts reading: the old version's last committed end offsets.
START_COMMITTED = "committed"
#: Each file source from the start of its table: an empty source log, every file read again.
START_EARLIEST = "earliest"
#: Each file source past every file its table holds now: what arrived since is skipped.
START_LATEST = "latest"
STARTS = (START_COMMITTED, START_EARLIEST, START_LATEST)
#: A file source's offset before its log holds any entry (FileStreamSourceOffset(-1)).
FILE_SOURCE_START = '{"logOffset":-1}'
#: The most stores x partitions one reset writes (as reset-state bounds it).
MAX_STORES = 100_000


@frozen
class ResetFlow:
    """What a selective reset copies and writes, read from the flow's versions at the I/O edge and
    recorded in the plan's request (``apply`` plans again from it, and checks every copied file's
    sha256 before it copies)."""

    #: The version copied from (the newest that committed a batch) and its last committed batch.
    source: str
    batch: int
    #: The new version's name: one past the largest number in the flow directory.
    version: str
    #: The files copied: (path in the new version, path in the source version, its sha256), both
    #: relative to a version (``offsets/N-1``, ``offsets/N``, ``commits/N``, ``sources/...``).
    copies: tuple[tuple[str, str, str], ...]
    #: The stateful stores (operator id, store name) started empty, and over how many partitions.
    stores: tuple[tuple[int, str], ...] = ()
    partitions: int = 0
    provider: str = "hdfs"
    start: str = START_COMMITTED
    #: Files written instead of copied (``--reset-start earliest``): (path in the new version, text).
    rewritten: tuple[tuple[str, str], ...] = ()
    #: The file sources sent back to their start, and what their logs had listed: files, entries.
    rewound: tuple[int, ...] = ()
    reread_files: int = 0
    reread_entries: int = 0
    #: ``--reset-start latest``: the files of the tables read that the new version never reads.
    skipped_files: int = 0

    @property
    def stateful(self) -> bool:
        return bool(self.stores)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "batch": self.batch,
            "version": self.version,
            "copies": [list(c) for c in self.copies],
            "stores": [[op, name] for op, name in self.stores],
            "partitions": self.partitions,
            "provider": self.provider,
            "start": self.start,
            "rewritten": [list(r) for r in self.rewritten],
            "rewound": list(self.rewound),
            "reread_files": self.reread_files,
            "reread_entries": self.reread_entries,
            "skipped_files": self.skipped_files,
        }

    @staticmethod
    def from_dict(data: Any) -> ResetFlow:
        """Raises PlanFormatError on a malformed request."""
        from checkpoint_doctor.planning.steps import check_relative_path

        try:
            copies = tuple(
                (check_relative_path(str(p)), check_relative_path(str(f)), str(s))
                for p, f, s in data["copies"]
            )
            rf = ResetFlow(
                source=str(data["source"]),
                batch=int(data["batch"]),
                version=str(data["version"]),
                copies=copies,
                stores=tuple((int(op), str(name)) for op, name in data.get("stores", ())),
                partitions=int(data.get("partitions", 0)),
                provider=str(data.get("provider", "hdfs")),
                start=str(data.get("start", START_COMMITTED)),
                rewritten=tuple((check_relative_path(str(p)), str(t)) for p, t in data.get("rewritten", ())),
                rewound=tuple(int(i) for i in data.get("rewound", ())),
                reread_files=int(data.get("reread_files", 0)),
                reread_entries=int(data.get("reread_entries", 0)),
                skipped_files=int(data.get("skipped_files", 0)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise PlanFormatError(f"malformed plan request: reset_flow {exc}") from exc
        if not (rf.source.isdigit() and rf.version.isdigit() and int(rf.version) > int(rf.source)):
            raise PlanFormatError("malformed plan request: reset_flow versions are not numbers, new past old")
        if rf.start not in STARTS or rf.provider not in ("hdfs", "rocksdb") or rf.batch < 0:
            raise PlanFormatError("malformed plan request: reset_flow start, provider or batch")
        if rf.partitions * len(rf.stores) > MAX_STORES or rf.partitions < 0:
            raise PlanFormatError("malformed plan request: reset_flow writes too many stores")
        return rf


def copied_paths(files: list[str], batch: int) -> list[tuple[str, str]]:
    """The files of a version the new one copies, as (path in the new version, path copied): the
    last committed batch's ``offsets/N`` and ``commits/N``, the ``offsets/N-1`` before it, and every
    source log file (no Hadoop ``.crc`` side file, no temp file: Spark checks a checksum only where
    one is).

    ``MicroBatchExecution.populateStartOffsets`` reads ``offsets/N-1`` whenever ``N`` is not 0 ("batch
    N-1 doesn't exist" otherwise) and hands it to a V1 source's ``getBatch(start, end)`` as the start
    of the committed batch; where the version lost it (offsets-sparse), a copy of ``offsets/N`` stands
    in: the same offsets, an empty range."""
    have = set(files)
    out = []
    if batch > 0:
        prev = f"offsets/{batch - 1}"
        out.append((prev, prev if prev in have else f"offsets/{batch}"))
    out += [(f"offsets/{batch}", f"offsets/{batch}"), (f"commits/{batch}", f"commits/{batch}")]
    for f in sorted(files):
        name = f.rpartition("/")[2]
        if f.startswith("sources/") and not name.startswith(".") and not name.endswith((".tmp", ".crc")):
            out.append((f, f))
    return out


def source_log_entry(files: list[tuple[str, int]], batch: int) -> str:
    """A FileStreamSourceLog entry listing ``files`` (path, modification time) as seen in ``batch``
    (FileStreamSource.FileEntry: path, timestamp, batchId)."""
    return "v1\n" + "\n".join(
        json.dumps({"path": p, "timestamp": t, "batchId": batch}, separators=(",", ":")) for p, t in files
    )


def set_file_offsets(text: str, offsets: dict[int, int]) -> str:
    """An offsets file with the file sources at ``offsets`` (source index -> logOffset)."""
    lines = text.split("\n")
    for i, off in offsets.items():
        lines[2 + i] = json.dumps({"logOffset": off}, separators=(",", ":"))
    return "\n".join(lines)


def rewind_offsets(text: str) -> tuple[str, tuple[int, ...]]:
    """An offsets file with each file source's offset back at its start, and those sources' indices.

    The file is ``v1``, the batch's metadata, then one line per source (OffsetSeqLog); a file source's
    line is ``{"logOffset":N}`` (FileStreamSourceOffset), set to ``{"logOffset":-1}``."""
    import re

    lines = text.split("\n")
    rewound = []
    for i in range(2, len(lines)):
        if re.fullmatch(r'\s*\{\s*"logOffset"\s*:\s*-?\d+\s*\}\s*', lines[i]):
            lines[i] = FILE_SOURCE_START
            rewound.append(i - 2)
    return "\n".join(lines), tuple(rewound)


def new_query_id(fingerprint: str, root: str) -> str:
    """A new query id derived from the flow directory as planned (deterministic: apply plans again)."""
    digest = hashlib.sha256(f"reset-flow\0{root}\0{fingerprint}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def reset_steps(rf: ResetFlow, query_id: str) -> tuple[Step, ...]:
    """The new version's files: copies of the source version's last committed batch and source logs,
    a new ``metadata``, and an empty state of version ``N+1`` for each stateful store."""
    new, old = rf.version, rf.source
    steps: list[Step] = [
        CopyStep(
            path=f"{new}/{path}",
            source=f"{old}/{source}",
            source_sha256=sha,
            reason=f"version {new} starts where version {old} committed batch {rf.batch}",
        )
        for path, source, sha in rf.copies
    ]
    steps += [
        WriteStep(
            path=f"{new}/{path}",
            content_text=text,
            reason=f"version {new}'s file source(s) {', '.join(map(str, rf.rewound))} "
            + (
                "back at their start"
                if rf.start == START_EARLIEST
                else "past every file their table holds now"
            ),
        )
        for path, text in rf.rewritten
    ]
    steps.append(
        WriteStep(
            path=f"{new}/metadata",
            content_text=json.dumps({"id": query_id}, separators=(",", ":")),
            reason=f"version {new}'s query id (a new query: sinks keyed on the id see a new one)",
        )
    )
    b = rf.batch + 1
    name, data = (
        (f"{b}.zip", empty_rocksdb_zip()) if rf.provider == "rocksdb" else (f"{b}.snapshot", EMPTY_LZ4_STATE)
    )
    for op, store in rf.stores:
        for p in range(rf.partitions):
            steps.append(
                WriteStep.of_bytes(
                    f"{new}/{store_path(op, p, store)}/{name}",
                    data,
                    f"empty state of version {b}: the store starts from nothing",
                )
            )
    return tuple(steps)


def reset_words(rf: ResetFlow, flow: str) -> tuple[str, str | None]:
    """Where the new version starts reading and what it loses (None: nothing), in words."""
    starts = (
        f"{flow} starts version {rf.version} at batch {rf.batch + 1}, reading from where version "
        f"{rf.source} committed batch {rf.batch} (its end offsets): nothing is read again, nothing is "
        f"skipped, and the table's sink log goes on past batch {rf.batch}"
    )
    if rf.start == START_EARLIEST:
        starts = (
            f"{flow} starts version {rf.version} at batch {rf.batch + 1} with its file source(s) "
            f"{', '.join(map(str, rf.rewound))} at their start (an empty source log): batch "
            f"{rf.batch + 1} reads again the {rf.reread_files} file(s) of {rf.reread_entries} source log "
            f"entr{'y' if rf.reread_entries == 1 else 'ies'} version {rf.source} had read, with whatever "
            f"arrived since, and writes their rows to the table again (duplicates); nothing is skipped, "
            f"and the table's sink log goes on past batch {rf.batch}"
        )
    if rf.start == START_LATEST:
        starts = (
            f"{flow} starts version {rf.version} at batch {rf.batch + 1} with its file source(s) "
            f"{', '.join(map(str, rf.rewound))} past every file their table(s) hold now: the "
            f"{rf.skipped_files} file(s) that arrived since version {rf.source} committed batch "
            f"{rf.batch} are never read, and the table's sink log goes on past batch {rf.batch}"
        )
    losses = []
    if rf.start == START_LATEST and rf.skipped_files:
        losses.append(
            f"{rf.skipped_files} file(s) of the table(s) read are skipped: their rows never reach {flow}"
        )
    if rf.stateful:
        losses.append(
            f"the state of {len(rf.stores)} store(s) x {rf.partitions} partition(s) starts empty at state "
            f"version {rf.batch + 1} (batch {rf.batch + 1} of checkpoint version {rf.version}): aggregates restart from zero, deduplication forgets the keys it has seen, "
            "stream-stream joins lose the rows they buffered"
        )
    return starts, "; ".join(losses) or None
