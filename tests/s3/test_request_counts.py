"""What loading a checkpoint costs on S3, counted by the moto server: one ListObjectsV2 per 1,000
keys, no HEAD per file, and a number of GETs that does not grow with the retained batches.

The trees (up to a few thousand keys) are seeded through the server's backend: uploading them
over HTTP would take longer than the whole test suite. What is counted is what ``load_snapshot``
sends through s3fs.
"""

from __future__ import annotations

import math

import pytest

from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.s3.conftest import S3
from tests.s3.server import seed_objects
from tests.storage.builders import DELTA, checkpoint_files


def checkpoint_with_keys(keys: int, batches: int) -> dict[str, bytes]:
    """Return a checkpoint of exactly ``keys`` files with ``batches`` retained batches (ids start at
    1000 - batches, as if the older ones were purged), padded with state delta files."""
    first = 1000 - batches
    files = checkpoint_files(range(first, 1000), range(first, 1000), partitions=1, state_versions=())
    i = 0
    while len(files) < keys:
        partition, version = divmod(i, 100)
        files[f"state/0/{partition}/{901 + version}.delta"] = DELTA
        i += 1
    assert len(files) == keys
    return files


@pytest.mark.parametrize("keys", [999, 1000, 1001, 2500])
def test_one_list_request_per_1000_keys_and_no_head(s3: S3, keys: int) -> None:
    seed_objects(s3.bucket, "ckpt", checkpoint_with_keys(keys, batches=100))

    snapshot = load_checkpoint(s3.url("ckpt"), storage_options=s3.options)

    assert len(snapshot.files) == keys
    assert s3.server.log.kinds() == {
        "ListObjectsV2": math.ceil(keys / 1000),
        "GetObject": snapshot.read_count,
    }


@pytest.mark.parametrize("depth", ["default", "deep"])
def test_gets_against_retained_batches(s3: S3, depth: str) -> None:
    seed_objects(s3.bucket, "few", checkpoint_with_keys(400, batches=10))
    seed_objects(s3.bucket, "many", checkpoint_with_keys(700, batches=150))
    counts = {}
    for prefix in ("few", "many"):
        s3.server.log.clear()
        snapshot = load_checkpoint(s3.url(prefix), storage_options=s3.options, depth=depth)
        counts[prefix] = s3.server.log.kinds()
        assert counts[prefix]["GetObject"] == snapshot.read_count
        assert counts[prefix]["ListObjectsV2"] == 1
        assert set(counts[prefix]) == {"ListObjectsV2", "GetObject"}

    if depth == "default":
        assert counts["few"]["GetObject"] == counts["many"]["GetObject"]
    else:
        # --deep reads every batch file of both logs: the difference is exactly the extra batches.
        assert counts["many"]["GetObject"] - counts["few"]["GetObject"] == 2 * (150 - 10)
