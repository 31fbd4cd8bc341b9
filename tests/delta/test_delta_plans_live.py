"""A live case of the Delta way back, end to end as an operator runs it, on the jar set CI installs
(Spark 3.5.9 + delta-spark 3.3.3): ``plan --delta-table`` on a copy of a checkpoint whose source
log was cleaned up printing the consent command, that command run as printed with ``-o``, the
``apply --yes`` it prints run as printed (it reads the table again), and real Spark restarting the
copy: batch 2 starts at the table's earliest version and reads the rows of the versions from there."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from tests import sparkrun
from tests.scenarios import run_cli

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import delta_fixtures  # noqa: E402

VERSION = "3.5.9"
NAME = "delta-source-stateless-log-cleaned"


def _printed(out: str, verb: str) -> list[str]:
    """The ``checkpoint-doctor <verb> ...`` command the output ends with, as argv."""
    line = next(x for x in reversed(out.splitlines()) if f"checkpoint-doctor {verb} " in x)
    return shlex.split(line[line.index("checkpoint-doctor") :])[1:]


@pytest.mark.spark
def test_plan_apply_as_printed_then_spark_resumes_at_the_earliest_version(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = REPO / "fixtures" / "delta" / f"spark-{VERSION}" / NAME
    scen = json.loads((folder / "scenario.json").read_text(encoding="utf-8"))
    for part in ("checkpoint", "source"):
        shutil.copytree(folder / part, tmp_path / part)
    cp, source = tmp_path / "checkpoint", tmp_path / "source"
    monkeypatch.chdir(tmp_path)

    code, out, _ = run_cli(capsys, "plan", str(cp), "--spark", "3.5", "--delta-table", str(source))
    # Wrapped where the tmp path's length puts it: compare it unwrapped.
    assert code == 4 and "versions 4..5 skipped" in " ".join(out.split()), out
    consent = _printed(out, "plan")
    assert "--accept-data-loss" in consent and "--delta-table" in consent
    code, out, _ = run_cli(capsys, *consent)
    assert code == 0, out
    code, out, _ = run_cli(capsys, *_printed(out, "apply"), "--yes")
    assert code == 0, out
    line = (cp / "offsets" / "1").read_text(encoding="utf-8").split("\n")[2]
    assert json.loads(line)["reservoirVersion"] == 6

    job = delta_fixtures._job(NAME, scen["query"], tmp_path, "restart", {})
    (result,) = sparkrun.run_jobs(VERSION, [job], tmp_path / "spark", env=delta_fixtures._spark_env(VERSION))
    assert result["started"] and not result["timed_out"], (result.get("error") or {}).get("message", "")[:400]
    (batch,) = result["batches"]
    start = batch["sources"][0]["startOffset"]
    start = json.loads(start) if isinstance(start, str) else start
    assert batch["batchId"] == 2 and start["reservoirVersion"] == 6
    assert batch["numInputRows"] == 5  # version 6: ids 25..29
