"""Audit over audit: what changed since the last scheduled run (``audit --baseline previous.jsonl``).

The baseline is a previous audit's own output, ``--format jsonl`` (one record a line, the summary
last) or ``--format json`` (one document). Only what a comparison needs is kept of each record (its
URL, root, verdict, restart outcome, codes and Kafka time to loss), so a baseline of a large fleet
is read a line at a time. Pure: lines in, :class:`AuditChanges` out (the CLI reads the file).

What a scheduler alerts on (:attr:`AuditChanges.worse`, exit bit ``ExitCode.WORSE``):

* ``new_failure``: a directory whose verdict is now error or unreadable and was not before (or
  whose restart that counts now fails where it started);
* ``appeared``: a directory not in the baseline (worse only when it fails);
* ``gone``: a directory of the baseline, under a root audited now, that is no longer found (a
  checkpoint deleted or moved: its query restarts from scratch); not said when either audit was
  interrupted (what it did not reach is not gone);
* ``loss_sooner``: Kafka retention will delete a record the query has not read with less time
  left than the baseline said, at a deadline no later than it said (a stopped query: the
  countdown runs; a query that reads on moves its deadline later and is not said;
  ``kafka_retention.Countdown``).

Also said, without alerting: ``resolved`` (was error or unreadable, is not) and ``new_warning``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from checkpoint_doctor.diagnosis.sources.kafka_retention import duration
from checkpoint_doctor.errors import UsageError
from checkpoint_doctor.fleet.records import (
    ERROR,
    OK,
    UNREADABLE,
    WARNING,
    CheckpointRecord,
    Record,
    Verdict,
)
from checkpoint_doctor.ids import count_text
from checkpoint_doctor.render.documents import JsonObject

NEW_FAILURE = "new_failure"
RESOLVED = "resolved"
NEW_WARNING = "new_warning"
APPEARED = "appeared"
GONE = "gone"
LOSS_SOONER = "loss_sooner"
#: Every kind of change, in the order they are shown (what to act on first).
CHANGE_KINDS = (NEW_FAILURE, LOSS_SOONER, GONE, APPEARED, RESOLVED, NEW_WARNING)
#: A kind of change counted in words: (one, more).
CHANGE_WORDS = {
    NEW_FAILURE: ("new failure", "new failures"),
    LOSS_SOONER: ("time to loss shrinking", "times to loss shrinking"),
    GONE: ("gone", "gone"),
    APPEARED: ("appeared", "appeared"),
    RESOLVED: ("resolved", "resolved"),
    NEW_WARNING: ("new warning", "new warnings"),
}
#: One change as a line says its kind.
CHANGE_LABEL = {
    NEW_FAILURE: "new failure",
    LOSS_SOONER: "time to loss",
    GONE: "gone",
    APPEARED: "appeared",
    RESOLVED: "resolved",
    NEW_WARNING: "new warning",
}
_FAILING = (ERROR, UNREADABLE)


@dataclass(frozen=True)
class Seen:
    """One directory as the baseline saw it."""

    url: str
    root: str
    verdict: Verdict
    outcome: str | None = None
    codes: tuple[str, ...] = ()
    #: Seconds until Kafka retention may delete its first unread record, as of the baseline, and
    #: when (epoch millis).
    remaining_s: float | None = None
    deadline_ms: int | None = None


@dataclass(frozen=True)
class Baseline:
    """A previous audit: its directories by URL, its roots, when it ran, whether it was complete."""

    name: str
    seen: dict[str, Seen]
    roots: tuple[str, ...] = ()
    generated_at: str | None = None
    complete: bool = False


def _verdict(value: object, where: str) -> Verdict:
    try:
        return Verdict(str(value))
    except ValueError:
        raise UsageError(
            f"--baseline {where}: not a record of 'audit --format jsonl' or 'json' (verdict {value!r})",
            hint="pass the output of a previous audit",
        ) from None


def _seen(data: JsonObject, where: str) -> Seen:
    url = data.get("url")
    if not isinstance(url, str):
        raise UsageError(
            f"--baseline {where}: not a record of 'audit --format jsonl' or 'json' (no url)",
            hint="pass the output of a previous audit",
        )
    restart = data.get("restart")
    kafka = data.get("kafka")
    retention = kafka.get("retention") if isinstance(kafka, dict) else None
    remaining = retention.get("remaining_s") if isinstance(retention, dict) else None
    deadline = retention.get("deadline_ms") if isinstance(retention, dict) else None
    return Seen(
        url=url,
        root=str(data.get("root") or ""),
        verdict=_verdict(data.get("verdict"), where),
        outcome=restart.get("outcome") if isinstance(restart, dict) else None,
        codes=tuple(str(c) for c in data.get("codes") or ()),
        remaining_s=float(remaining) if isinstance(remaining, (int, float)) else None,
        deadline_ms=deadline if isinstance(deadline, int) else None,
    )


def parse_baseline(lines: Iterable[str], name: str) -> Baseline:
    """Return the baseline of a previous audit's output, given as its lines (JSON Lines, or one
    JSON document over many lines). A file that is neither is a one-line usage error naming it."""
    seen: dict[str, Seen] = {}
    roots: tuple[str, ...] = ()
    generated_at = None
    complete = False
    document: list[str] | None = None
    parsed = False  # a line was a JSON object: JSON Lines, not a pretty-printed document
    for n, line in enumerate(lines, 1):
        if document is not None:
            document.append(line)
            continue
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            if not parsed:
                document = [line]  # a pretty-printed --format json document
                continue
            raise UsageError(
                f"--baseline {name}: line {n} is not JSON", hint="pass the output of a previous audit"
            ) from None
        if not isinstance(data, dict):
            raise UsageError(f"--baseline {name}: line {n} is not a JSON object")
        parsed = True
        if data.get("command") == "audit" and isinstance(data.get("result"), dict):
            return _from_document(data, name)
        if "command" in data:
            raise UsageError(
                f"--baseline {name} is a JSON document of {data['command']!r}, not one of 'audit --format json'",
                hint="pass the output of a previous audit",
            )
        if data.get("kind") == "summary":
            roots = tuple(str(r) for r in data.get("roots") or ())
            generated_at = data.get("generated_at")
            complete = not data.get("interrupted", False)
            continue
        record = _seen(data, f"{name} line {n}")
        seen[record.url] = record
    if document is not None:
        try:
            data = json.loads("".join(document))
        except ValueError:
            raise UsageError(
                f"--baseline {name} is not the output of 'audit --format jsonl' or 'json'",
                hint="pass the output of a previous audit",
            ) from None
        if not (
            isinstance(data, dict) and data.get("command") == "audit" and isinstance(data.get("result"), dict)
        ):
            raise UsageError(
                f"--baseline {name} is a JSON document, but not one of 'audit --format json'",
                hint="pass the output of a previous audit",
            )
        return _from_document(data, name)
    if not seen and not roots:
        raise UsageError(
            f"--baseline {name} holds no audit record", hint="pass the output of a previous audit"
        )
    return Baseline(name, seen, roots, generated_at if isinstance(generated_at, str) else None, complete)


def read_baseline(path: str) -> Baseline:
    """Read a previous audit's output from a local file, a line at a time (the I/O edge of
    :func:`parse_baseline`; a file that cannot be read is a one-line usage error naming it)."""
    try:
        with open(path, encoding="utf-8", errors="strict") as fh:
            return parse_baseline(fh, path)
    except UnicodeDecodeError:
        raise UsageError(
            f"--baseline {path} is not UTF-8 text", hint="pass the output of a previous audit"
        ) from None
    except OSError as exc:
        raise UsageError(f"--baseline {path} cannot be read: {exc.strerror or exc}") from None


def _from_document(data: JsonObject, name: str) -> Baseline:
    result = data["result"]
    seen = {}
    for i, record in enumerate(result.get("records") or ()):
        entry = _seen(record, f"{name} record {i + 1}")
        seen[entry.url] = entry
    summary = result.get("summary") or {}
    return Baseline(
        name,
        seen,
        tuple(str(r) for r in result.get("roots") or ()),
        data.get("generated_at") if isinstance(data.get("generated_at"), str) else None,
        not summary.get("interrupted", False),
    )


@dataclass(frozen=True)
class Change:
    """One directory that changed: ``kind`` (:data:`CHANGE_KINDS`), before and after in words."""

    kind: str
    url: str
    before: str | None
    after: str | None
    #: Whether a scheduler should be told (:attr:`AuditChanges.worse`).
    worse: bool

    def to_json(self) -> JsonObject:
        return {
            "kind": self.kind,
            "url": self.url,
            "before": self.before,
            "after": self.after,
            "worse": self.worse,
        }

    @property
    def text(self) -> str:
        """``<label> <url>: <before> -> <after>`` in words."""
        if self.kind == APPEARED:
            detail = str(self.after)
        elif self.kind == GONE:
            detail = f"was {self.before}"
        else:
            detail = f"{self.before} -> {self.after}"
        return f"{CHANGE_LABEL[self.kind]:<13} {self.url}: {detail}"


@dataclass(frozen=True)
class AuditChanges:
    """What changed between a baseline audit and this one."""

    baseline: str
    baseline_generated_at: str | None
    changes: tuple[Change, ...] = ()
    #: Directories of the baseline outside this audit's roots (not compared).
    outside: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def worse(self) -> bool:
        """Whether something got worse (the exit code then has ``ExitCode.WORSE``)."""
        return any(c.worse for c in self.changes)

    def counts(self) -> dict[str, int]:
        return {k: sum(1 for c in self.changes if c.kind == k) for k in CHANGE_KINDS}

    def headline(self) -> str:
        """One line: since when, and how many of each kind (or that nothing changed)."""
        since = f"since {self.baseline}" + (
            f" ({self.baseline_generated_at})" if self.baseline_generated_at else ""
        )
        counts = self.counts()
        said = [f"{n} {CHANGE_WORDS[k][n != 1]}" for k, n in counts.items() if n]
        return f"Changes {since}: " + (", ".join(said) if said else "nothing changed")

    def to_json(self) -> JsonObject:
        return {
            "baseline": self.baseline,
            "baseline_generated_at": self.baseline_generated_at,
            "worse": self.worse,
            "counts": self.counts(),
            "changes": [c.to_json() for c in self.changes],
            "outside_roots": self.outside,
            "notes": list(self.notes),
        }


def _state(verdict: Verdict, outcome: str | None) -> str:
    return f"{verdict.value}, restart {outcome}" if outcome else verdict.value


def _under(url: str, roots: Sequence[str]) -> bool:
    return any(url == r.rstrip("/") or url.startswith(r.rstrip("/") + "/") for r in roots)


def _remaining(record: Record) -> tuple[float | None, int | None]:
    """Seconds until retention may delete the record's first unread Kafka record, and when."""
    if not isinstance(record, CheckpointRecord) or record.kafka is None or record.kafka.retention is None:
        return None, None
    countdown = record.kafka.retention
    ms = countdown.remaining_ms
    return (None if ms is None else ms / 1000), countdown.deadline_ms


def _loss_sooner(seen: Seen, remaining: float | None, deadline: int | None) -> bool:
    """Whether the time to loss shrank: less time left, and a deadline no later than before. A
    query that reads on moves its first unread record, so its deadline moves later (its time
    left may jitter down by seconds: not an alert); a stopped query keeps the same record and
    deadline while its time runs out; a lowered retention.ms brings the deadline nearer."""
    if remaining is None or seen.remaining_s is None or remaining >= seen.remaining_s:
        return False
    return deadline is None or seen.deadline_ms is None or deadline <= seen.deadline_ms


def _left(seconds: float) -> str:
    return duration(int(seconds * 1000)) if seconds > 0 else "overdue"


def compare(
    baseline: Baseline, records: Sequence[Record], roots: Sequence[str], *, interrupted: bool
) -> AuditChanges:
    """Return what changed from ``baseline`` to this audit's ``records`` (under ``roots``)."""
    changes: list[Change] = []
    now = {r.url: r for r in records}
    notes: list[str] = []
    unseen = 0
    for url, record in now.items():
        outcome = record.restart.outcome if isinstance(record, CheckpointRecord) else None
        after = _state(record.verdict, outcome)
        before_seen = baseline.seen.get(url)
        if before_seen is None:
            # New only where the baseline looked, all the way: a directory under a root it did not
            # audit, or one an interrupted (or cut) baseline may not have reached, is not new.
            if baseline.complete and (not baseline.roots or _under(url, baseline.roots)):
                changes.append(Change(APPEARED, url, None, after, worse=record.verdict in _FAILING))
            else:
                unseen += 1
            continue
        before = _state(before_seen.verdict, before_seen.outcome)
        was_failing = before_seen.verdict in _FAILING
        newly_fails = before_seen.outcome == "starts" and outcome == "fails"
        if (record.verdict in _FAILING and not was_failing) or newly_fails:
            changes.append(Change(NEW_FAILURE, url, before, after, worse=True))
        elif was_failing and record.verdict not in _FAILING:
            changes.append(Change(RESOLVED, url, before, after, worse=False))
        elif before_seen.verdict == OK and record.verdict == WARNING:
            changes.append(Change(NEW_WARNING, url, before, after, worse=False))
        remaining, deadline = _remaining(record)
        if (
            _loss_sooner(before_seen, remaining, deadline)
            and remaining is not None
            and before_seen.remaining_s is not None
        ):
            changes.append(
                Change(
                    LOSS_SOONER,
                    url,
                    f"time to loss {_left(before_seen.remaining_s)}",
                    f"time to loss {_left(remaining)}",
                    worse=True,
                )
            )
    outside = 0
    # What an interrupted audit did not reach is not gone (nor what a cut baseline never listed).
    judge_gone = not interrupted and baseline.complete
    if not judge_gone:
        notes.append(
            "gone not judged: "
            + ("this audit was interrupted" if interrupted else "the baseline audit was interrupted or cut")
        )
    for url, seen in baseline.seen.items():
        if url in now:
            continue
        if not _under(url, roots):
            outside += 1
        elif judge_gone:
            changes.append(Change(GONE, url, _state(seen.verdict, seen.outcome), None, worse=True))
    if unseen:
        notes.append(
            f"{count_text(unseen, 'directory', 'directories')} not in the baseline "
            + ("is" if unseen == 1 else "are")
            + " not called new: "
            + ("the baseline audit was interrupted or cut" if not baseline.complete else "outside its roots")
        )
    order = {k: i for i, k in enumerate(CHANGE_KINDS)}
    changes.sort(key=lambda c: (order[c.kind], c.url))
    return AuditChanges(baseline.name, baseline.generated_at, tuple(changes), outside, tuple(notes))


def render_changes(changes: AuditChanges, *, shown: int = 50) -> str:
    """The text of the changes: the headline, then one line per change (worst first)."""
    lines = [changes.headline()]
    for change in changes.changes[:shown]:
        lines.append(f"  {change.text}")
    if len(changes.changes) > shown:
        lines.append(f"  ... and {len(changes.changes) - shown} more (--format json lists them all)")
    lines.extend(f"  note: {n}" for n in changes.notes)
    if changes.outside:
        lines.append(
            f"  {count_text(changes.outside, 'directory', 'directories')} of the baseline "
            + ("is" if changes.outside == 1 else "are")
            + " outside this audit's roots (not compared)"
        )
    return "\n".join(lines)
