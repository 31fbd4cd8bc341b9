"""Spark's own word (issue 34): the checkpoints and logs in Spark's published test jars, held to what
Spark's suites assert about each.

Each jar (spark-sql 3.5.9, 4.0.4, 4.1.3, 4.2.0 and its Kafka connector's, classifier ``tests``) carries
``structured-streaming/...`` resources that its suites decode or restart. Three kinds of check:

* every checkpoint in every jar is inspected and diagnosed as a new user would (no flags): a result,
  never an exception (``test_every_checkpoint_reads``);
* decoded facts: what OffsetSeqLogSuite, CommitLogSuite, FileStreamSinkLogSuite,
  FileStreamSourceSuite, KafkaMicroBatchSourceSuite and KafkaSourceOffsetSuite assert a file holds
  (``DECODED``);
* the restart verdict where a suite restarts that very checkpoint with the query that wrote it
  (``RESTARTS``): the jar of Spark X asserts what X does, so the cell of X's line is held to it, in
  the suite's mode. Where the suite and the tool differ, ``NOT_JUDGED`` says why the suite does not
  apply to a judgement made without the query.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import checkpoint_doctor as cd
from checkpoint_doctor.diagnosis.detect import detect_writer
from checkpoint_doctor.diagnosis.matrix import writer_lines
from checkpoint_doctor.errors import CheckpointParseError
from checkpoint_doctor.model import FileSourceOffset, KafkaOffset, LongOffset
from checkpoint_doctor.parsing.commits import parse_commit
from checkpoint_doctor.parsing.compactible import parse_sink_log, parse_source_metadata
from checkpoint_doctor.parsing.offsets import parse_offsets
from checkpoint_doctor.parsing.source_offsets import decode_offset
from tests.spark_test_jars.conftest import LINE_OF_JAR

#: A fixed clock: no verdict here depends on the age of a file.
NOW_MS = 2_000_000_000_000
SS = "structured-streaming"


def checkpoints(resources: Path) -> list[Path]:
    """Every checkpoint root in a jar's resources (a directory holding ``offsets/``)."""
    return sorted(p.parent for p in resources.rglob("offsets") if p.is_dir())


def _read(path: Path) -> bytes:
    return path.read_bytes()


# ------------------------------------------------------------------------------ decoded facts


def _offset_log_2_1_0(r: Path) -> Any:
    seq = parse_offsets(_read(r / SS / "offset-log-version-2.1.0" / "0"), path="0")
    md = seq.metadata
    assert md is not None
    return (
        seq.version,
        md.batch_watermark_ms,
        md.batch_timestamp_ms,
        md.has_conf,
        [s.raw for s in seq.sources],
        [s.decoded for s in seq.sources],
    )


def _commit(name: str) -> Callable[[Path], Any]:
    def read(r: Path) -> Any:
        rec = parse_commit(_read(r / SS / name / "testCommitLog"), path="testCommitLog")
        return rec.version, rec.next_batch_watermark_ms, rec.state_unique_ids

    return read


def _sink_log_2_1_0(r: Path) -> Any:
    folder = r / SS / "file-sink-log-version-2.1.0"
    out = []
    for name in ("7.compact", "8", "9"):
        batch = parse_sink_log(_read(folder / name), path=name)
        out += [(e.path, e.size, e.modification_time_ms, e.action) for e in batch.entries]
    return out


def _source_log_2_1_0(r: Path) -> Any:
    folder = r / SS / "file-source-log-version-2.1.0"
    out = []
    for name in ("2.compact", "3", "4"):
        record = parse_source_metadata(_read(folder / name), path=name)
        out += [(e.path, e.timestamp_ms, e.batch_id) for e in record.entries]  # type: ignore[union-attr]
    return out


def _text(r: Path, name: str) -> str:
    return (r / name).read_text(encoding="utf-8").strip()


def _future_kafka_initial(r: Path) -> Any:
    with pytest.raises(CheckpointParseError) as raised:
        parse_source_metadata(_read(r / "kafka-source-initial-offset-future-version.bin"), path="0")
    return "v99999" in str(raised.value)


def _offset_map(r: Path) -> Any:
    out = []
    for n in range(4):
        seq = parse_offsets(_read(r / SS / "offset-map" / str(n)), path=str(n))
        out.append((seq.version, [(s.name, s.raw) for s in seq.sources]))
    return out


@dataclass(frozen=True)
class Decoded:
    """A suite's assertion about what a resource decodes to."""

    resource: str
    suite: str
    read: Callable[[Path], Any]
    expect: Any


_SINK_2_1_0 = [(f"/a/b/{i}", 1 if i == 0 else i * 100, 1 if i == 0 else i * 100, "add") for i in range(10)]

DECODED = (
    Decoded(
        "offset-log-version-2.1.0",
        'OffsetSeqLogSuite "read Spark 2.1.0 log format"',
        _offset_log_2_1_0,
        (
            1,
            0,
            1480981499528,
            False,
            ['{"logOffset":345}', '{"topic-0":{"0":1}}'],
            [FileSourceOffset(345), KafkaOffset((("topic-0", 0, 1),))],
        ),
    ),
    Decoded(
        "testCommitLogV1",
        'CommitLogSuite "Basic Commit Log V1 SerDe"',
        _commit("testCommitLogV1"),
        (1, 1, None),
    ),
    Decoded(
        "testCommitLogV2",
        'CommitLogSuite "Basic Commit Log V2 SerDe"',
        _commit("testCommitLogV2"),
        (
            2,
            0,
            (
                (0, (("unique_id1", "unique_id2"), ("unique_id3", "unique_id4"))),
                (1, (("unique_id5", "unique_id6"), ("unique_id7", "unique_id8"))),
            ),
        ),
    ),
    Decoded(
        "testCommitLogV2-empty-unique-id",
        'CommitLogSuite "Commit Log V2 SerDe with empty unique ids"',
        _commit("testCommitLogV2-empty-unique-id"),
        (2, 0, ()),
    ),
    Decoded(
        "file-sink-log-version-2.1.0",
        'FileStreamSinkLogSuite "read Spark 2.1.0 log format"',
        _sink_log_2_1_0,
        _SINK_2_1_0,
    ),
    Decoded(
        "file-source-log-version-2.1.0",
        'FileStreamSourceSuite "read Spark 2.1.0 log format"',
        _source_log_2_1_0,
        [
            ("/a/b/0", 1480730949000, 0),
            ("/a/b/1", 1480730950000, 1),
            ("/a/b/2", 1480730950000, 2),
            ("/a/b/3", 1480730950000, 3),
            ("/a/b/4", 1480730951000, 4),
        ],
    ),
    Decoded(
        "file-source-offset-version-2.1.0-json.txt",
        'FileStreamSourceSuite "FileStreamSourceOffset read Spark 2.1.0 offset json format"',
        lambda r: decode_offset(_text(r, f"{SS}/file-source-offset-version-2.1.0-json.txt")),
        FileSourceOffset(345),
    ),
    Decoded(
        "file-source-offset-version-2.1.0-long.txt",
        'FileStreamSourceSuite "FileStreamSourceOffset read Spark 2.1.0 offset long format"',
        lambda r: decode_offset(_text(r, f"{SS}/file-source-offset-version-2.1.0-long.txt")),
        LongOffset(345),
    ),
    Decoded(
        "kafka-source-initial-offset-version-2.1.0.bin",
        'KafkaMicroBatchSourceSuite "deserialization of initial offset written by Spark 2.1.0"',
        lambda r: (
            parse_source_metadata(  # type: ignore[union-attr]
                _read(r / "kafka-source-initial-offset-version-2.1.0.bin"), path="0"
            ).offset
        ),
        KafkaOffset(tuple(("kafka-initial-offset-2-1-0", p, p) for p in range(3))),
    ),
    Decoded(
        "kafka-source-initial-offset-future-version.bin",
        'KafkaMicroBatchSourceSuite "deserialization of initial offset written by future version"',
        _future_kafka_initial,
        True,
    ),
    Decoded(
        "kafka-source-offset-version-2.1.0.txt",
        'KafkaSourceOffsetSuite "read Spark 2.1.0 offset format"',
        lambda r: decode_offset(_text(r, "kafka-source-offset-version-2.1.0.txt")),
        KafkaOffset((("topic1", 0, 456), ("topic1", 1, 789), ("topic2", 0, 0))),
    ),
    Decoded(
        "offset-map",
        "OffsetSeqLog v2 (OffsetMap: a named source per line)",
        _offset_map,
        [(2, [("0", str(n))]) for n in range(4)],
    ),
)


def _present(resources: Path, resource: str) -> bool:
    return (resources / SS / resource).exists() or (resources / resource).exists()


@pytest.mark.parametrize("case", DECODED, ids=lambda c: c.resource)
def test_a_resource_decodes_to_what_sparks_suite_asserts(
    spark_resources: dict[str, Path], case: Decoded
) -> None:
    held = [v for v, r in spark_resources.items() if _present(r, case.resource)]
    assert held, f"{case.resource} is in none of the test jars"
    for version in held:
        assert case.read(spark_resources[version]) == case.expect, (
            f"{case.suite} in Spark {version}'s test jar"
        )


# ------------------------------------------------------------------------------ restarts


@dataclass(frozen=True)
class Restart:
    """A suite restarts this checkpoint with the query that wrote it; what that line does."""

    resource: str
    suite: str
    summary: str = "STARTS"
    mode: str = "micro-batch"
    stateful: bool | None = None


RESTARTS = (
    # 10 shuffle partitions, as written (only 15 fails: the state has 10 partitions).
    Restart(
        "checkpoint-version-2.1.0",
        'StreamSuite "recover from a Spark v2.1 checkpoint"',
        "STARTS re-runs batch 1",
    ),
    Restart(
        "checkpoint-version-2.3.1-flatMapGroupsWithState-state-format-1",
        'FlatMapGroupsWithStateSuite "flatMapGroupsWithState - recovery from checkpoint uses state format version 1"',
    ),
    Restart(
        "checkpoint-version-2.3.1-streaming-aggregate-state-format-1",
        'StreamingAggregationSuite "recovery from checkpoint uses state format version 1"',
    ),
    Restart(
        "checkpoint-version-2.3.1-without-commit-log-metadata",
        'EventTimeWatermarkSuite "recovery from Spark ver 2.3.1 commit log without commit metadata (SPARK-24699)"',
    ),
    Restart(
        "checkpoint-version-2.3.1-for-multi-watermark-policy",
        'StreamingQuerySuite "SPARK-24699 ... multiple watermark policy" (restart with the policy the offsets pin)',
    ),
    Restart(
        "checkpoint-version-2.4.0-streaming-join",
        'StreamingOuterJoinSuite "SPARK-26187 restore the stream-stream outer join query from Spark 2.4"',
    ),
    Restart(
        "checkpoint-version-2.4.5-for-compatibility-test-common-functions",
        'StreamingStateStoreFormatCompatibilitySuite "common functions"',
    ),
    Restart(
        "checkpoint-version-2.4.5-for-compatibility-test-statistical-functions",
        'StreamingStateStoreFormatCompatibilitySuite "statistical functions"',
    ),
    Restart(
        "checkpoint-version-2.4.5-for-compatibility-test-deduplicate",
        'StreamingStateStoreFormatCompatibilitySuite "deduplicate with all columns"',
    ),
    Restart(
        "checkpoint-version-3.0.0-streaming-statestore-codec",
        'StateStoreCompatibilitySuite "SPARK-33263: Recovery from checkpoint before codec config introduced"',
    ),
    Restart(
        "checkpoint-version-3.1.0-flatmapgroupswithstate-repartition",
        "FlatMapGroupsWithStateDistributionSuite (SPARK-38204: restore with the 3.1 partitioning)",
    ),
    Restart(
        "checkpoint-version-3.2.0-deduplication-with-repartition",
        "StreamingDeduplicationDistributionSuite (SPARK-38204)",
    ),
    Restart(
        "checkpoint-version-3.2.0-flatmapgroupswithstate1-repartition",
        "FlatMapGroupsWithStateDistributionSuite (SPARK-38204, state format 1)",
    ),
    Restart(
        "checkpoint-version-3.2.0-flatmapgroupswithstate2-repartition",
        "FlatMapGroupsWithStateDistributionSuite (SPARK-38204, state format 2)",
    ),
    Restart(
        "checkpoint-version-3.2.0-session-window-with-repartition",
        "StreamingSessionWindowDistributionSuite (SPARK-38204)",
    ),
    Restart(
        "checkpoint-version-3.2.0-streaming-aggregate-with-repartition",
        "StreamingAggregationDistributionSuite (SPARK-38204)",
    ),
    Restart(
        "checkpoint-version-3.3.0-streaming-deduplication",
        'StreamingDeduplicationSuite "SPARK-39650: recovery from checkpoint having all columns as value schema"',
    ),
    Restart(
        "checkpoint-version-3.5.1-streaming-deduplication",
        'StreamingDeduplicationWithinWatermarkSuite "SPARK-47305 ... recovery from 3.5.1 checkpoint"',
    ),
    Restart(
        "checkpoint-version-3.5.1-streaming-join",
        'StreamingJoinSuite "SPARK-47305 ... restore from 3.5.1 checkpoint"',
    ),
    Restart(
        "checkpoint-version-2.4.3-kafka-include-headers-default",
        'KafkaMicroBatchSourceSuite "SPARK-29054 ... includeHeaders default from a 2.4.3 checkpoint"',
    ),
    # The suite restarts it with async progress tracking on (checkpointing interval 0) and gets 3, 4:
    # batch 4 re-run from offsets/2, the gap at 3 being what async tracking leaves.
    Restart(
        "checkpoint-test-offsetId-commitId-inconsistent",
        'AsyncProgressTrackingMicroBatchExecutionSuite "test gaps in offset log"',
        "STARTS re-runs batch 4",
        mode="async",
        stateful=False,
    ),
    Restart(
        "checkpoint-version-4.0.0-tws-avro",
        "TransformWithStateSuite (restart of the 4.0.0 Avro-encoded checkpoint)",
    ),
    Restart(
        "checkpoint-version-4.0.0-tws-unsaferow",
        "TransformWithStateSuite (restart of the 4.0.0 UnsafeRow-encoded checkpoint)",
    ),
)

#: Suites whose restart outcome hangs on the restarting query itself, which nothing in the checkpoint
#: names: the tool judges without the query (``diagnose`` with no ``--job``), so the suite does not
#: apply to that judgement. Held to the tool's answer so a change is seen.
NOT_JUDGED = {
    "checkpoint-version-2.4.5-for-compatibility-test-sum-decimal": (
        'StreamingStateStoreFormatCompatibilitySuite "SPARK-28067 changed the sum decimal unsafe row format" '
        "expects a row format validation failure in the tasks: since SPARK-28067 a decimal sum's buffer "
        "has an isEmpty field that the 2.4.5 rows lack. The checkpoint has no state schema file (3.1+) and "
        "the buffer's layout is the query's, so only a restart with --job could see it.",
        "STARTS",
    ),
}


def _cell(resources: Path, case: Restart, line: str) -> dict[str, Any]:
    matrix = cd.diagnose(
        str(resources / SS / case.resource),
        spark=[line],
        mode=[case.mode],
        stateful=case.stateful,
        now_ms=NOW_MS,
    )
    (cell,) = matrix.to_dict()["matrix"]
    return cell


@pytest.mark.parametrize("case", RESTARTS, ids=lambda c: c.resource)
def test_a_restart_a_suite_makes_is_predicted_as_the_suite_asserts(
    spark_resources: dict[str, Path], case: Restart
) -> None:
    held = [v for v, r in spark_resources.items() if (r / SS / case.resource).is_dir()]
    assert held, f"{case.resource} is in none of the test jars"
    for version in held:
        cell = _cell(spark_resources[version], case, LINE_OF_JAR[version])
        assert cell["summary"].startswith(case.summary), f"{case.suite} on Spark {version}: {cell['summary']}"


@pytest.mark.parametrize("resource", sorted(NOT_JUDGED))
def test_a_suite_that_needs_the_query_is_noted_with_the_tools_answer(
    spark_resources: dict[str, Path], resource: str
) -> None:
    _why, summary = NOT_JUDGED[resource]
    held = [v for v, r in spark_resources.items() if (r / SS / resource).is_dir()]
    assert held
    for version in held:
        cell = _cell(spark_resources[version], Restart(resource, ""), LINE_OF_JAR[version])
        assert cell["summary"].startswith(summary)


# ------------------------------------------------------------------------------ every checkpoint


@pytest.mark.parametrize("version", sorted(LINE_OF_JAR))
def test_every_checkpoint_reads(spark_resources: dict[str, Path], version: str) -> None:
    """inspect and diagnose (no flags) give a result for every checkpoint of a jar, and diagnose's
    JSON names a verdict for every cell."""
    found = checkpoints(spark_resources[version])
    assert len(found) >= 20, found
    for root in found:
        inspected = cd.inspect(str(root)).to_dict()
        assert inspected["written_by"]["spark"], root
        doc = cd.diagnose(str(root), now_ms=NOW_MS).to_dict()
        assert doc["matrix"] and all(c["outcome"] in ("starts", "fails") for c in doc["matrix"]), root


def test_the_command_line_says_what_the_api_says_of_every_checkpoint(
    spark_resources: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """As a new user runs them (no flags): each exit code is a defined one, nothing is written to
    stderr, and diagnose's JSON matrix is the API's."""
    import json

    from checkpoint_doctor.exit_codes import ExitCode
    from tests.scenarios import run_cli

    for root in checkpoints(spark_resources["4.2.0"]):
        code, out, err = run_cli(capsys, "inspect", str(root))
        assert code == ExitCode.OK and err == "" and out.startswith("Checkpoint"), (root, err)
        code, out, err = run_cli(capsys, "diagnose", str(root), "--format", "json", "--live-window", "0")
        assert code in set(ExitCode) and "Traceback" not in err, (root, err)
        cli = [(c["spark"], c["mode"], c["summary"]) for c in json.loads(out)["result"]["matrix"]]
        api = cd.diagnose(str(root), live_window_s=0).to_dict()["matrix"]
        assert cli == [(c["spark"], c["mode"], c["summary"]) for c in api], root


# ------------------------------------------------------------------------------ issue 34's items


def _golden(resources: Path) -> list[Path]:
    return sorted(p for p in (resources / SS / "checkpoint-version-4.0.0").glob("*/*") if p.is_dir())


def test_item1_a_spark_2_1_checkpoint_restarts_on_every_line(spark_resources: dict[str, Path]) -> None:
    """StreamSuite restarts checkpoint-version-2.1.0 (offsets without any conf) and it works: the
    legacy state formats Spark falls back to are the ones Spark 2.1 wrote."""
    doc = cd.diagnose(
        str(spark_resources["4.2.0"] / SS / "checkpoint-version-2.1.0"), now_ms=NOW_MS
    ).to_dict()
    assert {c["spark"]: c["summary"] for c in doc["matrix"]} == dict.fromkeys(
        ("3.5", "4.0", "4.1", "4.2", "4.3"), "STARTS re-runs batch 1"
    )
    assert "CD011" not in {f["code"] for f in doc["findings"]}


def test_item2_which_spark_wrote_it_is_one_answer(spark_resources: dict[str, Path]) -> None:
    """The 2.1 checkpoint reads as 2.1 or older; the 4.0.0 golden files (a 4.0 build pinning 3.5's
    conf keys, with 4.0's operator metadata) never read as "3.5.x or older" alone, and the lines
    counted as the writer's include 4.0."""
    resources = spark_resources["4.2.0"]
    old = detect_writer(cd.load(str(resources / SS / "checkpoint-version-2.1.0")))
    assert old.label == "2.1.x or older"
    golden = _golden(resources)
    assert len(golden) == 10
    for root in golden:
        writer = detect_writer(cd.load(str(root)))
        assert writer.minimum == "4.0"
        assert writer.label.startswith("4.0.x or 4.1.x"), (root, writer.label)
        assert "4.0" in writer_lines(writer)


def test_item3_a_global_limit_keeps_state_in_partition_0_only(spark_resources: dict[str, Path]) -> None:
    """StreamingGlobalLimitExec requires AllTuples: its state is state/0/0 alone, whatever the pinned
    shuffle partitions (5 here). No CD304, and the next batch starts on every line that reads it."""
    resources = spark_resources["4.2.0"]
    roots = [
        resources / SS / "checkpoint-version-4.0.0" / "hdfs" / "limit",
        resources / SS / "checkpoint-version-4.0.0" / "rocksdb" / "limit",
        resources / SS / "checkpoint-version-4.0.0-checkpoint-v2" / "rocksdb" / "limit",
    ]
    for root in roots:
        doc = cd.diagnose(str(root), spark=["4.0", "4.2"], now_ms=NOW_MS).to_dict()
        assert "CD304" not in {f["code"] for f in doc["findings"]}, root
        assert [c["summary"] for c in doc["matrix"]] == ["STARTS new batch 4"] * 2, root


def test_the_jars_are_resolved_once_and_hold_only_streaming_resources(
    spark_resources: dict[str, Path],
) -> None:
    """A resolved set is not resolved again (its marker names the coordinates), and the extraction
    keeps the streaming resources alone: no class file, nothing outside them."""
    import jars

    for version, resources in spark_resources.items():
        folder = resources.parent
        marker = (folder / jars.MARKER).read_text(encoding="utf-8")
        scala, kafka = jars.TEST_JARS_FOR[version]
        assert marker == f"kafka.version={kafka}\nscala.binary={scala}\nspark.version={version}\n"
        assert jars.ensure_spark_tests(version) == folder
        tops = {p.name for p in resources.iterdir()}
        assert SS in tops and tops <= {SS} | {p for p in tops if p.startswith("kafka-source-")}
        assert not any(resources.rglob("*.class"))


def test_extraction_keeps_empty_directories_and_nothing_outside_the_resources(tmp_path: Path) -> None:
    """A jar keeps empty directories a checkpoint's meaning depends on (an empty commits/); a member
    outside the streaming resources, or one climbing out with '..', is not written."""
    import zipfile

    import jars

    with zipfile.ZipFile(tmp_path / "x-tests.jar", "w") as jar:
        jar.writestr("structured-streaming/cp/commits/", "")
        jar.writestr("structured-streaming/cp/offsets/0", "v1\n{}\n")
        jar.writestr("structured-streaming/../../escaped", "no")
        jar.writestr("org/apache/Some.class", "no")
        jar.writestr("kafka-source-offset.txt", "{}")
    jars._extract_resources(tmp_path)
    out = tmp_path / jars.RESOURCES
    assert (out / SS / "cp" / "commits").is_dir() and not any((out / SS / "cp" / "commits").iterdir())
    assert (out / SS / "cp" / "offsets" / "0").read_text() == "v1\n{}\n"
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == [
        "resources/kafka-source-offset.txt",
        f"resources/{SS}/cp/offsets/0",
        "x-tests.jar",
    ]
