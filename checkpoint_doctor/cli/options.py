"""Options and helpers shared by the commands."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from checkpoint_doctor.cli.app import now_ms
from checkpoint_doctor.diagnosis.detect import MODES
from checkpoint_doctor.diagnosis.model import DEFAULT_LIVE_WINDOW_S, DEFAULT_LOSS_HORIZON_S
from checkpoint_doctor.diagnosis.versions import LINES
from checkpoint_doctor.errors import CheckpointDoctorError, MissingDependencyError, UsageError
from checkpoint_doctor.reading.storage import normalize_url

if TYPE_CHECKING:
    from checkpoint_doctor.diagnosis.changes.facts import JobFacts
    from checkpoint_doctor.diagnosis.matrix import MatrixOptions
    from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
    from checkpoint_doctor.world.model import World

F = TypeVar("F", bound=Callable[..., Any])
E = TypeVar("E", bound=CheckpointDoctorError)

#: The keyword arguments click passes a command for :func:`diagnosis_options` (``--spark``,
#: ``--sink-path``, ``--job``...), read here at the edge; :func:`job_facts_for` keeps its one
#: answer in them (``job_facts``, ``job_note``) so that a command asks Spark once.
CommandOptions = dict[str, Any]


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
            *kafka_options(),
            click.option(
                "--delta-table",
                metavar="PATH",
                multiple=True,
                help="A Delta table the query reads or writes, repeatable: a source is paired by its "
                "table id, a sink by txn appId = query id (needs checkpoint-doctor[delta] once the log "
                "was cleaned up to a checkpoint).",
            ),
            live_window_option(),
            click.option(
                "--checkpoint-format-version",
                type=click.IntRange(1, 2),
                help="spark.sql.streaming.stateStore.checkpointFormatVersion of the restart (4.0/4.1 only).",
            ),
            click.option(
                "--job",
                metavar="MODULE:FUNCTION|PATH.py:FUNCTION",
                help="The query that will restart: a function that takes a SparkSession and returns its "
                "DataStreamWriter, not started. Spark analyses it (nothing is run or read) and the "
                "restart is judged with its sources, stateful operators, confs and trigger.",
            ),
            job_python_option("--job (default: this one); its Spark line is the default --spark"),
            job_timeout_option("Give up describing --job after this long."),
        ]
    ):
        func = opt(func)
    return func


def job_python_option(what: str) -> Callable[[F], F]:
    """``--job-python``: the interpreter whose pyspark describes ``what`` (diagnose's and audit's)."""
    return click.option("--job-python", metavar="PYTHON", help=f"Interpreter whose pyspark describes {what}.")


def job_timeout_option(text: str) -> Callable[[F], F]:
    """``--job-timeout``: how long describing the job may take (one Spark start)."""
    return click.option(
        "--job-timeout",
        type=click.FloatRange(min=1),
        default=180.0,
        show_default=True,
        metavar="SECONDS",
        help=text,
    )


def _masked_servers(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A password in a server's user info (``SASL_SSL://user:pw@host:9093``, ``user:pw@host:9092``)
    is masked in every output of the command (issue 31 item 7)."""
    if value:
        from checkpoint_doctor.redaction import remember_userinfo

        remember_userinfo(value)
    return value


def kafka_options() -> list[Callable[[F], F]]:
    """The broker options of diagnose, plan and audit."""
    return [
        click.option(
            "--kafka-bootstrap-servers",
            metavar="HOST:PORT[,...]",
            callback=_masked_servers,
            help="A Kafka broker of the query's topics: compare the checkpoint's offsets with the "
            "topics' earliest and latest, and count down to retention (needs checkpoint-doctor[kafka]).",
        ),
        click.option(
            "--kafka-option",
            metavar="KEY=VALUE",
            multiple=True,
            help="Kafka client setting, repeatable (security.protocol=SSL, sasl.mechanism=...); "
            "KEY=@FILE or KEY=env:NAME reads the value from a file or the environment (never printed).",
        ),
        click.option(
            "--loss-horizon",
            type=click.FloatRange(min=0),
            default=DEFAULT_LOSS_HORIZON_S,
            show_default=True,
            metavar="SECONDS",
            help="Warn (CD213) when Kafka retention may delete records the query has not read within "
            "this long (needs --kafka-bootstrap-servers).",
        ),
    ]


def with_kafka_from(world: World, kw: CommandOptions) -> World:
    """Return the world with the live positions of the Kafka topics the checkpoint's newest offsets
    read, asked of ``--kafka-bootstrap-servers`` (:func:`checkpoint_doctor.world.load.with_kafka`;
    as it is without the option)."""
    from checkpoint_doctor.errors import UsageError

    bootstrap = kw.get("kafka_bootstrap_servers")
    if not bootstrap:
        if kw.get("kafka_option"):
            raise UsageError("--kafka-option needs --kafka-bootstrap-servers", hint="name the broker too")
        return world
    from checkpoint_doctor.world.kafka import parse_options
    from checkpoint_doctor.world.load import with_kafka

    return with_kafka(world, bootstrap, parse_options(kw.get("kafka_option") or ()))


def delta_paths_for(kw: CommandOptions, *, optional_job: bool = False) -> dict[int, str]:
    """Return the Delta table each of the ``--job``'s Delta sources reads, by source index (the job
    is asked here: :func:`job_facts_for`; none without ``--job``). The table a changed job reads is paired as a named one: another table there
    (another id) is what a replaced table is to Spark (DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE)."""
    from checkpoint_doctor.diagnosis.changes.sources import delta_source_paths_by_index

    job = job_facts_for(kw, required=not optional_job) if kw.get("job") else None
    paths = delta_source_paths_by_index(job) if job is not None else {}
    return {n: normalize_url(p) for n, p in paths.items()}


def matrix_options_from(
    kw: CommandOptions, world: World | None = None, *, optional_job: bool = False
) -> MatrixOptions:
    """Return the restart matrix options of the command's options and the world around the
    checkpoint (:class:`checkpoint_doctor.world.model.World`: its sink, the tool's own writes, the
    Kafka positions and the Delta tables; ``optional_job``: without pyspark here, ``--job`` is not
    analysed and the output says so)."""
    from dataclasses import replace

    job = job_facts_for(kw, required=not optional_job)
    options = _matrix_options_of(kw, world)
    if job is not None:
        from checkpoint_doctor.diagnosis.changes.options import with_job

        # The job says what restarts: its line (unless --spark), its mode (unless --mode), its
        # sources and its stateful operators (--sources/--stateful are then not needed).
        options = with_job(options, job)
    return replace(options, job_note=kw.get("job_note"))


def job_facts_for(kw: CommandOptions, *, required: bool = True) -> JobFacts | None:
    """Return what ``--job`` runs, as ``--job-python``'s Spark describes it (None without ``--job``;
    asked once per command: the answer is kept in ``kw``). Not ``required`` (``plan``, whose
    ``--job`` is also the job a catch-up step runs, maybe on another machine): without pyspark
    here and without ``--job-python`` the job is not analysed and ``kw["job_note"]`` says so."""
    spec = kw.get("job")
    if not spec:
        if kw.get("job_python"):
            raise UsageError("--job-python needs --job", hint="name the job too: --job MODULE:FUNCTION")
        return None
    if kw.get("job_facts") is None:
        from checkpoint_doctor.execution.catch_up.job import parse_job_spec
        from checkpoint_doctor.execution.job_facts import describe_jobs

        parse_job_spec(spec)
        try:
            kw["job_facts"] = describe_jobs([spec], python=kw.get("job_python"), timeout_s=kw["job_timeout"])[
                0
            ]
        except MissingDependencyError:
            if required or kw.get("job_python"):
                raise
            kw["job_note"] = (
                f"--job {spec} not analysed (no pyspark here): the restart is judged without it; "
                "pass --job-python with the python of the job's Spark line to judge it"
            )
            return None
    facts: JobFacts = kw["job_facts"]
    return facts


def _matrix_options_of(kw: CommandOptions, world: World | None) -> MatrixOptions:
    from checkpoint_doctor.diagnosis.options import matrix_options

    return matrix_options(
        now_ms=now_ms(),
        spark=kw["spark_version"],
        modes=kw["mode"],
        sources=kw["sources"],
        stateful=kw["stateful"],
        checkpoint_format_version=kw["checkpoint_format_version"],
        live_window_s=kw["live_window"],
        loss_horizon_s=kw.get("loss_horizon", DEFAULT_LOSS_HORIZON_S),
        world=world,
    )


def load_for_verdict(
    checkpoint: str,
    storage_option: Sequence[str],
    *,
    deep: bool,
    sink_path: str | None,
    delta_tables: Sequence[str] = (),
    kw: CommandOptions | None = None,
    optional_job: bool = False,
) -> World:
    """Load a checkpoint for a verdict as the API does (:func:`checkpoint_doctor.world.load.load_for_verdict`),
    with the command line's hints when it cannot be read. With the command's options ``kw``, the
    tables a ``--job``'s Delta sources read are paired as named ones (:func:`delta_paths_for`): the
    checkpoint is read first, so that a bad path is said before the job's Spark starts."""
    from checkpoint_doctor.world.load import load_for_verdict as load_with_sides

    def load_with(job_delta: dict[int, str]) -> World:
        return load_with_sides(
            normalize_url(checkpoint),
            parse_storage_options(storage_option),
            lambda: load(checkpoint, storage_option, deep=deep, sink_path=sink_path),
            sink_path=sink_path,
            delta_tables=[normalize_url(t) for t in delta_tables],
            job_delta=job_delta,
        )

    loaded = load_with({})
    if kw is not None and kw.get("job"):
        job_delta = delta_paths_for(kw, optional_job=optional_job)
        if job_delta:
            loaded = load_with(job_delta)
    return loaded


def terminal_width() -> int:
    """Return the width to lay tables and wrapped text out for: ``COLUMNS``, else the terminal's,
    else 100 (pipes, tests)."""
    import shutil

    return max(60, shutil.get_terminal_size((100, 24)).columns)


def parse_storage_options(pairs: Sequence[str]) -> dict[str, Any]:
    """Parse ``--storage-option`` pairs; a secret's value (``secret=``, ``token=``, ``account_key=``
    ...) is masked in every output of the command from here on, wherever it shows up: a backend's
    exception may quote its options (``{'secret': '...'}``) in an error or a ``--debug`` traceback
    (issue 31 item 7)."""
    from checkpoint_doctor.reading.storage import parse_storage_options
    from checkpoint_doctor.redaction import is_secret, remember_secret

    parsed = parse_storage_options(pairs)
    for key, value in parsed.items():
        if isinstance(value, str) and is_secret(key):
            remember_secret(value)
    return parsed


def near_matches(url: str, limit: int = 3) -> list[str]:
    """Return paths close to a missing local path: the first of its parts that does not exist is
    compared with the names of its (existing) parent, and the parts after it are kept; paths that
    exist come first (one listing; local disk only, nothing on error)."""
    import difflib
    import os

    if "://" in url:
        return []
    parent = os.path.abspath(os.path.expanduser(url)).rstrip(os.sep)
    rest: list[str] = []
    while parent and not os.path.exists(parent):
        parent, name = os.path.split(parent)
        if not name:
            return []
        rest.insert(0, name)
    try:
        entries = sorted(e.name for e in os.scandir(parent))
    except OSError:
        return []
    # The name itself is listed when it is a dangling symlink (or a loop): "did you mean <itself>"
    # helps nobody.
    others = [e for e in entries if not rest or e != rest[0]]
    close = difflib.get_close_matches(rest[0], others, n=limit, cutoff=0.6) if rest else []
    paths = [os.path.join(parent, n, *rest[1:]) for n in close]
    return sorted(paths, key=lambda p: not os.path.exists(p))


def with_near_matches(exc: E, url: str) -> E:
    """Return a not-found error whose hint names the near matches of the missing path, if any."""
    matches = near_matches(url)
    if matches:
        exc.hint = "did you mean " + " or ".join(matches) + "?"
    return exc


#: What a checkpoint directory holds (Spark's ``metadata`` file, its logs): a path inside one.
_CHECKPOINT_PARTS = ("metadata", "offsets", "commits", "state", "sources")
#: Checkpoints named in a hint at most.
_NAMED = 3


def _is_checkpoint_dir(path: str) -> bool:
    import os

    return os.path.isfile(os.path.join(path, "metadata")) or any(
        os.path.isdir(os.path.join(path, d)) for d in ("offsets", "commits")
    )


def _command() -> str:
    from checkpoint_doctor.cli.app import invocation

    return invocation().command or "diagnose"


def enclosing_checkpoint(url: str) -> str | None:
    """Return the local checkpoint a path inside it belongs to (``.../checkpoint/metadata``,
    ``.../checkpoint/offsets/3``), or None."""
    import os

    if "://" in url:
        return None
    path = os.path.abspath(os.path.expanduser(url)).rstrip(os.sep)
    for _ in range(4):  # state/<op>/<partition>/<file> is the deepest part of a checkpoint
        path, name = os.path.split(path)
        if not name:
            return None
        if name in _CHECKPOINT_PARTS or _is_checkpoint_dir(path):
            return path if _is_checkpoint_dir(path) else None
    return None


def checkpoints_inside(root: str, dirs: Sequence[str]) -> list[str]:
    """Return the checkpoints under a directory that is not one (from its listing, outermost only;
    checkpoint-doctor's own backups are not checkpoints to diagnose)."""
    found = sorted(
        {d.rpartition("/")[0] for d in dirs if d.rpartition("/")[2] in ("offsets", "commits")} - {""},
        key=lambda d: d.split("/"),
    )
    outer: list[str] = []
    for d in found:
        if ".checkpoint-doctor" in d or any(d.startswith(o + "/") for o in outer):
            continue
        outer.append(d)
    return [f"{root.rstrip('/')}/{d}" for d in outer]


def not_a_checkpoint_hint(root: str, dirs: Sequence[str]) -> str | None:
    """Name the checkpoint(s) a directory holds and the command that reads them."""
    inside = checkpoints_inside(root, dirs)
    if not inside:
        owner = enclosing_checkpoint(root)
        return (
            f"it is inside the checkpoint {owner}: checkpoint-doctor {_command()} {owner}" if owner else None
        )
    if len(inside) == 1:
        return f"it holds the checkpoint {inside[0]}: checkpoint-doctor {_command()} {inside[0]}"
    named = ", ".join(inside[:_NAMED]) + (", ..." if len(inside) > _NAMED else "")
    return f"it holds {len(inside)} checkpoints ({named}); audit them all: checkpoint-doctor audit {root}"


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


def load(
    checkpoint: str, storage_option: Sequence[str], *, deep: bool, sink_path: str | None
) -> CheckpointSnapshot:
    from checkpoint_doctor.errors import (
        CheckpointNotFoundError,
        NotACheckpointError,
        NotADirectoryStorageError,
    )
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
    except NotADirectoryStorageError as exc:
        owner = enclosing_checkpoint(normalize_url(checkpoint))
        if owner is not None:
            exc.hint = f"pass the checkpoint directory: checkpoint-doctor {_command()} {owner}"
        raise
    try:
        return require_checkpoint(snapshot)
    except NotACheckpointError as exc:
        exc.hint = not_a_checkpoint_hint(snapshot.root, snapshot.dirs)
        raise
