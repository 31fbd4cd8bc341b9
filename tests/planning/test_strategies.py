"""The strategies and the combination search, on real fixtures (damage beyond the fixtures' own is
applied to the test's copy, as the fixture generator applies it)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from checkpoint_doctor.diagnosis import diagnose
from checkpoint_doctor.planning import Cell, PlanOptions, plan_repair
from checkpoint_doctor.planning.state_files import EMPTY_LZ4_STATE
from checkpoint_doctor.planning.strategies import ALL, FAMILIES, for_code
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.scenarios import REPO, options_for_restart, scenario


def plan_of(scenario_id: str, tmp_path, restart_spark: str | None = None, reload=None, **kw):
    """Plan a fixture copy for its first failing restart (on ``restart_spark`` when given)."""
    s = scenario(scenario_id)
    restart = next(
        r
        for r in s.data["restarts"]
        if not r["result"]["started"] and (restart_spark is None or r["spark"] == restart_spark)
    )
    snapshot = s.load(tmp_path)
    if reload is not None:
        reload(tmp_path / "checkpoint")
        snapshot = load_checkpoint(str(tmp_path / "checkpoint"))
    options = options_for_restart(s, restart)
    plan = plan_repair(snapshot, diagnose(snapshot, options), PlanOptions(diagnose=options, **kw))
    return snapshot, plan


def test_every_registered_code_is_a_known_finding_code_and_names_are_unique():
    from checkpoint_doctor.diagnosis.codes import CODES

    assert len({s.name for s in ALL}) == len(ALL)
    assert all(code in CODES for s in ALL for code in s.codes)
    assert FAMILIES[:2] == ("bridge", "catch-up")
    assert [s.name for s in for_code("CD103")] == ["bridge", "replan-batch", "rollback"]


def test_the_light_table_of_planned_codes_is_the_registry_s_and_diagnose_does_not_import_it():
    """planning.manual.PLANNED says which codes a strategy addresses, so that rendering a diagnosis
    decides "nothing to plan" without importing the ~30 strategy modules: it must be the registry's."""
    import subprocess
    import sys

    from checkpoint_doctor.planning.manual import PLANNED

    assert {code for s in ALL for code in s.codes} == PLANNED
    assert all(for_code(code) for code in PLANNED)
    probe = (
        "import sys; from checkpoint_doctor.cli import main\n"
        "code = main(['diagnose', 'fixtures/spark-4.3.0/async-tail/checkpoint', '--live-window', '0'])\n"
        "print(code, 'checkpoint_doctor.planning.strategies' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.stdout.splitlines()[-1] == "1 False", out.stdout[-2000:] + out.stderr[-2000:]


def test_orphan_checksums_in_both_logs_are_fixed_by_one_combined_plan(tmp_path):
    def orphans(cp):
        crc = (cp / "offsets" / ".3.crc").read_bytes()
        (cp / "offsets" / ".4.crc").write_bytes(crc)
        (cp / "commits" / ".4.crc").write_bytes(crc)

    scenario("spark-4.3.0/window_agg").load(tmp_path)
    orphans(tmp_path / "checkpoint")
    snapshot = load_checkpoint(str(tmp_path / "checkpoint"))
    like = scenario("spark-4.3.0/orphan-crc")  # the same query, restarted on 4.3.0
    options = options_for_restart(like, like.data["restarts"][0])
    diagnosis = diagnose(snapshot, options)
    assert not diagnosis.prediction.starts and [f.code for f in diagnosis.findings].count("CD504") == 2
    plan = plan_repair(snapshot, diagnosis, PlanOptions(diagnose=options))
    assert {(st.kind, st.path) for st in plan.steps} == {
        ("quarantine", "offsets/.4.crc"),
        ("quarantine", "commits/.4.crc"),
    }
    assert plan.expected["starts"] is True and not plan.unresolved
    alone = [o for g in plan.options for o in g["options"] if o.get("rank")]
    assert [o["consequences"]["starts_in_every_cell"] for o in alone] == [False, False]
    assert all(o["chosen"] for o in alone)


def test_data_loss_accounting_uses_the_sink(tmp_path):
    _, unknown = plan_of("spark-4.3.0/commit-ahead", tmp_path / "a")
    assert not unknown.executable_steps and "--accept-data-loss" in unknown.unresolved[0]["manual"]
    assert "skips them" in unknown.unresolved[0]["reason"]
    _, noop = plan_of("spark-4.3.0/commit-ahead", tmp_path / "b", sink_kind="noop")
    assert noop.executable_steps and noop.expected["consequences"]["data_loss"] is False
    assert "the noop sink writes their rows again" in noop.expected["consequences"]["summary"]
    _, file_sink = plan_of("spark-4.3.0/commit-ahead", tmp_path / "c", sink_kind="file")
    assert not file_sink.executable_steps


def test_strategy_rollback_asks_for_consent_when_it_replans_committed_batches(tmp_path):
    _, default = plan_of("spark-4.3.0/missing-prev-offsets", tmp_path / "a")
    assert default.strategy == "bridge"
    _, asked = plan_of("spark-4.3.0/missing-prev-offsets", tmp_path / "b", strategy="rollback")
    assert not asked.executable_steps and "--accept-data-loss" in asked.unresolved[0]["manual"]
    _, accepted = plan_of(
        "spark-4.3.0/missing-prev-offsets", tmp_path / "c", strategy="rollback", accept_data_loss=True
    )
    assert accepted.strategy == "rollback" and accepted.expected["consequences"]["data_loss"] is True


def test_a_lost_state_directory_gets_a_consented_reset(tmp_path):
    _, refused = plan_of("spark-4.3.0/state-deleted", tmp_path / "a")
    assert not refused.executable_steps
    assert "aggregates restart from zero" in refused.unresolved[0]["reason"]
    _, plan = plan_of("spark-4.3.0/state-deleted", tmp_path / "b", accept_data_loss=True)
    assert plan.strategy == "reset-state" and plan.expected["starts"] is True
    writes = {st.path: st.data for st in plan.steps if st.kind == "write"}
    assert writes == {"state/0/0/4.snapshot": EMPTY_LZ4_STATE, "state/0/1/4.snapshot": EMPTY_LZ4_STATE}


def test_the_empty_state_file_is_what_spark_writes_for_an_empty_batch():
    for version in ("3.5.9", "4.3.0"):
        written = (scenario(f"spark-{version}/window_agg").path / "checkpoint/state/0/0/1.delta").read_bytes()
        assert written == EMPTY_LZ4_STATE


def test_a_rocksdb_snapshot_naming_missing_ssts_is_quarantined_without_loss(tmp_path):
    _, plan = plan_of("spark-3.5.9/rocksdb-sst-missing", tmp_path, restart_spark="3.5.9")
    assert plan.strategy == "quarantine" and not plan.unresolved
    # Every zip of partition 1 names the deleted SST; the changelogs from version 1 rebuild it.
    assert [st.path for st in plan.steps] == [
        f"state/0/1/{name}" for v in (2, 4, 7) for name in (f"{v}.zip", f".{v}.zip.crc")
    ]
    assert plan.expected["consequences"]["data_loss"] is False


def test_a_too_new_version_line_is_rewritten_when_the_body_is_valid(tmp_path):
    _, plan = plan_of("spark-4.3.0/offsets-too-new", tmp_path / "a", restart_spark="3.5.9")
    (write,) = [st for st in plan.steps if st.kind == "write"]
    assert write.path == "offsets/3" and write.data.startswith(b"v1\n")
    _, commit = plan_of("spark-4.3.0/commit-too-new", tmp_path / "b", restart_spark="4.3.0")
    (write,) = [st for st in commit.steps if st.kind == "write"]
    assert write.data.startswith(b"v1\n"), "the oldest version that reads the body, not 4.3's v3"


def test_v2_offsets_become_v1_for_an_older_spark(tmp_path):
    snapshot, plan = plan_of("spark-4.3.0/offsets_v2", tmp_path, restart_spark="3.5.9")
    writes = {st.path: st.data for st in plan.steps if st.kind == "write"}
    assert set(writes) == {"offsets/3", "offsets/2"}
    head, meta, source = writes["offsets/3"].decode().split("\n")
    assert head == "v1" and "sourceMetadataInfo" not in json.loads(meta)
    assert source == snapshot.raw["offsets/3"].decode().split("\n")[2].partition(":")[2]


def test_commits_with_state_ids_cannot_be_downgraded_and_the_writer_line_is_offered(tmp_path):
    _, plan = plan_of("spark-4.3.0/rocksdb_v2", tmp_path, restart_spark="3.5.9")
    assert not plan.executable_steps
    rows = [o for g in plan.options for o in g["options"]]
    reasons = [o["reason"] for o in rows if o.get("available") is False]
    assert any("stateUniqueIds" in r for r in reasons)
    writer = next(o for o in rows if o["strategy"] == "restart-on-writer")
    assert writer["consequences"]["starts"] is True and "Spark 4." in writer["note"]


def test_lost_offsets_start_over_with_consent_and_leave_state_empty(tmp_path):
    _, plan = plan_of("spark-4.3.0/offsets-dir-deleted", tmp_path / "a", restart_spark="4.3.0")
    assert not plan.executable_steps and "starting offsets" in plan.unresolved[0]["reason"]
    _, plan = plan_of(
        "spark-4.3.0/offsets-dir-deleted", tmp_path / "b", restart_spark="4.3.0", accept_data_loss=True
    )
    assert plan.strategy == "start-over" and plan.expected["starts"] is True
    kinds = {st.kind for st in plan.steps}
    assert kinds == {"quarantine", "remove-dir"}
    removed = [st.path for st in plan.steps if st.kind == "remove-dir"]
    assert removed[-1] == "state/0" and "state/0/0" in removed


def test_a_blank_metadata_line_is_rebuilt_from_its_neighbour(tmp_path):
    snapshot, plan = plan_of("spark-4.3.0/offsets-blank-metadata", tmp_path)
    (write,) = [st for st in plan.steps if st.kind == "write"]
    line = json.loads(write.data.decode().split("\n")[1])
    previous = snapshot.offsets.get(2).record.metadata
    assert line["conf"] == dict(previous.conf)
    assert line["batchWatermarkMs"] == snapshot.commits.get(2).record.next_batch_watermark_ms


def test_a_plan_targets_its_cells_and_breaks_no_guard(tmp_path):
    # offsets_v2 was written with source evolution on: a v1 rewrite lets 3.5 read it, and makes 4.3
    # (evolution still on) refuse it.
    s = scenario("spark-4.3.0/offsets_v2")
    snapshot = s.load(tmp_path)
    options = options_for_restart(s, next(r for r in s.data["restarts"] if r["spark"] == "3.5.9"))
    diagnosis = diagnose(snapshot, options)
    only = plan_repair(
        snapshot, diagnosis, PlanOptions(diagnose=options, cells=(Cell("3.5", "micro-batch"),))
    )
    assert only.strategy == "rewrite" and [c["starts_after"] for c in only.expected["cells"]] == [True]
    guarded = plan_repair(
        snapshot,
        diagnosis,
        PlanOptions(
            diagnose=options, cells=(Cell("3.5", "micro-batch"),), guards=(Cell("4.3", "micro-batch"),)
        ),
    )
    assert not guarded.executable_steps
    assert "restart the query on Spark 4.2" in guarded.unresolved[0]["manual"]
    assert guarded.request["guards"] == [{"spark": "4.3", "mode": "micro-batch"}]


@pytest.mark.parametrize(
    "name", ["source-count-mismatch", "stateful-async-restart", "continuous-as-micro-batch"]
)
def test_refusals_without_an_honest_repair_say_why(name, tmp_path):
    _, plan = plan_of(f"spark-4.3.0/{name}", tmp_path)
    assert not plan.executable_steps and plan.unresolved
    assert all(u["manual"] for u in plan.unresolved)


def test_the_mode_that_wrote_the_checkpoint_is_offered(tmp_path):
    _, plan = plan_of("spark-4.3.0/continuous-as-micro-batch", tmp_path)
    row = next(o for g in plan.options for o in g["options"] if o["strategy"] == "restart-in-mode")
    assert "Trigger.Continuous" in row["note"] and row["consequences"]["starts"] is True


def test_a_damaged_version_line_of_a_source_file_is_rewritten_keeping_the_body(tmp_path):
    snapshot, plan = plan_of("spark-4.3.0/rate-start-bad-header", tmp_path)
    (write,) = [st for st in plan.steps if st.kind == "write"]
    assert (
        write.path == "sources/0/0"
        and write.data == b"v1\n" + snapshot.raw["sources/0/0"].partition(b"\n")[2]
    )
    assert plan.expected["consequences"]["data_loss"] is False


def test_a_lost_rate_start_time_is_rebuilt_from_the_offsets_log_with_consent(tmp_path):
    original = int(
        (scenario("spark-4.3.0/rate_source").path / "checkpoint/sources/0/0").read_text().split()[1]
    )
    _, refused = plan_of("spark-4.3.0/rate-start-garbage", tmp_path / "a")
    assert not refused.executable_steps and "timestamps may be up to" in refused.unresolved[0]["reason"]
    _, plan = plan_of("spark-4.3.0/rate-start-garbage", tmp_path / "b", accept_data_loss=True)
    (write,) = [st for st in plan.steps if st.kind == "write"]
    rebuilt = int(write.data.decode().split("\n")[1])
    low, high = (int(x) for x in write.reason.split("(")[1].split(" ")[0].split(".."))
    assert low <= original <= high and rebuilt == (low + high) // 2


def test_a_file_source_log_entry_lost_rolls_back_with_the_file_sink(tmp_path):
    _, plan = plan_of("spark-4.3.0/file-source-log-latest-missing", tmp_path)
    assert plan.strategy == "rollback" and plan.expected["consequences"]["data_loss"] is False
    paths = {(st.area, st.path) for st in plan.steps}
    assert {
        ("checkpoint", "offsets/11"),
        ("checkpoint", "commits/11"),
        ("sink", "_spark_metadata/11"),
    } <= paths


def test_a_rollback_never_goes_below_a_source_log_compaction(tmp_path):
    from checkpoint_doctor.planning.strategies.rollback import compacted_above

    snapshot, _ = plan_of("spark-4.3.0/file-source-log-missing", tmp_path)
    assert compacted_above(snapshot, 8) == "sources/0" and compacted_above(snapshot, 9) is None


def test_a_corrupt_state_file_is_rolled_back_over(tmp_path):
    _, plan = plan_of("spark-4.3.0/state-delta-corrupt", tmp_path, sink_kind="noop")
    assert plan.strategy == "rollback" and plan.expected["starts"] is True
    assert "state/0/0/4.delta" in {st.path for st in plan.steps}


def test_a_bridged_rerun_of_a_committed_batch_counts_as_planned_again(tmp_path):
    from checkpoint_doctor.planning.consequences import replanned_committed
    from checkpoint_doctor.planning.search import simulate
    from checkpoint_doctor.planning.strategies.rollback import rollback_steps

    snapshot, plan = plan_of("spark-4.3.0/missing-prev-offsets", tmp_path)
    (bridge,) = plan.steps  # offsets/2 := offsets/1
    steps = (*rollback_steps(snapshot, 1), bridge)  # a rollback to 1, then the bridge: re-runs 2
    after = diagnose(simulate(snapshot, steps), replace(plan_options(snapshot), live_window_s=0))
    assert after.prediction.rerun and after.prediction.next_batch_id == 2
    assert replanned_committed(snapshot, steps, after) == [2, 3]
    assert replanned_committed(snapshot, (), diagnose(snapshot, plan_options(snapshot))) == []


def plan_options(snapshot):
    from checkpoint_doctor.diagnosis import DiagnoseOptions

    return DiagnoseOptions(spark="4.3", mode="micro-batch", live_window_s=0)


@pytest.mark.parametrize("count", [12, 60])
def test_many_orphan_checksums_are_planned_with_a_bounded_number_of_simulations(tmp_path, monkeypatch, count):
    """One option per orphan .crc made the search simulate 175 sets (each re-indexing
    the listing) and still leave all but three orphans; the orphans of one log are one finding, one
    quarantine, one simulation, however many there are."""
    import checkpoint_doctor.reading.assembly as assembly_module

    scenario("spark-4.3.0/window_agg").load(tmp_path)
    commits = tmp_path / "checkpoint" / "commits"
    for k in range(4, 4 + count):  # .4.crc blocks the next commit: the restart fails
        (commits / f".{k}.crc").write_bytes(b"")
    snapshot = load_checkpoint(str(tmp_path / "checkpoint"))
    like = scenario("spark-4.3.0/orphan-crc")
    options = options_for_restart(like, like.data["restarts"][0])
    diagnosis = diagnose(snapshot, options)
    assert [f.code for f in diagnosis.findings].count("CD504") == 1
    builds = []
    real = assembly_module.index_listing
    monkeypatch.setattr(assembly_module, "index_listing", lambda listing: builds.append(1) or real(listing))
    plan = plan_repair(snapshot, diagnosis, PlanOptions(diagnose=options))
    assert {st.path for st in plan.steps} == {f"commits/.{k}.crc" for k in range(4, 4 + count)}
    assert plan.expected["starts"] is True and not plan.unresolved
    assert len(builds) <= 2
