"""The code an audit's Spark tasks run, shipped with the job: executors import checkpoint-doctor
and its pure-Python dependencies from a zip the driver builds of its own copies.

PySpark runs a task's function in a Python worker that imports it by module name
(``pyspark.worker`` unpickles ``audit_partition``), and the worker's interpreter is not the driver's:
``python3`` on the executor's PATH unless ``PYSPARK_PYTHON`` says otherwise, which on a cluster (and
with ``local-cluster``) has none of the driver's ``sys.path``. ``SparkContext.addPyFile`` puts a zip
on every worker's ``sys.path`` ahead of its site-packages, so the executors run exactly the driver's
code. Only pure-Python files are shipped (``zipimport`` loads no extension module); a package with
a compiled part (s3fs's aiohttp) must be installed on the executors, and the probe task
(:func:`~checkpoint_doctor.fleet.spark.probe_executor`) says so in one line.
"""

from __future__ import annotations

import importlib.util
import os
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

#: What an audit task imports on an executor: the package, its storage layer and the pure-Python
#: packages reached from it (``markupsafe`` falls back to Python without its speedups).
SHIPPED = ("checkpoint_doctor", "fsspec", "tabulate", "click", "jinja2", "markupsafe")
#: Files that are never shipped: compiled extensions (zipimport cannot load them) and caches.
_SKIPPED_SUFFIXES = (".so", ".pyd", ".dylib", ".pyc", ".pyo")


def _files(name: str) -> Iterator[tuple[Path, str]]:
    """Yield (file, name in the zip) for one installed top-level module or package."""
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    if spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            root = Path(location)
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                for filename in sorted(filenames):
                    if filename.endswith(_SKIPPED_SUFFIXES):
                        continue
                    path = Path(dirpath) / filename
                    yield path, f"{name}/{path.relative_to(root).as_posix()}"
    elif spec.origin and spec.origin.endswith(".py"):
        yield Path(spec.origin), f"{name}.py"


def package_zip(dest: Path, names: Sequence[str] = SHIPPED) -> Path:
    """Write the installed copies of ``names`` (those present) into the zip ``dest``; return it."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        seen: set[str] = set()
        for name in names:
            for path, arcname in _files(name):
                if arcname not in seen:
                    seen.add(arcname)
                    zf.write(path, arcname)
    return dest
