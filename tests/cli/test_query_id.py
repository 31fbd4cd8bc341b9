"""The query id in ``metadata`` is read as Spark reads it (``UUID.fromString``): ``plan --query-id``
refuses what Spark cannot parse, and a checkpoint holding such an id is predicted to fail (CD014),
as Spark 3.5.9-4.3.0 failed on the recorded restarts of ``metadata-id-not-uuid``."""

from __future__ import annotations

import json

from checkpoint_doctor.exit_codes import ExitCode
from tests.scenarios import run_cli as run
from tests.scenarios import scenario


def test_plan_refuses_a_query_id_spark_cannot_parse(tmp_path, capsys):
    cp = scenario("spark-4.0.5/metadata-missing").copy_to(tmp_path)
    plan_file = tmp_path / "plan.json"
    code, out, err = run(capsys, "plan", str(cp), "--query-id", "not-a-uuid", "-o", str(plan_file))
    assert code == ExitCode.USAGE and out == "" and not plan_file.exists()
    assert "Invalid UUID string: not-a-uuid" in err and err.count("\n") == 1


def test_a_lenient_query_id_is_written_as_spark_reports_it(tmp_path, capsys):
    cp = scenario("spark-4.0.5/metadata-missing").copy_to(tmp_path)
    plan_file = tmp_path / "plan.json"
    code, _, _ = run(capsys, "plan", str(cp), "--query-id", "1-2-3-4-5", "-o", str(plan_file))
    assert code == 0
    code, _, _ = run(capsys, "apply", str(plan_file), "--yes")
    assert code == 0
    assert json.loads((cp / "metadata").read_text()) == {"id": "00000001-0002-0003-0004-000000000005"}


def test_a_metadata_id_spark_cannot_parse_fails_every_restart_and_is_repaired(tmp_path, capsys):
    cp = scenario("spark-4.0.5/metadata-id-not-uuid").copy_to(tmp_path)
    code, out, _ = run(capsys, "diagnose", str(cp))
    assert code == ExitCode.ERRORS and "CD014" in out
    assert "4.0            * FAILS: Invalid UUID string: not-a-uuid" in out
    plan_file = tmp_path / "plan.json"
    real_id = "1f9fbb59-2c6d-4410-a596-d28fab6c8f0f"
    code, out, _ = run(capsys, "plan", str(cp), "--query-id", real_id, "-o", str(plan_file))
    assert code == 0 and "Addresses   CD014" in out
    code, out, _ = run(capsys, "apply", str(plan_file), "--yes", "--format", "json")
    assert code == 0 and json.loads(out)["result"]["after"]["restart"]["outcome"] == "starts"
    assert json.loads((cp / "metadata").read_text()) == {"id": real_id}
