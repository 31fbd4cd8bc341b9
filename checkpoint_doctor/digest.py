"""The one content digest: hex sha256 (backups, plan ids, copy sources, fingerprints)."""

from __future__ import annotations


def sha256_hex(data: bytes) -> str:
    """Return the hex sha256 of ``data``."""
    # Imported on first use (OpenSSL's loading is start-up time for every verdict otherwise).
    import hashlib

    return hashlib.sha256(data).hexdigest()
