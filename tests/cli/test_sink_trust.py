"""A file sink is this query's only on evidence, and a sink that is another query's is not changed.

Reproduces the audit of copied fixtures that paired ``spark-4.3.0_file-sink-rollback/sink`` with two
async checkpoints (noop sinks: async progress tracking takes no file sink), the plan that moved
another query's ``_spark_metadata/3..11`` away, and a mistyped ``--sink-path`` that was answered
with a CD406 warning.
"""

from __future__ import annotations

import json
from pathlib import Path

from checkpoint_doctor.exit_codes import ExitCode
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.world.sink_pairing import pairing_evidence
from tests.scenarios import run_cli as run
from tests.scenarios import scenario

FIXED = ["--live-window", "0"]


def copied(root: Path, *names: str) -> dict[str, Path]:
    """Copy 4.3.0 fixtures as an operator does: one directory per fixture, side by side."""
    return {n: scenario(f"spark-4.3.0/{n}").copy_to(root / f"spark-4.3.0_{n}").parent for n in names}


def sink_log(sink: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((sink / "_spark_metadata").iterdir())}


def test_an_audit_pairs_a_file_sink_with_its_own_checkpoint_only(tmp_path, capsys):
    dirs = copied(tmp_path, "async", "async-tail", "file-sink-rollback", "window_agg")
    sink = dirs["file-sink-rollback"] / "sink"
    code, out, _ = run(capsys, "audit", str(tmp_path), "--format", "jsonl", *FIXED)
    assert code == ExitCode.ERRORS | ExitCode.WARNINGS  # the rollback's CD402, the async tails
    records = {r["path"]: r for r in map(json.loads, out.splitlines()) if "path" in r}
    for name in ("async", "async-tail"):
        record = records[f"spark-4.3.0_{name}/checkpoint"]
        assert record["file_sink"]["checked"] is False
        assert "asynchronous progress tracking" in record["file_sink"]["note"]
        assert "CD403" not in json.dumps(record)  # no false "sink behind commits" warning
    own = records["spark-4.3.0_file-sink-rollback/checkpoint"]["file_sink"]
    assert own["checked"] is True and own["url"] == str(sink)
    assert records["spark-4.3.0_file-sink-rollback/sink"]["paired_with"] == [
        str(dirs["file-sink-rollback"] / "checkpoint")
    ]
    _, out, _ = run(capsys, "audit", str(tmp_path), *FIXED)
    steps = out.split("Next steps", 1)[1].split("\n\n", 1)[0]
    assert f"--sink-path {sink}" in steps
    assert all("async" not in line for line in steps.splitlines() if "--sink-path" in line)


def test_the_evidence_names_what_contradicts(tmp_path):
    own = scenario("spark-4.3.0/file_to_file").load(tmp_path / "own")
    assert own.sink is not None
    evidence = pairing_evidence(own, own.sink)
    assert evidence.proven and not evidence.contradicted
    async_cp = load_checkpoint(str(scenario("spark-4.3.0/async-tail").copy_to(tmp_path / "async")))
    evidence = pairing_evidence(async_cp, own.sink)
    assert evidence.contradicted and "asynchronous progress tracking" in evidence.text
    other = load_checkpoint(str(scenario("spark-4.3.0/window_agg").copy_to(tmp_path / "other")))
    evidence = pairing_evidence(other, own.sink)
    assert (
        evidence.contradicted
        and "newest batch 11 is not within the checkpoint's batches 0..3" in evidence.text
    )


def test_a_plan_refuses_to_change_another_querys_sink_unless_forced(tmp_path, capsys):
    dirs = copied(tmp_path, "commit-ahead", "file-sink-rollback")
    checkpoint = dirs["commit-ahead"] / "checkpoint"
    sink = dirs["file-sink-rollback"] / "sink"
    before = sink_log(sink)
    plan_file = tmp_path / "plan.json"
    args = ["plan", str(checkpoint), "--sink-path", str(sink), "--accept-data-loss", "-o", str(plan_file)]
    code, out, err = run(capsys, *args, *FIXED)
    assert code == ExitCode.REFUSED and out == "" and err.count("\n") == 1
    assert "refused to plan changes to a file sink" in err and "--force-sink" in err
    assert not plan_file.exists() and sink_log(sink) == before
    code, out, _ = run(capsys, "diagnose", str(checkpoint), "--sink-path", str(sink), *FIXED)
    assert "is probably another query's" in out and "without --force-sink" in out

    code, out, _ = run(capsys, *args, "--force-sink", *FIXED)
    assert code == 0 and "quarantine sink:_spark_metadata/3" in out
    plan = json.loads(plan_file.read_text())
    assert {"kind": "sink_paired", "forced": True} in plan["preconditions"]
    assert plan["request"]["force_sink"] is True


def test_a_mistyped_sink_path_is_a_usage_error_naming_the_near_match(tmp_path, capsys):
    dirs = copied(tmp_path, "file-sink-rollback")
    typo = dirs["file-sink-rollback"] / "snik"
    for command in ("diagnose", "plan", "inspect"):
        code, out, err = run(
            capsys, command, str(dirs["file-sink-rollback"] / "checkpoint"), "--sink-path", str(typo)
        )
        assert code == ExitCode.USAGE and out == "" and err.count("\n") == 1
        assert f"--sink-path {typo} does not exist; did you mean {typo.parent / 'sink'}?" in err


def test_one_restart_in_detail_says_which_file_sink_it_checked_as_the_matrix_does(
    tmp_path: Path, capsys
) -> None:
    """``--spark``/``--mode`` (and ``--job``) narrow the answer to one restart: it still says the sink
    found beside the checkpoint was checked, or that none was."""
    found = copied(tmp_path, "file-sink-rollback", "stateless")
    code, out, _ = run(
        capsys, "diagnose", str(found["file-sink-rollback"] / "checkpoint"), "--spark", "4.3", *FIXED
    )
    sink = found["file-sink-rollback"] / "sink"
    flat = " ".join(out.split())
    assert code == ExitCode.ERRORS and f"- file sink {sink} found next to the checkpoint and checked" in flat
    code, out, _ = run(capsys, "diagnose", str(found["stateless"] / "checkpoint"), "--spark", "4.3", *FIXED)
    assert "- file sink not checked (pass --sink-path" in out
    # a --job that writes no file sink (noop) has no sink log to check: nothing said of one
    from tests.cli.test_printed_flows import REPO, recorded_job_python

    python = recorded_job_python(tmp_path)
    job = f"{REPO}/fixtures/jobs/changes.py:stateless"
    code, out, _ = run(
        capsys, "diagnose", str(found["stateless"] / "checkpoint"), "--job", job, "--job-python", python
    )
    assert code == ExitCode.OK and "file sink" not in out
