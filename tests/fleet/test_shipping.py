"""The zip an audit on Spark ships to its executors: enough to import and run the audit task in a
Python that has none of checkpoint-doctor's packages."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from checkpoint_doctor.fleet.shipping import package_zip
from checkpoint_doctor.spark import task_failure_text
from tests.scenarios import FIXTURES, copy_scenario


def test_the_zip_holds_the_package_and_pure_python_dependencies_only(tmp_path) -> None:
    names = zipfile.ZipFile(package_zip(tmp_path / "job.zip")).namelist()

    for module in (
        "checkpoint_doctor/fleet/spark.py",
        "checkpoint_doctor/schemas/audit.json",
        "fsspec/__init__.py",
    ):
        assert module in names
    assert not [n for n in names if n.endswith((".so", ".pyc")) or "__pycache__" in n]


def test_an_isolated_python_runs_the_audit_task_from_the_zip_alone(tmp_path) -> None:
    job = package_zip(tmp_path / "job.zip")
    copy_scenario(FIXTURES / "spark-4.3.0" / "commit-ahead", tmp_path / "fleet" / "a")
    script = f"""
import sys
sys.path[:0] = [{str(job)!r}]
from checkpoint_doctor.diagnosis import DiagnoseOptions
from checkpoint_doctor.fleet.run import audit
import checkpoint_doctor.fleet.spark, fsspec
assert checkpoint_doctor.__file__.startswith({str(job)!r}) and fsspec.__file__.startswith({str(job)!r})
result = audit([{str(tmp_path / "fleet")!r}], {{}}, options=DiagnoseOptions(live_window_s=0))
print([(r.path, str(r.verdict)) for r in result.records])
"""
    # -I: no site-packages, no PYTHONPATH, no user site: what a bare executor Python has.
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script], capture_output=True, text=True, check=False
    )

    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[('a/checkpoint', 'error')]"


def test_a_worker_failure_is_reduced_to_its_last_error_line() -> None:
    text = (
        "An exception was thrown from the Python worker:\nTraceback (most recent call last):\n"
        "  File \"worker.py\", line 1, in main\n    raise\nModuleNotFoundError: No module named 's3fs'\n"
        "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException\n"
    )

    assert task_failure_text(RuntimeError(text)) == "ModuleNotFoundError: No module named 's3fs'"
