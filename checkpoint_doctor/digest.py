"""The one content digest: hex sha256 (backups, plan ids, copy sources, fingerprints)."""

from __future__ import annotations

import hashlib


def sha256_hex(data: bytes) -> str:
    """Return the hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()
