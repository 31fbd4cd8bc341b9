"""Plan repairs: ranked options per error finding, their consequences, one chosen plan. Pure.

Strategies (reference §15.3):

* ``bridge``: write ``offsets/(L-1)`` as a byte copy of ``offsets/P`` (P = newest offsets id below L):
  exactly the start an async restart uses (``getPrevBatchFromStorage``), so a synchronous restart
  behaves like the async one; at most the range P..L is read again. No Spark needed.
* ``quarantine``: move single broken or blocking files into the backup (a broken uncommitted
  ``offsets/L``, a broken ``commits/K``, commits ahead of offsets, an orphan ``.crc``, leftovers in a
  fresh checkpoint, sink log entries ahead of the checkpoint).
* ``rollback``: quarantine every offsets/commit above the newest consistent batch R (readable
  ``offsets/R``, ``offsets/R-1`` and ``commits/R``; state version R+1 loadable in every store), the
  state files above version R+1 and, with a sink path, the sink log entries above R. Spark re-plans
  R+1.. with new end offsets: sinks idempotent by batch id skip ids they already hold, so a rollback
  across committed batches needs ``--accept-data-loss`` unless the file sink log is rolled back too.
* ``recreate-metadata``: write ``metadata`` with ``--query-id`` (the old id) or a new id derived from
  the checkpoint (deterministic), warning that sinks and listeners keyed on the id see a new query.
* ``catch-up``: the documented recipe for the async tail, run by ``checkpoint-doctor catch-up``.

Every option is evaluated by simulating its changes on the snapshot and diagnosing the result, so
the consequences stated come from the same restart model as ``diagnose``.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from checkpoint_doctor.diagnosis import DiagnoseOptions, Diagnosis, diagnose
from checkpoint_doctor.diagnosis.codes import CODES, ERROR
from checkpoint_doctor.diagnosis.model import LIVE_WRITER_CODES, Finding
from checkpoint_doctor.ids import range_text
from checkpoint_doctor.layout import hadoop_crc_path, parse_state_file_name
from checkpoint_doctor.planning.plan import CHECKPOINT, SINK, Precondition, RepairPlan, Step
from checkpoint_doctor.snapshot import CheckpointSnapshot, simulate_changes
from checkpoint_doctor.state_chain import newest_restorable_batch

BRIDGE = "bridge"
QUARANTINE = "quarantine"
ROLLBACK = "rollback"
RECREATE_METADATA = "recreate-metadata"
CATCH_UP = "catch-up"
STRATEGIES = (BRIDGE, QUARANTINE, ROLLBACK, RECREATE_METADATA, CATCH_UP)

#: Findings with no safe mechanical repair, and what the operator can do instead.
MANUAL = {
    "CD005": "restart on the Spark version that wrote the checkpoint, or start a new checkpoint",
    "CD006": "set spark.sql.streaming.stateStore.checkpointFormatVersion to the commit log version, or use Spark 4.2+",
    "CD007": "start a new checkpoint: Spark 2.0 offsets cannot be resumed",
    "CD201": "restore the query's original sources, or start a new checkpoint",
    "CD204": "start a new checkpoint for the new Delta table (with a starting version)",
    "CD301": "restore state/ from a backup, or start a new checkpoint and rebuild state from the sources",
    "CD404": "restore the missing _spark_metadata files from a backup",
    "CD405": "restore the damaged _spark_metadata file from a backup",
    "CD501": "stop the query, wait for the live window to pass, and plan again",
    "CD502": "stop the query, wait for the live window to pass, and plan again",
    "CD503": "make sure only one query uses this checkpoint, then plan again",
    "CD602": "restart without asyncProgressTrackingEnabled (stateful queries do not support it)",
    "CD008": "check which mode wrote the log; quarantine the file only if its batch has no commit",
}


@dataclass(frozen=True)
class PlanOptions:
    """What the operator asks of the planner."""

    strategy: str | None = None
    accept_data_loss: bool = False
    query_id: str | None = None
    job: str | None = None
    diagnose: DiagnoseOptions = field(default_factory=DiagnoseOptions)


@dataclass
class _Option:
    strategy: str
    steps: list[Step]
    addresses: tuple[str, ...]
    note: str = ""
    unavailable: str | None = None
    data_loss: bool = False
    consequences: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------------------------- step helpers


def _quarantine(snapshot: CheckpointSnapshot, path: str, reason: str) -> list[Step]:
    """Quarantine a file and its Hadoop .crc side file (they travel together)."""
    steps = [Step(kind="quarantine", path=path, reason=reason)]
    crc = snapshot.crc_of(path)
    if crc is not None:
        steps.append(Step(kind="quarantine", path=crc, reason=f"Hadoop checksum of {path}"))
    return steps


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _rollback_target(snapshot: CheckpointSnapshot, diagnosis: Diagnosis) -> int | None:
    """Return R, the newest batch a rollback can keep (see module docstring), or None."""
    offsets, commits = snapshot.offsets, snapshot.commits
    # -1: state exists but no version loads everywhere, so no batch can be kept.
    has_state = any(op.stores for op in snapshot.state.operators)
    best = newest_restorable_batch(snapshot.state)
    restorable = (-1 if best is None else best) if has_state else None
    for r in sorted(set(offsets.ids) & set(commits.ids), reverse=True):
        o, c = offsets.get(r), commits.get(r)
        if o is None or c is None or o.failure is not None or c.failure is not None:
            continue
        if r > 0:
            prev = offsets.get(r - 1)
            if prev is None or prev.failure is not None:
                continue
        if restorable is not None and r > restorable:
            continue
        return r
    return None


def _rollback_steps(snapshot: CheckpointSnapshot, r: int) -> list[Step]:
    steps: list[Step] = []
    for log in (snapshot.offsets, snapshot.commits):
        for e in log.entries:
            if e.batch_id > r:
                steps += _quarantine(snapshot, e.file.path, f"roll back to batch {r}")
    for op in snapshot.state.operators:
        for store in op.stores:
            prefix = store.path + "/"
            for f in snapshot.files:
                if not f.path.startswith(prefix) or "/" in f.path[len(prefix) :]:
                    continue
                parsed = parse_state_file_name(f.name)
                if parsed is None and f.name.endswith(".crc") and not f.name.startswith("."):
                    parsed = parse_state_file_name(f.name[:-4])
                if parsed is not None and parsed.version > r + 1:
                    steps += _quarantine(snapshot, f.path, f"state version {parsed.version} is above the rollback target")
    if snapshot.sink is not None:
        for sink_entry in snapshot.sink.log.entries:
            if sink_entry.batch_id > r:
                name = f"_spark_metadata/{sink_entry.batch_id}{'.compact' if sink_entry.compact else ''}"
                steps.append(Step(kind="quarantine", area=SINK, path=name, reason=f"sink log entry above batch {r}"))
    return steps


# ------------------------------------------------------------------------------------- options


def _options_for(finding: Finding, snapshot: CheckpointSnapshot, diagnosis: Diagnosis, opts: PlanOptions) -> list[_Option]:
    code = finding.code
    offsets, commits = snapshot.offsets, snapshot.commits
    latest = offsets.latest_id
    k = commits.latest_id
    out: list[_Option] = []

    def rollback() -> _Option:
        r = _rollback_target(snapshot, diagnosis)
        if r is None:
            return _Option(ROLLBACK, [], (code,), unavailable="no batch is consistent in offsets, commits and state")
        return _Option(ROLLBACK, _rollback_steps(snapshot, r), (code,), note=f"roll back to batch {r}")

    if code in ("CD101", "CD103", "CD109") and latest is not None:
        prev = offsets.newest_below(latest)
        missing = f"offsets/{latest - 1}"
        if prev is None or prev.file.path not in snapshot.raw:
            out.append(_Option(BRIDGE, [], (code,), unavailable=f"no readable offsets file below offsets/{latest} to copy"))
        else:
            steps = []
            crc = hadoop_crc_path(missing)
            if crc in snapshot.hadoop_crcs:
                steps.append(Step(kind="quarantine", path=crc, reason=f"orphan checksum of {missing}"))
            steps.append(
                Step(
                    kind="copy",
                    path=missing,
                    source=prev.file.path,
                    source_sha256=_sha256(snapshot.raw[prev.file.path]),
                    reason=f"bridge: {missing} = {prev.file.path}, the start an async restart uses",
                )
            )
            out.append(_Option(BRIDGE, steps, (code,), note=f"{missing} := copy of {prev.file.path}"))
        if code == "CD101":
            command = f"checkpoint-doctor catch-up {snapshot.root} --job {opts.job or 'MODULE:FUNCTION'} --batches 2"
            out.append(
                _Option(
                    CATCH_UP,
                    [Step(kind="run", command=command, reason="re-enable async progress tracking with interval 0, run two micro-batches, stop")],
                    (code,),
                    note="needs the operator's streaming job and new data in the sources",
                )
            )
        if commits.get(latest) is None and code != "CD101":
            out.append(_Option(QUARANTINE, _quarantine(snapshot, f"offsets/{latest}", "re-plan the batch"), (code,), note=f"Spark re-plans batch {latest}"))
        out.append(rollback())
    elif code == "CD104" and latest is not None:
        steps = [s for c in commits.entries if c.batch_id > latest for s in _quarantine(snapshot, c.file.path, "commit ahead of offsets")]
        out.append(_Option(QUARANTINE, steps, (code,), note=f"Spark re-runs batch {latest}"))
        out.append(rollback())
    elif code in ("CD003", "CD202", "CD008", "CD011", "CD012"):
        path = finding.paths[0]
        batch = finding.batch_ids[0] if finding.batch_ids else None
        if batch is not None and batch == latest and commits.get(batch) is None:
            out.append(_Option(QUARANTINE, _quarantine(snapshot, path, "unusable offsets file of an uncommitted batch"), (code,), note=f"Spark re-plans batch {batch}"))
        out.append(rollback())
    elif code == "CD004" and k is not None:
        out.append(_Option(QUARANTINE, _quarantine(snapshot, f"commits/{k}", "unreadable commit"), (code,), note=f"Spark re-runs batch {k}"))
        out.append(rollback())
    elif code in ("CD001", "CD002"):
        query_id = opts.query_id or _derived_query_id(snapshot)
        steps = _quarantine(snapshot, "metadata", "unreadable metadata") if code == "CD002" else []
        if code == "CD001" and snapshot.crc_of("metadata") is not None:
            steps.append(Step(kind="quarantine", path=".metadata.crc", reason="orphan checksum of metadata"))
        steps.append(Step(kind="write", path="metadata", content=json.dumps({"id": query_id}, separators=(",", ":")), reason="recreate the query id"))
        note = "with the given query id" if opts.query_id else "with a NEW query id: sinks and listeners keyed on the query id see a new query"
        out.append(_Option(RECREATE_METADATA, steps, (code,), note=note))
    elif code == "CD504":
        out.append(_Option(QUARANTINE, [Step(kind="quarantine", path=p, reason="orphan checksum blocks the next write") for p in finding.paths], (code,)))
    elif code == "CD507":
        out.append(_Option(QUARANTINE, [s for p in finding.paths for s in _quarantine(snapshot, p, "leftover in a checkpoint with no batches")], (code,)))
    elif code == "CD701" and k is not None:
        keep = max((c for c in commits.ids if c < k and offsets.get(c) is not None), default=None)
        steps = [s for c in commits.entries if c.batch_id > (keep if keep is not None else -1) for s in _quarantine(snapshot, c.file.path, "commit without offsets")]
        out.append(_Option(QUARANTINE, steps, (code,), note=f"continuous processing resumes after epoch {keep}" if keep is not None else "starts again at epoch 0"))
    elif code in ("CD302", "CD303", "CD306", "CD304"):
        out.append(rollback())
    elif code == "CD402" and latest is not None and snapshot.sink is not None:
        steps = [
            Step(kind="quarantine", area=SINK, path=f"_spark_metadata/{e.batch_id}{'.compact' if e.compact else ''}", reason="sink log entry ahead of the checkpoint")
            for e in snapshot.sink.log.entries
            if e.batch_id > latest
        ]
        out.append(_Option(QUARANTINE, steps, (code,), note=f"the sink writes batches {latest + 1}.. again when they run"))
    elif code == "CD110":
        steps = [s for c in commits.entries for s in _quarantine(snapshot, c.file.path, "commit without any offsets")]
        out.append(_Option(ROLLBACK, steps, (code,), note="the query starts again from the sources' initial offsets", data_loss=True))
    return out


def _derived_query_id(snapshot: CheckpointSnapshot) -> str:
    """Return a new query id derived from the checkpoint, so the plan stays deterministic."""
    digest = hashlib.sha256(f"{snapshot.root}\0{snapshot.fingerprint()}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


# ------------------------------------------------------------------------------------- consequences


def _changes(steps: list[Step], snapshot: CheckpointSnapshot) -> tuple[list[tuple[str, str]], dict[tuple[str, str], bytes]]:
    removed: list[tuple[str, str]] = []
    added: dict[tuple[str, str], bytes] = {}
    for s in steps:
        if s.kind == "quarantine":
            removed.append((s.area, s.path))
        elif s.kind == "copy" and s.source is not None:
            added[(s.area, s.path)] = snapshot.raw[s.source]
        elif s.kind == "write" and s.content is not None:
            added[(s.area, s.path)] = s.content.encode()
    return removed, added


def _expected(snapshot: CheckpointSnapshot, steps: list[Step], dopts: DiagnoseOptions) -> Diagnosis:
    removed, added = _changes(steps, snapshot)
    after = simulate_changes(snapshot, removed=removed, added=added)
    return diagnose(after, replace(dopts, now_ms=None, live_window_s=0))


def _origin(path: str | None, steps: list[Step]) -> str | None:
    """Return the original file a path's bytes come from (a bridged copy names its source)."""
    for s in steps:
        if s.kind == "copy" and s.path == path:
            return s.source
    return path


def _batch_of(path: str | None) -> int | None:
    if path is None:
        return None
    tail = path.rpartition("/")[2]
    return int(tail) if tail.isdigit() else None


def _consequences(option: _Option, snapshot: CheckpointSnapshot, before: Diagnosis, after: Diagnosis) -> dict[str, Any]:
    pred = after.prediction
    k = snapshot.commits.latest_id
    planned = set(snapshot.offsets.ids) | set(snapshot.commits.ids)
    out: dict[str, Any] = {"restart": pred.summary, "starts": pred.starts}
    if option.strategy == CATCH_UP:
        out.update(
            {
                "first_batch": None,
                "reread": "batches since the newest durable offsets are read again by the async restart (at-least-once)",
                "duplicates": True,
                "data_loss": False,
                "summary": "The job runs with async progress tracking (interval 0) until two consecutive batches are durable; "
                "the range after the newest durable offsets is read again, as an async restart always does.",
            }
        )
        return out
    b = pred.next_batch_id
    start = _origin(pred.start_from, option.steps)
    start_batch = _batch_of(start)
    kind = None
    if b is not None:
        kind = "rerun" if pred.rerun else ("replanned" if b in planned else "new")
    reread: list[int] = []
    if k is not None and start_batch is not None and start_batch < k:
        reread = list(range(start_batch + 1, k + 1))
    elif k is not None and start is None and b is not None and b <= k:
        reread = list(range(k + 1))
    sink = snapshot.sink
    sink_latest = sink.log.latest_id if sink is not None else None
    sink_rolled_back = any(s.area == SINK for s in option.steps)
    loss = False
    loss_why = ""
    if kind == "replanned" and b is not None and after.mode == "continuous":
        kind = "rerun"  # continuous processing re-runs an epoch from the previous offsets: at-least-once
    if kind == "replanned" and b is not None:
        committed_replanned = [i for i in planned if i >= b and (snapshot.commits.get(i) is not None)]
        if sink_latest is not None and sink_latest >= b and not sink_rolled_back:
            loss, loss_why = True, f"the file sink already holds batch {b} and skips the re-planned batch"
        elif committed_replanned and not sink_rolled_back:
            loss = True
            loss_why = (
                f"batches {min(committed_replanned)}..{max(committed_replanned)} were committed; sinks idempotent by "
                "batch id (file sink, Delta) skip the re-planned ids"
            )
    option.data_loss = option.data_loss or loss
    parts = []
    if b is not None:
        label = {"rerun": "re-runs planned", "replanned": "re-plans", "new": "plans new"}[kind or "new"]
        parts.append(f"Spark {label} batch {b}")
        if pred.start_from is not None:
            parts.append(f"reading from the end of {pred.start_from}" + (f" (a copy of {start})" if start != pred.start_from else ""))
        if pred.end_from:
            parts.append(f"to {pred.end_from}")
    if reread:
        parts.append(
            f"committed batch(es) {range_text(reread)} are read again: duplicates for at-least-once sinks, "
            "an idempotent sink rewrites or skips them"
        )
    elif b is not None:
        parts.append("no committed data is read again")
    if loss:
        parts.append(f"DATA LOSS: {loss_why}")
    out.update(
        {
            "first_batch": {"id": b, "kind": kind},
            "reads_from": start,
            "reads_to": pred.end_from or ("new end offsets" if b is not None else None),
            "reread_batches": [reread[0], reread[-1]] if reread else None,
            "duplicates": bool(reread),
            "data_loss": option.data_loss,
            "summary": "; ".join(parts) + "." if parts else pred.summary,
        }
    )
    if option.strategy == RECREATE_METADATA:
        out["query_id"] = "kept" if "given" in option.note else "NEW: sinks and listeners keyed on the query id see a new query"
    return out


# ------------------------------------------------------------------------------------- the plan


def _preconditions(snapshot: CheckpointSnapshot, steps: list[Step], live_window_s: float) -> tuple[Precondition, ...]:
    pre = [
        Precondition(kind="query_id", value=snapshot.query_id),
        Precondition(kind="latest_batches", offsets=snapshot.offsets.latest_id, commits=snapshot.commits.latest_id),
    ]
    seen: set[tuple[str, str, str]] = set()
    quarantined: set[tuple[str, str]] = set()
    for s in steps:
        touched: list[tuple[str, str, str]] = []
        if s.kind == "quarantine":
            touched.append(("file_unchanged", s.area, s.path))
            quarantined.add((s.area, s.path))
        elif s.kind in ("copy", "write"):
            if (s.area, s.path) not in quarantined:
                touched.append(("file_absent", s.area, s.path))
            if s.kind == "copy" and s.source:
                touched.append(("file_unchanged", s.area, s.source))
        for kind, area, path in touched:
            if (kind, area, path) in seen:
                continue
            seen.add((kind, area, path))
            if kind == "file_absent":
                pre.append(Precondition(kind=kind, area=area, path=path))
                continue
            stat = snapshot.file(path) if area == CHECKPOINT else _sink_stat(snapshot, path)
            pre.append(
                Precondition(
                    kind=kind,
                    area=area,
                    path=path,
                    size=stat.size if stat else None,
                    mtime_ms=stat.mtime_ms if stat and not stat.etag else None,
                    etag=stat.etag if stat else None,
                )
            )
    pre.append(Precondition(kind="no_live_writer", window_s=live_window_s))
    return tuple(pre)


def _sink_stat(snapshot: CheckpointSnapshot, path: str) -> Any:
    if snapshot.sink is None:
        return None
    name = path.rpartition("/")[2]
    for e in snapshot.sink.log.entries:
        if e.file.path == name:
            return e.file
    return None


def _merge(steps: list[Step], new: list[Step]) -> list[str]:
    """Add steps, skipping duplicates and conflicts; return conflict warnings.

    A path may be quarantined and then written (recreate a broken file); anything else touching a
    path twice is a conflict and the later step is dropped.
    """
    warnings = []
    done = {(s.area, s.path, s.kind) for s in steps if s.kind != "run"}
    for s in new:
        if s.kind == "run":
            if s not in steps:
                steps.append(s)
            continue
        if (s.area, s.path, s.kind) in done:
            continue
        kinds = {k for a, p, k in done if (a, p) == (s.area, s.path)}
        if kinds and not (kinds == {"quarantine"} and s.kind in ("write", "copy")):
            warnings.append(f"skipped {s.kind} of {s.path}: another step already changes it")
            continue
        steps.append(s)
        done.add((s.area, s.path, s.kind))
    return warnings


def plan_repair(snapshot: CheckpointSnapshot, diagnosis: Diagnosis, options: PlanOptions | None = None) -> RepairPlan:
    """Return the repair plan for a diagnosed snapshot (read-only, deterministic)."""
    opts = options or PlanOptions()
    dopts = replace(opts.diagnose, spark=diagnosis.spark, mode=diagnosis.mode)
    errors = [f for f in diagnosis.findings if f.severity == ERROR]
    live = [f for f in diagnosis.findings if f.code in LIVE_WRITER_CODES]
    option_docs: list[dict[str, Any]] = []
    unresolved: list[dict[str, Any]] = []
    steps: list[Step] = []
    warnings: list[str] = []
    addresses: list[str] = []
    chosen_strategies: list[str] = []
    for f in live:
        unresolved.append({"code": f.code, "reason": f.message, "manual": MANUAL[f.code]})
    if not live:
        for finding in errors:
            candidates = _options_for(finding, snapshot, diagnosis, opts)
            available = [c for c in candidates if c.unavailable is None and c.steps]
            for c in available:
                after = _expected(snapshot, c.steps, dopts) if c.strategy != CATCH_UP else diagnosis
                c.consequences = _consequences(c, snapshot, diagnosis, after)
                if c.strategy != CATCH_UP and not after.prediction.starts:
                    c.unavailable = f"the restart would still fail ({after.prediction.summary})"
            available = [c for c in available if c.unavailable is None]
            ranked = sorted(available, key=lambda c: (c.data_loss, candidates.index(c)))
            chosen = None
            if ranked:
                if opts.strategy is not None:
                    chosen = next((c for c in ranked if c.strategy == opts.strategy), None)
                if chosen is None:
                    chosen = ranked[0]
                if chosen.data_loss and not opts.accept_data_loss:
                    unresolved.append(
                        {
                            "code": finding.code,
                            "reason": f"the {chosen.strategy} option would lose data: {chosen.consequences.get('summary', '')}",
                            "manual": "pass --accept-data-loss to plan it anyway, or restore files from a backup",
                        }
                    )
                    chosen = None
            option_docs.append(
                {
                    "finding": finding.code,
                    "message": finding.message,
                    "options": [
                        {
                            "rank": i + 1,
                            "strategy": c.strategy,
                            "chosen": c is chosen,
                            "note": c.note,
                            "steps": [s.to_dict() for s in c.steps],
                            "consequences": c.consequences,
                        }
                        for i, c in enumerate(ranked)
                    ]
                    + [{"strategy": c.strategy, "available": False, "reason": c.unavailable} for c in candidates if c.unavailable],
                }
            )
            if chosen is not None:
                warnings += _merge(steps, chosen.steps)
                addresses.append(finding.code)
                chosen_strategies.append(chosen.strategy)
                if chosen.strategy == RECREATE_METADATA and not opts.query_id:
                    warnings.append("metadata gets a NEW query id: sinks and listeners keyed on the query id will see a new query")
            elif not any(u["code"] == finding.code for u in unresolved):
                unresolved.append({"code": finding.code, "reason": CODES[finding.code].title, "manual": MANUAL.get(finding.code, CODES[finding.code].action)})
    executable = [s for s in steps if s.kind != "run"]
    expected = _expected(snapshot, executable, dopts) if executable else diagnosis
    # A finding another option's steps already resolve is not unresolved.
    remaining = set(expected.codes)
    unresolved = [u for u in unresolved if u["code"] in remaining or u["code"] in LIVE_WRITER_CODES]
    expected_doc = {
        "restart": expected.prediction.summary,
        "starts": expected.prediction.starts,
        "next_batch_id": expected.prediction.next_batch_id,
        "codes": list(expected.codes),
    }
    if any(s.kind == "run" for s in steps):
        expected_doc["after"] = "the catch-up run; then: checkpoint-doctor diagnose " + snapshot.root + " --mode micro-batch"
    strategy = ",".join(dict.fromkeys(chosen_strategies)) or None
    return RepairPlan(
        checkpoint=snapshot.root,
        sink=snapshot.sink.url if snapshot.sink is not None else None,
        snapshot_fingerprint=snapshot.fingerprint(),
        spark=diagnosis.spark,
        mode=diagnosis.mode,
        strategy=strategy,
        addresses=tuple(addresses),
        preconditions=_preconditions(snapshot, executable, opts.diagnose.live_window_s),
        steps=tuple(steps),
        options=tuple(option_docs),
        unresolved=tuple(unresolved),
        expected=expected_doc,
        warnings=tuple(dict.fromkeys(warnings)),
    )
