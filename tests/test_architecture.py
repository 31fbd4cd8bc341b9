"""The import direction of the package: a pure core (parsing, diagnosis, planning) that never
touches storage, and one owner for each outside dependency."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "checkpoint_doctor"

#: The modules of the world around a checkpoint that read (storage, a broker): the diagnosis takes
#: their answers as values (``world.model.World``, the pure pairing rules), never calls them. A name
#: ending in ``$`` is that module only (``world.delta``, not ``world.delta_pairing``).
WORLD_IO = (
    "checkpoint_doctor.world.load",
    "checkpoint_doctor.world.delta$",
    "checkpoint_doctor.world.delta_discovery",
    "checkpoint_doctor.world.delta_log",
    "checkpoint_doctor.world.delta_checksum",
    "checkpoint_doctor.world.sinks",
    "checkpoint_doctor.world.kafka",
)

#: What the pure modules of the world (values, pairing rules) must not import: what reads.
PURE_WORLD = ("checkpoint_doctor.reading.storage", "checkpoint_doctor.reading.pipeline", *WORLD_IO)

#: module prefix -> package modules it must NOT import (directly, anywhere in the file)
FORBIDDEN = {
    "checkpoint_doctor.errors": ("checkpoint_doctor.",),
    "checkpoint_doctor.model": ("checkpoint_doctor.",),
    "checkpoint_doctor.exit_codes": ("checkpoint_doctor.",),
    "checkpoint_doctor.digest": ("checkpoint_doctor.",),
    "checkpoint_doctor.valueclasses": ("checkpoint_doctor.",),
    "checkpoint_doctor.parsing": (
        "checkpoint_doctor.reading",
        "checkpoint_doctor.diagnosis",
        "checkpoint_doctor.cli",
    ),
    "checkpoint_doctor.reading.layout": (
        "checkpoint_doctor.reading.storage",
        "checkpoint_doctor.reading.pipeline",
        "checkpoint_doctor.cli",
    ),
    "checkpoint_doctor.reading.snapshot": (
        "checkpoint_doctor.reading.storage",
        "checkpoint_doctor.reading.pipeline",
        "checkpoint_doctor.cli",
        "checkpoint_doctor.diagnosis",
    ),
    "checkpoint_doctor.reading.reads": (
        "checkpoint_doctor.reading.storage",
        "checkpoint_doctor.reading.pipeline",
        "checkpoint_doctor.cli",
        "checkpoint_doctor.diagnosis",
    ),
    "checkpoint_doctor.reading.assembly": (
        "checkpoint_doctor.reading.storage",
        "checkpoint_doctor.reading.pipeline",
        "checkpoint_doctor.cli",
        "checkpoint_doctor.diagnosis",
    ),
    "checkpoint_doctor.reading": (
        "checkpoint_doctor.diagnosis",
        "checkpoint_doctor.planning",
        "checkpoint_doctor.execution",
        "checkpoint_doctor.cli",
        "checkpoint_doctor.render",
        "checkpoint_doctor.fleet",
    ),
    "checkpoint_doctor.diagnosis": (
        "checkpoint_doctor.reading.storage",
        "checkpoint_doctor.reading.pipeline",
        "checkpoint_doctor.cli",
        "checkpoint_doctor.execution",
        "checkpoint_doctor.planning",
        "checkpoint_doctor.render",
        *WORLD_IO,
    ),
    "checkpoint_doctor.planning": (
        "checkpoint_doctor.reading.storage",
        "checkpoint_doctor.reading.pipeline",
        "checkpoint_doctor.cli",
        "checkpoint_doctor.execution",
        "checkpoint_doctor.render",
        *WORLD_IO,
    ),
    # Renderers turn values into text: they read nothing, run nothing and serve every caller.
    "checkpoint_doctor.render": (
        *WORLD_IO,
        "checkpoint_doctor.reading.storage",
        "checkpoint_doctor.reading.pipeline",
        "checkpoint_doctor.cli",
        "checkpoint_doctor.execution",
        "checkpoint_doctor.fleet",
        "checkpoint_doctor.api",
        "checkpoint_doctor.spark",
    ),
    # The audit reads and diagnoses many checkpoints and never changes one; the CLI and the API
    # call it, not the other way round.
    "checkpoint_doctor.fleet": (
        "checkpoint_doctor.cli",
        "checkpoint_doctor.api",
        "checkpoint_doctor.execution",
    ),
    # The world around a checkpoint (its sinks, Delta tables, Kafka brokers, the tool's own writes)
    # is read before the diagnosis and serves the CLI, the API and the audit alike: it knows none of
    # them, nor text, nor plans.
    "checkpoint_doctor.world": (
        "checkpoint_doctor.cli",
        "checkpoint_doctor.api",
        "checkpoint_doctor.render",
        "checkpoint_doctor.fleet",
        "checkpoint_doctor.planning",
        "checkpoint_doctor.diagnosis",
        "checkpoint_doctor.execution",
    ),
    # Its values and pairing rules are pure: the diagnosis imports them.
    "checkpoint_doctor.world.model": PURE_WORLD,
    "checkpoint_doctor.world.delta_pairing": PURE_WORLD,
    "checkpoint_doctor.world.sink_pairing": PURE_WORLD,
    # The Python API returns typed values: no text, no applies, no command line.
    "checkpoint_doctor.api": (
        "checkpoint_doctor.cli",
        "checkpoint_doctor.render",
        "checkpoint_doctor.execution",
    ),
    "checkpoint_doctor.execution": ("checkpoint_doctor.cli", "checkpoint_doctor.render"),
    # The catch-up run's decisions are pure: no storage, no Spark (the run does the I/O).
    "checkpoint_doctor.execution.catch_up.decisions": (
        "checkpoint_doctor.reading.storage",
        "checkpoint_doctor.reading.pipeline",
        "checkpoint_doctor.spark",
        "checkpoint_doctor.execution.catch_up.run",
        "checkpoint_doctor.execution.catch_up.job",
    ),
    "checkpoint_doctor.execution.catch_up.model": (
        "checkpoint_doctor.reading.storage",
        "checkpoint_doctor.reading.pipeline",
        "checkpoint_doctor.spark",
        "checkpoint_doctor.execution.catch_up.",
    ),
    # The PySpark edge serves the package; it knows nothing of it but its errors.
    "checkpoint_doctor.spark": (
        "checkpoint_doctor.reading",
        "checkpoint_doctor.diagnosis",
        "checkpoint_doctor.planning",
        "checkpoint_doctor.execution",
        "checkpoint_doctor.fleet",
        "checkpoint_doctor.cli",
        "checkpoint_doctor.render",
    ),
}

#: Leaves every module may import (they import nothing of the package: rules above keep them so):
#: the value-class decorator the modules of values use (``records.frozen``).
LEAVES = ("checkpoint_doctor.valueclasses",)

#: (module, import) pairs that break a rule above and are tolerated until they move: none since issue
#: 35 (the world read the tool's own journal through execution/journal and execution/history, which
#: imported the planner; the journal's reader is reading/journal.py and reading/history.py now).
#: ``test_no_rule_is_tolerated_away`` keeps it empty.
TOLERATED: set[tuple[str, str]] = set()

#: outside package -> the only modules (prefixes) allowed to import it
OWNERS = {
    "fsspec": ("checkpoint_doctor.reading.storage",),
    "s3fs": ("checkpoint_doctor.reading.storage",),
    "botocore": ("checkpoint_doctor.reading.storage",),
    "aiobotocore": ("checkpoint_doctor.reading.storage",),
    "pyspark": ("checkpoint_doctor.spark",),
    "click": ("checkpoint_doctor.cli",),
    "tabulate": ("checkpoint_doctor.render", "checkpoint_doctor.fleet"),
    "confluent_kafka": ("checkpoint_doctor.world.kafka",),
}


@functools.cache
def _parsed() -> tuple[tuple[str, Path, ast.Module], ...]:
    """Return (module name, path, syntax tree) of every module of the package, parsed once per run
    (each test of this file walks them all: parsing is most of its time)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        out.append((".".join(rel.parts).removesuffix(".__init__"), path, ast.parse(path.read_text())))
    return tuple(out)


def modules():
    for name, _, tree in _parsed():
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module)
        yield name, imported


def _bans(banned: str, imp: str) -> bool:
    """Whether a FORBIDDEN entry bans an import: a prefix, or the module alone when it ends in ``$``."""
    return imp == banned[:-1] if banned.endswith("$") else imp == banned or imp.startswith(banned)


def forbidden_imports(mods):
    """Return "<module> imports <import>" for each import a rule of FORBIDDEN bans."""
    problems = []
    for name, imported in mods:
        for prefix, banned in FORBIDDEN.items():
            if name == prefix or name.startswith(prefix + "."):
                for imp in sorted(imported):
                    hit = any(_bans(b, imp) for b in banned) and not imp.startswith(prefix)
                    hit = hit and imp not in LEAVES
                    if hit and (name, imp) not in TOLERATED:
                        problems.append(f"{name} imports {imp}")
    return problems


def test_the_pure_core_never_imports_the_io_edge():
    assert not forbidden_imports(modules())


def test_the_fleet_the_api_and_the_renderers_have_rules_that_catch_a_wrong_import():
    wrong = [
        ("checkpoint_doctor.fleet.report", {"checkpoint_doctor.cli.options"}),
        ("checkpoint_doctor.fleet.run", {"checkpoint_doctor.execution.apply"}),
        ("checkpoint_doctor.api", {"checkpoint_doctor.render.layout"}),
        ("checkpoint_doctor.api", {"checkpoint_doctor.execution.apply"}),
        ("checkpoint_doctor.render.plan", {"checkpoint_doctor.fleet.report"}),
        ("checkpoint_doctor.render.hints", {"checkpoint_doctor.api"}),
    ]
    assert len(forbidden_imports(wrong)) == len(wrong)
    allowed = [
        (
            "checkpoint_doctor.fleet.report",
            {"checkpoint_doctor.render.layout", "checkpoint_doctor.diagnosis"},
        ),
        ("checkpoint_doctor.api", {"checkpoint_doctor.fleet.run", "checkpoint_doctor.planning"}),
    ]
    assert forbidden_imports(allowed) == []


def test_the_diagnosis_takes_the_world_as_values_and_never_reads_it():
    """Issue 35: URL -> snapshot -> world -> diagnosis -> plan -> render, each step down once."""
    wrong = [
        ("checkpoint_doctor.diagnosis.sources.kafka", {"checkpoint_doctor.world.kafka"}),
        ("checkpoint_doctor.diagnosis.options", {"checkpoint_doctor.world.load"}),
        ("checkpoint_doctor.diagnosis.sources.checks_delta", {"checkpoint_doctor.world.delta"}),
        ("checkpoint_doctor.diagnosis.sources.checks_delta", {"checkpoint_doctor.world.delta_log"}),
        ("checkpoint_doctor.planning.preconditions", {"checkpoint_doctor.world.sinks"}),
        ("checkpoint_doctor.render.diagnosis", {"checkpoint_doctor.world.delta_discovery"}),
        ("checkpoint_doctor.world.delta_pairing", {"checkpoint_doctor.world.delta_log"}),
        ("checkpoint_doctor.world.load", {"checkpoint_doctor.cli.options"}),
        ("checkpoint_doctor.world.delta", {"checkpoint_doctor.fleet.delta"}),
        ("checkpoint_doctor.world.kafka", {"checkpoint_doctor.diagnosis.sources.kafka"}),
        # the two edges issue 35 removed: the world read the tool's journal through the executor
        ("checkpoint_doctor.world.load", {"checkpoint_doctor.execution.history"}),
        ("checkpoint_doctor.world.load", {"checkpoint_doctor.execution.journal"}),
        ("checkpoint_doctor.reading.history", {"checkpoint_doctor.planning.plan"}),
        ("checkpoint_doctor.reading.journal", {"checkpoint_doctor.execution.journal"}),
    ]
    assert len(forbidden_imports(wrong)) == len(wrong)
    allowed = [
        (
            "checkpoint_doctor.diagnosis.options",
            {"checkpoint_doctor.world.model", "checkpoint_doctor.world.delta_pairing"},
        ),
        ("checkpoint_doctor.planning.preconditions", {"checkpoint_doctor.world.sink_pairing"}),
        (
            "checkpoint_doctor.world.load",
            {"checkpoint_doctor.world.delta", "checkpoint_doctor.reading.storage"},
        ),
        (
            "checkpoint_doctor.world.load",
            {"checkpoint_doctor.reading.journal", "checkpoint_doctor.reading.history"},
        ),
        ("checkpoint_doctor.execution.apply", {"checkpoint_doctor.reading.history"}),
    ]
    assert forbidden_imports(allowed) == []


def test_no_rule_is_tolerated_away():
    """Issue 35: the last two upward edges are gone; a new one is fixed, not listed."""
    assert set() == TOLERATED


#: The layers of one verdict, top to bottom (docs/house-world.md: URL -> snapshot -> world ->
#: diagnosis -> plan -> render): a module of a layer imports none of the layers above it.
LAYERS = (
    ("checkpoint_doctor.cli", "checkpoint_doctor.api"),
    ("checkpoint_doctor.fleet",),
    ("checkpoint_doctor.execution",),
    ("checkpoint_doctor.render",),
    ("checkpoint_doctor.planning",),
    ("checkpoint_doctor.diagnosis",),
    ("checkpoint_doctor.world",),
    ("checkpoint_doctor.reading",),
    ("checkpoint_doctor.parsing",),
)


def _layer(module: str) -> int | None:
    for n, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return n
    return None


def steps_back_up(graph: dict[str, set[str]]) -> list[str]:
    """Return "<module> -> <module above it>" for each module that reaches, through the imports of
    the package (transitively, function-level ones included), a module of a layer above its own."""
    problems = []
    for name in sorted(graph):
        own = _layer(name)
        if own is None:
            continue
        seen: set[str] = set()
        todo = list(graph[name])
        while todo:
            mod = todo.pop()
            if mod in seen:
                continue
            seen.add(mod)
            todo.extend(graph.get(mod, ()))
        problems += [f"{name} -> {m}" for m in sorted(seen) if (_layer(m) or own) < own]
    return problems


def test_one_verdict_flows_down_the_layers_and_never_steps_back_up():
    """Issue 35: following any module's imports, even inside functions, never climbs to a layer above
    it (the world reached the planner through execution/history before; the renderers and the
    planner never reach the executor, the audit or the CLI)."""
    assert steps_back_up(import_graph()) == []


def test_a_step_back_up_is_found_through_the_modules_between():
    graph = import_graph()
    # as on main before issue 35: world/load -> execution/history -> planning/plan
    graph["checkpoint_doctor.world.load"].add("checkpoint_doctor.reading.history")
    graph["checkpoint_doctor.reading.history"].add("checkpoint_doctor.planning.plan")
    problems = steps_back_up(graph)
    assert "checkpoint_doctor.world.load -> checkpoint_doctor.planning.plan" in problems
    assert "checkpoint_doctor.reading.history -> checkpoint_doctor.planning.plan" in problems


def test_the_snapshot_its_read_plan_and_its_assembly_stay_pure():
    wrong = [
        ("checkpoint_doctor.reading.snapshot", {"checkpoint_doctor.reading.storage"}),
        ("checkpoint_doctor.reading.reads", {"checkpoint_doctor.reading.pipeline"}),
        ("checkpoint_doctor.reading.assembly", {"checkpoint_doctor.reading.storage.local"}),
        ("checkpoint_doctor.reading.assembly", {"checkpoint_doctor.reading.pipeline"}),
    ]
    assert len(forbidden_imports(wrong)) == len(wrong)
    allowed = [
        (
            "checkpoint_doctor.reading.assembly",
            {"checkpoint_doctor.reading.snapshot", "checkpoint_doctor.parsing"},
        )
    ]
    assert forbidden_imports(allowed) == []


def test_each_outside_dependency_has_one_owner():
    problems = []
    for name, imported in modules():
        for imp in imported:
            top = imp.split(".")[0]
            owners = OWNERS.get(top)
            if owners and not any(name == o or name.startswith(o + ".") for o in owners):
                problems.append(f"{name} imports {imp}")
    assert not problems


def test_pyspark_has_one_owner_and_it_is_the_module_that_imports_it():
    importers = sorted(
        name for name, imported in modules() if any(i.split(".")[0] == "pyspark" for i in imported)
    )
    assert OWNERS["pyspark"] == ("checkpoint_doctor.spark",)
    assert importers == ["checkpoint_doctor.spark"]


def import_graph() -> dict[str, set[str]]:
    """Return each module of the package -> the package modules it imports, wherever in the file
    (module level, inside a function, under ``if TYPE_CHECKING``); ``from a import b`` imports
    ``a.b`` when ``b`` is a module, else ``a``; relative imports resolved."""
    parsed = _parsed()
    names = {name: path for name, path, _ in parsed}
    graph: dict[str, set[str]] = {}
    for name, path, tree in parsed:
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if sub in names:
                        edges.add(sub)
                    elif base in names:
                        edges.add(base)
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components of more than one module (Tarjan's algorithm,
    iterative): each holds an import cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_package_has_no_import_cycle():
    """Issue 35: reading flows down once (no module imports, even inside a function or for its
    types only, a module that imports it back)."""
    graph = import_graph()
    assert len(graph) > 150
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import():
    graph = import_graph()
    # context -> line_rules -> context, as it was before issue 35
    graph["checkpoint_doctor.diagnosis.line_rules"].add("checkpoint_doctor.diagnosis.context")
    graph["checkpoint_doctor.diagnosis.context"].add("checkpoint_doctor.diagnosis.line_rules")
    assert cycles(graph) == [
        ["checkpoint_doctor.diagnosis.context", "checkpoint_doctor.diagnosis.line_rules"]
    ]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
