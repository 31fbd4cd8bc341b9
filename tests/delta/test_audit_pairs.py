"""``audit`` discovers the Delta tables under its roots and pairs them with the checkpoints without
being told, and the verdicts that follow are the ones real Spark proved: an audit over
``fixtures/delta/spark-<v>/`` gives each checkpoint the outcome its recorded restart had (refused in
Spark's words, started, or started while the sink silently skipped batches)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import checkpoint_doctor as cd
from checkpoint_doctor.cli import main
from checkpoint_doctor.fleet import delta as fleet_delta
from tests.delta.test_recorded_restarts import DELTA_FIXTURES, LINES_WITH_DELTA
from tests.s3.conftest import S3


def _default_restart(scenario: Path) -> dict[str, Any] | None:
    """The restart recorded with Delta's default options (the checkpoint says nothing of the source's),
    or None: a change data feed query's restarts all ran with its readChangeFeed (a job option an audit
    without --job does not know; tests/delta/test_delta_options.py judges them with the job)."""
    scen = json.loads((scenario / "scenario.json").read_text(encoding="utf-8"))
    return next((r["result"] for r in scen["restarts"] if r["source_options"] == {}), None)


def _rows(tables: dict) -> dict:
    sink = tables.get("sink") or {}
    return sink.get("rows_per_batch") or {} if sink.get("exists") else {}


@pytest.mark.parametrize("version", LINES_WITH_DELTA)
def test_an_audit_gives_each_checkpoint_the_verdict_its_recorded_restart_proves(version: str) -> None:
    root = DELTA_FIXTURES / f"spark-{version}"
    result = cd.audit(str(root), live_window_s=0).to_json()
    checkpoints = {r["path"]: r for r in result["records"] if r["kind"] == "checkpoint"}
    scenarios = sorted(p.parent.parent for p in root.glob("*/checkpoint/metadata"))
    assert sorted(checkpoints) == sorted(f"{s.name}/checkpoint" for s in scenarios)
    tables = sum(1 for _ in root.glob("*/*/_delta_log"))
    assert result["summary"]["delta"]["tables"] == tables
    for scenario in scenarios:
        record = checkpoints[f"{scenario.name}/checkpoint"]
        recorded = _default_restart(scenario)
        scen = json.loads((scenario / "scenario.json").read_text(encoding="utf-8"))
        pairs = record["delta"]["pairs"]
        own = {
            str(scenario / part) for part in ("source", "sink") if (scenario / part / "_delta_log").is_dir()
        }
        assert own <= {p["table"] for p in pairs}, (scenario.name, record["delta"]["text"])
        assert record["delta"]["unpaired_sources"] == []
        if recorded is None:
            continue
        if recorded["error"] is not None:
            assert record["restart"]["outcome"] == "fails", (scenario.name, record["restart"]["summary"])
            assert record["verdict"] == "error"
            cls = record["restart"]["summary"].split(": ")[1].split(" ")[0].rstrip(":")
            assert cls in recorded["error"]["message"], (scenario.name, record["restart"]["summary"])
        else:
            assert record["restart"]["outcome"] == "starts", (scenario.name, record["restart"]["summary"])
            assert not {"CD208", "CD209", "CD210"} & set(record["codes"])
            if scen["query"]["name"] == "rate_to_delta":
                skipped = _rows(recorded["tables"]) == _rows(scen["tables"])
                assert ("CD407" in record["codes"]) == skipped, scenario.name


def test_the_pairs_show_in_jsonl_html_and_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = DELTA_FIXTURES / "spark-4.2.1"
    page = tmp_path / "audit.html"
    code = main(["audit", str(root), "--live-window", "0", "--format", "jsonl", "--html", str(page)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 5
    summary = lines[-1]
    # 14 tables before issue 33 items 3-4, then the change data feed base, its 6 damages, the one-row
    # DELETE and the MERGE: 9 more source tables
    assert summary["delta"] == {
        "tables": 23,
        "paired_sources": 19,
        "paired_sinks": 3,
        "unpaired_sources": 0,
        "reads": 23,  # each table's newest checksum, once
    }
    replaced = next(r for r in lines if r.get("path") == "delta-source-stateless-replaced/checkpoint")
    (pair,) = replaced["delta"]["pairs"]
    # CREATE OR REPLACE kept the log: its first version still names the checkpoint's table id
    assert (pair["role"], pair["how"], pair["table"]) == (
        "source",
        "former-table-id",
        str(root / "delta-source-stateless-replaced" / "source"),
    )
    assert "CD208" in replaced["codes"]
    recreated = next(r for r in lines if r.get("path") == "delta-source-stateless-recreated/checkpoint")
    # deleted and written anew: nothing in its log names the old id, it is the only table beside
    assert [p["how"] for p in recreated["delta"]["pairs"]] == ["only-table-beside"]
    html = page.read_text(encoding="utf-8")
    assert "23 Delta tables under the roots: 19 paired as a source, 3 as a sink" in html
    assert "Delta sink paired with" in html and "by txn appId = query id (batch 2 committed)" in html
    main(["audit", str(root), "--live-window", "0"])
    out = capsys.readouterr().out
    assert "Delta             23 Delta tables under the roots: 19 paired as a source, 3 as a sink" in out
    notes = [n for n in summary["notes"] if n["kind"] == "delta-table"]
    assert len(notes) == 23 and all("read to pair it with the checkpoints" in n["message"] for n in notes)


def test_an_unpaired_delta_source_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "fleet"
    shutil.copytree(
        DELTA_FIXTURES / "spark-4.2.1" / "delta-source-count" / "checkpoint", root / "q1" / "checkpoint"
    )
    main(["audit", str(root), "--live-window", "0", "--format", "json", "--html", str(tmp_path / "a.html")])
    doc = json.loads(capsys.readouterr().out)["result"]
    (record,) = doc["records"]
    assert record["delta"]["pairs"] == []
    assert [u["source"] for u in record["delta"]["unpaired_sources"]] == [0]
    assert "Delta source 0 (table 9c2fe3ff-2b40-4a15-9ae6-065e1b3c1933) not paired" in record["delta"]["text"]
    assert doc["summary"]["delta"]["unpaired_sources"] == 1
    html = (tmp_path / "a.html").read_text(encoding="utf-8")
    assert 'class="delta unpaired"' in html and "Delta source 0" in html


def test_copies_of_a_table_pair_only_beside_the_checkpoint(tmp_path: Path) -> None:
    """Two copies of a source table (same id): the one beside the checkpoint pairs; elsewhere, the
    copies are named and none pairs."""
    base = DELTA_FIXTURES / "spark-4.2.1" / "delta-source-count"
    root = tmp_path / "fleet"
    shutil.copytree(base / "checkpoint", root / "job" / "checkpoint")
    shutil.copytree(base / "source", root / "job" / "source")
    shutil.copytree(base / "source", root / "backup" / "source")
    record = next(
        r for r in cd.audit(str(root), live_window_s=0).to_json()["records"] if r["kind"] == "checkpoint"
    )
    assert [p["table"] for p in record["delta"]["pairs"]] == [str(root / "job" / "source")]
    shutil.rmtree(root / "job" / "source")
    shutil.copytree(base / "source", root / "backup2" / "source")
    record = next(
        r for r in cd.audit(str(root), live_window_s=0).to_json()["records"] if r["kind"] == "checkpoint"
    )
    assert record["delta"]["pairs"] == []
    copies = sorted(str(root / b / "source") for b in ("backup", "backup2"))
    assert record["delta"]["ambiguous"] == copies
    # ... and a finding (CD216, a warning: the audit exits 1; it was 0), as copies beside are.
    assert record["delta"]["unpaired_sources"][0]["tables_with_its_id"] == copies
    assert "CD216" in record["codes"]
    result = cd.audit(str(root), live_window_s=0)
    assert result.exit_code == 1


def test_each_table_log_is_read_once_per_audit(monkeypatch: pytest.MonkeyPatch) -> None:
    """One listing of the roots (no listing of a log): each table read once for pairing (its newest
    checksum), and a source table's commits since the checkpoint's version once more."""
    root = DELTA_FIXTURES / "spark-4.2.1"
    pairing_reads: list[str] = []
    commit_reads: list[tuple[str, int]] = []
    real_table, real_commits = fleet_delta.read_table, fleet_delta.read_commits

    def table(url: str, *args: object, **kw: object):  # type: ignore[no-untyped-def]
        assert kw.get("names"), "the log's names come from the roots' listing"
        assert kw.get("commits") is False
        pairing_reads.append(url)
        return real_table(url, *args, **kw)  # type: ignore[arg-type]

    def commits(log, names, first, last):  # type: ignore[no-untyped-def]
        commit_reads.append((log.url, first))
        return real_commits(log, names, first, last)

    monkeypatch.setattr(fleet_delta, "read_table", table)
    monkeypatch.setattr(fleet_delta, "read_commits", commits)
    result = cd.audit(str(root), live_window_s=0)
    assert sorted(pairing_reads) == sorted(str(p.parent) for p in root.glob("*/*/_delta_log"))
    logs = [url for url, _ in commit_reads]
    assert len(logs) == len(set(logs)) == result.summary.delta.paired_sources
    # from the checkpoint's version, not the table's first: delta-source-count's offsets name 3..4
    assert (str(root / "delta-source-count" / "source" / "_delta_log"), 3) in commit_reads


@pytest.mark.s3
def test_an_audit_on_s3_pairs_as_it_does_locally(s3: S3) -> None:
    root = DELTA_FIXTURES / "spark-4.2.1"
    names = ["delta-source-count-log-cleaned", "delta-source-stateless-replaced", "delta-sink-rolled-back"]
    for name in names:
        s3.fs.put(str(root / name), s3.key(f"fleet/{name}"), recursive=True)
    s3.server.log.clear()
    result = cd.audit(s3.url("fleet"), storage_options=s3.options, live_window_s=0)
    kinds = s3.server.log.kinds()
    assert kinds["ListObjectsV2"] == 1  # the one listing of the root: no listing of a table's log
    got = {
        r["path"]: (r["restart"]["outcome"], r["codes"], [(p["role"], p["how"]) for p in r["delta"]["pairs"]])
        for r in result.to_json()["records"]
        if r["kind"] == "checkpoint"
    }
    assert got == {
        "delta-sink-rolled-back/checkpoint": ("starts", ["CD407"], [("sink", "txn-app-id")]),
        "delta-source-count-log-cleaned/checkpoint": ("fails", ["CD209"], [("source", "table-id")]),
        "delta-source-stateless-replaced/checkpoint": ("fails", ["CD208"], [("source", "former-table-id")]),
    }


def test_documents_with_delta_pairs_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """diagnose's delta_pairing (pairs, an unpaired source, a table beside that cannot be read, one
    written by other queries) and the audit's records and summary validate against their schemas."""
    from tests.cli.test_schemas import validate

    root = DELTA_FIXTURES / "spark-4.2.1"
    assert main(["audit", str(root), "--live-window", "0", "--format", "json"]) == 5
    validate("audit", json.loads(capsys.readouterr().out))
    main(["audit", str(root), "--live-window", "0", "--format", "jsonl"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for record in lines[:-1]:
        validate("audit-record", record)
    validate("audit-summary", lines[-1])
    job = tmp_path / "job"
    shutil.copytree(root / "delta-source-count" / "checkpoint", job / "checkpoint")
    shutil.copytree(root / "delta-sink" / "sink", job / "old-sink")
    (job / "broken" / "_delta_log").mkdir(parents=True)
    (job / "broken" / "_delta_log" / "00000000000000000000.json").write_text("{not json\n")
    main(["diagnose", str(job / "checkpoint"), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    validate("diagnose", doc)
    pairing = doc["result"]["delta_pairing"]
    assert pairing["unpaired_sources"] and pairing["unread"] and pairing["other_queries_tables"]


def test_the_metrics_say_which_delta_sources_are_paired(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "fleet"
    shutil.copytree(DELTA_FIXTURES / "spark-4.2.1" / "delta-source-count", root / "paired")
    shutil.copytree(
        DELTA_FIXTURES / "spark-4.1.4" / "delta-source-count" / "checkpoint", root / "alone" / "checkpoint"
    )
    metrics = tmp_path / "audit.prom"
    main(["audit", str(root), "--live-window", "0", "--format", "json", "--metrics", str(metrics)])
    capsys.readouterr()
    lines = metrics.read_text(encoding="utf-8").splitlines()
    paired = [line for line in lines if line.startswith("checkpoint_doctor_delta_source_paired{")]
    assert sorted(paired) == sorted(
        [
            f'checkpoint_doctor_delta_source_paired{{url="{root}/alone/checkpoint",kind="checkpoint",source="0",table=""}} 0',
            f'checkpoint_doctor_delta_source_paired{{url="{root}/paired/checkpoint",kind="checkpoint",source="0",'
            f'table="{root}/paired/source"}} 1',
        ]
    )
