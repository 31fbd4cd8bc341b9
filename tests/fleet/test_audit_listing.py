"""The audit's local listing stats only the files whose size or mtime is evidence (the metadata logs);
the others are stat'ed when something asks (bench: audit). The answers are those of a listing that
stats every file as it lists it (the walk before: ``_stat_eagerly`` true for every directory)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from checkpoint_doctor.api import inspect
from checkpoint_doctor.diagnosis import DiagnoseOptions
from checkpoint_doctor.fleet.run import audit
from checkpoint_doctor.reading.storage import local as local_storage
from tests.conftest import FIXTURES

SPARK = FIXTURES / "spark-4.3.0"
#: stateful, a file sink, temp files left by a killed writer, a source log
SCENARIOS = (
    "window_agg",
    "file_to_file",
    "leftover-temp-files",
    "fresh-temp-only",
    "file-source-log-corrupt",
)


def documents(roots: list[str], options: DiagnoseOptions) -> dict[str, Any]:
    return audit(roots, options=options, clock=lambda: 1).to_json()


def stat_every_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_storage, "_stat_eagerly", lambda rel: True)


def test_the_audit_of_every_fixture_is_the_one_of_a_listing_that_stats_every_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    options = DiagnoseOptions(live_window_s=0)

    lazy = documents([str(FIXTURES)], options)
    stat_every_file(monkeypatch)
    eager = documents([str(FIXTURES)], options)

    assert lazy["summary"]["kinds"]["checkpoint"] > 800
    assert lazy == eager


def test_live_writer_times_and_inspect_bytes_are_those_of_a_listing_that_stats_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file gets its own mtime (a query wrote them over minutes): CD501 reads the mtimes of
    log and state files, CD502 those of temp files, ``inspect`` the bytes of every state store."""
    for scenario in SCENARIOS:
        shutil.copytree(SPARK / scenario, tmp_path / scenario)
    base_ms = 1_800_000_000_000
    paths = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    for i, path in enumerate(paths):
        ns = (base_ms - i * 997) * 1_000_000
        os.utime(path, ns=(ns, ns))
    options = DiagnoseOptions(live_window_s=600, now_ms=base_ms + 5_000)
    checkpoints = [str(p.parent) for p in tmp_path.rglob("offsets")]

    lazy = documents([str(tmp_path)], options)
    lazy_inspect = [inspect(c).to_dict() for c in checkpoints]
    lazy_fingerprints = [inspect(c).snapshot.fingerprint() for c in checkpoints]
    stat_every_file(monkeypatch)
    eager = documents([str(tmp_path)], options)

    codes = set(re.findall(r'"code": "(CD\d+)"', json.dumps(lazy)))
    assert {"CD501", "CD502"} <= codes, codes
    assert any(op["bytes"] > 0 for report in lazy_inspect for op in report["state"]["operators"])
    assert lazy == eager
    assert [inspect(c).to_dict() for c in checkpoints] == lazy_inspect
    assert [inspect(c).snapshot.fingerprint() for c in checkpoints] == lazy_fingerprints
