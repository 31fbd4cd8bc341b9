"""Defaults for scheduled jobs (issue 36 item 4): the settings a cron audit sets once come from
CHECKPOINT_DOCTOR_* variables and a TOML config file (--config, ./checkpoint-doctor.toml or
$XDG_CONFIG_HOME/checkpoint-doctor/config.toml), flags win, --help names them, the output says
where a setting came from and never its value."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli.test_schemas import validate
from tests.scenarios import FIXTURES, copy_scenario, run_cli

SPARK = FIXTURES / "spark-4.3.0"
#: A checkpoint with temp files whose mtimes are a minute before the audit's clock (both fixed
#: here, never the wall clock): a possible live writer (CD502) inside the default --live-window,
#: nothing with --live-window 0.
LIVE_CODE = "CD502"
WRITTEN_MS = 1_800_000_000_000
NOW_MS = WRITTEN_MS + 60_000


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("XDG_CONFIG_HOME", "CHECKPOINT_DOCTOR_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    for var in ("KAFKA_BOOTSTRAP_SERVERS", "KAFKA_OPTION", "STORAGE_OPTION", "LIVE_WINDOW", "LOSS_HORIZON"):
        monkeypatch.delenv("CHECKPOINT_DOCTOR_" + var, raising=False)
    # No ./checkpoint-doctor.toml of the developer's is read: the tests run in an empty directory.
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "fleet"
    copy_scenario(SPARK / "leftover-temp-files", root / "temps")
    for path in root.rglob("*"):
        os.utime(path, ns=(WRITTEN_MS * 1_000_000, WRITTEN_MS * 1_000_000))
    monkeypatch.setattr("checkpoint_doctor.cli.app.now_ms", lambda: NOW_MS)
    monkeypatch.setattr("checkpoint_doctor.cli.options.now_ms", lambda: NOW_MS)
    return root


def _audit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code, out, _ = run_cli(capsys, "audit", *args, "--format", "json")
    doc = json.loads(out)
    validate("audit", doc)
    return code, doc


def _codes(doc: dict) -> set[str]:
    return {c["code"] for c in doc["result"]["summary"]["codes"]}


def test_the_live_window_comes_from_the_config_file_then_the_environment_then_the_flag(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, plain = _audit(capsys, str(fleet))
    assert LIVE_CODE in _codes(plain) and "settings" not in plain["result"]

    config = tmp_path / "cron.toml"
    config.write_text("live-window = 0\n", encoding="utf-8")
    _, configured = _audit(capsys, str(fleet), "--config", str(config))
    assert LIVE_CODE not in _codes(configured)
    assert configured["result"]["settings"] == {
        "live_window": {"flag": "--live-window", "from": "config", "source": str(config)}
    }

    # The environment beats the file, and says so.
    monkeypatch.setenv("CHECKPOINT_DOCTOR_LIVE_WINDOW", "600")
    _, from_env = _audit(capsys, str(fleet), "--config", str(config))
    assert LIVE_CODE in _codes(from_env)
    assert from_env["result"]["settings"]["live_window"]["source"] == "CHECKPOINT_DOCTOR_LIVE_WINDOW"

    # A flag beats both, and is not listed as a setting from elsewhere.
    _, flagged = _audit(capsys, str(fleet), "--config", str(config), "--live-window", "0")
    assert LIVE_CODE not in _codes(flagged) and "settings" not in flagged["result"]


def test_the_config_file_is_found_where_the_help_says(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    xdg = tmp_path / "xdg" / "checkpoint-doctor"
    xdg.mkdir(parents=True)
    (xdg / "config.toml").write_text("[audit]\nlive-window = 0\n", encoding="utf-8")
    _, doc = _audit(capsys, str(fleet))
    assert LIVE_CODE not in _codes(doc)
    assert doc["result"]["settings"]["live_window"]["source"] == str(xdg / "config.toml")
    # ./checkpoint-doctor.toml comes first.
    Path("checkpoint-doctor.toml").write_text("live-window = 600\n", encoding="utf-8")
    _, here = _audit(capsys, str(fleet))
    assert LIVE_CODE in _codes(here)
    assert here["result"]["settings"]["live_window"]["source"] == "checkpoint-doctor.toml"


def test_the_broker_from_the_environment_is_named_with_its_variable_never_its_secrets(
    fleet: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHECKPOINT_DOCTOR_KAFKA_BOOTSTRAP_SERVERS", "broker-1:9092")
    monkeypatch.setenv("CHECKPOINT_DOCTOR_KAFKA_OPTION", "client.id=cron-audit sasl.password=hunter2")
    _, doc = _audit(capsys, str(fleet), "--live-window", "0")
    assert doc["result"]["settings"] == {
        "kafka_bootstrap_servers": {
            "flag": "--kafka-bootstrap-servers",
            "from": "environment",
            "source": "CHECKPOINT_DOCTOR_KAFKA_BOOTSTRAP_SERVERS",
        },
        "kafka_option": {
            "flag": "--kafka-option",
            "from": "environment",
            "source": "CHECKPOINT_DOCTOR_KAFKA_OPTION",
        },
    }
    code, out, err = run_cli(capsys, "audit", str(fleet), "--live-window", "0")
    assert code == 0
    assert (
        "Settings not given as flags: --kafka-bootstrap-servers from CHECKPOINT_DOCTOR_KAFKA_BOOTSTRAP_SERVERS, "
        "--kafka-option from CHECKPOINT_DOCTOR_KAFKA_OPTION" in " ".join(out.split())
    )
    assert "hunter2" not in out + err + json.dumps(doc)

    # Kafka options without a broker are refused, wherever they came from (a cron job that lost
    # its broker variable does not silently audit without it).
    monkeypatch.delenv("CHECKPOINT_DOCTOR_KAFKA_BOOTSTRAP_SERVERS")
    code, out, err = run_cli(capsys, "audit", str(fleet), "--live-window", "0")
    assert code == 2
    assert "--kafka-option needs --kafka-bootstrap-servers" in err and "hunter2" not in out + err
    # The error names where the option it names came from.
    assert "(--kafka-option from CHECKPOINT_DOCTOR_KAFKA_OPTION)" in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('kafka-bootstrap-server = "b:9092"\n', "unknown setting 'kafka-bootstrap-server'"),
        ("[audit]\nlive-windw = 0\n", "[audit] has no option 'live-windw'"),
        ("live-window = \n", "is not valid TOML"),
        (
            'live-window = "soon"\n',
            "live-window = 'soon' is not a valid value: 'soon' is not a valid float range",
        ),
        ("[audit]\nlive-window = -5\n", "live-window = -5 is not a valid value"),
        ('[audit]\nformat = "xml"\n', "format = 'xml' is not a valid value: 'xml' is not one of"),
        ("audit = 3\n", "unknown setting 'audit'"),
        ('[audit]\nconfig = "other.toml"\n', "[audit] has no option 'config'"),
        ("\udcff\udcfe garbage", "is not UTF-8 text"),
    ],
)
def test_a_mistake_in_the_config_file_is_one_line_naming_it(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    config = tmp_path / "cron.toml"
    config.write_bytes(text.encode("utf-8", "surrogateescape"))
    code, out, err = run_cli(capsys, "audit", str(fleet), "--config", str(config))
    assert code == 2 and out == ""
    assert "env var" not in err  # the file is named, not the option's variable
    assert len(err.strip().splitlines()) == 1
    assert f"config file {config}" in err and message in err
    assert "Traceback" not in err


def test_a_named_config_file_must_exist(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "diagnose", str(fleet / "temps"), "--config", str(tmp_path / "nope.toml"))
    assert code == 2 and f"config file {tmp_path / 'nope.toml'} does not exist" in err


def test_help_names_the_variables_and_the_config_file(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in ("audit", "diagnose", "plan"):
        code, out, _ = run_cli(capsys, command, "--help")
        flat = " ".join(out.split())
        assert code == 0
        for var in ("KAFKA_BOOTSTRAP_SERVERS", "KAFKA_OPTION", "STORAGE_OPTION", "LIVE_WINDOW"):
            assert f"CHECKPOINT_DOCTOR_{var}" in flat, (command, var)
        assert "--config FILE" in out and "config.toml" in flat.replace("- ", "-")
