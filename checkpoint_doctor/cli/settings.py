"""Defaults for scheduled jobs: the settings a cron audit would otherwise repeat on every line
(the broker, Kafka client settings, storage options, the live window, the loss horizon) come from
environment variables and a TOML config file, with click's own facilities: each option's
``envvar`` (``CHECKPOINT_DOCTOR_KAFKA_BOOTSTRAP_SERVERS``...) and the context's ``default_map``
(the config file). Click's order is the precedence: a flag, then the environment, then the file,
then the option's default.

The config file is ``--config FILE`` (or ``CHECKPOINT_DOCTOR_CONFIG``), else the first of
``./checkpoint-doctor.toml`` and ``$XDG_CONFIG_HOME/checkpoint-doctor/config.toml`` that exists::

    kafka-bootstrap-servers = "broker-1:9092,broker-2:9092"
    kafka-option = ["security.protocol=SASL_SSL", "sasl.password=env:KAFKA_PASSWORD"]
    live-window = 600

    [audit]            # only for audit (any of its options)
    jobs = 32

Top-level keys are the settings above and apply to every command that has the option; a table
names a command and may set any of its options. A key the command does not know is refused (a
typo must not silently drop the broker). Where a setting came from is kept for the output
(:func:`setting_sources`); values are never printed (a Kafka option may be a password).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from checkpoint_doctor.errors import UsageError

PREFIX = "CHECKPOINT_DOCTOR_"
#: The settings a scheduled job sets once (parameter names): each has an environment variable
#: (``CHECKPOINT_DOCTOR_`` + its name in capitals) and may be a top-level key of the config file.
#: ``loss_horizon`` is the Kafka loss horizon's (``--loss-horizon``) where a command has it.
SHARED = ("kafka_bootstrap_servers", "kafka_option", "storage_option", "live_window", "loss_horizon")
CONFIG_ENV = PREFIX + "CONFIG"
CONFIG_NAME = "checkpoint-doctor.toml"
CONFIG_HELP = (
    "TOML file of defaults for this command's options (flags and CHECKPOINT_DOCTOR_* variables "
    f"win; default: ./{CONFIG_NAME}, else $XDG_CONFIG_HOME/checkpoint-doctor/config.toml)."
)


def envvar_of(name: str) -> str:
    """Return the environment variable of a shared setting (``live_window``: CHECKPOINT_DOCTOR_LIVE_WINDOW)."""
    return PREFIX + name.upper()


def with_shared_envvars(command: click.Command) -> click.Command:
    """Give the command's shared settings their environment variable, named in ``--help``."""
    for param in command.params:
        if isinstance(param, click.Option) and param.name in SHARED and not param.envvar:
            param.envvar = envvar_of(param.name)
            param.show_envvar = True
    return command


def default_paths() -> list[Path]:
    """Return where a config file is looked for when none is named, in order."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return [Path(CONFIG_NAME), Path(xdg) / "checkpoint-doctor" / "config.toml"]


def find_config(named: str | None) -> Path | None:
    """Return the config file to read: the one named (``--config``, else ``CHECKPOINT_DOCTOR_CONFIG``;
    it must exist), else the first default that exists, else None."""
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise UsageError(
                f"config file {named} " + ("is not a file" if path.exists() else "does not exist"),
                hint=f"name a TOML file, or leave --config and {CONFIG_ENV} unset",
            )
        return path
    return next((p for p in default_paths() if p.is_file()), None)


def read_config(path: Path) -> dict[str, Any]:
    """Return a config file's TOML table (a bad file is a one-line usage error naming it)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the same parser, before it joined the standard library
        import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise UsageError(f"config file {path} cannot be read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"config file {path} is not valid TOML: {exc}", hint="fix the file") from None
    except UnicodeDecodeError:
        raise UsageError(f"config file {path} is not UTF-8 text", hint="name a TOML file") from None


def _key(name: str) -> str:
    return name.replace("-", "_")


def _checked(ctx: click.Context, param: click.Option, raw: str, value: Any, path: Path) -> Any:
    """Return a config value as its option takes it (a string is a one-item list for a repeatable
    option); a value the option refuses is a usage error naming the file and the key (click's own
    message would name the option's environment variable instead)."""
    if param.multiple and isinstance(value, str):
        value = [value]
    try:
        param.type_cast_value(ctx, value)
    except (click.BadParameter, TypeError, ValueError) as exc:
        message = (exc.message if isinstance(exc, click.BadParameter) else str(exc)).rstrip(".")
        raise UsageError(
            f"config file {path}: {raw} = {value!r} is not a valid value: {message}",
            hint=f"see the {max(param.opts, key=len)} option in --help",
        ) from None
    return value


def default_map_for(ctx: click.Context, config: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """Return the command's ``default_map`` from a config file: the shared top-level keys it has,
    then its own table. A top-level key that is not a shared setting, a key of its table that
    is not one of its options, or a value its option refuses, is refused."""
    command = ctx.command
    name = ctx.info_name or command.name or ""
    # An option by its parameter name and by its flags (``format`` is ``--format``, ``output_format``).
    options: dict[str, click.Option] = {}
    for p in command.params:
        if isinstance(p, click.Option) and p.name:
            options[p.name] = p
            for opt in p.opts:
                if opt.startswith("--"):
                    options.setdefault(_key(opt[2:]), p)
    defaults: dict[str, Any] = {}
    for raw, value in config.items():
        if isinstance(value, dict):
            continue
        key = _key(raw)
        if key not in SHARED:
            raise UsageError(
                f"config file {path}: unknown setting {raw!r}",
                hint="top-level settings: "
                + ", ".join(s.replace("_", "-") for s in SHARED)
                + "; put a command's other options under [COMMAND]",
            )
        if key in options:
            defaults[str(options[key].name)] = _checked(ctx, options[key], raw, value, path)
    table = config.get(name, {})
    if not isinstance(table, dict):
        table = {}
    for raw, value in table.items():
        key = _key(raw)
        if key not in options or key == "config":
            raise UsageError(
                f"config file {path}: [{name}] has no option {raw!r}",
                hint=f"see checkpoint-doctor {name} --help",
            )
        defaults[str(options[key].name)] = _checked(ctx, options[key], raw, value, path)
    return defaults


def _load_config(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The eager ``--config`` callback: read the file and set the command's ``default_map``
    before its other options are parsed (click looks their defaults up there)."""
    if ctx.resilient_parsing:
        return value
    path = find_config(value or os.environ.get(CONFIG_ENV))
    if path is None:
        return None
    defaults = default_map_for(ctx, read_config(path), path)
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    ctx.meta["checkpoint_doctor.config"] = str(path)
    return str(path)


def config_option() -> click.Option:
    """The ``--config FILE`` option of every command."""
    return click.Option(
        ["--config"],
        metavar="FILE",
        is_eager=True,
        expose_value=False,
        callback=_load_config,
        help=CONFIG_HELP,
    )


@dataclass(frozen=True)
class SettingSource:
    """Where a setting the command used came from: ``environment`` (``source``: the variable) or
    ``config`` (``source``: the file). Never its value."""

    name: str
    flag: str
    origin: str
    source: str

    def to_json(self) -> dict[str, str]:
        return {"flag": self.flag, "from": self.origin, "source": self.source}

    @property
    def text(self) -> str:
        return f"{self.flag} from {self.source}"


def setting_sources(ctx: click.Context) -> tuple[SettingSource, ...]:
    """Return the command's options that were not given as flags and came from the environment
    or the config file (click's ``ParameterSource``), in the order of its options."""
    from click.core import ParameterSource

    found = []
    config = ctx.meta.get("checkpoint_doctor.config")
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or not param.name or param.name == "config":
            continue
        source = ctx.get_parameter_source(param.name)
        flag = max(param.opts, key=len)
        if source == ParameterSource.ENVIRONMENT:
            envvar = param.envvar if isinstance(param.envvar, str) else None
            if envvar is None and isinstance(param.envvar, (list, tuple)):
                envvar = next((e for e in param.envvar if os.environ.get(e) is not None), param.envvar[0])
            found.append(SettingSource(param.name, flag, "environment", envvar or "the environment"))
        elif source == ParameterSource.DEFAULT_MAP and config:
            found.append(SettingSource(param.name, flag, "config", config))
    return tuple(found)
