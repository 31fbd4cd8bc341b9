"""Parse the small metadata files of ``state/``: operator metadata (4.0+), the state schema file
header, and the ``metadata`` entry inside a RocksDB ``<version>.zip``.

State data (``.delta``/``.snapshot``/SST files) is never parsed: restorability is decided from names.
"""

from __future__ import annotations

import io
import struct
import zipfile

from checkpoint_doctor.errors import CheckpointParseError
from checkpoint_doctor.model import (
    OperatorStateMetadata,
    RocksDBCheckpointMetadata,
    StateSchemaHeader,
)
from checkpoint_doctor.parsing.text import (
    EMPTY,
    INVALID_CONTENT,
    NOT_TEXT,
    TRUNCATED_JSON,
    decode_text,
    parse_json_value,
    parse_version_line,
    split_lines,
)

OPERATOR_METADATA_MAX_VERSION = 2
SCHEMA_MAX_VERSION = 3
ROCKSDB_METADATA_MAX_VERSION = 2


def parse_operator_metadata(data: bytes, *, path: str) -> OperatorStateMetadata:
    """Parse ``state/<op>/_metadata/metadata`` (``OperatorStateMetadataV1``/``V2``).

    Raises:
        CheckpointParseError: on any malformed content.
    """
    lines = split_lines(decode_text(data, path=path))
    if not lines:
        raise CheckpointParseError(path, EMPTY, "empty file")
    version = parse_version_line(lines[0], max_version=OPERATOR_METADATA_MAX_VERSION, path=path)
    if len(lines) < 2:
        raise CheckpointParseError(path, TRUNCATED_JSON, "no metadata line", line=1)
    obj = parse_json_value(lines[1], path=path, line=2)
    info = obj.get("operatorInfo") if isinstance(obj, dict) else None
    stores = obj.get("stateStoreInfo") if isinstance(obj, dict) else None
    if not isinstance(info, dict) or not isinstance(stores, list):
        raise CheckpointParseError(
            path, INVALID_CONTENT, "missing operatorInfo or stateStoreInfo", line=2
        )
    return OperatorStateMetadata(
        version=version,
        operator_id=int(info.get("operatorId", -1)),
        operator_name=str(info.get("operatorName", "")),
        stores=tuple(
            (str(s.get("storeName", "default")), int(s.get("numPartitions", 0)))
            for s in stores
            if isinstance(s, dict)
        ),
    )


class _DataInput:
    """Just enough of ``java.io.DataInputStream`` for ``readUTF`` and ``readInt``."""

    def __init__(self, data: bytes, path: str) -> None:
        self.data = data
        self.pos = 0
        self.path = path

    def _take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise CheckpointParseError(self.path, TRUNCATED_JSON, "schema file ends early")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def read_int(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def read_utf(self) -> str:
        (length,) = struct.unpack(">H", self._take(2))
        raw = self._take(length)
        try:
            # Java's modified UTF-8 differs only for NUL and supplementary characters.
            return raw.decode("utf-8", errors="strict")
        except UnicodeDecodeError as exc:
            raise CheckpointParseError(self.path, NOT_TEXT, "schema string is not UTF-8") from exc


def _field_names(schema_json: str, *, path: str) -> tuple[str, ...]:
    obj = parse_json_value(schema_json, path=path, line=1)
    fields = obj.get("fields") if isinstance(obj, dict) else None
    if not isinstance(fields, list):
        raise CheckpointParseError(path, INVALID_CONTENT, "schema is not a StructType JSON")
    return tuple(str(f.get("name")) for f in fields if isinstance(f, dict))


def parse_schema_header(data: bytes, *, path: str) -> StateSchemaHeader:
    """Parse ``state/<op>/0/[<store>/]_metadata/schema`` (``SchemaHelper`` v1/v2; v3 keeps names empty).

    Raises:
        CheckpointParseError: on any malformed content.
    """
    if not data:
        raise CheckpointParseError(path, EMPTY, "empty file")
    stream = _DataInput(data, path)
    version = parse_version_line(stream.read_utf(), max_version=SCHEMA_MAX_VERSION, path=path)
    if version == 1:
        key, value = stream.read_utf(), stream.read_utf()
    elif version == 2:
        key = "".join(stream.read_utf() for _ in range(stream.read_int()))
        value = "".join(stream.read_utf() for _ in range(stream.read_int()))
    else:
        return StateSchemaHeader(version=version, key_fields=(), value_fields=())
    return StateSchemaHeader(
        version=version,
        key_fields=_field_names(key, path=path),
        value_fields=_field_names(value, path=path),
    )


def parse_rocksdb_zip_metadata(data: bytes, *, path: str) -> RocksDBCheckpointMetadata:
    """Read the ``metadata`` entry of a RocksDB checkpoint zip (``RocksDBCheckpointMetadata``).

    Raises:
        CheckpointParseError: when the zip is unreadable or has no valid ``metadata`` entry.
    """
    if not data:
        raise CheckpointParseError(path, EMPTY, "empty file")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            raw = archive.read("metadata")
    except (zipfile.BadZipFile, KeyError, OSError, EOFError) as exc:
        raise CheckpointParseError(path, INVALID_CONTENT, f"not a readable RocksDB zip ({exc})") from exc
    lines = split_lines(decode_text(raw, path=path))
    if len(lines) < 2:
        raise CheckpointParseError(path, TRUNCATED_JSON, "zip metadata has no JSON line")
    version = parse_version_line(lines[0], max_version=ROCKSDB_METADATA_MAX_VERSION, path=path)
    obj = parse_json_value(lines[1], path=path, line=2)
    if not isinstance(obj, dict):
        raise CheckpointParseError(path, INVALID_CONTENT, "zip metadata is not an object", line=2)

    def names(key: str) -> tuple[str, ...]:
        items = obj.get(key) or []
        return tuple(
            str(i.get("dfsSstFileName") or i.get("dfsLogFileName") or "")
            for i in items
            if isinstance(i, dict)
        )

    num_keys = obj.get("numKeys", 0)
    return RocksDBCheckpointMetadata(
        version=version,
        sst_files=names("sstFiles"),
        log_files=names("logFiles"),
        num_keys=num_keys if isinstance(num_keys, int) else 0,
    )


