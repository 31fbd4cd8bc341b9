"""The audit as one self-contained HTML page, rendered with Jinja2 (``templates/audit.html.j2``,
autoescaped). Pure: records in, a string out.

For the scheduled-audit use case: a headline (how many checkpoints will not restart; each card is
the filter for what it counts), then one row per audited directory in triage order
(:func:`~checkpoint_doctor.fleet.report.triage_key`: the restart that counts fails, verdict, data at
risk), sortable (that rank, path, codes) and filterable (restart, verdict, code, part of the path;
the filter is kept in the URL's ``#fragment``, so a link shows the same rows), then the counts by
finding code (after the rows: the first screen is for the rows), with the next command to run and a small picture of
the newest batch ids: one column per batch id (oldest left), one row each for ``offsets/``,
``commits/`` and the state version the batch commits (a sink output: its ``_spark_metadata`` log).
Damage has its own colour: a missing file is red, an empty, truncated, too-new or otherwise damaged
one is a darker shade, so a broken tail is seen, not read. Long lists of skipped paths are folded.

No network resources: inline CSS, inline SVG and one inline script; no fonts, images or links.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from checkpoint_doctor.diagnosis.timeline import (
    ABSENT,
    COMPACT,
    DAMAGED,
    EMPTY_FILE,
    FOLDED,
    MISSING,
    NONE,
    PARTIAL,
    PENDING,
    PRESENT,
    STATES,
    TOO_NEW,
    TRUNCATED,
    SinkRow,
    TimelineRow,
)
from checkpoint_doctor.diagnosis.versions import qualify_root
from checkpoint_doctor.fleet.delta_report import DeltaLine, delta_headline, delta_lines
from checkpoint_doctor.fleet.records import (
    AuditNote,
    AuditSummary,
    CheckpointRecord,
    Record,
    SinkRecord,
    UnreadableRecord,
)
from checkpoint_doctor.fleet.report import (
    ERROR,
    NOTES_SHOWN,
    OK,
    UNREADABLE,
    VERDICTS,
    WARNING,
    only_elsewhere,
    triage_key,
    why,
)
from checkpoint_doctor.ids import count_text
from checkpoint_doctor.reading.layout import SINK_LOG

if TYPE_CHECKING:
    from checkpoint_doctor.fleet.baseline import AuditChanges
    from checkpoint_doctor.fleet.kafka import RetentionRow

#: Cell fills of the timeline picture. ``MISSING_COLOUR`` is used for nothing else on the page.
MISSING_COLOUR = "#e0301e"
CELL_FILL = {
    PRESENT: "#3a9e5c",
    MISSING: MISSING_COLOUR,
    EMPTY_FILE: "#8c1c13",
    TRUNCATED: "#b8541a",
    TOO_NEW: "#7b3fa0",
    DAMAGED: "#5c1410",
    PENDING: "#ffffff",
    PARTIAL: "#f2a93b",
    ABSENT: "#e3e6ea",
    COMPACT: "#1f6f43",
    FOLDED: "#c4e3cf",
}
CELL_STROKE = {PENDING: "#7a818c"}
CELL_TEXT = {
    PRESENT: "present",
    MISSING: "missing",
    EMPTY_FILE: "empty file (0 bytes or only the version line)",
    TRUNCATED: "truncated (the JSON ends early)",
    TOO_NEW: "written by a newer Spark (log version too new)",
    DAMAGED: "damaged (cannot be parsed)",
    PENDING: "not written yet (batch in flight when the query stopped)",
    PARTIAL: "present in some stores only",
    ABSENT: "absent (expected gap)",
    COMPACT: "compact file",
    FOLDED: "folded into a .compact file",
}
LEGEND_TEXT = {
    PRESENT: "present",
    MISSING: "missing",
    EMPTY_FILE: "empty",
    TRUNCATED: "truncated",
    TOO_NEW: "too new",
    DAMAGED: "damaged",
    PENDING: "batch in flight",
    PARTIAL: "in some stores",
    ABSENT: "expected gap",
    COMPACT: "sink .compact",
    FOLDED: "folded into .compact",
}
VERDICT_COLOUR = {ERROR: "#a8231b", UNREADABLE: "#6b4fa0", WARNING: "#9a6a12", OK: "#2f7d4a"}

CELL = 14
GAP = 2
LABEL_W = 16
ROW_LABELS = (("offsets", "o"), ("commit", "c"), ("state", "s"))
ROW_WORDS = {"offsets": "offsets", "commit": "commits", "state": "state", "sink": SINK_LOG}
#: The "Skipped" list is folded when it is longer than this.
NOTES_OPEN = NOTES_SHOWN


@lru_cache(maxsize=1)
def _template() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("checkpoint_doctor.fleet", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
    )
    return env.get_template("audit.html.j2")


TimelineCell = TimelineRow | SinkRow


def _cell_title(cell: TimelineCell, key: str) -> str:
    title = f"batch {cell.batch_id}: {ROW_WORDS[key]} {CELL_TEXT[getattr(cell, key)]}"
    stores = cell.state_stores if isinstance(cell, TimelineRow) else None
    if key == "state" and stores:
        title += f" ({stores[0]}/{stores[1]} stores)"
    return title


@dataclass(frozen=True)
class PictureCell:
    x: int
    state: str
    title: str


@dataclass(frozen=True)
class PictureRow:
    y: int
    label: str
    cells: tuple[PictureCell, ...]


@dataclass(frozen=True)
class Picture:
    """The layout of a record's timeline picture: one column per batch id (oldest left)."""

    width: int
    height: int
    base: int
    first: int
    last: int
    rows: tuple[PictureRow, ...]


def _timeline(record: Record) -> Sequence[TimelineCell]:
    if isinstance(record, (CheckpointRecord, SinkRecord)):
        return record.timeline
    return ()


def picture(record: Record) -> Picture | None:
    """Return the layout of a record's timeline picture (None when it has no batches)."""
    cells = list(reversed(_timeline(record)))
    if not cells:
        return None
    if isinstance(record, SinkRecord):
        rows = [("sink", "log")]
    else:
        rows = [(key, label) for key, label in ROW_LABELS if any(getattr(c, key) != NONE for c in cells)]
    width = LABEL_W + len(cells) * (CELL + GAP)
    laid = tuple(
        PictureRow(
            y=r * (CELL + GAP),
            label=label,
            cells=tuple(
                PictureCell(LABEL_W + i * (CELL + GAP), getattr(c, key), _cell_title(c, key))
                for i, c in enumerate(cells)
                if getattr(c, key) != NONE
            ),
        )
        for r, (key, label) in enumerate(rows)
    )
    return Picture(
        width=width,
        height=len(rows) * (CELL + GAP) + 12,
        base=len(rows) * (CELL + GAP) + 9,
        first=cells[0].batch_id,
        last=cells[-1].batch_id,
        rows=laid,
    )


def cell_states(records: Sequence[Record]) -> set[str]:
    """Return the cell states the pictures of these records use."""
    states: set[str] = set()
    for record in records:
        for cell in _timeline(record):
            if isinstance(cell, TimelineRow):
                states.update((cell.offsets, cell.commit, cell.state))
            else:
                states.add(cell.sink)
    return states


@dataclass(frozen=True)
class ShownFinding:
    severity: str
    code: str
    message: str


@dataclass(frozen=True)
class Row:
    """One audited directory as the page shows it."""

    rank: int
    elsewhere: bool
    verdict: str
    colour: str
    url: str
    kind_label: str
    error: str | None
    summary: str | None
    fails: bool
    lines: str | None
    sink_text: str
    pairing: str | None
    findings: tuple[ShownFinding, ...]
    next_step: str | None
    codes: str
    picture: Picture | None
    #: Its Delta tables paired, or not (fleet/delta_report.py).
    delta: tuple[DeltaLine, ...] = ()
    #: The --job that judged it (audit --job), as the operator named it.
    job: str | None = None
    #: Its restart matrix as a grid, and its batches on a time axis (issue 36 item 7).
    grid: MatrixGrid | None = None
    axis: TimeAxis | None = None
    #: Why its verdict: its worst finding's code and title (fleet.report.why).
    why: str | None = None
    #: Its restart's outcome: starts, fails or not-judged (the restart filter's values).
    outcome: str = "starts"


def _findings(record: Record) -> tuple[ShownFinding, ...]:
    if isinstance(record, CheckpointRecord):
        return tuple(ShownFinding(f.severity, f.code, record.finding_message(f)) for f in record.findings)
    return tuple(ShownFinding(f.severity, f.code, f.message) for f in record.findings)


def _row(record: Record, rank: int) -> Row:
    checkpoint = record if isinstance(record, CheckpointRecord) else None
    sink = record if isinstance(record, SinkRecord) else None
    error = record.error.message if isinstance(record, UnreadableRecord) else None
    latest = sink.sink_log.latest if sink is not None else None
    return Row(
        rank=rank,
        elsewhere=only_elsewhere(record),
        verdict=record.verdict,
        colour=VERDICT_COLOUR[record.verdict],
        url=record.url,
        kind_label={"sink": "sink output", "root": "root"}.get(record.kind, ""),
        error=error,
        summary=checkpoint.restart.summary.replace(qualify_root(record.url) + "/", "")
        if checkpoint
        else None,
        fails=checkpoint is not None and checkpoint.restart.fails,
        lines=checkpoint.lines if checkpoint else None,
        sink_text=f"file sink output; latest sink batch {latest if latest is not None else '-'}",
        pairing=sink.pairing if sink else None,
        findings=_findings(record),
        next_step=record.next_step,
        codes=" ".join(record.codes),
        picture=None if error is not None else picture(record),
        delta=delta_lines(record),
        job=checkpoint.job.job if checkpoint is not None and checkpoint.job is not None else None,
        grid=matrix_grid(record),
        axis=time_axis(record),
        why=why(record),
        outcome=checkpoint.restart.outcome if checkpoint is not None else "starts",
    )


@dataclass(frozen=True)
class Card:
    """A headline count; ``filter`` shows only the rows it counts."""

    n: int
    label: str
    alert: bool = False
    colour: str | None = None
    filter: str | None = None


def _cards(summary: AuditSummary) -> list[Card]:
    fails = summary.restart_fails
    verdicts = summary.verdicts
    # The headline card is the filter for the rows it counts.
    cards = [Card(fails, "will not restart", alert=bool(fails), filter="restart=fails")]
    for v in VERDICTS:
        cards.append(
            Card(
                verdicts[v],
                v.value,
                colour=VERDICT_COLOUR[v] if verdicts[v] else None,
                filter=f"verdict={v}" if verdicts[v] else None,
            )
        )
    cards.append(Card(summary.kinds["checkpoint"], "checkpoints"))
    cards.append(Card(summary.kinds["sink"], "file sink outputs"))
    if summary.assumed_stateless:
        # Judged stateless without proof: a stateful query's restart fails (the record says how).
        cards.append(Card(summary.assumed_stateless, "assumed stateless"))
    return cards


@dataclass(frozen=True)
class KafkaRow:
    url: str
    bound: str
    left: str
    text: str


def render_html(
    roots: Sequence[str],
    records: Sequence[Record],
    notes: Sequence[AuditNote],
    summary: AuditSummary,
    *,
    generated_at: str | None = None,
    version: str | None = None,
    kafka: Sequence[RetentionRow] = (),
    changes: AuditChanges | None = None,
    now_ms: int | None = None,
) -> str:
    """Return the audit page (UTF-8 HTML5, no external resources); ``kafka`` are the retention
    countdowns soonest first (``fleet.kafka.retention_rows``), shown above the rows; ``now_ms`` is
    the audit's clock (the "now" of the Kafka retention bars)."""
    head = ", ".join(roots)
    meta = [f"roots: {head}"]
    if generated_at:
        meta.append(f"generated {generated_at}")
    if version:
        meta.append(f"checkpoint-doctor {version}")
    meta.append(f"exit code {summary.exit_code}")
    # Triage order: what will not restart first, then by verdict and data at risk (the page's
    # default sort is this rank; the other sort keys fall back to the path).
    ordered = sorted(records, key=triage_key)
    kinds = summary.kinds
    listed = [count_text(kinds["checkpoint"], "checkpoint"), count_text(kinds["sink"], "file sink output")]
    if kinds.get("root"):
        listed.append(count_text(kinds["root"], "unreadable root"))
    used = cell_states(records)
    codes = list(summary.codes)
    return str(
        _template().render(
            roots_text=head,
            meta=" · ".join(meta),
            interrupted=summary.interrupted,
            cards=_cards(summary),
            serious=[c for c in codes if c.severity in (ERROR, WARNING)],
            informational=[c for c in codes if c.severity not in (ERROR, WARNING)],
            verdicts=[v for v in VERDICTS if summary.verdicts.get(v)],
            all_codes=sorted({c for r in records for c in r.codes}),
            legend=[(s, LEGEND_TEXT[s]) for s in STATES if s in used and s in LEGEND_TEXT],
            rows=[_row(r, i) for i, r in enumerate(ordered)],
            listed=", ".join(listed),
            notes=list(notes),
            notes_open=NOTES_OPEN,
            fills=CELL_FILL,
            stroked=CELL_STROKE,
            size=CELL,
            gap=GAP,
            label_w=LABEL_W,
            kafka=[KafkaRow(k.url, k.bound, _left(k), k.text) for k in kafka],
            kafka_unchecked=_kafka_unchecked(records),
            delta_headline=delta_headline(summary.delta),
            changes=changes,
            change_label=_change_labels(),
            chart=fleet_chart(summary),
            bars=retention_bars(records, now_ms),
            matrix_fill=MATRIX_FILL,
            matrix_text=MATRIX_TEXT,
            grid=GRID,
            grid_w=GRID_W,
            now_colour=NOW_COLOUR,
            stopped_fill=STOPPED_FILL,
            tick=BATCH_TICK,
            elapsed_fill=ELAPSED_FILL,
            left_fill=LEFT_FILL,
        )
    )


def _change_labels() -> dict[str, str]:
    from checkpoint_doctor.fleet.baseline import CHANGE_LABEL

    return CHANGE_LABEL


def _left(row: RetentionRow) -> str:
    """The time left of a countdown row ("overdue", "-" when untimed)."""
    from checkpoint_doctor.diagnosis.sources.kafka_retention import duration

    left = row.remaining_s
    if left is None:
        return "-"
    return duration(int(left * 1000)) if left > 0 else "overdue"


def _kafka_unchecked(records: Sequence[Record]) -> str | None:
    """How many checkpoints read Kafka topics whose positions were not checked, and how to check."""
    from checkpoint_doctor.fleet.kafka import NOT_CHECKED, not_checked_count

    n = not_checked_count(records)
    return f"{count_text(n, 'checkpoint')} read Kafka: {NOT_CHECKED}" if n else None


# ------------------------------------------------------------------------------- the pictures
# Issue 36 item 7: pictures where people look. Each is a layout computed here (pure) and drawn
# as inline SVG by the template; colours below are used for nothing else on the page, so a
# screenshot's pixels say which picture drew what.

#: The restart matrix grid (Spark line x restart mode): one cell per restart the matrix judges.
MATRIX_FILL = {
    "starts": "#2e8b57",
    "fails": "#c0392b",
    "if-stateless": "#e6a23c",
    "not-judged": "#b0b7c0",
}
MATRIX_TEXT = {
    "starts": "starts",
    "fails": "fails",
    "if-stateless": "starts only if the query is stateless",
    "not-judged": "not judged (no Delta Lake release for this line)",
}
MODE_LABEL = {"micro-batch": "micro", "async": "async", "continuous": "cont", "real-time": "rt"}
GRID = 13
GRID_W = 24
GRID_LABEL_W = 34
GRID_HEAD = 11
#: The "now" marker of the time axis and of the Kafka retention bars (the audit's clock).
NOW_COLOUR = "#1565c0"
#: The time between the newest batch and the audit ("stopped 3 h ago").
STOPPED_FILL = "#f7d9c4"
BATCH_TICK = "#46505c"
AXIS_W = 220
AXIS_H = 40
#: Kafka retention: the part of the first unread record's retention already elapsed, and left.
ELAPSED_FILL = "#e07b39"
LEFT_FILL = "#d9dee4"
BAR_W = 260
#: The fleet chart's code bars, by severity.
SEVERITY_FILL = {"error": "#a8231b", "warning": "#9a6a12"}
INFO_FILL = "#7a818c"


@dataclass(frozen=True)
class GridCell:
    x: int
    y: int
    state: str
    title: str
    counted: bool


@dataclass(frozen=True)
class MatrixGrid:
    """A checkpoint's restart matrix as a grid: columns are Spark lines, rows restart modes."""

    width: int
    height: int
    columns: tuple[tuple[int, str], ...]
    rows: tuple[tuple[int, str], ...]
    cells: tuple[GridCell, ...]


def _matrix_state(cell: Any) -> str:
    from checkpoint_doctor.fleet.records import fails_if_stateful

    if cell.fails:
        return "fails"
    if cell.delta_not_judged:
        return "not-judged"
    if fails_if_stateful(cell):
        return "if-stateless"
    return "starts"


def matrix_grid(record: Record) -> MatrixGrid | None:
    """Return the layout of a checkpoint's restart matrix grid (None for other records)."""
    from checkpoint_doctor.diagnosis.detect import MODES
    from checkpoint_doctor.diagnosis.versions import LINES

    if not isinstance(record, CheckpointRecord):
        return None
    cells = record.diagnosis.cells
    if not cells:
        return None
    lines = [line for line in LINES if any(c.cell.spark == line for c in cells)]
    modes = [m for m in MODES if any(c.cell.mode == m for c in cells)]
    col = {line: GRID_LABEL_W + i * GRID_W for i, line in enumerate(lines)}
    row = {mode: GRID_HEAD + i * GRID for i, mode in enumerate(modes)}
    laid = []
    for c in cells:
        state = _matrix_state(c)
        summary = at_root_text(c.diagnosis.prediction.summary, record)
        shown_only = "" if c.counted else " (shown, not counted)"
        laid.append(
            GridCell(
                col[c.cell.spark],
                row[c.cell.mode],
                state,
                f"Spark {c.cell.spark} {c.cell.mode}{shown_only}: {MATRIX_TEXT[state]}: {summary}",
                c.counted,
            )
        )
    return MatrixGrid(
        width=GRID_LABEL_W + len(lines) * GRID_W,
        height=GRID_HEAD + len(modes) * GRID,
        columns=tuple((col[line] + GRID_W // 2, line) for line in lines),
        rows=tuple((row[m] + GRID - 3, MODE_LABEL.get(m, m)) for m in modes),
        cells=tuple(laid),
    )


def at_root_text(text: str, record: CheckpointRecord) -> str:
    """A prediction's text naming the checkpoint as Spark prints it, without the audit's root."""
    from checkpoint_doctor.diagnosis.versions import at_root

    return str(at_root(text, record.diagnosis.checkpoint)).replace(qualify_root(record.url) + "/", "")


@dataclass(frozen=True)
class TimeAxis:
    """A checkpoint's batches on a real time axis, from its oldest batch read to the audit (now),
    the time since the newest batch shaded: "stopped 3 h ago"."""

    ticks: tuple[tuple[float, str], ...]
    newest_x: float
    now_x: float
    label: str
    first: str
    width: int = AXIS_W
    height: int = AXIS_H


def _short_utc(ms: int) -> str:
    from checkpoint_doctor.render.documents import iso_utc

    return iso_utc(ms)[:16].replace("T", " ") + " UTC"


def time_axis(record: Record) -> TimeAxis | None:
    """Return the layout of a checkpoint's time axis (None without batch times or the audit's clock)."""
    if not isinstance(record, CheckpointRecord):
        return None
    latest = record.latest
    if not latest.batch_times or latest.stopped_ms is None or latest.batch_time_ms is None:
        return None
    now = latest.batch_time_ms + latest.stopped_ms
    first = min(t for _, t in latest.batch_times)
    span = max(1, now - first)
    left, right = 4.0, AXIS_W - 6.0

    def x(t: int) -> float:
        return round(left + (right - left) * (t - first) / span, 1)

    ticks = tuple((x(t), f"batch {b} planned {_short_utc(t)}") for b, t in latest.batch_times)
    return TimeAxis(
        ticks=ticks,
        newest_x=x(latest.batch_time_ms),
        now_x=x(now),
        label=f"stopped {latest.stopped} ago",
        first=_short_utc(first),
    )


@dataclass(frozen=True)
class RetentionBar:
    """The first unread record of a checkpoint's Kafka partition: its retention from when it was
    written (left) to when retention.ms may delete it (right), the audit's "now" marked."""

    url: str
    partition: str
    elapsed_w: float
    now_x: float
    overdue: bool
    left: str
    title: str
    width: int = BAR_W


#: Partitions drawn per checkpoint (the soonest); the rest are counted in the last bar's title.
BARS_PER_CHECKPOINT = 8


def _bar(
    url: str,
    topic: str | None,
    partition: int | None,
    offset: int | None,
    written: int,
    deadline: int,
    now_ms: int,
) -> RetentionBar:
    from checkpoint_doctor.diagnosis.sources.kafka_retention import duration

    fraction = (now_ms - written) / (deadline - written)
    shown = min(1.0, max(0.0, fraction))
    overdue = now_ms >= deadline
    left = "overdue" if overdue else duration(deadline - now_ms) + " left"
    return RetentionBar(
        url=url,
        partition=f"{topic}-{partition}",
        elapsed_w=round(BAR_W * shown, 1),
        now_x=round(min(BAR_W - 2.0, BAR_W * shown), 1),
        overdue=overdue,
        left=left,
        title=f"{topic}-{partition} offset {offset}: written {_short_utc(written)}, "
        f"retention.ms may delete it {_short_utc(deadline)} ({left})",
    )


def retention_bars(records: Sequence[Record], now_ms: int | None) -> list[RetentionBar]:
    """Return a bar per unread Kafka partition with a ``retention.ms`` deadline (the soonest
    :data:`BARS_PER_CHECKPOINT` of each checkpoint; its countdown's partition when the record has
    no per-partition windows), overdue first, then by how much of the retention has elapsed."""
    if now_ms is None:
        return []
    bars = []
    for record in records:
        if not isinstance(record, CheckpointRecord) or record.kafka is None:
            continue
        windows: list[tuple[str | None, int | None, int | None, int, int]] = [
            (w.topic, w.partition, w.offset, w.written_ms, w.deadline_ms) for w in record.kafka.partitions
        ]
        c = record.kafka.retention
        if not windows and c is not None and c.deadline_ms is not None and c.timestamp_ms is not None:
            windows = [(c.topic, c.partition, c.offset, c.timestamp_ms, c.deadline_ms)]
        for topic, partition, offset, written, deadline in windows[:BARS_PER_CHECKPOINT]:
            if deadline > written:
                bars.append(_bar(record.url, topic, partition, offset, written, deadline, now_ms))
    return sorted(bars, key=lambda b: (not b.overdue, -b.elapsed_w, b.url, b.partition))


@dataclass(frozen=True)
class ChartBar:
    y: int
    label: str
    n: int
    w: float
    fill: str
    title: str


@dataclass(frozen=True)
class FleetChart:
    """The fleet at a glance: a stacked bar of the verdicts, then one bar per finding code."""

    segments: tuple[tuple[float, float, str, str], ...]
    codes: tuple[ChartBar, ...]
    width: int
    height: int


CHART_W = 560
CHART_CODES = 12


def fleet_chart(summary: AuditSummary) -> FleetChart | None:
    """Return the layout of the fleet chart (None for an empty audit)."""
    total = sum(summary.verdicts.get(v, 0) for v in VERDICTS)
    if not total:
        return None
    segments = []
    x = 0.0
    for v in VERDICTS:
        n = summary.verdicts.get(v, 0)
        if n:
            w = CHART_W * n / total
            segments.append((round(x, 1), round(w, 1), VERDICT_COLOUR[v], f"{n} {v.value}"))
            x += w
    codes = [c for c in summary.codes if c.count][:CHART_CODES]
    top = max((c.count for c in codes), default=1)
    bars = tuple(
        ChartBar(
            y=30 + i * 16,
            label=c.code,
            n=c.count,
            w=round((CHART_W - 120) * c.count / top, 1),
            fill=SEVERITY_FILL.get(str(c.severity), INFO_FILL),
            title=f"{c.code} ({c.severity}): {c.count} · {c.title or ''}",
        )
        for i, c in enumerate(codes)
    )
    return FleetChart(tuple(segments), bars, CHART_W, 30 + len(bars) * 16 + 4)
