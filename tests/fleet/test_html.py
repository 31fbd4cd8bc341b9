"""The HTML page: a pure function of the records, self-contained, escaped, and (in a real headless
chromium) a broken tail shows as red cells while a healthy fleet shows none."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from checkpoint_doctor.cli import main
from checkpoint_doctor.diagnosis import DiagnoseOptions
from checkpoint_doctor.diagnosis.timeline import TimelineRow
from checkpoint_doctor.fleet.html import CELL, MISSING_COLOUR, cell_states, render_html
from checkpoint_doctor.fleet.records import AuditSummary, CheckpointRecord
from checkpoint_doctor.fleet.report import summarize
from checkpoint_doctor.fleet.run import audit
from tests.fleet.conftest import SPARK, Fleet
from tests.fleet.png import decode, hex_rgb
from tests.fleet.records import checkpoint_record, json_records
from tests.storage.builders import read_files, write_files

OPTIONS = DiagnoseOptions(live_window_s=0)
FIXTURES_DELTA = SPARK.parent / "delta"


def page_for(root: str) -> str:
    result = audit([root], options=OPTIONS)
    return render_html(
        result.roots, result.records, result.notes, result.summary, generated_at="2026-01-01T00:00:00Z"
    )


def test_the_page_loads_nothing_from_anywhere(local_fleet: Fleet) -> None:
    html = page_for(local_fleet.root)

    assert html.startswith("<!doctype html>")
    assert html.count("<script") == html.count("<script>") == 1  # one inline script, nothing loaded
    for needle in (
        "src=",
        "href=",
        "url(",
        "@import",
        "http://",
        "https://",
        "<link",
        "<img",
        "<iframe",
    ):
        assert needle not in html.lower(), needle
    # One picture per checkpoint or sink with batches, one swatch per state in the legend.
    result = audit([local_fleet.root], options=OPTIONS)
    pictures = sum(1 for r in json_records(result) if r.get("timeline") and not r.get("error"))
    assert html.count('aria-label="newest batch ids') == pictures > 0
    # One restart matrix grid per checkpoint read, one fleet chart; every other svg is a swatch.
    grids = sum(1 for r in json_records(result) if r["kind"] == "checkpoint" and not r.get("error"))
    assert html.count('aria-label="restart matrix by Spark line and mode"') == grids > 0
    assert html.count('aria-label="fleet by verdict and finding code"') == 1
    assert html.count("<svg") == html.count('role="img"') + html.count("<span><svg width=")
    assert "Checkpoint audit" in html


def test_text_is_escaped(tmp_path: Path) -> None:
    root = write_files(
        tmp_path / "fleet",
        {f'a<b>&"c"/{p}': d for p, d in read_files(SPARK / "stateless" / "checkpoint").items()},
    )
    html = page_for(str(root))
    assert "a<b>" not in html
    assert "a&lt;b&gt;&amp;&#34;c&#34;" in html  # markupsafe's escaping (Jinja2 autoescape)


def _cell(batch_id: int, offsets: str, commit: str) -> TimelineRow:
    return TimelineRow(batch_id, offsets, commit, "none")


def _record(i: int, timeline: list[TimelineRow], verdict: str, code: int) -> CheckpointRecord:
    record = checkpoint_record(f"/x/{i}", exit_code=code, timeline=tuple(timeline))
    assert record.verdict == verdict
    return record


def test_missing_cells_and_the_legend_swatch_are_the_only_uses_of_the_missing_colour() -> None:
    healthy = _record(0, [_cell(1, "present", "present"), _cell(0, "present", "present")], "ok", 0)
    broken = _record(
        1,
        [_cell(2, "present", "pending"), _cell(1, "missing", "present"), _cell(0, "present", "present")],
        "error",
        4,
    )

    assert "missing" not in cell_states([healthy])
    assert "missing" in cell_states([healthy, broken])
    assert MISSING_COLOUR not in render_html(["/x"], [healthy], [], summarize([healthy]))
    page = render_html(["/x"], [healthy, broken], [], summarize([healthy, broken]))
    assert page.count(MISSING_COLOUR) == 2  # the cell and its legend swatch


def test_damage_has_its_own_cell_and_legend_entry() -> None:
    damaged = _record(0, [_cell(3, "truncated", "empty"), _cell(2, "too-new", "damaged")], "error", 4)
    page = render_html(["/x"], [damaged], [], summarize([damaged]))
    for title in (
        "truncated (the JSON ends early)",
        "empty file",
        "written by a newer Spark",
        "damaged (cannot",
    ):
        assert title in page
    for legend in (">truncated<", ">empty<", ">too new<", ">damaged<"):
        assert legend in page


# --------------------------------------------------------------------------------- the browser


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise AssertionError("headless chromium is needed for this test: apt-get install -y chromium")


#: The flags of a headless chromium that reaches nothing but the page.
HEADLESS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def screenshot(page: Path, png: Path, size: str = "1400,1400") -> bytes:
    """Render a local page to PNG in headless chromium, as an operator's browser shows it."""
    with tempfile.TemporaryDirectory(prefix="cd-chromium-") as profile:
        proc = subprocess.run(
            [
                chromium(),
                *HEADLESS,
                "--hide-scrollbars",
                "--force-device-scale-factor=1",
                f"--user-data-dir={profile}",
                f"--screenshot={png}",
                f"--window-size={size}",
                page.resolve().as_uri(),
            ],
            capture_output=True,
            timeout=120,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    return png.read_bytes()


def fleet_of(tmp_path: Path, name: str, scenarios: dict[str, str]) -> Path:
    files = {}
    for rel, scenario in scenarios.items():
        files.update({f"{rel}/{p}": d for p, d in read_files(SPARK / scenario / "checkpoint").items()})
    return write_files(tmp_path / name, files)


def test_a_broken_tail_is_seen_in_a_real_browser(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    healthy = fleet_of(
        tmp_path, "healthy fleet", {"q1 window": "window_agg", "q2": "stateless", "q3": "uncommitted-tail"}
    )
    broken = fleet_of(
        tmp_path,
        "broken fleet",
        {"q1 window": "window_agg", "q2": "missing-prev-offsets", "q3": "state-delta-missing"},
    )
    red = hex_rgb(MISSING_COLOUR)
    counts = {}
    for fleet in (healthy, broken):
        page = tmp_path / f"{fleet.name}.html"
        code = main(["audit", str(fleet), "--live-window", "0", "--html", str(page)])
        capsys.readouterr()
        assert code in (0, 4, 5)
        png = screenshot(page, tmp_path / f"{fleet.name}.png")
        image = decode(png)
        assert (image.width, image.height) == (1400, 1400)
        colours = image.colours()
        assert len(colours) > 50  # text, chips and cells were drawn, not a blank page
        counts[fleet.name] = colours[red]

    assert counts["healthy fleet"] == 0
    # missing-prev-offsets: offsets/2 is missing -> one whole red cell (plus the legend swatch).
    assert counts["broken fleet"] >= CELL * CELL
    assert re.search(r"q2", (tmp_path / "broken fleet.html").read_text())


def dump_dom(page: Path, fragment: str = "") -> str:
    """Return the DOM after the page's script ran, in headless chromium."""
    with tempfile.TemporaryDirectory(prefix="cd-chromium-") as profile:
        proc = subprocess.run(
            [
                chromium(),
                *HEADLESS,
                f"--user-data-dir={profile}",
                "--dump-dom",
                page.resolve().as_uri() + fragment,
            ],
            capture_output=True,
            timeout=180,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    return proc.stdout.decode()


def thousand_checkpoints(local_fleet: Fleet) -> tuple[list, dict]:
    result = audit([local_fleet.root], options=OPTIONS)
    checkpoints = [r for r in result.records if isinstance(r, CheckpointRecord)]
    records = [
        replace(checkpoints[i % len(checkpoints)], url=f"s3://fleet/team-{i // 100}/query-{i:04d}/checkpoint")
        for i in range(1000)
    ]
    return records, summarize(records)


def test_a_thousand_checkpoints_filter_and_sort_in_a_real_browser(local_fleet: Fleet, tmp_path: Path) -> None:
    records, summary = thousand_checkpoints(local_fleet)
    page = tmp_path / "thousand.html"
    page.write_text(render_html(["s3://fleet/"], records, [], summary), encoding="utf-8")

    everything = dump_dom(page)
    ready = re.search(r'data-ready-ms="(\d+)"', everything)
    assert ready is not None  # the script ran to its end: the page is interactive
    rows = re.findall(r'<tr data-rank="\d+" data-verdict="(\w+)"[^>]*?(hidden="")?>', everything)
    assert len(rows) == 1000 and not any(hidden for _, hidden in rows)
    assert "1000 shown" in everything

    errors = dump_dom(page, "#verdict=error&code=CD103")
    shown = re.findall(
        r'<tr data-rank="\d+" data-verdict="(\w+)" data-path="[^"]*" data-codes="([^"]*)" data-restart="\w+">',
        errors,
    )
    expected = sum(1 for r in records if r.verdict == "error" and "CD103" in r.codes)
    assert 0 < len(shown) == expected and all(v == "error" and " CD103 " in c for v, c in shown)
    assert f"{expected} shown" in errors

    by_path = dump_dom(page, "#sort=-path&path=team-9")
    paths = re.findall(
        r'data-path="(s3://fleet/team-9/[^"]+)" data-codes="[^"]*" data-restart="\w+">', by_path
    )
    assert paths == sorted(paths, reverse=True) and len(paths) == 100


# ------------------------------------------------------------------------------------- triage


TRIAGE = {
    "a-healthy-async": "async",
    "b-stateless": "stateless",
    "c-missing-prev": "missing-prev-offsets",
    "d-state-deleted": "state-deleted",
    "e-truncated": "offsets-latest-truncated",
    "f-continuous": "continuous",
    "g-orphan-crc": "orphan-crc",
}


def triage_page(tmp_path: Path) -> tuple[Path, str, AuditSummary]:
    root = fleet_of(tmp_path, "triage", TRIAGE)
    result = audit([str(root)], options=OPTIONS)
    text = render_html(result.roots, result.records, result.notes, result.summary)
    page = tmp_path / "triage.html"
    page.write_text(text, encoding="utf-8")
    return page, text, result.summary


def _rows(html: str) -> list[tuple[str, str, str, bool]]:
    """(verdict, path, restart, hidden) of every row, in page order."""
    found = re.findall(
        r'<tr data-rank="\d+" data-verdict="(\w+)" data-path="([^"]*)" data-codes="[^"]*" '
        r'data-restart="(\w+)"( hidden="")?>',
        html,
    )
    return [(v, p.rsplit("/", 1)[-1], r, bool(h)) for v, p, r, h in found]


def test_rows_are_ranked_by_what_will_not_restart_then_by_verdict_and_data_at_risk(tmp_path: Path) -> None:
    _, html, summary = triage_page(tmp_path)
    rows = _rows(html)
    restarts = [r for _, _, r, _ in rows]
    # Every row whose restart fails comes first: no STARTS row sits between failures.
    assert restarts == sorted(restarts, key=lambda r: r != "fails")
    assert restarts.count("fails") == summary.restart_fails == 3
    # Then by verdict; a warning about the configured restart (state may be gone) before warnings
    # that only concern another restart (async switched off, a micro-batch trigger).
    names = [p for _, p, r, _ in rows if r != "fails"]
    assert names[0] == "d-state-deleted" and set(names[1:3]) == {"a-healthy-async", "f-continuous"}
    assert names[-1] == "b-stateless"
    assert html.count("starts as configured; the warning is about another restart mode") == 2


def test_the_list_counts_what_the_cards_count_and_codes_follow_the_list(tmp_path: Path) -> None:
    _, html, summary = triage_page(tmp_path)
    n = summary.kinds["checkpoint"]
    assert f"<h2>Audited directories ({summary.total}): {n} checkpoints, 0 file sink outputs</h2>" in html
    assert f'<div class="n">{n}</div><div class="l">checkpoints</div>' in html
    # The first screen is the cards and the rows: the code table comes after the list.
    assert html.index('id="fleet"') < html.index("<h2>By finding code</h2>")


def test_will_not_restart_is_a_filter_in_a_real_browser(tmp_path: Path) -> None:
    page, html, summary = triage_page(tmp_path)
    assert '<button type="button" class="card alert" data-filter="restart=fails"' in html
    dom = dump_dom(page, "#restart=fails")
    shown = [(v, p) for v, p, r, hidden in _rows(dom) if not hidden]
    assert len(shown) == summary.restart_fails == 3
    assert all(r == "fails" for _, _, r, hidden in _rows(dom) if not hidden)
    assert f"{summary.restart_fails} shown" in dom


# ------------------------------------------------------------- pictures where people look (#36)

#: The audit's clock in these tests: three hours after the newest batch of the window_agg fixture
#: (Spark's batchTimestampMs, fixed in the fixture), so "stopped 3 h ago" never reads the wall clock.
WINDOW_AGG_NEWEST_MS = 1795366448414
NOW_MS = WINDOW_AGG_NEWEST_MS + 3 * 3600 * 1000


def _kafka_countdown(written_ago_h: int, deadline_in_h: int, partition: int):  # type: ignore[no-untyped-def]
    from checkpoint_doctor.diagnosis.sources.kafka_retention import Countdown

    deadline = NOW_MS + deadline_in_h * 3600 * 1000
    return Countdown(
        "retention.ms",
        "retention.ms may delete unread records",
        deadline_ms=deadline,
        remaining_ms=deadline - NOW_MS,
        topic="orders",
        partition=partition,
        offset=1000 + partition,
        timestamp_ms=NOW_MS - written_ago_h * 3600 * 1000,
    )


DAY = 24 * 3600 * 1000


def orders_windows():  # type: ignore[no-untyped-def]
    """The retention windows of a checkpoint reading four partitions of ``orders`` (retention.ms 7
    days), from typed broker facts as ``AuditKafka`` reads them: partition 0's first unread record
    was written 5 days before the audit, partition 1's 8 days (overdue), partition 2 is caught up
    (nothing unread: no bar), partition 3's record timestamp could not be fetched (no bar)."""
    from checkpoint_doctor.fleet.kafka import partition_windows
    from checkpoint_doctor.model import KafkaLive, KafkaOffset, KafkaRetention

    live = KafkaLive(
        "b:9092",
        (("orders", ((0, 0, 50), (1, 0, 50), (2, 0, 50), (3, 0, 50))),),
        (KafkaRetention("orders", 7 * DAY, -1, "delete"),),
        (("orders", 0, 10, NOW_MS - 5 * DAY), ("orders", 1, 20, NOW_MS - 8 * DAY), ("orders", 3, 30, None)),
    )
    offsets = KafkaOffset((("orders", 0, 10), ("orders", 1, 20), ("orders", 2, 50), ("orders", 3, 30)))
    return partition_windows([offsets], live)


def test_every_unread_partition_has_a_retention_window() -> None:
    windows = orders_windows()
    assert [(w.partition, w.offset, w.deadline_ms - w.written_ms) for w in windows] == [
        (1, 20, 7 * DAY),
        (0, 10, 7 * DAY),
    ]
    assert windows[0].deadline_ms < NOW_MS < windows[1].deadline_ms  # soonest first: 1 is overdue


def pictures_page(tmp_path: Path, name: str, scenarios: dict[str, str], *, kafka: bool = False) -> Path:
    """Audit a fleet of real checkpoints with the injected clock and write its page; with ``kafka``
    its first record reads the partitions of :func:`orders_windows`."""
    from checkpoint_doctor.fleet.records import KafkaPart

    root = fleet_of(tmp_path, name, scenarios)
    result = audit([str(root)], options=DiagnoseOptions(live_window_s=0, now_ms=NOW_MS))
    records = list(result.records)
    if kafka:
        windows = orders_windows()
        first = windows[0]
        countdown = _kafka_countdown((NOW_MS - first.written_ms) // 3_600_000, -1, first.partition)
        records[0] = replace(
            records[0],
            kafka=KafkaPart(("orders",), bootstrap="b:9092", retention=countdown, partitions=windows),
        )
    page = tmp_path / f"{name}.html"
    page.write_text(
        render_html(result.roots, records, result.notes, summarize(records), now_ms=NOW_MS), encoding="utf-8"
    )
    return page


def test_the_pictures_are_seen_in_a_real_browser(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from checkpoint_doctor.fleet.html import (
        ELAPSED_FILL,
        GRID,
        GRID_W,
        MATRIX_FILL,
        NOW_COLOUR,
        STOPPED_FILL,
        VERDICT_COLOUR,
    )

    healthy = pictures_page(tmp_path, "healthy", {"q1": "window_agg", "q2": "stateless"})
    broken = pictures_page(
        tmp_path,
        "broken",
        {"q1": "window_agg", "q2": "missing-prev-offsets", "q3": "state-delta-missing"},
        kafka=True,
    )
    counts = {}
    for page in (healthy, broken):
        png = tmp_path / f"{page.stem}.png"
        image = decode(screenshot(page, png))
        with capsys.disabled():
            print(f"\nscreenshot of the audit page ({page.stem} fleet): {png}")
        colours = image.colours()
        counts[page.stem] = {
            "fails": colours[hex_rgb(MATRIX_FILL["fails"])],
            "starts": colours[hex_rgb(MATRIX_FILL["starts"])],
            "now": colours[hex_rgb(NOW_COLOUR)],
            "stopped": colours[hex_rgb(STOPPED_FILL)],
            "elapsed": colours[hex_rgb(ELAPSED_FILL)],
            "error": colours[hex_rgb(VERDICT_COLOUR["error"])],
        }
    swatch = (GRID - 2) * (GRID - 2)  # the legend's swatch of each matrix colour
    cell = (GRID_W - 3) * (GRID - 3)  # the inside of one matrix cell
    # The restart matrix grid: a healthy fleet's has no failing cell (the legend swatch only); the
    # broken fleet's failing restarts are red cells.
    assert counts["healthy"]["fails"] == swatch
    assert counts["broken"]["fails"] >= swatch + 2 * cell
    assert counts["healthy"]["starts"] >= swatch + 2 * cell
    # The time axes: the time since the newest batch is shaded, "now" is marked on every axis.
    assert counts["healthy"]["stopped"] >= 2 * 100 and counts["healthy"]["now"] >= 2 * 2 * 15
    # Kafka retention bars: elapsed retention drawn, and a now marker on each bar.
    assert counts["healthy"]["elapsed"] == 0
    assert counts["broken"]["elapsed"] >= 200 + 100
    assert counts["broken"]["now"] >= counts["healthy"]["now"] + 2 * 2 * 14
    # The fleet chart: the error segment of the verdict bar and the error codes' bars.
    assert counts["broken"]["error"] > counts["healthy"]["error"] + 500

    dom = dump_dom(broken)
    # one time axis per checkpoint, on the injected clock
    assert dom.count('aria-label="batches in time: stopped 3 h ago"') == 3
    assert 'aria-label="fleet by verdict and finding code"' in dom
    # One bar per unread partition with a deadline: partition 1 overdue first, then partition 0.
    bars = re.findall(
        r'<tr class="retention">.*?<td class="codes">([^<]+)</td>.*?<td[^>]*>([^<]+)</td></tr>', dom
    )
    assert bars == [("orders-1", "overdue"), ("orders-0", "2 d left")]
    assert dom.count('aria-label="restart matrix by Spark line and mode"') == 3
    assert 'class="cell fails"' in dom and 'class="cell fails"' not in dump_dom(healthy)


def test_stopped_is_a_column_in_text_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from tests.cli.test_schemas import validate

    root = fleet_of(tmp_path, "clocked", {"q1": "window_agg"})
    # The audit's clock, injected: the one clock the CLI reads (cli.app.now_ms) as audit sees it.
    monkeypatch.setattr("checkpoint_doctor.cli.app.now_ms", lambda: NOW_MS)
    assert main(["audit", str(root), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    validate("audit", doc)
    (record,) = doc["result"]["records"]
    assert record["latest"]["stopped"] == "3 h" and record["latest"]["stopped_s"] == 3 * 3600
    assert [b["batch_id"] for b in record["latest"]["batch_times"]] == [1, 2, 3]
    assert record["latest"]["batch_times"][-1]["batch_time_ms"] == WINDOW_AGG_NEWEST_MS

    assert main(["audit", str(root), "-v"]) == 0
    text = capsys.readouterr().out
    # Each directory is a block that fits the terminal (issue 36 item 2): its facts, "stopped" one.
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["ok", "q1"])
    facts = {line.split()[0]: " ".join(line.split()[1:]) for line in lines[at + 1 : at + 5]}
    assert facts["stopped"] == "3 h ago", facts


def test_the_matrix_grid_says_not_judged_where_no_delta_release_judges_the_line() -> None:
    from checkpoint_doctor.fleet.html import GRID_W, matrix_grid

    fixture = FIXTURES_DELTA / "spark-4.2.1" / "delta-source-stateless"
    result = audit([str(fixture)], options=OPTIONS)
    (record,) = [r for r in result.records if isinstance(r, CheckpointRecord)]
    grid = matrix_grid(record)
    assert grid is not None
    by_line = {line: x - GRID_W // 2 for x, line in grid.columns}  # a column's label is centred
    states = {c.state for c in grid.cells if c.x == by_line["4.3"]}
    # 4.3 has no Delta Lake release: its cells are "not judged", never a green "starts".
    assert states == {"not-judged"}
    assert {c.state for c in grid.cells if c.x == by_line["4.2"]} <= {"starts", "fails", "if-stateless"}
