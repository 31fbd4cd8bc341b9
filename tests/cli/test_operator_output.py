"""Issue 36, what an operator reads: nothing unjudged reads healthy (a Delta query's 4.3 cell is
"not judged", not a start), an audit row says why it has its verdict, and output fits the terminal
(wrapped at spaces and dots, never inside a name; audit paths relative to the root given)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from checkpoint_doctor.cli import main
from checkpoint_doctor.render.layout import fill, layout, table
from tests.delta.test_recorded_restarts import DELTA_FIXTURES

#: A Delta source whose log was cleaned past its offsets: 3.5-4.2 fail, 4.3 has no Delta release.
LOG_CLEANED = DELTA_FIXTURES / "spark-3.5.9" / "delta-source-count-log-cleaned"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    out, _ = capsys.readouterr()
    return code, out


@pytest.fixture
def log_cleaned(tmp_path: Path) -> Path:
    shutil.copytree(LOG_CLEANED, tmp_path / "q")
    return tmp_path / "q" / "checkpoint"


def test_a_delta_querys_43_cell_is_not_judged_in_text_and_json(log_cleaned, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    code, out = run(capsys, "diagnose", str(log_cleaned), "--live-window", "0")
    row = next(line for line in out.splitlines() if line.startswith("4.3 "))
    assert code == 4 and "NOT JUDGED" in row and "STARTS" not in row, row
    assert "~ not judged: no Delta Lake release exists for Spark 4.3" in out
    _, doc = run(capsys, "diagnose", str(log_cleaned), "--live-window", "0", "--format", "json")
    cells = {c["spark"]: c for c in json.loads(doc)["result"]["matrix"]}
    assert cells["4.3"]["outcome"] == "not-judged" and cells["4.3"]["summary"].startswith("NOT JUDGED")
    assert {cells[line]["outcome"] for line in ("3.5", "4.0", "4.1", "4.2")} == {"fails"}


def test_asking_43_alone_is_not_called_healthy(log_cleaned, capsys) -> None:
    # The other lines fail (CD209): asking only the line that cannot judge the table must not exit 0.
    code, out = run(capsys, "diagnose", str(log_cleaned), "--spark", "4.3", "--live-window", "0")
    assert code == 1, out
    assert "Restart on Spark 4.3 (micro-batch): NOT JUDGED" in out
    # The way to the lines that judge it: the same command without --spark.
    hint = out.split("the lines with a Delta Lake release judge its tables:\n")[1].splitlines()[0]
    assert hint.split() == ["checkpoint-doctor", "diagnose", str(log_cleaned), "--live-window", "0"]
    _, doc = run(
        capsys, "diagnose", str(log_cleaned), "--spark", "4.3", "--live-window", "0", "--format", "json"
    )
    result = json.loads(doc)
    assert (result["exit_code"], result["result"]["restart"]["outcome"]) == (1, "not-judged")


def test_an_audit_row_says_why_in_text_and_html(tmp_path, capsys, monkeypatch) -> None:
    root = tmp_path / "fleet"
    for name in ("delta-source-count-log-cleaned", "delta-sink-rolled-back", "delta-sink"):
        shutil.copytree(DELTA_FIXTURES / "spark-3.5.9" / name, root / name)
    monkeypatch.setenv("COLUMNS", "80")
    html = tmp_path / "audit.html"
    _, out = run(capsys, "audit", str(root), "--live-window", "0", "--html", str(html))
    blocks = out.split(f"(directories relative to {root})\n")[1].split("\n\n")[0]
    rows = {b.split()[1]: b for b in re.split(r"\n(?=\S)", blocks)}
    # The rolled-back sink STARTS yet is a warning: the row names the finding that makes it one.
    rolled = rows["delta-sink-rolled-back/checkpoint"]
    assert rolled.split()[0] == "warning" and "STARTS new batch 1" in rolled
    assert re.search(r"why +CD407 The restart runs batch ids the Delta sink table", rolled), rolled
    assert "why      CD209 The Delta log no longer holds" in rows["delta-source-count-log-cleaned/checkpoint"]
    page = html.read_text()
    assert "why: CD407 The restart runs batch ids the Delta sink table" in page
    assert "why: CD209 The Delta log no longer holds" in page


def test_audit_at_80_columns_fits_with_paths_relative_to_the_root(tmp_path, capsys, monkeypatch) -> None:
    root = tmp_path / "fleet"
    for name in ("delta-source-count-log-cleaned", "delta-source-count-replaced", "delta-sink-rolled-back"):
        shutil.copytree(DELTA_FIXTURES / "spark-3.5.9" / name, root / name)
    monkeypatch.setenv("COLUMNS", "80")
    _, out = run(capsys, "audit", str(root), "--live-window", "0")
    # Only a path or a command to copy may run past the width (the root is named whole, twice).
    wide = [line for line in out.splitlines() if len(line) > 80 and "checkpoint-doctor " not in line]
    wide = [line for line in wide if str(root) not in line]
    assert not wide, wide
    attention = out.split("Needs attention")[1].split("Next steps")[0]
    assert str(root) not in attention.split("\n", 2)[2]  # named once, in the title's second line
    assert "\nerror      delta-source-count-log-cleaned/checkpoint\n" in attention
    # An error class is never cut inside its name (tabulate's maxcolwidths cut DELTA_MISSIN|G_...).
    assert "DELTA_MISSING_FILES_UNEXPECTED_VERSION" in attention
    assert "DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE" in attention
    # The skipped table too: relative paths.
    skipped = out.split("Skipped")[1]
    assert str(root) not in skipped and "delta-sink-rolled-back " in skipped


def test_a_table_wraps_at_words_and_dots_never_inside_a_name() -> None:
    cls = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
    error = "FAILS: DELTA_MISSING_FILES_UNEXPECTED_VERSION: version 3 is gone, the log starts at 6"
    with layout(84):
        text = table(["spark", "restart", "conf"], [["4.2 upgrade", error, cls]])
    # 11 + 39 (the error class, whole) + 30 (the class after its dots) and the gaps: 84 columns.
    assert all(len(line) <= 84 for line in text.splitlines()), text
    words = text.split()
    assert "DELTA_MISSING_FILES_UNEXPECTED_VERSION:" in words
    assert "".join(w for w in words if w.startswith(("org.", "execution.", "streaming.", "HDFS"))) == cls
    # A path is never cut at its dots: it stands whole on its line.
    assert fill("see /tmp/a.b/c.d/e.f.g.h.i.j.k.l.m.n.o.p for it", 12).splitlines()[1] == (
        "/tmp/a.b/c.d/e.f.g.h.i.j.k.l.m.n.o.p"
    )


def test_inspect_at_80_columns_wraps_a_provider_class_after_its_dots(tmp_path, capsys, monkeypatch) -> None:
    from tests.scenarios import all_scenarios

    cp = next(s for s in all_scenarios() if s.id == "spark-4.3.0/window_agg").copy_to(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    _, out = run(capsys, "inspect", str(cp))
    confs = out.split("Pinned confs")[1].split("\n\n")[0].splitlines()[1:]
    assert confs and all(len(line) <= 80 for line in confs), [line for line in confs if len(line) > 80]
    assert "org.apache.spark.sql.execution." in out and "HDFSBackedStateStoreProvider" in out
    # and every other line, the state table's short columns under long headers too (84 of 80)
    wide = [line for line in out.splitlines() if len(line) > 80 and str(cp) not in line]
    assert not wide, wide


def test_an_audit_on_43_alone_calls_a_delta_query_not_judged_in_json_and_html(tmp_path, capsys) -> None:
    shutil.copytree(LOG_CLEANED, tmp_path / "fleet" / "q")
    html = tmp_path / "audit.html"
    code, out = run(
        capsys,
        "audit",
        str(tmp_path / "fleet"),
        "--spark",
        "4.3",
        "--live-window",
        "0",
        "--html",
        str(html),
        "--format",
        "json",
    )
    (record,) = json.loads(out)["result"]["records"]
    assert code == 1 and (record["verdict"], record["restart"]["outcome"]) == ("warning", "not-judged")
    page = html.read_text()
    assert 'data-restart="not-judged"' in page and "NOT JUDGED: no Delta Lake release for Spark 4.3" in page
