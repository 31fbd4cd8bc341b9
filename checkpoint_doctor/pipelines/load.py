"""Read a pipeline's storage root and judge each flow's live version (the I/O edge).

One recursive listing of the storage root maps the flows (:mod:`.layout`); each flow's live
version is diagnosed as the ordinary checkpoint it is, on the Spark lines asked; each flow's file
sources' logs name the tables it reads; each table's file sink log (found in the warehouse beside
the storage root, or named) says which batch ids a new query would have skipped.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from checkpoint_doctor.pipelines.layout import PipelineLayout, pipeline_layout
from checkpoint_doctor.pipelines.spec import FlowCode, plan_flags
from checkpoint_doctor.pipelines.verdict import FlowRestart, PipelineVerdict, pipeline_verdict
from checkpoint_doctor.reading.layout import SINK_LOG
from checkpoint_doctor.reading.storage import open_storage
from checkpoint_doctor.reading.storage.urls import normalize_url
from checkpoint_doctor.valueclasses import frozen

#: Where a table's files lie relative to the storage root's parent (the project directory):
#: ``spark-warehouse/`` is Spark's default ``spark.sql.warehouse.dir``.
WAREHOUSE_NAMES = ("spark-warehouse", "warehouse")
_PATH = re.compile(r'"path"\s*:\s*"([^"]+)"')
#: Bytes read from a source log file to find the table it reads (the first entries are enough).
SOURCE_LOG_HEAD = 64 * 1024


@frozen
class PipelineReport:
    """A storage root judged for one Spark line: the layout, each flow's verdict, where tables lie."""

    root: str
    spark: str
    layout: PipelineLayout
    verdict: PipelineVerdict
    warehouse: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "pipeline": self.root,
            "spark": self.spark,
            "warehouse": self.warehouse,
            **self.verdict.to_dict(),
        }


def read_layout(root: str, storage_options: Mapping[str, Any] | None = None) -> PipelineLayout | None:
    """The flows under a storage root, or None when it holds no ``_checkpoints/`` flow."""
    storage = open_storage(normalize_url(root), storage_options)
    listing = storage.child("_checkpoints").list_tree(missing_ok=True)
    dirs = [f"_checkpoints/{d}" for d in listing.dirs]
    files = [f"_checkpoints/{f.path}" for f in listing.files]
    return pipeline_layout(dirs, files)


def _reads(storage: Any, version_dir: str) -> tuple[str, ...]:
    """The tables a flow reads: the parent directory names of the files its file sources' logs list."""
    tables: list[str] = []
    listing = storage.child(f"{version_dir}/sources").list_tree(missing_ok=True)
    for f in listing.files:
        name = f.path.rpartition("/")[2]
        if name.startswith(".") or not name.split(".")[0].isdigit():
            continue
        head = storage.read(f"{version_dir}/sources/{f.path}", max_bytes=SOURCE_LOG_HEAD)
        for m in _PATH.finditer(head.decode("utf-8", errors="replace")):
            parent = m.group(1).rstrip("/").rsplit("/", 2)
            if len(parent) == 3 and parent[1] not in tables:
                tables.append(parent[1])
    return tuple(tables)


#: The most bytes of log entries read to tell whether a flow has read every file of its input tables.
LOG_FILES_BUDGET = 16 * 1024 * 1024


def _logged_files(storage: Any, log_dir: str, budget: list[int]) -> set[str] | None:
    """The file names every entry of a file log lists (a file sink's ``_spark_metadata`` or a file
    source's ``sources/N``), or None when they are more than the budget left."""
    from checkpoint_doctor.errors import FileTooLargeError

    names: set[str] = set()
    listing = storage.child(log_dir).list_tree(missing_ok=True)
    for f in listing.files:
        stem = f.path.rpartition("/")[2]
        if "/" in f.path or stem.startswith(".") or not stem.split(".")[0].isdigit():
            continue
        try:
            data = storage.read(f"{log_dir}/{f.path}", max_bytes=budget[0])
        except FileTooLargeError:
            return None
        budget[0] -= len(data)
        names.update(m.group(1).rpartition("/")[2] for m in _PATH.finditer(data.decode("utf-8", "replace")))
    return names


def unread_files(
    storage: Any, version_dir: str, warehouse_storage: Any, tables: tuple[str, ...]
) -> int | None:
    """How many files the file sink logs of ``tables`` list that the flow's file sources never
    listed (FileStreamSource reads a table's files from its sink log, FileStreamSinkLog), or None
    when not known (no warehouse, a log too large)."""
    budget = [LOG_FILES_BUDGET]
    read: set[str] = set()
    listing = storage.child(f"{version_dir}/sources").list_tree(missing_ok=True)
    for source in sorted({f.path.split("/")[0] for f in listing.files if "/" in f.path}):
        got = _logged_files(storage, f"{version_dir}/sources/{source}", budget)
        if got is None:
            return None
        read |= got
    unread = 0
    for table in tables:
        held = _logged_files(warehouse_storage, f"{table}/{SINK_LOG}", budget)
        if held is None:
            return None
        unread += len(held - read)
    return unread


def sink_log_batches(warehouse_storage: Any, table: str) -> tuple[int, ...] | None:
    """The batch ids of a table's file sink log, or None when the table has no log there."""
    listing = warehouse_storage.child(f"{table}/{SINK_LOG}").list_tree(missing_ok=True)
    if not listing.files and not listing.dirs:
        return None
    ids = set()
    for f in listing.files:
        stem = f.path.rpartition("/")[2].split(".")[0]
        if "/" not in f.path and stem.isdigit() and not f.path.startswith("."):
            ids.add(int(stem))
    return tuple(sorted(ids))


def find_warehouse(root: str, storage_options: Mapping[str, Any] | None = None) -> str | None:
    """The warehouse beside the storage root (``<root>/../spark-warehouse``), if one exists."""
    parent = normalize_url(root).rstrip("/").rpartition("/")[0]
    for name in WAREHOUSE_NAMES:
        url = f"{parent}/{name}"
        if open_storage(url, storage_options).subdirs():
            return url
    return None


#: The lines whose pipelines start a deduplicating Python flow with no upstream flow.
UNORDERED_LINES = ("4.1", "4.2")

#: The most source files of a pipeline read for its flows' definitions.
MAX_SOURCE_FILES = 500


def read_flow_code(
    root: str, storage_options: Mapping[str, Any] | None = None, *, spec: str | None = None
) -> dict[str, FlowCode]:
    """The flows the pipeline's code defines, by flow name: from the ``spark-pipeline.yml`` beside
    the storage root and the source files its ``libraries`` globs name (empty when there is none).
    ``spec``: the pipeline's code elsewhere (``--job``: a ``spark-pipeline.yml`` or the project
    directory holding one), the code the next run will run.

    Raises:
        UsageError: ``spec`` names no pipeline spec file."""
    from checkpoint_doctor.pipelines.layout import SPEC_NAMES
    from checkpoint_doctor.pipelines.spec import python_flows, spec_storage, sql_flows

    names: tuple[str, ...] = SPEC_NAMES
    if spec is not None:
        url = normalize_url(spec).rstrip("/")
        if url.endswith((".yml", ".yaml")):
            parent_url, _, name = url.rpartition("/")
            names = (name,)
        else:
            parent_url = url
    else:
        parent_url = normalize_url(root).rstrip("/").rpartition("/")[0]
    parent = open_storage(parent_url, storage_options)
    spec_text = None
    for name in names:
        if parent.exists(name):
            spec_text = parent.read(name, max_bytes=SOURCE_LOG_HEAD).decode("utf-8", errors="replace")
            break
    if spec_text is None:
        if spec is not None:
            from checkpoint_doctor.errors import UsageError

            raise UsageError(
                f"--job {spec} names no pipeline spec ({' or '.join(SPEC_NAMES[:2])})",
                hint="for a pipeline's storage root, --job takes its spark-pipeline.yml or the project directory",
            )
        return {}
    storage = spec_storage(spec_text)
    if (
        spec is None
        and storage is not None
        and storage.rstrip("/").rpartition("/")[2] != root.rstrip("/").rpartition("/")[2]
    ):
        return {}  # the spec names another storage root
    tops = sorted(set(re.findall(r"include:\s*[\"']?([^/\s\"'*]+)", spec_text)))
    flows: dict[str, FlowCode] = {}
    read = 0
    for top in tops:
        for f in parent.child(top).list_tree(missing_ok=True).files:
            if read >= MAX_SOURCE_FILES or not f.path.endswith((".py", ".sql")):
                continue
            read += 1
            text = parent.read(f"{top}/{f.path}", max_bytes=SOURCE_LOG_HEAD).decode("utf-8", errors="replace")
            parse = sql_flows if f.path.endswith(".sql") else python_flows
            for code in parse(text, f"{top}/{f.path}"):
                flows[code.flow] = code
    return flows


def _restart(
    checkpoint: str, spark: str, storage_options: Mapping[str, Any] | None, stateful: bool | None = None
) -> FlowRestart:
    """The ordinary prediction of a live version's restart on one line (micro-batch, as a pipeline
    runs its flows), read as ``diagnose --spark LINE --mode micro-batch --live-window 0`` reads it."""
    from checkpoint_doctor.diagnosis.matrix import diagnose_matrix
    from checkpoint_doctor.diagnosis.options import matrix_options
    from checkpoint_doctor.reading.pipeline import load_checkpoint, require_checkpoint

    snapshot = require_checkpoint(load_checkpoint(checkpoint, storage_options=storage_options))
    options = matrix_options(
        now_ms=int(time.time() * 1000),
        spark=[spark],
        modes=["micro-batch"],
        stateful=stateful,
        live_window_s=0,
    )
    result = diagnose_matrix(snapshot, options)
    prediction = result.primary.diagnosis.prediction
    error = prediction.error
    return FlowRestart(
        starts=prediction.starts,
        summary=prediction.summary,
        error=error.message if error is not None else None,
        search=error.search if error is not None else None,
        next_batch_id=prediction.next_batch_id if prediction.starts else None,
        codes=tuple(str(f.code) for f in result.findings),
        committed=bool(snapshot.commits.ids),
        has_state=any(f.path.startswith("state/") for f in snapshot.files),
    )


def judge_pipeline(
    root: str,
    spark: str,
    *,
    warehouse: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    layout: PipelineLayout | None = None,
    code_spec: str | None = None,
) -> PipelineReport:
    """Judge every flow of the pipeline whose storage root is ``root`` for one Spark line."""
    # As the storage layer names it (a relative local path made absolute): its parent is looked at.
    root = open_storage(normalize_url(root), storage_options).url.rstrip("/")
    layout = layout or read_layout(root, storage_options)
    if layout is None:
        from checkpoint_doctor.errors import NotACheckpointError

        raise NotACheckpointError(root, "no _checkpoints/<catalog>/<schema>/<table>/<flow>/ below it")
    storage = open_storage(root, storage_options)
    # The pipeline's own code says which flows are stateful (a join's state/ deleted leaves no trace).
    code = read_flow_code(root, storage_options, spec=code_spec)
    restarts: dict[str, FlowRestart] = {}
    reads: dict[str, tuple[str, ...]] = {}
    for f in layout.flows:
        if f.live is None:
            continue
        reads[f.name] = _reads(storage, f.version_dir(f.live))
        if not f.live_is_empty:
            stateful = True if f.flow in code and code[f.flow].stateful else None
            restart = _restart(f"{root}/{f.version_dir(f.live)}", spark, storage_options, stateful)
            found = code.get(f.flow)
            says = None
            if found is not None and found.stateful:
                says = (
                    "joins two streams"
                    if found.joins
                    else "makes it stateful (a join, aggregation or deduplication)"
                )
            # 4.1 and 4.2 lose a deduplicating Python flow's inputs (spec.FlowCode.eager_input); 4.3
            # orders it after its upstream flows (fixtures/sdp/spark-*/code-new-stateful).
            unordered = found is not None and found.eager_input and spark in UNORDERED_LINES
            restarts[f.name] = dataclasses.replace(
                restart, plan_flags=plan_flags(found), code_stateful=says, unordered=unordered
            )
        else:
            # The older version names what the flow read before; the empty one reads all again.
            older = [v for v in f.history if v not in f.empty]
            if older:
                reads[f.name] = _reads(storage, f.version_dir(older[-1]))
    warehouse = normalize_url(warehouse) if warehouse else find_warehouse(root, storage_options)
    sinks: dict[str, tuple[int, ...] | None] = {}
    if warehouse is not None:
        wh = open_storage(warehouse, storage_options)
        for table in layout.tables():
            sinks[table] = sink_log_batches(wh, table)
        # A flow started before its upstream flows reads only what their tables held before the run.
        for name, r in list(restarts.items()):
            if r.unordered:
                fl = layout.flow(name)
                if fl is None or fl.live is None:
                    continue
                restarts[name] = dataclasses.replace(
                    r, unread_files=unread_files(storage, fl.version_dir(fl.live), wh, reads.get(name, ()))
                )
    verdict = pipeline_verdict(layout, restarts, reads, sinks)
    return PipelineReport(root, spark, layout, verdict, warehouse)


def live_checkpoint(flow_dir: str, storage_options: Mapping[str, Any] | None = None) -> str | None:
    """The live version of a flow directory (``.../_checkpoints/c/s/t/f``), or None if it has none."""
    from checkpoint_doctor.pipelines.layout import live_of

    url = normalize_url(flow_dir).rstrip("/")
    live = live_of(open_storage(url, storage_options).subdirs())
    return f"{url}/{live}" if live is not None else None


#: The Spark lines with Declarative Pipelines (SPARK-51727: spark-pipelines since 4.1).
SDP_LINES = ("4.1", "4.2", "4.3")


def pipeline_lines(asked: Sequence[str]) -> tuple[str, ...]:
    """The lines to judge: those asked that have pipelines (a version names its line), else all."""
    lines = tuple(dict.fromkeys(".".join(a.split(".")[:2]) for a in asked))
    chosen = tuple(line for line in lines if line in SDP_LINES)
    return chosen or SDP_LINES


def is_storage_root(url: str, storage_options: Mapping[str, Any] | None = None) -> bool:
    """Whether a directory is a pipeline's storage root (it holds ``_checkpoints/``)."""
    try:
        return "_checkpoints" in open_storage(normalize_url(url), storage_options).subdirs()
    except Exception:  # noqa: BLE001 - not a directory, unreadable: not a storage root either
        return False


def judge_lines(
    root: str,
    lines: Sequence[str],
    *,
    warehouse: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    code_spec: str | None = None,
) -> tuple[PipelineReport, ...]:
    """Judge the pipeline on each line (one listing of the storage root). ``code_spec``: the
    pipeline's code to judge with (a ``spark-pipeline.yml`` or its directory; default: beside the root)."""
    root = open_storage(normalize_url(root), storage_options).url.rstrip("/")
    layout = read_layout(root, storage_options)
    return tuple(
        judge_pipeline(
            root,
            line,
            warehouse=warehouse,
            storage_options=storage_options,
            layout=layout,
            code_spec=code_spec,
        )
        for line in lines
    )


def reset_facts(
    flow_dir: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    code: FlowCode | None = None,
    stores: Sequence[tuple[int, str]] = (),
    start: str = "committed",
) -> Any:
    """What ``plan <flow dir> --reset-flow`` copies and writes (pipelines.reset.ResetFlow), read from
    the flow's versions: the newest version that committed a batch, its last committed batch ``N``,
    the sha256 of each file copied, and the stateful stores (from the version's ``state/``, else the
    pipeline's code, else ``stores``).

    Raises:
        RefusedError: no version of the flow committed a batch (a reset would be a start from
            nothing: ``--full-refresh`` is that); ``start`` earliest on a flow without a file source.
    """
    from checkpoint_doctor.digest import sha256_hex
    from checkpoint_doctor.errors import RefusedError
    from checkpoint_doctor.pipelines.layout import is_version
    from checkpoint_doctor.pipelines.reset import (
        START_EARLIEST,
        START_LATEST,
        STARTS,
        ResetFlow,
        copied_paths,
        rewind_offsets,
    )
    from checkpoint_doctor.pipelines.spec import JOIN_STORES
    from checkpoint_doctor.planning.state_files import all_stores
    from checkpoint_doctor.reading.pipeline import load_checkpoint

    url = normalize_url(flow_dir).rstrip("/")
    flow = open_storage(url, storage_options)
    versions = sorted((n for n in flow.subdirs() if is_version(n)), key=int)
    for v in reversed(versions):
        snap = load_checkpoint(f"{url}/{v}", storage_options=storage_options)
        committed = [b for b in snap.commits.ids if snap.offsets.get(b) is not None]
        if committed:
            break
    else:
        raise RefusedError(
            f"no version of {url} committed a batch: a reset would start the flow from nothing",
            hint="spark-pipelines run --full-refresh <table> starts a flow from nothing (it truncates the table)",
        )
    batch = max(committed)
    if start not in STARTS:
        from checkpoint_doctor.errors import UsageError

        raise UsageError(f"--reset-start takes {' or '.join(STARTS)}, not {start}")
    paths = copied_paths([f.path for f in snap.files], batch)
    rewritten: list[tuple[str, str]] = []
    rewound: tuple[int, ...] = ()
    reread_files: set[str] = set()
    reread_entries = 0
    if start == START_EARLIEST:
        # Each file source back at its start: its offsets rewritten, its source log not copied.
        _, rewound = rewind_offsets(flow.read(f"{v}/offsets/{batch}").decode("utf-8"))
        if not rewound:
            raise RefusedError(
                f"{url} reads no file source (a table read as a stream): --reset-start earliest has "
                "nothing to go back to; nothing was planned",
                hint="--reset-start committed keeps its sources' committed offsets",
            )
        offsets = {f"offsets/{batch}", f"offsets/{batch - 1}"}
        logs = tuple(f"sources/{i}/" for i in rewound)
        kept = []
        for p, src in paths:
            if p in offsets:
                rewritten.append((p, rewind_offsets(flow.read(f"{v}/{src}").decode("utf-8"))[0]))
            elif p.startswith(logs):
                reread_entries += 1
                text = flow.read(f"{v}/{src}", max_bytes=LOG_FILES_BUDGET).decode("utf-8", "replace")
                reread_files.update(m.group(1) for m in _PATH.finditer(text))
            else:
                kept.append((p, src))
        paths = kept
    skipped = 0
    if start == START_LATEST:
        rewritten, rewound, skipped, paths = _latest(flow, url, v, batch, paths, storage_options)
    copies = tuple((p, src, sha256_hex(flow.read(f"{v}/{src}"))) for p, src in paths)
    pairs = sorted({(s.operator_id, s.store_name) for s in all_stores(snap)})
    if not pairs and stores:
        pairs = sorted(set(stores))
    if not pairs and code is not None and code.stateful:
        pairs = (
            [(int(s.split(":")[0]), s.split(":")[1]) for s in JOIN_STORES] if code.joins else [(0, "default")]
        )
    entry = snap.offsets.get(batch)
    meta = entry.record.metadata if entry is not None and entry.record is not None else None
    shuffle = meta.conf_value("spark.sql.shuffle.partitions") if meta is not None else None
    partitions = int(shuffle) if shuffle and shuffle.isdigit() else 0
    if pairs and not partitions:
        dirs = [p for op in snap.state.operators for p in op.partition_dirs]
        partitions = max(dirs) + 1 if dirs else 1
    provider_conf = (meta.conf_value("spark.sql.streaming.stateStore.providerClass") if meta else None) or ""
    return ResetFlow(
        source=v,
        batch=batch,
        version=str(int(versions[-1]) + 1),
        copies=copies,
        stores=tuple(pairs),
        partitions=partitions if pairs else 0,
        provider="rocksdb" if "RocksDB" in provider_conf else "hdfs",
        start=start,
        rewritten=tuple(rewritten),
        rewound=rewound,
        reread_files=len(reread_files),
        reread_entries=reread_entries,
        skipped_files=skipped,
    )


def _sink_files(wh: Any, table: str) -> list[tuple[str, int]]:
    """The files a table's file sink log adds (path, modificationTime), in log order."""
    import json

    out: list[tuple[str, int]] = []
    seen: set[str] = set()
    listing = wh.child(f"{table}/{SINK_LOG}").list_tree(missing_ok=True)
    names = [f.path for f in listing.files if "/" not in f.path and f.path.split(".")[0].isdigit()]
    for name in sorted(names, key=lambda n: int(n.split(".")[0])):
        for line in (
            wh.read(f"{table}/{SINK_LOG}/{name}", max_bytes=LOG_FILES_BUDGET).decode().splitlines()[1:]
        ):
            entry = json.loads(line)
            if entry.get("action", "add") == "add" and entry["path"] not in seen:
                seen.add(entry["path"])
                out.append((entry["path"], int(entry.get("modificationTime", 0))))
    return out


def _latest(
    flow: Any, url: str, v: str, batch: int, paths: list[tuple[str, str]], storage_options: Any
) -> tuple[list[tuple[str, str]], tuple[int, ...], int, list[tuple[str, str]]]:
    """``--reset-start latest``: each file source gets one more log entry listing every file its
    table's sink log adds that the source never listed (FileStreamSource takes its seen files from
    its log), and its offset in offsets/N-1 and offsets/N names that entry. Returns the files
    written, the sources, how many files are skipped, and the copies left."""
    from checkpoint_doctor.errors import RefusedError
    from checkpoint_doctor.pipelines.layout import flow_dir_parts
    from checkpoint_doctor.pipelines.reset import rewind_offsets, set_file_offsets, source_log_entry

    text = flow.read(f"{v}/offsets/{batch}").decode("utf-8")
    _, rewound = rewind_offsets(text)
    parts = flow_dir_parts(url)
    warehouse = find_warehouse(parts[0], storage_options) if parts else None
    if not rewound or warehouse is None:
        raise RefusedError(
            f"{url}: --reset-start latest needs a file source and its table's sink log "
            f"({'no file source' if not rewound else 'no warehouse beside the storage root'}); nothing was planned",
            hint="--reset-start committed keeps its sources' committed offsets",
        )
    wh = open_storage(warehouse, storage_options)
    lines = text.split("\n")
    offsets: dict[int, int] = {}
    written: list[tuple[str, str]] = []
    skipped = 0
    for i in rewound:
        m = int(json.loads(lines[2 + i])["logOffset"])
        k = m + 1
        if (k + 1) % 10 == 0:  # CompactibleFileStreamLog.isCompactionBatch (compactInterval 10)
            raise RefusedError(
                f"{url}: source {i}'s next log entry {k} is a compaction batch; nothing was planned",
                hint="--reset-start committed, or let the flow run one batch first",
            )
        budget = [LOG_FILES_BUDGET]
        read = _logged_files(flow, f"{v}/sources/{i}", budget) or set()
        listed = flow.read(f"{v}/sources/{i}/{m}", max_bytes=LOG_FILES_BUDGET).decode() if m >= 0 else ""
        tables = {p.group(1).rstrip("/").rsplit("/", 2)[1] for p in _PATH.finditer(listed)}
        if len(tables) != 1:
            raise RefusedError(f"{url}: source {i}'s table is not told by its log; nothing was planned")
        new = [(p, t) for p, t in _sink_files(wh, tables.pop()) if p.rpartition("/")[2] not in read]
        skipped += len(new)
        offsets[i] = k
        written.append((f"sources/{i}/{k}", source_log_entry(new, k)))
    rewrite = {f"offsets/{batch}", f"offsets/{batch - 1}"}
    for p, src in paths:
        if p in rewrite:
            written.append((p, set_file_offsets(flow.read(f"{v}/{src}").decode("utf-8"), offsets)))
    return written, rewound, skipped, [(p, src) for p, src in paths if p not in rewrite]


def _check_consents(facts: Any, flow: str, accept_duplicates: bool, accept_data_loss: bool) -> None:
    """Refuse once with every consent the reset lacks (rows read again, data lost), before anything
    more is read. The planner keeps its own data-loss refusal for a plan made otherwise (apply's
    re-plan); the words are the same (pipelines.reset.reset_words)."""
    from checkpoint_doctor.errors import ConsentNeededError
    from checkpoint_doctor.pipelines.reset import reset_words

    starts, loss = reset_words(facts, flow)
    missing: list[tuple[str, str]] = []
    if facts.start == "earliest" and not accept_duplicates:
        missing.append((starts, "--accept-duplicates"))
    if loss is not None and not accept_data_loss:
        missing.append((f"resetting {flow} loses data ({loss})", "--accept-data-loss"))
    if missing:
        consents = tuple(flag for _, flag in missing)
        raise ConsentNeededError(
            "; ".join(what for what, _ in missing) + "; nothing was planned",
            consents,
            hint=f"pass {' and '.join(consents)} to reset it anyway",
        )


def plan_reset(
    flow_dir: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    pipeline: str | None = None,
    accept_data_loss: bool = False,
    spark: str | None = None,
    live_window_s: float = 0.0,
    stores: Sequence[tuple[int, str]] = (),
    code_spec: str | None = None,
    start: str = "committed",
    accept_duplicates: bool = False,
) -> tuple[Any, Any]:
    """``plan <flow dir> --reset-flow``: the plan (the flow directory its root) and what it copies and
    writes (pipelines.reset.ResetFlow). ``pipeline``: the storage root (its code says what is stateful;
    ``code_spec``: the code the next run runs, ``--job``).

    Raises:
        RefusedError: nothing committed yet, or a start no source can take.
        ConsentNeededError: a stateful flow (or a start past files) without ``accept_data_loss``, a
            start from the earliest without ``accept_duplicates``."""
    from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
    from checkpoint_doctor.planning import PlanOptions
    from checkpoint_doctor.planning.planner import plan_repair
    from checkpoint_doctor.reading.pipeline import load_checkpoint

    url = normalize_url(flow_dir).rstrip("/")
    flow = url.rpartition("/")[2]
    code = read_flow_code(pipeline, storage_options, spec=code_spec).get(flow) if pipeline else None
    facts = reset_facts(url, storage_options, code=code, stores=stores, start=start)
    _check_consents(facts, "/".join(url.split("/")[-2:]), accept_duplicates, accept_data_loss)
    snapshot = load_checkpoint(url, storage_options=storage_options)
    dopts = DiagnoseOptions(spark=spark, mode="micro-batch", live_window_s=live_window_s)
    request = PlanOptions(accept_data_loss=accept_data_loss, reset_flow=facts, diagnose=dopts)
    plan = plan_repair(
        snapshot, diagnose(snapshot, dopts), request, storage_options=dict(storage_options or {})
    )
    return plan, facts
