"""Hostile and unlucky Delta tables beside a checkpoint (issue 31): copies of a table, damaged log
lines and checksums, file names no Delta can list, txn versions no plan can hold, special files where
delta-rs reads. Each table is a real one recorded by Spark in ``fixtures/delta/`` (scripts/
delta_fixtures.py), copied and then damaged the way an operator's hand or a bad tool would.

The adversarial harness (:data:`HOSTILE`) runs every case through ``diagnose``, ``plan`` and an
``audit`` that also holds a healthy checkpoint: none may crash, hang, lose the healthy checkpoint or
write a file; the damaged table is named with what is wrong with it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import checkpoint_doctor as cd
from checkpoint_doctor.cli import main
from checkpoint_doctor.ids import MAX_LISTED
from checkpoint_doctor.model import DeltaOffset
from checkpoint_doctor.model_delta import DeltaTable
from checkpoint_doctor.parsing.documents import MAX_DOCUMENT_BYTES
from checkpoint_doctor.planning.options import MAX_OPTION_STEPS
from checkpoint_doctor.world.delta_pairing import Candidate, pair_tables
from tests.cli.test_schemas import validate

ROOT = Path(__file__).resolve().parents[2]
LINE = ROOT / "fixtures" / "delta" / "spark-3.5.9"
STATELESS = LINE / "delta-source-stateless"  # source at version 4, checkpoint read to version 4
CLEANED = LINE / "delta-source-count-log-cleaned"  # log starts at 6, a checkpoint at 6: CD209
SINK = LINE / "delta-sink-rolled-back"  # the sink holds batch 2 of the query, the checkpoint batch 0
QUIET = ["--live-window", "0"]


def _job(tmp_path: Path, scenario: Path, name: str = "job") -> Path:
    """A copy of a recorded scenario: ``<tmp>/<name>/{checkpoint,source|sink}``; the job dir."""
    job = tmp_path / name
    job.mkdir(parents=True)
    for part in ("checkpoint", "source", "sink"):
        if (scenario / part).is_dir():
            shutil.copytree(scenario / part, job / part)
    return job


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _query_id(scenario: Path) -> str:
    return str(json.loads((scenario / "scenario.json").read_text(encoding="utf-8"))["query_id"])


# ----------------------------------------------------------------------- item 1: copies of a table


def _copy_from_50(job: Path) -> Path:
    """A copy of the source table beside it whose log was renumbered to start at version 50 (a copy
    of another cleanup state): same table id, another log. Named to sort before ``source``."""
    copy = job / "a-copy"
    shutil.copytree(job / "source", copy)
    log = copy / "_delta_log"
    for f in list(log.iterdir()):
        if f.name.startswith(".") or f.name == "_last_checkpoint" or ".checkpoint." in f.name:
            f.unlink()
    for f in sorted(log.iterdir(), reverse=True):
        version, ext = f.name.split(".", 1)
        f.rename(log / f"{int(version) + 50:020d}.{ext}")
    return copy


def test_two_tables_with_the_source_id_beside_pair_neither_and_plan_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _job(tmp_path, STATELESS)
    copy = _copy_from_50(job)
    before = _tree(job / "checkpoint")
    code, out = _run(["diagnose", str(job / "checkpoint"), "--format", "json", *QUIET], capsys)
    doc = json.loads(out)
    pairing = doc["result"]["delta_pairing"]
    assert pairing["pairs"] == [], pairing["text"]
    (unpaired,) = pairing["unpaired_sources"]
    assert unpaired["tables_with_its_id"] == [str(copy), str(job / "source")]
    assert "not guessed" in pairing["text"]
    validate("diagnose", doc)
    # The ambiguity is a finding (a warning: exit 1, it was 0) naming both tables and the command
    # that settles it for each, as it runs.
    (finding,) = doc["result"]["findings"]
    assert finding["code"] == "CD216" and finding["severity"] == "warning"
    assert finding["paths"] == [str(copy), str(job / "source")]
    for table in (copy, job / "source"):
        assert f"checkpoint-doctor diagnose {job / 'checkpoint'} --delta-table {table}" in finding["message"]
    assert "CD209" not in out and code == 1
    assert {c["outcome"] for c in doc["result"]["matrix"]} == {"not-judged"}
    api = cd.diagnose(str(job / "checkpoint"), live_window_s=0)
    assert [(f.code, f.severity, f.paths) for f in api.findings] == [
        ("CD216", "warning", (str(copy), str(job / "source")))
    ]
    # The command printed runs and settles it: the table named is the one judged.
    settle = finding["message"].rsplit("table it reads: ", 1)[1].split(" or ")[1].split()
    assert settle[0] == "checkpoint-doctor"
    code, out = _run([*settle[1:], "--format", "json", *QUIET], capsys)
    settled = json.loads(out)["result"]
    assert [p["table"] for p in settled["delta_pairing"]["pairs"]] == [str(job / "source")]
    assert settled["findings"] == [] and code == 0
    # No plan changes anything on an ambiguous pairing, consent or not.
    plan = tmp_path / "plan.json"
    code, out = _run(["plan", str(job / "checkpoint"), "--accept-data-loss", "-o", str(plan), *QUIET], capsys)
    assert code == 1 and not plan.exists() and "CD216" in out, out
    assert "reservoirVersion" not in out and f"2 tables have its id ({copy}, {job / 'source'})" in " ".join(
        out.split()
    )
    assert _tree(job / "checkpoint") == before


def test_an_audit_pairs_no_copy_beside_the_checkpoint_either(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _job(tmp_path, STATELESS)
    copy = _copy_from_50(job)
    code, out = _run(["audit", str(tmp_path), "--format", "json", *QUIET], capsys)
    (record,) = [r for r in json.loads(out)["result"]["records"] if r["kind"] == "checkpoint"]
    assert "CD209" not in record["codes"] and record["delta"]["pairs"] == []
    assert record["delta"]["unpaired_sources"][0]["tables_with_its_id"] == [str(copy), str(job / "source")]
    assert record["codes"] == ["CD216"] and code == 1


def test_the_table_named_with_delta_table_is_the_operators_choice_among_copies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _job(tmp_path, STATELESS)
    _copy_from_50(job)
    code, out = _run(
        [
            "diagnose",
            str(job / "checkpoint"),
            "--delta-table",
            str(job / "source"),
            "--format",
            "json",
            *QUIET,
        ],
        capsys,
    )
    pairs = json.loads(out)["result"]["delta_pairing"]["pairs"]
    assert [(p["table"], p["how"]) for p in pairs] == [(str(job / "source"), "table-id")]
    assert code == 0


def test_copies_of_the_sink_beside_pair_neither_and_plan_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sink and a backup of it (one table id, this query's txns): judged against either, CD407
    plans copies of batches up to that table's txn version; neither is guessed."""
    job = _job(tmp_path, SINK)
    backup = job / "a-backup"
    shutil.copytree(job / "sink", backup)
    before = _tree(job / "checkpoint")
    code, out = _run(["diagnose", str(job / "checkpoint"), "--format", "json", *QUIET], capsys)
    doc = json.loads(out)
    pairing = doc["result"]["delta_pairing"]
    assert pairing["pairs"] == [] and pairing["sink_copies"] == [[str(backup), str(job / "sink")]]
    assert "CD407" not in {f["code"] for f in doc["result"]["findings"]}
    assert "which one the query writes is not guessed" in pairing["text"]
    (finding,) = [f for f in doc["result"]["findings"] if f["code"] == "CD216"]
    assert finding["severity"] == "warning" and finding["paths"] == [str(backup), str(job / "sink")]
    assert (
        f"checkpoint-doctor diagnose {job / 'checkpoint'} --delta-table {job / 'sink'}" in finding["message"]
    )
    assert code == 1
    plan = tmp_path / "plan.json"
    code, out = _run(["plan", str(job / "checkpoint"), "--accept-data-loss", "-o", str(plan), *QUIET], capsys)
    assert not plan.exists() and _tree(job / "checkpoint") == before, out
    assert code == 1 and "CD216" in out
    code, out = _run(["audit", str(tmp_path), "--format", "json", *QUIET], capsys)
    (record,) = [r for r in json.loads(out)["result"]["records"] if r["kind"] == "checkpoint"]
    assert (
        record["delta"]["sink_copies"] == [[str(backup), str(job / "sink")]]
        and "CD407" not in record["codes"]
    )
    assert "CD216" in record["codes"] and code == 1
    # Named, the operator's choice is judged.
    code, out = _run(
        ["diagnose", str(job / "checkpoint"), "--delta-table", str(job / "sink"), *QUIET], capsys
    )
    assert code == 1 and "CD407" in out and f"Delta sink paired with {job / 'sink'}" in " ".join(out.split())


def _offset(reservoir_id: str) -> DeltaOffset:
    return DeltaOffset(
        reservoir_id=reservoir_id, reservoir_version=3, index=-1, source_version=1, is_starting_version=False
    )


def _table(url: str, table_id: str, earliest: int = 0) -> DeltaTable:
    return DeltaTable(url, table_id, 60, earliest, None, None, (), ())


def test_copies_are_told_apart_only_by_nearness_never_by_name() -> None:
    beside = [
        Candidate(_table("/job/a-copy", "A", 50), beside=True),
        Candidate(_table("/job/source", "A"), beside=True),
    ]
    spare = Candidate(_table("/job/lookup", "L"), beside=True)  # no spare pairs a source with copies
    got = pair_tables([(0, _offset("A"))], "q", [*beside, spare])
    assert got.pairs == () and got.unpaired == ((0, "A"),)
    assert got.copies == ((0, ("/job/a-copy", "/job/source")),)
    named = pair_tables([(0, _offset("A"))], "q", [*beside, Candidate(_table("/x/t", "A"), named=True)])
    assert [(p.table.url, p.how) for p in named.pairs] == [("/x/t", "table-id")]
    two_named = [Candidate(_table(f"/x/t{i}", "A"), named=True) for i in range(2)]
    assert pair_tables([(0, _offset("A"))], "q", two_named).copies == ((0, ("/x/t0", "/x/t1")),)
    far = [Candidate(_table(f"/far/t{i}", "A")) for i in range(2)]
    assert pair_tables([(0, _offset("A"))], "q", far).pairs == ()
    one_near = pair_tables([(0, _offset("A"))], "q", [beside[1], *far])
    assert [p.table.url for p in one_near.pairs] == ["/job/source"]
    sinks = [
        Candidate(DeltaTable(f"/job/s{i}", "S", 2, 0, None, None, (("q", 2),), ()), beside=True)
        for i in range(2)
    ]
    other = Candidate(DeltaTable("/job/t", "T", 2, 0, None, None, (("q", 1),), ()), beside=True)
    got = pair_tables([], "q", [*sinks, other])
    assert [(p.role, p.table.url) for p in got.pairs] == [("sink", "/job/t")]  # another id: its own sink
    assert got.sink_copies == (("/job/s0", "/job/s1"),) and got.sink_tables == (other.table,)


# ------------------------------------------------- items 8-10, 13: the adversarial harness, by class


def _append(version: int, line: str | bytes, keep_crc: bool = True) -> Callable[[Path], None]:
    """Append a line to commit ``version``; without its checksum, pairing reads the commits too."""

    def damage(log: Path) -> None:
        commit = log / f"{version:020d}.json"
        data = line if isinstance(line, bytes) else line.encode()
        commit.write_bytes(commit.read_bytes() + data + b"\n")
        if not keep_crc:
            (log / f"{version:020d}.crc").unlink()

    return damage


def _write(name: str, data: str | bytes) -> Callable[[Path], None]:
    def damage(log: Path) -> None:
        (log / name).write_bytes(data if isinstance(data, bytes) else data.encode())

    return damage


DEEP = '{"a":' * 200_000 + "1" + "}" * 200_000
LINES = {
    "txn-version-1e400": '{"txn":{"appId":"x","version":1e400}}',
    "txn-version-beyond-long": '{"txn":{"appId":"x","version":100000000000000000000000}}',
    "txn-version-string-word": '{"txn":{"appId":"x","version":"seven"}}',
    "txn-version-bool": '{"txn":{"appId":"x","version":true}}',
    "txn-list": '{"txn":[1]}',
    "txn-app-id-object": '{"txn":{"appId":{"a":1},"version":3}}',
    "txn-no-app-id": '{"txn":{"version":3}}',
    "metadata-id-list": '{"metaData":{"id":[1,2]}}',
    "metadata-id-object": '{"metaData":{"id":{"a":1}}}',
    "metadata-list": '{"metaData":[1]}',
    "schema-string-object": '{"metaData":{"id":"x","schemaString":{"a":1}}}',
    "commitinfo-list": '{"commitInfo":[1]}',
    "commitinfo-string": '{"commitInfo":"s"}',
    "operation-object": '{"commitInfo":{"operation":{"a":1}}}',
    "add-list": '{"add":[1]}',
    "add-stats-1e400": '{"add":{"path":"p","dataChange":true,"stats":"{\\"numRecords\\":1e400}"}}',
    "add-stats-deep": json.dumps({"add": {"path": "p", "dataChange": True, "stats": DEEP}}),
    "deep-object": DEEP,
    "array-line": "[1,2]",
    "number-line": "1e400",
    "not-json": "{garbage",
}
CRCS = {
    "crc-deep": DEEP,
    "crc-id-list": '{"metadata":{"id":[1]},"setTransactions":[]}',
    "crc-txn-1e400": '{"metadata":{"id":"x"},"setTransactions":[{"appId":"x","version":1e400}]}',
    "crc-txn-beyond-long": '{"metadata":{"id":"x"},"setTransactions":[{"appId":"x","version":9223372036854775808}]}',
    "crc-txn-app-id-list": '{"metadata":{"id":"x"},"setTransactions":[{"appId":[1],"version":3}]}',
    "crc-list": "[1]",
    "crc-binary": b"\x00\xff\xfe",
}
#: (class, case) -> the damage done to the source table's ``_delta_log`` of :data:`STATELESS`.
HOSTILE: dict[tuple[str, str], Callable[[Path], None]] = {
    **{("commit-line", k): _append(4, v) for k, v in LINES.items()},
    **{("commit-line-no-checksum", k): _append(4, v, keep_crc=False) for k, v in LINES.items()},
    ("commit-line", "non-utf8"): _append(4, b"\xff\xfe{}"),
    **{("checksum", k): _write(f"{4:020d}.crc", v) for k, v in CRCS.items()},
    ("file-name", "commit-20-digits"): _write("99999999999999999999.json", '{"commitInfo":{}}\n'),
    ("file-name", "commit-long-max"): _write("09223372036854775807.json", '{"commitInfo":{}}\n'),
    ("file-name", "checkpoint-long-max-1"): _write("09223372036854775806.checkpoint.parquet", b"PAR1"),
    ("file-name", "checkpoint-20-digits"): _write("99999999999999999999.checkpoint.parquet", b"PAR1"),
    ("file-name", "commit-gap-far-ahead"): _write("00000000001000000000.json", '{"commitInfo":{}}\n'),
}


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A healthy checkpoint with its sink (an audit's other record), copied once."""
    return _job(tmp_path_factory.mktemp("healthy"), SINK, "other")


@pytest.mark.parametrize(("cls", "case"), list(HOSTILE), ids=[f"{c}-{k}" for c, k in HOSTILE])
def test_a_hostile_delta_log_is_named_never_a_crash(
    cls: str, case: str, tmp_path: Path, healthy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _job(tmp_path, STATELESS)
    shutil.copytree(healthy, tmp_path / "other")
    HOSTILE[(cls, case)](job / "source" / "_delta_log")
    source_before = _tree(job / "source")
    checkpoint_before = _tree(job / "checkpoint")
    code, out = _run(["diagnose", str(job / "checkpoint"), "--format", "json", *QUIET], capsys)
    assert code in (0, 1, 4), out[-2000:]
    doc = json.loads(out)
    validate("diagnose", doc)
    pairing = doc["result"]["delta_pairing"]
    # Either the table is read as Delta would read it (what is damaged is not what is read), or it is
    # named as not read with the file and what is wrong with it.
    read = [p["table"] for p in pairing["pairs"]] == [str(job / "source")]
    named = [u["table"] for u in pairing["unread"]] == [str(job / "source")]
    assert read or named, pairing["text"]
    unreadable = [f for f in doc["result"]["findings"] if f["code"] == "CD215"]
    if named:
        assert str(job / "source") in pairing["unread"][0]["reason"], pairing["unread"]  # and the why
        # ... and a finding on that table (issue 31 item 8: the exit stayed 0): an error, the table
        # being certainly the query's (its id, by its checksum or its first commit, is the source's).
        (finding,) = unreadable
        assert finding["paths"] == [str(job / "source")] and finding["severity"] == "error"
        assert pairing["unread"][0]["reason"] in finding["message"]
        assert "not judged" in finding["message"] and code == 4
        # No cell reads as a clean start: each is NOT JUDGED (ux-cli's outcome), on every line.
        assert {c["outcome"] for c in doc["result"]["matrix"]} == {"not-judged"}
        api = cd.diagnose(str(job / "checkpoint"), live_window_s=0)
        assert [(f.code, f.severity, f.paths) for f in api.findings] == [
            ("CD215", "error", (str(job / "source"),))
        ]
    else:
        assert not unreadable and code == 0, out[-2000:]
    diagnosed = code
    plan = tmp_path / "plan.json"
    code, out = _run(["plan", str(job / "checkpoint"), "--accept-data-loss", "-o", str(plan), *QUIET], capsys)
    assert code == diagnosed, out[-2000:]
    assert not plan.exists() or plan.stat().st_size <= MAX_DOCUMENT_BYTES
    assert ("CD215" in out) == named and not (named and plan.exists())
    code, out = _run(["audit", str(tmp_path), "--format", "json", *QUIET], capsys)
    assert code == diagnosed | 1, out[-2000:]  # OR-ed with the other's warning (CD407)
    records = {r["path"]: r for r in json.loads(out)["result"]["records"] if r["kind"] == "checkpoint"}
    assert set(records) == {"job/checkpoint", "other/checkpoint"}  # the other is never lost
    assert records["other/checkpoint"]["codes"] == ["CD407"]
    assert records["job/checkpoint"]["codes"] == (["CD215"] if named else [])
    assert _tree(job / "source") == source_before and _tree(job / "checkpoint") == checkpoint_before


def test_a_damaged_commit_says_which_action_and_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _job(tmp_path, STATELESS)
    _append(4, LINES["txn-version-1e400"])(job / "source" / "_delta_log")
    code, out = _run(["diagnose", str(job / "checkpoint"), *QUIET], capsys)
    text = " ".join(out.split())
    assert code == 4 and "ERROR    CD215 delta-table-unreadable" in out  # it was exit 0
    assert (
        f"{job / 'source'}/_delta_log/00000000000000000004.json is not a Delta commit: txn.version is not a long: 1E+400"
        in text
    )
    assert f"Delta source 0's table {job / 'source'} cannot be read" in text


def test_an_unreadable_table_that_may_be_the_sink_is_a_warning_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A damaged table beside a checkpoint with no Delta source (its id and txns unread: maybe its
    sink, the recorded one here) is CD215 as a warning: exit 1 in diagnose, plan and audit (it was
    0, and CD407 went unsaid), the same in the API; every JSON document validates."""
    job = _job(tmp_path, SINK)
    _append(2, LINES["txn-version-1e400"], keep_crc=False)(job / "sink" / "_delta_log")
    code, out = _run(["diagnose", str(job / "checkpoint"), "--format", "json", *QUIET], capsys)
    doc = json.loads(out)
    validate("diagnose", doc)
    (finding,) = doc["result"]["findings"]
    assert (finding["code"], finding["severity"], finding["paths"]) == (
        "CD215",
        "warning",
        [str(job / "sink")],
    )
    assert "may be this query's source or sink" in finding["message"]
    assert f"{job / 'sink'}/_delta_log/00000000000000000002.json is not a Delta commit" in finding["message"]
    assert code == 1
    api = cd.diagnose(str(job / "checkpoint"), live_window_s=0)
    assert [(f.code, f.severity, f.paths, f.message) for f in api.findings] == [
        ("CD215", "warning", (str(job / "sink"),), finding["message"])
    ]
    code, out = _run(["plan", str(job / "checkpoint"), "--format", "json", *QUIET], capsys)
    plan = json.loads(out)
    validate("plan", plan)
    assert [u["code"] for u in plan["result"]["unresolved"]] == ["CD215"] and code == 1
    code, out = _run(["audit", str(tmp_path), "--format", "json", *QUIET], capsys)
    doc = json.loads(out)
    validate("audit", doc)
    (record,) = [r for r in doc["result"]["records"] if r["kind"] == "checkpoint"]
    assert record["codes"] == ["CD215"] and code == 1


def test_explain_states_how_certain_an_unreadable_table_must_be_for_an_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """CD215's severity is its check's (certainly the query's table, or only beside it), not the
    restarts' rule every other error code follows: explain says so, in text and JSON."""
    code, out = _run(["explain", "CD215", "--format", "json"], capsys)
    doc = json.loads(out)
    validate("explain", doc)
    rule = doc["result"]["severity_rule"]
    assert rule.startswith("error when the table is certainly the query's") and "a warning when" in rule
    assert "Action.fromJson" in doc["result"]["spark_does"] and code == 0
    code, out = _run(["explain", "CD215"], capsys)
    assert out.splitlines()[0] == "CD215 delta-table-unreadable (error or warning)"
    code, out = _run(["explain", "delta-table-copies", "--format", "json"], capsys)
    assert json.loads(out)["result"]["severity_rule"] == "warning"


def test_a_damaged_table_named_with_delta_table_is_an_error_finding_not_a_stop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The operator named the table, so it is the query's: its damaged commit is CD215, an error
    (exit 4, the API alike; it stopped the command with exit 2 and no verdict). A path that holds
    no Delta log at all is still a usage error (exit 2)."""
    job = _job(tmp_path, STATELESS)
    table = tmp_path / "elsewhere" / "events"
    shutil.copytree(job / "source", table)
    shutil.rmtree(job / "source")
    _append(4, LINES["txn-version-1e400"])(table / "_delta_log")
    args = ["diagnose", str(job / "checkpoint"), "--delta-table", str(table), "--format", "json", *QUIET]
    code, out = _run(args, capsys)
    doc = json.loads(out)
    validate("diagnose", doc)
    (finding,) = doc["result"]["findings"]
    assert (finding["code"], finding["severity"], finding["paths"]) == ("CD215", "error", [str(table)])
    assert f"The Delta table {table} named with --delta-table cannot be read" in finding["message"]
    assert "txn.version is not a long: 1E+400" in finding["message"] and code == 4
    api = cd.diagnose(str(job / "checkpoint"), live_window_s=0, delta_tables=[str(table)])
    assert [(f.code, f.severity, f.message) for f in api.findings] == [("CD215", "error", finding["message"])]
    code, out = _run(["plan", *args[1:]], capsys)
    assert code == 4 and [u["code"] for u in json.loads(out)["result"]["unresolved"]] == ["CD215"]
    code, out = _run(["diagnose", str(job / "checkpoint"), "--delta-table", str(tmp_path), *QUIET], capsys)
    assert code == 2 and "is not a Delta table" in out


def test_a_commit_named_beyond_a_java_long_names_the_file(tmp_path: Path) -> None:
    job = _job(tmp_path, STATELESS)
    _write("99999999999999999999.json", "{}\n")(job / "source" / "_delta_log")
    got = cd.diagnose(str(job / "checkpoint"), live_window_s=0).to_dict()["delta_pairing"]
    (unread,) = got["unread"]
    assert (
        "99999999999999999999.json names version 99999999999999999999, beyond a Java long" in unread["reason"]
    )


# ----------------------------------------------------------------------- item 9: ranges stay ranges


#: The CLI in a child that limits its own address space first (no preexec_fn: the test process
#: may hold threads when it forks).
_LIMITED_MAIN = (
    "import resource, runpy, sys; "
    "resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30)); "
    "sys.argv = ['checkpoint-doctor', *sys.argv[1:]]; "
    "runpy.run_module('checkpoint_doctor', run_name='__main__')"
)


def _limited(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The CLI in a child with 2 GB of address space: an unbounded range fails it, not the suite."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-c", _LIMITED_MAIN, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def _sink_txn(tmp_path: Path, version: int) -> Path:
    job = _job(tmp_path, SINK)
    _append(2, f'{{"txn":{{"appId":"{_query_id(SINK)}","version":{version}}}}}', keep_crc=False)(
        job / "sink" / "_delta_log"
    )
    return job


def test_a_sink_txn_version_of_10_12_is_a_range_in_the_finding_and_no_plan(tmp_path: Path) -> None:
    job = _sink_txn(tmp_path, 10**12)
    plan = tmp_path / "plan.json"
    done = _limited(
        ["plan", str(job / "checkpoint"), "--accept-data-loss", "-o", str(plan), "--format", "json", *QUIET]
    )
    assert done.returncode == 0, done.stderr[-2000:]  # a warning only (CD407), no repair planned
    doc = json.loads(done.stdout)
    text = json.dumps(doc)
    assert "batch ids 1..1000000000000 again" in text and "1000000000000 batch(es) are not written" in text
    assert f"a plan holds {MAX_OPTION_STEPS} at most" in text
    assert not plan.exists()


def test_a_sink_finding_lists_a_bounded_number_of_batch_ids(tmp_path: Path) -> None:
    job = _sink_txn(tmp_path, 10**12)
    done = _limited(["diagnose", str(job / "checkpoint"), "--format", "json", *QUIET])
    assert done.returncode == 1, done.stderr[-2000:]
    (finding,) = [f for f in json.loads(done.stdout)["result"]["findings"] if f["code"] == "CD407"]
    assert finding["batch_ids"] == list(range(1, MAX_LISTED + 1))


def test_a_sink_txn_version_of_10_5_makes_no_plan_apply_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _sink_txn(tmp_path, 10**5)
    plan = tmp_path / "plan.json"
    code, out = _run(["plan", str(job / "checkpoint"), "--accept-data-loss", "-o", str(plan), *QUIET], capsys)
    assert code == 0 and not plan.exists(), out[-2000:]
    assert "it takes 200000 file changes, a plan holds 10000 at most" in " ".join(out.split())


def test_a_stray_checkpoint_named_near_long_max_plans_in_bounded_memory(tmp_path: Path) -> None:
    """With its checksum beside it, the log reaches version 9223372036854775806 by its listing, so
    the source's versions from 4 on are 'gone' (CD209): their span is a range in the finding and the
    plan, never a list (it was a MemoryError)."""
    job = _job(tmp_path, STATELESS)
    log = job / "source" / "_delta_log"
    (log / "09223372036854775806.checkpoint.parquet").write_bytes(b"PAR1")
    shutil.copy(log / f"{4:020d}.crc", log / "09223372036854775806.crc")
    done = _limited(["plan", str(job / "checkpoint"), "--accept-data-loss", "--format", "json", *QUIET])
    assert done.returncode in (0, 1, 4), done.stderr[-2000:]
    text = json.dumps(json.loads(done.stdout))
    assert "versions 4..9223372036854775806 skipped (9223372036854775803 version(s)" in text


# -------------------------------------------------------- item 10 and 13: what delta-rs is given


def _cleaned_without_checksums(tmp_path: Path) -> Path:
    """The cleaned-up table with no checksum: its id is in the Parquet checkpoint, read by delta-rs."""
    pytest.importorskip("deltalake")
    job = _job(tmp_path, CLEANED)
    for crc in (job / "source" / "_delta_log").glob("*.crc"):
        crc.unlink()
    return job


def test_a_fifo_as_last_checkpoint_never_reaches_delta_rs(tmp_path: Path) -> None:
    job = _cleaned_without_checksums(tmp_path)
    hint = job / "source" / "_delta_log" / "_last_checkpoint"
    hint.unlink()
    os.mkfifo(hint)
    done = _limited(["diagnose", str(job / "checkpoint"), "--format", "json", *QUIET], timeout=60)
    result = json.loads(done.stdout)["result"]
    (unread,) = result["delta_pairing"]["unread"]
    assert f"{hint} is not a regular file" in unread["reason"]
    # A finding on the table (it was exit 0): a warning, its id unread (its log starts at version 6,
    # no first commit names it), so it only lies beside the checkpoint.
    assert [(f["code"], f["severity"], f["paths"]) for f in result["findings"]] == [
        ("CD215", "warning", [str(job / "source")])
    ]
    assert done.returncode == 1, done.stderr[-2000:]


def test_a_link_to_a_fifo_among_the_commits_never_reaches_delta_rs(tmp_path: Path) -> None:
    job = _cleaned_without_checksums(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (job / "source" / "_delta_log" / f"{7:020d}.json").symlink_to(fifo)
    done = _limited(["diagnose", str(job / "checkpoint"), "--format", "json", *QUIET], timeout=60)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "is not a regular file" in done.stdout and '"code": "CD215"' in done.stdout


@pytest.mark.parametrize("hint", ['{"version":99,"size":6}', "{garbage", ""])
def test_a_broken_last_checkpoint_leaves_the_cd209_error(
    hint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """delta-spark lists the log again when its hint names no checkpoint (SnapshotManagement), so the
    restart still fails on the cleaned-up versions: exit 4, not 0."""
    job = _cleaned_without_checksums(tmp_path)
    (job / "source" / "_delta_log" / "_last_checkpoint").write_text(hint, encoding="utf-8")
    code, out = _run(["diagnose", str(job / "checkpoint"), *QUIET], capsys)
    assert code == 4 and "CD209" in out, out[-3000:]
