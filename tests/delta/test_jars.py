"""scripts/jars.py delta: which delta-spark release each Spark line gets, and what goes to spark.jars."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import jars  # noqa: E402


def test_each_line_gets_the_delta_release_built_for_it_and_4_3_none() -> None:
    assert {v: jars.delta_release(v) for v in ("3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0")} == {
        "3.5.9": ("delta-spark_2.12", "3.3.3"),
        "4.0.5": ("delta-spark_2.13", "4.0.1"),
        "4.1.4": ("delta-spark_4.1_2.13", "4.4.0"),
        "4.2.1": ("delta-spark_4.2_2.13", "4.4.0"),
        "4.3.0": None,
    }


def test_a_line_without_delta_is_refused_naming_why() -> None:
    with pytest.raises(ValueError, match=r"no Delta Lake for PySpark 4\.3\.0: .*delta-spark_4\.3_2\.13"):
        jars.ensure_delta("4.3.0")


def test_spark_gets_the_delta_jars_pyspark_does_not_ship(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(jars.ENV_VAR, str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "delta-4.1.4"
    folder.mkdir(parents=True)
    # the marker of a finished resolve: nothing is run again
    (folder / jars.MARKER).write_text(
        "delta.artifact=delta-spark_4.1_2.13\ndelta.version=4.4.0\n", encoding="utf-8"
    )
    for name in ("delta-spark_4.1_2.13-4.4.0.jar", "delta-storage-4.4.0.jar", "hadoop-client-api-3.4.2.jar"):
        (folder / name).write_bytes(b"")
    shipped = tmp_path / "pyspark-jars"
    shipped.mkdir()
    (shipped / "hadoop-client-api-3.4.1.jar").write_bytes(b"")
    got = [j.name for j in jars.spark_jars("4.1.4", shipped, kind="delta")]
    assert got == ["delta-spark_4.1_2.13-4.4.0.jar", "delta-storage-4.4.0.jar"]
