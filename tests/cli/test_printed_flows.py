"""Every diagnosis with an error ends in a command that runs as printed and leads to a plan that can
be applied, or says plainly why none exists: the walk an operator makes, on a copy of every error
fixture of every line, following only what the output prints."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import time
from pathlib import Path

import pytest

from checkpoint_doctor.cli import main
from checkpoint_doctor.exit_codes import ExitCode
from checkpoint_doctor.render.hints import plan_file
from tests.scenarios import all_scenarios

LINES = ("3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0")
#: How many plan commands a walk may follow (the first, then the one accepting data loss).
MAX_PLANS = 2


def run(capsys, words: list[str]) -> tuple[int, str, str]:
    code = main(words)
    out, err = capsys.readouterr()
    return code, out, err


def printed(out: str, label: str) -> list[str]:
    """Return the command printed on the line after ``label`` (or after it on the same line)."""
    _, found, tail = out.partition(label)
    assert found, f"{label!r} not printed:\n{out}"
    line = tail.lstrip(" ").splitlines()[0] or tail.lstrip("\n").splitlines()[0]
    words = shlex.split(line.strip())
    assert words[0] == "checkpoint-doctor", line
    return words[1:]


#: What diagnose prints instead of a plan command when no strategy addresses its findings.
NOTHING_TO_PLAN = "Nothing to plan (no repair of the checkpoint addresses it):"


def _nothing_planned(capsys, args: list[str]) -> str:
    """diagnose said no repair addresses its findings: plan agrees (it writes nothing and says why)."""
    code, out, err = run(capsys, ["plan", *args, "-o", "plan.json"])
    assert code == ExitCode.ERRORS, f"{out}{err}"
    assert "No plan can be applied:" in out and "Unresolved" in out, out
    return "none, said why"


def walk(capsys, checkpoint: str) -> str:
    """Follow the printed commands from ``diagnose``; return how the walk ended."""
    code, out, _ = run(capsys, ["diagnose", checkpoint, "--live-window", "0"])
    if code != ExitCode.ERRORS:
        return "no error"
    if NOTHING_TO_PLAN in out:
        return _nothing_planned(capsys, [checkpoint, "--live-window", "0"])
    command = printed(out, "Repair options:")
    for _ in range(MAX_PLANS):
        assert command[0] == "plan" and "-o" in command, command
        code, out, err = run(capsys, command)
        # 1: what the plan leaves is a warning only (continuous-commit-without-offsets: the quarantine
        # resolves CD701; CD008 stays for a micro-batch restart, as diagnose rates it)
        assert code in (ExitCode.OK, ExitCode.WARNINGS, ExitCode.ERRORS), f"{shlex.join(command)}: {err}"
        if "Plan written to" in out:
            apply = [*printed(out, "Apply it with:"), "--yes"] if "Apply it with:" in out else None
            if apply is None:  # only steps the operator runs (a catch-up, a restart elsewhere)
                return "manual"
            code, out, err = run(capsys, apply)
            assert code not in (ExitCode.USAGE, ExitCode.REFUSED), f"{shlex.join(apply)}: {err}"
            assert "Applied plan" in out, out
            return "applied"
        assert "Write the plan to a file" not in out, out  # -o was given: a plan with steps is written
        if "To plan it anyway" in out:
            assert "Nothing to apply: no plan file was written" in out
            command = printed(out, "To plan it anyway, accepting the data loss named above:")
            continue
        assert "No plan can be applied:" in out and "Unresolved" in out, out
        return "none, said why"
    raise AssertionError(f"more than {MAX_PLANS} plan commands for {checkpoint}")


@pytest.mark.slow
@pytest.mark.parametrize("line", LINES)
def test_every_printed_hint_of_an_error_diagnosis_leads_to_an_applied_plan_or_says_why(
    line, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    ends: dict[str, str] = {}
    for scenario in (s for s in all_scenarios() if s.path.parent.name == f"spark-{line}"):
        where = tmp_path / scenario.path.name
        checkpoint = scenario.copy_to(where)
        monkeypatch.chdir(where)  # the printed -o plan-<name>.json lands beside this copy
        ends[scenario.path.name] = walk(capsys, str(checkpoint))
    assert "applied" in ends.values() and "none, said why" in ends.values()
    # The sink damage: the file sink log ahead of the offsets is repaired by a plan.
    assert ends["file-sink-rollback"] == "applied"
    assert ends["file-sink-compact-missing"] == "none, said why"


def test_a_plan_with_nothing_to_apply_writes_no_file_and_prints_the_next_command(
    tmp_path, capsys, monkeypatch
):
    scenario = next(s for s in all_scenarios() if s.id == "spark-4.3.0/commit-ahead")
    cp = str(scenario.copy_to(tmp_path / "copy"))
    monkeypatch.chdir(tmp_path)

    code, out, _ = run(capsys, ["diagnose", cp, "--live-window", "0"])
    # the file the hint writes names the checkpoint it is for (issue 36)
    name = "plan-copy-checkpoint.json"
    assert f"checkpoint-doctor plan {cp} --live-window 0 -o {name}" in out
    code, out, _ = run(capsys, printed(out, "Repair options:"))
    assert code == ExitCode.ERRORS and not (tmp_path / name).exists()
    assert f"Nothing to apply: no plan file was written to {name}." in out
    command = printed(out, "To plan it anyway, accepting the data loss named above:")
    assert command == ["plan", cp, "--live-window", "0", "--accept-data-loss", "-o", name]
    code, out, _ = run(capsys, command)  # no "exists" error: the first plan wrote nothing
    assert code == 0 and (tmp_path / name).exists() and "Apply it with:" in out


def test_a_plan_shown_without_o_says_how_to_write_it(tmp_path, capsys):
    scenario = next(s for s in all_scenarios() if s.id == "spark-4.3.0/offsets-latest-empty")
    cp = str(scenario.copy_to(tmp_path))

    code, out, _ = run(capsys, ["plan", cp, "--live-window", "0"])

    assert code == 0
    assert out.rstrip().endswith(
        f"Write the plan to a file, then apply it:\n  checkpoint-doctor plan {cp} --live-window 0 -o {plan_file(cp)}"
    )


def test_sink_damage_plans_the_option_it_shows(tmp_path, capsys):
    scenario = next(s for s in all_scenarios() if s.id == "spark-4.3.0/file-sink-rollback")
    cp = str(scenario.copy_to(tmp_path))

    code, out, _ = run(capsys, ["plan", cp, "--live-window", "0", "--strategy", "quarantine"])

    assert code == 0
    assert "Strategy    quarantine" in out and "1. quarantine (chosen)" in out
    assert "does not make the restart start" not in out


# ------------------------------------------------------------- Delta: the tables beside the checkpoint

DELTA = Path(__file__).resolve().parents[2] / "fixtures" / "delta"
#: Labels of the commands a plan prints for the next plan, in the order they are followed.
NEXT_PLAN = (
    "plan it without the live check:",  # a copy just made looks like a live query (CD501)
    "named above:",  # To plan it anyway, accepting the data loss / the rows written twice named above
)


#: The moment the walks below happen at: the CLI's one clock (``cli.app.now_ms``) is pinned to it.
#: CD501's text holds an age ("files of the checkpoint were modified 193 s ago"): read off the wall
#: clock, the diagnosis before an apply and after its undo differed on a loaded machine (issue 31
#: item 15). No walk may depend on how long its commands took. 2030-01-01: after every fixture's
#: batches (a fixture written after the pinned moment reads as planned in the future, CD501).
NOW_MS = 1_893_456_000_000


@pytest.fixture
def pinned_clock(monkeypatch) -> int:
    """Pin the CLI's clock at :data:`NOW_MS` (in every command module that imported it)."""
    for module in ("app", "options", "repair", "audit", "catch_up"):
        monkeypatch.setattr(f"checkpoint_doctor.cli.{module}.now_ms", lambda: NOW_MS)
    return NOW_MS


@pytest.fixture
def slow_machine(monkeypatch) -> None:
    """A loaded machine: the wall clock is 100 s later at each command than at the one before it (a
    real clock, for what is not the CLI's: lock and journal stamps, the mtimes of files written)."""

    real, commands, cli_main = time.time, [0], main

    def later() -> float:
        return real() + 100.0 * commands[0]

    def main_later(words: list[str]) -> int:
        commands[0] += 1
        return cli_main(words)

    monkeypatch.setattr(time, "time", later)
    monkeypatch.setitem(globals(), "main", main_later)


def fresh_copy(scenario: Path, dest: Path) -> None:
    """Copy a scenario as ``cp -r`` does: every file written at the moment of the walk (the
    live-writer check sees a copy with few files as a query that just wrote them)."""
    shutil.copytree(scenario, dest)
    for path in dest.rglob("*"):
        os.utime(path, ns=(NOW_MS * 1_000_000, NOW_MS * 1_000_000))


def walk_and_undo(capsys, checkpoint: str, *flags: str) -> tuple[int, str]:
    """Follow the printed commands from a ``diagnose`` (with no flag but ``flags``) to an applied
    plan, its undo and ``history``; return diagnose's exit code and how the walk ended (the clock
    pinned by the caller: the diagnoses before and after are compared whole)."""
    first, out, _ = run(capsys, ["diagnose", checkpoint, *flags])
    before = out
    if NOTHING_TO_PLAN in out:
        return first, _nothing_planned(capsys, [checkpoint, *flags])
    if "Repair options:" not in out:
        return first, "no repair"
    command = printed(out, "Repair options:")
    for _ in range(1 + len(NEXT_PLAN)):
        assert command[0] == "plan" and "-o" in command, command
        code, out, err = run(capsys, command)
        assert code in (ExitCode.OK, ExitCode.WARNINGS, ExitCode.ERRORS), f"{shlex.join(command)}: {err}"
        if "Plan written to" in out:
            break
        follow = [label for label in NEXT_PLAN if label in out]
        if not follow:
            assert "No plan can be applied:" in out and "Unresolved" in out, out
            return first, "none, said why"
        command = printed(out, follow[0])
    else:
        raise AssertionError(f"no plan written for {checkpoint}:\n{out}")
    code, out, err = run(capsys, [*printed(out, "Apply it with:"), "--yes"])
    assert code not in (ExitCode.USAGE, ExitCode.REFUSED, ExitCode.INTERNAL), err
    assert "Applied plan" in out, out
    code, out, err = run(capsys, [*printed(out, "Undo with:"), "--yes"])
    assert code == ExitCode.OK, f"{out}{err}"
    code, out, _ = run(capsys, ["history", checkpoint])
    assert code == ExitCode.OK and " undone " in out, out
    again, out, _ = run(capsys, ["diagnose", checkpoint, *flags])
    # undo gave back what the diagnosis read (a --job's analysis time aside: the text is compared with
    # its wrapping undone, since another time can wrap the lines at other places)
    timed = re.compile(r"analysed it in [0-9.]+ s")

    def untimed(text: str) -> str:
        return timed.sub("", " ".join(text.split()))

    assert (again, untimed(out)) == (first, untimed(before))
    return first, "applied"


@pytest.mark.parametrize("line", ["3.5.9", "4.0.5", "4.1.4", "4.2.1"])
def test_every_delta_scenario_copied_and_typed_as_an_operator_does_walks_to_its_way_back(
    line, tmp_path, capsys, monkeypatch, slow_machine, pinned_clock
):
    """Each Delta scenario copied with ``cp -r``, then, in the copy, ``diagnose checkpoint`` with no
    flag: a refused restart (exit 4) ends in an applied plan (undone again) or says why none exists
    (deleted rows: a job option), the rolled-back checkpoint beside its sink (CD407, exit 1) too. On a
    machine where each command takes 100 s: the walk's answers do not depend on its speed."""
    ends: dict[str, tuple[int, str]] = {}
    for scenario in sorted((DELTA / f"spark-{line}").iterdir()):
        if not (scenario / "checkpoint").is_dir():
            continue  # delta-sink-checkpoint-lost: its checkpoint is what was lost
        fresh_copy(scenario, tmp_path / scenario.name)
        monkeypatch.chdir(tmp_path / scenario.name)
        ends[scenario.name] = walk_and_undo(capsys, "checkpoint")
    for name, (code, end) in ends.items():
        if "rows-" in name or name.endswith(("-merged", "-row-deleted")):
            # a data change refused with Delta's defaults: the way past it is a reader option of the
            # job (skipChangeCommits; readChangeFeed for a change data feed), said with no plan
            assert (code, end) == (ExitCode.ERRORS, "none, said why"), name
        elif name.endswith("-cdf-disabled"):
            # the feed turned off after the position: a warning until the job says it reads the feed
            assert (code, end) == (ExitCode.WARNINGS, "no repair"), name
        elif name.endswith(("-log-cleaned", "-replaced", "-recreated")) and "sink" not in name:
            assert (code, end) == (ExitCode.ERRORS, "applied"), name
        elif name == "delta-sink-rolled-back":
            assert (code, end) == (ExitCode.WARNINGS, "applied"), name
        else:
            assert code in (ExitCode.OK, ExitCode.WARNINGS) and end == "no repair", (name, code, end)


def test_a_checkpoint_seen_as_live_prints_the_plan_without_the_live_check_and_its_cost(
    tmp_path, capsys, monkeypatch, pinned_clock
):
    fresh_copy(DELTA / "spark-4.2.1" / "delta-sink-rolled-back", tmp_path / "job")
    # copied an hour before the (pinned) now, then a commit written now (a copy alone is not live:
    # issue 36)
    for path in (tmp_path / "job").rglob("*"):
        os.utime(path, ns=((NOW_MS - 3_600_000) * 1_000_000,) * 2)
    os.utime(tmp_path / "job" / "checkpoint" / "commits" / "0", ns=(NOW_MS * 1_000_000,) * 2)
    monkeypatch.chdir(tmp_path / "job")

    code, out, _ = run(capsys, ["diagnose", "checkpoint"])
    assert code == ExitCode.WARNINGS and "CD501" in out and "pass --live-window 0" in " ".join(out.split())
    code, out, _ = run(capsys, printed(out, "Repair options:"))
    # a live writer stops the plan first; plan exits as diagnose did (CD501 and CD407 are warnings)
    assert code == ExitCode.WARNINGS and "CD407" not in out
    command = printed(out, "plan it without the live check:")
    cp = str(tmp_path / "job" / "checkpoint")
    assert command == ["plan", cp, "--live-window", "0", "-o", "plan-job-checkpoint.json"]
    code, out, _ = run(capsys, command)
    # delta-sink-txn skips nothing: its consent is for rows written twice, not for data loss
    assert "To plan it anyway, accepting the rows written twice named above:" in out, out
    command = printed(out, "named above:")
    assert command == [
        "plan",
        cp,
        "--live-window",
        "0",
        "--accept-data-loss",
        "-o",
        "plan-job-checkpoint.json",
    ]
    code, out, _ = run(capsys, command)
    assert code == ExitCode.OK and "Strategy    delta-sink-txn" in out


def test_a_recreated_source_table_paired_beside_is_planned_without_naming_it(tmp_path, capsys, monkeypatch):
    """The only table beside the checkpoint, another id than the offsets' (recreated: its log starts at
    0 again), is read whole as a named one: delta-table re-points to it as of version 0."""
    shutil.copytree(DELTA / "spark-4.2.1" / "delta-source-stateless-recreated", tmp_path / "job")
    monkeypatch.chdir(tmp_path / "job")

    code, out, _ = run(capsys, ["plan", "checkpoint", "--accept-data-loss", "-o", "plan.json"])

    assert code == ExitCode.OK, out
    assert "not possible" not in out and "Strategy    delta-table" in out
    assert "as of version 0" in " ".join(out.split())


def test_a_plan_that_only_writes_rows_twice_asks_consent_for_that_not_for_data_loss(
    tmp_path, capsys, monkeypatch
):
    shutil.copytree(DELTA / "spark-4.2.1" / "delta-sink-rolled-back", tmp_path / "job")
    monkeypatch.chdir(tmp_path / "job")

    code, out, _ = run(capsys, ["plan", "checkpoint", "--live-window", "0", "-o", "plan.json"])

    # CD407 waits for consent: plan exits 1, as diagnose does on it, not 4
    assert code == ExitCode.WARNINGS and "data loss" not in out, out
    assert "To plan it anyway, accepting the rows written twice named above:" in out
    command = printed(out, "named above:")
    # the -o the operator gave is the one repeated
    assert command == ["plan", "checkpoint", "--live-window", "0", "--accept-data-loss", "-o", "plan.json"]
    code, out, _ = run(capsys, command)
    assert code == ExitCode.OK and "Strategy    delta-sink-txn" in out


def test_an_unpaired_delta_source_moved_away_from_its_table_is_paired_by_the_printed_audit(
    tmp_path, capsys, monkeypatch, pinned_clock
):
    """The checkpoint moved away from its table: diagnose says so and prints an audit of the directory
    above, with the flags that shaped its answer; run as printed, it pairs the table by id and its next
    step (with --delta-table) gives the refusal the table causes."""
    scenario = DELTA / "spark-4.2.1" / "delta-source-stateless-rows-deleted"
    fresh_copy(scenario / "checkpoint", tmp_path / "jobs" / "events" / "checkpoint")
    fresh_copy(scenario / "source", tmp_path / "tables" / "events")
    checkpoint = str(tmp_path / "jobs" / "events" / "checkpoint")
    monkeypatch.chdir(tmp_path)

    code, out, _ = run(capsys, ["diagnose", checkpoint, "--live-window", "0", "--spark", "4.2"])
    assert code == ExitCode.OK and "CD210" not in out and "not paired" in out
    audit = printed(out, f"or pair it by id with any Delta table below {tmp_path / 'jobs'}:")
    assert audit == ["audit", str(tmp_path / "jobs"), "--spark", "4.2", "--live-window", "0"]
    code, out, _ = run(capsys, audit)  # the table is not below jobs/: nothing pairs it, said so
    assert code == ExitCode.OK and "1 Delta source(s) paired with no table" in " ".join(out.split())
    code, out, _ = run(capsys, ["audit", str(tmp_path), "--spark", "4.2", "--live-window", "0"])
    assert code == ExitCode.ERRORS and "CD210" in out
    plan = printed(out, "Next steps")
    assert plan[-2:] == ["--delta-table", str(tmp_path / "tables" / "events")]
    code, out, _ = run(capsys, plan)
    assert code == ExitCode.ERRORS and 'skipChangeCommits", "true"' in out


# ------------------------------------------------------------- the changed query: diagnose --job

REPO = Path(__file__).resolve().parents[2]


def recorded_job_python(tmp_path: Path, version: str = "4.3.0") -> str:
    """A job python that answers the job probe with what Spark ``version`` said of each job function
    of fixtures/jobs/changes.py (fixtures/jobs/facts-<v>.json), whatever path names the file: no JVM.
    The file jobs' scratch paths become those of ``paths.json`` beside it (tests.scenarios.job_facts_for)."""
    facts = REPO / "fixtures" / "jobs" / f"facts-{version}.json"
    script = tmp_path / "python"
    (tmp_path / "paths.json").write_text("{}")
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"known = {{e['job'].rpartition(':')[2]: e for e in json.load(open({str(facts)!r}))}}\n"
        f"paths = json.load(open({str(tmp_path / 'paths.json')!r}))\n"
        "def answer(spec):\n"
        "    entry = known[spec.rpartition(':')[2]]\n"
        "    text = json.dumps(entry['facts'])\n"
        "    for name, probed in (entry.get('probe_paths') or {}).items():\n"
        "        if paths.get(name):\n"
        "            text = text.replace(json.dumps(probed)[1:-1], paths[name])\n"
        "    return {**entry, 'job': spec, 'facts': json.loads(text)}\n"
        "print(json.dumps([answer(s) for s in sys.argv[3:]]))  # -m checkpoint_doctor.execution.job_probe SPEC...\n"
    )
    script.chmod(0o755)
    return str(script)


def _job_scenarios() -> list[Path]:
    return sorted(p for p in (REPO / "fixtures" / "spark-4.3.0").glob("job-*") if (p / "checkpoint").is_dir())


def test_every_changed_query_fixture_walks_from_diagnose_job_to_its_way_back_or_says_why(
    tmp_path, capsys, monkeypatch, pinned_clock
):
    """diagnose --job with the job of each job-* fixture (its job python answering with what Spark
    4.3.0 said of the job), then every printed command: each carries --job and --job-python and runs
    as printed; a refused restart (exit 4) ends in an applied plan (undone again) or says why none."""
    python = recorded_job_python(tmp_path)
    ends: dict[str, tuple[int, str]] = {}
    for scenario in _job_scenarios():
        data = json.loads((scenario / "scenario.json").read_text(encoding="utf-8"))
        (restart,) = [r for r in data["restarts"] if r["spark"] == "4.3.0"][:1]
        job = str(REPO / restart["query"].removeprefix("job:"))
        copy = tmp_path / scenario.name
        shutil.copytree(scenario, copy)
        paths = {"input": data["written_with"].get("input_path"), "sink": str(copy / "sink")}
        (tmp_path / "paths.json").write_text(json.dumps(paths))
        monkeypatch.chdir(copy)
        code, end = walk_and_undo(capsys, "checkpoint", "--job", job, "--job-python", python)
        started = restart["result"]["started"]
        assert (code == ExitCode.ERRORS) == (not started), (scenario.name, code, end)
        ends[scenario.name] = (code, end)
    assert ends["job-aggregation-added"] == (ExitCode.ERRORS, "applied")  # reset-state, with consent
    assert ends["job-async-off"] == (ExitCode.ERRORS, "applied")  # bridge
    assert ends["job-grouping-key-added"] == (ExitCode.ERRORS, "none, said why")


def test_interleaved_runs_in_the_logs_do_not_stop_a_repair_forever(tmp_path, capsys):
    """CD503 is history the offsets keep (batchTimestampMs going backwards once): it used to count
    as a live writer, so no plan on that checkpoint could ever proceed. With the metadata file lost
    too (CD001, fatal on 4.2+), the printed flow reaches an applied plan and CD503 stays a warning."""
    cp = tmp_path / "checkpoint"
    shutil.copytree(Path("fixtures/spark-4.3.0/interleaved-runs/checkpoint"), cp)
    (cp / "metadata").unlink()

    code, out, _ = run(capsys, ["plan", str(cp), "--live-window", "0", "-o", str(tmp_path / "plan.json")])
    assert code == ExitCode.OK and "Strategy    recreate-metadata" in out, out
    code, out, _ = run(capsys, [*printed(out, "Apply it with:"), "--yes"])
    assert code == ExitCode.WARNINGS and "STARTS" in out, out  # apply exits as diagnose after it
    code, out, _ = run(capsys, ["diagnose", str(cp), "--live-window", "0"])
    assert code == ExitCode.WARNINGS and "CD503" in out and "CD001" not in out, out

    # Without another finding, plan says there is nothing to repair and names the command that shows
    # the warning, instead of an unresolved CD503 that "plan again" never resolves.
    code, out, _ = run(capsys, ["plan", str(cp), "--live-window", "0"])
    assert code == ExitCode.OK and "Unresolved" not in out, out
    assert printed(out, "warnings included:") == ["diagnose", str(cp), "--live-window", "0"]


def test_the_hinted_plan_file_and_apply_name_the_checkpoint(tmp_path, capsys, monkeypatch):
    """Issue 36: two checkpoints planned from one directory get two plan files, each named for its
    checkpoint, and apply's first line (a dry run too) names the checkpoint the plan is for."""
    for query in ("orders", "payments"):
        shutil.copytree(DELTA / "spark-3.5.9" / "delta-source-count-log-cleaned", tmp_path / query)
    monkeypatch.chdir(tmp_path)
    files = []
    for query in ("orders", "payments"):
        code, out, _ = run(capsys, ["diagnose", f"{query}/checkpoint", "--live-window", "0"])
        command = printed(out, "Repair options:")
        assert code == ExitCode.ERRORS and command[-2:] == ["-o", f"plan-{query}-checkpoint.json"]
        _, out, _ = run(capsys, command)
        code, out, _ = run(capsys, printed(out, "named above:"))
        assert code == ExitCode.OK and f"Plan written to plan-{query}-checkpoint.json." in out
        files.append(printed(out, "Apply it with:"))
    assert files == [["apply", "plan-orders-checkpoint.json"], ["apply", "plan-payments-checkpoint.json"]]
    code, out, _ = run(capsys, [*files[1], "--dry-run"])
    first = " ".join(out.split("Apply would do:")[0].split())
    assert (
        code == ExitCode.OK
        and first.startswith("Dry run of plan ")
        and f" to {tmp_path}/payments/checkpoint:" in first
    )
    code, out, _ = run(capsys, [*files[0], "--yes"])
    assert out.startswith("Applied plan ") and f" to {tmp_path}/orders/checkpoint: " in out.splitlines()[0]
