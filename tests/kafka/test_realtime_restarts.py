"""Real-time mode checkpoints (Trigger.RealTime, Spark 4.1+), replayed: what real Spark did when each
fixture of fixtures/kafka-realtime/ (scripts/kafka_realtime_fixtures.py) was restarted in real-time,
async micro-batch and synchronous micro-batch mode, on its own line and every newer line with the
trigger, equals the prediction; and the mode that wrote it is read from the files' times.

No Spark, no broker: the recorded restarts and the offsets files' times measured when Spark wrote them
(``written_with.offsets_written_after_ms``, since git does not keep file times).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.detect import MICRO_BATCH, REAL_TIME, detect_mode
from checkpoint_doctor.diagnosis.matrix import AS_CONFIGURED, MatrixOptions, diagnose_matrix
from checkpoint_doctor.model import KafkaOffset
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.scenarios import scenario_at

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "kafka-realtime"
SCENARIOS = sorted(p.parent for p in FIXTURES.glob("spark-*/*/scenario.json"))
CASES = [(s, i) for s in SCENARIOS for i in range(len(scenario_at(s).data["restarts"]))]
PURGE = "Deleting extra entries in offset log to sync up with commit log."


def _line(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _dated_copy(scenario: Path, dest: Path) -> Path:
    """Copy the checkpoint and give each offsets file the time Spark wrote it (its batch's timestamp
    plus the lag measured by the generator), as a listing of the live checkpoint shows it."""
    scen = scenario_at(scenario)
    cp = scen.copy_to(dest)
    lags = scen.data["written_with"]["offsets_written_after_ms"]
    for name, lag in lags.items():
        path = cp / "offsets" / name
        if path.exists():
            stamp = json.loads(path.read_text(encoding="utf-8").split("\n")[1])["batchTimestampMs"]
            written = (stamp + lag) / 1000
            os.utime(path, (written, written))
    return cp


def _offsets(value: Any) -> dict[str, dict[str, int]]:
    return json.loads(value) if isinstance(value, str) else value


def _as_recorded(sources: Any) -> dict[str, dict[str, int]] | None:
    if not sources:
        return None
    decoded = sources[0].decoded
    assert isinstance(decoded, KafkaOffset)
    out: dict[str, dict[str, int]] = {}
    for topic, partition, offset in decoded.partitions:
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def test_every_line_with_the_trigger_has_the_scenarios_and_their_restarts() -> None:
    assert {p.parent.name for p in SCENARIOS} == {"spark-4.1.4", "spark-4.2.1", "spark-4.3.0"}
    for path in SCENARIOS:
        data = scenario_at(path).data
        own = data["spark_version"]
        lines = [v for v in ("4.1.4", "4.2.1", "4.3.0") if v >= own]
        cells = sorted((r["spark"], r["mode"]) for r in data["restarts"])
        assert cells == sorted((v, m) for v in lines for m in ("real-time", "async", "micro-batch"))
        assert all(r["fingerprint"] == data["fingerprint"] and r["result"] for r in data["restarts"])


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_writing_mode_is_read_from_the_files_times(path: Path, tmp_path: Path) -> None:
    written_rt = scenario_at(path).data["written_with"]["trigger"].startswith("real-time")
    mode = detect_mode(load_checkpoint(str(_dated_copy(path, tmp_path))))
    assert mode.mode == (REAL_TIME if written_rt else MICRO_BATCH), mode.evidence
    # A copy that did not keep the times (git, cp without -p) shows no trace: it is judged micro-batch.
    plain = tmp_path / "plain"
    shutil.copytree(path / "checkpoint", plain, copy_function=shutil.copy)
    assert detect_mode(load_checkpoint(str(plain))).mode == MICRO_BATCH


@pytest.mark.parametrize(
    ("path", "idx"),
    CASES,
    ids=[
        f"{p.parent.name}/{p.name}@{scenario_at(p).data['restarts'][i]['spark']}#{scenario_at(p).data['restarts'][i]['mode']}"
        for p, i in CASES
    ],
)
def test_prediction_equals_the_recorded_restart(path: Path, idx: int) -> None:
    scen = scenario_at(path)
    entry = scen.data["restarts"][idx]
    result = entry["result"]
    assert not result["timed_out"], result
    snapshot = load_checkpoint(str(path / "checkpoint"))
    confs = tuple(sorted((result.get("confs") or {}).items()))
    opts = DiagnoseOptions(
        spark=_line(entry["spark"]),
        mode=entry["mode"],
        stateful=False,
        sources=1,
        live_window_s=0,
        confs=confs,
    )
    pred = diagnose(snapshot, opts).prediction
    if result["error"] is not None:
        assert not pred.starts, result["error"]["message"][:300]
        assert pred.error is not None and pred.error.matches(result["error"]["message"]), (
            pred.error,
            result["error"]["message"][:400],
        )
        return
    assert pred.starts, pred.error
    (batch,) = result["batches"]
    assert batch["batchId"] == pred.next_batch_id
    source = batch["sources"][0]
    # The batch starts where the prediction says: offsets/K after a real-time purge, else L-1 or L.
    assert _offsets(source["startOffset"]) == _as_recorded(pred.start_offsets)
    if pred.rerun:
        # A re-run batch reads exactly the range its offsets file logged.
        assert _offsets(source["endOffset"]) == _as_recorded(pred.end_offsets)
    purged = any(PURGE in line for line in result.get("log") or [])
    assert purged == any(w.startswith(PURGE) for w in pred.warnings), result.get("log")


def test_real_time_restarts_of_a_tail_plan_the_batch_again_and_read_past_the_logged_range() -> None:
    """The difference the modes make, in Spark's own numbers: after an uncommitted tail, a micro-batch
    restart re-runs batch 1 over the range offsets/1 logged; a real-time one reads past it."""
    seen = 0
    for path in SCENARIOS:
        data = scenario_at(path).data
        if not data["name"].endswith("-uncommitted-tail"):
            continue
        logged = json.loads(
            (path / "checkpoint" / "offsets" / "1").read_text(encoding="utf-8").split("\n")[2]
        )
        for entry in data["restarts"]:
            result = entry["result"]
            if result["error"] is not None:
                continue
            (batch,) = result["batches"]
            end = _offsets(batch["sources"][0]["endOffset"])
            assert batch["batchId"] == 1
            if entry["mode"] == "real-time":
                assert end != logged and all(
                    end["events"][p] >= logged["events"][p] for p in logged["events"]
                )
                seen += 1
            else:
                assert end == logged
    assert seen


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_matrix_cells_equal_the_recorded_restarts(path: Path, tmp_path: Path) -> None:
    """Every recorded restart is a matrix cell that says what Spark did: the default matrix of a
    real-time checkpoint (real-time as configured, both micro-batch modes plausible), and for a
    micro-batch one the switch to real-time named with --mode."""
    scen = scenario_at(path)
    base = DiagnoseOptions(stateful=False, sources=1, live_window_s=0)
    snapshot = load_checkpoint(str(_dated_copy(path, tmp_path)))
    written_rt = scen.data["written_with"]["trigger"].startswith("real-time")
    options = (
        MatrixOptions(base=base)
        if written_rt
        else MatrixOptions(modes=(MICRO_BATCH, "async", REAL_TIME), base=base)
    )
    matrix = diagnose_matrix(snapshot, options)
    recorded = {(_line(r["spark"]), r["mode"]): r["result"] for r in scen.data["restarts"]}
    cells = {c.cell: c for c in matrix.cells}
    assert set(recorded) <= set(cells)
    for key, result in recorded.items():
        cell = cells[key]
        assert cell.fails == (result["error"] is not None), (key, result["error"])
        if not cell.fails:
            assert cell.diagnosis.prediction.next_batch_id == result["batches"][0]["batchId"]
    if written_rt:
        own = _line(scen.data["spark_version"])
        assert {c.cell for c in matrix.cells if c.role == AS_CONFIGURED} == {(own, REAL_TIME)}
        assert not any(c.cell.mode == REAL_TIME and c.cell.spark in ("3.5", "4.0") for c in matrix.cells)


def test_a_4_1_or_4_2_checkpoint_is_refused_by_4_3_in_real_time_mode() -> None:
    refused = []
    for path in SCENARIOS:
        data = scenario_at(path).data
        if data["spark_version"] == "4.3.0":
            continue
        (result,) = [
            r["result"] for r in data["restarts"] if r["spark"] == "4.3.0" and r["mode"] == "real-time"
        ]
        refused.append(result["error"] is not None)
        snapshot = load_checkpoint(str(path / "checkpoint"))
        found = diagnose(
            snapshot, DiagnoseOptions(spark="4.3", mode=REAL_TIME, stateful=False, live_window_s=0)
        )
        assert (Code.REAL_TIME_CHECKPOINT_V1 in found.prediction.caused_by) == (result["error"] is not None)
    assert refused and all(refused)
