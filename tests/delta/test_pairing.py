"""The pairing rule of diagnose, plan and audit (world/delta_pairing.py), on plain values, and the
version checksum parser it relies on (reading/delta_checksum.py)."""

from __future__ import annotations

import json

from checkpoint_doctor.model import DeltaOffset
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.world.delta_checksum import parse_checksum
from checkpoint_doctor.world.delta_pairing import (
    BY_FORMER_ID,
    BY_TABLE_ID,
    BY_TXN_APP_ID,
    ONLY_BESIDE,
    ONLY_NAMED,
    Candidate,
    pair_tables,
)

QUERY = "q-1"


def table(url: str, table_id: str, txns: tuple[tuple[str, int], ...] = ()) -> DeltaTable:
    return DeltaTable(url, table_id, 3, 0, None, None, txns, ())


def source(reservoir_id: str, version: int = 3) -> DeltaOffset:
    return DeltaOffset(
        reservoir_id=reservoir_id,
        reservoir_version=version,
        index=-1,
        source_version=1,
        is_starting_version=False,
    )


def test_a_source_pairs_by_table_id_and_a_sink_by_txn_app_id() -> None:
    got = pair_tables(
        [(0, source("A"))],
        QUERY,
        [Candidate(table("/t/a", "A")), Candidate(table("/t/s", "S", ((QUERY, 7), ("other", 2))))],
    )
    assert [(p.role, p.how, p.table.url, p.source, p.txn_version) for p in got.pairs] == [
        ("source", BY_TABLE_ID, "/t/a", 0, None),
        ("sink", BY_TXN_APP_ID, "/t/s", None, 7),
    ]
    assert got.unpaired == () and got.sink_tables == (got.pairs[1].table,)


def test_an_unpaired_source_takes_the_only_spare_table_named_first_then_beside() -> None:
    beside = Candidate(table("/job/source", "B"), beside=True)
    named = Candidate(table("/else/events", "C"), named=True)
    got = pair_tables([(0, source("A"))], QUERY, [beside, named])
    assert [(p.how, p.table.url) for p in got.pairs] == [(ONLY_NAMED, "/else/events")]
    got = pair_tables([(0, source("A"))], QUERY, [beside])
    assert [(p.how, p.table.url) for p in got.pairs] == [(ONLY_BESIDE, "/job/source")]
    assert "its id B is not the checkpoint's (replaced or recreated" in got.text


def test_a_table_found_farther_away_is_never_a_spare() -> None:
    got = pair_tables(
        [(0, source("A"))], QUERY, [Candidate(table("/far/t", "B"))], looked_at="under the roots"
    )
    assert got.pairs == () and got.unpaired == ((0, "A"),)
    assert "no Delta table looked at (under the roots) has id A" in got.text


def test_several_spares_pair_none_and_are_named() -> None:
    spares = [Candidate(table(f"/job/t{i}", f"B{i}"), beside=True) for i in range(2)]
    got = pair_tables([(0, source("A"))], QUERY, spares)
    assert got.pairs == () and got.ambiguous == ("/job/t0", "/job/t1")
    assert "several tables could be it (/job/t0, /job/t1)" in got.text


def test_a_table_this_query_writes_is_its_sink_not_a_spare_source() -> None:
    sink = Candidate(table("/job/sink", "S", ((QUERY, 2),)), beside=True)
    got = pair_tables([(0, source("A"))], QUERY, [sink])
    assert [(p.role, p.table.url) for p in got.pairs] == [("sink", "/job/sink")]
    assert got.unpaired == ((0, "A"),)


LOST_QUERY = "5c1f0e2a-93b1-4f55-9a57-0d3c1c6e2b7a"  # a query id: StreamMetadata's UUID


def test_a_table_beside_written_by_others_only_is_named_not_judged() -> None:
    other = Candidate(table("/job/old", "S", ((LOST_QUERY, 2),)), beside=True)
    got = pair_tables([], QUERY, [other])
    assert got.pairs == () and got.sink_tables == ()
    assert f"written by other queries ({LOST_QUERY} (batch 2)), never by this query id" in got.text
    named = pair_tables([], QUERY, [Candidate(other.table, named=True)])
    assert named.sink_tables == (other.table,)  # named: judged as the sink (CD408)


def test_a_table_beside_holding_an_idempotent_write_s_txn_says_how_it_is_judged() -> None:
    """An appId that is no query id is no DeltaSink's: a foreachBatch's txnAppId (issue 33 item 6),
    not "another query" to name with --delta-table."""
    writes = Candidate(table("/job/out", "S", (("nightly-app", 7),)), beside=True)
    got = pair_tables([], QUERY, [writes])
    assert got.others == (writes.table,) and "written by other queries" not in got.text
    assert "holds idempotent writes' txns ('nightly-app' (version 7))" in got.text


def test_the_version_checksum_gives_the_state_or_nothing() -> None:
    doc = {
        "metadata": {"id": "T", "schemaString": "{}"},
        "setTransactions": [{"appId": "q", "version": 4, "lastUpdated": 1}],
    }
    state = parse_checksum(9, json.dumps(doc).encode())
    assert state is not None and (state.table_id, state.txns, state.schema) == ("T", (("q", 4),), "{}")
    assert parse_checksum(9, json.dumps({"metadata": {"id": "T"}}).encode()) is None  # txns left out
    assert parse_checksum(9, b"\x00\xff not json") is None
    assert parse_checksum(9, b"[1, 2]") is None
    bad = {**doc, "setTransactions": [{"appId": "q", "version": "4"}]}
    assert parse_checksum(9, json.dumps(bad).encode()) is None


def test_a_table_beside_another_stream_writes_is_no_spare_source_unless_named() -> None:
    """A lost checkpoint's old sink beside a new query that reads a Delta table elsewhere: not its
    replaced source (a false CD208), named instead; named with --delta-table, the old rule pairs it."""
    old_sink = table("/job/sink", "S", (("lost-query", 2),))
    got = pair_tables([(0, source("A"))], QUERY, [Candidate(old_sink, beside=True)])
    assert got.pairs == () and got.unpaired == ((0, "A"),) and got.others == (old_sink,)
    named = pair_tables([(0, source("A"))], QUERY, [Candidate(old_sink, named=True)])
    assert [(p.how, p.table.url) for p in named.pairs] == [(ONLY_NAMED, "/job/sink")]


def test_a_replaced_table_pairs_by_the_id_its_log_still_shows_whatever_else_lies_beside() -> None:
    """Two spares beside (ambiguous by the spare rule), one of which was the source's table before a
    CREATE OR REPLACE: its former id pairs it, and the restart is judged (DIFFERENT_DELTA_TABLE)."""
    replaced = Candidate(table("/job/source", "B"), beside=True, former_ids=frozenset({"A"}))
    lookup = Candidate(table("/job/lookup", "L"), beside=True)
    got = pair_tables([(0, source("A"))], QUERY, [replaced, lookup])
    assert [(p.how, p.table.url) for p in got.pairs] == [(BY_FORMER_ID, "/job/source")]
    assert got.unpaired == () and "replaced since (its id is now B)" in got.text
    assert pair_tables([(0, source("A"))], QUERY, [replace_former(replaced), lookup]).ambiguous == (
        "/job/source",
        "/job/lookup",
    )


def replace_former(c: Candidate) -> Candidate:
    from dataclasses import replace

    return replace(c, former_ids=frozenset())
