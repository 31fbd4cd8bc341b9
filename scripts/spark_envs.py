#!/usr/bin/env python3
"""Create (once) one virtualenv per PySpark version, for fixture generation and Spark tests.

Stdlib only. ``ensure_spark_python("3.5.9")`` returns the path of a python interpreter that
can ``import pyspark`` at exactly that version (and ``checkpoint_doctor`` too, once the
package has a ``setup.cfg``).

Layout: ``<repo>/.spark-envs/pyspark-<version>/`` (the parent directory can be moved with the
environment variable ``CHECKPOINT_DOCTOR_SPARK_ENVS``). A marker file ``.installed`` holding
the version is written after a successful install; while it is present and matches, nothing
is done, so calling this again is fast.

CLI: ``python scripts/spark_envs.py 3.5.9 4.3.0`` ensures both and prints the python paths.

Interpreters: a venv is made with the python running this script, except for the lines listed in
``PYTHON_FOR`` (a release line whose PySpark does not support that python). PySpark 3.3 predates
Python 3.11 support (added in 3.4, SPARK-40991), so its venv is made with a pyenv Python 3.10.
"""

from __future__ import annotations

import fcntl
import os
import pathlib
import shutil
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
ENV_VAR = "CHECKPOINT_DOCTOR_SPARK_ENVS"
MARKER = ".installed"


def envs_root() -> pathlib.Path:
    """Parent directory of all the PySpark venvs."""
    override = os.environ.get(ENV_VAR)
    return pathlib.Path(override).expanduser().resolve() if override else REPO / ".spark-envs"


def env_dir(version: str) -> pathlib.Path:
    return envs_root() / f"pyspark-{version}"


def _python_of(venv: pathlib.Path) -> pathlib.Path:
    if os.name == "nt":  # pragma: no cover - the project targets Linux/macOS
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


#: The package goes in with its S3 extra: Spark tests audit a moto S3 server from inside Spark tasks.
PACKAGE_EXTRAS = "[s3]"


#: Python minor version a PySpark release line needs when the running python is too new for it.
PYTHON_FOR = {"3.3": "3.10"}


def base_python(version: str) -> str:
    """Return the interpreter that creates the venv of a PySpark version."""
    want = PYTHON_FOR.get(".".join(version.split(".")[:2]))
    if want is None or f"{sys.version_info[0]}.{sys.version_info[1]}" == want:
        return sys.executable
    # pyenv's own installs first: its shims on PATH fail for versions not selected.
    pyenv = pathlib.Path(os.environ.get("PYENV_ROOT", pathlib.Path.home() / ".pyenv")) / "versions"
    for candidate in sorted(pyenv.glob(f"{want}.*"), reverse=True):
        if (candidate / "bin" / "python").exists():
            return str(candidate / "bin" / "python")
    found = shutil.which(f"python{want}")
    if found and ".pyenv/shims" not in found:
        return found
    raise RuntimeError(f"PySpark {version} needs Python {want}; none found on PATH or under {pyenv}")


#: What Python stateful processors need in the worker (transformWithStateInPandas since 4.0, the
#: Row-based transformWithState since 4.1): without protobuf the driver-side worker dies
#: ("TransformWithStateInPandas driver worker exited unexpectedly").
PYTHON_WORKER_PACKAGES = ("pandas", "pyarrow", "protobuf")


def worker_packages(version: str) -> tuple[str, ...]:
    """The packages a line's venv gets beside pyspark (none before 4.0)."""
    return PYTHON_WORKER_PACKAGES if int(version.split(".")[0]) >= 4 else ()


#: What ``spark-pipelines`` (Spark Declarative Pipelines, 4.1+) needs beside pyspark: the
#: ``pyspark[pipelines]`` extra (its CLI talks Spark Connect to a local server and reads the YAML spec).
PIPELINES_PACKAGES = ("grpcio", "grpcio-status", "googleapis-common-protos", "zstandard", "pyyaml")
PIPELINES_MARKER = ".pipelines-installed"


def pipelines_packages(version: str) -> tuple[str, ...]:
    """The ``pyspark[pipelines]`` extra's packages for a line that has SDP (4.1+), else none."""
    major, minor = (int(x) for x in version.split(".")[:2])
    return PIPELINES_PACKAGES if (major, minor) >= (4, 1) else ()


def ensure_pipelines(version: str) -> pathlib.Path:
    """Return the ``spark-pipelines`` launcher of a line's venv, installing the pipelines extra once.

    A marker of its own (not ``.installed``'s text), so a venv another checkout shares is not
    rebuilt or re-pointed: only the extra's packages are added.
    """
    if not pipelines_packages(version):
        raise RuntimeError(f"Spark {version} has no Declarative Pipelines (4.1+)")
    python = ensure_spark_python(version)
    venv = env_dir(version)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = venv / PIPELINES_MARKER
        if not marker.is_file():
            _run([str(python), "-m", "pip", "install", "--quiet", *pipelines_packages(version)])
            marker.write_text(",".join(pipelines_packages(version)) + "\n", encoding="utf-8")
    return venv / "bin" / "spark-pipelines"


def _marker_text(version: str, editable: bool) -> str:
    extra = f"workers={','.join(worker_packages(version))}\n" if worker_packages(version) else ""
    return f"pyspark=={version}\neditable={'yes' + PACKAGE_EXTRAS if editable else 'no'}\n{extra}"


def _run(cmd: list[str]) -> None:
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True)


def ensure_spark_python(version: str) -> pathlib.Path:
    """Return the python of a venv with ``pyspark==version`` installed, creating it if needed.

    Also installs the repository in editable mode when ``<repo>/setup.cfg`` exists. The venv
    is considered ready when its marker file matches the version and the editable state; a
    venv without a valid marker (for example from an interrupted install) is rebuilt.
    """
    venv = env_dir(version)
    venv.parent.mkdir(parents=True, exist_ok=True)
    # Two callers (parallel test runs, a bench beside a fixture run) must not build or delete the
    # same venv at once: one holds the lock, the other finds it ready afterwards.
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure_locked(version, venv)


def _ensure_locked(version: str, venv: pathlib.Path) -> pathlib.Path:
    python = _python_of(venv)
    marker = venv / MARKER
    want_editable = (REPO / "setup.cfg").is_file()
    expected = _marker_text(version, want_editable)
    if python.exists() and marker.is_file():
        current = marker.read_text(encoding="utf-8")
        if current == expected:
            return python
        if current.startswith(f"pyspark=={version}\n") and want_editable:
            # pyspark is there already; only the package (or the workers' packages) is new since the last run.
            _run([str(python), "-m", "pip", "install", "--quiet", "-e", f"{REPO}{PACKAGE_EXTRAS}"])
            if worker_packages(version):
                _run([str(python), "-m", "pip", "install", "--quiet", *worker_packages(version)])
            marker.write_text(expected, encoding="utf-8")
            return python
        if current.startswith(f"pyspark=={version}\n") and not want_editable:
            # A checkout without setup.cfg (a copy of scripts/ only) needs pyspark alone: the venv
            # has it, and the package installed beside it harms nothing. Never delete a shared venv.
            return python
    if venv.exists():
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    _run([base_python(version), "-m", "venv", str(venv)])
    _run([str(python), "-m", "pip", "install", "--quiet", f"pyspark=={version}", *worker_packages(version)])
    if want_editable:
        _run([str(python), "-m", "pip", "install", "--quiet", "-e", f"{REPO}{PACKAGE_EXTRAS}"])
    check = subprocess.run(
        [str(python), "-c", "import pyspark; print(pyspark.__version__)"],
        check=True,
        capture_output=True,
        text=True,
    )
    installed = check.stdout.strip()
    if installed != version:
        raise RuntimeError(f"venv {venv} has pyspark {installed!r}, expected {version!r}")
    marker.write_text(expected, encoding="utf-8")
    return python


def main(argv: list[str]) -> int:
    versions = argv or ["3.5.9", "4.3.0"]
    for version in versions:
        print(f"{version} {ensure_spark_python(version)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
