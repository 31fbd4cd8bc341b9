"""The operator-facing contract: hints that run as printed, exit codes you can trust,
streaming audits, metrics, paths, terminal manners (JSON Schemas: tests/test_schemas.py; the HTML
page: tests/fleet/test_html.py; the Python API: tests/test_api.py)."""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import click
import pytest
from prometheus_client.parser import text_string_to_metric_families

from checkpoint_doctor.cli import EXAMPLES, cli, main
from checkpoint_doctor.cli import outputs as outputs_module
from checkpoint_doctor.exit_codes import ExitCode
from tests.conftest import FIXTURES, REPO
from tests.s3.conftest import S3
from tests.storage.builders import read_files, write_files

SPARK = FIXTURES / "spark-4.3.0"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def printed_command(text: str, verb: str) -> list[str]:
    """Return the words of the first suggested ``checkpoint-doctor VERB ...`` command (to the line's end)."""
    marker = f"checkpoint-doctor {verb} "
    line = next(line for line in text.splitlines() if marker in line)
    return shlex.split(line[line.index(marker) :])[1:]


def copy(tmp_path: Path, scenario: str, name: str = "ckpt") -> Path:
    return write_files(tmp_path / name, read_files(SPARK / scenario / "checkpoint"))


# ------------------------------------------------------------------------------------- 13.1 hints


def test_a_narrowed_diagnose_suggests_a_plan_that_plans_the_same_restart(
    tmp_path, capsys, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the printed command writes plan.json here
    cp = copy(tmp_path, "async-tail")
    code, out, _ = run(
        capsys, "diagnose", str(cp), "--mode", "micro-batch", "--spark", "4.3", "--live-window", "0"
    )
    assert code == 4
    plan_args = printed_command(out, "plan")
    assert plan_args[:2] == ["plan", str(cp)]
    assert {"--mode", "micro-batch", "--spark", "4.3", "--live-window", "0"} <= set(plan_args)
    code, plan_out, _ = run(capsys, *plan_args, "--format", "json")
    plan = json.loads(plan_out)["result"]
    assert plan["addresses"] == ["CD101"] and plan["steps"]  # not "nothing to do"


@pytest.mark.s3
def test_hints_on_s3_carry_the_endpoint_and_never_a_secret(s3: S3, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret")  # the secret the command line repeats
    for rel, data in read_files(SPARK / "async-tail" / "checkpoint").items():
        s3.fs.pipe(s3.key(f"ckpt/{rel}"), data)
    url = s3.url("ckpt")
    endpoint = f"endpoint_url={s3.endpoint}"
    code, out, err = run(
        capsys,
        "diagnose",
        url,
        "--storage-option",
        endpoint,
        "--storage-option",
        "key=testing",
        "--storage-option",
        "secret=testing-secret",
        "--live-window",
        "0",
    )
    assert code == 1 and "testing-secret" not in out, err
    plan_args = printed_command(out, "plan")
    assert plan_args[plan_args.index("--storage-option") + 1] == endpoint
    monkeypatch.chdir(tmp_path)
    plan_file = tmp_path / "plan.json"
    code, out, _ = run(capsys, *plan_args, "-o", str(plan_file))
    apply_args = printed_command(out, "apply")
    assert endpoint in apply_args and "testing-secret" not in " ".join(apply_args)
    code, out, err = run(capsys, *apply_args, "--dry-run")
    assert code == 0, err  # reaches the moto server, not AWS


# -------------------------------------------------------------------------------- 13.2 exit codes


def test_the_docs_exit_code_table_is_the_code() -> None:
    page = (REPO / "docs" / "exit-codes.md").read_text()
    section = page.split("# Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| ([A-Z_]+) \| (.+) \|$", section, flags=re.M)
    assert [(int(c), n) for c, n, _ in rows] == [(int(e), e.name) for e in ExitCode]


def test_an_empty_root_says_8_in_json_and_exits_8(tmp_path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    code, out, _ = run(capsys, "audit", str(tmp_path / "empty"), "--format", "json")
    doc = json.loads(out)
    assert code == doc["exit_code"] == doc["result"]["summary"]["exit_code"] == ExitCode.UNREADABLE


@pytest.mark.parametrize("option", ["no-equals-sign", "=value", "a..b=1"])
def test_a_bad_storage_option_is_a_usage_error(option, capsys) -> None:
    code, out, err = run(
        capsys, "inspect", str(SPARK / "stateless" / "checkpoint"), "--storage-option", option
    )
    assert code == ExitCode.USAGE and out == "" and err.count("\n") == 1


def test_a_refusal_has_its_own_code(tmp_path, capsys) -> None:
    cp = copy(tmp_path, "offsets-latest-empty")
    plan_file = tmp_path / "plan.json"
    run(capsys, "plan", str(cp), "-o", str(plan_file), "--live-window", "0")
    (cp / "offsets" / "3").write_bytes(b"v1\nchanged since the plan\n")
    code, out, err = run(capsys, "apply", str(plan_file), "--yes", "--format", "json")
    doc = json.loads(out)
    assert code == doc["exit_code"] == ExitCode.REFUSED == 32
    assert doc["error"]["type"] == "PreconditionFailedError" and "precondition" in err


# -------------------------------------------------------------------------------- 13.3 documents


def test_errors_name_the_command_and_global_options_work_after_it(capsys) -> None:
    code, out, _ = run(capsys, "--log-level", "debug", "inspect", "/nope", "--format", "json")
    assert (code, json.loads(out)["command"]) == (8, "inspect")
    code, out, err = run(capsys, "inspect", "/nope", "--format", "json", "--debug", "--log-level", "error")
    assert (code, json.loads(out)["command"]) == (8, "inspect")
    assert "Traceback" in err  # --debug after the command shows the traceback


def test_the_document_time_is_the_cli_clock(monkeypatch, capsys) -> None:
    monkeypatch.setattr("checkpoint_doctor.cli.app.now_ms", lambda: 1_767_225_600_000)
    _, out, _ = run(capsys, "explain", "CD101", "--format", "json")
    doc = json.loads(out)
    assert doc["generated_at"] == "2026-01-01T00:00:00.000Z" and doc["tool_version"]


# ----------------------------------------------------------------------------- 13.4 streaming


def test_ctrl_c_keeps_the_written_records_and_a_summary_marked_interrupted(
    local_fleet, monkeypatch, capsys
) -> None:
    from checkpoint_doctor.fleet import report

    seen: list[str] = []

    def interrupted_on_the_third(record, hints):
        seen.append(record.url)
        if len(seen) == 3:
            raise KeyboardInterrupt  # the operator presses Ctrl-C while the third directory finishes
        return report.next_step(record, hints)

    monkeypatch.setattr("checkpoint_doctor.fleet.run.next_step", interrupted_on_the_third)
    code, out, err = run(
        capsys, "audit", local_fleet.root, "--format", "jsonl", "--live-window", "0", "--jobs", "1"
    )
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == ExitCode.INTERRUPTED == 130
    assert [line["kind"] for line in lines] == ["checkpoint", "checkpoint", "summary"]
    assert lines[-1]["interrupted"] is True and lines[-1]["exit_code"] == 130 and lines[-1]["total"] == 2
    assert "interrupted" in err


@pytest.mark.parametrize("previous", [True, False])
def test_ctrl_c_keeps_the_previous_html_page_or_writes_one_saying_130(
    local_fleet, monkeypatch, capsys, tmp_path, previous: bool
) -> None:
    """Ctrl-C replaced the last complete page with a partial one whose header said exit
    code 5 while the process and the JSON Lines summary said 130."""
    from checkpoint_doctor.fleet import report

    page = tmp_path / "audit.html"
    if previous:
        assert run(capsys, "audit", local_fleet.root, "--html", str(page), "--live-window", "0")[0] == 5
    complete = page.read_bytes() if previous else None
    seen: list[str] = []

    def interrupted_on_the_third(record, hints):
        seen.append(record.url)
        if len(seen) == 3:
            raise KeyboardInterrupt
        return report.next_step(record, hints)

    monkeypatch.setattr("checkpoint_doctor.fleet.run.next_step", interrupted_on_the_third)
    code, out, err = run(
        capsys, "audit", local_fleet.root, "--format", "jsonl", "--html", str(page), "--force",
        "--live-window", "0", "--jobs", "1",
    )  # fmt: skip

    assert code == 130 and json.loads(out.splitlines()[-1])["exit_code"] == 130
    if previous:
        assert page.read_bytes() == complete
        assert f"--html {page} kept as it was: the audit was interrupted" in err
    else:
        text = page.read_text()
        assert "exit code 130" in text and "Interrupted: the audit was stopped" in text
        assert "exit code 5" not in text


def test_jsonl_lines_are_written_as_each_directory_finishes(local_fleet, monkeypatch, capsys) -> None:
    from checkpoint_doctor.fleet import run as fleet_run

    written_before: list[int] = []
    real = fleet_run.audit_task

    def audit_task(*args, **kwargs):
        written_before.append(sys.stdout.getvalue().count("\n") if hasattr(sys.stdout, "getvalue") else -1)
        return real(*args, **kwargs)

    monkeypatch.setattr(fleet_run, "audit_task", audit_task)
    code, _, _ = run(
        capsys, "audit", local_fleet.root, "--format", "jsonl", "--live-window", "0", "--jobs", "1"
    )
    assert code == 5
    assert written_before == list(range(len(written_before)))  # n records out before the n+1th starts


# ----------------------------------------------------------------------------- --html / --metrics


def test_a_bad_html_destination_is_refused_before_the_audit(local_fleet, s3: S3, capsys) -> None:
    code, out, err = run(capsys, "audit", local_fleet.root, "--html", "/no/such/dir/audit.html")
    assert (code, out) == (ExitCode.USAGE, "") and "does not exist" in err
    missing_bucket = "s3://no-such-bucket/audit.html"
    code, out, err = run(
        capsys,
        "audit",
        local_fleet.root,
        "--html",
        missing_bucket,
        "--storage-option",
        f"endpoint_url={s3.endpoint}",
    )
    assert (code, out) == (ExitCode.USAGE, "") and "bucket no-such-bucket does not exist" in err


@pytest.mark.s3
def test_the_html_page_goes_to_s3(local_fleet, s3: S3, capsys) -> None:
    code, _, err = run(
        capsys,
        "audit",
        local_fleet.root,
        "--live-window",
        "0",
        "--html",
        s3.url("reports/audit.html"),
        "--storage-option",
        f"endpoint_url={s3.endpoint}",
    )
    assert code == 5, err
    assert s3.fs.cat(s3.key("reports/audit.html")).startswith(b"<!doctype html>")


def test_a_failed_write_keeps_the_finished_audit(local_fleet, tmp_path, monkeypatch, capsys) -> None:
    def disk_full(path, data, mode=0o644, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outputs_module, "write_atomically", disk_full)
    code, out, err = run(
        capsys, "audit", local_fleet.root, "--live-window", "0", "--html", str(tmp_path / "a.html")
    )
    assert code == 5 | ExitCode.USAGE
    assert "Will not restart  2" in out
    saved = re.search(r"saved to (\S+)", err)
    assert saved and Path(saved.group(1)).read_text().startswith("<!doctype html>")
    os.unlink(saved.group(1))


def test_metrics_are_prometheus_text_written_atomically(local_fleet, tmp_path, monkeypatch, capsys) -> None:
    target = tmp_path / "checkpoints.prom"
    target.write_text("# an older audit\n")
    seen_during_write: list[str] = []
    real_replace = os.replace

    def replace(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
        # Relative to the directory opened once, the temporary file beside the target.
        assert src_dir_fd is not None and src_dir_fd == dst_dir_fd and "/" not in src + dst
        seen_during_write.append(target.read_text())  # the target as a reader sees it mid-write
        fd = os.open(src, os.O_RDONLY, dir_fd=src_dir_fd)
        with os.fdopen(fd) as fh:
            assert fh.read().endswith("\n")
        real_replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(outputs_module.os, "replace", replace)
    code, _, err = run(capsys, "audit", local_fleet.root, "--live-window", "0", "--metrics", str(target))
    assert code == 2 and f"--metrics {target} exists; pass --force to overwrite it" in err
    assert target.read_text() == "# an older audit\n"
    code, _, _ = run(
        capsys, "audit", local_fleet.root, "--live-window", "0", "--metrics", str(target), "--force"
    )
    assert code == 5
    assert seen_during_write == ["# an older audit\n"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o644  # node_exporter runs as another user
    families = {f.name: f for f in text_string_to_metric_families(target.read_text())}
    broken = local_fleet.url("team b/broken tail")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value for f in families.values() for s in f.samples
    }
    assert samples[("checkpoint_doctor_exit_code", (("kind", "checkpoint"), ("url", broken)))] == 4
    assert samples[("checkpoint_doctor_audit_exit_code", ())] == 5
    starts = [s for s in families["checkpoint_doctor_restart_starts"].samples if s.labels["url"] == broken]
    assert {s.labels["spark"] for s in starts} == {"3.5", "4.0", "4.1", "4.2", "4.3"}
    assert any(s.value == 0 for s in starts)
    for name in (
        "latest_offsets_batch_id",
        "latest_commit_batch_id",
        "uncommitted_batches",
        "newest_batch_age_seconds",
        "findings",
        "verdict",
    ):
        assert f"checkpoint_doctor_{name}" in families, name
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_metrics_label_values_are_escaped(tmp_path, capsys) -> None:
    odd = 'quote " back \\ slash'
    root = write_files(
        tmp_path / "fleet",
        {f"{odd}/{p}": d for p, d in read_files(SPARK / "stateless" / "checkpoint").items()},
    )
    target = tmp_path / "m.prom"
    run(capsys, "audit", str(root), "--live-window", "0", "--metrics", str(target), "-q")
    urls = {
        s.labels["url"]
        for f in text_string_to_metric_families(target.read_text())
        for s in f.samples
        if "url" in s.labels
    }
    assert urls == {f"{root}/{odd}"}


# ---------------------------------------------------------------------------------- 13.7 paths


def test_file_uris_work(tmp_path, capsys) -> None:
    cp = copy(tmp_path, "stateless", "with space")
    for url in (f"file:{cp}", f"file://{cp}", f"file://localhost{cp}", "file:" + str(cp).replace(" ", "%20")):
        code, out, err = run(capsys, "inspect", url, "--format", "json")
        assert code == 0, (url, err)
        assert json.loads(out)["result"]["checkpoint"] == str(cp)


def test_a_missing_path_suggests_near_matches(tmp_path, capsys) -> None:
    cp = copy(tmp_path, "stateless", "orders-checkpoint")
    code, _, err = run(capsys, "diagnose", str(cp).replace("orders", "order"))
    assert code == 8 and f"did you mean {cp}?" in err


# ------------------------------------------------------------------------------- 13.8 terminal


def test_text_fits_columns_80_except_the_commands_to_copy() -> None:
    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "checkpoint_doctor",
            "diagnose",
            str(SPARK / "async-tail" / "checkpoint"),
            "--live-window",
            "0",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 1
    long = [
        line
        for line in proc.stdout.splitlines()
        if len(line) > 80 and not line.startswith("  checkpoint-doctor ")
    ]
    assert long == []


def test_quiet_prints_nothing_and_verbose_lists_everything(local_fleet, capsys) -> None:
    code, out, err = run(capsys, "audit", local_fleet.root, "--live-window", "0", "-q")
    assert (code, out, err) == (5, "", "")
    code, out, _ = run(capsys, "-v", "audit", local_fleet.root, "--live-window", "0")
    assert code == 5 and "Every directory" in out and "\nok         team a/window agg/checkpoint\n" in out


def test_every_command_has_examples_in_its_help(capsys) -> None:
    names = cli.list_commands(click.Context(cli))
    assert names == [
        "inspect",
        "diagnose",
        "explain",
        "plan",
        "apply",
        "undo",
        "history",
        "audit",
        "catch-up",
    ]
    for name in names:
        assert name in EXAMPLES, name
        code = main([name, "--help"])
        out = capsys.readouterr()[0]
        assert code == 0 and "Examples:" in out and f"checkpoint-doctor {name}" in out


def test_shell_completion_script_is_produced() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "checkpoint_doctor"],
        env={**os.environ, "_CHECKPOINT_DOCTOR_COMPLETE": "bash_source"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (
        proc.returncode == 0 and "complete -o nosort -F" in proc.stdout and "checkpoint-doctor" in proc.stdout
    )


def test_a_diagnose_imports_only_what_it_uses() -> None:
    # Start-up is most of a verdict's time (scripts/bench.py --section diagnose): commands load
    # lazily, so a diagnose never imports the audit, the planner, asyncio or (for JSON) tabulate.
    cp = REPO / "fixtures" / "spark-4.3.0" / "async-tail" / "checkpoint"
    code = (
        "import sys, contextlib, io\n"
        "from checkpoint_doctor.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['diagnose', {str(cp)!r}, '--spark', '4.3', '--mode', 'micro-batch', '--format', 'json'])\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(proc.stdout.split())
    assert "checkpoint_doctor.diagnosis.restart" in loaded
    heavy = {"checkpoint_doctor.fleet", "checkpoint_doctor.planning.planner", "asyncio", "tabulate", "jinja2"}
    assert heavy & loaded == set()


def test_an_audit_imports_only_what_it_uses() -> None:
    # Issue 40 (scripts/bench.py --section audit): the CLI's imports are a fifth of a fleet audit's
    # time on the field fleet, so ``audit --format jsonl`` leaves out the HTML page, the Prometheus
    # text and the inspect report (each loaded by the option that asks for it).
    root = REPO / "fixtures" / "spark-4.3.0"
    code = (
        "import sys, contextlib, io\n"
        "from checkpoint_doctor.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main(['audit', {str(root)!r}, '--format', 'jsonl', '--live-window', '0'])\n"
        "print(code)\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    exit_code, *modules = proc.stdout.split()
    loaded = set(modules)
    assert int(exit_code) < 8 and "checkpoint_doctor.fleet.run" in loaded
    heavy = {
        "checkpoint_doctor.fleet.html",
        "checkpoint_doctor.fleet.metrics",
        "checkpoint_doctor.diagnosis.inspection",
        "jinja2",
    }
    assert heavy & loaded == set()
