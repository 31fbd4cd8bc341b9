"""Spark's published test jars (issue 34): resolved by Maven with ``scripts/jars.py spark-tests``
(``maven/spark-test-jars/pom.xml``, cached in ``.jars/spark-tests-<v>/``, installed by
``scripts/test.sh``), their streaming resources extracted into ``.jars/spark-tests-<v>/resources``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import jars  # noqa: E402

#: The supported line whose restart each jar's suites assert: a suite of Spark X restarts on X.
LINE_OF_JAR = {version: ".".join(version.split(".")[:2]) for version in jars.TEST_JARS_FOR}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test here reads the Maven-resolved jars: ``-m "not spark_jars"`` leaves them out."""
    for item in items:
        if "tests/spark_test_jars/" in item.path.as_posix():
            item.add_marker(pytest.mark.spark_jars)


@pytest.fixture(scope="session")
def spark_resources() -> dict[str, Path]:
    """Spark release -> the folder of its test jars' streaming resources (resolved once; a missing
    Maven or jar fails the test, it is not skipped: scripts/test.sh installs them)."""
    return {version: jars.ensure_spark_tests(version) / jars.RESOURCES for version in jars.TEST_JARS_FOR}
