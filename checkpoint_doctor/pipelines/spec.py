"""What a pipeline's own code says of its flows. Pure: takes the texts, returns data.

``spark-pipeline.yml`` names the storage root and the source files (``libraries: - glob: include``);
each SQL statement ``CREATE STREAMING TABLE t AS ...`` / ``CREATE FLOW f AS INSERT INTO t ...`` and each
Python function under ``@dp.table`` / ``@dp.append_flow`` defines a flow (named after the function,
or ``name=``). A flow whose definition joins, groups or deduplicates streams is stateful: with its
``state/`` gone nothing in the checkpoint says so, but its code does.
"""

from __future__ import annotations

import re

from checkpoint_doctor.valueclasses import frozen

_SQL_FLOW = re.compile(
    r"CREATE\s+(?:OR\s+REFRESH\s+)?(?:STREAMING\s+TABLE|FLOW)\s+(?:IF\s+NOT\s+EXISTS\s+)?([`\w.]+)",
    re.IGNORECASE,
)
_SQL_STATEFUL = re.compile(r"\bJOIN\b|\bGROUP\s+BY\b|\bDISTINCT\b|\bWINDOW\s*\(", re.IGNORECASE)
_SQL_JOIN = re.compile(r"\bJOIN\b", re.IGNORECASE)
_PY_DECORATOR = re.compile(
    r"@(?:dp|dlt|pipelines)\.(table|append_flow|materialized_view)\s*(\((?P<args>[^)]*)\))?\s*\n"
    r"\s*def\s+(?P<func>\w+)",
)
_PY_DEDUP = re.compile(r"\.dropDuplicates\(|\.drop_duplicates\(|\.dropDuplicatesWithinWatermark\(")
_PY_NAME = re.compile(r"""\bname\s*=\s*["']([^"']+)["']""")
_PY_STATEFUL = re.compile(
    r"\.join\(|\.groupBy\(|\.groupby\(|\.agg\(|\.distinct\(|dropDuplicates|transformWithState|"
    r"applyInPandasWithState|\.count\(\)"
)


@frozen
class FlowCode:
    """A flow as the pipeline's code defines it."""

    flow: str
    file: str
    stateful: bool
    #: A stream-stream join: its state is four stores per partition, none named ``default``
    #: (SymmetricHashJoinStateManager: left/right keyToNumValues and keyWithIndexToValue).
    joins: bool = False
    #: A Python flow that deduplicates: Spark Connect analyses a Deduplicate's input on its own
    #: (SparkConnectPlanner.transformDeduplicate: ``new QueryExecution(session, input).analyzed``),
    #: outside the pipeline's flow analysis, so on 4.1 and 4.2 the tables it reads are not the
    #: flow's inputs: the graph gives it no upstream flow (DataflowGraph.upstreamFlows) and
    #: TriggeredGraphExecution starts it at once, beside the flows that write what it reads.
    eager_input: bool = False


#: The stores of a stream-stream join's operator 0, as ``plan --state-store`` takes them.
JOIN_STORES = tuple(
    f"0:{side}-{kind}" for side in ("left", "right") for kind in ("keyToNumValues", "keyWithIndexToValue")
)


def plan_flags(code: FlowCode | None) -> tuple[str, ...]:
    """What ``plan`` must be told of a flow that its checkpoint may no longer say (state/ gone): that
    it is stateful, and a join's four stores (``reset-state`` recreates ``0:default`` otherwise, and
    the join then fails with CANNOT_READ_DELTA_FILE_NOT_EXISTS on ``left-keyToNumValues``)."""
    if code is None or not code.stateful:
        return ()
    return ("--stateful", *(f"--state-store={s}" for s in JOIN_STORES if code.joins))


def sql_flows(text: str, file: str) -> list[FlowCode]:
    """The streaming flows of a SQL file, each with its statement's statefulness."""
    out = []
    for statement in text.split(";"):
        m = _SQL_FLOW.search(statement)
        if m is None or "STREAM" not in statement.upper():
            continue
        name = m.group(1).strip("`").rsplit(".", 1)[-1]
        body = statement[m.end() :]
        out.append(FlowCode(name, file, bool(_SQL_STATEFUL.search(body)), bool(_SQL_JOIN.search(body))))
    return out


def python_flows(text: str, file: str) -> list[FlowCode]:
    """The flows of a Python file: each decorated function, its body up to the next decorator."""
    out = []
    matches = list(_PY_DECORATOR.finditer(text))
    for i, m in enumerate(matches):
        body = text[m.end() : matches[i + 1].start() if i + 1 < len(matches) else len(text)]
        named = _PY_NAME.search(m.group("args") or "")
        name = named.group(1) if named else m.group("func")
        out.append(
            FlowCode(
                name, file, bool(_PY_STATEFUL.search(body)), ".join(" in body, bool(_PY_DEDUP.search(body))
            )
        )
    return out


def spec_storage(text: str) -> str | None:
    """The ``storage:`` of a ``spark-pipeline.yml`` (one line, as the spec writes it), or None."""
    m = re.search(r"^storage:\s*(\S+)\s*$", text, re.MULTILINE)
    return m.group(1).strip("\"'") if m else None
