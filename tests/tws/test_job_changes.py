"""A changed transformWithState processor (``diagnose --job``): each base's healthy checkpoint was
restarted by real Spark with one change of ``fixtures/jobs/tws_changes.py``
(``scripts/tws_fixtures.py --jobs <line>``: ``fixtures/tws/spark-<v>/jobs.json``), and what that
line's Spark said each job runs (``diagnose --job``'s own probe) is ``job-facts.json`` beside it.
Here the prediction from those facts is held to every recorded restart, without a JVM."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.diagnosis.changes.facts import JobFacts, job_facts_from_dict
from checkpoint_doctor.reading.pipeline import load_checkpoint

TWS = Path(__file__).resolve().parents[2] / "fixtures" / "tws"
LINES = sorted(p.parent.name for p in TWS.glob("spark-*/jobs.json"))
CASES = [
    (line, record)
    for line in LINES
    for record in json.loads((TWS / line / "jobs.json").read_text(encoding="utf-8"))
]
#: The Avro bases (written with spark.sql.streaming.stateStore.encodingFormat=avro) and their changes.
AVRO_LINES = sorted(p.parent.name for p in TWS.glob("spark-*/avro-jobs.json"))
AVRO_CASES = [
    (line, record)
    for line in AVRO_LINES
    for record in json.loads((TWS / line / "avro-jobs.json").read_text(encoding="utf-8"))
]

#: The codes each change gives, per line where lines differ (Spark's own outcome is the record's).
EXPECTED = {
    "same": {"*": []},
    "time-mode": {"*": ["CD323"]},
    "output-mode": {"*": ["CD323"]},
    "key-changed": {"*": ["CD324"]},
    "map-key-changed": {"*": ["CD324"]},
    "ttl-added": {"*": ["CD324"]},
    "value-field-added": {"*": ["CD324"]},
    "variable-added": {"*": []},
    "variable-removed": {"*": ["CD326"]},
    "variable-renamed": {"*": ["CD326"]},
    "variable-retyped": {"*": ["CD325"]},
    "api-swapped": {"*": ["CD313"]},
    "aggregation": {"*": ["CD313"]},
    # With the Avro encoding: a field added evolves (a new schema file), long -> string cannot.
    "avro-same": {"*": []},
    "avro-field-added": {"*": ["CD328"]},
    "avro-long-to-string": {"*": ["CD327"]},
    "avro-key-changed": {"*": ["CD324"]},
}


def _id(case: tuple[str, dict]) -> str:
    line, record = case
    return f"{line}/{record['query']}-job-{record['change']}"


def job_facts_entry(line: str, spec: str) -> dict:
    """The probe's recorded entry of a job on a line."""
    name = "avro-job-facts.json" if ":pandas_avro_" in spec or ":row_avro_" in spec else "job-facts.json"
    entries = json.loads((TWS / line / name).read_text(encoding="utf-8"))
    return next(e for e in entries if e["job"] == spec)


def job_facts(line: str, spec: str) -> JobFacts:
    """What the line's Spark said the job runs (recorded by ``scripts/tws_fixtures.py``)."""
    entry = job_facts_entry(line, spec)
    return job_facts_from_dict(spec, entry["facts"], entry["facts"]["elapsed_s"])


@pytest.fixture
def placed(request: pytest.FixtureRequest) -> Iterator[tuple[str, dict, Path]]:
    """The base checkpoint where Spark restarted it (where it was written: its metadata's paths)."""
    line, record = request.param
    at = Path(record["restarted_at"])
    base = at.parent
    if base.exists():
        shutil.rmtree(base)
    at.parent.mkdir(parents=True)
    shutil.copytree(TWS / line / record["base"] / "checkpoint", at)
    try:
        yield line, record, at
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_every_line_restarted_every_change() -> None:
    per_line: dict[str, set[str]] = {}
    for line, record in CASES:
        per_line.setdefault(line, set()).add(record["change"])
    assert LINES, "no recorded tws job restarts"
    for line, changes in per_line.items():
        # 4.0 has no Row-based API to swap to.
        plain = {c for c in EXPECTED if not c.startswith("avro-")}
        assert changes == plain - ({"api-swapped"} if line == "spark-4.0.5" else set()), line
    for line in AVRO_LINES:
        changes = {r["change"] for at, r in AVRO_CASES if at == line}
        assert changes == {c for c in EXPECTED if c.startswith("avro-")}, line


@pytest.mark.parametrize(
    "placed", CASES + AVRO_CASES, ids=[_id(c) for c in CASES + AVRO_CASES], indirect=True
)
def test_prediction_equals_the_recorded_restart(placed: tuple[str, dict, Path]) -> None:
    line, record, at = placed
    result = record["result"]
    job = job_facts(line, record["job"])
    spark = ".".join(record["spark"].split(".")[:2])
    got = diagnose(
        load_checkpoint(str(at)),
        DiagnoseOptions(
            spark=spark, live_window_s=0, job=job, stateful=job.stateful, sources=len(job.sources)
        ),
    )
    if result["error"] is None:
        assert result["started"], result
        assert got.prediction.starts, got.prediction.summary
    else:
        message = result["error"]["message"]
        assert not got.prediction.starts, f"Spark failed: {message[:300]}"
        assert got.prediction.error is not None and got.prediction.error.matches(message), (
            got.prediction.error,
            message[:600],
        )
        assert got.prediction.caused_by and got.prediction.caused_by[0] in got.codes
    expected = EXPECTED[record["change"]]
    assert sorted(got.codes) == sorted(expected.get(spark, expected["*"])), got.prediction.summary


def test_the_probe_gives_the_processor_as_spark_declares_it() -> None:
    """The probe ran each processor's init as the driver's pre-init run does: the state variables,
    their schemas, TTL, and the API that names the operator in the metadata."""
    line = LINES[-1]
    same = job_facts(line, "fixtures/jobs/tws_changes.py:pandas_same")
    (op,) = same.operators
    assert op.tws is not None and op.name == "transformWithStateInPandasExec"
    assert (op.tws.time_mode, op.tws.output_mode) == ("NoTime", "Update")
    assert {v.name: (v.kind, v.ttl) for v in op.tws.variables} == {
        "count": ("ValueState", False),
        "seen": ("ListState", False),
        "last": ("MapState", False),
    }
    ttl = job_facts(line, "fixtures/jobs/tws_changes.py:pandas_ttl_added").operators[0].tws
    assert ttl is not None and next(v for v in ttl.variables if v.name == "count").ttl
    if line != "spark-4.0.5":
        row = job_facts(line, "fixtures/jobs/tws_changes.py:row_same").operators[0]
        assert row.name == "transformWithStateInPySparkExec"


def _fake_python(tmp_path: Path, line: str, spec: str) -> str:
    """A 'python' that answers ``--job``'s runner with the line's recorded facts of ``spec``."""
    entries = [job_facts_entry(line, spec)]
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\ncat <<'EOF'\n" + json.dumps(entries) + "\nEOF\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize(
    "placed",
    [
        c
        for c in CASES
        if c[0] == LINES[-1] and c[1]["query"] == "tws_pandas" and c[1]["change"] == "time-mode"
    ],
    ids=_id,
    indirect=True,
)
def test_the_cli_says_what_the_api_says_and_its_json_is_valid(
    placed: tuple[str, dict, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.cli.test_schemas import validate
    from tests.scenarios import REPO, run_cli

    line, record, at = placed
    monkeypatch.chdir(REPO)
    python = _fake_python(tmp_path, line, record["job"])
    args = ["diagnose", str(at), "--job", record["job"], "--job-python", python, "--live-window", "0"]
    code, out, _ = run_cli(capsys, *args, "--format", "json")
    doc = json.loads(out)
    validate("diagnose", doc)
    assert "CD323" in out and "STATE_STORE_INVALID_CONFIG_AFTER_RESTART" in out
    code_text, text, _ = run_cli(capsys, *args)
    assert code_text == code != 0
    assert "CD323 tws-config-changed" in text
    # Where a sentence wraps follows the path's length: compared unwrapped.
    assert "Cannot change timeMode from NoTime to ProcessingTime between restarts" in " ".join(text.split())


def _s(**fields: str) -> dict:
    return {
        "type": "struct",
        "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields.items()],
    }


def test_avro_evolution_is_what_avro_reads_the_old_values_with() -> None:
    from checkpoint_doctor.diagnosis.state.tws_job import avro_evolves

    old = _s(n="long")
    assert avro_evolves(old, _s(n="long", m="long"))  # a nullable field added (default null)
    assert avro_evolves(_s(n="long", m="long"), old)  # a field removed
    assert avro_evolves(_s(n="integer"), old)  # int -> long, a promotion
    assert not avro_evolves(old, _s(n="string"))  # long -> string [exp: avro-long-to-string]
    assert not avro_evolves(old, _s(n="integer"))  # long -> int narrows
    required = {
        "type": "struct",
        "fields": [{"name": "m", "type": "long", "nullable": False, "metadata": {}}],
    }
    assert not avro_evolves(old, required)  # a non-nullable field has no default


def test_a_variable_column_family_is_spark_s() -> None:
    """The key and value schemas Spark keeps per variable kind, as the fixtures' schema files hold them."""
    from checkpoint_doctor.diagnosis.changes.facts import TwsVariable
    from checkpoint_doctor.diagnosis.state.tws_job import column_family

    key = json.dumps(_s(key="long"))
    plain = TwsVariable("count", "ValueState", json.dumps(_s(n="long")))
    assert [json.loads(s) for s in column_family(key, plain)] == [_s(key="long"), _s(n="long")]
    ttl = TwsVariable("count", "ValueState", json.dumps(_s(n="long")), ttl=True)
    value = json.loads(column_family(key, ttl)[1])
    assert [(f["name"], f["type"]) for f in value["fields"]] == [
        ("value", _s(n="long")),
        ("ttlExpirationMs", "long"),
    ]
    mapped = TwsVariable("last", "MapState", json.dumps(_s(v="long")), json.dumps(_s(k="string")))
    map_key = json.loads(column_family(key, mapped)[0])
    assert [(f["name"], f["type"]) for f in map_key["fields"]] == [
        ("key", _s(key="long")),
        ("userKey", _s(k="string")),
    ]
