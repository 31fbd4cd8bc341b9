"""The operator's job, without Spark: ``--job`` specs, importing a module or a file, and calling the
function (what it raises or returns instead of a ``DataStreamWriter`` is a one-line usage refusal
naming the job, with a next step that runs as printed)."""

from __future__ import annotations

import shlex
import sys

import pytest

from checkpoint_doctor.errors import UsageError
from checkpoint_doctor.execution.catch_up.job import build_writer, load_job, parse_job_spec
from checkpoint_doctor.execution.catch_up.model import CatchUpRefusedError
from checkpoint_doctor.exit_codes import ExitCode
from tests.catch_up.checkpoints import facts_for, snapshot_of


@pytest.mark.parametrize(
    ("spec", "target", "function", "is_path"),
    [
        ("examples.rate_job:build", "examples.rate_job", "build", False),
        ("jobs/etl.py:make_writer", "jobs/etl.py", "make_writer", True),
        ("etl.py:build", "etl.py", "build", True),
        ("/abs/dir/job.py:build", "/abs/dir/job.py", "build", True),
    ],
)
def test_job_spec_module_and_path_forms_parse(spec, target, function, is_path):
    parsed = parse_job_spec(spec)
    assert (parsed.target, parsed.function, parsed.is_path) == (target, function, is_path)
    assert parsed.text == spec


@pytest.mark.parametrize(
    "spec", ["examples.rate_job", ":build", "examples.rate_job:", "mod:not-a-name", "my-mod:build"]
)
def test_job_spec_malformed_is_a_usage_error(spec):
    with pytest.raises(UsageError, match="--job"):
        parse_job_spec(spec)


def test_job_from_a_path_is_imported_with_its_directory_on_the_path(tmp_path):
    (tmp_path / "helper_for_job.py").write_text("VALUE = 41\n")
    (tmp_path / "job.py").write_text(
        "import helper_for_job\n\ndef build(spark):\n    return helper_for_job.VALUE + 1\n"
    )
    func = load_job(parse_job_spec(f"{tmp_path}/job.py:build"))
    assert func(None) == 42


def test_job_module_missing_names_the_module_and_the_error():
    with pytest.raises(CatchUpRefusedError) as info:
        load_job(parse_job_spec("no_such_pkg.jobs:build"))
    refusal = info.value.refusal
    assert refusal.reason == "job-import" and refusal.exit_code == 2
    assert (
        "cannot import job module 'no_such_pkg.jobs': ModuleNotFoundError: No module named 'no_such_pkg'"
        in refusal.message
    )


def test_job_file_with_an_error_names_the_file_and_the_error(tmp_path):
    (tmp_path / "broken.py").write_text("def build(spark):\n    return (\n")
    with pytest.raises(CatchUpRefusedError) as info:
        load_job(parse_job_spec(f"{tmp_path}/broken.py:build"))
    assert info.value.refusal.exit_code == 2
    assert f"cannot import job file '{tmp_path}/broken.py': SyntaxError" in info.value.refusal.message


def test_job_file_missing_or_without_the_function_is_refused(tmp_path):
    with pytest.raises(CatchUpRefusedError, match="does not exist"):
        load_job(parse_job_spec(f"{tmp_path}/nope.py:build"))
    (tmp_path / "job.py").write_text("build = 3\n\ndef other(spark):\n    return None\n")
    with pytest.raises(CatchUpRefusedError, match="has no function 'missing'"):
        load_job(parse_job_spec(f"{tmp_path}/job.py:missing"))
    with pytest.raises(CatchUpRefusedError, match="has a non-callable 'build'"):
        load_job(parse_job_spec(f"{tmp_path}/job.py:build"))


def test_an_import_error_with_a_long_message_is_one_line(tmp_path):
    (tmp_path / "noisy.py").write_text(
        'raise RuntimeError("cannot reach the schema registry\\n  at line 2\\n  at line 3")\n'
    )
    with pytest.raises(CatchUpRefusedError) as info:
        load_job(parse_job_spec(f"{tmp_path}/noisy.py:build"))
    refusal = info.value.refusal
    assert refusal.message == (
        f"cannot import job file '{tmp_path}/noisy.py': RuntimeError: cannot reach the schema registry"
    )
    assert isinstance(info.value.__cause__, RuntimeError)  # kept for --debug


def test_a_job_that_exits_on_import_is_refused_not_exited(tmp_path):
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
    with pytest.raises(CatchUpRefusedError) as info:
        load_job(parse_job_spec(f"{tmp_path}/exits.py:build"))
    assert info.value.refusal.message == f"cannot import job file '{tmp_path}/exits.py': SystemExit: 3"


# ------------------------------------------------------------------------------------------ calling it


def test_a_job_that_raises_is_refused_with_its_first_line_and_the_debug_command(tmp_path):
    snap = snapshot_of("3.5.9", "async-tail", tmp_path / "my checkpoints")
    facts = facts_for(
        snap, job="jobs/etl.py:build", master="local[2]", confs=(("spark.sql.shuffle.partitions", "2"),)
    )

    def build(spark):
        raise ValueError("Table or view not found: events\nmore detail")

    with pytest.raises(CatchUpRefusedError) as info:
        build_writer(build, object(), facts)
    refusal = info.value.refusal
    assert refusal.reason == "job-failed" and refusal.exit_code == ExitCode.USAGE
    assert refusal.message == "job jobs/etl.py:build raised ValueError: Table or view not found: events"
    debug = refusal.next_step.rpartition("its traceback: ")[2]
    assert shlex.split(debug) == [
        "checkpoint-doctor",
        "--debug",
        "catch-up",
        snap.root,
        "--job",
        "jobs/etl.py:build",
        "--master",
        "local[2]",
        "--conf",
        "spark.sql.shuffle.partitions=2",
    ]
    assert isinstance(info.value.__cause__, ValueError)
    assert refusal.spark_message is None  # the job's own error, not Spark's


def test_a_job_that_returns_something_else_is_refused(tmp_path):
    facts = facts_for(snapshot_of("3.5.9", "async-tail", tmp_path))
    with pytest.raises(CatchUpRefusedError) as info:
        build_writer(lambda spark: 42, object(), facts)
    refusal = info.value.refusal
    assert refusal.reason == "job-returned" and refusal.exit_code == ExitCode.USAGE
    assert refusal.message == "job examples.rate_job:build returned int, not a DataStreamWriter"
    assert refusal.next_step.startswith("make examples.rate_job:build return df.writeStream...")


def test_a_job_whose_own_import_fails_points_at_its_traceback_not_at_the_spec(tmp_path, monkeypatch):
    (tmp_path / "etl_job_with_a_missing_dependency.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [*sys.path])  # load_job puts the current directory on it
    debug = "checkpoint-doctor --debug catch-up /cp --job etl_job_with_a_missing_dependency:build"
    with pytest.raises(CatchUpRefusedError) as info:
        load_job(parse_job_spec("etl_job_with_a_missing_dependency:build"), debug_command=debug)
    refusal = info.value.refusal
    assert refusal.message == (
        "cannot import job module 'etl_job_with_a_missing_dependency': ModuleNotFoundError: "
        "No module named 'no_such_dependency_xyz'"
    )
    assert refusal.next_step == f"fix the job's import; its traceback: {debug}"
    with pytest.raises(CatchUpRefusedError) as info:
        load_job(parse_job_spec("no_such_pkg.jobs:build"), debug_command=debug)
    assert info.value.refusal.next_step.startswith("check --job (MODULE:FUNCTION")
