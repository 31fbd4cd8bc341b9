"""The restart matrix: cells, roles, narrowing, merged findings, exit codes, statefulness, sinks."""

from __future__ import annotations

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.diagnosis.detect import WriterGuess
from checkpoint_doctor.diagnosis.matrix import (
    AS_CONFIGURED,
    DOWNGRADE,
    PLAUSIBLE,
    MatrixOptions,
    diagnose_matrix,
    writer_lines,
)
from checkpoint_doctor.diagnosis.state.statefulness import STATEFUL, STATELESS, UNKNOWN
from checkpoint_doctor.diagnosis.versions import LINES, line_of
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.world.sink_pairing import pairing_evidence
from tests.scenarios import all_scenarios, scenario

QUIET = DiagnoseOptions(live_window_s=0)


def matrix_of(scenario_id: str, tmp_path, **kw):
    kw.setdefault("base", QUIET)
    return diagnose_matrix(scenario(scenario_id).load(tmp_path), MatrixOptions(**kw))


def roles(result) -> dict[tuple[str, str], str]:
    return {(c.cell.spark, c.cell.mode): c.role for c in result.cells}


def test_async_tail_of_4_3_every_line_both_modes_with_roles(tmp_path):
    result = matrix_of("spark-4.3.0/async-tail", tmp_path)
    assert [tuple(c.cell) for c in result.cells] == [
        (line, m) for line in LINES for m in ("async", "micro-batch")
    ]
    assert roles(result)[("4.3", "async")] == AS_CONFIGURED
    assert roles(result)[("4.3", "micro-batch")] == PLAUSIBLE
    assert {roles(result)[(line, m)] for line in LINES[:-1] for m in ("async", "micro-batch")} == {DOWNGRADE}
    assert [tuple(c.cell) for c in result.failing_cells] == [("4.3", "micro-batch")]
    assert result.exit_code == 1
    cd101 = next(f for f in result.findings if f.code == "CD101")
    assert cd101.severity == "warning" and cd101.cells == (("4.3", "micro-batch"),)
    assert "asyncProgressTrackingEnabled off" in cd101.message and "batch 30 doesn't exist" in cd101.message
    assert result.cell("4.3", "micro-batch").label == "Spark 4.3, asyncProgressTrackingEnabled off"


def test_a_3_5_checkpoint_counts_every_upgrade(tmp_path):
    result = matrix_of("spark-3.5.9/async-tail", tmp_path)
    assert roles(result)[("3.5", "async")] == AS_CONFIGURED
    assert {roles(result)[(line, "micro-batch")] for line in LINES} == {PLAUSIBLE}
    assert result.cell("4.2", "async").label == "Spark 4.2, upgrade from 3.5"
    cd101 = next(f for f in result.findings if f.code == "CD101")
    assert cd101.cells == tuple((line, "micro-batch") for line in LINES)
    assert "on Spark 3.5-4.3 fails: batch 31 doesn't exist" in cd101.message


def test_downgrade_failures_are_shown_but_not_counted_unless_named(tmp_path):
    result = matrix_of("spark-4.3.0/rocksdb_v2", tmp_path)
    old = result.cell("3.5", "micro-batch")
    assert old.role == DOWNGRADE and old.fails  # commit log v2 cannot be read by 3.5
    assert result.exit_code == 0 and not result.failing_cells
    assert "CD005" not in {f.code for f in result.findings}
    named = matrix_of("spark-4.3.0/rocksdb_v2", tmp_path / "named", lines=("3.5",))
    assert [(tuple(c.cell), c.role) for c in named.cells] == [(("3.5", "micro-batch"), AS_CONFIGURED)]
    assert named.exit_code == 4 and "CD005" in {f.code for f in named.findings}


def test_named_lines_and_modes_narrow_the_matrix_and_are_as_configured(tmp_path):
    result = matrix_of("spark-3.5.9/async-tail", tmp_path, lines=("3.5", "4.3"), modes=("micro-batch",))
    assert [(tuple(c.cell), c.role) for c in result.cells] == [
        (("3.5", "micro-batch"), AS_CONFIGURED),
        (("4.3", "micro-batch"), AS_CONFIGURED),
    ]
    assert result.exit_code == 4
    assert next(f for f in result.findings if f.code == "CD101").severity == "error"


def test_one_named_cell_is_exactly_the_single_cell_diagnosis(tmp_path):
    snapshot = scenario("spark-4.3.0/async-tail").load(tmp_path)
    result = diagnose_matrix(snapshot, MatrixOptions(lines=("4.3",), modes=("micro-batch",), base=QUIET))
    single = diagnose(snapshot, DiagnoseOptions(spark="4.3", mode="micro-batch", live_window_s=0))
    assert len(result.cells) == 1
    assert result.cells[0].diagnosis == single
    assert result.exit_code == single.exit_code == 4


@pytest.mark.parametrize(
    ("text", "line"), [("4.3", "4.3"), ("4.3.0", "4.3"), ("4.3.1", "4.3"), ("3.5.9", "3.5")]
)
def test_versions_name_their_line(text, line):
    assert line_of(text) == line


@pytest.mark.parametrize("text", ["2.4", "4", "4.3.x", "5.0.0", "4.3.0.1", ""])
def test_unsupported_versions_are_rejected(text):
    with pytest.raises(ValueError, match="supported"):
        line_of(text)


def test_a_writer_range_makes_each_possible_line_as_configured():
    assert writer_lines(WriterGuess("4.0", "4.0", ())) == ("4.0", "4.1")
    assert writer_lines(WriterGuess("4.0", "4.1", ())) == ("4.1",)
    assert writer_lines(WriterGuess("4.3", "4.3", ())) == ("4.3",)
    assert writer_lines(WriterGuess(None, "4.2", ())) == ("4.2", "4.3")


def test_continuous_checkpoint_adds_a_micro_batch_trigger_cell(tmp_path):
    result = matrix_of("spark-4.3.0/continuous", tmp_path)
    assert {c.cell.mode for c in result.cells} == {"continuous", "micro-batch"}
    cell = result.cell("4.3", "micro-batch")
    assert cell.label.endswith("continuous checkpoint restarted with a micro-batch trigger")
    assert cell.fails and result.exit_code == 1
    assert result.statefulness.verdict == STATELESS


def test_matrix_json_shape(tmp_path):
    data = matrix_of("spark-4.3.0/async-tail", tmp_path).to_dict()
    assert data["exit_code"] == 1 and data["mode_detected"] == "async"
    assert data["written_by"]["lines"] == ["4.3"]
    cell = next(c for c in data["matrix"] if (c["spark"], c["mode"]) == ("4.3", "micro-batch"))
    assert set(cell) >= {
        "spark",
        "mode",
        "role",
        "label",
        "outcome",
        "summary",
        "next_batch_id",
        "error",
        "caused_by",
    }
    assert cell["outcome"] == "fails" and cell["error"]["text"] == "batch 30 doesn't exist"
    assert cell["caused_by"] == ["CD101"]
    finding = next(f for f in data["findings"] if f["code"] == "CD101")
    assert finding["cells"] == [{"spark": "4.3", "mode": "micro-batch"}]
    assert finding["severity"] == "warning" and finding["code_severity"] == "error"
    assert data["restart"]["mode"] == "async" and data["restart"]["outcome"] == "starts"


def test_state_deleted_is_suspected_stateful_with_each_lines_consequence(tmp_path):
    result = matrix_of("spark-4.3.0/state-deleted", tmp_path)
    assert result.statefulness.verdict == UNKNOWN and result.statefulness.suspected
    assert result.exit_code == 1
    cd310 = next(f for f in result.findings if f.code == "CD310")
    assert cd310.severity == "warning"
    assert (
        "Spark 4.2, 4.3: FAILS in batch 4: STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY"
        in cd310.message
    )
    assert "Spark 3.5" in cd310.message
    for c in result.cells:
        assert c.if_stateful is not None and c.if_stateful.startswith("FAILS")


def test_told_stateful_the_configured_restart_fails(tmp_path):
    result = matrix_of(
        "spark-4.3.0/state-deleted", tmp_path, base=DiagnoseOptions(live_window_s=0, stateful=True)
    )
    assert result.exit_code == 4 and "CD310" not in {f.code for f in result.findings}
    assert result.cell("4.3", "micro-batch").fails


@pytest.mark.parametrize(
    ("scenario_id", "verdict"),
    [
        ("spark-4.3.0/window_agg", STATEFUL),
        ("spark-3.5.9/window_agg", STATEFUL),
        ("spark-4.3.0/rocksdb_v2", STATEFUL),
        ("spark-4.3.0/async", STATELESS),
        ("spark-3.5.9/continuous", STATELESS),
        ("spark-4.3.0/stateless", UNKNOWN),
        ("spark-3.5.9/state-deleted", UNKNOWN),
    ],
)
def test_statefulness_from_the_checkpoints_traces(scenario_id, verdict, tmp_path):
    result = matrix_of(scenario_id, tmp_path)
    assert result.statefulness.verdict == verdict
    if verdict == UNKNOWN and not result.statefulness.suspected:
        assert any("cannot" in a or "unknown" in a for a in result.assumptions)


def test_stateless_without_traces_is_said_plainly_not_silently_ok(tmp_path):
    result = matrix_of("spark-4.3.0/stateless", tmp_path)
    assert result.exit_code == 0
    assert any(a.startswith("stateful operators: unknown") for a in result.assumptions)


@pytest.mark.parametrize("line", ["spark-3.5.9", "spark-4.3.0"])
def test_a_sinks_log_proves_its_checkpoint(line, tmp_path):
    s = scenario(f"{line}/file_to_file")
    snapshot = s.load(tmp_path)  # loads with the sink
    assert snapshot.sink is not None and pairing_evidence(snapshot, snapshot.sink).proven
    other = load_checkpoint(str(scenario(f"{line}/window_agg").copy_to(tmp_path / "other")))
    assert not pairing_evidence(other, snapshot.sink).proven


def test_a_stale_checkpoint_with_matching_ids_is_not_paired(tmp_path):
    from dataclasses import replace

    s = scenario("spark-4.3.0/file_to_file")
    snapshot = s.load(tmp_path)
    sink = snapshot.sink
    entries = []
    for e in sink.log.entries:
        if e.record is None:
            entries.append(e)
            continue
        files = tuple(
            replace(f, modification_time_ms=(f.modification_time_ms or 0) + 30 * 86_400_000)
            for f in e.record.entries
        )
        entries.append(replace(e, record=replace(e.record, entries=files)))
    later = replace(sink, log=replace(sink.log, entries=tuple(entries)))
    evidence = pairing_evidence(snapshot, later)
    assert not evidence.proven and "long after" in evidence.text


@pytest.mark.parametrize("name", ["async", "async-tail", "async-tail-uncommitted"])
def test_the_async_log_finding_names_the_batch_the_prediction_runs(name, tmp_path):
    # CD102 once said "starts batch 31" next to a prediction of "new batch 32" (a committed tail).
    import re

    for s in (s for s in all_scenarios() if s.name == name):
        d = diagnose(s.read(tmp_path / s.id), DiagnoseOptions(mode="async", live_window_s=0))
        (finding,) = [f for f in d.findings if f.code == "CD102"]
        said = re.search(r"an async restart (starts new batch|re-runs batch) (\d+)", finding.message)
        assert said is not None and d.prediction.starts, (s.id, finding.message)
        assert int(said.group(2)) == d.prediction.next_batch_id, (s.id, d.prediction.summary)
        assert (said.group(1) == "re-runs batch") == ("re-runs" in d.prediction.summary), s.id


@pytest.mark.parametrize(
    "scenario_id", ["spark-4.3.0/async-tail", "spark-3.5.9/state-deleted", "spark-4.2.1/stateless"]
)
def test_a_cells_json_is_its_diagnosis_restart_as_spark_names_the_root(scenario_id, tmp_path):
    # A cell renders only its restart (Diagnosis.restart_dict), not its findings: the same text.
    result = matrix_of(scenario_id, tmp_path)
    keys = ("outcome", "summary", "next_batch_id", "batch_kind", "error", "caused_by")
    for cell, shown in zip(result.cells, result.to_dict()["matrix"], strict=True):
        restart = cell.diagnosis.to_dict()["restart"]
        assert {k: shown[k] for k in keys} == {k: restart[k] for k in keys}
        assert "<cp>" not in repr(shown)
