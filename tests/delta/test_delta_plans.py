"""The way back from a refused Delta restart, without Spark: for every restart real Spark + delta-spark
refused in fixtures/delta/ on every line, the plan made with the tables beside the checkpoint, its
consent and counts, the bytes it writes, the precondition apply re-checks against the tables read
again, and the undo; plus what a rollback costs against a Delta sink (its txn version counts the
batches it skips). What real Spark did after each plan: tests/delta/test_delta_repair_records.py."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.errors import PreconditionFailedError
from checkpoint_doctor.execution.apply import apply_plan
from checkpoint_doctor.execution.journal import tool_url
from checkpoint_doctor.execution.undo import undo_journal
from checkpoint_doctor.planning import PlanOptions, RepairPlan, plan_repair
from checkpoint_doctor.planning.planner import CONSENT_MANUAL
from checkpoint_doctor.planning.preconditions import DeltaTablePre
from checkpoint_doctor.planning.strategies.delta_change_commits import MANUAL
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.storage import open_storage
from checkpoint_doctor.world.delta_log import read_table
from tests.delta.repair_proof import (
    DELTA_FIXTURES,
    LINES,
    Case,
    copy_case,
    open_storage_of,
    options,
    plan_case,
    refused,
    skipping_case,
    tables_of,
)
from tests.repair_proof import tree_bytes
from tests.s3.conftest import S3

CASES = [c for line in LINES for c in refused(line)]

#: What each refused damage gets: the strategy, the Delta line the plan writes into offsets/0 and
#: offsets/1 (version, isStartingVersion: the table id is the table's), and words of what it costs.
WANTED: dict[str, tuple[str | None, tuple[int, bool] | None, tuple[str, ...]]] = {
    "log-cleaned": (
        "delta-versions",
        (6, False),
        (
            "versions 4..5 skipped (2 version(s); log cleanup removed their commits",
            "version 6: 1 file(s), 5 rows",
        ),
    ),
    "replaced": (
        "delta-table",
        (5, True),
        ("version 4, not read yet, skipped (1 file(s), 5 rows)", "as of version 5 (1 file(s), 3 rows)"),
    ),
    "recreated": (
        "delta-table",
        (0, True),
        (
            "its log is gone: not counted",
            "as of version 0 (0 file(s), 0 rows) and version 1 (1 file(s), 3 rows)",
        ),
    ),
    # No checkpoint change: the option that skips only the refused commit.
    "rows-deleted": (
        None,
        None,
        ("version 5 (DELETE: 1 file(s) removed, 0 added)", "version 4 (1 file(s), 5 rows)"),
    ),
    "rows-updated": (
        None,
        None,
        ("version 5 (UPDATE: 1 file(s) removed, 1 added)", "version 4 (1 file(s), 5 rows)"),
    ),
}


def _damage(case: Case) -> str:
    return str(case.data["name"]).removeprefix(str(case.data["base"])).removeprefix("-")


def test_every_refused_delta_restart_is_a_case_on_every_line() -> None:
    assert LINES == ["3.5.9", "4.0.5", "4.1.4", "4.2.1"]
    for line in LINES:
        damages = sorted(_damage(c) for c in refused(line))
        # two bases refuse a cleaned log and a replaced table; the stateless one the rest
        assert damages == sorted([*WANTED, "log-cleaned", "replaced"]), line


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.data['spark_version']}/{c.key}")
def test_each_refused_restart_gets_its_plan_with_consent_and_counts(case: Case, tmp_path: Path) -> None:
    root = copy_case(case, tmp_path / "w")
    plan, consent, tables = plan_case(case, root)
    strategy, line, words = WANTED[_damage(case)]
    if strategy is None:
        assert not plan.steps and not consent
        (left,) = plan.unresolved
        assert left["code"] == "CD210" and left["manual"] == MANUAL
        (why,) = [
            r["reason"] for o in plan.options for r in o["options"] if r["strategy"] == "delta-change-commits"
        ]
        assert all(w in why for w in words), why
        return
    # consent is asked: the plan skips versions, or reads a replacement that may hold rows read before
    assert consent and plan.strategy == strategy and not plan.unresolved
    assert plan.expected["starts"] is True and plan.expected["next_batch_id"] == 2
    (loss,) = plan.expected["consequences"]["loss"]
    assert all(w in loss for w in words), loss
    # offsets/0 and offsets/1 get the same Delta line, every other line kept; checksums go with them
    assert [(s.kind, s.path) for s in plan.steps] == [
        ("quarantine", "offsets/0"),
        ("quarantine", "offsets/.0.crc"),
        ("write", "offsets/0"),
        ("quarantine", "offsets/1"),
        ("quarantine", "offsets/.1.crc"),
        ("write", "offsets/1"),
    ]
    source = next(t for t in tables if t.url.endswith("/source"))
    version, initial = line
    for batch, step in ((0, plan.steps[2]), (1, plan.steps[5])):
        old = (case.path / "checkpoint" / "offsets" / str(batch)).read_bytes().split(b"\n")
        new = step.data.split(b"\n")  # type: ignore[attr-defined]
        assert new[:2] == old[:2] and len(new) == len(old) == 3
        assert json.loads(new[2]) == {
            "sourceVersion": 1,
            "reservoirId": source.table_id,
            "reservoirVersion": version,
            "index": -1,
            "isStartingVersion": initial,
        }
    (pre,) = [p for p in plan.preconditions if isinstance(p, DeltaTablePre)]
    assert (pre.url, pre.table_id, pre.earliest, pre.latest) == (
        source.url,
        source.table_id,
        source.earliest_version,
        source.latest_version,
    )


def _without_consent(case: Case, root: Path) -> RepairPlan:
    tables = tables_of(root)
    snapshot = load_checkpoint(str(root / "checkpoint"))
    opts = options(case, tables)
    return plan_repair(snapshot, diagnose(snapshot, opts), PlanOptions(diagnose=opts))


def test_without_consent_the_plan_says_what_it_skips_and_how_to_consent(tmp_path: Path) -> None:
    (case,) = [c for c in refused("4.2.1") if c.key == "delta-source-count-log-cleaned#0"]
    plan = _without_consent(case, copy_case(case, tmp_path / "w"))
    assert not plan.steps
    (left,) = plan.unresolved
    assert left["code"] == "CD209" and left["manual"] == CONSENT_MANUAL
    assert "versions 4..5 skipped" in left["reason"]


def _case(version: str, key: str) -> Case:
    (case,) = [c for c in refused(version) if c.key == key]
    return case


def test_the_delta_precondition_round_trips_and_judges_the_table_again(tmp_path: Path) -> None:
    case = _case("3.5.9", "delta-source-stateless-log-cleaned#0")
    root = copy_case(case, tmp_path / "w")
    plan, _, tables = plan_case(case, root)
    again = RepairPlan.from_json(plan.to_json())
    assert again == plan and again.plan_id == plan.plan_id
    (pre,) = [p for p in plan.preconditions if isinstance(p, DeltaTablePre)]
    (source,) = tables
    assert pre.check_live(tables) is None
    assert "was not read again" in str(pre.check_live(None))
    assert "starts at version 7 now" in str(pre.check_live((replace(source, earliest_version=7),)))
    assert "is table other now" in str(pre.check_live((replace(source, table_id="other"),)))
    assert "latest version is 5 now" in str(pre.check_live((replace(source, latest_version=5),)))
    assert pre.check_live((replace(source, latest_version=9),)) is None  # new commits are read on


def test_apply_refuses_when_the_log_moved_and_applies_and_undoes_otherwise(tmp_path: Path) -> None:
    case = _case("4.1.4", "delta-source-stateless-log-cleaned#0")
    root = copy_case(case, tmp_path / "w")
    plan, _, tables = plan_case(case, root)
    store = open_storage(str(root / "checkpoint"))
    tool = open_storage(tool_url(store.url))
    before = tree_bytes(root / "checkpoint")
    with pytest.raises(PreconditionFailedError, match="which is gone or was not read again"):
        apply_plan(plan, store, sink=None, tool=tool, now_ms=None)
    # the table read again after log cleanup moved on past version 6 (what read_table then returns)
    later = (replace(tables[0], earliest_version=7),)
    with pytest.raises(PreconditionFailedError, match="starts at version 7 now"):
        apply_plan(plan, store, sink=None, tool=tool, now_ms=None, delta=later)
    assert tree_bytes(root / "checkpoint") == before
    result = apply_plan(plan, store, sink=None, tool=tool, now_ms=None, delta=tables_of(root))
    assert result.after is not None and result.after.prediction.starts and not result.after.codes
    assert result.after.prediction.next_batch_id == 2
    assert any("reads versions 6..6" in n for n in result.after.prediction.notes)
    undo_journal(open_storage_of(result.journal_url), open_storage)  # type: ignore[arg-type]
    assert tree_bytes(root / "checkpoint") == before


def test_a_delta_plan_document_follows_the_published_schema(tmp_path: Path) -> None:
    from checkpoint_doctor.render.layout import json_document
    from tests.cli.test_schemas import validate

    case = _case("4.0.5", "delta-source-count-replaced#0")
    plan, _, _ = plan_case(case, copy_case(case, tmp_path / "w"))
    doc = json.loads(json_document("plan", plan.to_dict()).final(exit_code=0, generated_at_ms=0))
    validate("plan", doc)
    assert {"kind": "delta_table"}.items() <= plan.to_dict()["preconditions"][-1].items()


def _sink_copy(tmp_path: Path, version: str = "4.2.1") -> Path:
    src = DELTA_FIXTURES / f"spark-{version}" / "delta-sink"
    for part in ("checkpoint", "sink"):
        shutil.copytree(src / part, tmp_path / part)
    return tmp_path


def test_a_rollback_against_a_delta_sink_names_the_batches_its_txn_version_skips(tmp_path: Path) -> None:
    """offsets/2 unreadable: the rollback re-plans batch 2, which the Delta sink (txn version 2)
    skips. Without the table the plan can only say 'a sink that skips batch ids ... skips them'."""
    root = _sink_copy(tmp_path)
    (root / "checkpoint" / "offsets" / "2").write_text("v1\n{not json", encoding="utf-8")
    (root / "checkpoint" / "offsets" / ".2.crc").unlink()
    snapshot = load_checkpoint(str(root / "checkpoint"))
    table = read_table(str(root / "sink"))
    query_id = snapshot.query_id
    assert table.txn_version(query_id) == 2  # type: ignore[arg-type]
    plans = {}
    for named in (None, (table,)):
        opts = DiagnoseOptions(spark="4.2", mode="micro-batch", live_window_s=0, delta=named)
        plans[named is not None] = plan_repair(
            snapshot, diagnose(snapshot, opts), PlanOptions(diagnose=opts, accept_data_loss=True)
        )
    vague, counted = (
        plans[False].expected["consequences"]["loss"],
        plans[True].expected["consequences"]["loss"],
    )
    assert plans[True].strategy == "rollback" and "a sink that skips batch ids" in vague[0]
    assert counted == [
        f"batch(es) 2 are planned again with new end offsets: the Delta sink table {table.url} holds batches up "
        f"to 2 of query {query_id} (txn) and skips them without an error: 1 batch(es) not written, whatever the "
        "source reads for them now"
    ]


def test_a_re_run_with_the_same_end_offsets_loses_nothing_at_a_delta_sink(tmp_path: Path) -> None:
    """commits/2 unreadable: batch 2 runs again to the offsets it had; the sink skips it and loses nothing."""
    root = _sink_copy(tmp_path)
    (root / "checkpoint" / "commits" / "2").write_text("v1\n{not json", encoding="utf-8")
    (root / "checkpoint" / "commits" / ".2.crc").unlink()
    snapshot = load_checkpoint(str(root / "checkpoint"))
    opts = DiagnoseOptions(
        spark="4.2", mode="micro-batch", live_window_s=0, delta=(read_table(str(root / "sink")),)
    )
    plan = plan_repair(snapshot, diagnose(snapshot, opts), PlanOptions(diagnose=opts))
    assert plan.steps and plan.expected["consequences"]["loss"] == []


def test_apply_as_printed_refuses_with_32_when_log_cleanup_moved_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI reads the table again at apply: one more commit and log cleanup past version 6 since the
    plan (what a retention run while the plan waited does) change the versions it skips: exit 32."""
    from tests.scenarios import run_cli

    case = _case("4.2.1", "delta-source-stateless-log-cleaned#0")
    root = copy_case(case, tmp_path / "w")
    monkeypatch.chdir(root)
    code, out, _ = run_cli(
        capsys,
        "plan",
        "checkpoint",
        "--spark",
        "4.2",
        "--delta-table",
        "source",
        "--accept-data-loss",
        "-o",
        "p.json",
    )
    assert code == 0, out
    before = tree_bytes(root / "checkpoint")
    log = root / "source" / "_delta_log"
    (log / f"{7:020d}.json").write_bytes((log / f"{6:020d}.json").read_bytes())
    for name in (f"{6:020d}.json", f".{6:020d}.json.crc", f"{6:020d}.crc", f".{6:020d}.crc.crc"):
        (log / name).unlink()
    code, out, err = run_cli(capsys, "apply", "p.json", "--yes")
    assert code == 32 and out == "", out
    # the plan names the table by its full location, as it names the checkpoint
    table = root / "source"
    assert (
        f"the Delta table {table}'s log starts at version 7 now, the plan was made when it started at 6"
        in err
    )
    assert tree_bytes(root / "checkpoint") == before


@pytest.mark.parametrize("version", LINES)
def test_a_checkpoint_rolled_back_below_its_delta_sink_is_caught_up_with_consent(
    version: str, tmp_path: Path
) -> None:
    """delta-sink-rolled-back: Spark re-plans batches 1..2 and the sink skips them (CD407, a warning).
    The plan records them as done without data, with consent: batch 3 writes again what 1..2 wrote."""
    case = skipping_case(version)
    root = copy_case(case, tmp_path / "w")
    plan, consent, (sink,) = plan_case(case, root)
    assert consent and plan.strategy == "delta-sink-txn" and not plan.unresolved
    assert plan.expected["starts"] and plan.expected["next_batch_id"] == 3 and plan.expected["codes"] == []
    assert [(s.kind, s.path, getattr(s, "source", None)) for s in plan.steps] == [
        ("copy", "offsets/1", "offsets/0"),
        ("copy", "offsets/2", "offsets/0"),
        ("copy", "commits/1", "commits/0"),
        ("copy", "commits/2", "commits/0"),
    ]
    consequences = plan.expected["consequences"]
    assert consequences["loss"] == [
        f"DUPLICATES: Delta sink ({sink.url}): nothing is skipped, but batch 3 reads from the end of batch 0 and "
        "writes again what batch(es) 1..2 wrote (2 file(s), 10 rows)"
    ]
    assert consequences["duplicates"] and not consequences["data_loss"]
    assert "DATA LOSS" not in consequences["summary"]
    from checkpoint_doctor.cli.repair import apply_question

    assert apply_question(plan).startswith("This plan WRITES ROWS TWICE (DUPLICATES: Delta sink (")
    # without consent the plan says what it would write twice and how to consent
    snapshot = load_checkpoint(str(root / "checkpoint"))
    opts = options(case, (sink,))
    plain = plan_repair(snapshot, diagnose(snapshot, opts), PlanOptions(diagnose=opts))
    (left,) = plain.unresolved
    assert not plain.steps and left["code"] == "CD407" and left["manual"] == CONSENT_MANUAL
    assert left["reason"].startswith("its repair writes rows twice: Delta sink (")
    # a stateful query cannot pass over batch ids: no state versions for them
    stateful = replace(opts, stateful=True)
    plan = plan_repair(
        snapshot, diagnose(snapshot, stateful), PlanOptions(diagnose=stateful, accept_data_loss=True)
    )
    assert "delta-sink-txn" not in str(plan.strategy)  # (its missing state/ is repaired by reset-state)
    (why,) = [r["reason"] for o in plan.options for r in o["options"] if r["strategy"] == "delta-sink-txn"]
    assert why.startswith("a stateful query cannot pass over batch ids 1..2")


def _plan_at(case: Case, root: Path, version: int) -> RepairPlan:
    tables = tables_of(root)
    snapshot = load_checkpoint(str(root / "checkpoint"))
    opts = options(case, tables)
    request = PlanOptions(diagnose=opts, accept_data_loss=True, delta_version=version)
    return plan_repair(snapshot, diagnose(snapshot, opts), request)


def test_delta_version_reads_the_new_tables_changes_from_the_version_asked(tmp_path: Path) -> None:
    case = _case("4.1.4", "delta-source-stateless-recreated#0")
    root = copy_case(case, tmp_path / "w")
    plan = _plan_at(case, root, 1)
    assert plan.strategy == "delta-table" and plan.expected["starts"]
    (source,) = tables_of(root)
    line = json.loads(plan.steps[2].data.split(b"\n")[2])  # type: ignore[attr-defined]
    assert (line["reservoirId"], line["reservoirVersion"], line["isStartingVersion"]) == (
        source.table_id,
        1,
        False,
    )
    (loss,) = plan.expected["consequences"]["loss"]
    assert "version 0 passed over (0 file(s), 0 rows)" in loss
    assert "reads the changes of table" in loss and "from version 1 on (version 1: 1 file(s), 3 rows)" in loss
    # the request records it: apply plans again with it, and the plan document follows the schema
    again = RepairPlan.from_json(plan.to_json())
    assert again == plan and plan.request["delta_version"] == 1
    from checkpoint_doctor.render.layout import json_document
    from tests.cli.test_schemas import validate

    validate("plan", json.loads(json_document("plan", plan.to_dict()).final(exit_code=0, generated_at_ms=0)))


def test_delta_version_outside_the_new_table_or_on_its_replacing_commit_is_refused(tmp_path: Path) -> None:
    case = _case("4.1.4", "delta-source-stateless-replaced#0")
    root = copy_case(case, tmp_path / "w")
    outside = _plan_at(case, root, 3)  # versions 0..4 are the old table's
    assert not outside.steps
    (why,) = [r["reason"] for o in outside.options for r in o["options"] if r["strategy"] == "delta-table"]
    assert why.startswith("--delta-version 3 is not a version of table") and "it begins at version 5" in why
    # reading version 5 as changes meets the replacing commit's removes: the restart would still fail
    on_replace = _plan_at(case, root, 5)
    assert not on_replace.steps and on_replace.expected["starts"] is False
    assert [u["code"] for u in on_replace.unresolved] == ["CD208"]


def test_apply_as_printed_refuses_with_32_when_the_table_is_gone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.scenarios import run_cli

    case = _case("3.5.9", "delta-source-stateless-replaced#0")
    root = copy_case(case, tmp_path / "w")
    monkeypatch.chdir(root)
    code, out, _ = run_cli(
        capsys,
        "plan",
        "checkpoint",
        "--spark",
        "3.5",
        "--delta-table",
        "source",
        "--accept-data-loss",
        "-o",
        "p.json",
    )
    assert code == 0, out
    shutil.rmtree(root / "source")
    code, out, err = run_cli(capsys, "apply", "p.json", "--yes")
    assert code == 32 and out == "" and err.count("\n") == 1, err
    assert f"the plan relies on the Delta table {root / 'source'}, which is gone or was not read again" in err


@pytest.mark.s3
def test_the_delta_way_back_on_s3_as_printed(
    s3: S3, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint and its cleaned-up source table on S3 (moto): plan with the endpoint, apply as
    printed (it reads the table again through the plan's storage options, delta-rs for the checkpoint)."""
    from tests.scenarios import run_cli

    folder = DELTA_FIXTURES / "spark-3.5.9" / "delta-source-stateless-log-cleaned"
    for part in ("checkpoint", "source"):
        s3.fs.put(str(folder / part), s3.key(f"q/{part}"), recursive=True)
    monkeypatch.chdir(tmp_path)
    endpoint = ["--storage-option", f"endpoint_url={s3.endpoint}"]
    code, out, _ = run_cli(
        capsys,
        "plan",
        s3.url("q/checkpoint"),
        "--spark",
        "3.5",
        "--live-window",
        "0",
        "--delta-table",
        s3.url("q/source"),
        "--accept-data-loss",
        "-o",
        "plan.json",
        *endpoint,
    )
    assert code == 0 and "versions 4..5 skipped" in out, out
    apply = out.strip().splitlines()[-1].split("Apply it with: ")[1].split()
    assert apply[:3] == ["checkpoint-doctor", "apply", "plan.json"]
    code, out, _ = run_cli(capsys, *apply[1:], "--yes")
    assert code == 0, out
    line = s3.fs.cat(s3.key("q/checkpoint/offsets/1")).decode("utf-8").split("\n")[2]
    assert json.loads(line)["reservoirVersion"] == 6
    assert "Delta source 0 reads versions 6..6" in out
