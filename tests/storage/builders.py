"""Small checkpoints from literal bytes in Spark's formats, and helpers to place them anywhere."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

QUERY_ID = "0f7cc2a5-6a4b-4c41-9a56-2f3c8d1e7b90"
METADATA = b'{"id":"0f7cc2a5-6a4b-4c41-9a56-2f3c8d1e7b90"}'
CONF = (
    '{"spark.sql.streaming.stateStore.providerClass":'
    '"org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",'
    '"spark.sql.streaming.multipleWatermarkPolicy":"min","spark.sql.shuffle.partitions":"2"}'
)
OPERATOR_METADATA = (
    b'v1\n{"operatorInfo":{"operatorId":0,"operatorName":"stateStoreSave"},'
    b'"stateStoreInfo":[{"storeName":"default","numColsPrefixKey":0,"numPartitions":2}]}'
)
DELTA = b"\x00\x00\x00\x10LZ4 state delta bytes\xff\xff\xff\xff"


def offsets_file(batch_id: int) -> bytes:
    """Return ``offsets/<batch_id>`` of a rate source query (Spark 3.5 ``OffsetSeq`` v1)."""
    return (
        f'v1\n{{"batchWatermarkMs":{batch_id * 1000},"batchTimestampMs":{1795364925498 + batch_id * 1000},'
        f'"conf":{CONF}}}\n{{"offset":{batch_id * 10},"timestamp":{4000 + batch_id * 1000}}}'
    ).encode()


def commit_file(batch_id: int) -> bytes:
    """Return ``commits/<batch_id>`` (``CommitMetadata`` v1)."""
    return f'v1\n{{"nextBatchWatermarkMs":{batch_id * 1000}}}'.encode()


def checkpoint_files(
    offsets: Iterable[int] = range(3),
    commits: Iterable[int] = range(2),
    *,
    partitions: int = 0,
    state_versions: Iterable[int] = (),
) -> dict[str, bytes]:
    """Return the files of a checkpoint, relative path -> bytes.

    By default: ``metadata``, ``offsets/0..2``, ``commits/0..1`` (batch 2 planned, not committed).
    With ``partitions``: one stateful operator (HDFS provider) with ``<v>.delta`` files.
    """
    files = {"metadata": METADATA}
    files.update({f"offsets/{b}": offsets_file(b) for b in offsets})
    files.update({f"commits/{b}": commit_file(b) for b in commits})
    if partitions:
        files["state/0/_metadata/metadata"] = OPERATOR_METADATA
        for p in range(partitions):
            files.update({f"state/0/{p}/{v}.delta": DELTA for v in state_versions})
    return files


def write_files(root: Path, files: Mapping[str, bytes]) -> Path:
    """Write ``files`` under a local directory; return it."""
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def read_files(root: Path) -> dict[str, bytes]:
    """Return every regular file under a local directory, relative POSIX path -> bytes."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            full = Path(dirpath, name)
            out[full.relative_to(root).as_posix()] = full.read_bytes()
    return out


def copy_files_only(src: Path, dest: Path) -> Path:
    """Copy the regular files of a tree (no empty directories, which object stores cannot hold)."""
    for rel in read_files(src):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, dest / rel)
    return dest
