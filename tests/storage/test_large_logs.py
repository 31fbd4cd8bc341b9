"""A checkpoint's own log files far larger than any real log are read in bounded memory (issue 31
item 12): 40 sparse, NUL-filled 63 MB files of ``offsets/``, ``commits/``, ``sources/0/`` and the
sink's ``_spark_metadata/`` took main 254 s and 3.3 GB for ``diagnose`` (every file read whole at
once, then each 63-million-character line trimmed and quoted whole). Spark fails on such a file at
its first line (``HDFSMetadataLog.validateVersion``), so the tool reads each one's head only and
says what Spark says."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

from checkpoint_doctor.parsing.text import FOUND_CHARS
from checkpoint_doctor.reading import pipeline
from checkpoint_doctor.reading.pipeline import judge_head
from checkpoint_doctor.reading.snapshot import FileHead

ROOT = Path(__file__).resolve().parents[2]
QUERY = ROOT / "fixtures" / "spark-4.3.0" / "file_to_file"  # 12 batches, a file source, a file sink
SIZE = 63 * 2**20

#: The CLI in a child that limits its own address space first (no preexec_fn: the test process
#: may hold threads when it forks).
_LIMITED_MAIN = (
    "import resource, runpy, sys; "
    "resource.setrlimit(resource.RLIMIT_AS, (1 * 2**30, 1 * 2**30)); "
    "sys.argv = ['checkpoint-doctor', *sys.argv[1:]]; "
    "runpy.run_module('checkpoint_doctor', run_name='__main__')"
)


def _limited(args: list[str]) -> subprocess.CompletedProcess[str]:
    """The CLI with 1 GiB of address space (main needed 3.3 GB) and a minute (main took 254 s)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-c", _LIMITED_MAIN, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def _sparse_query(
    tmp_path: Path, count: int = 40, *, empty: bool = True, size: int = SIZE
) -> tuple[Path, Path]:
    """A copy of the query whose ``count`` newest log files are grown to 63 MB of NULs, emptied
    first when ``empty`` (``truncate -s 0; truncate -s 63M``: sparse, no disk used), their checksums
    gone with them."""
    shutil.copytree(QUERY / "checkpoint", tmp_path / "checkpoint")
    shutil.copytree(QUERY / "sink", tmp_path / "sink")
    logs = [
        tmp_path / "checkpoint" / "offsets",
        tmp_path / "checkpoint" / "commits",
        tmp_path / "checkpoint" / "sources" / "0",
        tmp_path / "sink" / "_spark_metadata",
    ]
    files = sorted(
        (f for d in logs for f in d.iterdir() if not f.name.startswith(".")),
        key=lambda f: -int(f.name.split(".")[0]),
    )
    assert len(files) >= count
    for f in files[:count]:
        with f.open("r+b") as out:
            if empty:
                out.truncate(0)
            out.truncate(size)
        crc = f.with_name(f".{f.name}.crc")
        if crc.exists():
            crc.unlink()
    return tmp_path / "checkpoint", tmp_path / "sink"


def test_forty_sparse_nul_filled_logs_are_judged_in_bounded_memory_as_spark_fails(tmp_path: Path) -> None:
    checkpoint, sink = _sparse_query(tmp_path)
    for deep in ([], ["--deep"]):
        run = _limited(["diagnose", str(checkpoint), "--sink-path", str(sink), "--format", "json", *deep])
        assert run.returncode == 4, run.stderr[-2000:]
        result = json.loads(run.stdout)["result"]
        # Spark reads offsets/ newest first (HDFSMetadataLog.getLatest -> get -> OffsetSeqLog.deserialize)
        # and fails at its first line, a line of NULs (validateVersion: no leading 'v'), on every line;
        # 4.0 and later with the error class. The message quotes the line: its first FOUND_CHARS here.
        found = "\x00" * FOUND_CHARS + "..."
        cells = result["matrix"]
        assert {c["spark"] for c in cells} == {"3.5", "4.0", "4.1", "4.2", "4.3"}
        for cell in cells:
            assert cell["outcome"] == "fails"
            error = cell["error"]
            text = f"Log file was malformed: failed to read correct log version from {found}."
            if cell["spark"] == "3.5":
                assert error["message"] == f"Failed to read log file <cp>/offsets/11. {text}"
            else:
                assert error["error_class"] == "MALFORMED_LOG_FILE"
                assert error["message"] == (
                    f"Failed to read log file <cp>/offsets/11. [MALFORMED_LOG_FILE] {text} SQLSTATE: KD002"
                )
        codes = {f["code"]: f for f in result["findings"]}
        assert codes["CD003"]["paths"] == ["offsets/11"]
        assert codes["CD004"]["details"] == {"kind": "malformed-header", "size": SIZE, "committed": True}


def _verdict(run: subprocess.CompletedProcess[str], root: Path) -> str:
    """The JSON result without what names the copy (its path) or quotes a source offset's text."""
    assert run.returncode < 8, run.stderr[-2000:]
    result = json.loads(run.stdout)["result"]
    text = json.dumps(result, sort_keys=True).replace(str(root), "<root>")
    return "\n".join(line for line in text.split(", ") if '"raw": ' not in line)


def test_forty_logs_padded_with_nuls_are_read_in_bounded_memory_and_judged_as_unpadded(
    tmp_path: Path,
) -> None:
    """Valid files grown sparse to 63 MB (``truncate -s 63M``): Spark reads each whole and parses
    what it needs, the NULs after the last JSON value ignored by Jackson (main: 1.6 GB for diagnose,
    3.9 GB with --deep; the tool now keeps 1025 NULs of each run)."""
    checkpoint, sink = _sparse_query(tmp_path / "padded", empty=False)
    # The same files padded by a few hundred NULs only: read whole, as main read every file.
    few = _sparse_query(tmp_path / "plain", empty=False, size=8 * 2**10)
    # Without --deep (which reads every file: the same path, 4 times the seconds on a loaded box).
    for deep in ([],):
        args = ["diagnose", "--format", "json", "--live-window", "0", *deep]
        padded = _limited([*args, str(checkpoint), "--sink-path", str(sink)])
        plain = _limited([*args, str(few[0]), "--sink-path", str(few[1])])
        assert padded.returncode == plain.returncode
        assert _verdict(padded, tmp_path / "padded") == _verdict(plain, tmp_path / "plain")


def test_a_repair_never_takes_an_abridged_file_for_its_content() -> None:
    from checkpoint_doctor.reading.pipeline import KEPT_NULS, abridge_nuls
    from checkpoint_doctor.reading.snapshot import whole_content

    short = abridge_nuls(b"v1\n{}" + b"\x00" * 1000, 1005)
    assert type(short) is bytes and whole_content({"offsets/1": short}, "offsets/1") == short
    cut = abridge_nuls(b"v1\n{}" + b"\x00" * 5000, 5005)
    assert isinstance(cut, FileHead) and cut == b"v1\n{}" + b"\x00" * KEPT_NULS and cut.size == 5005
    assert whole_content({"offsets/1": cut}, "offsets/1") is None


def test_a_large_log_is_read_whole_when_its_first_line_may_be_valid() -> None:
    # A valid version line, or 'v' then digits to the head's end (Integer.parseInt reads
    # "v0000...01" as 1): Spark reads on, so the tool reads the whole file as Spark does.
    assert judge_head(b"v1\n" + b"\x00" * 100) is None
    assert judge_head(b"v" + b"0" * 1000) is None
    assert judge_head(b"v+0001") is None
    assert judge_head(b"v99\n{}") is None  # too new: Spark's other error, from the whole file
    # Not a version line, however long the line is: its head is the verdict.
    assert judge_head(b"\x00" * 1000) == b"\x00" * 1000
    assert judge_head(b"v1x" + b"\x00" * 10) == b"v1x" + b"\x00" * 10
    assert judge_head(b"vv1\n" + b"\x00" * 10) == b"vv1\n"
    # An empty first line is a line (Spark: malformed), not an empty file (Incomplete log file).
    assert judge_head(b"\n" + b"\x00" * 10) == b"\n"
    # CommitLog trims the line first: blanks and NULs to the head's end may still precede v1.
    assert judge_head(b" v1\n{}", trims=True) is None
    assert judge_head(b"\x00" * 100, trims=True) is None
    assert judge_head(b"\x00" * 100 + b"x", trims=True) == b"\x00" * 100 + b"x"
    assert judge_head(b" v1\n{}") == b" v1\n"
    assert judge_head(b'{"a": 1}') == b'{"a": 1}'
    # A head cut inside a character keeps the whole ones; bytes that are no UTF-8 are Spark's
    # decoder's failure (MalformedInputException), judged from the whole file.
    assert judge_head("x\u00e9".encode()[:-1]) == b"x"
    assert judge_head(b"\xac\xed\x00\x05") is None


def test_a_file_head_keeps_its_size_across_processes() -> None:
    head = FileHead(b"\x00\x00", 66060288)
    back = pickle.loads(pickle.dumps(head))
    assert type(back) is FileHead and back == b"\x00\x00" and back.size == 66060288


def test_large_files_read_whole_are_held_a_batch_at_a_time(tmp_path: Path, monkeypatch) -> None:
    """Whole reads are grouped so one request holds at most BATCH_BYTES listed (each in the budget)."""
    from checkpoint_doctor.reading.storage import open_storage

    for i in range(6):
        (tmp_path / f"f{i}").write_bytes(b"v1\n" + b"x" * 100)
    store = open_storage(str(tmp_path))
    calls: list[list[str]] = []
    real = store.read_many

    def spy(rels, **kw):  # type: ignore[no-untyped-def]
        calls.append(list(rels))
        return real(rels, **kw)

    monkeypatch.setattr(store, "read_many", spy)
    monkeypatch.setattr(pipeline, "BATCH_BYTES", 250)
    sizes = {f"f{i}": 103 for i in range(6)}
    got = pipeline._read_whole(store, [f"f{i}" for i in range(6)], sizes)
    assert calls == [["f0", "f1"], ["f2", "f3"], ["f4", "f5"]]
    assert sorted(got) == [f"f{i}" for i in range(6)]


def test_an_audits_workers_hold_their_reads_in_one_budget(tmp_path: Path) -> None:
    """Four checkpoints, each with 12 log files padded to 63 MB, audited by four workers: main held
    every file of every checkpoint at once (2.7 GB resident); the workers now share the budget."""
    for i in range(4):
        query = tmp_path / f"query-{i}"
        query.mkdir()
        _sparse_query(query, 12, empty=False)
    run = _limited(["audit", str(tmp_path), "--jobs", "4", "--format", "jsonl", "--live-window", "0"])
    assert run.returncode == 0, run.stderr[-2000:]
    records = [json.loads(line) for line in run.stdout.splitlines()]
    checkpoints = sorted(r["path"] for r in records if r["kind"] == "checkpoint")
    assert checkpoints == [f"query-{i}/checkpoint" for i in range(4)]
    assert {r["verdict"] for r in records if r["kind"] == "checkpoint"} == {"ok"}
