"""The HTML page: a pure function of the records, self-contained, escaped, and (in a real headless
chromium) a broken tail shows as red cells while a healthy fleet shows none."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from checkpoint_doctor.audit.html import CELL, MISSING_COLOUR, cell_states, render_html, timeline_svg
from checkpoint_doctor.audit.report import checkpoint_timeline, sink_timeline, summarize
from checkpoint_doctor.audit.runner import audit
from checkpoint_doctor.cli import main
from checkpoint_doctor.diagnosis import DiagnoseOptions
from tests.audit.conftest import SPARK, Fleet
from tests.audit.png import decode, hex_rgb
from tests.storage.builders import read_files, write_files

OPTIONS = DiagnoseOptions(live_window_s=0)


def page_for(root: str) -> str:
    result = audit([root], options=OPTIONS)
    return render_html(result.roots, result.records, result.notes, result.summary, generated_at="2026-01-01T00:00:00Z")


def test_the_page_loads_nothing_from_anywhere(local_fleet: Fleet) -> None:
    html = page_for(local_fleet.root)

    assert html.startswith("<!doctype html>")
    for needle in ("<script", "src=", "href=", "url(", "@import", "http://", "https://", "<link", "<img", "<iframe"):
        assert needle not in html.lower(), needle
    assert html.count("<svg") >= 7
    assert "Checkpoint audit" in html


def test_text_is_escaped(tmp_path: Path) -> None:
    root = write_files(tmp_path / "fleet", {f'a<b>&"c"/{p}': d for p, d in read_files(SPARK / "stateless" / "checkpoint").items()})
    html = page_for(str(root))
    assert "a<b>" not in html
    assert "a&lt;b&gt;&amp;&quot;c&quot;" in html


def _row(batch_id: int, offsets: bool, commit: bool, state: tuple[int, int] | None) -> dict:
    return {
        "batch_id": batch_id,
        "offsets": offsets,
        "commit": commit,
        "state": None if state is None else {"present": state[0], "stores": state[1]},
    }


def test_timeline_cells() -> None:
    rows = [_row(5, True, False, (0, 2)), _row(4, False, True, (2, 2)), _row(3, True, True, (1, 2)), _row(2, True, True, (0, 2))]
    cells = checkpoint_timeline(rows, "micro-batch")
    assert [(c["offsets"], c["commit"], c["state"]) for c in cells] == [
        ("present", "pending", "pending"),  # the newest batch was in flight when the query stopped
        ("missing", "present", "present"),
        ("present", "present", "partial"),
        ("present", "present", "missing"),
    ]
    async_cells = checkpoint_timeline([_row(9, True, True, None), _row(8, False, False, None)], "async")
    assert [(c["offsets"], c["commit"], c["state"]) for c in async_cells] == [
        ("present", "present", "none"),
        ("absent", "absent", "none"),
    ]
    sink = sink_timeline([10, 11, 12], [9], ["_spark_metadata/13"], length=6)
    assert [(c["batch_id"], c["sink"]) for c in sink] == [(12, "present"), (11, "present"), (10, "present"), (9, "compact"), (8, "folded"), (7, "folded")]


def test_missing_cells_and_the_legend_swatch_are_the_only_uses_of_the_missing_colour() -> None:
    healthy = {"kind": "checkpoint", "timeline": checkpoint_timeline([_row(1, True, True, None), _row(0, True, True, None)], "micro-batch")}
    broken = {"kind": "checkpoint", "timeline": checkpoint_timeline([_row(2, True, False, None), _row(1, False, True, None), _row(0, True, True, None)], "micro-batch")}

    assert MISSING_COLOUR not in timeline_svg(healthy)
    assert timeline_svg(broken).count(MISSING_COLOUR) == 1
    assert "missing" not in cell_states([healthy])
    assert "missing" in cell_states([healthy, broken])
    records = [
        {**r, "checkpoint": f"/x/{i}", "verdict": v, "exit_code": e, "codes": [], "restart": None}
        for i, (r, v, e) in enumerate([(healthy, "ok", 0), (broken, "error", 4)])
    ]
    assert MISSING_COLOUR not in render_html(["/x"], records[:1], [], summarize(records[:1]))
    assert render_html(["/x"], records, [], summarize(records)).count(MISSING_COLOUR) == 2  # the cell and its legend swatch


# --------------------------------------------------------------------------------- the browser


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise AssertionError("headless chromium is needed for this test: apt-get install -y chromium")


def screenshot(page: Path, png: Path, size: str = "1400,1400") -> bytes:
    """Render a local page to PNG in headless chromium, as an operator's browser shows it."""
    with tempfile.TemporaryDirectory(prefix="cd-chromium-") as profile:
        proc = subprocess.run(
            [
                chromium(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
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
    healthy = fleet_of(tmp_path, "healthy fleet", {"q1 window": "window_agg", "q2": "stateless", "q3": "uncommitted-tail"})
    broken = fleet_of(tmp_path, "broken fleet", {"q1 window": "window_agg", "q2": "missing-prev-offsets", "q3": "state-delta-missing"})
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
