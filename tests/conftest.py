"""Shared test configuration: hypothesis profiles, environment isolation, markers (scenario helpers:
:mod:`tests.scenarios`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.live import ALL_LIVE_ENV, ROTATION_ENV, ROTATIONS, all_live, rotated, rotated_out, rotation

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"

settings.register_profile(
    "ci", deadline=None, derandomize=True, max_examples=300, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None, max_examples=100)
# CI runs more examples, derandomized so a failure reproduces; a local run is quicker and random.
# CI services set CI=true (.ci/run sets it too); HYPOTHESIS_PROFILE overrides either.
_IN_CI = os.environ.get("CI", "").lower() in ("true", "1")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if _IN_CI else "dev"))


@pytest.fixture(autouse=True)
def _isolate_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keep the user's AWS config, log level and terminal width out of every test."""
    for key in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "CHECKPOINT_DOCTOR_LOG_LEVEL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("BOTO_CONFIG", "/dev/null")
    # The width the expected texts are laid out for (the CLI's own default when no terminal tells,
    # cli/options.py). A pytest-xdist worker inherits COLUMNS=80 from its launcher; a test that needs
    # another width sets its own.
    monkeypatch.setenv("COLUMNS", "100")


#: Fixtures that start or use the moto S3 server (directly, or as a parametrized backend).
S3_FIXTURES = frozenset({"moto_server", "s3", "s3_observer"})


#: This run's rotation of the grouped live tests (tests/live.py), decided once per session.
_ROTATION = rotation(REPO)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Name the live tests this run's rotation restarts, so that a run can be repeated as it was (in the
    header: the choice needs no collection, and a pytest-xdist controller collects nothing)."""
    turn, source = _ROTATION
    if all_live():
        return [f"live rotation: every grouped live test ({ALL_LIVE_ENV}=1)"]
    # the test functions' names: a "::" would read as a collected test to whoever parses the listing
    chosen = "; ".join(f"{g}: {rotated(m, turn).rsplit('::', 1)[1]}" for g, m in ROTATIONS.items())
    return [f"live rotation {turn} ({source}; {ROTATION_ENV}=<n> picks another): {chosen}"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep the markers true, so ``-m "not spark"`` and ``-m "not s3"`` select what they say, and leave
    the opt-in ``live_all`` tests out of a run that did not ask for them (tests/live.py).

    A test that uses the moto server is marked ``s3`` here (also when a parametrized backend is
    ``s3``). A test under ``tests/spark/`` must carry the ``spark`` marker itself: starting a JVM is
    a deliberate choice, and collection stops naming the test that forgot it.
    """
    unmarked = []
    turn, _ = _ROTATION
    out = rotated_out(turn)
    for item in items:
        if item.nodeid.split("[", 1)[0] in out:
            item.add_marker(pytest.mark.live_all)
        names = set(getattr(item, "fixturenames", ()))
        params = getattr(getattr(item, "callspec", None), "params", {})
        if names & S3_FIXTURES or "s3" in params.values():
            item.add_marker(pytest.mark.s3)
        if names & {"azurite", "azure"} or "azure" in params.values():
            item.add_marker(pytest.mark.azure)
        if names & {"fake_gcs", "gcs"} or "gcs" in params.values():
            item.add_marker(pytest.mark.gcs)
        if "tests/spark/" in item.path.as_posix() and item.get_closest_marker("spark") is None:
            unmarked.append(item.nodeid)
    if unmarked:
        raise pytest.UsageError(f"tests under tests/spark/ without @pytest.mark.spark: {', '.join(unmarked)}")
    if os.environ.get("CHECKPOINT_DOCTOR_STYLE_GATE") == "passed":
        # scripts/test.sh ran the style gate (ruff check, ruff format --check, mypy: what tests/test_static.py
        # runs) on this tree just before pytest, and stops before pytest when it fails.
        static = [item for item in items if item.path.name == "test_static.py"]
        if static:
            config.hook.pytest_deselected(items=static)
            items[:] = [item for item in items if item.path.name != "test_static.py"]
    if not all_live() and "live_all" not in (config.option.markexpr or ""):
        every = [item for item in items if item.get_closest_marker("live_all") is not None]
        if every:
            config.hook.pytest_deselected(items=every)
            items[:] = [item for item in items if item.get_closest_marker("live_all") is None]
            _tell_the_controller(config, LIVE_ALL_DESELECTED, len(every))


#: How many live_all tests a run left out: a pytest-xdist worker sends it to the controller, whose
#: summary would not count them otherwise (it collects nothing, so sees no deselection).
LIVE_ALL_DESELECTED = "live_all_deselected"


def _tell_the_controller(config: pytest.Config, key: str, value: int) -> None:
    output = getattr(config, "workeroutput", None)  # set on a pytest-xdist worker only
    if output is not None:
        output[key] = value
    else:
        config.stash[_DESELECTED] = value


_DESELECTED = pytest.StashKey[int]()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """A worker ended: keep its count (every worker collects the whole run, so one count is the run's)."""
    count = getattr(node, "workeroutput", {}).get(LIVE_ALL_DESELECTED)
    if count is not None:
        node.config.stash[_DESELECTED] = count  # type: ignore[attr-defined]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    count = config.stash.get(_DESELECTED, 0)
    if count:
        tests = "test" if count == 1 else "tests"
        terminalreporter.write_line(
            f"live_all: {count} {tests} deselected, live restarts out of this run's turn or of every case"
            f" (-m live_all or {ALL_LIVE_ENV}=1 runs them)"
        )
