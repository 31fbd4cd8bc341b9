"""transformWithState's files: operator metadata v2 and state schema files v3, read as Spark wrote them
(fixtures/tws/, scripts/tws_fixtures.py) and as ``SchemaHelper.SchemaV3Writer`` writes any of them."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkpoint_doctor.errors import CheckpointParseError
from checkpoint_doctor.parsing.state_files import parse_operator_metadata, parse_state_schema_v3

TWS = Path(__file__).resolve().parents[2] / "fixtures" / "tws"
HEALTHY = sorted(TWS.glob("spark-*/tws_*-healthy/checkpoint"))


def _utf(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack(">H", len(raw)) + raw


def _chunked(text: str, chunk: int = 65_535) -> bytes:
    """``SchemaHelper.writeJsonSchema``: a chunk count, then ``writeUTF`` chunks."""
    parts = [text[i : i + chunk] for i in range(0, len(text), chunk)] or [""]
    return struct.pack(">i", len(parts)) + b"".join(_utf(p) for p in parts)


def write_v3(families: list[tuple[str, int, str, int, str, str, str]]) -> bytes:
    out = _utf("v3") + struct.pack(">i", len(families))
    for name, key_id, key, value_id, value, encoder, user_key in families:
        out += _utf(name) + struct.pack(">h", key_id) + _chunked(key) + struct.pack(">h", value_id)
        out += _chunked(value) + _chunked(encoder) + _chunked(user_key)
    return out


_text = st.text(st.characters(min_codepoint=32, max_codepoint=0xD7FF), max_size=40)
_family = st.tuples(_text, st.integers(0, 32767), _text, st.integers(0, 32767), _text, _text, _text)


@given(st.lists(_family, max_size=6))
def test_any_schema_v3_file_reads_back_as_written(families: list) -> None:
    parsed = parse_state_schema_v3(write_v3(families), path="s")
    assert [
        (c.name, c.key_schema_id, c.key_schema, c.value_schema_id, c.value_schema, c.key_encoder)
        for c in parsed.column_families
    ] == [f[:6] for f in families]
    assert [c.user_key_schema for c in parsed.column_families] == [
        None if "".join(f[6].split()) in ("", "{}") else f[6] for f in families
    ]


@given(st.binary(max_size=200))
def test_any_bytes_parse_or_fail_with_a_parse_error(data: bytes) -> None:
    outcome: object
    try:
        outcome = parse_state_schema_v3(data, path="s").version
    except CheckpointParseError as exc:
        outcome = exc.kind
    assert outcome in (
        3,
        "empty",
        "invalid-content",
        "truncated-json",
        "not-text",
        "unsupported-version",
        "malformed-header",
    )


def test_a_cut_schema_file_is_a_parse_error() -> None:
    data = write_v3([("count", 0, '{"type":"struct","fields":[]}', 0, "{}", "{}", "{}")])
    with pytest.raises(CheckpointParseError):
        parse_state_schema_v3(data[:-3], path="s")


def test_every_line_wrote_healthy_fixtures() -> None:
    assert {p.parent.parent.name for p in HEALTHY} == {
        "spark-4.0.5",
        "spark-4.1.4",
        "spark-4.2.1",
        "spark-4.3.0",
    }


@pytest.mark.parametrize(
    "checkpoint", HEALTHY, ids=[f"{p.parent.parent.name}/{p.parent.name}" for p in HEALTHY]
)
def test_spark_written_metadata_and_schema_read(checkpoint: Path) -> None:
    op = checkpoint / "state" / "0"
    newest = max(
        (p for p in (op / "_metadata" / "v2").iterdir() if p.name.isdigit()), key=lambda p: int(p.name)
    )
    meta = parse_operator_metadata(newest.read_bytes(), path=str(newest))
    assert meta.version == 2
    row_api = "tws_row" in checkpoint.parent.name
    assert meta.operator_name == (
        "transformWithStateInPySparkExec" if row_api else "transformWithStateInPandasExec"
    )
    assert meta.properties is not None
    assert (meta.properties.time_mode, meta.properties.output_mode) == ("NoTime", "Update")
    assert {(v.name, v.kind, v.ttl_enabled) for v in meta.properties.variables} == {
        ("count", "ValueState", False),
        ("seen", "ListState", False),
        ("last", "MapState", False),
    }
    assert (
        len(meta.schema_file_paths) == 1 and "/state/0/_stateSchema/default/0_" in meta.schema_file_paths[0]
    )
    schema_file = next(p for p in (op / "_stateSchema" / "default").iterdir() if not p.name.startswith("."))
    schema = parse_state_schema_v3(schema_file.read_bytes(), path=str(schema_file))
    families = {c.name: c for c in schema.column_families}
    assert {"count", "seen", "last", "$rowCounter_seen"} <= set(families)
    assert json.loads(families["count"].value_schema)["fields"][0]["name"] == "n"
    assert families["last"].user_key_schema is not None and '"k"' in families["last"].user_key_schema
    assert families["count"].user_key_schema is None


def test_an_unreadable_newest_metadata_v2_is_judged_as_spark_reads_it(tmp_path: Path) -> None:
    """A corrupt newest ``_metadata/v2`` file: Spark's reader fails as for a missing one
    (STDS_FAILED_TO_READ_OPERATOR_METADATA, "Either the file does not exist, or the file is corrupted")."""
    from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
    from checkpoint_doctor.reading.pipeline import load_checkpoint

    cp = tmp_path / "checkpoint"
    import shutil

    shutil.copytree(TWS / "spark-4.3.0" / "tws_pandas-healthy" / "checkpoint", cp)
    newest = cp / "state" / "0" / "_metadata" / "v2" / "2"
    newest.write_text(
        'v2\n{"operatorInfo":{"operatorId":0},"stateStoreInfo":[],"operatorPropertiesJson":"{bad"}\n'
    )
    (newest.parent / ".2.crc").unlink()
    got = diagnose(load_checkpoint(str(cp)), DiagnoseOptions(spark="4.3", live_window_s=0))
    assert not got.prediction.starts
    assert (
        got.prediction.error is not None
        and "STDS_FAILED_TO_READ_OPERATOR_METADATA" in got.prediction.error.message
    )
    assert "CD322" in got.codes
