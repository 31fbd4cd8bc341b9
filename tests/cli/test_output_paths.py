"""Read-only commands never write inside a checkpoint, and never overwrite a file without --force:
``plan -o`` and ``audit --html``, the checkpoint given as a path, a ``file://`` URL or
through a symlink."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from checkpoint_doctor.cli import main
from tests.conftest import FIXTURES
from tests.storage.builders import read_files


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    cp = tmp_path / "ckpt"
    shutil.copytree(FIXTURES / "spark-4.3.0" / "missing-prev-offsets" / "checkpoint", cp)
    (tmp_path / "into").symlink_to(cp / "offsets")
    return cp


@pytest.mark.parametrize(
    "output",
    [
        "{cp}/offsets/3",  # the newest offsets file: replaced by plan JSON before the fix
        "{cp}/plan.json",
        "{cp}/offsets/../state/plan.json",
        "file://{cp}/offsets/9",
        "{tmp}/into/plan.json",  # a symlink into the checkpoint
    ],
)
@pytest.mark.parametrize("how", ["path", "file-url", "symlink"])
def test_plan_refuses_an_output_inside_the_checkpoint(
    tmp_path: Path, capsys, checkpoint: Path, output: str, how: str
) -> None:
    target = output.format(cp=checkpoint, tmp=tmp_path)
    given = {"path": str(checkpoint), "file-url": f"file://{checkpoint}", "symlink": str(tmp_path / "link")}[
        how
    ]
    (tmp_path / "link").symlink_to(checkpoint)
    before = read_files(checkpoint)

    code, _out, err = run(capsys, "plan", given, "-o", target, "--force", "--live-window", "0")

    assert code == 2
    shown = target.removeprefix("file://")
    assert err.startswith(f"checkpoint-doctor: error: -o {shown} is inside ")
    assert (
        "which this command reads; a read-only command never writes there; choose a -o path outside it" in err
    )
    assert read_files(checkpoint) == before


def test_plan_refuses_an_output_inside_the_sink(tmp_path: Path, capsys) -> None:
    scenario = FIXTURES / "spark-3.5.9" / "file_to_file"
    shutil.copytree(scenario / "checkpoint", tmp_path / "ckpt")
    shutil.copytree(scenario / "sink", tmp_path / "out")
    before = read_files(tmp_path / "out")

    code, _, err = run(
        capsys,
        "plan",
        str(tmp_path / "ckpt"),
        "--sink-path",
        str(tmp_path / "out"),
        "-o",
        str(tmp_path / "out" / "_spark_metadata" / "0"),
        "--live-window",
        "0",
    )

    assert code == 2 and f"is inside {tmp_path / 'out'}" in err
    assert read_files(tmp_path / "out") == before


def test_plan_never_overwrites_without_force(tmp_path: Path, capsys, checkpoint: Path) -> None:
    output = tmp_path / "plan.json"
    output.write_text("keep me")

    code, _, err = run(capsys, "plan", str(checkpoint), "-o", str(output), "--live-window", "0")

    assert code == 2
    assert (
        err
        == f"checkpoint-doctor: error: -o {output} exists; pass --force to overwrite it, or choose another path\n"
    )
    assert output.read_text() == "keep me"
    code, _, _ = run(capsys, "plan", str(checkpoint), "-o", str(output), "--force", "--live-window", "0")
    assert code in (0, 4) and output.read_text().startswith("{")
    fresh = tmp_path / "fresh.json"
    code, _, _ = run(capsys, "plan", str(checkpoint), "-o", f"file://{fresh}", "--live-window", "0")
    assert code in (0, 4) and fresh.read_text().startswith("{")


def test_audit_html_refuses_a_checkpoint_it_reads_and_an_existing_file(tmp_path: Path, capsys) -> None:
    fleet = tmp_path / "fleet"
    shutil.copytree(FIXTURES / "spark-4.3.0" / "window_agg" / "checkpoint", fleet / "team" / "ckpt")
    before = read_files(fleet)

    inside = fleet / "team" / "ckpt" / "commits" / "report.html"
    code, _, err = run(capsys, "audit", str(fleet), "--html", str(inside))
    assert code == 2 and f"--html {inside} is inside {fleet}/team/ckpt" in err
    assert read_files(fleet) == before

    existing = tmp_path / "report.html"
    existing.write_text("keep me")
    code, _, err = run(capsys, "audit", str(fleet), "--html", str(existing))
    assert code == 2 and "exists; pass --force to overwrite it" in err
    assert existing.read_text() == "keep me"

    beside = fleet / "report.html"  # under the root, outside every checkpoint: allowed
    code, _, _ = run(capsys, "audit", str(fleet), "--html", str(beside), "--live-window", "0")
    assert code in (0, 1) and beside.read_text().startswith("<!doctype html>")


@pytest.mark.parametrize("force", [True, False])
def test_plan_output_swapped_for_a_link_into_the_checkpoint_during_the_plan_is_refused(
    tmp_path: Path, capsys, monkeypatch, checkpoint: Path, force: bool
) -> None:
    """``out/`` was checked at the start, then swapped for a link to ``offsets/`` while
    the plan ran; the write followed the link and replaced ``offsets/3`` with plan JSON. The file is
    checked where it lands, when it is written; the plan is kept in a temporary file."""
    import checkpoint_doctor.planning.matrix_plan as matrix_plan

    out = tmp_path / "out"
    out.mkdir()
    (out / "3").write_text("old plan")
    real = matrix_plan.plan_for_matrix

    def swap_then_plan(*args, **kwargs):
        out.rename(tmp_path / "out-moved")
        out.symlink_to(checkpoint / "offsets")
        return real(*args, **kwargs)

    monkeypatch.setattr(matrix_plan, "plan_for_matrix", swap_then_plan)
    before = read_files(checkpoint)
    # With --force the existing out/3 may be replaced (offsets/3 after the swap); without it, out/9
    # is created exclusively (offsets/9 after the swap).
    target = out / "3" if force else out / "9"

    code, _out, err = run(
        capsys,
        "plan",
        str(checkpoint),
        "-o",
        str(target),
        *(["--force"] if force else []),
        "--live-window",
        "0",
    )

    assert code == 2
    assert read_files(checkpoint) == before
    assert f"would land inside {checkpoint}, which this command reads" in err
    assert "the -o output was saved to " in err


DELTA = FIXTURES / "delta" / "spark-4.2.1"


@pytest.mark.parametrize(
    ("scenario", "table", "commit"),
    [
        # A damaged source (replaced in place): the plan has steps, so main wrote it as commit 6.
        ("delta-source-stateless-replaced", "source", "00000000000000000006.json"),
        ("delta-source-stateless", "source", "00000000000000000005.json"),
        ("delta-sink", "sink", "00000000000000000003.json"),
    ],
)
@pytest.mark.parametrize("how", ["beside", "named", "file-url"])
def test_plan_refuses_an_output_inside_a_delta_table_it_reads(
    tmp_path: Path, capsys, scenario: str, table: str, commit: str, how: str
) -> None:
    """Issue 31: ``plan -o TABLE/_delta_log/<next>.json`` made the plan the table's next commit (the
    table found beside the checkpoint is read for pairing, as one named with --delta-table)."""
    shutil.copytree(DELTA / scenario, tmp_path / "s")
    ckpt, tbl = tmp_path / "s" / "checkpoint", tmp_path / "s" / table
    before = read_files(tbl)
    target = tbl / "_delta_log" / commit
    output = f"file://{target}" if how == "file-url" else str(target)
    named = ["--delta-table", str(tbl)] if how == "named" else []

    code, _out, err = run(
        capsys, "plan", str(ckpt), *named, "-o", output, "--accept-data-loss", "--live-window", "0"
    )

    assert code == 2, err
    assert f"is inside {tbl}, which this command reads; a read-only command never writes there" in err
    assert read_files(tbl) == before and not target.exists()


def test_plan_writes_beside_the_delta_table(tmp_path: Path, capsys) -> None:
    """Outside every table it reads, the plan is written as before."""
    shutil.copytree(DELTA / "delta-source-stateless-replaced", tmp_path / "s")
    out = tmp_path / "s" / "plan.json"

    code, _out, err = run(
        capsys,
        "plan",
        str(tmp_path / "s" / "checkpoint"),
        "-o",
        str(out),
        "--accept-data-loss",
        "--live-window",
        "0",
    )

    assert code in (0, 1, 4), err
    assert out.read_text().startswith("{")


@pytest.mark.parametrize("option", ["--html", "--metrics"])
def test_audit_outputs_refuse_a_delta_table_under_the_roots(tmp_path: Path, capsys, option: str) -> None:
    """Issue 31: ``audit --html/--metrics`` into a paired table's ``_delta_log`` became commit 3 of it."""
    fleet = tmp_path / "fleet"
    shutil.copytree(DELTA / "delta-sink", fleet)
    before = read_files(fleet / "sink")
    target = fleet / "sink" / "_delta_log" / "00000000000000000003.json"

    code, _, err = run(capsys, "audit", str(fleet), option, str(target), "--live-window", "0")

    assert code == 2, err
    assert f"{option} {target} is inside {fleet}/sink, which this command reads" in err
    assert read_files(fleet / "sink") == before and not target.exists()
