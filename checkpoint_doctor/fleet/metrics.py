"""An audit as Prometheus metrics (text exposition format 0.0.4), for node_exporter's textfile
collector. Pure: records in, text out (the CLI writes it atomically).

Every metric has ``# HELP`` and ``# TYPE`` lines and one sample per line; label values are escaped
(backslash, double quote, newline). Per audited directory (``url`` label, plus ``kind``):

* ``checkpoint_doctor_exit_code`` and ``checkpoint_doctor_verdict{verdict=...}`` (1 for the
  record's verdict, 0 for the others, so an alert can match ``== 1``);
* ``checkpoint_doctor_restart_starts{spark, mode, role}``: 1 when that restart starts, 0 when it
  fails (every cell of the restart matrix: the verdict per Spark line);
* ``checkpoint_doctor_restart_fails_if_stateful{spark, mode, role}``: 1 when that restart starts
  only if the query is stateless (statefulness unknown and state/ holds no state: CD310), else 0;
* ``checkpoint_doctor_latest_offsets_batch_id``, ``checkpoint_doctor_latest_commit_batch_id`` and
  ``checkpoint_doctor_uncommitted_batches`` (the gap between them);
* ``checkpoint_doctor_newest_batch_age_seconds``: since the newest batch was planned (offsets'
  ``batchTimestampMs``), as of the audit;
* ``checkpoint_doctor_findings{severity, code}``: findings per code;
* ``checkpoint_doctor_kafka_retention_remaining_seconds{topic, partition}``: for a checkpoint
  whose Kafka positions were checked against a broker, the seconds until ``retention.ms`` may
  delete its first unread record (negative: overdue), so an alert can sort stopped queries by
  the one to restart first; absent when retention is unbounded or by size only;
* ``checkpoint_doctor_kafka_loss_deadline_seconds{source, topic, partition}``: for each partition
  whose unread records retention may delete within the loss horizon (CD213), the seconds left;
* ``checkpoint_doctor_delta_source_paired{source, table}``: per Delta source of a checkpoint, 1
  when a Delta table under the roots was paired with it (``table``: its URL), 0 when none was (its
  restart is not judged against the table's log: an alert can match ``== 0``).

And for the whole audit: when it ran, how long it took, its exit code, directories per verdict,
whether it was complete; with ``--baseline``, ``checkpoint_doctor_audit_changes{change}`` (how many
directories changed in each way since the baseline audit: new_failure, loss_sooner, gone, appeared,
resolved, new_warning) and ``checkpoint_doctor_audit_worse`` (1 when something got worse: an alert
can match ``== 1``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.fleet.records import (
    RECORD_KINDS,
    VERDICTS,
    AuditSummary,
    CheckpointRecord,
    Record,
    fails_if_stateful,
)

if TYPE_CHECKING:
    from checkpoint_doctor.fleet.baseline import AuditChanges

PREFIX = "checkpoint_doctor_"


def escape_label(value: str) -> str:
    """Escape a label value as the exposition format requires."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: Mapping[str, Any]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{escape_label(str(v))}"' for k, v in labels.items()) + "}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class _Family:
    def __init__(self, name: str, kind: str, help_text: str) -> None:
        self.name = PREFIX + name
        self.kind = kind
        self.help = help_text
        self.samples: list[str] = []

    def add(self, value: float, **labels: Any) -> None:
        self.samples.append(f"{self.name}{_labels(labels)} {_number(value)}")

    def text(self) -> str:
        help_text = self.help.replace("\\", "\\\\").replace("\n", "\\n")
        return "\n".join(
            [f"# HELP {self.name} {help_text}", f"# TYPE {self.name} {self.kind}", *self.samples]
        )


def _families() -> dict[str, _Family]:
    specs = [
        ("audit_timestamp_seconds", "When the audit started (Unix time)."),
        ("audit_duration_seconds", "How long the audit took."),
        ("audit_exit_code", "The audit's exit code (bitwise OR of the directories' codes)."),
        ("audit_complete", "1 when every directory found was audited."),
        ("audit_directories", "Audited directories per kind and verdict."),
        ("audit_changes", "Directories that changed in each way since the --baseline audit."),
        ("audit_worse", "1 when something got worse since the --baseline audit (exit code bit 64)."),
        (
            "exit_code",
            "Exit code of one audited directory (0 ok, 1 warnings, 4 errors, 8 unreadable, 16 internal).",
        ),
        ("verdict", "1 for the directory's verdict, 0 for the others."),
        ("restart_starts", "1 when the restart (Spark line, mode) starts, 0 when Spark fails to restart."),
        (
            "restart_fails_if_stateful",
            "1 when the restart starts only if the query is stateless (state/ holds no state, CD310).",
        ),
        ("latest_offsets_batch_id", "Newest batch id in offsets/."),
        ("latest_commit_batch_id", "Newest batch id in commits/ (-1: none)."),
        ("uncommitted_batches", "Batches planned in offsets/ after the newest commit."),
        ("newest_batch_age_seconds", "Seconds between the newest batch's planning time and the audit."),
        ("findings", "Findings per severity and code."),
        (
            "kafka_retention_remaining_seconds",
            "Seconds until Kafka retention.ms may delete the first record the checkpoint has not read (negative: overdue).",
        ),
        (
            "kafka_loss_deadline_seconds",
            "Seconds until Kafka retention.ms may delete a partition's unread records, for each partition due within the loss horizon (CD213; negative: overdue).",
        ),
        (
            "delta_source_paired",
            "1 when a Delta table was paired with the checkpoint's Delta source (by table id, or the only table beside it), 0 when none was.",
        ),
    ]
    return {name: _Family(name, "gauge", text) for name, text in specs}


def _record(families: Mapping[str, _Family], record: Record, now_ms: int) -> None:
    who = {"url": record.url, "kind": record.kind}
    families["exit_code"].add(record.exit_code, **who)
    for verdict in VERDICTS:
        families["verdict"].add(1 if record.verdict == verdict else 0, **who, verdict=verdict)
    for (severity, code), n in sorted(
        Counter((str(f.severity), str(f.code)) for f in record.findings).items()
    ):
        families["findings"].add(n, **who, severity=severity, code=code)
    if not isinstance(record, CheckpointRecord):
        return
    for cell in record.diagnosis.cells:
        where = {"spark": cell.cell.spark, "mode": cell.cell.mode, "role": cell.role}
        families["restart_starts"].add(0 if cell.fails else 1, **who, **where)
        families["restart_fails_if_stateful"].add(1 if fails_if_stateful(cell) else 0, **who, **where)
    latest = record.latest
    if latest.offsets is not None:
        families["latest_offsets_batch_id"].add(latest.offsets, **who)
        families["latest_commit_batch_id"].add(latest.commit if latest.commit is not None else -1, **who)
        families["uncommitted_batches"].add(latest.uncommitted or 0, **who)
    if latest.batch_time_ms:
        families["newest_batch_age_seconds"].add(max(0, now_ms - latest.batch_time_ms) / 1000, **who)
    retention = record.kafka.retention if record.kafka is not None else None
    if retention is not None and retention.remaining_ms is not None:
        families["kafka_retention_remaining_seconds"].add(
            retention.remaining_ms / 1000, **who, topic=retention.topic, partition=retention.partition
        )
    for finding in record.findings:
        if finding.code != Code.KAFKA_RETENTION_DEADLINE:
            continue
        details = dict(finding.details)
        # (partition name, offset, deadline, seconds left) of each partition due, soonest first;
        # the name is "<topic>-<partition>" and a topic may hold "-": split at the last one
        for name, _, _, left in details.get("partitions", ()):
            topic, _, partition = str(name).rpartition("-")
            families["kafka_loss_deadline_seconds"].add(
                left, **who, source=details.get("source"), topic=topic, partition=partition
            )
    if record.delta is not None:
        for pair in record.delta.pairs:
            if pair.source is not None:
                families["delta_source_paired"].add(1, **who, source=pair.source, table=pair.table.url)
        for source, _ in record.delta.unpaired:
            families["delta_source_paired"].add(0, **who, source=source, table="")


def render_metrics(
    records: Iterable[Record],
    summary: AuditSummary,
    *,
    started_ms: int,
    finished_ms: int,
    exit_code: int,
    changes: AuditChanges | None = None,
) -> str:
    """Return the audit as Prometheus text exposition format (ends with a newline)."""
    families = _families()
    families["audit_timestamp_seconds"].add(started_ms / 1000)
    families["audit_duration_seconds"].add(max(0, finished_ms - started_ms) / 1000)
    families["audit_exit_code"].add(exit_code)
    families["audit_complete"].add(0 if summary.interrupted else 1)
    kinds: Counter[tuple[str, str]] = Counter()
    for record in sorted(records, key=lambda r: (r.url, r.kind)):
        kinds[(record.kind, record.verdict)] += 1
        _record(families, record, finished_ms)
    for kind in RECORD_KINDS:
        for verdict in VERDICTS:
            families["audit_directories"].add(kinds[(kind, verdict)], kind=kind, verdict=verdict)
    if changes is not None:
        for change, n in changes.counts().items():
            families["audit_changes"].add(n, change=change)
        families["audit_worse"].add(1 if changes.worse else 0)
    return "\n".join(f.text() for f in families.values() if f.samples) + "\n"
