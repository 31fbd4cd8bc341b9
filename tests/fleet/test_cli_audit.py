"""``checkpoint-doctor audit`` end to end through ``checkpoint_doctor.cli.main``: formats, exit codes,
one-line errors, the HTML file, and the progress bar on a terminal only."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from checkpoint_doctor.cli import main
from checkpoint_doctor.render.documents import schema_version
from tests.conftest import REPO
from tests.fleet.conftest import CHECKPOINTS, DELTA_TABLE, GARBAGE_CHECKPOINT, SINKS, Fleet, place_fleet

FIXED = ["--live-window", "0"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_table_says_which_checkpoints_will_not_restart(local_fleet: Fleet, capsys) -> None:
    code, out, err = run(capsys, "audit", local_fleet.root, *FIXED)

    assert (code, err) == (5, "")
    lines = out.splitlines()
    assert "Found             6 checkpoints, 1 file sink output" in lines
    assert "Will not restart  2" in lines
    assert "Verdicts          2 error, 0 unreadable, 1 warning, 4 ok" in lines
    # One block per directory: the verdict and its path relative to the root, then its facts.
    blocks = out.split("(directories relative to " + local_fleet.root + ")\n")[1].split("\n\n")[0]
    attention = re.split(r"\n(?=\S)", blocks)
    assert [block.split()[0] for block in attention] == ["error", "error", "warning"]
    assert not any(local_fleet.root in block for block in attention)
    assert any(
        block.split()[1:3] == ["team", "b/broken"] and "FAILS" in block and "CD103" in block
        for block in attention
    )
    assert any(GARBAGE_CHECKPOINT in block for block in attention)
    assert any("team c/commits two behind" in block and "CD105" in block for block in attention)
    assert "Needs attention (4 ok not shown; -v or --format jsonl lists every record)" in lines
    assert any(line.startswith("CD103 ") and " error " in line for line in lines)
    # the Delta table was read to pair it: counted in the head, not listed as skipped (-v lists it)
    assert "Delta             1 Delta table under the roots: 0 paired as a source, 0 as a sink" in lines
    assert not any(line.startswith(DELTA_TABLE + " ") for line in lines)
    _, verbose, _ = run(capsys, "audit", local_fleet.root, "-v", *FIXED)
    assert any(line.startswith(DELTA_TABLE + " ") for line in verbose.splitlines())


def test_json_is_one_document_with_records_summary_and_notes(local_fleet: Fleet, capsys) -> None:
    code, out, _ = run(capsys, "audit", local_fleet.root, "--format", "json", *FIXED)

    doc = json.loads(out)
    assert code == 5
    assert (doc["schema_version"], doc["command"]) == (schema_version("audit"), "audit")
    result = doc["result"]
    assert result["roots"] == [local_fleet.root]
    assert result["summary"]["exit_code"] == 5
    assert len(result["records"]) == len(CHECKPOINTS) + 1 + len(SINKS)
    assert {r["schema_version"] for r in result["records"]} == {schema_version("audit-record")}
    assert {n["kind"] for n in result["notes"]} >= {"delta-table", "not-a-checkpoint", "stray-files"}
    broken = next(r for r in result["records"] if r["path"] == "team b/broken tail")
    assert broken["verdict"] == "error"
    assert broken["restart"]["outcome"] == "fails"
    assert broken["diagnosis"]["exit_code"] == 4


def test_jsonl_is_one_record_per_line_then_a_summary_line(local_fleet: Fleet, capsys) -> None:
    code, out, err = run(capsys, "audit", local_fleet.root, "--format", "jsonl", *FIXED)

    lines = [json.loads(line) for line in out.splitlines()]
    assert (code, err) == (5, "")
    assert {line["kind"] for line in lines[:-1]} == {"checkpoint", "sink"}
    assert len(lines) == len(CHECKPOINTS) + 1 + len(SINKS) + 1
    summary = lines[-1]
    assert summary["kind"] == "summary"
    assert summary["exit_code"] == 5
    assert summary["total"] == len(lines) - 1
    # Written as each directory finishes: checkpoints first, then the sink outputs they were checked with.
    kinds = [line["kind"] for line in lines[:-1]]
    assert kinds == sorted(kinds)
    sink = lines[-2]
    assert sink["kind"] == "sink" and sink["paired_with"] == [local_fleet.url("team b/out/_checkpoint")]


@pytest.mark.s3
def test_on_s3_through_the_cli(tmp_path, request, capsys) -> None:
    fleet = place_fleet("s3", tmp_path, request)
    endpoint = fleet.options["client_kwargs"]["endpoint_url"]

    code, out, err = run(
        capsys,
        "audit",
        fleet.root,
        "--format",
        "jsonl",
        "--storage-option",
        f"endpoint_url={endpoint}",
        "--jobs",
        "4",
        *FIXED,
    )

    records = [json.loads(line) for line in out.splitlines()][:-1]
    assert (code, err) == (5, "")
    assert fleet.url("team b/broken tail") in {r["url"] for r in records}
    assert fleet.s3 is not None
    assert fleet.s3.server.log.kinds()["ListObjectsV2"] == 1


def test_html_file_is_written_alongside_the_table(local_fleet: Fleet, tmp_path: Path, capsys) -> None:
    page = tmp_path / "report dir" / "audit.html"
    page.parent.mkdir()

    code, out, err = run(capsys, "audit", local_fleet.root, "--html", str(page), *FIXED)

    text = page.read_text(encoding="utf-8")
    assert (code, err) == (5, "")
    assert "Will not restart" in out
    assert text.startswith("<!doctype html>")
    for rel in [*CHECKPOINTS, GARBAGE_CHECKPOINT]:
        assert local_fleet.url(rel) in text
    assert text.count("<svg") >= len(CHECKPOINTS)


def test_an_unwritable_html_path_is_a_one_line_usage_error(
    local_fleet: Fleet, tmp_path: Path, capsys
) -> None:
    code, _, err = run(capsys, "audit", local_fleet.root, "--html", str(tmp_path / "no dir" / "x.html"))
    assert code == 2
    assert err.count("\n") == 1
    assert "cannot write" in err and "no dir" in err and "--html" in err


def test_a_missing_root_is_recorded_as_unreadable_with_exit_8(tmp_path: Path, capsys) -> None:
    missing = str(tmp_path / "gone")
    code, out, err = run(capsys, "audit", missing, "--format", "jsonl")

    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 8
    assert err == ""
    assert (lines[0]["kind"], lines[0]["verdict"], lines[0]["exit_code"]) == ("root", "unreadable", 8)
    assert missing in lines[0]["error"]["message"]
    assert lines[-1]["kind"] == "summary"


def test_a_prefix_without_any_checkpoint_exits_8_with_one_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.csv").write_text("a,b\n")

    code, out, err = run(capsys, "audit", str(tmp_path / "data"))

    assert code == 8
    assert err.count("\n") == 1
    assert "no checkpoint or file sink output found under" in err and "check the root or prefix" in err
    assert "no checkpoint, file sink output or Delta table in 1 files" in " ".join(out.split())


def test_on_spark_without_pyspark_names_the_spark_extra(local_fleet: Fleet, capsys) -> None:
    code, out, err = run(capsys, "audit", local_fleet.root, "--on-spark")
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert "pyspark" in err and "pip install 'checkpoint-doctor[spark]'" in err
    assert "Traceback" not in err

    code, out, err = run(capsys, "audit", local_fleet.root, "--spark-master", "local[2]", "--format", "json")
    assert code == 2
    assert json.loads(out)["error"]["type"] == "MissingDependencyError"


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--jobs", "0"], "--jobs"),
        (["--format", "xml"], "--format"),
        (["--storage-option", "novalue"], "is not key=value"),
    ],
)
def test_bad_arguments_are_usage_errors(local_fleet: Fleet, capsys, args: list[str], text: str) -> None:
    code, _, err = run(capsys, "audit", local_fleet.root, *args)
    assert code == 2
    assert text in err


def _run_on_terminal(*args: str) -> tuple[int, bytes, bytes]:
    """Run the CLI with stderr on a pseudo terminal (stdout piped); return code, stdout, terminal bytes."""
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "checkpoint_doctor", *args], stdout=subprocess.PIPE, stderr=slave, env=env
    )
    os.close(slave)
    terminal = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError("no output on the terminal for 60 s")
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        terminal += chunk
    out = proc.stdout.read() if proc.stdout else b""
    code = proc.wait(timeout=60)
    os.close(master)
    return code, out, terminal


def test_progress_on_a_terminal_for_listing_and_diagnosing_in_every_format(local_fleet: Fleet) -> None:
    code, out, terminal = _run_on_terminal("audit", local_fleet.root, "--jobs", "1", *FIXED)
    total = len(CHECKPOINTS) + 1 + len(SINKS)
    assert code == 5
    # click.progressbar draws it (issue 36: it was hand-rolled), the cursor hidden while it runs
    assert re.search(rb"\r(\x1b\[\?25l)?audit \[[#.]{28}\] ", terminal), terminal
    assert f"audit [{'#' * 28}] {total}/{total}, 3 need attention".encode() in terminal
    assert terminal.endswith(b"\n")  # click leaves the bar's last state on its line, on stderr
    assert b"Will not restart" in out
    assert b"audit [" not in out

    assert f"audit: listing {local_fleet.root} ...".encode() in terminal

    code, out, terminal = _run_on_terminal("audit", local_fleet.root, "--format", "jsonl", *FIXED)
    assert code == 5
    assert b"audit: listed " in terminal and f"] {total}/{total}".encode() in terminal
    assert json.loads(out.splitlines()[-1])["kind"] == "summary"

    code, out, terminal = _run_on_terminal("audit", local_fleet.root, "--quiet", *FIXED)
    assert (code, out, terminal) == (5, b"", b"")


def test_include_and_exclude_leave_directories_out_with_a_note(local_fleet: Fleet, capsys) -> None:
    code, out, _ = run(
        capsys,
        "audit",
        local_fleet.root,
        "--format",
        "json",
        "--include",
        "team b/*",
        "--exclude",
        "*/broken tail",
        *FIXED,
    )

    result = json.loads(out)["result"]
    assert code == 0
    assert sorted((r["kind"], r["path"]) for r in result["records"]) == [
        ("checkpoint", "team b/out/_checkpoint"),
        ("sink", "team b/out"),
    ]
    excluded = {n["path"]: n["message"] for n in result["notes"] if n["kind"] == "excluded"}
    assert "--exclude '*/broken tail'" in excluded["team b/broken tail"]
    assert "matches no --include" in excluded["team c/commits two behind"]


def test_the_backups_of_an_apply_are_not_reported_as_a_checkpoint(tmp_path: Path, capsys) -> None:
    from tests.scenarios import all_scenarios

    root = tmp_path / "fleet"
    scenario = next(s for s in all_scenarios() if s.id == "spark-4.3.0/offsets-latest-empty")
    cp = scenario.copy_to(root / "orders")
    plan = tmp_path / "plan.json"
    assert run(capsys, "plan", str(cp), "-o", str(plan), *FIXED)[0] == 0
    assert run(capsys, "apply", str(plan), "--yes")[0] == 0
    assert (cp.parent / "checkpoint.checkpoint-doctor").is_dir()
    code, out, _ = run(capsys, "audit", str(root), "--format", "json", *FIXED)
    result = json.loads(out)["result"]
    assert [r["checkpoint"] for r in result["records"]] == [str(cp)]
    assert code == 0
    tool = "orders/checkpoint.checkpoint-doctor"
    assert any(n["kind"] == "checkpoint-doctor-backups" and n["path"] == tool for n in result["notes"])
