"""The world steps of the Kafka fixtures, replayed on a real broker: each damage leaves the topic
positions the recorded restarts met (scripts/kafka_world.py)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

import kafka_fixtures  # noqa: E402
import kafka_world  # noqa: E402

BASE = [s for run in kafka_fixtures.BASE_RUNS for s in run] + kafka_fixtures.BASE_AFTER

#: [earliest, latest] per partition after each damage (the base checkpoint's next offsets are 15).
EXPECTED = {
    "": {"0": [0, 20], "1": [0, 20], "2": [0, 20]},
    "records-deleted": {"0": [18, 20], "1": [18, 20], "2": [18, 20]},
    "topic-recreated": {"0": [0, 5], "1": [0, 5], "2": [0, 5]},
    "topic-recreated-grown": {"0": [0, 25], "1": [0, 25], "2": [0, 25]},
    "partitions-added": {"0": [0, 20], "1": [0, 20], "2": [0, 20], "3": [0, 3], "4": [0, 3]},
    "partitions-added-trimmed": {"0": [0, 20], "1": [0, 20], "2": [0, 20], "3": [1, 3], "4": [1, 3]},
    "partitions-lost": {"0": [0, 25], "1": [0, 25]},
    "topic-deleted": None,
}


def test_every_damage_has_its_expected_positions() -> None:
    assert set(EXPECTED) == {"", *kafka_fixtures.KAFKA_DAMAGE}


@pytest.mark.parametrize("damage", sorted(EXPECTED))
def test_world_replay_leaves_the_positions_of_the_damage(kafka, damage: str) -> None:
    steps = BASE + (kafka_fixtures.KAFKA_DAMAGE[damage]["steps"] if damage else [])
    kafka_world.replay(kafka.bootstrap, steps)
    assert kafka_world.positions(kafka.bootstrap, kafka_fixtures.TOPIC) == EXPECTED[damage]


def test_replay_starts_from_an_empty_broker(kafka) -> None:
    kafka_world.replay(kafka.bootstrap, [{"op": "create_topic", "topic": "other", "partitions": 1}])
    kafka_world.replay(kafka.bootstrap, BASE)
    assert kafka_world.positions(kafka.bootstrap, "other") is None
    assert kafka_world.positions(kafka.bootstrap, kafka_fixtures.TOPIC) == EXPECTED[""]


def test_the_world_cli_replays_a_fixtures_scenario_json(kafka) -> None:
    """Issue 32 item 8: ``kafka_world.py BOOTSTRAP scenario.json`` crashed (TypeError: string indices
    must be integers); it replays the scenario's ``world`` and prints the topic's recorded positions."""
    scenario = (
        Path(__file__).resolve().parents[2]
        / "fixtures/kafka/spark-4.0.5/kafka-stateless-records-deleted/scenario.json"
    )
    run = subprocess.run(
        [sys.executable, str(SCRIPTS / "kafka_world.py"), kafka.bootstrap, str(scenario)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    recorded = json.loads(scenario.read_text(encoding="utf-8"))["topic_positions"]
    assert json.loads(run.stdout) == {"events": recorded} == {"events": EXPECTED["records-deleted"]}


def test_the_world_cli_names_a_file_it_cannot_replay(tmp_path: Path) -> None:
    bad = tmp_path / "steps.json"
    bad.write_text('{"name": "no world here"}', encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(SCRIPTS / "kafka_world.py"), "127.0.0.1:1", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert f"{bad}: neither a list of world steps nor a scenario.json" in run.stderr


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) is gone for our purpose
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
            return False
    return True


@pytest.mark.kafka
@pytest.mark.slow
def test_sigterm_to_the_broker_script_stops_its_jvm_and_removes_its_directory() -> None:
    """Issue 32 item 8: SIGTERM to ``kafka_broker.py`` left the broker JVM (its own session) and its
    temp directory behind; it now stops both, as Ctrl-C does."""
    script = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "kafka_broker.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert script.stdout is not None
        line = script.stdout.readline()
        fields = dict(f.split("=", 1) for f in line.split())
        jvm, workdir = int(fields["pid"]), Path(fields["dir"])
        assert _alive(jvm) and workdir.is_dir()
        script.send_signal(signal.SIGTERM)
        assert script.wait(timeout=60) == 0
        assert not _alive(jvm)
        assert not workdir.exists()
    finally:
        if script.poll() is None:
            script.kill()
            script.wait()


def test_the_session_broker_is_killed_at_once_its_logs_thrown_away(tmp_path: Path) -> None:
    """The tests' broker ends with SIGKILL, no 15 s of controlled shutdown (20.9 s of the last
    test's teardown after the 10,000-partition topic); a broker started for recording still gets
    SIGTERM and its grace."""
    import inspect

    import kafka_broker

    from tests.kafka import conftest

    class Process:
        def __init__(self) -> None:
            self.calls: list[object] = []

        def poll(self) -> None:
            return None

        def kill(self) -> None:
            self.calls.append("kill")

        def send_signal(self, sig: int) -> None:
            self.calls.append(sig)

        def wait(self, timeout: float | None = None) -> int:
            self.calls.append(("wait", timeout))
            return 0

    for grace, expected in ((0, ["kill", ("wait", None)]), (15, [signal.SIGTERM, ("wait", 15)])):
        workdir = tmp_path / f"broker-{grace}"
        workdir.mkdir()
        process = Process()
        broker = kafka_broker.Broker("127.0.0.1:1", workdir, process, "4.0.0", 0.0)  # type: ignore[arg-type]
        broker.stop(grace_s=grace)
        assert process.calls == expected and not workdir.exists()
    assert "broker.stop(grace_s=0)" in inspect.getsource(conftest.kafka)
