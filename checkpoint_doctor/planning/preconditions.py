"""Preconditions: what must still hold when a plan is applied. One class per kind. Pure.

Each class owns its JSON form, its text and its check against a fresh snapshot; :func:`derive`
makes the preconditions of a list of steps, :func:`check_preconditions` returns every one a
snapshot violates (none raised).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.diagnosis.model import LIVE_WRITER_CODES
from checkpoint_doctor.errors import PlanFormatError
from checkpoint_doctor.model import FileStat, KafkaLive
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.planning.steps import (
    Area,
    CopyStep,
    QuarantineStep,
    Step,
    check_relative_path,
    kind_class,
    parse_area,
)
from checkpoint_doctor.reading.layout import SINK_LOG
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.world.sink_pairing import pairing_evidence

#: Files checkpoint-doctor's own applies wrote: (path, ETag or mtime).
Own = frozenset[tuple[str, int | str]]


def utc_ms(ms: int | None) -> str:
    """Return epoch millis as an operator reads them, to the millisecond a precondition compares
    (issue 36: ``mtime 1795834740287``): ``2026-11-22 08:19:00.287 UTC``."""
    from datetime import datetime, timezone

    if ms is None:
        return "-"
    try:
        return (
            datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"
        )
    except (OverflowError, OSError, ValueError):  # a hand-edited plan: show what it holds
        return str(ms)


def file_stat(snapshot: CheckpointSnapshot, area: Area, path: str) -> FileStat | None:
    """Return the stat of a checkpoint file or of a sink log file (``_spark_metadata/<name>``)."""
    if area == Area.CHECKPOINT:
        return snapshot.file(path)
    return sink_files(snapshot).get(path)


def sink_files(snapshot: CheckpointSnapshot) -> dict[str, FileStat]:
    """Return the sink log files by their sink-relative path (``_spark_metadata/<name>``)."""
    if snapshot.sink is None:
        return {}
    files = {f"{SINK_LOG}/{e.file.path}": e.file for e in snapshot.sink.log.entries}
    files.update((f"{SINK_LOG}/{f.path}", f) for f in snapshot.sink.crc_files)
    return files


@dataclass(frozen=True)
class Precondition:
    """Base of every precondition kind."""

    kind: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form."""
        raise NotImplementedError

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Precondition:
        """Build a precondition of this kind from its JSON form.

        Raises:
            PlanFormatError: a bad area, an unsafe path, a field of the wrong type.
        """
        raise NotImplementedError

    def describe(self) -> str:
        """Return the precondition in words."""
        raise NotImplementedError

    def check(
        self,
        snapshot: CheckpointSnapshot,
        now_ms: int | None,
        sinks: dict[str, FileStat],
        own: Own = frozenset(),
    ) -> str | None:
        """Return why ``snapshot`` violates it, or None."""
        raise NotImplementedError


@dataclass(frozen=True)
class OutsidePre(Precondition):
    """A precondition on the world outside the checkpoint (a broker's positions, a table's log): the
    snapshot holds none of it, so :meth:`check` passes and the I/O edge reads that world again at
    apply time for the kind's own ``check_live``."""

    def check(
        self,
        snapshot: CheckpointSnapshot,
        now_ms: int | None,
        sinks: dict[str, FileStat],
        own: Own = frozenset(),
    ) -> str | None:
        """The checkpoint holds none of it: ``check_live`` judges the world read again."""
        return None


@dataclass(frozen=True)
class QueryIdPre(Precondition):
    """The query id in ``metadata`` (None: metadata absent or unreadable)."""

    kind: ClassVar[str] = "query_id"
    value: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form."""
        return {"kind": self.kind, "value": self.value}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Precondition:
        """Build it from ``value``."""
        value = data.get("value")
        if value is not None and not isinstance(value, str):
            raise PlanFormatError("precondition query_id has a non-string value")
        return cls(value=value)

    def describe(self) -> str:
        """Return the precondition in words."""
        return f"query id is {self.value}" if self.value else "metadata is absent"

    def check(
        self,
        snapshot: CheckpointSnapshot,
        now_ms: int | None,
        sinks: dict[str, FileStat],
        own: Own = frozenset(),
    ) -> str | None:
        """The query id is unchanged."""
        if snapshot.query_id != self.value:
            return f"query id is {snapshot.query_id!r}, the plan was made for {self.value!r}"
        return None


@dataclass(frozen=True)
class LatestBatchesPre(Precondition):
    """The newest offsets and commit ids (None: that log is empty)."""

    kind: ClassVar[str] = "latest_batches"
    offsets: int | None = None
    commits: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form."""
        return {"kind": self.kind, "offsets": self.offsets, "commits": self.commits}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Precondition:
        """Build it from ``offsets`` and ``commits``."""
        return cls(offsets=_optional_int(data, "offsets"), commits=_optional_int(data, "commits"))

    def describe(self) -> str:
        """Return the precondition in words."""
        return f"newest offsets id {self.offsets}, newest commit id {self.commits}"

    def check(
        self,
        snapshot: CheckpointSnapshot,
        now_ms: int | None,
        sinks: dict[str, FileStat],
        own: Own = frozenset(),
    ) -> str | None:
        """No batch was planned or committed since."""
        o, c = snapshot.offsets.latest_id, snapshot.commits.latest_id
        if (o, c) != (self.offsets, self.commits):
            return f"newest offsets/commit are {o}/{c}, the plan was made for {self.offsets}/{self.commits}"
        return None


@dataclass(frozen=True)
class FileUnchangedPre(Precondition):
    """A file the plan reads or removes has the size and mtime (or ETag) it had."""

    kind: ClassVar[str] = "file_unchanged"
    path: str = ""
    area: Area = Area.CHECKPOINT
    size: int | None = None
    mtime_ms: int | None = None
    etag: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form."""
        return {
            "kind": self.kind,
            "area": self.area,
            "path": self.path,
            "size": self.size,
            "mtime_ms": self.mtime_ms,
            "etag": self.etag,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Precondition:
        """Build it from its file and the stamp it had."""
        etag = data.get("etag")
        if etag is not None and not isinstance(etag, str):
            raise PlanFormatError("precondition file_unchanged has a non-string etag")
        return cls(
            **_file_fields(data),
            size=_optional_int(data, "size"),
            mtime_ms=_optional_int(data, "mtime_ms"),
            etag=etag,
        )

    def describe(self) -> str:
        """Return the precondition in words."""
        stamp = f"ETag {self.etag}" if self.etag else f"modified {utc_ms(self.mtime_ms)}"
        return f"{self.area}:{self.path} unchanged ({self.size} bytes, {stamp})"

    def check(
        self,
        snapshot: CheckpointSnapshot,
        now_ms: int | None,
        sinks: dict[str, FileStat],
        own: Own = frozenset(),
    ) -> str | None:
        """The file is there with the same size and stamp."""
        stat = snapshot.file(self.path) if self.area == Area.CHECKPOINT else sinks.get(self.path)
        if stat is None:
            return f"{self.path} is gone"
        if self.size is not None and stat.size != self.size:
            return f"{self.path} changed size ({stat.size} bytes, the plan expects {self.size})"
        if self.etag is not None and stat.etag != self.etag:
            return f"{self.path} changed (ETag {stat.etag}, the plan expects {self.etag})"
        if self.etag is None and self.mtime_ms is not None and stat.mtime_ms != self.mtime_ms:
            return f"{self.path} was modified since the plan was made"
        return None


@dataclass(frozen=True)
class FileAbsentPre(Precondition):
    """A file the plan creates does not exist yet."""

    kind: ClassVar[str] = "file_absent"
    path: str = ""
    area: Area = Area.CHECKPOINT

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form."""
        return {"kind": self.kind, "area": self.area, "path": self.path}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Precondition:
        """Build it from its file."""
        return cls(**_file_fields(data))

    def describe(self) -> str:
        """Return the precondition in words."""
        return f"{self.area}:{self.path} does not exist"

    def check(
        self,
        snapshot: CheckpointSnapshot,
        now_ms: int | None,
        sinks: dict[str, FileStat],
        own: Own = frozenset(),
    ) -> str | None:
        """Nothing is in the way."""
        exists = snapshot.file(self.path) if self.area == Area.CHECKPOINT else sinks.get(self.path)
        if exists is not None:
            return f"{self.path} exists now; the plan creates it"
        if self.area == Area.CHECKPOINT and self.path in snapshot.dirs:
            return f"{self.path} is a directory now; the plan creates a file there"
        return None


@dataclass(frozen=True)
class NoLiveWriterPre(Precondition):
    """No query wrote to the checkpoint within the live window (0: not checked)."""

    kind: ClassVar[str] = "no_live_writer"
    window_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form."""
        return {"kind": self.kind, "window_s": float(self.window_s)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Precondition:
        """Build it from ``window_s``."""
        window = data.get("window_s") or 0
        if not isinstance(window, (int, float)) or isinstance(window, bool):
            raise PlanFormatError("precondition no_live_writer has a non-numeric window_s")
        return cls(window_s=float(window))

    def describe(self) -> str:
        """Return the precondition in words."""
        return f"no live writer (window {self.window_s} s)"

    def check(
        self,
        snapshot: CheckpointSnapshot,
        now_ms: int | None,
        sinks: dict[str, FileStat],
        own: Own = frozenset(),
    ) -> str | None:
        """No live-writer finding within the window."""
        if not self.window_s or now_ms is None:
            return None
        opts = DiagnoseOptions(live_window_s=self.window_s, now_ms=now_ms, own_writes=own)
        live = [f for f in diagnose(snapshot, opts).findings if f.code in LIVE_WRITER_CODES]
        if live:
            return f"a writer may be live ({live[0].code}: {live[0].message})"
        return None


@dataclass(frozen=True)
class SinkPairedPre(Precondition):
    """The file sink a plan changes is this query's: nothing in its log contradicts the checkpoint
    (``world.sink_pairing``), or the operator said so with ``plan --force-sink`` (``forced``)."""

    kind: ClassVar[str] = "sink_paired"
    forced: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form."""
        return {"kind": self.kind, "forced": self.forced}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Precondition:
        """Build it from ``forced``."""
        forced = data.get("forced", False)
        if not isinstance(forced, bool):
            raise PlanFormatError("precondition sink_paired has a non-boolean forced")
        return cls(forced=forced)

    def describe(self) -> str:
        """Return the precondition in words."""
        if self.forced:
            return "the file sink is changed although its log may be another query's (--force-sink)"
        return "nothing in the file sink's log contradicts that it is this query's"

    def check(
        self,
        snapshot: CheckpointSnapshot,
        now_ms: int | None,
        sinks: dict[str, FileStat],
        own: Own = frozenset(),
    ) -> str | None:
        """The sink's log does not contradict the checkpoint (unless forced)."""
        return None if self.forced else sink_contradiction(snapshot)


#: Partitions a plan's Kafka precondition may name (a KRaft cluster holds a few million at most; a
#: forged plan's range must not make a reader allocate without bound).
MAX_KAFKA_PARTITIONS = 1_000_000
#: Ranges a description names before "and N more".
SHOWN_RANGES = 20


def _first(names: list[str]) -> str:
    more = f" and {len(names) - SHOWN_RANGES} more" if len(names) > SHOWN_RANGES else ""
    return ", ".join(names[:SHOWN_RANGES]) + more


@dataclass(frozen=True)
class KafkaPositionsPre(OutsidePre):
    """The Kafka positions a plan moves to still exist on the broker, and the records it skips are
    still the ones the operator consented to (retention keeps deleting while a plan waits).

    ``partitions`` holds every partition of the plan's topics as ``(topic, partition, position,
    earliest)``: the position Spark starts the partition from after the plan, and the earliest offset
    the plan was made with where the plan moved the position there (None: the position was kept, so
    only ``earliest <= position <= latest`` must hold). A partition added or deleted since, an
    earliest offset that moved, or a latest offset below a position fails it. The topic's latest
    offset growing does not (new records change nothing the plan skips). Checked against the
    positions the I/O edge reads again at apply time (:meth:`check_live`); the snapshot says nothing.
    """

    kind: ClassVar[str] = "kafka_positions"
    bootstrap: str = ""
    partitions: tuple[tuple[str, int, int, int | None], ...] = ()

    def ranges(self) -> list[tuple[str, int, int, int, int | None]]:
        """Return the partitions as ``(topic, first, last, position, earliest)``: consecutive partitions
        of a topic with the same position and earliest offset are one range (100,000 partitions moved
        alike are one row, issue 31 item 9: a 16,777,217-byte plan that apply refused)."""
        out: list[tuple[str, int, int, int, int | None]] = []
        for topic, part, pos, earliest in self.partitions:
            if out:
                t, first, last, p, e = out[-1]
                if (t, last + 1, p, e) == (topic, part, pos, earliest):
                    out[-1] = (t, first, part, p, e)
                    continue
            out.append((topic, part, part, pos, earliest))
        return out

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form (partitions as ranges, see :meth:`ranges`)."""
        return {
            "kind": self.kind,
            "bootstrap": self.bootstrap,
            "ranges": [
                {"topic": t, "first": first, "last": last, "position": pos, "earliest": e}
                for t, first, last, pos, e in self.ranges()
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Precondition:
        """Build it from the broker address and the partitions (``ranges``, or one row per
        partition in ``partitions`` as plans written before ranges hold them)."""
        bootstrap = data.get("bootstrap")
        rows = data.get("ranges", data.get("partitions"))
        if not isinstance(bootstrap, str) or not bootstrap or not isinstance(rows, list):
            raise PlanFormatError("precondition kafka_positions needs bootstrap and ranges")
        out: list[tuple[str, int, int, int | None]] = []
        for row in rows:
            if not isinstance(row, dict) or not isinstance(row.get("topic"), str):
                raise PlanFormatError("precondition kafka_positions has a partition without a topic")
            earliest = _optional_int(row, "earliest")
            pos = _optional_int(row, "position")
            first = _optional_int(row, "first" if "first" in row else "partition")
            last = _optional_int(row, "last" if "last" in row else "partition")
            if first is None or last is None or pos is None:
                raise PlanFormatError("precondition kafka_positions has a partition without a position")
            if not 0 <= first <= last or last - first >= MAX_KAFKA_PARTITIONS:
                raise PlanFormatError(f"precondition kafka_positions has a bad range {first}..{last}")
            out.extend((str(row["topic"]), part, pos, earliest) for part in range(first, last + 1))
            if len(out) > MAX_KAFKA_PARTITIONS:
                raise PlanFormatError(
                    f"precondition kafka_positions names more than {MAX_KAFKA_PARTITIONS} partitions"
                )
        return cls(bootstrap=bootstrap, partitions=tuple(out))

    @property
    def topics(self) -> tuple[str, ...]:
        """Return the topics whose positions are checked, sorted."""
        return tuple(sorted({t for t, _, _, _ in self.partitions}))

    def describe(self) -> str:
        """Return the precondition in words (partitions as ranges, at most SHOWN_RANGES named)."""
        ranges = self.ranges()
        names = [f"{t}-{a}" if a == b else f"{t}-{a}..{b}" for t, a, b, _, _ in ranges]
        moved = [
            (f"{t}-{a}" if a == b else f"{t}-{a}..{b}") + f" earliest {e}"
            for t, a, b, _, e in ranges
            if e is not None
        ]
        return (
            f"the broker at {self.bootstrap} still lists partitions {_first(names)} with each position "
            "between earliest and latest" + (f" ({_first(moved)} unchanged)" if moved else "")
        )

    def check_live(self, kafka: KafkaLive | None) -> str | None:
        """Return why the broker's positions (read again now) violate the plan, or None."""
        if kafka is None:
            return f"the plan moves Kafka positions read from {self.bootstrap}, which were not read again"
        live = kafka.live
        for topic in self.topics:
            parts = live.get(topic)
            if parts is None:
                return f"topic {topic} is gone from {kafka.bootstrap}"
            planned = sorted(p for t, p, _, _ in self.partitions if t == topic)
            if sorted(parts) != planned:
                return (
                    f"topic {topic} has partitions {sorted(parts)} on {kafka.bootstrap}, the plan was made "
                    f"for {planned}"
                )
        for topic, part, pos, earliest in self.partitions:
            lo, hi = live[topic][part]  # type: ignore[index]
            if earliest is not None and lo != earliest:
                return (
                    f"{topic}-{part}'s earliest offset is {lo} now, the plan was made when it was {earliest} "
                    "(the records it skips changed)"
                )
            if lo > pos:
                return f"{topic}-{part}'s earliest offset is {lo} now, above the position {pos} the query resumes from"
            if hi < pos:
                return f"{topic}-{part}'s latest offset is {hi} now, below the position {pos} the query resumes from"
        return None


@dataclass(frozen=True)
class DeltaTablePre(OutsidePre):
    """A Delta table a plan relies on is still the table it was planned from: the same table id and
    the same earliest version in its log (log cleanup moving on changes which versions a plan skips;
    a replaced table changes what a re-pointed source reads), and no version the plan saw removed
    (the latest version is not lower). New commits do not fail it: they are read on. Checked
    against the table the I/O edge reads again at apply time (:meth:`check_live`)."""

    kind: ClassVar[str] = "delta_table"
    url: str = ""
    table_id: str = ""
    earliest: int = 0
    latest: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form."""
        return {
            "kind": self.kind,
            "url": self.url,
            "table_id": self.table_id,
            "earliest": self.earliest,
            "latest": self.latest,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Precondition:
        """Build it from the table's URL, id and versions."""
        url, table_id = data.get("url"), data.get("table_id")
        earliest, latest = _optional_int(data, "earliest"), _optional_int(data, "latest")
        if (
            not isinstance(url, str)
            or not url
            or not isinstance(table_id, str)
            or earliest is None
            or latest is None
        ):
            raise PlanFormatError("precondition delta_table needs url, table_id, earliest and latest")
        return cls(url=url, table_id=table_id, earliest=earliest, latest=latest)

    def describe(self) -> str:
        """Return the precondition in words."""
        return (
            f"the Delta table {self.url} is still table {self.table_id} with its log starting at version "
            f"{self.earliest} and reaching at least {self.latest}"
        )

    def check_live(self, tables: tuple[DeltaTable, ...] | None) -> str | None:
        """Return why the table's log (read again now) violates the plan, or None."""
        table = next((t for t in tables or () if t.url == self.url), None)
        if table is None:
            return f"the plan relies on the Delta table {self.url}, which is gone or was not read again"
        if table.table_id != self.table_id:
            return f"the Delta table {self.url} is table {table.table_id} now, the plan was made for {self.table_id}"
        if table.earliest_version != self.earliest:
            return (
                f"the Delta table {self.url}'s log starts at version {table.earliest_version} now, the plan was "
                f"made when it started at {self.earliest} (the versions it skips changed)"
            )
        if table.latest_version < self.latest:
            return (
                f"the Delta table {self.url}'s latest version is {table.latest_version} now, below the "
                f"{self.latest} the plan was made from"
            )
        return None


def check_delta(
    preconditions: tuple[Precondition, ...], tables: tuple[DeltaTable, ...] | None
) -> tuple[str, ...]:
    """Return every Delta table precondition that the tables read again violate."""
    return tuple(
        problem
        for pre in preconditions
        if isinstance(pre, DeltaTablePre)
        for problem in [pre.check_live(tables)]
        if problem is not None
    )


def sink_contradiction(snapshot: CheckpointSnapshot) -> str | None:
    """Return why the snapshot's file sink is another query's (its log contradicts the checkpoint),
    or None (no sink, or nothing contradicts)."""
    if snapshot.sink is None:
        return None
    evidence = pairing_evidence(snapshot, snapshot.sink)
    if not evidence.contradicted:
        return None
    return f"the file sink {snapshot.sink.url} is not this query's ({evidence.text})"


PRECONDITION_KINDS: dict[str, type[Precondition]] = {
    cls.kind: cls
    for cls in (
        QueryIdPre,
        LatestBatchesPre,
        FileUnchangedPre,
        FileAbsentPre,
        NoLiveWriterPre,
        SinkPairedPre,
        KafkaPositionsPre,
        DeltaTablePre,
    )
}


def _optional_int(data: dict[str, Any], key: str) -> int | None:
    value = data.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise PlanFormatError(f"precondition {data.get('kind')} has a non-integer {key}")
    return value


def _file_fields(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "area": parse_area(data, "precondition"),
        "path": check_relative_path(data.get("path", ""), what="precondition path"),
    }


def parse_precondition(data: Any) -> Precondition:
    """Build a precondition from its JSON form (its kind's class validates it).

    Raises:
        PlanFormatError: unknown kind, bad area or unsafe path.
    """
    return kind_class(data, PRECONDITION_KINDS, "precondition").from_json(data)


def derive(
    snapshot: CheckpointSnapshot, steps: tuple[Step, ...], live_window_s: float, *, force_sink: bool = False
) -> tuple[Precondition, ...]:
    """Return the preconditions of ``steps`` on ``snapshot``: the query id and newest batches, every
    file removed or copied unchanged, every file created still absent, no live writer, and, when a
    step changes the file sink, that the sink is this query's (or ``force_sink``)."""
    pre: list[Precondition] = [
        QueryIdPre(value=snapshot.query_id),
        LatestBatchesPre(offsets=snapshot.offsets.latest_id, commits=snapshot.commits.latest_id),
    ]
    sinks = sink_files(snapshot)
    seen: set[tuple[str, str, str]] = set()
    removed: set[tuple[str, str]] = set()

    def unchanged(area: Area, path: str) -> None:
        if ("u", area, path) in seen:
            return
        seen.add(("u", area, path))
        stat = snapshot.file(path) if area == Area.CHECKPOINT else sinks.get(path)
        pre.append(
            FileUnchangedPre(
                path=path,
                area=area,
                size=stat.size if stat else None,
                mtime_ms=stat.mtime_ms if stat and not stat.etag else None,
                etag=stat.etag if stat else None,
            )
        )

    for step in steps:
        key = step.key
        if key is None or not step.executable:
            continue
        if isinstance(step, QuarantineStep):
            if not step.if_present:  # an optional one may be absent: nothing to hold
                unchanged(*key)
            removed.add(key)
            continue
        if isinstance(step, CopyStep):
            unchanged(step.area, step.source)
        if step.creates and key not in removed and ("a", *key) not in seen:
            seen.add(("a", *key))
            pre.append(FileAbsentPre(path=key[1], area=key[0]))
    pre.append(NoLiveWriterPre(window_s=live_window_s))
    if any(step.executable and step.key is not None and step.key[0] == Area.SINK for step in steps):
        pre.append(SinkPairedPre(forced=force_sink))
    return tuple(pre)


def check_kafka(preconditions: tuple[Precondition, ...], kafka: KafkaLive | None) -> tuple[str, ...]:
    """Return every Kafka precondition that the broker's positions ``kafka`` violate."""
    return tuple(
        problem
        for pre in preconditions
        if isinstance(pre, KafkaPositionsPre)
        for problem in [pre.check_live(kafka)]
        if problem is not None
    )


def check_preconditions(
    preconditions: tuple[Precondition, ...],
    snapshot: CheckpointSnapshot,
    now_ms: int | None,
    own: Own = frozenset(),
) -> tuple[str, ...]:
    """Return every precondition that ``snapshot`` violates (empty: all hold). ``own``: files
    checkpoint-doctor's own applies wrote (not evidence of a live writer). Kafka positions are the
    broker's, judged by :func:`check_kafka`."""
    sinks = sink_files(snapshot)
    failures = []
    for pre in preconditions:
        problem = pre.check(snapshot, now_ms, sinks, own)
        if problem is not None:
            failures.append(problem)
    return tuple(failures)
