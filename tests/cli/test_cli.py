"""The command line: exit codes, one-line errors, JSON documents, golden tables."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from checkpoint_doctor.exit_codes import ExitCode
from checkpoint_doctor.render.documents import schema_version
from tests.scenarios import REPO, scenario
from tests.scenarios import run_cli as run

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("CHECKPOINT_DOCTOR_UPDATE_GOLDEN") == "1"


def golden(name: str, text: str, replace: dict[str, str]) -> None:
    """Compare with a golden file; paths, file mtimes and the plan id (which hashes them) vary."""
    for old, new in replace.items():
        text = text.replace(old, new)
    text = re.sub(r"modified \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC", "modified <mtime>", text)
    text = re.sub(r"^Plan(\s+)[0-9a-f]{16}$", r"Plan\1<plan-id>", text, flags=re.M)
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"golden file {path} is missing (CHECKPOINT_DOCTOR_UPDATE_GOLDEN=1 writes it)"
    assert text == path.read_text()


#: The exit code of each golden run: a warning (1) where only a plausible restart fails or state may
#: be gone; an error (4) where the restart that counts fails.
GOLDEN_EXIT_CODES = {
    "inspect-window_agg.txt": 0,
    "inspect-file_to_file.txt": 0,
    "diagnose-async-tail-sync.txt": 4,
    "diagnose-async-tail-matrix.txt": 1,
    "diagnose-state-deleted-matrix.txt": 1,
    "diagnose-continuous-matrix.txt": 1,
    "diagnose-async-tail-narrowed.txt": 4,
    "diagnose-state-delta-missing.txt": 4,
    "plan-missing-prev-offsets.txt": 0,
}


@pytest.mark.parametrize(
    ("scenario_id", "args", "golden_name"),
    [
        ("spark-4.3.0/window_agg", ["inspect"], "inspect-window_agg.txt"),
        ("spark-3.5.9/file_to_file", ["inspect", "--sink-path", "{sink}"], "inspect-file_to_file.txt"),
        (
            "spark-4.3.0/async-tail",
            ["diagnose", "--spark", "4.3.0", "--mode", "micro-batch", "--live-window", "0"],
            "diagnose-async-tail-sync.txt",
        ),
        ("spark-4.3.0/async-tail", ["diagnose", "--live-window", "0"], "diagnose-async-tail-matrix.txt"),
        (
            "spark-3.5.9/state-deleted",
            ["diagnose", "--live-window", "0"],
            "diagnose-state-deleted-matrix.txt",
        ),
        ("spark-4.3.0/continuous", ["diagnose", "--live-window", "0"], "diagnose-continuous-matrix.txt"),
        (
            "spark-3.5.9/async-tail",
            ["diagnose", "--mode", "micro-batch", "--spark", "3.5", "--spark", "4.3", "--live-window", "0"],
            "diagnose-async-tail-narrowed.txt",
        ),
        (
            "spark-3.5.9/state-delta-missing",
            ["diagnose", "--spark", "3.5", "--live-window", "0"],
            "diagnose-state-delta-missing.txt",
        ),
        ("spark-4.3.0/missing-prev-offsets", ["plan", "--live-window", "0"], "plan-missing-prev-offsets.txt"),
    ],
)
def test_golden_tables(scenario_id, args, golden_name, tmp_path, capsys):
    s = scenario(scenario_id)
    # a directory of one name: the suggested plan file is named after the checkpoint's parent, and
    # tmp_path's name carries a counter that depends on which tests ran before in this process
    work = tmp_path / "golden"
    cp = s.copy_to(work)
    argv = [a.replace("{sink}", str(work / "sink")) for a in args]
    code, out, err = run(capsys, argv[0], str(cp), *argv[1:])
    assert err == ""
    golden(golden_name, out, {str(work): "<tmp>"})
    assert code == GOLDEN_EXIT_CODES[golden_name]


def test_inspect_json_is_one_document_with_a_schema_version(tmp_path, capsys):
    cp = scenario("spark-4.3.0/rocksdb_changelog").copy_to(tmp_path)
    code, out, err = run(capsys, "inspect", str(cp), "--format", "json", "--deep")
    doc = json.loads(out)
    assert code == 0 and err == ""
    assert doc["schema_version"] == schema_version("inspect") and doc["command"] == "inspect"
    result = doc["result"]
    assert result["offsets"]["last"] == 6 and result["state"]["operators"][0]["provider"] == "rocksdb"
    assert result["written_by"]["line"] == "4.3" and result["mode"]["mode"] == "micro-batch"
    assert [t["batch_id"] for t in result["timeline"]][:1] == [6]


@pytest.mark.parametrize(
    ("scenario_id", "args", "expected"),
    [
        ("spark-4.3.0/window_agg", [], 0),
        ("spark-4.3.0/commits-two-behind", [], 1),
        ("spark-4.3.0/async-tail", ["--mode", "micro-batch"], 4),
        ("spark-4.3.0/metadata-missing", [], 4),
    ],
)
def test_diagnose_exit_codes(scenario_id, args, expected, tmp_path, capsys):
    cp = scenario(scenario_id).copy_to(tmp_path)
    code, _, _ = run(capsys, "diagnose", str(cp), "--live-window", "0", *args)
    assert code == expected


def test_diagnose_json_prediction_and_findings(tmp_path, capsys):
    cp = scenario("spark-3.5.9/async-tail").copy_to(tmp_path)
    code, out, _ = run(
        capsys,
        "diagnose",
        str(cp),
        "--mode",
        "micro-batch",
        "--spark",
        "3.5",
        "--format",
        "json",
        "--live-window",
        "0",
    )
    result = json.loads(out)["result"]
    assert code == 4
    assert result["restart"]["outcome"] == "fails"
    assert result["restart"]["error"]["search"] == "batch 31 doesn't exist"
    assert result["findings"][0]["code"] == "CD101" and result["findings"][0]["severity"] == "error"
    assert result["exit_code"] == 4


def test_missing_path_is_one_line_exit_8(tmp_path, capsys):
    code, out, err = run(capsys, "diagnose", str(tmp_path / "nope"))
    assert code == 8 and out == ""
    assert err.count("\n") == 1 and str(tmp_path / "nope") in err and "Traceback" not in err


def test_file_instead_of_directory_exit_8(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    code, _, err = run(capsys, "inspect", str(f))
    assert code == 8 and "not a directory" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("layout", "words"), [({}, "empty"), ({"_delta_log/00000.json": "{}"}, "Delta table")]
)
def test_non_checkpoint_directories_say_so_in_one_line(layout, words, tmp_path, capsys):
    for rel, text in layout.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    code, _out, err = run(capsys, "inspect", str(tmp_path))
    assert code == 8 and words in err and err.count("\n") == 1


def test_garbage_bytes_are_findings_not_tracebacks(tmp_path, capsys):
    (tmp_path / "offsets").mkdir()
    (tmp_path / "offsets" / "0").write_bytes(os.urandom(64) + b"\xff\xfe")
    (tmp_path / "metadata").write_bytes(b"\x00\x01garbage")
    code, out, err = run(capsys, "diagnose", str(tmp_path), "--format", "json", "--live-window", "0")
    result = json.loads(out)["result"]
    assert code == 4 and "Traceback" not in err
    assert {"CD002"} <= {f["code"] for f in result["findings"]}


def test_json_errors_are_json(tmp_path, capsys):
    code, out, _err = run(capsys, "inspect", str(tmp_path / "nope"), "--format", "json")
    doc = json.loads(out)
    assert code == 8 and doc["error"]["type"] == "CheckpointNotFoundError"
    assert "nope" in doc["error"]["message"]


def test_usage_errors_exit_2(capsys):
    code, _, err = run(capsys, "diagnose", "x", "--spark", "2.4")
    assert code == 2 and "2.4" in err
    code, _, err = run(capsys, "explain", "CD999")
    assert code == 2 and "unknown finding code" in err


def test_explain_prints_what_to_do(capsys):
    code, out, _ = run(capsys, "explain", "CD101")
    assert code == 0
    for section in ("What Spark does", "Why it breaks", "What you can do", "Search your driver log for"):
        assert section in out
    code, out, _ = run(capsys, "explain", "async-tail-sync-restart", "--format", "json")
    assert json.loads(out)["result"]["code"] == "CD101"


def test_internal_error_exit_16_with_debug_hint(monkeypatch, tmp_path, capsys):
    import checkpoint_doctor.diagnosis.matrix as matrix

    def boom(*a, **k):
        raise RuntimeError("injected fault")

    monkeypatch.setattr(matrix, "diagnose_matrix", boom)
    cp = scenario("spark-4.3.0/window_agg").copy_to(tmp_path)
    code, _, err = run(capsys, "diagnose", str(cp))
    assert code == 16 and "internal error" in err and "--debug" in err and "Traceback" not in err
    code, _, err = run(capsys, "--debug", "diagnose", str(cp))
    assert code == 16 and "Traceback" in err


def test_interrupt_exit_130(monkeypatch, tmp_path, capsys):
    import checkpoint_doctor.diagnosis.matrix as matrix

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(matrix, "diagnose_matrix", interrupted)
    cp = scenario("spark-4.3.0/window_agg").copy_to(tmp_path)
    code, _, err = run(capsys, "diagnose", str(cp))
    assert code == 130 and "interrupted" in err


def test_plan_apply_undo_round_trip(tmp_path, capsys):
    cp = scenario("spark-4.3.0/offsets-latest-empty").copy_to(tmp_path)
    plan_file = tmp_path / "plan.json"
    code, out, _ = run(capsys, "plan", str(cp), "-o", str(plan_file), "--live-window", "0")
    assert code == 0 and "Apply it with" in out
    code, _, err = run(capsys, "apply", str(plan_file))
    assert code == 2 and "--yes" in err  # not a terminal: confirmation needed
    assert (cp / "offsets" / "3").exists()
    code, out, _ = run(capsys, "apply", str(plan_file), "--dry-run")
    # The sentence wraps where the tmp path's length puts it: compare it unwrapped.
    assert code == 0 and "nothing was changed" in " ".join(out.split()) and (cp / "offsets" / "3").exists()
    assert "1. quarantine checkpoint:offsets/3" in out and "2. quarantine checkpoint:offsets/.3.crc" in out
    code, out, _ = run(capsys, "apply", str(plan_file), "--yes", "--format", "json")
    result = json.loads(out)["result"]
    assert code == 0 and result["steps_done"] == 2 and result["after"]["restart"]["outcome"] == "starts"
    assert not (cp / "offsets" / "3").exists()
    code, _, err = run(capsys, "apply", str(plan_file), "--yes")
    assert code == ExitCode.REFUSED and err.count("\n") == 1
    assert f"is already applied to {cp} (journal {result['journal']}); nothing was changed" in err
    assert (
        f"see checkpoint-doctor history {cp}" in err and f"checkpoint-doctor undo {result['journal']}" in err
    )
    code, _, err = run(capsys, "undo", result["journal"])
    assert code == 2 and "--yes" in err and not (cp / "offsets" / "3").exists()  # not a terminal
    code, out, _ = run(capsys, "undo", result["journal"], "--yes")
    assert code == 0 and "restored offsets/3" in out and (cp / "offsets" / "3").exists()
    code, _, err = run(capsys, "undo", result["journal"], "--yes")
    assert code == 32 and "already undone" in err
    code, out, _ = run(capsys, "apply", str(plan_file), "--yes")
    assert code == 0 and "Applied plan" in out
    code, out, _ = run(capsys, "history", str(cp))
    assert code == 0
    states = [line.split()[1] for line in out.splitlines()[2:4]]
    assert states == ["undone", "applied"] and "Undo the newest with: checkpoint-doctor undo" in out


def test_declining_the_prompt_says_cancelled(tmp_path, capsys, monkeypatch):
    cp = scenario("spark-4.3.0/offsets-latest-empty").copy_to(tmp_path)
    plan_file = tmp_path / "plan.json"
    run(capsys, "plan", str(cp), "-o", str(plan_file), "--live-window", "0")
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr("click.confirm", lambda *a, **k: False)
    code, out, _ = run(capsys, "apply", str(plan_file))
    assert code == 32 and out.startswith("Cancelled:") and "Dry run" not in out
    assert (cp / "offsets" / "3").exists()


def test_apply_rejects_a_plan_pointing_outside_the_checkpoint(tmp_path, capsys):
    cp = scenario("spark-4.3.0/offsets-latest-empty").copy_to(tmp_path)
    plan_file = tmp_path / "plan.json"
    run(capsys, "plan", str(cp), "-o", str(plan_file), "--live-window", "0")
    doc = json.loads(plan_file.read_text())
    doc["steps"][0]["path"] = "../../etc/passwd"
    plan_file.write_text(json.dumps(doc))
    code, _, err = run(capsys, "apply", str(plan_file), "--yes")
    assert code == 2 and "../../etc/passwd" in err and err.count("\n") == 1
    assert (cp / "offsets" / "3").exists()
    code, _, err = run(capsys, "apply", str(tmp_path / "missing.json"), "--yes")
    assert code == 2 and "missing.json" in err


def test_module_entry_point_and_lazy_optional_imports():
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, checkpoint_doctor.cli; print(sorted(m for m in ('s3fs', 'pyspark', 'botocore') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    assert proc.stdout.strip() == "[]"
    proc = subprocess.run(
        [sys.executable, "-m", "checkpoint_doctor", "--version"], capture_output=True, text=True, cwd=REPO
    )
    assert proc.returncode == 0 and "checkpoint-doctor" in proc.stdout
