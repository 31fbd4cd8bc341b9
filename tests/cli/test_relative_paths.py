"""What lies beside a checkpoint does not depend on how its path was typed: an operator in the job's
directory types ``diagnose checkpoint`` (or ``.`` inside it), and the file sink and the Delta tables
beside it are found as with the absolute path (a bare name has no ``/`` to split a parent from)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from checkpoint_doctor.cli import main
from tests.conftest import FIXTURES

SINK_AHEAD = FIXTURES / "spark-4.3.0" / "file-sink-rollback"
LOG_CLEANED = FIXTURES / "delta" / "spark-4.2.1" / "delta-source-stateless-log-cleaned"


def _diagnose(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, str]:
    code = main(["diagnose", *words, "--live-window", "0"])
    return code, " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(("where", "typed"), [("", "checkpoint"), ("", "checkpoint/"), ("checkpoint", ".")])
def test_a_file_sink_beside_a_checkpoint_typed_relative_is_found(
    where: str,
    typed: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    job = tmp_path / "job"
    shutil.copytree(SINK_AHEAD, job)
    monkeypatch.chdir(job / where)

    code, out = _diagnose(capsys, typed)

    assert code == 4, out
    assert "CD402" in out and f"file sink {job / 'sink'} found next to the checkpoint" in out


@pytest.mark.parametrize(("where", "typed"), [("", "checkpoint"), ("checkpoint", ".")])
def test_a_delta_table_beside_a_checkpoint_typed_relative_is_paired(
    where: str,
    typed: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    job = tmp_path / "job"
    shutil.copytree(LOG_CLEANED, job)
    monkeypatch.chdir(job / where)

    code, out = _diagnose(capsys, typed)

    assert code == 4, out
    assert "CD209" in out and f"Delta source 0 paired with {job / 'source'} by table id" in out
    assert "named with --delta-table" not in out
