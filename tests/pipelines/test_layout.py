"""A pipeline's storage root mapped to tables, flows and versions (pure), and the next run's verdict."""

from __future__ import annotations

from checkpoint_doctor.pipelines.layout import flow_dir_parts, live_of, pipeline_layout
from checkpoint_doctor.pipelines.verdict import FlowRestart, pipeline_verdict

C = "_checkpoints/spark_catalog/default"


def _layout(versions: dict[str, list[str]], empty: tuple[str, ...] = ()):
    dirs, files = [], []
    for flow, names in versions.items():
        for v in names:
            dirs.append(f"{C}/{flow}/{v}")
            if f"{flow}/{v}" not in empty:
                dirs.append(f"{C}/{flow}/{v}/offsets")
                files.append(f"{C}/{flow}/{v}/offsets/0")
    return pipeline_layout(dirs, files)


def test_the_live_version_is_the_largest_number_and_older_ones_are_history():
    layout = _layout({"joined/joined": ["0", "1", "10", "2", "0.bak"], "events/events": ["0"]})
    assert layout is not None
    joined = layout.flow("joined/joined")
    assert joined is not None
    # SystemMetadata.getLatestCheckpointDir: numeric order (10 > 2), non-numeric names ignored.
    assert (joined.live, joined.history, joined.ignored) == ("10", ("0", "1", "2"), ("0.bak",))
    assert [f.name for f in layout.flows] == ["events/events", "joined/joined"]
    assert live_of(["0", "1", "x", "12"]) == "12"


def test_a_storage_root_without_checkpoints_is_no_pipeline_and_a_flow_dir_is_recognised():
    assert pipeline_layout(["data", "data/x"], ["data/x/a"]) is None
    assert flow_dir_parts("/s/_checkpoints/cat/sch/t/f") == ("/s", "cat", "sch", "t", "f")
    assert flow_dir_parts("/s/_checkpoints/cat/sch/t/f/0") is None


def test_a_failing_flow_fails_the_run_and_keeps_its_downstream_flows_queued():
    layout = _layout(
        {"events/events": ["0"], "merged/merged_a": ["0"], "joined/joined": ["0"], "other/other": ["0"]}
    )
    ok = FlowRestart(starts=True, summary="STARTS new batch 2", next_batch_id=2)
    bad = FlowRestart(starts=False, summary="FAILS", error="batch 0 doesn't exist", search="doesn't exist")
    verdict = pipeline_verdict(
        layout,
        {"events/events": bad, "merged/merged_a": ok, "joined/joined": ok, "other/other": ok},
        {"merged/merged_a": ("events",), "joined/joined": ("merged",), "events/events": ()},
        {},
    )
    got = {v.layout.name: v.next_run for v in verdict.flows}
    # joined reads merged, which merged_a writes from events: SKIPPED through two tables.
    assert got == {
        "events/events": "FAILED",
        "merged/merged_a": "SKIPPED",
        "joined/joined": "SKIPPED",
        "other/other": "COMPLETED",
    }
    assert verdict.run_outcome == "FAILED"
    assert sorted(str(f.code) for f in verdict.findings) == ["CD800", "CD801", "CD801"]


def test_an_empty_newer_version_is_live_and_the_sink_skips_its_batches():
    layout = _layout({"merged/merged_a": ["0", "1"]}, empty=("merged/merged_a/1",))
    verdict = pipeline_verdict(layout, {}, {"merged/merged_a": ("events",)}, {"merged": (0, 1, 2)})
    (flow,) = verdict.flows
    assert flow.next_run == "COMPLETED" and "version 1 is empty" in flow.summary
    codes = {str(f.code): f for f in verdict.findings}
    assert set(codes) == {"CD802", "CD803"}
    assert codes["CD803"].batch_ids == (0, 1, 2)


def test_two_append_flows_into_one_file_table_share_its_sink_log():
    layout = _layout({"merged/merged_a": ["0"], "merged/merged_b": ["0"]})
    ok = FlowRestart(starts=True, summary="STARTS new batch 1", next_batch_id=1)
    verdict = pipeline_verdict(layout, {"merged/merged_a": ok, "merged/merged_b": ok}, {}, {"merged": (0,)})
    assert [str(f.code) for f in verdict.findings] == ["CD804"]
    # Without the table's sink log nothing is claimed (a Delta table has no shared log).
    assert pipeline_verdict(layout, {"merged/merged_a": ok, "merged/merged_b": ok}, {}, {}).findings == ()


def test_the_pipeline_s_code_says_which_flows_are_stateful():
    from checkpoint_doctor.pipelines.spec import python_flows, spec_storage, sql_flows

    sql = (
        "CREATE STREAMING TABLE joined AS\nSELECT a.value FROM STREAM(events) a JOIN STREAM(events) b "
        "ON a.value = b.value;\nCREATE STREAMING TABLE plain AS SELECT * FROM STREAM(events);\n"
        "CREATE MATERIALIZED VIEW mv AS SELECT count(*) FROM events GROUP BY value;"
    )
    assert [(f.flow, f.stateful) for f in sql_flows(sql, "t.sql")] == [("joined", True), ("plain", False)]
    py = (
        "@dp.table\ndef events():\n    return spark.readStream.format('rate').load()\n\n"
        "@dp.append_flow(target='merged', name='merged_a')\ndef a():\n"
        "    return spark.readStream.table('events').groupBy('value').count()\n"
    )
    assert [(f.flow, f.stateful) for f in python_flows(py, "f.py")] == [("events", False), ("merged_a", True)]
    assert spec_storage("name: p\nstorage: file:///srv/p/storage\n") == "file:///srv/p/storage"


def test_a_version_name_past_a_java_int_is_no_version_as_spark_counts_them():
    # SystemMetadata.getLatestCheckpointDir keeps only names with Try(name.toInt).isSuccess.
    from checkpoint_doctor.pipelines.layout import live_of

    assert live_of(["0", "7", "99999999999999999999999", str(2**31)]) == "7"
    assert live_of(["0", str(2**31 - 1)]) == str(2**31 - 1)
    assert live_of([str(2**31)]) is None
