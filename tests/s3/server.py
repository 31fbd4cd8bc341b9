"""A real moto S3 server on 127.0.0.1, shared by the whole test session, and what tests need of it.

Requests are counted on the server side: the server's access log (werkzeug's ``werkzeug`` logger,
one line per request it handled, written before the response body) is captured by a logging
handler and classified by S3 operation. Nothing is patched.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import urllib.request
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from moto.server import ThreadedMotoServer

BUCKET = "ckpt-bucket"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Request:
    """One request the server handled."""

    method: str
    target: str
    status: str

    @property
    def kind(self) -> str:
        """Return the S3 operation name (``ListObjectsV2``, ``GetObject``, ``HeadObject``...)."""
        path, _, query = self.target.partition("?")
        segments = [s for s in path.split("/") if s]
        on_key = len(segments) > 1
        params = {p.partition("=")[0] for p in query.split("&") if p}
        if self.method == "GET":
            if on_key:
                return "GetObject"
            if not segments:
                return "ListBuckets"
            return "ListObjectsV2" if "list-type" in params else "ListObjects"
        if self.method == "HEAD":
            return "HeadObject" if on_key else "HeadBucket"
        if self.method == "PUT":
            return "PutObject" if on_key else "CreateBucket"
        if self.method == "POST" and "delete" in params:
            return "DeleteObjects"
        if self.method == "DELETE":
            return "DeleteObject" if on_key else "DeleteBucket"
        return f"{self.method} {path}"


class RequestLog(logging.Handler):
    """Collects the server's access log lines as :class:`Request` values."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self._lock = threading.Lock()
        self._requests: list[Request] = []

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        if len(args) < 2:
            return
        line = _ANSI.sub("", str(args[0])).split(" ")
        if len(line) < 2 or line[1].startswith("/moto-api"):
            return
        with self._lock:
            self._requests.append(Request(line[0], line[1], str(args[1])))

    def clear(self) -> None:
        """Forget every request seen so far."""
        with self._lock:
            self._requests.clear()

    @property
    def requests(self) -> list[Request]:
        """Return the requests handled since the last :meth:`clear`."""
        with self._lock:
            return list(self._requests)

    def kinds(self) -> Counter[str]:
        """Return the number of requests per S3 operation."""
        return Counter(r.kind for r in self.requests)


class MotoServer:
    """A ``ThreadedMotoServer`` on 127.0.0.1 with a free port, and its request log."""

    def __init__(self) -> None:
        self.log = RequestLog()
        access_log = logging.getLogger("werkzeug")
        access_log.setLevel(logging.INFO)
        access_log.propagate = False
        access_log.addHandler(self.log)
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.port = port
        self.endpoint = f"http://{host}:{port}"
        self._stopped = False

    def _post(self, path: str, body: bytes = b"") -> Mapping[str, object]:
        request = urllib.request.Request(
            f"{self.endpoint}{path}", data=body, method="POST", headers={"Content-Type": "text/plain"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"{}")

    def reset(self) -> None:
        """Drop every bucket, object, IAM user... (``POST /moto-api/reset``) and the request log."""
        self._post("/moto-api/reset")
        self.log.clear()

    def enforce_iam(self, enabled: bool) -> None:
        """Make the server check signatures and IAM policies on every request (or stop doing so)."""
        self._post("/moto-api/reset-auth", b"0" if enabled else b"inf")

    def stop(self) -> None:
        """Stop the server (idempotent)."""
        if not self._stopped:
            self._stopped = True
            self._server.stop()
            logging.getLogger("werkzeug").removeHandler(self.log)


_shared: MotoServer | None = None


def shared_server() -> MotoServer:
    """Return the session's server, starting it on first use."""
    global _shared
    if _shared is None or _shared._stopped:
        _shared = MotoServer()
    return _shared


def seed_objects(bucket: str, prefix: str, files: Mapping[str, bytes]) -> None:
    """Create objects directly in the server's S3 backend (same process), bypassing HTTP.

    Only for arranging large trees quickly (the moto server handles a few hundred PUTs a second);
    the objects are exactly those a PutObject would create, and everything a test measures still
    goes through s3fs and HTTP.
    """
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for rel, data in files.items():
        backend.put_object(bucket, f"{prefix}/{rel}" if prefix else rel, data)
