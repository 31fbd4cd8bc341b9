"""``checkpoint-doctor catch-up`` without Spark: the missing-pyspark error, bad arguments, the plan's
catch-up step, ``--debug`` on a refusal, and the hints of the refusals run as printed (through the
real CLI, on a checkpoint whose path has a space)."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex

import click
import pytest
from click.testing import CliRunner

from checkpoint_doctor.cli import cli, main
from checkpoint_doctor.cli.app import CommandFailed, exit_code_for
from checkpoint_doctor.cli.catch_up import _refused
from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.errors import SparkStartError
from checkpoint_doctor.execution.catch_up.decisions import refusal_for_spark_error, timeout_refusal
from checkpoint_doctor.execution.catch_up.model import CatchUpRefusedError, Refusal
from checkpoint_doctor.exit_codes import ExitCode
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.catch_up.checkpoints import facts_for, report_for
from tests.scenarios import FIXTURES, copy_scenario


def test_without_pyspark_catch_up_names_the_spark_extra(tmp_path, capsys):
    assert importlib.util.find_spec("pyspark") is None, "the dev venv must not have pyspark for this test"
    cp = copy_scenario(FIXTURES / "spark-3.5.9" / "async-tail", tmp_path)
    code = main(["catch-up", str(cp), "--job", "examples.rate_job:build"])
    err = capsys.readouterr().err
    assert code == 2
    assert "catch-up needs the 'pyspark' package, which is not installed" in err
    assert "pip install 'checkpoint-doctor[spark]'" in err
    code = main(["catch-up", str(cp), "--job", "examples.rate_job:build", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 2 and doc["error"]["type"] == "MissingDependencyError"


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--job", "examples.rate_job"], "is not MODULE:FUNCTION or PATH.py:FUNCTION"),
        (
            ["--job", "examples.rate_job:build", "--conf", "spark.master"],
            "--conf 'spark.master' is not KEY=VALUE",
        ),
        (["--job", "examples.rate_job:build", "--batches", "0"], "Invalid value for '--batches'"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args, text, tmp_path, capsys):
    cp = copy_scenario(FIXTURES / "spark-3.5.9" / "async-tail", tmp_path)
    code = main(["catch-up", str(cp), *args])
    err = capsys.readouterr().err
    assert code == 2 and text in err
    assert "Traceback" not in err


def test_plan_records_the_catch_up_command_and_apply_tells_the_operator_to_run_it(tmp_path):
    cp = copy_scenario(FIXTURES / "spark-3.5.9" / "async-tail", tmp_path)
    plan_file = tmp_path / "plan.json"
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "plan",
            str(cp),
            "--mode",
            "micro-batch",
            "--strategy",
            "catch-up",
            "--job",
            "examples.rate_job:build",
            "-o",
            str(plan_file),
        ],
    )
    assert result.exit_code == 0, result.output
    command = f"checkpoint-doctor catch-up {cp} --job examples.rate_job:build --batches 2"
    steps = json.loads(plan_file.read_text())["steps"]
    assert [(s["kind"], s["command"]) for s in steps] == [("run", command)]
    applied = runner.invoke(cli, ["apply", str(plan_file), "--yes", "--backup-dir", str(tmp_path / "backup")])
    assert applied.exit_code == 0, applied.output
    assert f"Run this yourself next (the plan's catch-up step):\n  {command}" in applied.output
    # The command the plan records is one catch-up accepts (it stops at the missing pyspark here).
    args = command.split()[1:]
    assert main(args) == 2
    assert sorted(os.listdir(cp / "offsets")) == sorted(
        os.listdir(FIXTURES / "spark-3.5.9" / "async-tail" / "checkpoint" / "offsets")
    )


def test_the_bridge_a_refusal_prints_runs_as_printed(tmp_path, monkeypatch):
    cp = copy_scenario(FIXTURES / "spark-3.5.9" / "async-tail", tmp_path / "my checkpoints")
    snap = load_checkpoint(str(cp))
    facts = facts_for(snap, timeout_s=10)
    step = timeout_refusal(facts, report_for(facts, snap, timed_out=True)).next_step
    plan_cmd, _, apply_cmd = step.partition(": ")[2].partition(" && ")
    monkeypatch.chdir(tmp_path)
    plan_args = shlex.split(plan_cmd)
    assert plan_args[:3] == ["checkpoint-doctor", "plan", str(cp)]
    assert main(plan_args[1:]) == 0
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["checkpoint"] == str(cp) and [s["kind"] for s in plan["steps"]] == ["copy"]
    # apply asks before it writes; the tests' stdin is not a terminal, so they answer with --yes.
    assert shlex.split(apply_cmd) == ["checkpoint-doctor", "apply", "plan.json"]
    assert main([*shlex.split(apply_cmd)[1:], "--yes"]) == 0
    after = diagnose(load_checkpoint(str(cp)), DiagnoseOptions(spark="3.5", mode="micro-batch"))
    assert after.prediction.starts


def test_the_catch_up_command_a_refusal_prints_is_accepted_as_printed(tmp_path, capsys):
    cp = copy_scenario(FIXTURES / "spark-3.5.9" / "async-tail", tmp_path / "my checkpoints")
    facts = facts_for(
        load_checkpoint(str(cp)), mode="sync", timeout_s=60, master="local[2]", confs=(("a.b", "x y"),)
    )
    step = timeout_refusal(facts, report_for(facts, load_checkpoint(str(cp)), timed_out=True)).next_step
    args = shlex.split(step.partition(": ")[2])
    assert args == [
        "checkpoint-doctor",
        "catch-up",
        str(cp),
        "--job",
        "examples.rate_job:build",
        "--mode",
        "sync",
        "--timeout",
        "240",
        "--master",
        "local[2]",
        "--conf",
        "a.b=x y",
    ]
    # Every option parses: the command stops at the missing pyspark (exit 2), not at a usage error.
    assert main(args[1:]) == ExitCode.USAGE
    assert "catch-up needs the 'pyspark' package" in capsys.readouterr().err


def test_the_diagnose_command_of_a_spark_failure_runs_as_printed(tmp_path, capsys):
    cp = copy_scenario(FIXTURES / "spark-3.5.9" / "async-tail", tmp_path / "my checkpoints")
    facts = facts_for(load_checkpoint(str(cp)))
    step = refusal_for_spark_error("boom", facts, at_start=True).next_step
    args = shlex.split(step.partition(";")[0])
    assert args[1:] == ["diagnose", str(cp), "--mode", "async", "--spark", "3.5"]  # the run's restart
    assert main(args[1:]) == ExitCode.OK
    assert "Restart on Spark 3.5 (async): STARTS new batch 33" in capsys.readouterr().out


def test_debug_prints_the_jobs_own_traceback_under_the_one_line_refusal(capsys):
    def build(spark):
        raise ValueError("Table or view not found: events")

    try:
        build(None)
    except ValueError as cause:
        refused = CatchUpRefusedError(
            Refusal("job-failed", "job j:build raised ValueError", "fix it", usage=True)
        )
        refused.__cause__ = cause
    for debug in (False, True):
        with click.Context(cli, obj={"debug": debug}), pytest.raises(CommandFailed) as info:
            _refused(refused, "table")
        assert info.value.code == ExitCode.USAGE
        assert info.value.message == "catch-up refused: job j:build raised ValueError\nnext: fix it"
        err = capsys.readouterr().err
        assert ("Traceback (most recent call last)" in err) is debug
        assert ('raise ValueError("Table or view not found: events")' in err) is debug


def test_spark_that_cannot_start_is_a_usage_error_not_an_internal_one():
    exc = SparkStartError("cannot start Spark (--master nonsense): Could not parse Master URL: 'nonsense'")
    assert exit_code_for(exc) == ExitCode.USAGE
