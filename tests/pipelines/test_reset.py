"""``plan <flow dir> --reset-flow``: a pipeline flow's new live version n+1 that starts past the last
committed batch and keeps the table's data (pipelines.reset), with apply and undo as usual. Built on
the storage roots real ``spark-pipelines run`` (4.3.0) left (fixtures/sdp/); test_recorded_runs.py
replays the real runs after each recorded reset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkpoint_doctor.api import diagnose_pipeline
from checkpoint_doctor.cli import main
from checkpoint_doctor.pipelines.layout import pipeline_layout
from checkpoint_doctor.pipelines.reset import ResetFlow, copied_paths
from tests.cli.test_schemas import validate
from tests.pipelines.test_recorded_runs import SDP, install

FLOWS = "_checkpoints/spark_catalog/default"


def _project(tmp_path: Path, scenario: str) -> Path:
    return install(SDP / "spark-4.3.0" / scenario, tmp_path / "project")


def _verdict(storage: Path, flow: str) -> tuple[str, str, str | None]:
    (report,) = diagnose_pipeline(str(storage), spark=["4.3"])
    v = report.verdict.flow(flow)
    assert v is not None
    return v.next_run, v.summary, v.layout.live


def _reset(tmp_path: Path, flow_dir: Path, *flags: str) -> tuple[int, Path]:
    plan = tmp_path / "reset.json"
    code = main(
        [
            "plan",
            str(flow_dir),
            "--reset-flow",
            "--spark",
            "4.3",
            "--live-window",
            "0",
            *flags,
            "-o",
            str(plan),
        ]
    )
    return code, plan


def test_a_reset_starts_a_flow_whose_offsets_0_is_gone_past_its_last_committed_batch(tmp_path, capsys):
    storage = _project(tmp_path, "offsets-sparse")
    flow = storage / FLOWS / "events/events"
    assert _verdict(storage, "events/events")[0] == "FAILED"  # batch 0 doesn't exist: no ordinary plan
    code, plan = _reset(tmp_path, flow)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "copy 0/offsets/1 -> 1/offsets/0" in out and "copy 0/commits/1 -> 1/commits/1" in out
    assert "nothing is read again, nothing is skipped" in out
    assert main(["apply", str(plan), "--yes"]) == 0
    assert "STARTS new batch 2" in capsys.readouterr().out
    assert _verdict(storage, "events/events") == ("COMPLETED", "STARTS new batch 2", "1")
    # Version 0 is untouched history; undo removes version 1 whole (no empty version left behind,
    # which would be the CD803 silent loss).
    journal = next((flow.parent / "events.checkpoint-doctor").glob("*/journal.jsonl"))
    assert main(["undo", str(journal), "--yes"]) == 0
    assert sorted(p.name for p in flow.iterdir()) == ["0"]
    assert _verdict(storage, "events/events")[0] == "FAILED"


def test_a_stateful_flow_s_reset_needs_consent_and_writes_each_join_store_empty(tmp_path, capsys):
    storage = _project(tmp_path, "state-deleted")
    flow = storage / FLOWS / "joined/joined"
    code, plan = _reset(tmp_path, flow)
    err = capsys.readouterr().err
    assert code != 0 and not plan.exists() and "--accept-data-loss" in err
    assert "stream-stream joins lose the rows they buffered" in err
    code, plan = _reset(tmp_path, flow, "--accept-data-loss")
    assert code == 0
    steps = json.loads(plan.read_text())["steps"]
    snapshots = sorted(s["path"] for s in steps if s["path"].endswith("/2.snapshot"))
    # The pipeline's SQL says it is a join: four stores per partition, two partitions.
    assert len(snapshots) == 8 and "1/state/0/1/right-keyWithIndexToValue/2.snapshot" in snapshots
    assert main(["apply", str(plan), "--yes"]) == 0
    assert _verdict(storage, "joined/joined") == ("COMPLETED", "STARTS new batch 2", "1")


def test_a_reset_past_an_empty_newer_version_copies_the_last_version_that_committed(tmp_path, capsys):
    storage = _project(tmp_path, "empty-version")
    flow = storage / FLOWS / "merged/merged_a"
    (report,) = diagnose_pipeline(str(storage), spark=["4.3"])
    assert "CD803" in {str(f.code) for f in report.verdict.findings}
    code, plan = _reset(tmp_path, flow, "--format", "json")
    doc = json.loads(capsys.readouterr().out)
    validate("plan", doc)
    assert code == 0 and doc["result"]["pipeline_flow"]["reset"]["source"] == "0"
    assert doc["result"]["pipeline_flow"]["reset"]["version"] == "2"
    assert main(["apply", str(plan), "--yes"]) == 0
    (report,) = diagnose_pipeline(str(storage), spark=["4.3"])
    assert "CD803" not in {str(f.code) for f in report.verdict.findings}
    assert _verdict(storage, "merged/merged_a") == ("COMPLETED", "STARTS new batch 2", "2")


def test_apply_refuses_a_reset_once_the_flow_changed(tmp_path, capsys):
    storage = _project(tmp_path, "offsets-sparse")
    flow = storage / FLOWS / "events/events"
    code, plan = _reset(tmp_path, flow)
    assert code == 0
    (flow / "1").mkdir()  # spark-pipelines (or a full refresh) made version 1 meanwhile
    (flow / "1" / "metadata").write_text('{"id":"4b0c1b0e-3c2a-4b6e-9a47-5f6a2d7c9e01"}')
    assert main(["apply", str(plan), "--yes"]) != 0
    assert sorted(p.name for p in (flow / "1").iterdir()) == ["metadata"]


def test_reset_flow_takes_a_flow_directory_only(tmp_path, capsys):
    storage = _project(tmp_path, "offsets-sparse")
    code = main(["plan", str(storage / FLOWS / "events/events/0"), "--reset-flow"])
    assert code != 0 and "--reset-flow takes a pipeline flow directory" in capsys.readouterr().err


def test_the_tool_directory_beside_a_flow_is_no_flow() -> None:
    layout = pipeline_layout(
        [f"{FLOWS}/t/f/0", f"{FLOWS}/t/f.checkpoint-doctor/abc"], [f"{FLOWS}/t/f/0/metadata"]
    )
    assert layout is not None and [f.name for f in layout.flows] == ["t/f"]


def test_copied_paths_stand_offsets_n_in_for_a_lost_n_minus_1() -> None:
    files = ["offsets/1", "commits/0", "commits/1", "sources/0/0", "sources/0/.0.crc", "sources/0/1"]
    assert copied_paths(files, 1) == [
        ("offsets/0", "offsets/1"),
        ("offsets/1", "offsets/1"),
        ("commits/1", "commits/1"),
        ("sources/0/0", "sources/0/0"),
        ("sources/0/1", "sources/0/1"),
    ]
    assert copied_paths(["offsets/0", "commits/0"], 0) == [
        ("offsets/0", "offsets/0"),
        ("commits/0", "commits/0"),
    ]


@pytest.mark.parametrize(
    "bad",
    [
        {"source": "1", "batch": 1, "version": "1", "copies": []},
        {"source": "0", "batch": 1, "version": "1", "copies": [["../x", "offsets/1", "s"]]},
        {"source": "0", "batch": 1, "version": "1", "copies": [], "start": "newest"},
    ],
)
def test_a_malformed_reset_request_is_refused(bad) -> None:
    from checkpoint_doctor.errors import PlanFormatError

    with pytest.raises(PlanFormatError):
        ResetFlow.from_dict(bad)


def test_the_python_api_plans_the_reset_the_cli_plans(tmp_path, capsys):
    from checkpoint_doctor.api import plan_reset_flow

    storage = _project(tmp_path, "offsets-sparse")
    flow = storage / FLOWS / "events/events"
    plan = plan_reset_flow(str(flow), spark="4.3", live_window_s=0)
    code, path = _reset(tmp_path, flow)
    assert code == 0
    written = json.loads(path.read_text())
    assert [s.to_dict() for s in plan.steps] == written["steps"]
    assert plan.request["reset_flow"] == written["request"]["reset_flow"]


def test_a_reset_from_the_earliest_needs_consent_and_sends_the_file_source_back_to_its_start(
    tmp_path, capsys
):
    """--reset-start earliest: merged_a's file source (the events table read as a stream) starts again
    from an empty source log at batch 2: the files it had read are named and counted, and read again
    only with --accept-duplicates; apply and undo as usual."""
    storage = _project(tmp_path, "healthy")
    flow = storage / FLOWS / "merged/merged_a"
    code, plan = _reset(tmp_path, flow, "--reset-start", "earliest")
    err = capsys.readouterr().err
    assert code != 0 and not plan.exists()
    assert "reads again the 2 file(s) of 2 source log entries version 0 had read" in err
    assert "--accept-duplicates" in err
    code, plan = _reset(tmp_path, flow, "--reset-start", "earliest", "--accept-duplicates")
    out = capsys.readouterr().out
    assert code == 0, out
    doc = json.loads(plan.read_text())
    assert doc["request"]["reset_flow"]["start"] == "earliest"
    assert doc["request"]["reset_flow"]["rewound"] == [0]
    assert doc["expected"]["consequences"]["duplicates"] is True
    assert doc["expected"]["consequences"]["data_loss"] is False
    assert main(["apply", str(plan), "--yes"]) == 0
    capsys.readouterr()
    new = flow / "1"
    for name in ("offsets/0", "offsets/1"):
        assert (new / name).read_text().splitlines()[2] == '{"logOffset":-1}'
    assert not (new / "sources").exists()  # an empty source log: no file seen
    assert (new / "commits/1").read_bytes() == (flow / "0/commits/1").read_bytes()
    assert _verdict(storage, "merged/merged_a")[:2] == ("COMPLETED", "STARTS new batch 2")
    journal = next((flow.parent / "merged_a.checkpoint-doctor").glob("*/journal.jsonl"))
    assert main(["undo", str(journal), "--yes"]) == 0
    assert sorted(p.name for p in flow.iterdir()) == ["0"]


def test_a_reset_from_the_earliest_of_a_flow_without_a_file_source_is_refused(tmp_path, capsys):
    storage = _project(tmp_path, "healthy")
    code, plan = _reset(
        tmp_path, storage / FLOWS / "events/events", "--reset-start", "earliest", "--accept-duplicates"
    )
    assert code != 0 and not plan.exists()
    assert "reads no file source" in capsys.readouterr().err


def test_reset_start_goes_with_reset_flow_only(tmp_path, capsys):
    storage = _project(tmp_path, "healthy")
    code = main(["plan", str(storage / FLOWS / "merged/merged_a/0"), "--reset-start", "earliest"])
    assert code != 0
    assert "--reset-start and --accept-duplicates go with --reset-flow" in capsys.readouterr().err


def test_the_python_api_plans_the_earliest_reset_the_cli_plans(tmp_path, capsys):
    from checkpoint_doctor.api import plan_reset_flow
    from checkpoint_doctor.errors import RefusedError

    storage = _project(tmp_path, "healthy")
    flow = storage / FLOWS / "merged/merged_a"
    with pytest.raises(RefusedError):
        plan_reset_flow(str(flow), spark="4.3", live_window_s=0, start="earliest")
    plan = plan_reset_flow(str(flow), spark="4.3", live_window_s=0, start="earliest", accept_duplicates=True)
    code, path = _reset(tmp_path, flow, "--reset-start", "earliest", "--accept-duplicates")
    assert code == 0
    written = json.loads(path.read_text())
    assert [s.to_dict() for s in plan.steps] == written["steps"]
    assert plan.request["reset_flow"] == written["request"]["reset_flow"]


def test_a_reset_from_the_latest_skips_the_files_that_arrived_since_with_consent(tmp_path, capsys):
    """--reset-start latest: events' sink log gained a file merged_a never read; the new version's
    source log gets one more entry listing it (FileStreamSource then counts it seen), its offsets
    name that entry, and the plan refuses without --accept-data-loss (the file's rows are skipped)."""
    storage = _project(tmp_path, "healthy")
    log = storage.parent / "warehouse" / "events" / "_spark_metadata"
    (log / "2").write_text((log / "1").read_text().replace("part-00000-", "part-00002-"))
    flow = storage / FLOWS / "merged/merged_a"
    code, plan = _reset(tmp_path, flow, "--reset-start", "latest")
    err = capsys.readouterr().err
    assert code != 0 and not plan.exists()
    assert "1 file(s) of the table(s) read are skipped" in err and "--accept-data-loss" in err
    code, plan = _reset(tmp_path, flow, "--reset-start", "latest", "--accept-data-loss")
    out = capsys.readouterr().out
    assert code == 0, out
    doc = json.loads(plan.read_text())
    assert doc["request"]["reset_flow"]["skipped_files"] == 1
    assert doc["expected"]["consequences"]["data_loss"] is True
    assert main(["apply", str(plan), "--yes"]) == 0
    capsys.readouterr()
    new = flow / "1"
    entry = (new / "sources/0/2").read_text().splitlines()
    assert entry[0] == "v1" and len(entry) == 2 and "part-00002-" in entry[1] and '"batchId":2' in entry[1]
    for name in ("offsets/0", "offsets/1"):
        assert (new / name).read_text().splitlines()[2] == '{"logOffset":2}'
    assert _verdict(storage, "merged/merged_a")[:2] == ("COMPLETED", "STARTS new batch 2")
    journal = next((flow.parent / "merged_a.checkpoint-doctor").glob("*/journal.jsonl"))
    assert main(["undo", str(journal), "--yes"]) == 0
    assert sorted(p.name for p in flow.iterdir()) == ["0"]


def test_a_refused_reset_prints_the_command_with_every_consent_it_needs_and_it_runs(
    tmp_path, capsys, monkeypatch
):
    """A stateful flow reset from the earliest needs two consents (state lost, rows read again): the
    refusal names both losses and ends in one command with both flags, which plans the reset as printed."""
    import shlex

    storage = _project(tmp_path, "state-deleted")
    monkeypatch.chdir(tmp_path)
    flow = Path(FLOWS) / "joined/joined"
    argv = ["plan", str(storage.relative_to(tmp_path) / flow), "--reset-flow", "--reset-start", "earliest"]
    code = main([*argv, "--spark", "4.3", "--live-window", "0"])
    err = capsys.readouterr().err
    assert code == 32 and len(err.strip().splitlines()) == 1, err
    assert "duplicates" in err and "stream-stream joins lose the rows they buffered" in err
    printed = err.split("to reset it anyway: checkpoint-doctor ", 1)[1].strip()
    words = shlex.split(printed)
    assert {"--accept-data-loss", "--accept-duplicates", "--reset-start"} <= set(words)
    assert words[-2:] == ["-o", "reset-joined-joined.json"]
    assert main(words) == 0
    assert (tmp_path / "reset-joined-joined.json").exists()
    assert main(["apply", "reset-joined-joined.json", "--yes"]) == 0
    assert _verdict(storage, "joined/joined")[0] == "COMPLETED"
