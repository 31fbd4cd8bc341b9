"""Options and helpers shared by the commands."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from checkpoint_doctor.cli.app import now_ms
from checkpoint_doctor.errors import NotACheckpointError, UsageError

F = TypeVar("F", bound=Callable[..., Any])


def format_option(func: F) -> F:
    """Add ``--format table|json``."""
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(["table", "json"]),
        default="table",
        show_default=True,
        help="Output format; json prints one document with a schema_version.",
    )(func)


def storage_options(func: F) -> F:
    """Add repeatable ``--storage-option key=value``."""
    return click.option(
        "--storage-option",
        "storage_option",
        multiple=True,
        metavar="KEY=VALUE",
        help="fsspec storage option, e.g. endpoint_url=http://127.0.0.1:9000 (repeatable).",
    )(func)


def diagnosis_options(func: F) -> F:
    """Add the options that describe the restart (shared by diagnose and plan)."""
    for opt in reversed(
        [
            click.option("--spark", "spark_version", type=click.Choice(["3.5", "4.0", "4.1", "4.2", "4.3"]), help="Spark line of the restart (default: newest, 4.3)."),
            click.option("--mode", type=click.Choice(["micro-batch", "async", "continuous"]), help="Restart mode (default: the mode that wrote the checkpoint)."),
            click.option("--sources", type=click.IntRange(min=1), help="Number of sources of the query, to check offsets against."),
            click.option("--stateful/--stateless", default=None, help="Whether the query has stateful operators (default: inferred from state/)."),
            click.option("--sink-path", metavar="PATH", help="Output path of a file sink, to check its _spark_metadata log."),
            click.option("--live-window", type=click.FloatRange(min=0), default=600.0, show_default=True, metavar="SECONDS", help="A batch planned or a temp file written this recently means a query may be live (0: off)."),
            click.option("--checkpoint-format-version", type=click.IntRange(1, 2), help="spark.sql.streaming.stateStore.checkpointFormatVersion of the restart (4.0/4.1 only)."),
        ]
    ):
        func = opt(func)
    return func


def diagnose_options_from(kw: dict[str, Any]) -> Any:
    from checkpoint_doctor.diagnosis import DiagnoseOptions

    return DiagnoseOptions(
        spark=kw["spark_version"],
        mode=kw["mode"],
        sources=kw["sources"],
        stateful=kw["stateful"],
        checkpoint_format_version=kw["checkpoint_format_version"],
        live_window_s=kw["live_window"],
        now_ms=now_ms(),
    )


def parse_storage_options(pairs: Sequence[str]) -> dict[str, Any]:
    from checkpoint_doctor.storage import parse_storage_options

    return parse_storage_options(pairs)


def load(checkpoint: str, storage_option: Sequence[str], *, deep: bool, sink_path: str | None) -> Any:
    from checkpoint_doctor.loading import load_checkpoint

    snapshot = load_checkpoint(
        checkpoint,
        storage_options=parse_storage_options(storage_option),
        depth="deep" if deep else "default",
        sink_path=sink_path,
    )
    if not snapshot.is_checkpoint:
        raise NotACheckpointError(snapshot.root, describe_non_checkpoint(snapshot.files, snapshot.dirs))
    return snapshot


def describe_non_checkpoint(files: Sequence[Any], dirs: Sequence[str]) -> str:
    """Say in words why a directory is not a checkpoint."""
    if not files and not dirs:
        return "the directory is empty (no metadata, offsets/ or commits/)"
    if any(d == "_delta_log" or d.endswith("/_delta_log") for d in dirs):
        return "it holds _delta_log/, a Delta table, not a streaming checkpoint"
    if any(d == "_spark_metadata" for d in dirs):
        return "it holds _spark_metadata/, the output of a file sink; pass it with --sink-path"
    return "no metadata file, offsets/ or commits/ directory"




def write_local_file(path: str, text: str, option: str) -> None:
    """Write a file the user named on the command line (a plan, an HTML report).

    Raises:
        UsageError: the file cannot be written (names the path and the option to change).
    """
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}", hint=f"choose a writable {option} path") from exc
