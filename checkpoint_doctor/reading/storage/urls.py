"""The ``file:`` URI forms Spark prints, as local paths."""

from __future__ import annotations

from urllib.parse import unquote


def normalize_url(url: str) -> str:
    """Return a local path for the ``file:`` URI forms Spark prints (``file:/abs``, ``file:///abs``,
    ``file://localhost/abs``, percent-encoded as Hadoop's ``Path.toUri`` writes them); other URLs
    and plain paths unchanged."""
    if not url.lower().startswith("file:"):
        return url
    rest = url[len("file:") :]
    if rest.startswith("//"):
        host, _, path = rest[2:].partition("/")
        if host not in ("", "localhost"):
            return url
        rest = "/" + path
    return unquote(rest) if rest.startswith("/") else url
