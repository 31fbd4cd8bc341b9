"""The import direction of the package: a pure core (parsing, diagnosis, planning) that never
touches storage, and one owner for each outside dependency."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "checkpoint_doctor"

#: module prefix -> package modules it must NOT import (directly, anywhere in the file)
FORBIDDEN = {
    "checkpoint_doctor.errors": ("checkpoint_doctor.",),
    "checkpoint_doctor.model": ("checkpoint_doctor.",),
    "checkpoint_doctor.parsing": ("checkpoint_doctor.storage", "checkpoint_doctor.loading", "checkpoint_doctor.snapshot", "checkpoint_doctor.diagnosis", "checkpoint_doctor.cli"),
    "checkpoint_doctor.layout": ("checkpoint_doctor.storage", "checkpoint_doctor.loading", "checkpoint_doctor.cli"),
    "checkpoint_doctor.snapshot": ("checkpoint_doctor.storage", "checkpoint_doctor.loading", "checkpoint_doctor.cli", "checkpoint_doctor.diagnosis"),
    "checkpoint_doctor.detect": ("checkpoint_doctor.storage", "checkpoint_doctor.loading", "checkpoint_doctor.cli"),
    "checkpoint_doctor.state_chain": ("checkpoint_doctor.storage", "checkpoint_doctor.loading", "checkpoint_doctor.cli"),
    "checkpoint_doctor.inspection": ("checkpoint_doctor.storage", "checkpoint_doctor.loading", "checkpoint_doctor.cli"),
    "checkpoint_doctor.diagnosis": ("checkpoint_doctor.storage", "checkpoint_doctor.loading", "checkpoint_doctor.cli", "checkpoint_doctor.execution", "checkpoint_doctor.planning", "checkpoint_doctor.render"),
    "checkpoint_doctor.planning": ("checkpoint_doctor.storage", "checkpoint_doctor.loading", "checkpoint_doctor.cli", "checkpoint_doctor.execution", "checkpoint_doctor.render"),
    "checkpoint_doctor.render": ("checkpoint_doctor.storage", "checkpoint_doctor.loading", "checkpoint_doctor.cli", "checkpoint_doctor.execution"),
    "checkpoint_doctor.execution": ("checkpoint_doctor.cli", "checkpoint_doctor.render"),
}

#: outside package -> the only modules (prefixes) allowed to import it
OWNERS = {
    "fsspec": ("checkpoint_doctor.storage",),
    "s3fs": ("checkpoint_doctor.storage",),
    "botocore": ("checkpoint_doctor.storage",),
    "pyspark": ("checkpoint_doctor.execution.runner", "checkpoint_doctor.audit.spark"),
    "click": ("checkpoint_doctor.cli",),
    "tabulate": ("checkpoint_doctor.render", "checkpoint_doctor.audit"),
}


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text())
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module)
        yield name, imported


def test_the_pure_core_never_imports_the_io_edge():
    problems = []
    for name, imported in modules():
        for prefix, banned in FORBIDDEN.items():
            if name == prefix or name.startswith(prefix + "."):
                for imp in imported:
                    if any(imp == b or imp.startswith(b) for b in banned) and not imp.startswith(prefix):
                        problems.append(f"{name} imports {imp}")
    assert not problems


def test_each_outside_dependency_has_one_owner():
    problems = []
    for name, imported in modules():
        for imp in imported:
            top = imp.split(".")[0]
            owners = OWNERS.get(top)
            if owners and not any(name == o or name.startswith(o) for o in owners):
                problems.append(f"{name} imports {imp}")
    assert not problems
