"""What a default run selects: the live restarts a deterministic sample, every one on request
(tests/live.py); tests/test_static.py left out when scripts/test.sh's style gate ran the same checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live import ALL_LIVE_ENV, one_line, one_per
from tests.repair_proof import load_records, refused
from tests.spark.test_repairs_restart import REFUSED, sample
from tests.sparkrun import SPARK_VERSIONS

REPO = Path(__file__).resolve().parent.parent


def test_one_per_keeps_the_first_of_each_kind_in_order() -> None:
    assert one_per([3, 1, 4, 1, 5, 9, 2, 6], lambda n: n % 3) == [3, 1, 5]


@pytest.mark.parametrize("version", SPARK_VERSIONS)
def test_the_repairs_sample_restarts_each_recorded_strategy_once(version: str) -> None:
    cases = refused(version)
    assert len(cases) == REFUSED[version]
    kinds = {(r["strategy"], r["consent"]) for r in load_records(version).values()}
    chosen = sample(version, cases)
    assert len(chosen) == len(kinds) < len(cases) / 4
    assert sample(version, cases) == chosen  # the same cases every run


def _collected(env: dict[str, str], *args: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 5), proc.stdout[-2000:] + proc.stderr[-2000:]  # 5: all deselected
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_every_live_restart_is_opt_in() -> None:
    path = "tests/spark/test_repairs_restart.py"
    every = "test_every_repaired_checkpoint_restarts_without_skipping_data"
    default = _collected({ALL_LIVE_ENV: ""}, path)
    assert default and not any(every in t for t in default)
    assert sum(every in t for t in _collected({ALL_LIVE_ENV: "1"}, path)) == len(SPARK_VERSIONS)
    marked = _collected({ALL_LIVE_ENV: ""}, path, "-m", "live_all")
    assert marked and all(every in t for t in marked)


def test_one_line_runs_the_sampled_line_and_marks_the_others_live_all() -> None:
    params = one_line(["3.5.9", "4.3.0"], "4.3.0")
    assert [(p.values, [m.name for m in p.marks]) for p in params] == [
        (("3.5.9",), ["live_all"]),
        (("4.3.0",), []),
    ]
    with pytest.raises(AssertionError):
        one_line(["3.5.9", "4.3.0"], "4.1.4")


def test_the_catch_up_runs_start_each_line_and_the_rest_are_opt_in() -> None:
    """Issue 35 item 4: each live catch-up test restarts one line by default, the other line with
    ``-m live_all`` or CHECKPOINT_DOCTOR_ALL_LIVE=1; of the four, a default run restarts one in turn
    (tests/live.ROTATIONS["catch-up"]); the two tests decided without a JVM run on both lines."""
    from tests.live import ROTATION_ENV, ROTATIONS, rotated

    path = "tests/spark/test_catch_up.py"
    default = _collected({ALL_LIVE_ENV: "", ROTATION_ENV: "2"}, path)
    opt_in = _collected({ALL_LIVE_ENV: "", ROTATION_ENV: "2"}, path, "-m", "live_all")
    names = {t.split("[")[0] for t in default + opt_in}
    assert len(default) == 5 and len(opt_in) == 7 and not set(default) & set(opt_in)
    assert {t.split("[")[1] for t in default} == {f"{v}]" for v in SPARK_VERSIONS}
    live = {t.split("[")[0] for t in default} & set(ROTATIONS["catch-up"])
    assert live == {rotated(ROTATIONS["catch-up"], 2)}
    # every test runs every line, by default or on request
    assert {(n, v) for n in names for v in SPARK_VERSIONS} == {
        (t.split("[")[0], t.split("[")[1][:-1]) for t in default + opt_in
    }


def test_the_recorded_restarts_sample_each_family_on_one_line_and_the_bases_on_both(monkeypatch) -> None:
    from tests.spark.test_recorded_restarts import BASES, SAMPLE, families

    monkeypatch.delenv(ALL_LIVE_ENV, raising=False)
    lines = [families(v) for v in SPARK_VERSIONS]
    assert set().union(*lines) == SAMPLE and set.intersection(*lines) == BASES
    assert all(len(f - BASES) >= (len(SAMPLE) - len(BASES)) // len(SPARK_VERSIONS) for f in lines)
    monkeypatch.setenv(ALL_LIVE_ENV, "1")
    assert all(families(v) == SAMPLE for v in SPARK_VERSIONS)


def test_the_job_facts_runner_asks_each_job_on_one_line(monkeypatch) -> None:
    import json

    from tests.live import shared_among

    monkeypatch.delenv(ALL_LIVE_ENV, raising=False)
    jobs = {
        v: [e["job"] for e in json.loads((REPO / "fixtures" / "jobs" / f"facts-{v}.json").read_text())]
        for v in SPARK_VERSIONS
    }
    asked = [shared_among(jobs[v], v, SPARK_VERSIONS) for v in SPARK_VERSIONS]
    assert all(asked) and sum(map(len, asked)) == len(jobs["4.3.0"])
    assert set().union(*asked) == set(jobs["4.3.0"]) == set(jobs["3.5.9"])
    monkeypatch.setenv(ALL_LIVE_ENV, "1")
    assert shared_among(jobs["3.5.9"], "3.5.9", SPARK_VERSIONS) == jobs["3.5.9"]


def test_the_static_checks_run_once() -> None:
    """scripts/test.sh runs the style gate (ruff check, ruff format --check, mypy) before pytest and
    says so; pytest then leaves out tests/test_static.py, which runs the same three."""
    gate = "CHECKPOINT_DOCTOR_STYLE_GATE"
    assert len(_collected({gate: ""}, "tests/test_static.py")) == 3
    assert _collected({gate: "passed"}, "tests/test_static.py") == []
    script = (REPO / "scripts" / "test.sh").read_text(encoding="utf-8")
    gate_run = script.index("pre-commit run --all-files")
    assert (
        script.index(f"export {gate}=passed")
        > gate_run
        > script.index('CHECKPOINT_DOCTOR_SKIP_LINT:-0}" != 1')
    )
    assert script.index(f"export {gate}=passed") < script.index("exec .venv/bin/python -m pytest")


def test_the_tests_temporary_files_go_to_a_tmpfs_with_room(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import tmpdir_for_tests
    finally:
        sys.path.remove(str(REPO / "scripts"))
    roomy, cramped = tmp_path / "shm", tmp_path / "small"
    roomy.mkdir()
    cramped.mkdir()
    free = {str(roomy): 8 * 1024**3, str(cramped): 64 * 1024**2}.__getitem__
    assert tmpdir_for_tests.choose({}, [str(cramped), str(roomy)], free) == str(roomy / tmpdir_for_tests.NAME)
    assert tmpdir_for_tests.choose({}, [str(cramped)], free) is None  # a container's 64 MB /dev/shm
    assert tmpdir_for_tests.choose({}, [str(tmp_path / "none")], free) is None
    assert tmpdir_for_tests.choose({"TMPDIR": "/elsewhere"}, [str(roomy)], free) is None  # the caller's wins
    script = (REPO / "scripts" / "test.sh").read_text(encoding="utf-8")
    assert 'export TMPDIR="$TESTS_TMPDIR"' in script
    assert script.index("scripts/tmpdir_for_tests.py") < script.index("exec .venv/bin/python -m pytest")
    # on a tmpfs (RAM) a run keeps only the failed tests' directories
    assert "tmp_path_retention_policy = failed" in (REPO / "setup.cfg").read_text(encoding="utf-8")


def test_each_rotation_group_names_live_tests_that_exist_and_restart_spark() -> None:
    """Issue 35 item 4: the grouped live tests (tests/live.py ROTATIONS) are real test functions that
    start Spark, each in one group only, and no surface's live tests are all grouped (Kafka's and
    Delta's test_live_restart.py restart every run)."""
    import importlib

    from tests.live import ROTATIONS

    grouped = [t for members in ROTATIONS.values() for t in members]
    assert len(grouped) == len(set(grouped)) and all(len(m) >= 2 for m in ROTATIONS.values())
    for test in grouped:
        path, name = test.split("::")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        found = [getattr(getattr(module, name), "pytestmark", []), getattr(module, "pytestmark", [])]
        names = {m.name for ms in found for m in (ms if isinstance(ms, list) else [ms])}
        assert "spark" in names, test
    for always in ("tests/delta/test_live_restart.py", "tests/kafka/test_live_restart.py"):
        assert not any(t.startswith(always) for t in grouped)


def test_a_rotation_restarts_one_test_of_each_group_and_every_test_in_turn(monkeypatch) -> None:
    from tests.live import ROTATION_ENV, ROTATIONS, rotated, rotated_out, rotation

    monkeypatch.delenv(ALL_LIVE_ENV, raising=False)
    for members in ROTATIONS.values():
        turns = [rotated(members, turn) for turn in range(7, 7 + len(members))]
        assert sorted(turns) == sorted(members)  # len(members) consecutive runs restart each once
        assert rotated(list(reversed(members)), 7) == turns[0]  # the names decide, not their order
    for turn in (0, 1, 5):
        out = rotated_out(turn)
        assert len(out) == sum(len(m) - 1 for m in ROTATIONS.values())
        assert all(rotated(m, turn) not in out for m in ROTATIONS.values())
    monkeypatch.setenv(ROTATION_ENV, "12")
    assert rotation(REPO) == (12, f"{ROTATION_ENV}=12")
    monkeypatch.delenv(ROTATION_ENV)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    assert rotation(REPO)[0] == int(head[:8], 16)  # the commit decides: the same on every machine
    monkeypatch.setenv(ALL_LIVE_ENV, "1")
    assert rotated_out(0) == {}


def test_a_default_run_deselects_the_grouped_live_tests_out_of_turn() -> None:
    """The same three Delta files collected with rotations 0 and 1: each run keeps one grouped test
    and the ungrouped live restart, the others deselected (``live_all``), none lost."""
    from tests.live import ROTATION_ENV, ROTATIONS, rotated

    files = sorted({t.split("::")[0] for t in ROTATIONS["delta"]})
    args = (*files, "tests/delta/test_live_restart.py", "-m", "spark")
    for turn in ("0", "1"):
        default = _collected({ALL_LIVE_ENV: "", ROTATION_ENV: turn}, *args)
        opt_in = _collected({ALL_LIVE_ENV: "", ROTATION_ENV: turn}, *args[:-2], "-m", "live_all")
        assert sorted(default) == sorted([rotated(ROTATIONS["delta"], int(turn)), *_always()]), default
        assert sorted(default + opt_in) == sorted([*ROTATIONS["delta"], *_always()])
    every = _collected({ALL_LIVE_ENV: "1", ROTATION_ENV: "0"}, *args)
    assert sorted(every) == sorted([*ROTATIONS["delta"], *_always()])


def _always() -> list[str]:
    return ["tests/delta/test_live_restart.py::test_live_restarts_do_what_was_recorded"]


def test_the_kafka_live_restarts_give_each_case_one_line_and_start_both(monkeypatch) -> None:
    """tests/kafka/test_live_restart.py: each sampled case on one line by default, both lines
    started; every case on both with CHECKPOINT_DOCTOR_ALL_LIVE=1."""
    from tests.kafka.test_live_restart import SAMPLE
    from tests.live import shared_among

    monkeypatch.delenv(ALL_LIVE_ENV, raising=False)
    asked = [shared_among(SAMPLE, v, SPARK_VERSIONS) for v in SPARK_VERSIONS]
    assert all(asked) and sorted(n for names in asked for n in names) == sorted(SAMPLE)
    source = (REPO / "tests" / "kafka" / "test_live_restart.py").read_text(encoding="utf-8")
    assert "for name in shared_among(SAMPLE, version, sparkrun.SPARK_VERSIONS):" in source
    monkeypatch.setenv(ALL_LIVE_ENV, "1")
    assert all(shared_among(SAMPLE, v, SPARK_VERSIONS) == list(SAMPLE) for v in SPARK_VERSIONS)


def test_the_changed_job_restarts_give_each_case_one_line_and_start_both(monkeypatch) -> None:
    """tests/spark/test_job_restarts_live.py: each sampled changed query restarted on one line by
    default, both lines started; every case on both with CHECKPOINT_DOCTOR_ALL_LIVE=1."""
    from tests.live import shared_among
    from tests.spark.test_job_restarts_live import SAMPLE

    monkeypatch.delenv(ALL_LIVE_ENV, raising=False)
    asked = [shared_among(sorted(SAMPLE), v, SPARK_VERSIONS) for v in SPARK_VERSIONS]
    assert all(asked) and sorted(n for names in asked for n in names) == sorted(SAMPLE)
    source = (REPO / "tests" / "spark" / "test_job_restarts_live.py").read_text(encoding="utf-8")
    assert "asked = shared_among(sorted(SAMPLE), version, SPARK_VERSIONS)" in source
    monkeypatch.setenv(ALL_LIVE_ENV, "1")
    assert all(shared_among(sorted(SAMPLE), v, SPARK_VERSIONS) == sorted(SAMPLE) for v in SPARK_VERSIONS)


def test_a_run_on_two_workers_names_its_rotation_and_what_it_left_out() -> None:
    """scripts/test.sh runs the suite on pytest-xdist workers, whose controller collects nothing: the
    rotation is named in the header and the count of live_all tests left out comes from a worker. The
    golden tables, laid out for the tests' 100 columns while a worker inherits COLUMNS=80, pass there."""
    from tests.live import ROTATION_ENV

    proc = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider"),
            *(
                "tests/tws/test_live_restart.py",
                "tests/cli/test_cli.py::test_golden_tables",
                "-m",
                "not spark",
            ),
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), ALL_LIVE_ENV: "", ROTATION_ENV: "0"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "live rotation 0 (" in proc.stdout and "tws: test_" in proc.stdout
    assert "live_all: 1 test deselected, live restarts out of this run's turn" in proc.stdout
    assert "9 passed" in proc.stdout
    script = (REPO / "scripts" / "test.sh").read_text(encoding="utf-8")
    assert 'exec .venv/bin/python -m pytest -n auto --maxprocesses 4 --dist loadfile "$@"' in script
