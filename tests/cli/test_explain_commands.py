"""What ``explain`` tells an operator to run exists: every ``checkpoint-doctor`` command it names (on a
line of its own, as the text lays a command out, or quoted) is a command, and every ``--flag`` it
names is an option of some command or of the job's Spark source it says it is (``startingVersion``
and friends are not flags: only words spelled ``--x`` are checked)."""

from __future__ import annotations

import re

import click
import pytest

from checkpoint_doctor.cli import main
from checkpoint_doctor.cli.app import cli
from checkpoint_doctor.diagnosis.codes import CODES

_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def _commands() -> dict[str, click.Command]:
    ctx = click.Context(cli)
    assert isinstance(cli, click.Group)
    return {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}  # type: ignore[misc]


def _options() -> set[str]:
    found: set[str] = set()
    for command in [cli, *_commands().values()]:
        for param in command.params:
            found.update(o for o in (*param.opts, *param.secondary_opts) if o.startswith("--"))
    return found


@pytest.mark.parametrize("code", list(CODES))
def test_every_command_and_flag_explain_names_exists(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", code]) == 0
    text = capsys.readouterr().out
    commands = [line.strip() for line in text.splitlines() if line.strip().startswith("checkpoint-doctor ")]
    commands += re.findall(r"'(checkpoint-doctor [^']+)'", text)
    for line in commands:
        name = line.split()[1]
        assert name in _commands(), f"{code}: {line!r} is not a command"
    unknown = set(_FLAG.findall(text)) - _options()
    assert not unknown, f"{code} names options no command has: {sorted(unknown)}"
