"""sources/, _spark_metadata/ and state metadata parsers, source offset decoding, robustness."""

from __future__ import annotations

import contextlib
import io
import json
import struct
import zipfile

import pytest
from hypothesis import given

from checkpoint_doctor.errors import CheckpointParseError
from checkpoint_doctor.model import (
    ContinuousRateOffset,
    DeltaOffset,
    FileSourceLogBatch,
    FileSourceOffset,
    KafkaInitialOffsets,
    KafkaOffset,
    LongOffset,
    RateStartTime,
)
from checkpoint_doctor.parsing.compactible import (
    is_kafka_initial_offsets,
    parse_sink_log,
    parse_source_metadata,
)
from checkpoint_doctor.parsing.source_offsets import decode_offset
from checkpoint_doctor.parsing.state_files import (
    parse_operator_metadata,
    parse_rocksdb_zip_metadata,
    parse_schema_header,
)
from tests.strategies import file_like_bytes


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        (
            '{"topicA":{"0":23,"1":42},"topicB":{"0":7}}',
            KafkaOffset((("topicA", 0, 23), ("topicA", 1, 42), ("topicB", 0, 7))),
        ),
        ('{"logOffset":6}', FileSourceOffset(6)),
        ("2", LongOffset(2)),
        (
            '{"sourceVersion":1,"reservoirId":"abc","reservoirVersion":12,"index":-1,"isStartingVersion":false}',
            DeltaOffset("abc", 12, -1, 1, False),
        ),
        (
            '{"0":{"value":10,"runTimeMs":5},"1":{"value":11,"runTimeMs":6}}',
            ContinuousRateOffset(((0, 10, 5), (1, 11, 6))),
        ),
        ('{"something":"else"}', None),
        ("not json", None),
    ],
)
def test_decode_offset_common_sources(raw, decoded):
    assert decode_offset(raw) == decoded


def test_file_source_log_entries():
    data = b'v1\n{"path":"file:///in/f0.json","timestamp":1795357713197,"batchId":0}'
    record = parse_source_metadata(data, path="sources/0/0")
    assert isinstance(record, FileSourceLogBatch)
    assert record.entries[0].path == "file:///in/f0.json"


def test_kafka_initial_offsets_skip_the_leading_nul_byte():
    record = parse_source_metadata(b'\x00v1\n{"t":{"0":5}}', path="sources/0/0")
    assert isinstance(record, KafkaInitialOffsets)
    assert record.offset == KafkaOffset((("t", 0, 5),))
    legacy = parse_source_metadata(b'\x00{"t":{"0":5}}', path="sources/0/0")
    assert legacy.legacy_format


def test_kafka_initial_offsets_of_every_era():
    """KafkaSourceInitialOffsetWriter.deserialize skips the first byte whatever it is (SPARK-19517)."""
    body = b'{"events":{"0":100,"1":90}}'
    spark_2_1_0 = parse_source_metadata(bytes([len(body)]) + body, path="sources/0/0")
    assert spark_2_1_0.legacy_format and spark_2_1_0.version == 0
    assert spark_2_1_0.offset == KafkaOffset((("events", 0, 100), ("events", 1, 90)))
    current = parse_source_metadata(b"\x00v1\n" + body, path="sources/0/0")
    assert not current.legacy_format and current.version == 1 and current.offset == spark_2_1_0.offset
    with pytest.raises(CheckpointParseError) as info:
        parse_source_metadata(b"\x00v99999\n" + body, path="sources/0/0")
    assert (info.value.kind, info.value.version) == ("unsupported-version", 99999)
    with pytest.raises(CheckpointParseError) as info:
        parse_source_metadata(b"\x00v1", path="sources/0/0")
    assert info.value.kind == "malformed-header"  # "failed to detect the log file version line"
    with pytest.raises(CheckpointParseError) as info:
        parse_source_metadata(b"\x00", path="sources/0/0")
    assert info.value.kind == "empty"  # require(content.nonEmpty)
    assert is_kafka_initial_offsets(b"\x00v1\n{}") and is_kafka_initial_offsets(b"\x1b{")
    assert not is_kafka_initial_offsets(b"v1\n1795357718920") and not is_kafka_initial_offsets(b"")


def test_rate_start_time():
    assert parse_source_metadata(b"v1\n1795357718920", path="sources/0/0") == RateStartTime(1, 1795357718920)


def test_sink_log_entries_and_empty_file():
    data = b'v1\n{"path":"file:///out/part-0.parquet","size":663,"isDir":false,"modificationTime":1,"blockReplication":1,"blockSize":33554432,"action":"add"}'
    assert parse_sink_log(data, path="_spark_metadata/0").entries[0].size == 663
    with pytest.raises(CheckpointParseError) as info:
        parse_sink_log(b"", path="_spark_metadata/0")
    assert info.value.kind == "empty"


def test_operator_metadata_v1():
    data = b'v1\n{"operatorInfo":{"operatorId":0,"operatorName":"stateStoreSave"},"stateStoreInfo":[{"storeName":"default","numColsPrefixKey":0,"numPartitions":2}]}'
    md = parse_operator_metadata(data, path="state/0/_metadata/metadata")
    assert (md.operator_name, md.stores) == ("stateStoreSave", (("default", 2),))


def _utf(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">H", len(raw)) + raw


def test_schema_header_v2_chunks():
    key = json.dumps({"type": "struct", "fields": [{"name": "window"}]})
    value = json.dumps({"type": "struct", "fields": [{"name": "count"}]})
    data = (
        _utf("v2")
        + struct.pack(">i", 2)
        + _utf(key[:10])
        + _utf(key[10:])
        + struct.pack(">i", 1)
        + _utf(value)
    )
    header = parse_schema_header(data, path="state/0/0/_metadata/schema")
    assert (header.version, header.key_fields, header.value_fields) == (2, ("window",), ("count",))


def test_rocksdb_zip_metadata_names_its_ssts():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(
            "metadata",
            'v1\n{"sstFiles":[{"localFileName":"000008.sst","dfsSstFileName":"000008-abc.sst","sizeBytes":1}],"numKeys":2}',
        )
    md = parse_rocksdb_zip_metadata(buf.getvalue(), path="state/0/0/2.zip")
    assert md.sst_files == ("000008-abc.sst",) and md.num_keys == 2


@given(file_like_bytes)
def test_other_parsers_return_a_value_or_raise_parse_error(data):
    for parser in (
        parse_source_metadata,
        parse_sink_log,
        parse_operator_metadata,
        parse_schema_header,
        parse_rocksdb_zip_metadata,
    ):
        with contextlib.suppress(CheckpointParseError):
            parser(data, path="p")


@given(file_like_bytes)
def test_decode_offset_never_raises(data):
    decode_offset(data.decode("utf-8", "replace"))


def _sink_log_reference(data: bytes, path: str) -> tuple[str, object]:
    """Each line through parse_json_value, one by one, as the sink log reader did before its fast
    path (bench: audit): the result, or the error's kind and line."""
    from checkpoint_doctor.model import SinkFileEntry
    from checkpoint_doctor.parsing.compactible import _json_lines
    from checkpoint_doctor.parsing.text import decode_text, iter_lines, json_long

    try:
        lines = iter_lines(decode_text(data, path=path))
        next(lines)
        out = []
        for i, obj in _json_lines(lines, path=path):
            if not isinstance(obj.get("path"), str):
                raise CheckpointParseError(path, "invalid-content", "entry without 'path'", line=i)
            out.append(
                SinkFileEntry(
                    str(obj["path"]),
                    json_long(obj, "size", path=path, line=i),
                    str(obj.get("action", "add")),
                    json_long(obj, "modificationTime", path=path, line=i)
                    if "modificationTime" in obj
                    else None,
                )
            )
        return "ok", tuple(out)
    except CheckpointParseError as exc:
        return exc.kind, exc.line


@pytest.mark.parametrize(
    "body",
    [
        '{"path":"a","size":1,"modificationTime":5,"action":"add"}\n{"path":"b","size":2}',
        ' \t{"path":"a","size":1}',  # leading whitespace: Jackson skips it
        '{"path":"a","size":1} trailing words',  # Jackson ignores what follows the value
        '{"path":"a","size":1}\n\n{"path":"b"}',  # an empty line: end of input
        '{"path":"a","size":NaN}',
        '{"path":"a","size":1.5e3,"modificationTime":null,"action":7}',
        '{"path":"a","size":99999999999999999999}',
        '[{"path":"a"}]',
        '{"path":"a","size":"1"}',
        '{"path":"a", "size":',
        '{"path":"a"}\r\n{"path":"b"}\r{"path":"c"}',
        '{"size":1}',
        '{"path":"a","size":true}',
        "[" * 100_000,
    ],
)
def test_sink_log_fast_path_reads_every_line_as_jackson_would(body):
    data = ("v1\n" + body).encode()
    try:
        got: tuple[str, object] = ("ok", parse_sink_log(data, path="_spark_metadata/0").entries)
    except CheckpointParseError as exc:
        got = (exc.kind, exc.line)
    assert got == _sink_log_reference(data, "_spark_metadata/0")


def _slow_sink_log(data: bytes, path: str, monkeypatch: pytest.MonkeyPatch):
    """parse_sink_log with its regular-expression path for Spark's own lines switched off."""
    import re

    from checkpoint_doctor.parsing import compactible

    with monkeypatch.context() as m:
        m.setattr(compactible, "_CANONICAL", re.compile(r"(?!)"))
        try:
            return compactible.parse_sink_log(data, path=path)
        except CheckpointParseError as exc:
            return exc.kind, exc.reason, exc.line


def _fast_sink_log(data: bytes, path: str):
    try:
        return parse_sink_log(data, path=path)
    except CheckpointParseError as exc:
        return exc.kind, exc.reason, exc.line


def test_every_fixture_sink_log_reads_the_same_through_the_fast_path(monkeypatch):
    # A line as Spark writes it is read by a regular expression, any other by the JSON decoder:
    # the entries must be the decoder's, for every sink log real Spark wrote.
    from checkpoint_doctor.parsing.compactible import _CANONICAL
    from tests.scenarios import FIXTURES

    files = [p for p in FIXTURES.rglob("_spark_metadata/*") if p.is_file() and not p.name.startswith(".")]
    assert len(files) > 100
    fast = 0
    for f in files:
        data = f.read_bytes()
        assert _fast_sink_log(data, str(f)) == _slow_sink_log(data, str(f), monkeypatch), f
        fast += sum(1 for line in data.decode(errors="replace").split("\n") if _CANONICAL.fullmatch(line))
    assert fast > 1000  # real Spark's lines take the fast path


@pytest.mark.parametrize(
    "line",
    [
        '{"path":"file:///o/a.parquet","size":1,"isDir":false,"modificationTime":2,"blockReplication":1,"blockSize":3,"action":"add"}',
        '{"path":"file:///o/a.parquet","size":1,"isDir":false,"modificationTime":2,"blockReplication":1,"blockSize":3,"action":"delete"}',
        '{"path":"file:///o/a\\"b.parquet","size":1,"isDir":false,"modificationTime":2,"blockReplication":1,"blockSize":3,"action":"add"}',
        '{"path":"file:///o/a\\u00e9.parquet","size":1,"isDir":false,"modificationTime":2,"blockReplication":1,"blockSize":3,"action":"add"}',
        '{"path":"file:///o/a\tb","size":1,"isDir":false,"modificationTime":2,"blockReplication":1,"blockSize":3,"action":"add"}',
        '{"path":"file:///o/a.parquet","size":01,"isDir":false,"modificationTime":2,"blockReplication":1,"blockSize":3,"action":"add"}',
        '{"path":"file:///o/a.parquet","size":-1,"isDir":false,"modificationTime":2,"blockReplication":1,"blockSize":3,"action":"add"}',
        '{"path":"file:///o/a.parquet","size":99999999999999999999,"isDir":false,"modificationTime":2,"blockReplication":1,"blockSize":3,"action":"add"}',
        '{"path":"file:///o/a.parquet","size":1,"isDir":true,"modificationTime":2,"blockReplication":1,"blockSize":3,"action":"add"}',
        '{"path":"file:///o/a.parquet","size":1,"isDir":false,"modificationTime":2,"blockReplication":1,"blockSize":3,"action":"add"} trailing',
        '{"path":"file:///o/a.parquet","size":1,"isDir":false,"modificationTime":2,"blockReplication":1,"blockSize":3,"action":"ADD"}',
        '{"path":"file:///o/a.parquet","size":1.5,"isDir":false,"modificationTime":2,"blockReplication":1,"blockSize":3,"action":"add"}',
        ' {"path":"file:///o/a.parquet","size":1,"isDir":false,"modificationTime":2,"blockReplication":1,"blockSize":3,"action":"add"}',
        '{"path":"file:///o/a.parquet","size":1,"isDir":false,"modificationTime":2,"blockReplication":1,"blockSize":3,"action":"add"',
        '{"path":"file:///o/a.parquet","size":1,"isDir":false,"blockReplication":1,"blockSize":3,"action":"add"}',
    ],
)
def test_a_sink_log_line_reads_the_same_through_the_fast_path(line, monkeypatch):
    data = ("v1\n" + line).encode()
    assert _fast_sink_log(data, "_spark_metadata/0") == _slow_sink_log(data, "_spark_metadata/0", monkeypatch)
