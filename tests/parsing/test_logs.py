"""offsets/, commits/ and metadata parsers: Spark's rules, failure kinds, round trips, robustness."""

from __future__ import annotations

import pytest
from hypothesis import example, given

from checkpoint_doctor.errors import CheckpointParseError
from checkpoint_doctor.model import KafkaOffset, LongOffset, RatePerMicroBatchOffset
from checkpoint_doctor.parsing.commits import parse_commit, serialize_commit
from checkpoint_doctor.parsing.metadata import parse_query_metadata, serialize_query_metadata
from checkpoint_doctor.parsing.offsets import parse_offsets, serialize_offsets
from tests.strategies import commit_records, file_like_bytes, offset_seqs, query_metadata

OFFSETS_V1 = (
    b'v1\n{"batchWatermarkMs":1000,"batchTimestampMs":1795364925498,'
    b'"conf":{"spark.sql.shuffle.partitions":"2"}}\n{"offset":20,"timestamp":4000}'
)


def kind_of(parser, data: bytes) -> str:
    with pytest.raises(CheckpointParseError) as info:
        parser(data, path="x/2")
    return info.value.kind


def test_offsets_v1_fields():
    seq = parse_offsets(OFFSETS_V1, path="offsets/3")
    assert seq.version == 1
    assert seq.metadata.batch_watermark_ms == 1000
    assert seq.metadata.conf_value("spark.sql.shuffle.partitions") == "2"
    assert seq.sources[0].decoded == RatePerMicroBatchOffset(offset=20, timestamp_ms=4000)


def test_offsets_v1_void_source_and_blank_metadata_line():
    seq = parse_offsets(b"v1\n\n-\n7", path="offsets/0")
    assert seq.metadata is None
    assert [s.raw for s in seq.sources] == [None, "7"]
    assert seq.sources[1].decoded == LongOffset(7)


def test_offsets_v2_named_sources_split_at_first_colon():
    data = b'v2\n{"batchWatermarkMs":0,"batchTimestampMs":5,"conf":{},"sourceMetadataInfo":{}}\nsrc_a:{"t":{"0":4}}\nsrc_b:-'
    seq = parse_offsets(data, path="offsets/1")
    assert [(s.name, s.raw) for s in seq.sources] == [("src_a", '{"t":{"0":4}}'), ("src_b", None)]
    assert seq.sources[0].decoded == KafkaOffset(partitions=(("t", 0, 4),))


def test_offsets_without_conf_is_spark_2_1_style():
    seq = parse_offsets(b'v1\n{"batchWatermarkMs":0,"batchTimestampMs":9}\n3', path="offsets/1")
    assert seq.metadata.has_conf is False


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"", "empty"),
        (b"v1", "header-only"),
        (b"v1\n", "header-only"),
        (b"x1\n{}\n1", "malformed-header"),
        (b"v1 \n{}\n1", "malformed-header"),
        (b"v99\n{}\n1", "unsupported-version"),
        (OFFSETS_V1[:60], "truncated-json"),
        (b"v1\n{bad}\n1", "bad-json"),
        (b"v2\n\nsrc:1", "invalid-content"),
        (b'v2\n{"batchWatermarkMs":0}\nnocolon', "invalid-content"),
        (b"\xac\xed\x00\x05sr\x00", "java-serialized"),
        (b"v1\n\xff\xfe", "not-text"),
    ],
)
def test_offsets_failure_kinds(data, kind):
    assert kind_of(parse_offsets, data) == kind


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"", "empty"),
        (b"v4\n{}", "unsupported-version"),
        (b"x\n{}", "malformed-header"),
        (b"v1\n{", "truncated-json"),
    ],
)
def test_commit_failure_kinds(data, kind):
    assert kind_of(parse_commit, data) == kind


def test_commit_header_only_is_valid_and_trimmed():
    record = parse_commit(b" v1 ", path="commits/2")
    assert record.header_only and record.version == 1 and record.next_batch_watermark_ms == 0


def test_commit_v2_state_unique_ids():
    record = parse_commit(b'v2\n{"nextBatchWatermarkMs":0,"stateUniqueIds":{"0":[["a"],["b"]]}}', path="c/1")
    assert record.state_unique_ids == ((0, (("a",), ("b",))),)


@pytest.mark.parametrize(
    ("data", "kind"), [(b"", "empty"), (b"{", "truncated-json"), (b'{"x":1}', "invalid-content")]
)
def test_metadata_failure_kinds(data, kind):
    assert kind_of(parse_query_metadata, data) == kind


@given(offset_seqs())
def test_offsets_round_trip(seq):
    assert parse_offsets(serialize_offsets(seq), path="offsets/0") == seq


@given(commit_records())
def test_commits_round_trip(record):
    assert parse_commit(serialize_commit(record), path="commits/0") == record


@given(query_metadata)
def test_metadata_round_trip(meta):
    assert parse_query_metadata(serialize_query_metadata(meta), path="metadata") == meta


@given(file_like_bytes)
@example(b"v1\n\n")
@example(b"v2\n{}\n:")
@example(b"v1\n" + b"[" * 100000)
def test_log_parsers_return_a_value_or_raise_parse_error(data):
    for parser in (parse_offsets, parse_commit, parse_query_metadata):
        try:
            parser(data, path="p")
        except CheckpointParseError as exc:
            problem = (exc.kind, exc.path)
        else:
            problem = ("ok", "p")
        assert problem[0] and problem[1] == "p"
