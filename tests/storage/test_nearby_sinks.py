"""The file sink next to a checkpoint is found through the storage layer, on local disk, ``memory://``
and S3 alike, and the Python API pairs it as ``diagnose`` does."""

from __future__ import annotations

import checkpoint_doctor as cd
from checkpoint_doctor.world.sinks import nearby_sink_urls, nearby_sinks
from tests.conftest import FIXTURES
from tests.storage.conftest import Backend

FILE_TO_FILE = FIXTURES / "spark-4.3.0" / "file_to_file"
CHECKED = "found next to the checkpoint and checked with it"


def test_a_checkpoint_inside_its_sink_output_is_paired_on_every_backend(backend: Backend) -> None:
    out = backend.put_tree(FILE_TO_FILE / "sink", "out")
    checkpoint = backend.put_tree(FILE_TO_FILE / "checkpoint", "out/_checkpoint")

    found = nearby_sinks(checkpoint, backend.options)
    matrix = cd.diagnose(checkpoint, storage_options=backend.options, live_window_s=0)

    assert [s.url for s in found] == [out]
    assert any(f"file sink {out} {CHECKED}" in a for a in matrix.assumptions)


def test_a_sibling_sink_output_is_found_on_local_disk_and_not_probed_on_an_object_store(
    backend: Backend,
) -> None:
    backend.put_tree(FILE_TO_FILE / "sink", "job/sink")
    backend.put_tree(FILE_TO_FILE / "input", "job/input")
    checkpoint = backend.put_tree(FILE_TO_FILE / "checkpoint", "job/checkpoint")

    urls = nearby_sink_urls(checkpoint, backend.options)

    # One request per sibling on an object store: only the parent is looked at there.
    assert urls == ([backend.url("job/sink")] if backend.name == "local" else [])
    if backend.name == "local":
        plan = cd.plan(checkpoint, live_window_s=0)
        assert plan.sink == backend.url("job/sink")
