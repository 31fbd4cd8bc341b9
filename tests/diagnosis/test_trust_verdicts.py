"""No false verdict: with no flags, what the tool says about a restart agrees with what real Spark did.

The walk replays every recorded restart (``fixtures/*/*/scenario.json``, ``restarts``) against the
matrix a flagless ``diagnose`` computes: a restart Spark ran in the writer's session ("as
configured": no conf of its own) that started is never an error, and one that failed is never
silent. The other tests pin the cases that were wrong: a checkpoint written with
``checkpointFormatVersion=2``, a deleted ``state/``, severities that disagreed.
"""

from __future__ import annotations

import json

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions
from checkpoint_doctor.diagnosis.codes import ERROR, WARNING
from checkpoint_doctor.diagnosis.matrix import AS_CONFIGURED, MatrixOptions, diagnose_matrix
from checkpoint_doctor.exit_codes import ExitCode
from tests.scenarios import all_scenarios
from tests.scenarios import run_cli as run

SCENARIOS = all_scenarios()
QUIET = MatrixOptions(base=DiagnoseOptions(live_window_s=0))
V2_CONF = "spark.sql.streaming.stateStore.checkpointFormatVersion=2"


def scenario(scenario_id: str):
    return next(s for s in SCENARIOS if s.id == scenario_id)


def _as_configured_restarts(s) -> list[dict]:
    """The recorded restarts of the query that wrote the checkpoint, in its own session."""
    name = s.data["query"]["name"]
    return [r for r in s.data.get("restarts", []) if not r.get("confs") and (r.get("query") or name) == name]


WALKED = [s for s in SCENARIOS if _as_configured_restarts(s)]


@pytest.mark.parametrize("s", WALKED, ids=[s.id for s in WALKED])
def test_no_flag_verdicts_agree_with_every_recorded_restart(s, tmp_path):
    matrix = diagnose_matrix(s.read(tmp_path), QUIET)
    for restart in _as_configured_restarts(s):
        line = ".".join(restart["spark"].split(".")[:2])
        cell = matrix.cell(line, restart["mode"])
        assert cell is not None, f"{line} {restart['mode']} is not in the matrix"
        causes = [f for f in matrix.findings if f.code in cell.diagnosis.prediction.caused_by]
        where = f"{s.id} restarted on {restart['spark']} ({restart['mode']})"
        if restart["result"]["started"]:
            # Started: the restart is not predicted to fail as configured, and nothing that makes
            # it fail elsewhere is an error.
            assert not (cell.role == AS_CONFIGURED and cell.fails), (
                f"{where}: {cell.diagnosis.prediction.summary}"
            )
            assert all(f.severity != ERROR for f in causes if cell.fails), where
        else:
            # Failed: the cell says so (or says it does if the query is stateful), and when the
            # restart counts, a finding of warning or error severity names it.
            fails_if_stateful = (cell.if_stateful or "").startswith("FAILS")
            assert cell.fails or fails_if_stateful, f"{where}: {cell.diagnosis.prediction.summary}"
            if cell.counted:
                assert matrix.exit_code != ExitCode.OK, where
                named = causes or [f for f in matrix.findings if f.code == "CD310"]
                assert any(f.severity in (ERROR, WARNING) for f in named), where


# ------------------------------------------------------------ the writer's session (item 1)


@pytest.mark.parametrize("line", ["4.0.5", "4.1.4"])
def test_a_checkpoint_format_2_checkpoint_starts_as_configured_and_warns_without_the_conf(line, tmp_path):
    matrix = diagnose_matrix(scenario(f"spark-{line}/rocksdb_v2").read(tmp_path), QUIET)
    assert matrix.as_configured and not any(c.fails for c in matrix.as_configured)
    assert [p.text for p in matrix.proven] == [V2_CONF]
    cd006 = next(f for f in matrix.findings if f.code == "CD006")
    assert cd006.severity == WARNING
    span = "4.0-4.1" if line == "4.0.5" else "4.1"
    assert f"without {V2_CONF} on Spark {span} fails: The only supported log version is v1" in cd006.message
    assert matrix.exit_code == ExitCode.WARNINGS
    assert any(V2_CONF in a and "commits/3" in a for a in matrix.assumptions)


def test_a_conf_the_operator_passes_wins_over_the_proven_one(tmp_path):
    options = MatrixOptions(base=DiagnoseOptions(live_window_s=0, checkpoint_format_version=1))
    matrix = diagnose_matrix(scenario("spark-4.0.5/rocksdb_v2").read(tmp_path), options)
    assert matrix.proven == ()
    assert all(c.fails for c in matrix.as_configured)
    assert matrix.exit_code == ExitCode.ERRORS


def test_a_pinned_source_evolution_conf_is_the_writers_session(tmp_path):
    # Spark 4.3.0 failed the restart of this 4.2.1 checkpoint: the session had enableSourceEvolution.
    matrix = diagnose_matrix(scenario("spark-4.2.1/offsets_v2").read(tmp_path), QUIET)
    upgrade = matrix.cell("4.3", "micro-batch")
    assert upgrade is not None and upgrade.fails
    cd603 = next(f for f in matrix.findings if f.code == "CD603")
    assert cd603.severity == WARNING and "CANNOT_ENABLE_ON_EXISTING_CHECKPOINT" in cd603.message
    assert matrix.exit_code == ExitCode.WARNINGS


def test_plan_of_a_healthy_checkpoint_format_2_checkpoint_addresses_nothing(tmp_path, capsys):
    cp = scenario("spark-4.0.5/rocksdb_v2").copy_to(tmp_path)
    code, out, err = run(capsys, "plan", str(cp), "--live-window", "0", "--format", "json")
    plan = json.loads(out)["result"]
    assert code == 0 and err == ""
    assert plan["strategy"] is None or plan["strategy"] == "none"
    assert not [o for o in plan.get("options", []) if o.get("strategy") == "restart-on-writer"]


# ------------------------------------------------------------ a deleted state/ (item 4)

STATE_DELETED = [
    f"spark-{v}/{name}"
    for v in ("3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0")
    for name in ("state-deleted", "rocksdb-state-deleted")
]


@pytest.mark.parametrize("scenario_id", STATE_DELETED)
def test_a_deleted_state_dir_says_what_a_stateful_query_meets_in_every_output(scenario_id, tmp_path, capsys):
    s = scenario(scenario_id)
    assert all(not r["result"]["started"] for r in s.data["restarts"])  # Spark failed every restart
    cp = s.copy_to(tmp_path / "fleet" / "cp")
    code, out, _ = run(capsys, "diagnose", str(cp), "--live-window", "0", "--format", "json")
    diagnosis = json.loads(out)["result"]
    cd310 = next(f for f in diagnosis["findings"] if f["code"] == "CD310")
    assert code == ExitCode.WARNINGS and cd310["severity"] == WARNING
    # Spark's words per line, and how to settle it.
    assert (
        "Spark 4.2, 4.3: FAILS in batch 4: STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY"
        in cd310["message"]
    )
    assert "does not exist" in cd310["message"] and "--stateful or --stateless" in cd310["message"]

    code, out, _ = run(capsys, "plan", str(cp), "--live-window", "0", "--format", "json")
    plan = json.loads(out)["result"]
    assert code == ExitCode.WARNINGS
    assert any(cd310["message"] in w for w in plan["warnings"])

    code, out, _ = run(
        capsys, "plan", str(cp), "--live-window", "0", "--stateful", "--accept-data-loss", "--format", "json"
    )
    assert json.loads(out)["result"]["strategy"] == "reset-state"

    code, out, _ = run(capsys, "audit", str(tmp_path / "fleet"), "--live-window", "0", "--format", "json")
    audit = json.loads(out)["result"]
    record = audit["records"][0]
    assert record["restart"]["outcome"] == "starts"
    assert "if stateful: FAILS" in record["restart"]["summary"] and record["restart"]["if_stateful"]
    assert "ok if stateless" in record["lines"]
    assert audit["summary"]["restart_fails_if_stateful"] == 1 and record["verdict"] == WARNING


def test_explain_cd310_offers_what_plan_offers(capsys):
    code, out, _ = run(capsys, "explain", "CD310", "--format", "json")
    action = json.loads(out)["result"]["action"]
    assert "plan --stateful --accept-data-loss" in action and "reset-state" in action
    assert "only way on" not in action
    code, out, _ = run(capsys, "explain", "CD301", "--format", "json")
    assert code == 0
    assert "reset-state" in json.loads(out)["result"]["action"]


def test_metrics_say_which_restarts_fail_if_stateful(tmp_path):
    from checkpoint_doctor.fleet.metrics import render_metrics
    from checkpoint_doctor.fleet.records import CheckpointRecord, fails_if_stateful
    from checkpoint_doctor.fleet.report import summarize
    from checkpoint_doctor.fleet.run import audit

    cp = scenario("spark-4.3.0/state-deleted").copy_to(tmp_path / "fleet" / "c")
    scenario("spark-4.3.0/stateless").copy_to(tmp_path / "fleet" / "s")
    result = audit([str(tmp_path / "fleet")], options=DiagnoseOptions(live_window_s=0))
    text = render_metrics(result.records, summarize(result.records), started_ms=0, finished_ms=0, exit_code=1)
    samples = [
        line for line in text.splitlines() if line.startswith("checkpoint_doctor_restart_fails_if_stateful")
    ]
    records = [r for r in result.records if isinstance(r, CheckpointRecord)]
    assert len(samples) == sum(len(r.diagnosis.cells) for r in records)
    for record in records:
        for cell in record.diagnosis.cells:
            labels = f'url="{record.url}",kind="checkpoint",spark="{cell.cell.spark}",mode="{cell.cell.mode}",role="{cell.role}"'
            value = 1 if fails_if_stateful(cell) else 0
            assert f"checkpoint_doctor_restart_fails_if_stateful{{{labels}}} {value}" in samples
    # The deleted state: the restart as configured starts only if the query is stateless.
    (deleted,) = [r for r in records if r.url == str(cp)]
    assert fails_if_stateful(deleted.diagnosis.primary) and deleted.restart.fails_if_stateful
    assert any(s.endswith(" 1") for s in samples) and any(s.endswith(" 0") for s in samples)


# ------------------------------------------------------------ one severity rule (item 5)


def test_explain_states_the_rule_diagnose_applies(tmp_path, capsys):
    from checkpoint_doctor.diagnosis.severity import RULE

    code, out, _ = run(capsys, "explain", "CD101", "--format", "json")
    info = json.loads(out)["result"]
    assert info["severity"] == ERROR and info["severity_rule"] == RULE
    code, text, _ = run(capsys, "explain", "CD101")
    assert (
        text.splitlines()[0]
        == "CD101 async-tail-sync-restart (error as configured, warning for a plausible restart)"
    )
    # The async tail's synchronous restart is plausible, not configured: a warning, as the rule says.
    matrix = diagnose_matrix(scenario("spark-4.3.0/async-tail").read(tmp_path), QUIET)
    assert next(f for f in matrix.findings if f.code == "CD101").severity == WARNING
    # Named, the synchronous restart is the configured one: an error.
    named = diagnose_matrix(
        scenario("spark-4.3.0/async-tail").read(tmp_path),
        MatrixOptions(modes=("micro-batch",), base=DiagnoseOptions(live_window_s=0)),
    )
    assert next(f for f in named.findings if f.code == "CD101").severity == ERROR
    code, out, _ = run(capsys, "explain", "CD310", "--format", "json")
    assert code == 0 and json.loads(out)["result"]["severity_rule"] == WARNING


@pytest.mark.parametrize("line", ["4.0.5", "4.1.4"])
def test_a_missing_metadata_that_only_upgrades_fail_on_is_a_warning_everywhere(line, tmp_path, capsys):
    cp = scenario(f"spark-{line}/metadata-missing").copy_to(tmp_path / "fleet" / "cp")
    code, out, _ = run(capsys, "diagnose", str(cp), "--live-window", "0", "--format", "json")
    result = json.loads(out)["result"]
    failing = [c for c in result["matrix"] if c["counted"] and c["outcome"] == "fails"]
    assert failing and {c["role"] for c in failing} == {"plausible"}
    assert code == ExitCode.WARNINGS
    assert next(f for f in result["findings"] if f["code"] == "CD001")["severity"] == WARNING
    code, out, _ = run(capsys, "audit", str(tmp_path / "fleet"), "--live-window", "0", "--format", "json")
    audit = json.loads(out)["result"]
    assert code == ExitCode.WARNINGS and audit["records"][0]["verdict"] == WARNING
    assert next(c for c in audit["summary"]["codes"] if c["code"] == "CD001")["severity"] == WARNING


def test_the_docs_state_the_rule():
    from pathlib import Path

    from checkpoint_doctor.diagnosis.severity import RULE

    page = " ".join((Path(__file__).resolve().parents[2] / "docs" / "exit-codes.md").read_text().split())
    assert RULE in page


def test_a_session_without_the_writers_conf_gets_one_honest_restart_option(tmp_path, capsys):
    cp = scenario("spark-4.0.5/rocksdb_v2").copy_to(tmp_path)
    args = ["--spark", "4.0", "--spark", "4.1", "--checkpoint-format-version", "1"]
    code, out, _ = run(capsys, "plan", str(cp), "--live-window", "0", *args, "--format", "json")
    plan = json.loads(out)["result"]
    rows = [o for g in plan["options"] for o in g["options"] if o["strategy"] == "restart-on-writer"]
    assert code == ExitCode.ERRORS and len(rows) == 1
    assert "restart on Spark 4.2, newer than the writer (Spark 4.0-4.1)" in rows[0]["note"]
    assert f"or restart on Spark 4.0 with {V2_CONF}" in rows[0]["note"]
