"""The follow-up commands the output suggests, built so that they run as printed. Pure.

A hint carries every flag that shaped the answer it follows: the restart it is about (``--spark``,
``--mode``, ``--stateful``, ``--sources``, ``--checkpoint-format-version``, ``--live-window``), the
file sink (``--sink-path``) and how to reach the storage (``--storage-option``). Storage options
that look like secrets (keys, secrets, tokens, passwords) are never printed: credentials come from
the environment (``AWS_*``, ``AWS_PROFILE``), which the suggested command inherits. The same holds for
``--kafka-option``: a secret-looking key is printed only with a ``@FILE`` or ``env:NAME`` value.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from checkpoint_doctor.diagnosis.model import DEFAULT_LIVE_WINDOW_S
from checkpoint_doctor.redaction import is_secret

PROG = "checkpoint-doctor"
#: The default of ``--live-window`` (a hint names it only when the operator changed it).
DEFAULT_LIVE_WINDOW = DEFAULT_LIVE_WINDOW_S


def public_storage_options(pairs: Sequence[str]) -> tuple[str, ...]:
    """Return the ``KEY=VALUE`` storage options that may be printed (no secret)."""
    return tuple(p for p in pairs if not is_secret(p.partition("=")[0]))


def public_kafka_options(pairs: Sequence[str]) -> tuple[str, ...]:
    """Return the ``--kafka-option`` pairs that may be printed: a secret-looking key only when its
    value is a reference (``@FILE``, ``env:NAME``), never a literal secret."""
    out = []
    for pair in pairs:
        key, _, value = pair.partition("=")
        if not is_secret(key) or value.startswith(("@", "env:")):
            out.append(pair)
    return tuple(out)


def storage_pairs(options: Mapping[str, Any], prefix: str = "") -> tuple[str, ...]:
    """Return parsed storage options as ``KEY=VALUE`` pairs again (``client_kwargs.endpoint_url``
    as ``endpoint_url``), secrets left out: how a plan's recorded options become flags."""
    out: list[str] = []
    for key, value in options.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            inner = "" if name == "client_kwargs" else f"{name}."
            out.extend(storage_pairs(value, inner))
        elif not is_secret(name):
            text = str(value).lower() if isinstance(value, bool) else str(value)
            out.append(f"{name}={text}")
    return tuple(out)


def command(*words: str) -> str:
    """Return a command line, each word quoted for a POSIX shell where it needs it."""
    return shlex.join([PROG, *words])


#: Names a checkpoint directory often has whatever query it is for: the file name of its plan takes
#: the directory above too (``plan-orders-checkpoint.json``, not ``plan-checkpoint.json``).
_GENERIC = {"checkpoint", "checkpoints", "ckpt", "chk", "cp", "_checkpoint", "_checkpoints", "state"}


def plan_file(checkpoint: str) -> str:
    """Return the file name a hint writes a checkpoint's plan to, naming the checkpoint (issue 36:
    every hint wrote ``plan.json`` in the current directory, whatever checkpoint it was for):
    ``plan-<name>.json``, in the current directory, only letters, digits, ``.``, ``_`` and ``-``."""
    import os
    import re

    where = checkpoint if "://" in checkpoint else os.path.abspath(checkpoint)
    parts = [p for p in re.split(r"[/\\]+", where.split("://", 1)[-1]) if p]
    name = parts[-1] if parts else "checkpoint"
    if name.lower() in _GENERIC and len(parts) > 1:
        name = f"{parts[-2]}-{name}"
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-") or "checkpoint"
    return f"plan-{safe}.json"


@dataclass(frozen=True)
class Hints:
    """What shaped an answer, to carry into the commands it suggests."""

    storage_options: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    sink_path: str | None = None
    stateful: bool | None = None
    sources: int | None = None
    checkpoint_format_version: int | None = None
    live_window: float | None = None
    kafka_bootstrap: str | None = None
    kafka_options: tuple[str, ...] = ()
    delta_tables: tuple[str, ...] = ()
    job: str | None = None
    job_python: str | None = None

    @classmethod
    def from_options(cls, kw: Mapping[str, Any], storage_option: Sequence[str] = ()) -> Hints:
        """Return the hints of a command's parsed options (``diagnose``/``plan``/``audit``'s names)."""
        live = kw.get("live_window")
        return cls(
            storage_options=public_storage_options(storage_option),
            lines=tuple(kw.get("spark_version") or ()),
            modes=tuple(kw.get("mode") or ()),
            sink_path=kw.get("sink_path"),
            stateful=kw.get("stateful"),
            sources=kw.get("sources"),
            checkpoint_format_version=kw.get("checkpoint_format_version"),
            live_window=None if live is None or float(live) == DEFAULT_LIVE_WINDOW else float(live),
            kafka_bootstrap=kw.get("kafka_bootstrap_servers"),
            kafka_options=public_kafka_options(kw.get("kafka_option") or ()),
            delta_tables=tuple(kw.get("delta_table") or ()),
            job=kw.get("job"),
            job_python=kw.get("job_python"),
        )

    def storage_flags(self) -> list[str]:
        """Return ``--storage-option KEY=VALUE`` for each printable option."""
        return [w for pair in self.storage_options for w in ("--storage-option", pair)]

    def restart_flags(
        self, *, lines: Sequence[str] | None = None, modes: Sequence[str] | None = None
    ) -> list[str]:
        """Return the flags that describe the restart (the named lines and modes unless given)."""
        words: list[str] = []
        for line in self.lines if lines is None else lines:
            words += ["--spark", line]
        for mode in self.modes if modes is None else modes:
            words += ["--mode", mode]
        if self.sink_path:
            words += ["--sink-path", self.sink_path]
        if self.stateful is not None:
            words.append("--stateful" if self.stateful else "--stateless")
        if self.sources is not None:
            words += ["--sources", str(self.sources)]
        if self.checkpoint_format_version is not None:
            words += ["--checkpoint-format-version", str(self.checkpoint_format_version)]
        words += self._world_flags()
        for table in self.delta_tables:
            words += ["--delta-table", table]
        if self.job:
            words += ["--job", self.job]
            if self.job_python:
                words += ["--job-python", self.job_python]
        return words

    def _world_flags(self) -> list[str]:
        """The live window and the broker of this answer: the flags ``diagnose``, ``plan`` and
        ``audit`` all take for the world outside the checkpoint's logs."""
        words = ["--live-window", f"{self.live_window:g}"] if self.live_window is not None else []
        if self.kafka_bootstrap:
            words += ["--kafka-bootstrap-servers", self.kafka_bootstrap]
            for pair in self.kafka_options:
                words += ["--kafka-option", pair]
        return words

    def diagnose(self, checkpoint: str, spark: str | None = None, mode: str | None = None) -> str:
        """Return ``diagnose`` of one restart (``spark``/``mode``) or of the same restarts."""
        lines = [spark] if spark else None
        modes = [mode] if mode else None
        return command(
            "diagnose", checkpoint, *self.restart_flags(lines=lines, modes=modes), *self.storage_flags()
        )

    def plan(self, checkpoint: str, *extra: str) -> str:
        """Return ``plan`` for the same restarts."""
        return command("plan", checkpoint, *self.restart_flags(), *extra, *self.storage_flags())

    def audit(self, root: str) -> str:
        """Return ``audit`` of a root with the flags of this answer that ``audit`` takes (the lines,
        modes, live window, broker and storage: the same restarts judged the same way)."""
        words: list[str] = []
        for line in self.lines:
            words += ["--spark", line]
        for mode in self.modes:
            words += ["--mode", mode]
        words += self._world_flags()
        return command("audit", root, *words, *self.storage_flags())

    def inspect(self, checkpoint: str) -> str:
        """Return ``inspect`` of a checkpoint."""
        sink = ["--sink-path", self.sink_path] if self.sink_path else []
        return command("inspect", checkpoint, *sink, *self.storage_flags())

    def apply(self, plan_file: str) -> str:
        """Return ``apply`` of a plan file (the plan records how to reach its checkpoint; the
        storage flags say it again for plans written before it did)."""
        kafka = [w for pair in self.kafka_options for w in ("--kafka-option", pair)]
        return command("apply", plan_file, *(kafka if self.kafka_bootstrap else []), *self.storage_flags())

    def undo(self, journal: str) -> str:
        """Return ``undo`` of a journal."""
        return command("undo", journal, *self.storage_flags())

    def history(self, checkpoint: str) -> str:
        """Return ``history`` of a checkpoint."""
        return command("history", checkpoint, *self.storage_flags())


def explain(code: str) -> str:
    """Return ``explain CODE``."""
    return command("explain", code)
