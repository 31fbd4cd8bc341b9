#!/usr/bin/env python3
"""Resolve (once) the JVM jars the Kafka and Delta work needs, with Maven, from the poms under ``maven/``.

Stdlib only; needs ``mvn`` and a JDK on PATH. Three kinds of jar set:

- ``spark-kafka <pyspark version>``: Spark's Kafka connector ``spark-sql-kafka-0-10_<scala>`` for
  that PySpark line, with its dependencies (``maven/spark-sql-kafka/pom.xml``). Handed to Spark
  with ``spark.jars``, never with Spark's own ``--packages`` resolver.
- ``kafka-broker <kafka version>``: ``org.apache.kafka:kafka_2.13`` with its dependencies
  (``maven/kafka-broker/pom.xml``), the classpath of ``scripts/kafka_broker.py``.
- ``delta <pyspark version>``: Delta Lake's ``io.delta:delta-spark`` release for that line with its
  dependencies (``maven/delta-spark/pom.xml``), handed to Spark with ``spark.jars`` as well.
- ``spark-tests <spark version>``: Spark's published test jars (classifier ``tests``) of ``spark-sql``
  and ``spark-sql-kafka-0-10`` for one Spark release, without their dependencies
  (``maven/spark-test-jars/pom.xml``), and their streaming resources (``structured-streaming/``,
  ``kafka-source-*``) extracted beside them into ``resources/``: the real checkpoints and logs that
  Spark's own suites restart and decode (tests/spark_test_jars/).

Layout: ``<repo>/.jars/<kind>-<version>/`` (the parent moves with ``CHECKPOINT_DOCTOR_JARS``).
A marker ``.installed`` naming the resolved coordinates is written after a successful copy;
while it matches, nothing is done, so calling this again is fast and needs no network.

CLI: ``python scripts/jars.py spark-kafka 3.5.9`` (or ``delta 4.1.4``) prints the folder of the jars.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
ENV_VAR = "CHECKPOINT_DOCTOR_JARS"
MARKER = ".installed"

#: The broker the tests and fixtures run (KRaft only since Kafka 4.0, KIP-833).
KAFKA_VERSION = "4.1.1"

#: Connector release per PySpark version. The connector is built against its own Spark patch
#: release, but the Maven Central this project reaches does not carry every patch of the connector
#: and of its spark-token-provider-kafka-0-10 dependency (3.5.9, 4.0.1-4.0.5, 4.1.2-4.1.4, 4.2.1 are
#: absent), so each line takes the newest patch of its own minor line that resolves with all its
#: dependencies; a real read by scripts/sparklab.py proves each pairing. No Spark 4.3 artifact is
#: served at all (not even spark-core_2.13:4.3.0), so 4.3.0 takes 4.2.0's connector (CONNECTOR_NOTE).
CONNECTOR_FOR = {
    "3.5.9": ("2.12", "3.5.7"),
    "4.0.5": ("2.13", "4.0.0"),
    "4.1.4": ("2.13", "4.1.1"),
    "4.2.1": ("2.13", "4.2.0"),
    "4.3.0": ("2.13", "4.2.0"),
}

CONNECTOR_NOTE = {
    "4.3.0": "Spark 4.3.0's own connector is not published on Maven Central; 4.2.0's is used",
}

#: Delta release per PySpark line: (artifact, version). Delta names the artifact by Scala only up to
#: 4.0.x (delta-spark_2.12 for Spark 3.5, delta-spark_2.13 for Spark 4.0) and by Spark line since 4.1
#: (delta-spark_4.1_2.13 ...); 3.3.3 is the last release for Spark 3.5, 4.0.1 the last built for
#: Spark 4.0 alone, 4.4.0 the newest for 4.1 and 4.2. Maven Central holds no delta-spark_4.3_* artifact
#: (checked with mvn dependency:get), so Spark 4.3.0 has no Delta here (DELTA_NOTE).
DELTA_FOR = {
    "3.5.9": ("delta-spark_2.12", "3.3.3"),
    "4.0.5": ("delta-spark_2.13", "4.0.1"),
    "4.1.4": ("delta-spark_4.1_2.13", "4.4.0"),
    "4.2.1": ("delta-spark_4.2_2.13", "4.4.0"),
}

DELTA_NOTE = {
    "4.3.0": "no Delta Lake release for Spark 4.3 is published on Maven Central (no delta-spark_4.3_2.13)",
}


def jars_root() -> pathlib.Path:
    """Parent directory of every resolved jar set."""
    override = os.environ.get(ENV_VAR)
    return pathlib.Path(override).expanduser().resolve() if override else REPO / ".jars"


def _connector(pyspark_version: str) -> tuple[str, str]:
    if pyspark_version in CONNECTOR_FOR:
        return CONNECTOR_FOR[pyspark_version]
    major_minor = ".".join(pyspark_version.split(".")[:2])
    for known, pair in CONNECTOR_FOR.items():
        if known.startswith(major_minor + "."):
            return pair
    raise ValueError(f"no Kafka connector known for PySpark {pyspark_version}; add it to CONNECTOR_FOR")


def _resolve(pom_dir: pathlib.Path, target: pathlib.Path, props: dict[str, str]) -> pathlib.Path:
    """Copy the pom's dependencies into ``target`` unless its marker already names ``props``."""
    expected = "".join(f"{k}={v}\n" for k, v in sorted(props.items()))
    marker = target / MARKER
    if marker.is_file() and marker.read_text(encoding="utf-8") == expected:
        return target
    if shutil.which("mvn") is None:
        raise RuntimeError("scripts/jars.py needs Maven: install it (Debian: apt-get install maven)")
    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    cmd = ["mvn", "-B", "-q", "-f", str(pom_dir / "pom.xml")]
    cmd += [f"-D{k}={v}" for k, v in sorted(props.items())]
    cmd += ["dependency:copy-dependencies", f"-DoutputDirectory={partial}", "-DincludeScope=runtime"]
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True)
    (partial / MARKER).write_text(expected, encoding="utf-8")
    if target.exists():
        shutil.rmtree(target)
    partial.rename(target)
    return target


def ensure_spark_kafka(pyspark_version: str) -> pathlib.Path:
    """Return the folder with the Kafka connector jars for one PySpark version."""
    scala, connector = _connector(pyspark_version)
    props = {"scala.binary": scala, "spark.version": connector}
    return _resolve(REPO / "maven" / "spark-sql-kafka", jars_root() / f"spark-kafka-{pyspark_version}", props)


def ensure_kafka_broker(kafka_version: str = KAFKA_VERSION) -> pathlib.Path:
    """Return the folder with the jars of a Kafka broker (the classpath of ``kafka.Kafka``)."""
    props = {"kafka.version": kafka_version}
    return _resolve(REPO / "maven" / "kafka-broker", jars_root() / f"kafka-broker-{kafka_version}", props)


def delta_release(pyspark_version: str) -> tuple[str, str] | None:
    """(artifact, version) of the delta-spark release for a PySpark version, or None when none exists."""
    major_minor = ".".join(pyspark_version.split(".")[:2])
    for known, pair in DELTA_FOR.items():
        if known == pyspark_version or known.startswith(major_minor + "."):
            return pair
    return None


def ensure_delta(pyspark_version: str) -> pathlib.Path:
    """Return the folder with the delta-spark jars for one PySpark version."""
    release = delta_release(pyspark_version)
    if release is None:
        note = DELTA_NOTE.get(pyspark_version, "no delta-spark release is known for it; add it to DELTA_FOR")
        raise ValueError(f"no Delta Lake for PySpark {pyspark_version}: {note}")
    artifact, version = release
    props = {"delta.artifact": artifact, "delta.version": version}
    return _resolve(REPO / "maven" / "delta-spark", jars_root() / f"delta-{pyspark_version}", props)


#: Spark releases whose test jars the tests read (issue 34), with the Kafka connector release whose
#: test jar stands for it: ``spark-sql-kafka-0-10_2.12:3.5.9:tests`` is not on Maven Central (the
#: connector's 3.5.8/3.5.9 are absent, see CONNECTOR_FOR), so 3.5.9 takes 3.5.7's.
TEST_JARS_FOR = {
    "3.5.9": ("2.12", "3.5.7"),
    "4.0.4": ("2.13", "4.0.4"),
    "4.1.3": ("2.13", "4.1.3"),
    "4.2.0": ("2.13", "4.2.0"),
}

#: Members of a test jar that are streaming resources: every checkpoint and log Spark's streaming
#: suites read (StreamSuite, OffsetSeqLogSuite, CommitLogSuite, FileStreamSinkLogSuite,
#: KafkaMicroBatchSourceSuite ...). Nothing else (classes, other modules' resources) is extracted.
_RESOURCE_PREFIXES = ("structured-streaming/", "kafka-source-")
RESOURCES = "resources"


def _extract_resources(folder: pathlib.Path) -> None:
    """Extract the streaming resources of every test jar in ``folder`` into ``folder/resources``.

    Directory entries are made too: a jar keeps empty directories (an empty ``commits/``) that a
    checkpoint's meaning depends on. Written beside and renamed, so a stopped run leaves none half made.
    """
    import zipfile

    target = folder / RESOURCES
    partial = folder / (RESOURCES + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    for jar in sorted(folder.glob("*-tests.jar")):
        with zipfile.ZipFile(jar) as archive:
            for info in archive.infolist():
                name = info.filename
                if not name.startswith(_RESOURCE_PREFIXES) or ".." in pathlib.PurePosixPath(name).parts:
                    continue
                out = partial / name
                if info.is_dir():
                    out.mkdir(parents=True, exist_ok=True)
                    continue
                out.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst)
    if target.exists():
        shutil.rmtree(target)
    partial.rename(target)


def ensure_spark_tests(spark_version: str) -> pathlib.Path:
    """Return the folder of one Spark release's test jars; their streaming resources are in
    ``<folder>/resources`` (extracted once, kept while the jars are)."""
    if spark_version not in TEST_JARS_FOR:
        raise ValueError(f"no test jars known for Spark {spark_version}; add it to TEST_JARS_FOR")
    scala, kafka = TEST_JARS_FOR[spark_version]
    props = {"kafka.version": kafka, "scala.binary": scala, "spark.version": spark_version}
    folder = _resolve(REPO / "maven" / "spark-test-jars", jars_root() / f"spark-tests-{spark_version}", props)
    if not (folder / RESOURCES).is_dir():
        _extract_resources(folder)
    return folder


def _artifact(jar: pathlib.Path) -> str:
    """``kafka-clients-3.9.0.jar`` -> ``kafka-clients``: the name before its first dotted version
    (``spark-sql-kafka-0-10_2.13-4.2.0`` keeps its ``0-10_2.13``; ``zstd-jni-1.5.7-7`` is ``zstd-jni``)."""
    match = re.match(r"^(.*?)-\d+(?:\.\d+)+", jar.stem)
    return match.group(1) if match else jar.stem


def spark_jars(
    pyspark_version: str, pyspark_jars_dir: pathlib.Path | None = None, kind: str = "spark-kafka"
) -> list[pathlib.Path]:
    """The connector jars (``kind`` spark-kafka or delta) to hand to Spark with ``spark.jars``, sorted.

    Jars whose artifact PySpark already ships in its ``jars/`` folder (Scala, Hadoop, lz4, snappy,
    slf4j ...) are left out, so the classpath has one copy of each and Spark's wins.
    """
    folder = ensure_delta(pyspark_version) if kind == "delta" else ensure_spark_kafka(pyspark_version)
    shipped = set()
    if pyspark_jars_dir is not None and pyspark_jars_dir.is_dir():
        shipped = {_artifact(j) for j in pyspark_jars_dir.glob("*.jar")}
    return sorted(j for j in folder.glob("*.jar") if _artifact(j) not in shipped)


def main(argv: list[str]) -> int:
    usage = (
        "usage: scripts/jars.py spark-kafka|delta PYSPARK_VERSION... | kafka-broker [KAFKA_VERSION]"
        " | spark-tests [SPARK_VERSION...]"
    )
    if not argv or argv[0] not in ("spark-kafka", "delta", "kafka-broker", "spark-tests"):
        print(usage, file=sys.stderr)
        return 2
    if argv[0] == "kafka-broker":
        print(ensure_kafka_broker(*(argv[1:2] or [KAFKA_VERSION])))
        return 0
    if argv[0] == "spark-tests":
        for version in argv[1:] or list(TEST_JARS_FOR):
            print(f"{version} {ensure_spark_tests(version)}")
        return 0
    if len(argv) < 2:
        print(usage, file=sys.stderr)
        return 2
    ensure = ensure_delta if argv[0] == "delta" else ensure_spark_kafka
    for version in argv[1:]:
        if argv[0] == "delta" and delta_release(version) is None:
            print(f"{version} none: {DELTA_NOTE.get(version, 'no delta-spark release known')}")
            continue
        print(f"{version} {ensure(version)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
