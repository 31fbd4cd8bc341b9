"""Every directory under fixtures/ names the script that writes it with real Spark
(scripts/generate_fixtures.py FIXTURE_WRITERS): nothing there is written by hand."""

from __future__ import annotations

import fnmatch
import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _writers() -> dict[str, str]:
    spec = importlib.util.spec_from_file_location(
        "generate_fixtures", REPO / "scripts" / "generate_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.FIXTURE_WRITERS)


def test_every_fixture_directory_has_a_writer_script_that_exists():
    writers = _writers()
    dirs = sorted(p.name for p in (REPO / "fixtures").iterdir() if p.is_dir())
    unowned = [d for d in dirs if not any(fnmatch.fnmatch(d, pattern) for pattern in writers)]
    assert not unowned, unowned
    missing = sorted({w for w in writers.values() if not (REPO / "scripts" / w).is_file()})
    assert not missing, missing
