"""Every JSON document the CLI prints is described by a JSON Schema shipped in the
package (draft 2020-12, ``$schema`` and ``$id``), and every output validates against it: unknown or
missing fields fail (``additionalProperties: false`` on our objects)."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource

from checkpoint_doctor.cli import main
from checkpoint_doctor.diagnosis.codes import CODES
from checkpoint_doctor.render.documents import SCHEMA_BASE, SCHEMA_DIR, SCHEMA_VERSIONS
from tests.conftest import REPO
from tests.scenarios import all_scenarios

DOCUMENTS = (
    "inspect",
    "diagnose",
    "explain",
    "plan",
    "apply",
    "undo",
    "history",
    "audit",
    "audit-record",
    "audit-summary",
    "catch-up",
    "error",
)
SCHEMAS = {p.stem: json.loads(p.read_text()) for p in SCHEMA_DIR.glob("*.json")}
REGISTRY = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in SCHEMAS.values())
SCENARIOS = all_scenarios()


def validate(name: str, doc: dict) -> None:
    validator = Draft202012Validator(SCHEMAS[name], registry=REGISTRY, format_checker=FormatChecker())
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message[:300]}" for e in errors[:5])


def run(capsys, *args: str) -> tuple[int, dict]:
    code = main(list(args))
    out, _ = capsys.readouterr()
    doc = json.loads(out)
    assert doc["exit_code"] == code  # the document's exit code is the process's
    return code, doc


def test_one_schema_per_document_shipped_in_the_package() -> None:
    assert set(SCHEMAS) == set(DOCUMENTS)
    for name, schema in SCHEMAS.items():
        Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$id"] == f"{SCHEMA_BASE}{name}.json"
        assert schema["properties"]["schema_version"]["const"] == SCHEMA_VERSIONS[name]
    setup = (REPO / "setup.cfg").read_text()
    assert "schemas/*.json" in setup


def test_the_docs_link_every_schema() -> None:
    """docs/json.md links each schema; docs/schemas is the package's directory (the site ships them)."""
    page = (REPO / "docs" / "json.md").read_text()
    for name in DOCUMENTS:
        assert f"(schemas/{name}.json)" in page, name
    assert (REPO / "docs" / "schemas").resolve() == (REPO / "checkpoint_doctor" / "schemas").resolve()


@pytest.mark.parametrize("s", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_inspect_and_diagnose_of_every_fixture_validate(s, tmp_path, capsys) -> None:
    cp = str(s.copy_to(tmp_path))
    sink = ["--sink-path", str(tmp_path / "sink")] if (tmp_path / "sink").exists() else []
    for args in (["inspect", cp, *sink], ["diagnose", cp, "--live-window", "0", *sink]):
        _, doc = run(capsys, *args, "--format", "json")
        validate("error" if "error" in doc else args[0], doc)


def test_explain_of_every_code_validates(capsys) -> None:
    for code in CODES:
        _, doc = run(capsys, "explain", code, "--format", "json")
        validate("explain", doc)


def test_plan_apply_undo_validate(tmp_path, capsys) -> None:
    s = next(s for s in SCENARIOS if s.id == "spark-4.3.0/offsets-latest-empty")
    cp = str(s.copy_to(tmp_path))
    plan_file = str(tmp_path / "plan.json")
    _, plan = run(capsys, "plan", cp, "--live-window", "0", "-o", plan_file, "--format", "json")
    validate("plan", plan)
    _, applied = run(capsys, "apply", plan_file, "--yes", "--format", "json")
    validate("apply", applied)
    _, undone = run(capsys, "undo", applied["result"]["journal"], "--yes", "--format", "json")
    validate("undo", undone)
    _, dry = run(capsys, "apply", plan_file, "--dry-run", "--format", "json")
    validate("apply", dry)
    _, history = run(capsys, "history", cp, "--format", "json")
    validate("history", history)
    assert [r["state"] for r in history["result"]["applies"]] == ["undone"]


def test_audit_document_records_and_summary_validate(local_fleet, tmp_path, capsys) -> None:
    missing = str(tmp_path / "gone")
    code, doc = run(capsys, "audit", local_fleet.root, missing, "--live-window", "0", "--format", "json")
    validate("audit", doc)
    assert {r["kind"] for r in doc["result"]["records"]} == {"checkpoint", "sink", "root"}
    assert main(["audit", local_fleet.root, missing, "--live-window", "0", "--format", "jsonl"]) == code
    lines = [json.loads(line) for line in capsys.readouterr()[0].splitlines()]
    for record in lines[:-1]:
        validate("audit-record", record)
    validate("audit-summary", lines[-1])
    assert lines[-1]["exit_code"] == code


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", "/no/such/checkpoint"],
        ["--log-level", "debug", "diagnose", "/nope"],
        ["explain", "CD999"],
        ["inspect", ".", "--storage-option", "no-equals-sign"],
    ],
)
def test_errors_validate_and_name_the_command_click_parsed(args, capsys) -> None:
    code, doc = run(capsys, *args, "--format", "json")
    validate("error", doc)
    assert doc["command"] == next(a for a in args if a in ("inspect", "diagnose", "explain"))
    assert code in (2, 8)


def test_catch_up_document_validates() -> None:
    # The run itself needs PySpark (tests/spark/test_catch_up.py validates a real one); the document
    # is the report of real diagnoses of the bundled async tail, before and after.
    from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
    from checkpoint_doctor.execution.catch_up.model import CatchUpReport, TailState
    from checkpoint_doctor.reading import load_checkpoint
    from checkpoint_doctor.render.documents import envelope

    cp = str(REPO / "fixtures" / "spark-4.3.0" / "async-tail" / "checkpoint")
    sync = diagnose(load_checkpoint(cp), DiagnoseOptions(mode="micro-batch", live_window_s=0))
    report = CatchUpReport(
        checkpoint=cp,
        job="examples.rate_job:build",
        mode="async",
        spark_version="4.3.0",
        batches_wanted=2,
        batch_ids=(31, 32),
        rows=10,
        elapsed_s=12.34,
        timed_out=False,
        before=sync,
        tail=TailState(offsets=(31, 32), commits=(31, 32), durable=True, why="the newest batch is committed"),
        after=sync,
        next_command=f"checkpoint-doctor diagnose {cp} --mode micro-batch",
    )
    doc = envelope("catch-up", generated_at_ms=0, exit_code=report.exit_code, result=report.to_dict())
    validate("catch-up", doc)
    doc["result"]["surprise"] = 1
    with pytest.raises(AssertionError):
        validate("catch-up", doc)
