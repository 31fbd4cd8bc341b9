"""Options and helpers shared by the commands."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from checkpoint_doctor.cli.app import now_ms
from checkpoint_doctor.diagnosis.detect import MODES
from checkpoint_doctor.diagnosis.model import DEFAULT_LIVE_WINDOW_S
from checkpoint_doctor.diagnosis.versions import LINES

F = TypeVar("F", bound=Callable[..., Any])


#: What ``--live-window`` means to the read-only commands.
LIVE_WINDOW_HELP = "A batch planned or a temp file written this recently means a query may be live (0: off)."


def live_window_option(help_text: str = LIVE_WINDOW_HELP) -> Callable[[F], F]:
    """Return the ``--live-window`` option (one default for every command: DEFAULT_LIVE_WINDOW_S)."""
    return click.option(
        "--live-window",
        type=click.FloatRange(min=0),
        default=DEFAULT_LIVE_WINDOW_S,
        show_default=True,
        metavar="SECONDS",
        help=help_text,
    )


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


def _spark_lines(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> tuple[str, ...]:
    """Normalise ``--spark 4.3``, ``4.3.0``, ``4.3.1`` to their release line (``diagnosis.versions``)."""
    from checkpoint_doctor.diagnosis.versions import line_of

    try:
        return tuple(dict.fromkeys(line_of(v) for v in values))
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from exc


def spark_option(func: F) -> F:
    """Add repeatable ``--spark LINE`` (3.5 ... 4.3, or a version such as 4.3.0)."""
    return click.option(
        "--spark",
        "spark_version",
        multiple=True,
        metavar="|".join(LINES),
        callback=_spark_lines,
        help="Spark line of the restart, repeatable; a version such as 4.3.0 names its line "
        "(default: every supported line).",
    )(func)


def diagnosis_options(func: F) -> F:
    """Add the options that describe the restart (shared by diagnose and plan)."""
    for opt in reversed(
        [
            spark_option,
            click.option(
                "--mode",
                type=click.Choice(MODES),
                multiple=True,
                help="Restart mode, repeatable (default: the mode that wrote the checkpoint, plus a "
                "micro-batch restart of an async or continuous checkpoint).",
            ),
            click.option(
                "--sources",
                type=click.IntRange(min=1),
                help="Number of sources of the query, to check offsets against.",
            ),
            click.option(
                "--stateful/--stateless",
                default=None,
                help="Whether the query has stateful operators (default: inferred from state/).",
            ),
            click.option(
                "--sink-path",
                metavar="PATH",
                help="Output path of a file sink, to check its _spark_metadata log.",
            ),
            live_window_option(),
            click.option(
                "--checkpoint-format-version",
                type=click.IntRange(1, 2),
                help="spark.sql.streaming.stateStore.checkpointFormatVersion of the restart (4.0/4.1 only).",
            ),
        ]
    ):
        func = opt(func)
    return func


def matrix_options_from(
    kw: dict[str, Any], sink_note: str | None = None, own_writes: frozenset[Any] = frozenset()
) -> Any:
    """Return the restart matrix options: the named lines and modes, and the rest of the options
    (``own_writes``: the files checkpoint-doctor's own applies wrote, see :func:`own_writes_for`)."""
    from dataclasses import replace

    from checkpoint_doctor.diagnosis.matrix import MatrixOptions

    return MatrixOptions(
        lines=tuple(kw["spark_version"]),
        modes=tuple(kw["mode"]),
        base=replace(diagnose_options_from(kw), own_writes=own_writes),
        sink_note=sink_note,
    )


def own_writes_for(checkpoint_url: str, storage_option: Sequence[str]) -> frozenset[Any]:
    """Return the files checkpoint-doctor's own applies (still in place) wrote into a checkpoint,
    from its tool directory: a repair made a minute ago is not a live query (empty when there is
    none, or it cannot be read)."""
    from checkpoint_doctor.errors import CheckpointDoctorError
    from checkpoint_doctor.execution.history import own_writes
    from checkpoint_doctor.execution.journal import APPLIES, tool_url
    from checkpoint_doctor.reading.storage import open_storage

    try:
        tool = open_storage(tool_url(checkpoint_url), parse_storage_options(storage_option))
        return own_writes(tool) if tool.exists(APPLIES) else frozenset()
    except CheckpointDoctorError:
        return frozenset()


def diagnose_options_from(kw: dict[str, Any]) -> Any:
    """Return the single-cell options (no line, no mode: the matrix sets them per cell)."""
    from checkpoint_doctor.diagnosis import DiagnoseOptions

    return DiagnoseOptions(
        sources=kw["sources"],
        stateful=kw["stateful"],
        checkpoint_format_version=kw["checkpoint_format_version"],
        live_window_s=kw["live_window"],
        now_ms=now_ms(),
    )


#: Sibling directories looked at for a file sink output next to a local checkpoint.
SIBLINGS_LOOKED_AT = 64


def _nearby_sink_urls(checkpoint: str, storage_option: Sequence[str]) -> list[str]:
    """Return file sink outputs next to a checkpoint: its parent (``out/_checkpoint``) and, on local
    disk, its sibling directories (``job/checkpoint`` next to ``job/sink``). On an object store only
    the parent is looked at (one request)."""
    import os

    from checkpoint_doctor.reading.storage import open_storage

    url = checkpoint.rstrip("/")
    parent = url.rpartition("/")[0]
    if not parent or parent.endswith((":/", ":")):
        return []
    store = open_storage(parent, parse_storage_options(storage_option))
    if not store.is_local:
        return [parent] if store.exists("_spark_metadata") else []
    found = [parent] if os.path.isdir(os.path.join(store.root, "_spark_metadata")) else []
    try:
        siblings = sorted(
            e.name for e in os.scandir(store.root) if e.is_dir() and e.name != url.rpartition("/")[2]
        )
    except OSError:
        return found
    for name in siblings[:SIBLINGS_LOOKED_AT]:
        if os.path.isdir(os.path.join(store.root, name, "_spark_metadata")):
            found.append(f"{parent}/{name}")
    return found


def find_sink(
    snapshot: Any, checkpoint: str, storage_option: Sequence[str], sink_path: str | None = None
) -> tuple[Any, str | None]:
    """Look for the file sink of a checkpoint diagnosed without ``--sink-path``: attach the one
    whose log proves it (``diagnosis.sink_pairing``), and say what was found. With ``--sink-path``
    the sink given is kept, and said to be another query's where its log contradicts the checkpoint
    (a plan then refuses to change it without ``--force-sink``)."""
    from checkpoint_doctor.diagnosis.sink_pairing import pairing_evidence
    from checkpoint_doctor.errors import CheckpointDoctorError
    from checkpoint_doctor.reading.pipeline import attach_sink, read_sink
    from checkpoint_doctor.reading.storage import open_storage

    if sink_path:
        evidence = pairing_evidence(snapshot, snapshot.sink) if snapshot.sink is not None else None
        if evidence is None or not evidence.contradicted:
            return snapshot, None
        return snapshot, (
            f"file sink {sink_path} (--sink-path) is probably another query's: {evidence.text}; "
            "plan will not change it without --force-sink"
        )

    try:
        urls = _nearby_sink_urls(normalize_url(checkpoint), storage_option)
    except CheckpointDoctorError:
        return snapshot, None
    proven: list[tuple[str, Any, str]] = []
    rejected: list[tuple[str, Any, str]] = []
    for url in urls:
        try:
            sink, arg, _ = read_sink(open_storage(url, parse_storage_options(storage_option)))
        except CheckpointDoctorError:
            continue
        evidence = pairing_evidence(snapshot, sink)
        (proven if evidence.proven else rejected).append((url, arg, evidence.text))
    if len(proven) == 1:
        url, arg, why = proven[0]
        return attach_sink(
            snapshot, arg
        ), f"file sink {url} found next to the checkpoint and checked with it ({why})"
    if proven or rejected:
        named = ", ".join(u for u, _, _ in proven + rejected)
        why = "several match" if len(proven) > 1 else rejected[0][2]
        return snapshot, (
            f"file sink not checked: a file sink output is next to the checkpoint ({named}) but its log "
            f"does not prove it is this query's ({why}); pass --sink-path to check it"
        )
    return snapshot, None


def terminal_width() -> int:
    """Return the width to lay tables and wrapped text out for: ``COLUMNS``, else the terminal's,
    else 100 (pipes, tests)."""
    import shutil

    return max(60, shutil.get_terminal_size((100, 24)).columns)


def parse_storage_options(pairs: Sequence[str]) -> dict[str, Any]:
    from checkpoint_doctor.reading.storage import parse_storage_options

    return parse_storage_options(pairs)


def normalize_url(url: str) -> str:
    """Return a local path for the ``file:`` URI forms Spark prints (``file:/abs``, ``file:///abs``,
    ``file://localhost/abs``, percent-encoded as ``Path.toUri`` writes them); other URLs and plain
    paths unchanged."""
    from urllib.parse import unquote

    if not url.lower().startswith("file:"):
        return url
    rest = url[len("file:") :]
    if rest.startswith("//"):
        host, _, path = rest[2:].partition("/")
        if host not in ("", "localhost"):
            return url
        rest = "/" + path
    return unquote(rest) if rest.startswith("/") else url


def near_matches(url: str, limit: int = 3) -> list[str]:
    """Return existing entries of a missing path's parent whose names are close to its name (one
    listing of the parent; local disk only, nothing on error)."""
    import difflib
    import os

    path = os.path.abspath(os.path.expanduser(url)) if "://" not in url else None
    if path is None:
        return []
    parent, name = os.path.split(path.rstrip(os.sep))
    try:
        entries = sorted(e.name for e in os.scandir(parent))
    except OSError:
        return []
    return [os.path.join(parent, n) for n in difflib.get_close_matches(name, entries, n=limit, cutoff=0.6)]


def with_near_matches(exc: Any, url: str) -> Any:
    """Return a not-found error whose hint names the near matches of the missing path, if any."""
    matches = near_matches(url)
    if matches:
        exc.hint = "did you mean " + " or ".join(matches) + "?"
    return exc


def require_sink_path(sink_path: str, storage_option: Sequence[str]) -> None:
    """Refuse a ``--sink-path`` that does not exist (a typo), naming the near matches: checking a
    sink that is not there would report a missing sink log and drop the one next to the checkpoint.

    Raises:
        UsageError: the path does not exist.
    """
    from checkpoint_doctor.errors import CheckpointDoctorError, UsageError
    from checkpoint_doctor.reading.storage import open_storage

    url = normalize_url(sink_path)
    try:
        exists = open_storage(url, parse_storage_options(storage_option)).exists("")
    except CheckpointDoctorError:
        return  # unreachable storage: the read reports it in its own words
    if not exists:
        matches = near_matches(url)
        hint = (
            "did you mean " + " or ".join(matches) + "?"
            if matches
            else "pass the output directory of the query's file sink (the one holding _spark_metadata)"
        )
        raise UsageError(f"--sink-path {sink_path} does not exist", hint=hint)


def load(checkpoint: str, storage_option: Sequence[str], *, deep: bool, sink_path: str | None) -> Any:
    from checkpoint_doctor.errors import CheckpointNotFoundError
    from checkpoint_doctor.reading.pipeline import load_checkpoint, require_checkpoint

    if sink_path:
        require_sink_path(sink_path, storage_option)

    try:
        snapshot = load_checkpoint(
            normalize_url(checkpoint),
            storage_options=parse_storage_options(storage_option),
            depth="deep" if deep else "default",
            sink_path=normalize_url(sink_path) if sink_path else None,
        )
    except CheckpointNotFoundError as exc:
        raise with_near_matches(exc, normalize_url(checkpoint)) from None
    return require_checkpoint(snapshot)
