"""``audit --job GLOB=MODULE:FUNCTION``: every checkpoint a glob matches is judged with its job as
``diagnose --job`` judges it (same codes, same restart, same findings); each distinct job is
analysed once, in one child process; the records, the text and the page name the job. The job
python is a stand-in that answers with what each line's Spark recorded for the jobs
(fixtures/jobs/facts-<v>.json), so that no JVM starts here (tests/spark/test_job_facts.py runs the
real one)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_schemas import validate
from tests.scenarios import FIXTURES, REPO, run_cli, scenario_at

JOBS = "fixtures/jobs/changes.py"
#: directory in the audited root -> (fixture, job function)
FLEET = {
    "orders/key": ("spark-4.3.0/job-grouping-key-added", "window_agg_key_added"),
    "orders/kind": ("spark-4.3.0/job-source-kind-changed", "stateless_rate_source"),
    "clicks/async": ("spark-4.3.0/job-async-off", "async_off"),
    "plain/unchanged": ("spark-4.3.0/job-unchanged", None),
}


def _fake_python(tmp_path: Path, specs: list[str], version: str = "4.3.0") -> tuple[str, Path]:
    """A 'python' that answers the runner with Spark's recorded facts of ``specs`` (in order) and
    counts its runs in a file."""
    entries = {e["job"]: e for e in json.loads((FIXTURES / "jobs" / f"facts-{version}.json").read_text())}
    tmp_path.mkdir(parents=True, exist_ok=True)
    calls = tmp_path / "calls"
    script = tmp_path / "python"
    script.write_text(
        "#!/bin/sh\n"
        f"echo \"$@\" >> '{calls}'\n"
        "cat <<'EOF'\n" + json.dumps([entries[s] for s in specs]) + "\nEOF\n"
    )
    script.chmod(0o755)
    return str(script), calls


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for rel, (fixture, _) in FLEET.items():
        scenario_at(FIXTURES / fixture).copy_to(root / rel)
    return root


def _job_args() -> list[str]:
    return [
        "--job",
        f"orders/key/*={JOBS}:window_agg_key_added",
        "--job",
        f"orders/kind/*={JOBS}:stateless_rate_source",
        "--job",
        f"*async*={JOBS}:async_off",
    ]


def _specs() -> list[str]:
    return [f"{JOBS}:{f}" for f in ("window_agg_key_added", "stateless_rate_source", "async_off")]


def test_audit_with_jobs_gives_each_checkpoint_the_answer_of_diagnose_job(
    fleet, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(REPO)
    python, calls = _fake_python(tmp_path, _specs())
    code, out, _ = run_cli(
        capsys, "audit", str(fleet), *_job_args(), "--job-python", python, "--format", "json"
    )
    doc = json.loads(out)
    validate("audit", doc)
    # Three distinct jobs, one child process (one JVM start).
    assert len(calls.read_text().splitlines()) == 1
    records = {r["path"]: r for r in doc["result"]["records"] if r["kind"] == "checkpoint"}
    assert set(records) == {f"{rel}/checkpoint" for rel in FLEET}
    for rel, (_, function) in FLEET.items():
        record = records[f"{rel}/checkpoint"]
        args = []
        if function is not None:
            spec = f"{JOBS}:{function}"
            assert record["job"]["job"] == spec
            assert record["job"]["spark_version"] == "4.3.0"
            assert record["next_step"] is None or f"--job {spec} --job-python {python}" in record["next_step"]
            one, _ = _fake_python(tmp_path / rel.replace("/", "-"), [spec])
            args = ["--job", spec, "--job-python", one]
        else:
            assert "job" not in record
        dcode, dout, _ = run_cli(
            capsys, "diagnose", str(fleet / rel / "checkpoint"), *args, "--format", "json"
        )
        diagnosis = json.loads(dout)["result"]
        assert record["codes"] == sorted({f["code"] for f in diagnosis["findings"]}), rel
        assert record["restart"]["summary"].startswith(diagnosis["restart"]["summary"]), rel
        assert record["exit_code"] == dcode, rel
        assert [f["message"] for f in record["diagnosis"]["findings"]] == [
            f["message"] for f in diagnosis["findings"]
        ]
    assert "CD312" in records["orders/key/checkpoint"]["codes"]
    assert "CD220" in records["orders/kind/checkpoint"]["codes"]
    assert {"CD101", "CD630"} <= set(records["clicks/async/checkpoint"]["codes"])
    assert code == doc["exit_code"] == 4


def test_audit_text_and_page_name_the_jobs_and_a_glob_that_matched_nothing(
    fleet, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(REPO)
    specs = [*_specs(), f"{JOBS}:window_agg_avg"]
    python, _ = _fake_python(tmp_path, specs)
    page = tmp_path / "audit.html"
    code, out, err = run_cli(
        capsys,
        "audit",
        str(fleet),
        *_job_args(),
        "--job",
        f"nowhere/*={JOBS}:window_agg_avg",
        "--job-python",
        python,
        "--html",
        str(page),
    )
    text = " ".join(out.split())
    assert code == 4, out + err
    assert "Jobs (--job): analysed by Spark 4.3.0 in one process" in text
    assert f"orders/key/*={JOBS}:window_agg_key_added: mode micro-batch, 1 checkpoint(s) judged" in text
    assert "1 checkpoint(s) judged" in text
    assert "matched no checkpoint" in text
    html = page.read_text()
    assert f"judged with --job {JOBS}:stateless_rate_source" in html
    assert "CD220" in html
    _, out, _ = run_cli(
        capsys,
        "audit",
        str(fleet),
        "--job",
        f"nowhere/*={JOBS}:window_agg_avg",
        "--job-python",
        _fake_python(tmp_path / "one", [f"{JOBS}:window_agg_avg"])[0],
        "--format",
        "json",
    )
    doc = json.loads(out)
    validate("audit", doc)
    notes = [n for n in doc["result"]["notes"] if n["kind"] == "job"]
    assert [n["message"] for n in notes] == [
        f"--job nowhere/*={JOBS}:window_agg_avg matched no checkpoint (or only ones an earlier --job took)"
    ]
    assert not any("job" in r for r in doc["result"]["records"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--job", "orders/*=nocolon"], "is not GLOB=MODULE:FUNCTION"),
        (["--job-python", "/usr/bin/python3"], "--job-python needs --job"),
        (["--job", "x:y", "--on-spark"], "--job is not supported with --on-spark"),
    ],
)
def test_a_bad_audit_job_is_a_usage_error(args, message, fleet, capsys):
    code, out, err = run_cli(capsys, "audit", str(fleet), *args)
    assert code == 2, out + err
    assert message in err
    assert "Traceback" not in err


def test_the_python_api_takes_the_jobs_and_gives_the_command_lines_answer(
    fleet, tmp_path, capsys, monkeypatch
):
    import checkpoint_doctor as cd
    from tests.scenarios import job_facts_for

    monkeypatch.chdir(REPO)
    now = 1_900_000_000_000
    monkeypatch.setattr("checkpoint_doctor.cli.app.now_ms", lambda: now)
    monkeypatch.setattr("checkpoint_doctor.cli.options.now_ms", lambda: now)
    python, _ = _fake_python(tmp_path, _specs())
    _, out, _ = run_cli(capsys, "audit", str(fleet), *_job_args(), "--job-python", python, "--format", "json")
    by_cli = {r["path"]: r for r in json.loads(out)["result"]["records"]}
    pairs = [(a.split("=", 1)[0], job_facts_for(a.split("=", 1)[1], "4.3.0")) for a in _job_args()[1::2]]
    result = cd.audit(str(fleet), job=pairs, now_ms=now)
    by_api = {r.path: r.to_json() for r in result.records}
    assert set(by_api) == set(by_cli)
    for path, record in by_api.items():
        cli = by_cli[path]
        assert record["codes"] == cli["codes"] and record["restart"] == cli["restart"], path
        assert (record.get("job") or {}).get("job") == (cli.get("job") or {}).get("job")
    # diagnose: the same document as diagnose --job
    spec = f"{JOBS}:window_agg_key_added"
    cp = str(fleet / "orders/key/checkpoint")
    one, _ = _fake_python(tmp_path / "one", [spec])
    _, out, _ = run_cli(capsys, "diagnose", cp, "--job", spec, "--job-python", one, "--format", "json")
    api = cd.diagnose(cp, job=job_facts_for(spec, "4.3.0"), now_ms=now).to_dict()
    cli_doc = json.loads(out)["result"]
    assert api["restart"] == cli_doc["restart"] and api["findings"] == cli_doc["findings"]


@pytest.mark.parametrize("command", ["audit", "diagnose", "plan"])
def test_a_job_file_that_does_not_exist_is_said_before_the_job_python_runs(command, fleet, tmp_path, capsys):
    """One line at once, not after a JVM start: the job python (here one that counts its runs) is not run."""
    python, calls = _fake_python(tmp_path / "py", [])
    target = str(fleet) if command == "audit" else str(fleet / "plain/unchanged/checkpoint")
    job = "*=jobs/etl.py:build" if command == "audit" else "jobs/etl.py:build"

    code, out, err = run_cli(capsys, command, target, "--job", job, "--job-python", python)

    assert code == 2, out + err
    assert "--job jobs/etl.py:build: job file jobs/etl.py does not exist" in err
    assert len(err.strip().splitlines()) == 1 and not calls.exists()
