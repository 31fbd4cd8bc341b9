"""scripts/jars.py: which connector jars go to spark.jars, and a resolved set is not resolved again."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import jars  # noqa: E402


@pytest.mark.parametrize(
    ("name", "artifact"),
    [
        ("kafka-clients-3.9.0.jar", "kafka-clients"),
        ("spark-sql-kafka-0-10_2.13-4.2.0.jar", "spark-sql-kafka-0-10_2.13"),
        ("zstd-jni-1.5.7-7.jar", "zstd-jni"),
        ("scala-library-2.13.15.jar", "scala-library"),
    ],
)
def test_artifact_is_the_name_without_its_version(name: str, artifact: str) -> None:
    assert jars._artifact(Path(name)) == artifact


def test_spark_gets_only_the_jars_pyspark_does_not_ship(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(jars.ENV_VAR, str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "spark-kafka-4.3.0"
    folder.mkdir(parents=True)
    scala, connector = jars.CONNECTOR_FOR["4.3.0"]
    # the marker of a finished resolve: nothing is run again
    (folder / jars.MARKER).write_text(f"scala.binary={scala}\nspark.version={connector}\n", encoding="utf-8")
    for name in (
        "spark-sql-kafka-0-10_2.13-4.2.0.jar",
        "kafka-clients-3.9.2.jar",
        "scala-library-2.13.15.jar",
    ):
        (folder / name).write_bytes(b"")
    shipped = tmp_path / "pyspark-jars"
    shipped.mkdir()
    (shipped / "scala-library-2.13.18.jar").write_bytes(b"")
    got = [j.name for j in jars.spark_jars("4.3.0", shipped)]
    assert got == ["kafka-clients-3.9.2.jar", "spark-sql-kafka-0-10_2.13-4.2.0.jar"]


def test_every_supported_line_has_a_connector_of_its_scala() -> None:
    assert {v: s for v, (s, _) in jars.CONNECTOR_FOR.items()} == {
        "3.5.9": "2.12",
        "4.0.5": "2.13",
        "4.1.4": "2.13",
        "4.2.1": "2.13",
        "4.3.0": "2.13",
    }
