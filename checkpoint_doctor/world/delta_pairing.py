"""Which Delta tables are this checkpoint's source and sink, from their logs alone. Pure.

Nothing in a checkpoint names a Delta table's path: a Delta source's offset holds the table id
(``DeltaSourceOffset.reservoirId``, checked by delta-spark against the table's ``metaData.id`` on
every restart) and the Delta sink writes no file into the checkpoint, it commits each batch to the
table with a ``txn`` action whose appId is the query id (the ``metadata`` file's ``id``) and whose
version is the batch id (``DeltaSink.addBatch``). So a table is paired:

* as **source** ``n`` when its id is the ``reservoirId`` of source ``n`` in the newest offsets
  (``table-id``);
* as **sink** when its transactions hold the query id as appId (``txn-app-id``, with the batch id);
* as source ``n`` when no table has that id but one table's log shows it had it before (its first
  commit's ``metaData.id``; ``former-table-id``): replaced since, with ``CREATE OR REPLACE``; such a
  table beside the checkpoint also wins over a table with that id found farther away (an audit's
  roots): that one is a copy of the old table, and the restart reads the path beside;
* as source ``n`` when no table has that id, exactly one Delta source is left unpaired and exactly
  one table that was named with ``--delta-table`` (``named``), or else found right beside the
  checkpoint and written by no stream (``only-table-beside``; no ``txn``), pairs with nothing
  else: the path the query reads, replaced
  (``CREATE OR REPLACE``) or deleted and written anew, both of which fail the restart with
  ``DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE`` (recorded in ``fixtures/delta/``: ``-replaced``
  and ``-recreated``). The pairing says so in words; a wrong guess names a table the operator can see.

Copies of a table (a backup, ``cp -r``: the same ``metaData.id``) are never told apart by guessing:
when several tables with a source's id are equally near (both named, both beside, or none near), the
source pairs with none of them and the pairing names them all (``copies``). A copy's log may start
anywhere (a copy of a cleaned-up log starts at its oldest commit), so pairing with the wrong one
would judge the restart against another log and steer a repair (issue 31, item 1).

Where the candidates come from is the caller's (the I/O edge): ``diagnose``/``plan`` look beside the
checkpoint (:mod:`checkpoint_doctor.world.delta_discovery`) and read the tables named with
``--delta-table``; ``audit`` indexes every table under its roots (:mod:`checkpoint_doctor.fleet.delta`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from checkpoint_doctor.model import DeltaOffset
from checkpoint_doctor.model_delta import DeltaTable

#: How a table was paired.
BY_TABLE_ID = "table-id"
BY_FORMER_ID = "former-table-id"
BY_TXN_APP_ID = "txn-app-id"
BY_JOB_PATH = "job-path"
ONLY_NAMED = "named"
ONLY_BESIDE = "only-table-beside"
SOURCE = "source"
SINK = "sink"
#: The flag that names a Delta table.
FLAG = "--delta-table"
#: A streaming query id (StreamMetadata's ``id``, ``UUID.randomUUID``): DeltaSink's txn appId is one.
_QUERY_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def is_query_id(app_id: str) -> bool:
    """Whether a txn appId can be a streaming query id (DeltaSink's appId), not a job's own name (a
    foreachBatch's txnAppId)."""
    return _QUERY_ID.fullmatch(app_id) is not None


@dataclass(frozen=True)
class Candidate:
    """A Delta table that may be the checkpoint's: ``named`` with ``--delta-table``, or found
    ``beside`` the checkpoint (its parent or a sibling directory); any other was found farther away
    (an audit's roots) and pairs by id or appId only."""

    table: DeltaTable
    named: bool = False
    beside: bool = False
    #: Ids its log still shows it had before its current one (its first commit's ``metaData.id``:
    #: replaced since), read at the edge only for a Delta source no current id pairs.
    former_ids: frozenset[str] = frozenset()
    #: The source index whose path it is in the changed query (``--job``): what that source reads on
    #: restart, whatever its id (another id fails as a replaced table does).
    job_source: int | None = None


#: How an assumption names a paired Delta sink (render.plan reads it back for a plan's header).
SINK_PAIRED = "Delta sink paired with "


@dataclass(frozen=True)
class DeltaPair:
    """A table paired with the checkpoint: its ``role`` (source or sink), the source index
    (sources), ``how`` it was paired and the sink's txn version (sinks)."""

    role: str
    table: DeltaTable
    how: str
    source: int | None = None
    txn_version: int | None = None

    @property
    def text(self) -> str:
        """Return the pair in an operator's words."""
        t = self.table
        if self.role == SINK:
            return f"{SINK_PAIRED}{t.url} by txn appId = query id (batch {self.txn_version} committed)"
        if self.how == BY_TABLE_ID:
            return f"Delta source {self.source} paired with {t.url} by table id {t.table_id}"
        if self.how == BY_JOB_PATH:
            return f"Delta source {self.source} paired with {t.url}, the path the --job reads (table id {t.table_id})"
        if self.how == BY_FORMER_ID:
            return (
                f"Delta source {self.source} paired with {t.url}, whose log still names the checkpoint's table "
                f"id in its first version: replaced since (its id is now {t.table_id})"
            )
        where = "named with --delta-table" if self.how == ONLY_NAMED else "beside the checkpoint"
        return (
            f"Delta source {self.source} paired with {t.url}, the only Delta table {where} that pairs with "
            f"nothing else: its id {t.table_id} is not the checkpoint's (replaced or recreated, or another "
            "table)"
        )

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict."""
        return {
            "role": self.role,
            "source": self.source,
            "table": self.table.url,
            "table_id": self.table.table_id,
            "how": self.how,
            "txn_version": self.txn_version,
            "text": self.text,
        }


@dataclass(frozen=True)
class DeltaPairing:
    """What the Delta tables looked at say about this checkpoint: its pairs, the Delta sources no
    table pairs with (index, table id), the tables beside it written by other queries only, and
    where the tables were looked for (``looked_at``, words) with how many of them the pairing
    weighed (``candidates``: beside it, named, or sharing an id or appId with it)."""

    pairs: tuple[DeltaPair, ...] = ()
    unpaired: tuple[tuple[int, str], ...] = ()
    others: tuple[DeltaTable, ...] = ()
    looked_at: str = ""
    candidates: int = 0
    #: Named tables that pair with nothing: judged as this query's sink (CD408) as before pairing.
    named_unpaired: tuple[DeltaTable, ...] = ()
    #: Tables that could pair a source but several do (their URLs).
    ambiguous: tuple[str, ...] = ()
    #: Why tables could not be read (URL, one line), shown with the pairing.
    unread: tuple[tuple[str, str], ...] = ()
    #: Of those, the tables certainly the query's (URL, source index or None): paired as a Delta
    #: source (by its id, the --job's path, or named) whose commits then failed to read, or named
    #: with --delta-table; the rest only lay beside it (their id or txns unread: maybe its source or
    #: sink). CD215's severity follows.
    unread_paired: tuple[tuple[str, int | None], ...] = ()
    #: Unpaired sources several tables have the id of, equally near (source index, their URLs):
    #: copies of one table (a backup), none guessed.
    copies: tuple[tuple[int, tuple[str, ...]], ...] = ()
    #: Tables holding this query's txns that are copies of one table (same id, equally near): no
    #: sink is paired among them.
    sink_copies: tuple[tuple[str, ...], ...] = ()

    def source_table(self, source: int) -> DeltaTable | None:
        """Return the table paired with source ``source``, or None."""
        for p in self.pairs:
            if p.role == SOURCE and p.source == source:
                return p.table
        return None

    @property
    def sink_tables(self) -> tuple[DeltaTable, ...]:
        """Return the tables to judge as this query's sink (CD407/CD408)."""
        return tuple(p.table for p in self.pairs if p.role == SINK) + self.named_unpaired

    @property
    def tables(self) -> tuple[DeltaTable, ...]:
        """Return every paired table once."""
        return tuple({p.table.url: p.table for p in self.pairs}.values())

    def lines(self) -> list[str]:
        """Return what was paired and how, and what was not, one line each."""
        out = [p.text for p in self.pairs]
        copies = dict(self.copies)
        unread = {n: url for url, n in self.unread_paired if n is not None}
        for n, table_id in self.unpaired:
            where = f" ({self.looked_at})" if self.looked_at else ""
            if n in unread:
                why = f"its table {unread[n]} cannot be read (below)"
            elif n in copies:
                why = (
                    f"{len(copies[n])} tables have its id ({', '.join(copies[n])}): copies of one table (a "
                    "backup?), and which one the query reads is not guessed"
                )
            elif self.ambiguous:
                why = f"several tables could be it ({', '.join(self.ambiguous)})"
            else:
                why = f"no Delta table looked at{where} has id {table_id}"
            out.append(
                f"Delta source {n} (table {table_id}) not paired: {why}; pass {FLAG} with the path of the "
                "table it reads to check the restart against its log"
            )
        for urls in self.sink_copies:
            out.append(
                f"Delta sink not paired: {len(urls)} tables hold this query's transactions under one table id "
                f"({', '.join(urls)}): copies of one table (a backup?), and which one the query writes is not "
                f"guessed; pass {FLAG} with the path of its sink to check the restart against it"
            )
        for table in self.others:
            streams = [(app, v) for app, v in table.txns if is_query_id(app)]
            if streams:
                apps = ", ".join(f"{app} (batch {v})" for app, v in streams)
                out.append(
                    f"Delta table {table.url} beside the checkpoint was written by other queries ({apps}), never "
                    f"by this query id: not paired; if it is this query's sink, pass {FLAG} {table.url}"
                )
            writes = [(app, v) for app, v in table.txns if not is_query_id(app)]
            if writes:
                apps = ", ".join(f"'{app}' (version {v})" for app, v in writes)
                out.append(
                    f"Delta table {table.url} beside the checkpoint holds idempotent writes' txns ({apps}): appIds "
                    "that are no query id, as a foreachBatch's txnAppId; judged as this query's writes by that "
                    "appId with the batch id as txnVersion"
                )
        for url, why in self.unread:
            out.append(f"Delta table {url} not read: {why}")
        return out

    @property
    def text(self) -> str:
        """Return :meth:`lines` as one assumption line."""
        lines = self.lines()
        if lines:
            return "; ".join(lines)
        if self.candidates:
            return f"Delta tables looked at ({self.looked_at}): none pairs with this checkpoint"
        return ""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict (``diagnose``'s ``delta_pairing``, an audit record's ``delta``)."""
        return {
            "looked_at": self.looked_at,
            "candidates": self.candidates,
            "pairs": [p.to_dict() for p in self.pairs],
            "unpaired_sources": [
                {"source": n, "table_id": t, "tables_with_its_id": list(dict(self.copies).get(n, ()))}
                for n, t in self.unpaired
            ],
            "ambiguous": list(self.ambiguous),
            "sink_copies": [list(urls) for urls in self.sink_copies],
            "other_queries_tables": [t.url for t in self.others],
            "unread": [{"table": u, "reason": r} for u, r in self.unread],
            "text": self.text,
        }


def _nearest(candidates: Sequence[Candidate], table_id: str) -> list[Candidate]:
    """The tables with ``table_id`` of the nearest kind that has any (named, then beside, then
    farther away), one per URL: one is the source's table, several are copies none is guessed of."""
    same = {c.table.url: c for c in candidates if c.table.table_id == table_id}
    for near in (lambda c: c.named, lambda c: c.beside and not c.named, lambda c: not (c.named or c.beside)):
        tier = [c for c in same.values() if near(c)]
        if tier:
            return tier
    return []


def _by_job_or_id(
    sources: Sequence[tuple[int, DeltaOffset]], candidates: Sequence[Candidate]
) -> tuple[list[DeltaPair], list[tuple[int, str]], list[tuple[int, tuple[str, ...]]]]:
    """Pair each source with the table its ``--job`` reads, else with the one table that has its id
    (named first, then beside the checkpoint); return the pairs, the sources left (index, id) and,
    of those, the ones several equally near tables have the id of (index, their URLs)."""

    def replaced_beside(reservoir_id: str) -> bool:
        # A table beside the checkpoint whose log shows the source's id before it was replaced is the
        # path the query reads: a table with that id farther away (an audit's) is a copy of the old.
        return any(
            c.beside and reservoir_id in c.former_ids and c.table.table_id != reservoir_id for c in candidates
        )

    pairs: list[DeltaPair] = []
    unpaired: list[tuple[int, str]] = []
    copies: list[tuple[int, tuple[str, ...]]] = []
    # The changed query names the path each Delta source reads: that table is the one the restart
    # reads, whatever lies beside the checkpoint with the old id.
    by_job = {c.job_source: c.table for c in candidates if c.job_source is not None}
    for n, off in sources:
        if n in by_job:
            pairs.append(DeltaPair(SOURCE, by_job[n], BY_JOB_PATH, source=n))
            continue
        nearest = _nearest(candidates, off.reservoir_id)
        if len(nearest) > 1:
            # A copy and its original are the same id: the first by name would win silently, and a
            # copy whose log starts elsewhere would read CD209 and plan a reservoirVersion of its own.
            unpaired.append((n, off.reservoir_id))
            copies.append((n, tuple(sorted(c.table.url for c in nearest))))
            continue
        match = nearest[0] if nearest else None
        if match is not None and (match.beside or match.named or not replaced_beside(off.reservoir_id)):
            pairs.append(DeltaPair(SOURCE, match.table, BY_TABLE_ID, source=n))
        else:
            unpaired.append((n, off.reservoir_id))
    return pairs, unpaired, copies


def pair_tables(
    sources: Sequence[tuple[int, DeltaOffset]],
    query_id: str | None,
    candidates: Sequence[Candidate],
    *,
    looked_at: str = "",
    taken: frozenset[str] = frozenset(),
    unread: Sequence[tuple[str, str]] = (),
) -> DeltaPairing:
    """Pair the checkpoint's Delta ``sources`` (source index, newest offset) and its query id with
    the candidate tables (see the module docstring). ``taken``: URLs of tables another checkpoint
    of the same audit pairs with (never a spare)."""
    pairs, unpaired, copies = _by_job_or_id(sources, candidates)
    # A source whose table has copies is left to the operator: no former id or spare table pairs it
    # either (a table beside it that is not one of the copies is not its replacement).
    with_copies = {n for n, _ in copies}
    held = [u for u in unpaired if u[0] in with_copies]
    unpaired = [u for u in unpaired if u[0] not in with_copies]
    # A table whose log shows it had the source's id before it was replaced (CREATE OR REPLACE keeps
    # the log): the path the query reads, whatever else lies beside it.
    for n, reservoir_id in list(unpaired):
        former = list(
            {
                c.table.url: c
                for c in candidates
                if reservoir_id in c.former_ids and c.table.table_id != reservoir_id
            }.values()
        )
        if len(former) == 1:
            unpaired.remove((n, reservoir_id))
            pairs.append(DeltaPair(SOURCE, former[0].table, BY_FORMER_ID, source=n))
    source_ids = {off.reservoir_id for _, off in sources}
    taken_now = {p.table.url for p in pairs}

    def spare(c: Candidate) -> bool:
        t = c.table
        return (
            t.table_id not in source_ids
            and (query_id is None or t.txn_version(query_id) is None)
            and t.url not in taken
            and t.url not in taken_now
        )

    ambiguous: tuple[str, ...] = ()
    if len(unpaired) == 1 and not held:
        # Found beside it, a table another stream writes (txns of other query ids only) is more
        # likely that query's sink (a lost checkpoint's, say) than this one's replaced source: it is
        # named (``others``), and pairs only when named with --delta-table.
        for kind, how in (
            (lambda c: c.named, ONLY_NAMED),
            (lambda c: c.beside and not c.named and not c.table.txns, ONLY_BESIDE),
        ):
            spares = list({c.table.url: c for c in candidates if kind(c) and spare(c)}.values())
            if len(spares) == 1:
                n, _ = unpaired.pop()
                pairs.append(DeltaPair(SOURCE, spares[0].table, how, source=n))
                break
            if len(spares) > 1:
                ambiguous = tuple(c.table.url for c in spares)
                break
    unpaired = sorted(unpaired + held)
    paired = {p.table.url for p in pairs}
    writes = [
        c
        for c in candidates
        if query_id and c.table.txn_version(query_id) is not None and c.table.url not in paired
    ]
    # Copies of the sink (the same table id, equally near) hold the same txns, or a backup's older
    # ones: judged against the wrong one, CD407 plans batch copies up to a copy's txn version. None
    # is guessed; tables with other ids are each a sink (a foreachBatch may write several).
    sink_copies = []
    copied: set[str] = set()
    for table_id in dict.fromkeys(c.table.table_id for c in writes if c.table.table_id is not None):
        nearest = _nearest(writes, table_id)
        if len(nearest) > 1:
            sink_copies.append(tuple(sorted(c.table.url for c in nearest)))
            copied |= {c.table.url for c in writes if c.table.table_id == table_id}
        else:
            copied |= {c.table.url for c in writes if c.table.table_id == table_id and c not in nearest}
    for c in writes:
        version = c.table.txn_version(query_id) if query_id else None
        if version is not None and c.table.url not in paired and c.table.url not in copied:
            pairs.append(DeltaPair(SINK, c.table, BY_TXN_APP_ID, txn_version=version))
            paired.add(c.table.url)
    paired |= copied  # neither judged as a named sink nor said to be other queries' tables
    named_unpaired = tuple(
        {c.table.url: c.table for c in candidates if c.named and c.table.url not in paired}.values()
    )
    others = tuple(
        {
            c.table.url: c.table
            for c in candidates
            if c.beside and not c.named and c.table.url not in paired and c.table.txns
        }.values()
    )
    return DeltaPairing(
        pairs=tuple(pairs),
        unpaired=tuple(unpaired),
        others=others,
        looked_at=looked_at,
        candidates=len({c.table.url for c in candidates}),
        named_unpaired=named_unpaired,
        ambiguous=tuple(dict.fromkeys([*ambiguous, *(u for _, urls in copies for u in urls)]))
        if unpaired
        else (),
        unread=tuple(unread),
        copies=tuple(copies),
        sink_copies=tuple(sink_copies),
    )
