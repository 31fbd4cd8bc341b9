"""A restart matrix's cells take over the parts of earlier cells whose line rules answer alike
(diagnosis.line_rules): every cell must equal the same cell diagnosed on its own."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.diagnosis.facts import SnapshotFacts
from checkpoint_doctor.diagnosis.line_rules import answers_alike
from checkpoint_doctor.diagnosis.matrix import MatrixOptions, diagnose_cells, plan_cells
from checkpoint_doctor.diagnosis.tracing import traced, untraced
from checkpoint_doctor.diagnosis.versions import LINES, target
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.scenarios import FIXTURES

QUIET = DiagnoseOptions(live_window_s=0)
#: Options that lead the prediction and the checks down other paths (state named, sources counted).
BASES = (QUIET, replace(QUIET, stateful=True), replace(QUIET, stateful=False, sources=1))


def _checkpoints() -> list[Path]:
    found = sorted(p for p in FIXTURES.glob("*/*/checkpoint") if p.is_dir())
    found += sorted(p for p in FIXTURES.glob("*/*/*/checkpoint") if p.is_dir())
    return found


CHECKPOINTS = _checkpoints()


def test_the_fixtures_are_found():
    # Spark's own fixtures on every line, Kafka's and real-time mode's: hundreds of checkpoints.
    assert len(CHECKPOINTS) > 500
    assert {p.relative_to(FIXTURES).parts[0] for p in CHECKPOINTS} >= {"spark-3.5.9", "spark-4.3.0", "kafka"}


def _compare(path: Path, snapshot, base: DiagnoseOptions) -> int:
    """Diagnose every line and mode of a checkpoint as the matrix does and each cell alone; return
    how many cells were compared."""
    compared = 0
    facts = SnapshotFacts(snapshot)
    detected = facts.mode.mode
    planned = plan_cells(facts, MatrixOptions(base=base))
    modes = {cell.mode for cell, *_ in planned}
    # Every line and mode, including the modes the matrix would not plan.
    everything = [(cell, *rest) for cell, *rest in planned]
    for cell, *rest in planned:
        for other in modes - {cell.mode}:
            everything.append((cell._replace(mode=other), *rest))
    for c in diagnose_cells(snapshot, everything, base, facts):
        mode = None if c.cell.mode == detected else c.cell.mode
        alone = diagnose(snapshot, replace(base, spark=c.cell.spark, mode=mode))
        assert c.diagnosis == alone, (str(path), c.cell, base)
        compared += 1
    return compared


@pytest.mark.parametrize("group", sorted({p.relative_to(FIXTURES).parts[0] for p in CHECKPOINTS}))
def test_every_cell_of_every_fixture_equals_the_cell_diagnosed_alone(group):
    compared = 0
    for path in (p for p in CHECKPOINTS if p.relative_to(FIXTURES).parts[0] == group):
        snapshot = load_checkpoint(str(path))
        for base in BASES:
            compared += _compare(path, snapshot, base)
    assert compared > 0


@pytest.mark.parametrize("line", sorted(p.name for p in (FIXTURES / "delta").glob("spark-*")))
def test_with_its_delta_tables_paired_every_cell_equals_the_cell_alone(line):
    # The Delta checks speak each line's Delta release (3.3/4.0 vs 4.4 words): a cell may take over
    # another line's parts only where those answers are alike.
    from checkpoint_doctor.world.load import load_for_verdict

    compared, paired = 0, 0
    for path in sorted((FIXTURES / "delta" / line).glob("*/checkpoint")):
        loaded = load_for_verdict(str(path), None, lambda path=path: load_checkpoint(str(path)))
        paired += loaded.delta is not None and bool(loaded.delta.pairs)
        base = replace(QUIET, delta_pairing=loaded.delta, delta=loaded.delta_named)
        compared += _compare(path, loaded.snapshot, base)
    assert compared > 0 and paired >= 12


def test_with_the_changed_query_every_cell_equals_the_cell_alone():
    # --job: the job's sources, operators, confs, sink and trigger judged on every line and mode.
    import json

    from checkpoint_doctor.diagnosis.changes.options import with_job
    from tests.scenarios import job_facts_for

    compared = 0
    for scenario in sorted(FIXTURES.glob("spark-*/job-*/scenario.json")):
        data = json.loads(scenario.read_text())
        path = scenario.parent / "checkpoint"
        snapshot = load_checkpoint(str(path))
        for spec in {
            r["query"][4:] for r in data.get("restarts", []) if str(r.get("query", "")).startswith("job:")
        }:
            job = job_facts_for(spec, data["spark_version"])
            base = with_job(MatrixOptions(base=QUIET), job).base
            compared += _compare(path, snapshot, base)
    assert compared > 500


def test_a_traced_target_records_each_question_and_a_replay_checks_the_answers():
    trace: list = []
    t = traced(target("4.1"), trace)
    assert t.repartition_check is False
    assert t.reads_offsets_version(2) is False
    assert t.batch_missing(7).search == "batch 7 doesn't exist"
    assert untraced(t) is target("4.1")
    questions = tuple(trace)
    assert [q[0] for q in questions] == ["repartition_check", "reads_offsets_version", "batch_missing"]
    # 4.0 answers every question as 4.1 did; 4.2 checks the repartition and reads v2 offsets.
    assert answers_alike(questions, target("4.0"))
    assert not answers_alike(questions, target("4.2"))
    assert all(answers_alike(questions[:0], target(line)) for line in LINES)


def test_the_matrix_computes_each_prediction_once_per_answer():
    # async-tail written by 4.3: a synchronous restart fails the same way on every line (batch 30
    # does not exist), so its five cells share one prediction; only the downgrade finding differs.
    path = FIXTURES / "spark-4.3.0" / "async-tail" / "checkpoint"
    snapshot = load_checkpoint(str(path))
    facts = SnapshotFacts(snapshot)
    planned = plan_cells(facts, MatrixOptions(base=QUIET))
    cells = diagnose_cells(snapshot, planned, QUIET, facts)
    assert len(cells) == 10
    memos = list(facts.cells.values())
    assert len(memos) == 2  # one per mode
    assert [len(m.predictions) for m in memos] == [1, 1]
    assert {c.diagnosis.prediction.summary for c in cells if c.cell.mode == "micro-batch"} == {
        "FAILS before running any batch: batch 30 doesn't exist"
    }


def test_no_check_or_rule_reads_the_line_from_the_options():
    # The memo's soundness: a cell depends on its line only through its SparkTarget's answers.
    # diagnosis/__init__.py builds the target from options.spark; nothing else may read it.
    import re

    package = Path(__file__).resolve().parents[2] / "checkpoint_doctor" / "diagnosis"
    readers = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if re.search(r"\b(options|opts|base)\.spark\b", path.read_text())
    }
    assert readers <= {"__init__.py", "options.py", "line_rules.py"}, readers  # (the last states the rule)


def test_what_each_line_does_if_stateful_equals_the_line_asked_alone():
    # stateful_by_line computes one prediction per distinct answer of the lines' rules: each line's
    # outcome must be the one a Context of that line alone predicts.
    from checkpoint_doctor.diagnosis.context import Context
    from checkpoint_doctor.diagnosis.state.checks_statefulness import if_stateful, stateful_by_line

    compared = 0
    for path in CHECKPOINTS:
        snapshot = load_checkpoint(str(path))
        facts = SnapshotFacts(snapshot)
        for base in BASES:
            shared = stateful_by_line(snapshot, facts, base, LINES)
            alone = tuple(
                (
                    line,
                    if_stateful(
                        Context(snapshot, target(line), replace(base, spark=line, mode=None), facts)
                    ).summary,
                )
                for line, _ in shared
            )
            assert shared == alone, (str(path), base)
            compared += len(shared)
    assert compared > 500


#: Every restart mode, whatever the checkpoint's (a matrix plans only the plausible ones).
EVERY_MODE = ("micro-batch", "async", "continuous", "real-time")


@pytest.mark.parametrize("group", sorted({p.relative_to(FIXTURES).parts[0] for p in CHECKPOINTS}))
def test_every_cell_in_every_mode_equals_the_cell_diagnosed_alone(group):
    # The modes' first cells of a line share the checks that ask neither the mode nor the
    # prediction (diagnosis.MODE_FREE_CHECKS): every mode's cell, diagnosed with one SnapshotFacts
    # after the others, must be the cell diagnosed alone.
    from checkpoint_doctor.diagnosis.matrix import Cell

    compared = 0
    for path in (p for p in CHECKPOINTS if p.relative_to(FIXTURES).parts[0] == group):
        snapshot = load_checkpoint(str(path))
        facts = SnapshotFacts(snapshot)
        detected = facts.mode.mode
        planned = [
            (Cell(line, mode), "plausible", "", ("", ""))
            for line in LINES
            for mode in EVERY_MODE
            if mode != "real-time" or target(line).real_time_trigger
        ]
        for c in diagnose_cells(snapshot, planned, QUIET, facts):
            mode = None if c.cell.mode == detected else c.cell.mode
            alone = diagnose(snapshot, replace(QUIET, spark=c.cell.spark, mode=mode))
            assert c.diagnosis == alone, (str(path), c.cell)
            compared += 1
    assert compared > 0


def _asking_context():
    """A Context subclass recording each question asked of the restart mode into ``asked``."""
    from checkpoint_doctor.diagnosis.context import Context

    class Asking(Context):
        asked: list[str]

        def __init__(self, *args):
            self.asked = []
            self.inner = 0
            super().__init__(*args)

    def question(name):
        real = getattr(Context, name)

        def get(self):
            # The outermost question only (``is_continuous`` asks the mode in turn).
            if not self.inner:
                self.asked.append(name)
            self.inner += 1
            try:
                return real.fget(self)
            finally:
                self.inner -= 1

        return property(get)

    # (tail_gap_code asks is_async and is_continuous in turn)
    for name in ("is_async", "is_real_time", "is_continuous", "restart_start_entry"):
        setattr(Asking, name, question(name))

    def mode_get(self):
        if not self.inner:
            self.asked.append("mode")
        return self.__dict__["_mode"]

    def mode_set(self, value):
        self.__dict__["_mode"] = value

    Asking.mode = property(mode_get, mode_set)
    return Asking


class _Unread:
    """A prediction no field of which may be read."""

    def __getattr__(self, name):
        raise AssertionError(f"the check read prediction.{name}")


def test_the_mode_free_checks_ask_neither_the_mode_nor_the_prediction():
    # What MODE_FREE_CHECKS and CONTINUITY_CHECKS claim, check by check, on every fixture, in every
    # mode, on a line of each rule set: no read of the prediction; no question of the mode (only
    # whether it is continuous); and the same findings in every mode (but continuous).
    from checkpoint_doctor.diagnosis import CONTINUITY_CHECKS, MODE_FREE_CHECKS

    asking = _asking_context()
    unread = _Unread()
    compared = 0
    for path in CHECKPOINTS:
        snapshot = load_checkpoint(str(path))
        facts = SnapshotFacts(snapshot)
        for base in BASES:
            for line in ("3.5", "4.3"):
                contexts = [
                    asking(snapshot, target(line), replace(base, spark=line, mode=mode), facts)
                    for mode in EVERY_MODE
                ]
                for check in MODE_FREE_CHECKS | CONTINUITY_CHECKS:
                    found = set()
                    for ctx in contexts:
                        ctx.asked.clear()
                        found.add(tuple(check(ctx, unread)))
                        allowed = {"is_continuous"} if check in CONTINUITY_CHECKS else set()
                        assert set(ctx.asked) <= allowed, (str(path), check.__name__, ctx.asked)
                    if check in CONTINUITY_CHECKS:
                        assert len(found) <= 2, (str(path), check.__name__, line, base)
                    else:
                        assert len(found) == 1, (str(path), check.__name__, line, base)
                    compared += 1
    assert compared > 5000


class _NotesUnread:
    """A prediction whose notes and line may not be read (every other field is the real one's)."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        if name in ("notes", "spark"):
            raise AssertionError(f"the check read prediction.{name}")
        return getattr(self._real, name)


def _delta_bases(path: Path):
    from checkpoint_doctor.world.load import load_for_verdict

    loaded = load_for_verdict(str(path), None, lambda: load_checkpoint(str(path)))
    return loaded.snapshot, [replace(QUIET, delta_pairing=loaded.delta, delta=loaded.delta_named)]


@pytest.mark.parametrize("group", sorted({p.relative_to(FIXTURES).parts[0] for p in CHECKPOINTS}))
def test_no_check_reads_the_notes_or_the_line_of_the_prediction(group):
    # CellMemo.alike_for_checks: a prediction that differs from an earlier one only in its notes
    # (4.3's "Delta tables not judged") takes over the earlier one's checks; sound only while no
    # check reads them. Every check, on every fixture (Delta ones with their tables paired), in
    # every mode, on a line of each rule set (4.3 has no Delta release).
    from checkpoint_doctor.diagnosis import ALL_CHECKS
    from checkpoint_doctor.diagnosis.context import Context
    from checkpoint_doctor.diagnosis.restart import predict_restart

    compared = 0
    for path in (p for p in CHECKPOINTS if p.relative_to(FIXTURES).parts[0] == group):
        if group == "delta":
            snapshot, bases = _delta_bases(path)
        else:
            snapshot, bases = load_checkpoint(str(path)), list(BASES)
        facts = SnapshotFacts(snapshot)
        for base in bases:
            for line in ("3.5", "4.2", "4.3"):
                for mode in EVERY_MODE:
                    if mode == "real-time" and not target(line).real_time_trigger:
                        continue
                    ctx = Context(snapshot, target(line), replace(base, spark=line, mode=mode), facts)
                    prediction = _NotesUnread(predict_restart(ctx))
                    for check in ALL_CHECKS:
                        list(check(ctx, prediction))
                        compared += 1
    assert compared > 0


def test_a_line_whose_prediction_differs_only_in_its_notes_takes_over_the_checks():
    # A paired Delta source on 4.3 (no Delta Lake release): its STARTS notes that the tables are not
    # judged; the matrix computes that prediction, not the checks again (bench: delta).
    from checkpoint_doctor.diagnosis.sources.checks_delta import NOT_JUDGED

    path = FIXTURES / "delta" / "spark-4.2.1" / "delta-source-stateless" / "checkpoint"
    snapshot, (base,) = _delta_bases(path)
    facts = SnapshotFacts(snapshot)
    planned = plan_cells(facts, MatrixOptions(base=base))
    cells = diagnose_cells(snapshot, planned, base, facts)
    on_43 = next(c for c in cells if c.cell.spark == "4.3")
    assert NOT_JUDGED.format(line="4.3") in on_43.diagnosis.prediction.notes
    (memo,) = facts.cells.values()
    assert len(memo.predictions) == 2
    assert memo.alike_for_checks(memo.predictions[1][1]) == 0
    assert memo.plans[1] == memo.plans[0]  # the same checks, computed once
    for c in cells:
        assert c.diagnosis == diagnose(snapshot, replace(base, spark=c.cell.spark)), c.cell
