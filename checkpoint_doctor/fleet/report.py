"""Audit records built, linked and summarized, and the audit as text. Pure: typed records in
(:mod:`~checkpoint_doctor.fleet.records`), records and strings out.

One **record** per audited directory (JSON Schema ``schemas/audit-record.json``)::

    {"schema_version", "tool_version", "generated_at", "kind": "checkpoint" | "sink" | "root",
     "url": <URL of the directory>, "root": <root URL>, "path": <path relative to the root>,
     "verdict": "ok" | "warning" | "error" | "unreadable", "exit_code": 0 | 1 | 4 | 8 | 16,
     "codes": [...], "next_step": <a command that runs as printed> | null, ...}

* ``kind`` ``checkpoint`` (``checkpoint``: its URL): diagnosed exactly as ``diagnose`` does
  (default options apart from ``--spark``/``--mode``/``--live-window``): ``restart``, ``matrix``,
  ``lines``, ``latest`` (newest offsets and commit ids, the gap between them, the newest batch's
  planning time), ``timeline`` (the shape ``inspect`` prints) and ``diagnosis`` (``diagnose``'s result).
* ``kind`` ``sink`` (``sink``: its URL): a file sink output directory (it holds
  ``_spark_metadata/``), checked on its own (CD404 files readers need are missing, CD405 unreadable
  log file, CD406 no log): ``findings``, ``sink_log``, ``paired_with`` (the audited checkpoints
  whose logs prove it is theirs, checked with it: CD401-CD403) and ``pairing`` in words.
* ``kind`` ``root``: a root that could not be listed, or a directory below a root and outside every
  checkpoint and sink that could not be listed (``path`` names it; always ``unreadable``). A
  directory inside a checkpoint that could not be listed makes that checkpoint's record
  ``unreadable``, naming the directory.
* ``verdict`` ``unreadable`` (exit code 8): the directory could not be read; ``error`` says why
  (``{"type", "message"}``). An internal error while auditing one directory is recorded the same
  way with exit code 16 and ``error.type`` ``InternalError``.

The exit code of the audit is the bitwise OR of the records' exit codes (fsck style).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from checkpoint_doctor.diagnosis.codes import CODES, SEVERITY_ORDER, SILENT_LOSS
from checkpoint_doctor.diagnosis.versions import qualify_root
from checkpoint_doctor.exit_codes import ExitCode
from checkpoint_doctor.fleet.delta_report import delta_headline, paired_table_note
from checkpoint_doctor.fleet.discovery import NOTE_DELTA, TargetKind
from checkpoint_doctor.fleet.records import (
    ERROR,
    OK,
    RECORD_KINDS,
    ROOT,
    UNREADABLE,
    VERDICT_ORDER,
    VERDICTS,
    WARNING,
    AuditNote,
    AuditSummary,
    CheckpointRecord,
    CodeCount,
    DeltaCounts,
    FileSink,
    KafkaPart,
    LatestBatches,
    Record,
    Restart,
    SinkLogPart,
    SinkRecord,
    Stamp,
    UnreadableRecord,
    Verdict,
    fails_if_stateful,
    verdict_of,
)
from checkpoint_doctor.ids import count_text
from checkpoint_doctor.render.documents import dumps, schema_version
from checkpoint_doctor.render.hints import Hints
from checkpoint_doctor.render.layout import key_values, layout, line_width, section, table
from checkpoint_doctor.world.delta_pairing import SOURCE

if TYPE_CHECKING:
    from checkpoint_doctor.diagnosis.matrix import MatrixDiagnosis
    from checkpoint_doctor.diagnosis.model import Finding
    from checkpoint_doctor.diagnosis.timeline import SinkRow, TimelineRow
    from checkpoint_doctor.fleet.records import JobPart
    from checkpoint_doctor.world.delta_pairing import DeltaPairing

__all__ = [
    "ERROR",
    "OK",
    "UNREADABLE",
    "VERDICTS",
    "VERDICT_ORDER",
    "WARNING",
    "Verdict",
    "fails_if_stateful",
    "verdict_of",
]

NOTES_SHOWN = 20


def only_elsewhere(record: Record) -> bool:
    """Whether a warning concerns only restarts other than the configured one (async switched off,
    a newer line): the configured restart starts and no warning or error finding names it."""
    if record.verdict != WARNING or not isinstance(record, CheckpointRecord) or record.restart.fails:
        return False
    configured = {tuple(c.cell) for c in record.diagnosis.as_configured}
    serious = [f for f in record.findings if f.severity in (ERROR, WARNING)]
    return bool(configured and serious) and all(f.cells and not (set(f.cells) & configured) for f in serious)


def batches_at_risk(record: Record) -> int:
    """Return how many batch ids the record's error and warning findings name (re-run, skipped,
    lost or unreadable batches): the data at risk, as far as a checkpoint shows it."""
    ids = {b for f in record.findings if f.severity in (ERROR, WARNING) for b in f.batch_ids}
    return len(ids)


def restart_fails(record: Record) -> bool:
    """Whether the record is a checkpoint's whose restart that counts fails."""
    return isinstance(record, CheckpointRecord) and record.restart.fails


def triage_key(record: Record) -> tuple[Any, ...]:
    """Order records for triage: the restart that counts fails first, then by verdict, then a
    warning about the configured restart before one about other restarts only, then by the data at
    risk (most batches first), then by path."""
    return (
        0 if restart_fails(record) else 1,
        VERDICT_ORDER[record.verdict],
        1 if only_elsewhere(record) else 0,
        -batches_at_risk(record),
        record.url,
        record.kind,
    )


def combined_exit_code(records: Iterable[Record]) -> int:
    """Return the bitwise OR of the records' exit codes."""
    code = 0
    for record in records:
        code |= int(record.exit_code)
    return code


def line_verdicts(matrix: MatrixDiagnosis) -> str:
    """Return the counted cells of a restart matrix per Spark line, compactly: ``4.3 ok``,
    ``3.5-4.1 ok; 4.2-4.3 FAILS``, ``3.5-4.3 FAILS (micro-batch)`` (the modes that fail) or
    ``4.2 FAILS; 4.3 Delta not judged`` (no Delta Lake release for 4.3)."""
    groups: list[tuple[str, list[str]]] = []
    counted = matrix.counted_cells
    failing_cells = matrix.failing_cells  # a property building a tuple: asked once, not per line
    for line in dict.fromkeys(c.cell.spark for c in counted):
        on_line = [c for c in counted if c.cell.spark == line]
        failing = [c.cell.mode for c in failing_cells if c.cell.spark == line]
        stateless_only = any(fails_if_stateful(c) for c in on_line)
        verdict = (
            # A line with no Delta Lake release (4.3) did not judge the Delta sources: not "ok".
            (
                "Delta not judged"
                if all(c.delta_not_judged for c in on_line)
                else "ok if stateless"
                if stateless_only
                else "ok"
            )
            if not failing
            else "FAILS" + (f" ({', '.join(failing)})" if len(failing) < len(on_line) else "")
        )
        if groups and groups[-1][0] == verdict:
            groups[-1][1].append(line)
        else:
            groups.append((verdict, [line]))
    return "; ".join(
        f"{members[0]}{'-' + members[-1] if len(members) > 1 else ''} {verdict}"
        for verdict, members in groups
    )


def checkpoint_record(
    *,
    url: str,
    root: str,
    path: str,
    matrix: MatrixDiagnosis,
    timeline: Sequence[TimelineRow],
    latest: LatestBatches,
    files: int,
    reads: int,
    sink: FileSink | None = None,
    kafka: KafkaPart | None = None,
    delta: DeltaPairing | None = None,
    job: JobPart | None = None,
) -> CheckpointRecord:
    """Return the record of a checkpoint diagnosed for its restart matrix (``timeline`` its
    :class:`~checkpoint_doctor.diagnosis.timeline.TimelineRow` values); ``sink`` says which file sink
    output was checked with it or why none; ``kafka`` what it says of its Kafka sources; ``delta``
    which Delta tables were paired with it (fleet/delta.py); ``job`` the changed query that judged it
    (``audit --job``, fleet/jobs.py)."""
    return CheckpointRecord(
        url=url,
        root=root,
        path=path,
        exit_code=matrix.exit_code,
        codes=tuple(sorted({str(f.code) for f in matrix.findings})),
        diagnosis=matrix,
        restart=Restart.of(matrix),
        lines=line_verdicts(matrix),
        file_sink=sink if sink is not None else FileSink(),
        files=files,
        reads=reads,
        latest=latest,
        timeline=tuple(timeline),
        kafka=kafka,
        delta=delta,
        job=job,
    )


def paired_sinks(records: Iterable[Record]) -> dict[str, list[str]]:
    """Return, per file sink URL, the checkpoints whose logs proved it is theirs (checked with it)."""
    paired: dict[str, list[str]] = {}
    for r in records:
        if isinstance(r, CheckpointRecord) and r.file_sink.url is not None:
            paired.setdefault(r.file_sink.url, []).append(r.url)
    return paired


def linked(record: Record, paired: Mapping[str, Sequence[str]]) -> Record:
    """Return a sink record that names the checkpoint checked with it, or says that none was
    ("sink not checked": CD401-CD403 need the checkpoint); other records as they are."""
    if not isinstance(record, SinkRecord):
        return record
    with_it = tuple(paired.get(record.url, ()))
    if not with_it:
        pairing = (
            "sink not checked against a checkpoint: no audited checkpoint's logs match this log "
            "(pass it to 'diagnose <checkpoint> --sink-path' for the cross checks)"
        )
    else:
        pairing = "checked with " + ", ".join(with_it) + " (see its record)"
    return replace(record, paired_with=with_it, pairing=pairing)


def link_sinks(records: Sequence[Record]) -> list[Record]:
    """Return the records with each sink record linked to its checkpoint (:func:`linked`)."""
    paired = paired_sinks(records)
    return [linked(r, paired) for r in records]


def sink_record(
    *,
    url: str,
    root: str,
    path: str,
    findings: Sequence[Finding],
    log: SinkLogPart,
    timeline: Sequence[SinkRow],
    files: int,
    reads: int,
) -> SinkRecord:
    """Return the record of a file sink output (``findings`` are :class:`Finding` values,
    ``timeline`` :class:`~checkpoint_doctor.diagnosis.timeline.SinkRow` values)."""
    severities = {f.severity for f in findings}
    code = (
        ExitCode.ERRORS
        if ERROR in severities
        else ExitCode.WARNINGS
        if WARNING in severities
        else ExitCode.OK
    )
    return SinkRecord(
        url=url,
        root=root,
        path=path,
        exit_code=code,
        codes=tuple(sorted({str(f.code) for f in findings})),
        sink_findings=tuple(findings),
        sink_log=log,
        files=files,
        reads=reads,
        timeline=tuple(timeline),
    )


def unreadable_record(
    *, kind: str, url: str, root: str, path: str, error_type: str, message: str, internal: bool = False
) -> UnreadableRecord:
    """Return the record of a directory that could not be audited."""
    return UnreadableRecord.of(
        kind=kind, url=url, root=root, path=path, error_type=error_type, message=message, internal=internal
    )


def sort_records(records: Iterable[Record]) -> list[Record]:
    """Return records in a stable order: by URL, then kind."""
    return sorted(records, key=lambda r: (r.url, r.kind))


def summarize(
    records: Sequence[Record],
    notes: Sequence[AuditNote] = (),
    *,
    interrupted: bool = False,
) -> AuditSummary:
    """Return the fleet summary: counts by kind and verdict, restarts that fail, records per code;
    ``interrupted``: the audit was stopped (Ctrl-C) and the counts cover what had finished."""
    verdicts = Counter(r.verdict for r in records)
    kinds = Counter(str(r.kind) for r in records)
    worst = _effective_severities(records)
    codes = []
    for code, count in _records_per_code(records).items():
        info = CODES.get(code)
        codes.append(
            CodeCount(
                code=code,
                slug=info.slug if info else None,
                severity=worst.get(code) or (str(info.severity) if info else None),
                title=info.title if info else None,
                count=count,
            )
        )
    codes.sort(key=lambda c: (SEVERITY_ORDER.get(str(c.severity), 9), -c.count, c.code))
    checkpoints = [r for r in records if isinstance(r, CheckpointRecord)]
    return AuditSummary(
        total=len(records),
        kinds={k: kinds.get(k, 0) for k in RECORD_KINDS},
        verdicts={v.value: verdicts.get(v, 0) for v in VERDICTS},
        restart_fails=sum(1 for r in checkpoints if r.restart.fails),
        restart_fails_if_stateful=sum(1 for r in checkpoints if r.restart.fails_if_stateful),
        assumed_stateless=sum(1 for r in checkpoints if r.assumed_stateless),
        some_restart_fails=sum(1 for r in checkpoints if r.failing_cells),
        codes=tuple(codes),
        note_count=len(notes),
        exit_code=combined_exit_code(records),
        interrupted=interrupted,
    )


class SummaryTally:
    """The summary of records counted as they finish, without keeping them (issue 40 item 4: an
    ``audit --format jsonl`` writes each record at once, and its memory must not grow with the
    fleet). :meth:`summary` equals :func:`summarize` of the same records followed by
    :func:`~checkpoint_doctor.fleet.delta_report.delta_counts`; what it keeps per record is a few
    counters, the sink-paired checkpoints' codes and the Delta tables' URLs."""

    def __init__(self) -> None:
        self.total = 0
        self._kinds: Counter[str] = Counter()
        self._verdicts: Counter[Verdict] = Counter()
        self._worst: dict[str, str] = {}
        self._per_code: Counter[str] = Counter()
        #: A sink's codes, kept until the end: those its checkpoint shows count on the checkpoint.
        self._sink_codes: list[tuple[str, frozenset[str]]] = []
        self._seen_by_checkpoint: dict[str, set[str]] = {}
        self._counts = [0, 0, 0, 0]  # restart fails, if stateful, assumed stateless, some fails
        self.exit_code = 0
        self._delta_sources: set[str] = set()
        self._delta_sinks: set[str] = set()
        self._delta_unpaired = 0

    def add(self, record: Record) -> None:
        """Count a finished record."""
        self.total += 1
        self._kinds[str(record.kind)] += 1
        self._verdicts[record.verdict] += 1
        self.exit_code |= int(record.exit_code)
        for f in record.findings:
            code, severity = str(f.code), str(f.severity)
            if SEVERITY_ORDER.get(severity, 9) < SEVERITY_ORDER.get(self._worst.get(code, ""), 9):
                self._worst[code] = severity
        if record.kind == TargetKind.SINK:
            self._sink_codes.append((record.url, frozenset(record.codes)))
        else:
            self._per_code.update(set(record.codes))
        if isinstance(record, CheckpointRecord):
            if record.file_sink.url:
                self._seen_by_checkpoint.setdefault(record.file_sink.url, set()).update(record.codes)
            flags = (
                record.restart.fails,
                record.restart.fails_if_stateful,
                record.assumed_stateless,
                bool(record.failing_cells),
            )
            for i, flag in enumerate(flags):
                self._counts[i] += 1 if flag else 0
            if record.delta is not None:
                for p in record.delta.pairs:
                    (self._delta_sources if p.role == SOURCE else self._delta_sinks).add(p.table.url)
                self._delta_unpaired += len(record.delta.unpaired)

    def summary(
        self, notes: Sequence[AuditNote] = (), *, interrupted: bool = False, delta_reads: int = 0
    ) -> AuditSummary:
        """Return the summary of the records added (as :func:`summarize` and ``delta_counts``)."""
        per_code = Counter(self._per_code)
        for url, found in self._sink_codes:
            per_code.update(found - self._seen_by_checkpoint.get(url, set()))
        codes = []
        for code, count in per_code.items():
            info = CODES.get(code)
            codes.append(
                CodeCount(
                    code=code,
                    slug=info.slug if info else None,
                    severity=self._worst.get(code) or (str(info.severity) if info else None),
                    title=info.title if info else None,
                    count=count,
                )
            )
        codes.sort(key=lambda c: (SEVERITY_ORDER.get(str(c.severity), 9), -c.count, c.code))
        fails, if_stateful, assumed, some = self._counts
        return AuditSummary(
            total=self.total,
            kinds={k: self._kinds.get(k, 0) for k in RECORD_KINDS},
            verdicts={v.value: self._verdicts.get(v, 0) for v in VERDICTS},
            restart_fails=fails,
            restart_fails_if_stateful=if_stateful,
            assumed_stateless=assumed,
            some_restart_fails=some,
            codes=tuple(codes),
            note_count=len(notes),
            exit_code=self.exit_code,
            interrupted=interrupted,
            delta=DeltaCounts(
                tables=sum(1 for n in notes if n.kind == NOTE_DELTA),
                paired_sources=len(self._delta_sources),
                paired_sinks=len(self._delta_sinks),
                unpaired_sources=self._delta_unpaired,
                reads=delta_reads,
            ),
        )


def _records_per_code(records: Sequence[Record]) -> Counter[str]:
    """Count, per code, the places it was found: a sink checked together with its checkpoint shows
    the sink's findings in both records, and they count once (on the checkpoint)."""
    seen_by_checkpoint: dict[str, set[str]] = {}
    for r in records:
        if isinstance(r, CheckpointRecord) and r.file_sink.url:
            seen_by_checkpoint.setdefault(r.file_sink.url, set()).update(r.codes)
    per_code: Counter[str] = Counter()
    for r in records:
        codes = set(r.codes)
        if r.kind == TargetKind.SINK:
            codes -= seen_by_checkpoint.get(r.url, set())
        per_code.update(codes)
    return per_code


def _effective_severities(records: Sequence[Record]) -> dict[str, str]:
    """Return each code's worst severity as the findings had it (a failing restart that does not
    count is a warning, whatever the registry's default severity)."""
    worst: dict[str, str] = {}
    for r in records:
        for f in r.findings:
            code, severity = str(f.code), str(f.severity)
            if SEVERITY_ORDER.get(severity, 9) < SEVERITY_ORDER.get(worst.get(code, ""), 9):
                worst[code] = severity
    return worst


def stamped(record: Record, generated_at_ms: int, **changes: Any) -> Record:
    """Return a record with the envelope fields every document carries (tool version, time), and
    ``changes`` made in the same copy."""
    return replace(record, stamp=Stamp.at(generated_at_ms), **changes)


def _stopped(record: Record) -> str:
    """How long before the audit the newest batch was planned (``3 h ago``), ``-`` when unknown."""
    stopped = record.latest.stopped if isinstance(record, CheckpointRecord) else None
    return f"{stopped} ago" if stopped else "-"


def summary_line(
    roots: Sequence[str],
    notes: Sequence[AuditNote],
    summary: AuditSummary,
    generated_at_ms: int,
    *,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """Return the last JSON Lines line, ``"kind": "summary"`` (with the roots and the notes), so a
    consumer can tell a complete output from a cut one."""
    stamp = Stamp.at(generated_at_ms)
    final = {
        "schema_version": schema_version("audit-summary"),
        "tool_version": stamp.tool_version,
        "generated_at": stamp.generated_at,
        "kind": "summary",
        "roots": list(roots),
        **summary.to_json(),
        "notes": [n.to_json() for n in notes],
        # settings (where options not given as flags came from), changes (--baseline)
        **(extra or {}),
    }
    return dumps(final, compact=True)


#: The broker address a next step names when the audit had none (the flag's own metavar).
BROKER_PLACEHOLDER = "HOST:PORT"


def next_step(record: Record, hints: Hints) -> str | None:
    """Return the command to run next for a record, with the flags that shaped the audit (None:
    nothing to do, or nothing that runs as printed)."""
    url = record.url
    if record.verdict == OK or record.kind == ROOT:
        return None
    if isinstance(record, SinkRecord):
        if not record.paired_with:
            return None
        return Hints(**{**hints.__dict__, "sink_path": url}).diagnose(record.paired_with[0])
    if not isinstance(record, CheckpointRecord):
        return None if record.kind == TargetKind.SINK else hints.inspect(url)
    sink = record.file_sink.url
    local = Hints(**{**hints.__dict__, "sink_path": sink}) if sink else hints
    if record.kafka is None and local.kafka_bootstrap:
        # The broker flags shape only a Kafka source's verdict: a checkpoint that reads no topic
        # gets a command without them (the same answer, and no broker to reach).
        local = Hints(**{**local.__dict__, "kafka_bootstrap": None, "kafka_options": ()})
    elif record.kafka is not None and not record.kafka.checked and not local.kafka_bootstrap:
        # CD212: what checks the positions is the broker flag; its address is the operator's to fill
        local = Hints(**{**local.__dict__, "kafka_bootstrap": BROKER_PLACEHOLDER})
    if record.verdict == ERROR or record.failing_cells or any(f.code in SILENT_LOSS for f in record.findings):
        return local.plan(url)
    return local.diagnose(url)


def _what(record: Record) -> str:
    if isinstance(record, UnreadableRecord):
        return record.error.message
    if isinstance(record, CheckpointRecord):
        # The directory is in the next column: Spark's path to one of its files is shown relative.
        return record.restart.summary.replace(qualify_root(record.url) + "/", "")
    if isinstance(record, SinkRecord):
        latest = record.sink_log.latest
        return f"file sink output, latest sink batch {latest if latest is not None else '-'}"
    return "-"


def why(record: Record) -> str | None:
    """Return why a record has its verdict: the code and title of its worst finding (issue 36: an
    ``error`` row whose restart STARTS says what makes it an error), or None (ok, unreadable)."""
    if record.verdict in (OK, UNREADABLE) or not record.findings:
        return None
    worst = min(record.findings, key=lambda f: SEVERITY_ORDER.get(f.severity, 3))
    return f"{worst.code} {CODES[worst.code].title}"


def shown_path(record: Record | AuditNote, roots: Sequence[str]) -> str:
    """Return a directory as an audit table shows it: relative to the one root given (issue 36: the
    root is in the head; ``.`` is the root itself), its URL when several roots were given."""
    if len(roots) != 1 or record.root != roots[0]:
        return record.url
    return record.path or "."


def _attention(record: Record, roots: Sequence[str]) -> str:
    """One directory that needs attention, as a block that fits the terminal: the verdict and the
    directory (whole, never broken, for copying), then the restart, the lines, why and the codes."""
    width = line_width()
    path = shown_path(record, roots) + ("  (sink)" if record.kind == TargetKind.SINK else "")
    facts = [("restart", _what(record)), ("stopped", _stopped(record)), ("lines", _lines(record))]
    reason = why(record)
    if reason is not None:
        facts.append(("why", reason))
    if len(record.codes) > 1 or reason is None:
        facts.append(("codes", " ".join(record.codes) or "-"))
    with layout(width - INDENT):
        body = key_values(facts)
    return f"{str(record.verdict).ljust(INDENT - 1)} {path}\n" + "\n".join(
        " " * INDENT + line for line in body.splitlines()
    )


#: Where the facts of a directory in "Needs attention" start (after ``unreadable``).
INDENT = 11


def _lines(record: Record) -> str:
    if record.kind == TargetKind.SINK:
        paired = isinstance(record, SinkRecord) and record.paired_with
        return "checked with its checkpoint" if paired else "sink not checked"
    return (record.lines if isinstance(record, CheckpointRecord) else "") or "-"


def unpaired_delta_sources(records: Iterable[Record]) -> list[tuple[str, str]]:
    """Return each Delta source no table under the roots pairs with: (checkpoint URL, its words)."""
    out = []
    for r in records:
        pairing = r.delta if isinstance(r, CheckpointRecord) else None
        for n, table_id in pairing.unpaired if pairing is not None else ():
            out.append((r.url, f"Delta source {n} (table {table_id})"))
    return out


def render_audit(
    roots: Sequence[str],
    records: Sequence[Record],
    notes: Sequence[AuditNote],
    summary: AuditSummary,
    *,
    verbose: bool = False,
) -> str:
    """Return the audit as text: headline, the directories that need attention (``verbose``: every
    directory), the next command for each, counts by verdict and by finding code, what was skipped
    (``verbose``: all of it)."""
    kinds = summary.kinds
    v = summary.verdicts
    head: list[tuple[str, Any]] = [
        ("Audited", ", ".join(roots)),
        (
            "Found",
            f"{count_text(kinds['checkpoint'], 'checkpoint')}, "
            f"{count_text(kinds['sink'], 'file sink output')}",
        ),
        ("Will not restart", summary.restart_fails),
        *(
            [("Fails if stateful", summary.restart_fails_if_stateful)]
            if summary.restart_fails_if_stateful
            else []
        ),
        *(
            [
                (
                    "Stateful unknown",
                    f"{summary.assumed_stateless} assumed stateless (no state/, nothing tells): a stateful "
                    "query's restart would fail; settle it with diagnose --stateful or --stateless",
                )
            ]
            if summary.assumed_stateless
            else []
        ),
        *([("Delta", delta_headline(summary.delta))] if delta_headline(summary.delta) else []),
        ("Verdicts", f"{v[ERROR]} error, {v[UNREADABLE]} unreadable, {v[WARNING]} warning, {v[OK]} ok"),
        ("Exit code", summary.exit_code),
    ]
    if summary.interrupted:
        head.append(("Interrupted", "yes: the counts cover the directories finished before Ctrl-C"))
    blocks = [key_values(head)]
    shown = sorted((r for r in records if verbose or r.verdict != OK), key=triage_key)
    if shown:
        hidden = 0 if verbose else v[OK]
        title = ("Every directory" if verbose else "Needs attention") + (
            f" ({hidden} ok not shown; -v or --format jsonl lists every record)" if hidden else ""
        )
        if len(roots) == 1:
            title += f"\n(directories relative to {roots[0]})"
        blocks.append(section(title, "\n".join(_attention(r, roots) for r in shown)))
        steps = [r.next_step for r in shown if r.next_step]
        if steps:
            blocks.append(section("Next steps", "\n".join(f"  {c}" for c in steps)))
    unpaired = unpaired_delta_sources(records)
    if unpaired:
        # Counted in the head (Delta); named here, an ok record among them included: its restart was
        # judged without its table's log.
        first = f" (first {NOTES_SHOWN} of {len(unpaired)})" if len(unpaired) > NOTES_SHOWN else ""
        body = [f"  {url}: {what}" for url, what in unpaired[:NOTES_SHOWN]]
        body.append(
            "  (judged without the table's log: diagnose each with --delta-table and the table it reads)"
        )
        blocks.append(section(f"Delta sources paired with no table{first}", "\n".join(body)))
    blocks.append(
        section("By verdict", table(["verdict", "count"], [[name.value, v[name]] for name in VERDICTS]))
    )
    if summary.codes:
        code_rows: list[list[Any]] = [[c.code, c.severity, c.count, c.title] for c in summary.codes]
        blocks.append(section("By finding code", table(["code", "severity", "count", "title"], code_rows)))
    if not verbose:
        # The Delta tables read to pair them are counted in the head (Delta), not skipped.
        notes = [n for n in notes if not paired_table_note(n)]
    if notes:
        listed = list(notes) if verbose else list(notes)[:NOTES_SHOWN]
        more = len(notes) - len(listed)
        title = "Skipped" + (f" (first {NOTES_SHOWN} of {len(notes)}; -v lists all)" if more > 0 else "")
        blocks.append(
            section(
                title,
                table(["path", "note"], [[shown_path(n, roots), n.message] for n in listed], keep=(0,)),
            )
        )
    return "\n\n".join(blocks) + "\n"
