"""Delta tables found beside a checkpoint without a flag: ``diagnose``/``plan`` and the Python API
pair a source by reservoirId and a sink by txn appId, say what was paired and how, and give every
recorded restart in ``fixtures/delta/`` its verdict with no ``--delta-table`` at all."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

import checkpoint_doctor as cd
from checkpoint_doctor.cli import main
from checkpoint_doctor.world import delta_discovery
from checkpoint_doctor.world.delta_discovery import SIBLINGS_LOOKED_AT, nearby_tables
from tests.delta.test_recorded_restarts import DIAGNOSED, _id, _line, _load
from tests.s3.conftest import S3

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "delta"
LINE = FIXTURES / "spark-4.2.1"


@pytest.mark.parametrize(("path", "idx"), DIAGNOSED, ids=[_id(c) for c in DIAGNOSED])
def test_a_diagnose_without_flags_gives_the_recorded_restart(path: Path, idx: int) -> None:
    """The API (as the CLI: the shared loading path) finds the tables beside the checkpoint."""
    scen, _, result = _load(path, idx)
    got = cd.diagnose(
        str(path.parent / "checkpoint"),
        spark=[_line(scen)],
        stateful=scen["query"]["stateful"],
        live_window_s=0,
    )
    prediction = got.primary.diagnosis.prediction
    pairing = got.to_dict()["delta_pairing"]
    beside = {str(path.parent / p) for p in ("source", "sink") if (path.parent / p / "_delta_log").is_dir()}
    assert {p["table"] for p in (pairing or {}).get("pairs", [])} == beside, pairing
    if result["error"] is None:
        assert prediction.starts, prediction.summary
        assert not {"CD208", "CD209", "CD210"} & {f["code"] for f in got.to_dict()["findings"]}
    else:
        assert not prediction.starts
        assert prediction.error is not None and prediction.error.matches(result["error"]["message"])
    if scen["query"]["name"] == "rate_to_delta" and result["error"] is None:
        rows = lambda t: (t.get("sink") or {}).get("rows_per_batch") or {}  # noqa: E731
        skipped = rows(result["tables"]) == rows(scen["tables"])
        assert ("CD407" in {f["code"] for f in got.to_dict()["findings"]}) == skipped


def test_the_reviewers_command_shows_the_danger_unasked(capsys: pytest.CaptureFixture[str]) -> None:
    scen = LINE / "delta-source-count-log-cleaned"
    code = main(["diagnose", str(scen / "checkpoint")])
    out = capsys.readouterr().out
    assert code == 4, out
    assert "CD209" in out and "DELTA_MISSING_FILES_UNEXPECTED_VERSION" in out
    assert f"Delta source 0 paired with {scen / 'source'} by table id" in " ".join(out.split())
    assert "Delta tables not checked" not in out


def test_a_sink_beside_is_paired_by_txn_app_id_and_plan_sees_it_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    scen = LINE / "delta-sink-rolled-back"
    code = main(["plan", str(scen / "checkpoint"), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code in (0, 1, 4), doc
    text = json.dumps(doc)
    assert "CD407" in text and "by txn appId = query id (batch 2 committed)" in text


def _alone(tmp_path: Path, scenario: str = "delta-source-stateless") -> Path:
    job = tmp_path / "jobs" / "a"
    job.mkdir(parents=True)
    shutil.copytree(LINE / scenario / "checkpoint", job / "checkpoint")
    return job / "checkpoint"


def test_an_unpaired_source_says_so_and_names_commands_that_run_as_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint = _alone(tmp_path)
    # the table the source read sits elsewhere: under the directory above the checkpoint's parent
    shutil.copytree(LINE / "delta-source-stateless" / "source", tmp_path / "jobs" / "tables" / "events")
    assert main(["diagnose", str(checkpoint), "--format", "json"]) in (0, 1)
    doc = json.loads(capsys.readouterr().out)["result"]
    pairing = doc["delta_pairing"]
    assert pairing["pairs"] == [] and [u["source"] for u in pairing["unpaired_sources"]] == [0]
    assert any("not paired: no Delta table looked at" in a for a in doc["assumptions"])

    main(["diagnose", str(checkpoint)])
    out = capsys.readouterr().out
    commands = [line.strip() for line in out.splitlines() if line.startswith("  checkpoint-doctor audit")]
    assert commands == [f"checkpoint-doctor audit {tmp_path / 'jobs'}"]
    # as printed: the audit pairs the source by id with the table below that directory
    assert main([*shlex.split(commands[0])[1:], "--format", "json"]) in (0, 1)
    records = json.loads(capsys.readouterr().out)["result"]["records"]
    (record,) = [r for r in records if r["kind"] == "checkpoint"]
    assert record["delta"]["pairs"][0]["how"] == "table-id"
    # the audit's next command names the table it paired from afar, so diagnose gives the same answer
    table = tmp_path / "jobs" / "tables" / "events"
    assert record["next_step"] is None or f"--delta-table {table}" in record["next_step"]


def test_the_audit_next_step_names_a_table_paired_from_afar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint = _alone(tmp_path, "delta-source-stateless-rows-deleted")
    table = tmp_path / "tables" / "events"
    shutil.copytree(LINE / "delta-source-stateless-rows-deleted" / "source", table)
    main(["audit", str(tmp_path), "--format", "json", "--live-window", "0"])
    (record,) = [
        r for r in json.loads(capsys.readouterr().out)["result"]["records"] if r["kind"] == "checkpoint"
    ]
    assert "CD210" in record["codes"]
    assert record["next_step"] == f"checkpoint-doctor plan {checkpoint} --live-window 0 --delta-table {table}"
    # as printed: the plan sees the table and the same refusal
    assert main([*shlex.split(record["next_step"])[1:], "--format", "json"]) in (0, 1, 4)
    assert "CD210" in capsys.readouterr().out


def test_a_table_beside_written_by_other_queries_is_named_not_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lost checkpoint's old sink beside a new query: a note with the --delta-table command, no CD408
    (the table may be anyone's); named with --delta-table it is judged (CD408)."""
    checkpoint = _alone(tmp_path, "delta-source-count")
    shutil.copytree(LINE / "delta-sink" / "sink", checkpoint.parent / "sink")
    shutil.copytree(LINE / "delta-source-count" / "source", checkpoint.parent / "source")
    main(["diagnose", str(checkpoint), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)["result"]
    assert doc["delta_pairing"]["other_queries_tables"] == [str(checkpoint.parent / "sink")]
    assert "CD408" not in {f["code"] for f in doc["findings"]}
    assert [p["how"] for p in doc["delta_pairing"]["pairs"]] == ["table-id"]
    main(["diagnose", str(checkpoint), "--format", "json", "--delta-table", str(checkpoint.parent / "sink")])
    doc = json.loads(capsys.readouterr().out)["result"]
    assert "CD408" in {f["code"] for f in doc["findings"]}


def test_the_checkpoint_inside_its_sink_table_pairs_with_the_parent(tmp_path: Path) -> None:
    table = tmp_path / "sink"
    shutil.copytree(LINE / "delta-sink-rolled-back" / "sink", table)
    shutil.copytree(LINE / "delta-sink-rolled-back" / "checkpoint", table / "_checkpoint")
    got = cd.diagnose(str(table / "_checkpoint"), spark=["4.2"], live_window_s=0).to_dict()
    assert [(p["role"], p["table"]) for p in got["delta_pairing"]["pairs"]] == [("sink", str(table))]
    assert "CD407" in {f["code"] for f in got["findings"]}


def test_reading_beside_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At most SIBLINGS_LOOKED_AT siblings by name; Hive partitions and hidden directories never;
    only the newest checksum of each table found (pairing), no commit."""
    parent = tmp_path / "many"
    (parent / "checkpoint").mkdir(parents=True)
    for i in range(SIBLINGS_LOOKED_AT + 5):
        (parent / f"d{i:03d}").mkdir()
    shutil.copytree(LINE / "delta-sink" / "sink", parent / "a-table")  # first by name
    shutil.copytree(LINE / "delta-sink" / "sink", parent / "zz-table")  # beyond the bound
    shutil.copytree(LINE / "delta-sink" / "sink", parent / "date=2024-01-01")
    shutil.copytree(LINE / "delta-sink" / "sink", parent / ".hidden")
    reads: list[str] = []
    real = delta_discovery.read_table

    def counted(url: str, *args: object, **kw: object):  # type: ignore[no-untyped-def]
        reads.append(f"{Path(url).name} commits={kw.get('commits', True)}")
        return real(url, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(delta_discovery, "read_table", counted)
    found = nearby_tables(str(parent / "checkpoint"))
    assert [Path(t.url).name for t in found.tables] == ["a-table"]
    assert reads == ["a-table commits=False"] and found.tables[0].commits == ()
    assert f"{SIBLINGS_LOOKED_AT} sibling directories (7 more not looked at)" in found.looked_at


def test_a_table_beside_that_cannot_be_read_is_named_and_the_verdict_goes_on(tmp_path: Path) -> None:
    checkpoint = _alone(tmp_path, "delta-source-count")
    source = checkpoint.parent / "source"
    shutil.copytree(LINE / "delta-source-count" / "source", source)
    for f in (source / "_delta_log").glob("*.crc"):
        f.unlink()
    (source / "_delta_log" / "00000000000000000001.json").write_text("{not json\n")
    got = cd.diagnose(str(checkpoint), spark=["4.2"], live_window_s=0).to_dict()
    assert [u["table"] for u in got["delta_pairing"]["unread"]] == [str(source)]
    assert "is not a Delta commit" in got["delta_pairing"]["unread"][0]["reason"]
    assert any(f"Delta table {source} not read" in a for a in got["assumptions"])


@pytest.mark.s3
def test_tables_beside_a_checkpoint_on_s3_pair_as_they_do_locally(s3: S3) -> None:
    scen = LINE / "delta-source-count-log-cleaned"
    for part in ("checkpoint", "source"):
        s3.fs.put(str(scen / part), s3.key(f"job/{part}"), recursive=True)
    got = cd.diagnose(s3.url("job/checkpoint"), spark=["4.2"], storage_options=s3.options, live_window_s=0)
    doc = got.to_dict()
    assert [(p["how"], p["table"]) for p in doc["delta_pairing"]["pairs"]] == [
        ("table-id", s3.url("job/source"))
    ]
    assert doc["restart"]["outcome"] == "fails" and "CD209" in {f["code"] for f in doc["findings"]}


def test_the_api_pairs_named_tables_with_a_snapshot_and_looks_beside_a_url() -> None:
    scen = LINE / "delta-source-count-log-cleaned"
    snapshot = cd.load(str(scen / "checkpoint"))
    # a snapshot says nothing of where it was read: nothing is looked for beside it
    alone = cd.diagnose(snapshot, live_window_s=0)
    assert any(a.startswith("Delta tables not checked") for a in alone.assumptions)
    named = cd.diagnose(snapshot, live_window_s=0, delta_tables=[str(scen / "source")])
    by_url = cd.diagnose(str(scen / "checkpoint"), live_window_s=0)
    assert named.exit_code == by_url.exit_code == 4
    assert "CD209" in {f.code for f in named.findings} & {f.code for f in by_url.findings}
    plan = cd.plan(str(scen / "checkpoint"), live_window_s=0)
    assert any("paired with" in a and "by table id" in a for a in plan.assumptions)


def test_at_most_tables_read_tables_are_read_beside_and_the_rest_is_said(tmp_path: Path) -> None:
    from checkpoint_doctor.world.delta_discovery import TABLES_READ

    parent = tmp_path / "job"
    (parent / "checkpoint").mkdir(parents=True)
    for i in range(TABLES_READ + 2):
        shutil.copytree(LINE / "delta-sink" / "sink", parent / f"t{i:02d}")
    found = nearby_tables(str(parent / "checkpoint"))
    assert len(found.tables) == TABLES_READ
    assert f"the first {TABLES_READ} tables found read, 2 more not" in found.looked_at


def test_a_replaced_source_beside_another_table_is_paired_by_the_id_its_log_still_shows(
    tmp_path: Path,
) -> None:
    """The replaced table and a lookup table beside the checkpoint: the spare rule cannot choose,
    the replaced table's first version (the checkpoint's table id) does; diagnose and audit agree."""
    scen = LINE / "delta-source-stateless-replaced"
    job = tmp_path / "jobs" / "clicks"
    shutil.copytree(scen / "checkpoint", job / "checkpoint")
    shutil.copytree(scen / "source", job / "source")
    shutil.copytree(FIXTURES / "spark-4.1.4" / "delta-source-count" / "source", job / "lookup")
    got = cd.diagnose(str(job / "checkpoint"), spark=["4.2"], live_window_s=0).to_dict()
    assert [(p["how"], p["table"]) for p in got["delta_pairing"]["pairs"]] == [
        ("former-table-id", str(job / "source"))
    ]
    assert "CD208" in {f["code"] for f in got["findings"]}
    (record,) = [
        r for r in cd.audit(str(tmp_path), live_window_s=0).to_json()["records"] if r["kind"] == "checkpoint"
    ]
    assert [(p["how"], p["table"]) for p in record["delta"]["pairs"]] == [
        ("former-table-id", str(job / "source"))
    ]
    assert "CD208" in record["codes"]


def test_a_line_without_delta_does_not_say_ok_for_a_delta_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No Delta Lake release exists for Spark 4.3: its cell is marked and the legend says its Delta
    sources were not judged; the audit's line column says so instead of '4.3 ok'."""
    shutil.copytree(LINE / "delta-source-stateless-log-cleaned", tmp_path / "orders")
    main(["diagnose", str(tmp_path / "orders" / "checkpoint"), "--live-window", "0"])
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if line.startswith("4.3")]
    assert row.endswith("NOT JUDGED ~") and "STARTS" not in row  # issue 36: not judged is no start
    assert "~ not judged: no Delta Lake release exists for Spark 4.3" in out
    main(["audit", str(tmp_path), "--live-window", "0", "--format", "json"])
    (record,) = json.loads(capsys.readouterr().out)["result"]["records"]
    assert record["lines"] == "4.2 FAILS; 4.3 Delta not judged"


def test_a_replaced_table_beside_wins_over_a_copy_of_the_old_table_elsewhere_in_an_audit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """clicks' source was replaced in place (its first version still names the old id) and another job
    of the fleet reads a copy of the old table (same id): the audit pairs clicks with the table beside
    it, as diagnose does, and says CD208, not 'ok' against the copy."""
    shutil.copytree(LINE / "delta-source-stateless-replaced", tmp_path / "clicks")
    shutil.copytree(LINE / "delta-source-stateless", tmp_path / "pageviews")
    main(["audit", str(tmp_path), "--live-window", "0", "--format", "json"])
    records = {r["path"]: r for r in json.loads(capsys.readouterr().out)["result"]["records"]}
    clicks = records["clicks/checkpoint"]
    assert [(p["how"], p["table"]) for p in clicks["delta"]["pairs"]] == [
        ("former-table-id", str(tmp_path / "clicks" / "source"))
    ]
    assert clicks["verdict"] == "error" and clicks["codes"] == ["CD208"]
    assert records["pageviews/checkpoint"]["verdict"] == "ok"
    main(["diagnose", str(tmp_path / "clicks" / "checkpoint"), "--live-window", "0", "--format", "json"])
    assert "CD208" in {f["code"] for f in json.loads(capsys.readouterr().out)["result"]["findings"]}


def test_the_audit_text_names_the_checkpoints_whose_delta_source_no_table_pairs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Counted in the head, and named (an ok record is not listed without -v): which checkpoint was
    judged without its table's log."""
    checkpoint = tmp_path / "legacy" / "checkpoint"  # its table (another line's) is not under the root
    shutil.copytree(FIXTURES / "spark-3.5.9" / "delta-source-count" / "checkpoint", checkpoint)
    shutil.copytree(LINE / "delta-source-stateless-log-cleaned", tmp_path / "orders")
    main(["audit", str(tmp_path), "--live-window", "0"])
    out = capsys.readouterr().out
    assert "1 Delta source(s) paired with no table" in " ".join(out.split())
    section = out[out.index("Delta sources paired with no table\n") :]
    assert section.splitlines()[1].startswith(f"  {checkpoint}: Delta source 0 (table ")
    assert str(tmp_path / "orders" / "checkpoint") not in section.split("\n\n")[0]


def test_a_delta_sink_is_not_judged_on_a_line_without_delta(tmp_path: Path) -> None:
    """CD407 concerns the lines whose Delta sink skips the batch ids it holds; 4.3 has no Delta sink."""
    shutil.copytree(LINE / "delta-sink-rolled-back", tmp_path / "ingest")
    got = cd.diagnose(str(tmp_path / "ingest" / "checkpoint"), live_window_s=0)
    (finding,) = [f for f in got.findings if f.code == "CD407"]
    assert {spark for spark, _ in finding.cells} == {"4.2"}
    (cell,) = [c for c in got.cells if c.cell.spark == "4.3"]
    assert cell.delta_not_judged and "CD407" not in cell.diagnosis.codes


def _nested(tmp_path: Path, line: str, layout: str) -> Path:
    """delta-sink-rolled-back as real Spark wrote it, the checkpoint moved inside its sink table
    (``table/_checkpoints/<name>`` or ``table/_checkpoint``): nothing in either records the other's
    path (the sink's txn names the query id), so the move changes no byte Spark reads."""
    scen = FIXTURES / f"spark-{line}" / "delta-sink-rolled-back"
    table = tmp_path / "orders"
    shutil.copytree(scen / "sink", table)
    shutil.copytree(scen / "checkpoint", table / layout)
    return table


@pytest.mark.parametrize("line", ["3.5.9", "4.0.5", "4.1.4", "4.2.1"])
@pytest.mark.parametrize("layout", ["_checkpoints/q1", "_checkpoint"])
def test_a_rolled_back_checkpoint_inside_its_sink_table_is_paired_by_diagnose_and_plan(
    line: str, layout: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 33 item 5: ``table/_checkpoints/<name>`` (Delta's documented layout) read healthy: only
    the checkpoint's parent and siblings were looked at. The table holding the ``_checkpoints``
    directory now pairs by txn appId, so the rollback's skipped batches (CD407) show in diagnose and
    plan, with no flag, as the audit already showed them."""
    table = _nested(tmp_path, line, layout)
    ckpt = table / layout
    got = cd.diagnose(str(ckpt), spark=[line], live_window_s=0).to_dict()
    assert [(p["role"], p["how"], p["table"]) for p in got["delta_pairing"]["pairs"]] == [
        ("sink", "txn-app-id", str(table))
    ]
    cd407 = [f for f in got["findings"] if f["code"] == "CD407"]
    assert len(cd407) == 1 and "runs batch ids 1..2 again" in cd407[0]["message"]
    code, out = run_cli_json(capsys, "diagnose", str(ckpt), "--spark", line, "--live-window", "0")
    assert code == 1 and "CD407" in {f["code"] for f in out["findings"]}  # warnings
    # The audit pairs the same table (every table under its roots, indexed by txn appId).
    audit = cd.audit(str(tmp_path), live_window_s=0).to_json()
    (record,) = [r for r in audit["records"] if r["kind"] == "checkpoint"]
    assert [p["table"] for p in record["delta"]["pairs"]] == [str(table)]
    assert "CD407" in record["codes"]
    plan_path = tmp_path / "plan.json"
    code_plan = main(
        ["plan", str(ckpt), "--spark", line, "--live-window", "0", "--accept-data-loss", "-o", str(plan_path)]
    )
    text = capsys.readouterr().out
    assert code_plan == 0, text
    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    assert plan["strategy"] == "delta-sink-txn", plan["strategy"]
    assert f"Delta sink ({table})" in " ".join(text.split())
    code_apply = main(["apply", str(plan_path), "--yes"])
    text = capsys.readouterr().out
    assert code_apply == 0 and "STARTS new batch 3" in text, text
    after = cd.diagnose(str(ckpt), spark=[line], live_window_s=0).to_dict()
    assert "CD407" not in {f["code"] for f in after["findings"]}
    assert [p["table"] for p in after["delta_pairing"]["pairs"]] == [str(table)]


def run_cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main([*args, "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    return code, doc.get("result", doc)


def test_a_checkpoint_in_a_visible_directory_of_a_table_is_not_looked_above(tmp_path: Path) -> None:
    """Only a hidden parent (``_``-prefixed, skipped by Delta's VACUUM and Spark's file index) makes
    the table above it a neighbour: ``table/checkpoints/q1`` is data to VACUUM, and the rule stays
    one listing more, not a walk up the tree."""
    table = _nested(tmp_path, "4.2.1", "checkpoints/q1")
    found = nearby_tables(str(table / "checkpoints" / "q1"))
    assert found.tables == () and "table holding its parent" not in found.looked_at
    found = nearby_tables(str(_nested(tmp_path / "n", "4.2.1", "_checkpoints/q1") / "_checkpoints" / "q1"))
    assert [t.url for t in found.tables] == [str(tmp_path / "n" / "orders")]
    assert found.looked_at.endswith("and the table holding its parent _checkpoints/")


def test_diagnose_and_the_audit_agree_on_a_source_table_holding_its_checkpoint(tmp_path: Path) -> None:
    """A recreated source (nothing in its log names the old id) pairs with the only table beside:
    the table holding ``_checkpoints/`` is that table for diagnose and, alike, for the audit (which
    said nothing: it looked at the parent and its siblings only)."""
    scen = FIXTURES / "spark-4.2.1" / "delta-source-stateless-recreated"
    table = tmp_path / "job" / "orders"
    shutil.copytree(scen / "source", table)
    shutil.copytree(scen / "checkpoint", table / "_checkpoints" / "q1")
    got = cd.diagnose(str(table / "_checkpoints" / "q1"), spark=["4.2.1"], live_window_s=0).to_dict()
    assert [(p["how"], p["table"]) for p in got["delta_pairing"]["pairs"]] == [
        ("only-table-beside", str(table))
    ]
    assert "CD208" in {f["code"] for f in got["findings"]}
    audit = cd.audit(str(tmp_path), live_window_s=0).to_json()
    (record,) = [r for r in audit["records"] if r["kind"] == "checkpoint"]
    assert [(p["how"], p["table"]) for p in record["delta"]["pairs"]] == [("only-table-beside", str(table))]
    assert "CD208" in record["codes"] and record["restart"]["outcome"] == "fails"
