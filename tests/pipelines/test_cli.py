"""The command line on a pipeline's storage root and on a flow directory: the live version picked and
named, older versions noted as history and never judged, the JSON as its schema says (built from
checkpoints real Spark 4.3.0 wrote, laid out as spark-pipelines lays its flows out)."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from checkpoint_doctor.cli import main
from tests.cli.test_schemas import validate
from tests.conftest import FIXTURES

FLOWS = "_checkpoints/spark_catalog/default"


def _storage(tmp_path: Path) -> Path:
    """events/events at versions 0 (damaged: metadata gone) and 1 (healthy, live); other/other at 0."""
    storage = tmp_path / "storage"
    shutil.copytree(
        FIXTURES / "spark-4.3.0" / "metadata-missing" / "checkpoint", storage / FLOWS / "events/events/0"
    )
    shutil.copytree(
        FIXTURES / "spark-4.3.0" / "stateless" / "checkpoint", storage / FLOWS / "events/events/1"
    )
    shutil.copytree(FIXTURES / "spark-4.3.0" / "stateless" / "checkpoint", storage / FLOWS / "other/other/0")
    return storage


def test_diagnose_on_a_flow_directory_judges_its_live_version_and_says_so(tmp_path, capsys):
    storage = _storage(tmp_path)
    flow = storage / FLOWS / "events/events"
    code = main(["diagnose", str(flow), "--spark", "4.3", "--live-window", "0"])
    out, _ = capsys.readouterr()
    assert code == 0, out
    assert "Pipeline flow events/events: version 1 is live" in out and "0 older, never read again" in out
    main(["diagnose", str(flow), "--spark", "4.3", "--live-window", "0", "--format", "json"])
    doc = json.loads(capsys.readouterr()[0])
    validate("diagnose", doc)
    assert doc["result"]["pipeline_flow"]["version"] == "1"
    assert doc["result"]["checkpoint"].endswith("/events/events/1")


def test_diagnose_on_the_storage_root_judges_every_live_version_only(tmp_path, capsys):
    storage = _storage(tmp_path)
    code = main(["diagnose", str(storage), "--spark", "4.3", "--format", "json"])
    doc = json.loads(capsys.readouterr()[0])
    validate("diagnose", doc)
    (line,) = doc["result"]["lines"]
    assert line["run"] == "COMPLETED"
    assert {f["pipeline_flow"]: f["next_run"] for f in line["flows"]} == {
        "events/events": "COMPLETED",
        "other/other": "COMPLETED",
    }
    # Version 0's missing metadata is history: an info finding, never the error Spark would print.
    assert [f["code"] for f in line["findings"]] == ["CD802"]
    assert code == 0


@pytest.mark.parametrize("output_format", ["table", "json"])
def test_audit_notes_older_versions_as_history_and_adds_the_pipeline(tmp_path, capsys, output_format):
    storage = _storage(tmp_path)
    code = main(["audit", str(storage), "--spark", "4.3", "--live-window", "0", "--format", output_format])
    out, _ = capsys.readouterr()
    if output_format == "json":
        doc = json.loads(out)
        validate("audit", doc)
        paths = [r["path"] for r in doc["result"]["records"]]
        assert f"{FLOWS}/events/events/0" not in paths and f"{FLOWS}/events/events/1" in paths
        notes = [n for n in doc["result"]["notes"] if n["kind"] == "pipeline-history"]
        assert [n["path"] for n in notes] == [f"{FLOWS}/events/events/0"]
        assert doc["result"]["pipelines"][0]["lines"][0]["run"] == "COMPLETED"
    else:
        assert "Next spark-pipelines run" in out and "events/events" in out
    # Without the pipeline, version 0 (no metadata: Spark 4.3 refuses it) would be an error (4).
    assert code == 0, out


def test_a_join_flow_whose_state_is_gone_gets_a_printed_plan_that_resets_its_four_stores(tmp_path, capsys):
    """The pipeline's code says joined/joined is a stream-stream join: the printed plan command tells
    ``plan`` so (its checkpoint, state/ gone, no longer does), and the plan it makes resets the join's
    four stores on both partitions, not the ``default`` store Spark would never read (sdp_fixtures.py's
    state-deleted repair: with ``0:default`` only, spark-pipelines failed on left-keyToNumValues)."""
    shutil.copytree(FIXTURES / "sdp" / "spark-4.3.0" / "state-deleted", tmp_path / "p")
    storage = tmp_path / "p" / "storage"
    main(["diagnose", str(storage), "--spark", "4.3"])
    out = capsys.readouterr()[0]
    line = next(x for x in out.splitlines() if x.strip().startswith("checkpoint-doctor plan "))
    argv = shlex.split(line.strip())[1:]
    assert "--stateful" in argv and "--state-store=0:right-keyWithIndexToValue" in argv, line
    plan_file = tmp_path / "plan.json"
    code = main([*argv[: argv.index("-o")], "--live-window", "0", "--accept-data-loss", "-o", str(plan_file)])
    out = capsys.readouterr()[0]
    assert code == 0, out
    written = {s["path"] for s in json.loads(plan_file.read_text())["steps"]}
    assert {p.removeprefix("state/").rsplit("/", 1)[0] for p in written} == {
        f"0/{part}/{side}-{kind}"
        for part in (0, 1)
        for side in ("left", "right")
        for kind in ("keyToNumValues", "keyWithIndexToValue")
    }, written


def test_audit_judges_a_pipeline_flow_as_its_code_says_not_assumed_stateless(tmp_path, capsys):
    """joined/joined's state/ deleted (recorded: the next spark-pipelines run FAILED it): the
    pipeline's SQL says it joins two streams, so audit's own record of its live version fails too,
    and no flow of the pipeline is "assumed stateless"."""
    from tests.pipelines.test_recorded_runs import SDP, install

    storage = install(SDP / "spark-4.3.0" / "state-deleted", tmp_path / "project")
    code = main(["audit", str(storage), "--spark", "4.3", "--live-window", "0"])
    out = capsys.readouterr().out
    assert code == 4, out
    head = out.split("By verdict")[0]
    assert "assumed stateless" not in head
    assert "_checkpoints/spark_catalog/default/joined/joined/0" in head
    assert "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY" in head


def _changed_project(fixture: Path, at: Path) -> Path:
    """The fixture's pipeline code, with merged_b's flow gaining a dropDuplicates (a new stateful
    operator): the code the next run would run."""
    shutil.copytree(fixture / "transformations", at / "transformations")
    shutil.copy2(fixture / "spark-pipeline.yml", at / "spark-pipeline.yml")
    flows = at / "transformations" / "flows.py"
    text = flows.read_text()
    changed = text.replace('.where("value % 2 = 1")', '.where("value % 2 = 1").dropDuplicates(["value"])')
    assert changed != text
    flows.write_text(changed)
    return at / "spark-pipeline.yml"


def test_job_names_the_pipeline_code_the_next_run_runs(tmp_path, capsys):
    """diagnose <storage root> --job <spark-pipeline.yml>: merged_b's code gained a stateful operator
    its live checkpoint never ran: the flow is judged stateful (CD805), and fails."""
    from tests.pipelines.test_recorded_runs import SDP, install

    fixture = SDP / "spark-4.3.0" / "healthy"
    storage = install(fixture, tmp_path / "project")
    spec = _changed_project(fixture, tmp_path / "changed")
    assert main(["diagnose", str(storage), "--spark", "4.3", "--format", "json"]) == 1  # CD804 only
    (line,) = json.loads(capsys.readouterr().out)["result"]["lines"]
    assert {f["pipeline_flow"]: f["next_run"] for f in line["flows"]}["merged/merged_b"] == "COMPLETED"
    code = main(["diagnose", str(storage), "--spark", "4.3", "--job", str(spec), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    validate("diagnose", doc)
    (line,) = doc["result"]["lines"]
    flows = {f["pipeline_flow"]: f for f in line["flows"]}
    assert code == 4 and flows["merged/merged_b"]["next_run"] == "FAILED"
    assert "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY" in flows["merged/merged_b"]["error"]
    assert [f["code"] for f in line["findings"] if f["code"] == "CD805"] == ["CD805"]
    # The project directory names the same code; a directory without a spec is refused.
    assert main(["diagnose", str(storage), "--spark", "4.3", "--job", str(spec.parent)]) == 4
    capsys.readouterr()
    assert main(["diagnose", str(storage), "--spark", "4.3", "--job", str(tmp_path)]) != 0
    assert "names no pipeline spec" in capsys.readouterr().err


def test_a_join_whose_state_was_deleted_is_told_by_its_code(tmp_path, capsys):
    from tests.pipelines.test_recorded_runs import SDP, install

    storage = install(SDP / "spark-4.3.0" / "state-deleted", tmp_path / "project")
    main(["diagnose", str(storage), "--spark", "4.3"])
    out = capsys.readouterr().out
    assert (
        "CD805 pipeline-code-stateful-no-state" in out
        and "joined/joined: the pipeline's code joins two streams" in out
    )


def test_a_reset_reads_the_code_job_names(tmp_path, capsys):
    """The reset printed beside a flow judged with --job carries it: the new version's dedup store
    (operator 0, 'default', both partitions) starts empty, as the code that will run needs."""
    from tests.pipelines.test_recorded_runs import SDP, install

    fixture = SDP / "spark-4.3.0" / "healthy"
    storage = install(fixture, tmp_path / "project")
    spec = _changed_project(fixture, tmp_path / "changed")
    main(["diagnose", str(storage), "--spark", "4.3", "--job", str(spec)])
    line = next(x for x in capsys.readouterr().out.splitlines() if "--reset-flow" in x)
    argv = shlex.split(line.strip())[1:]
    assert argv[argv.index("--job") + 1] == str(spec)
    plan = tmp_path / "reset.json"
    code = main([*argv[: argv.index("-o")], "--live-window", "0", "--accept-data-loss", "-o", str(plan)])
    assert code == 0, capsys.readouterr()
    steps = [s["path"] for s in json.loads(plan.read_text())["steps"]]
    assert [p for p in steps if "/state/" in p] == ["1/state/0/0/2.snapshot", "1/state/0/1/2.snapshot"]
