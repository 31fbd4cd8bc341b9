"""What loading a checkpoint costs on S3, counted by the moto server: one ListObjectsV2 per 1,000
keys, no HEAD per file, and a number of GETs that does not grow with the retained batches.

The trees (up to a few thousand keys) are seeded through the server's backend: uploading them
over HTTP would take longer than the whole test suite. What is counted is what ``load_snapshot``
sends through s3fs.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator

import pytest

from checkpoint_doctor.cli import main
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.conftest import FIXTURES
from tests.s3.conftest import S3
from tests.s3.server import seed_objects
from tests.storage.builders import DELTA, checkpoint_files, read_files


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


# ------------------------------------------------------------------ round trips waited in sequence


class DelayingServer:
    """A moto S3 server that holds every request for ``delay`` seconds and records when each was
    held: requests sent together overlap, a request sent after another's answer does not. The
    longest chain of requests each starting after the previous one ended is the number of round
    trips the client waited for in sequence (what a verdict costs when each one takes S3's tens
    of milliseconds). What is asserted is that count, never a duration."""

    def __init__(self, delay: float) -> None:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        app = DomainDispatcherApplication(create_backend_app)
        self._lock = threading.Lock()
        self.spans: list[tuple[float, float, str]] = []

        def held(environ: dict, start_response: object) -> object:
            start = time.monotonic()
            time.sleep(delay)
            out = app(environ, start_response)
            with self._lock:
                self.spans.append(
                    (start, time.monotonic(), f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']}")
                )
            return out

        self._server = make_server("127.0.0.1", 0, held, True, request_handler=MotoRequestHandler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"

    def sequential(self) -> list[str]:
        """Return the longest chain of requests that did not overlap (earliest end first)."""
        chain: list[str] = []
        end = float("-inf")
        for start, stop, what in sorted(self.spans, key=lambda s: s[1]):
            if start >= end:
                chain.append(what)
                end = stop
        return chain

    def stop(self) -> None:
        self._server.shutdown()


@pytest.fixture
def delaying(s3: S3) -> Iterator[DelayingServer]:
    server = DelayingServer(delay=0.3)
    yield server
    server.stop()


@pytest.mark.parametrize(
    ("scenario", "parts"),
    [
        # Stateful: offsets, commits, metadata, then the operator's metadata and state file heads.
        ("window_agg", {"checkpoint": "job/checkpoint"}),
        # A file sink next to its checkpoint (out/_checkpoint): its log is found and read too.
        ("file_to_file", {"checkpoint": "out/_checkpoint", "sink": "out"}),
    ],
)
def test_a_diagnose_waits_for_three_round_trips_in_sequence(
    s3: S3, delaying: DelayingServer, scenario: str, parts: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    for part, prefix in parts.items():
        seed_objects(s3.bucket, prefix, read_files(FIXTURES / "spark-4.3.0" / scenario / part))
    url = s3.url(parts["checkpoint"])

    code = main(
        [
            "diagnose",
            url,
            "--format",
            "json",
            "--storage-option",
            f"client_kwargs.endpoint_url={delaying.endpoint}",
        ]
    )
    out, err = capsys.readouterr()

    assert code in (0, 1), err
    if "sink" in parts:
        assert "found next to the checkpoint and checked with it" in out
    # The listing, one batch of reads, the follow-up reads (state file heads, operator metadata);
    # the lookups beside the checkpoint (its sink, the tool directory) run alongside.
    chain = delaying.sequential()
    assert len(chain) <= 3, chain
    assert len(delaying.spans) > len(chain)  # the reads of a batch were sent together


def test_a_diagnose_with_a_delta_source_beside_waits_for_four_round_trips(
    s3: S3, delaying: DelayingServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Delta tables beside the checkpoint are found and read for pairing (the parent's listing,
    each sibling's _delta_log listing, the newest checksum) while the checkpoint loads; the source
    table's commits since the checkpoint's version are one round trip more, after it."""
    delta = FIXTURES / "delta" / "spark-4.2.1" / "delta-source-count-log-cleaned"
    for part in ("checkpoint", "source"):
        seed_objects(s3.bucket, f"job/{part}", read_files(delta / part))
    code = main(
        [
            "diagnose",
            s3.url("job/checkpoint"),
            "--spark",
            "4.2",
            "--format",
            "json",
            "--storage-option",
            f"client_kwargs.endpoint_url={delaying.endpoint}",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 4, err
    assert "CD209" in out and "by table id" in out
    chain = delaying.sequential()
    assert len(chain) <= 4, chain


# ------------------------------------------------------------------ Azure and GCS (issue 37)

#: Round trips a diagnose waits for in sequence, per store (S3: 3 above). GCS: as S3. Azure: as S3
#: plus the HEAD adlfs's find sends before it lists (whether the path is a blob), which other
#: lookups beside the checkpoint may hide: 3 to 4 measured (once 5 on a 2-core box at load 12).
#: Before FsspecStorage read Azure through cat_ranges, adlfs's cat read one blob after another:
#: 11 for window_agg, 12 for file_to_file.
SEQUENTIAL_ROUND_TRIPS = {"azure": 5, "gcs": 3}


@pytest.mark.parametrize("cloud", ["azure", "gcs"])
@pytest.mark.parametrize(
    ("scenario", "parts"),
    [
        ("window_agg", {"checkpoint": "job/checkpoint"}),
        ("file_to_file", {"checkpoint": "out/_checkpoint", "sink": "out"}),
    ],
)
def test_a_diagnose_on_azure_and_gcs_waits_for_few_round_trips_in_sequence(
    cloud: str,
    scenario: str,
    parts: dict[str, str],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.s3.emulators import DelayingProxy

    store = request.getfixturevalue(cloud)
    for part, prefix in parts.items():
        store.fs.put(str(FIXTURES / "spark-4.3.0" / scenario / part) + "/", store.key(prefix), recursive=True)
    proxy = DelayingProxy(store.endpoint.split("/devstoreaccount1")[0], delay=0.3)
    try:
        if cloud == "azure":
            server = request.getfixturevalue("azurite")
            endpoint = f"{proxy.endpoint}/devstoreaccount1"
            monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", server.connection_string(endpoint))
        else:
            monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxy.endpoint)
        code = main(["diagnose", store.url(parts["checkpoint"]), "--format", "json"])
        out, err = capsys.readouterr()
    finally:
        proxy.stop()

    assert code in (0, 1), err
    if "sink" in parts:
        assert "found next to the checkpoint and checked with it" in out
    chain = proxy.sequential()
    assert len(chain) <= SEQUENTIAL_ROUND_TRIPS[cloud], chain
    assert len(proxy.spans) > len(chain)  # the reads of a batch were sent together
