"""Commands that change a checkpoint: plan (read-only), apply, undo, and the history of applies."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from checkpoint_doctor.cli.app import CommandFailed, echo_err, emit, now_ms, shown
from checkpoint_doctor.cli.named_files import read_named_file, refuse_special_file
from checkpoint_doctor.cli.options import (
    diagnosis_options,
    format_option,
    load,
    load_for_verdict,
    matrix_options_from,
    normalize_url,
    parse_storage_options,
    storage_options,
    terminal_width,
    with_kafka_from,
)
from checkpoint_doctor.cli.outputs import check_destination, check_outside, write_destination
from checkpoint_doctor.errors import (
    CheckpointDoctorError,
    ConsentNeededError,
    PlanMismatchError,
    PreconditionFailedError,
    RefusedError,
    UsageError,
)
from checkpoint_doctor.exit_codes import ExitCode
from checkpoint_doctor.render.hints import Hints, plan_file, public_storage_options, storage_pairs

if TYPE_CHECKING:
    from checkpoint_doctor.model import KafkaLive
    from checkpoint_doctor.model_delta import DeltaTable
    from checkpoint_doctor.planning.plan import RepairPlan
    from checkpoint_doctor.reading.storage import Storage

#: ``plan --strategy`` choices (the registry's families, in rank order).
STRATEGY_CHOICES = (
    "bridge",
    "catch-up",
    "quarantine",
    "rewrite",
    "kafka-positions",
    "delta-versions",
    "delta-table",
    "delta-change-commits",
    "delta-change-feed",
    "delta-sink-txn",
    "recreate-metadata",
    "rollback",
    "reset-state",
    "start-over",
    "restart-on-writer",
    "restart-in-mode",
)
SINK_CHOICES = ("file", "delta", "foreachBatch", "kafka", "foreach", "console", "noop", "memory")


def _query_id(value: str | None) -> str | None:
    """Return ``--query-id`` in the canonical form Spark reports it (``UUID.fromString`` then
    ``toString``), or refuse what Spark's ``UUID.fromString`` would refuse at every restart."""
    if value is None:
        return None
    from checkpoint_doctor.parsing.java_uuid import JavaUuidError, parse_java_uuid

    try:
        return str(parse_java_uuid(value))
    except JavaUuidError as exc:
        raise UsageError(
            f"--query-id {value!r} is not a UUID Spark can read ({exc.text})",
            hint="pass the query's id as driver logs print it, e.g. 1f9fbb59-2c6d-4410-a596-d28fab6c8f0f",
        ) from None


def _state_stores(values: Sequence[str]) -> tuple[tuple[int, str], ...]:
    out = []
    for value in values:
        op, _, name = value.partition(":")
        if not op.isdigit():
            raise UsageError(
                f"--state-store {value!r} is not OPERATOR_ID[:STORE_NAME]", hint="e.g. --state-store 0"
            )
        out.append((int(op), name or "default"))
    return tuple(out)


@click.command("plan")
@click.argument("checkpoint")
@click.option(
    "--strategy",
    type=click.Choice(STRATEGY_CHOICES),
    help="Prefer this strategy where it applies (default: the safest ranked option).",
)
@click.option("-o", "--output", "output", metavar="FILE", help="Write the plan JSON to FILE.")
@click.option("--force", is_flag=True, help="Overwrite the -o file if it exists.")
@click.option(
    "--accept-data-loss",
    is_flag=True,
    help="Allow options that can lose data (re-planned committed batches a sink may skip, a state reset, a new start).",
)
@click.option(
    "--sink",
    "sink_kind",
    type=click.Choice(SINK_CHOICES),
    help="The query's sink, for data-loss accounting (default: unknown; --sink-path means file).",
)
@click.option(
    "--query-id",
    metavar="UUID",
    callback=lambda ctx, param, value: _query_id(value),
    help="Query id for recreate-metadata (the old id, from driver logs); written as Spark reads it.",
)
@click.option(
    "--state-store",
    "state_store",
    multiple=True,
    metavar="OP[:STORE]",
    help="A stateful operator's store to recreate when state/ is gone (repeatable; default 0:default).",
)
@click.option("--deep", is_flag=True, help="Read every batch file (a rollback may then keep an older batch).")
@click.option(
    "--force-sink",
    is_flag=True,
    help="Plan changes to the --sink-path sink even where its log contradicts the checkpoint "
    "(another query's batch ids, mode or times).",
)
@click.option(
    "--delta-version",
    type=click.IntRange(min=0),
    metavar="N",
    help="For a Delta source whose table was replaced (CD208, strategy delta-table): read the new table's "
    "changes from version N on (startingVersion) instead of the table as of its first version.",
)
@click.option(
    "--reset-flow",
    "reset_flow",
    is_flag=True,
    help="On a pipeline flow directory: a new live version n+1 that starts past the last committed batch "
    "and keeps the table's data (the open-source counterpart of a selective checkpoint reset).",
)
@click.option(
    "--reset-start",
    "reset_start",
    type=click.Choice(["committed", "earliest", "latest"]),
    default="committed",
    show_default=True,
    help="With --reset-flow: where the new version reads from: the last committed offsets, or each file "
    "source (a table read as a stream) from the table's start (its rows read again: --accept-duplicates), "
    "or past every file the table holds now (what arrived since is skipped: --accept-data-loss).",
)
@click.option(
    "--accept-duplicates",
    "accept_duplicates",
    is_flag=True,
    help="With --reset-flow --reset-start earliest: consent to rows read again and written twice.",
)
@diagnosis_options
@format_option
@storage_options
def plan_command(
    checkpoint: str,
    strategy: str | None,
    output: str | None,
    force: bool,
    accept_data_loss: bool,
    sink_kind: str | None,
    query_id: str | None,
    state_store: Sequence[str],
    deep: bool,
    force_sink: bool,
    output_format: str,
    storage_option: Sequence[str],
    **kw: Any,
) -> None:
    """Propose a repair plan (read-only): ranked options, consequences, steps, preconditions."""
    from dataclasses import replace

    from checkpoint_doctor.diagnosis.codes import Code
    from checkpoint_doctor.diagnosis.matrix import diagnose_matrix
    from checkpoint_doctor.planning import PlanOptions
    from checkpoint_doctor.planning.matrix_plan import plan_exit_code, plan_for_matrix
    from checkpoint_doctor.planning.planner import CONSENT_MANUAL
    from checkpoint_doctor.reading.storage import open_storage
    from checkpoint_doctor.render.layout import json_document, layout
    from checkpoint_doctor.render.plan import PlanFollowUp, render_plan

    delta_version = kw.pop("delta_version", None)
    reset_flow = _reset_flow_options(kw)
    options = parse_storage_options(storage_option)
    from checkpoint_doctor.cli.read import flow_target, flow_text

    # A Declarative Pipeline's flow directory: the plan repairs its live version (the one Spark reads).
    flow = flow_target(checkpoint, options)
    if reset_flow:
        _plan_reset_flow(
            checkpoint,
            flow,
            options,
            output,
            force,
            accept_data_loss,
            state_store,
            output_format,
            kw,
            storage_option,
        )
        return
    if flow is not None:
        checkpoint = flow["live_checkpoint"]
        if output_format != "json":
            emit(flow_text(flow))
    # A plan names its Delta tables as its checkpoint, by their full location: apply reads them again
    # from wherever it runs (the printed commands carry them so too).
    kw["delta_table"] = tuple(open_storage(t, options).url for t in kw.get("delta_table") or ())
    dest = None
    if output:
        reading = [open_storage(checkpoint, options)]
        if kw["sink_path"]:
            reading.append(open_storage(kw["sink_path"], options))
        reading += [open_storage(t, options) for t in kw["delta_table"]]
        dest = check_destination(output, "-o", options, local_only=True, force=force, reading=reading)
    loaded = load_for_verdict(
        checkpoint,
        storage_option,
        deep=deep,
        sink_path=kw["sink_path"],
        delta_tables=kw["delta_table"] or (),
        kw=kw,
        optional_job=True,
    )
    snapshot = loaded.snapshot
    if not kw["sink_path"] and dest is not None and snapshot.sink is not None:
        check_outside(dest, [open_storage(snapshot.sink.url, options)])  # a sink found beside it is read too
    if dest is not None:
        # The Delta tables found beside it (or a --job reads) are read too: a plan written into a
        # table's _delta_log became its next commit (issue 31).
        check_outside(dest, [open_storage(url, options) for url in loaded.delta_read])
    loaded = with_kafka_from(loaded, kw)
    mopts = matrix_options_from(kw, loaded, optional_job=True)
    matrix = diagnose_matrix(snapshot, mopts)
    request = PlanOptions(
        strategy=strategy,
        accept_data_loss=accept_data_loss,
        query_id=query_id,
        # The same --job the restart is judged with (diagnosis_options), recorded in a catch-up step.
        job=kw["job"],
        sink_kind=sink_kind,
        state_stores=_state_stores(state_store),
        depth="deep" if deep else "default",
        diagnose=mopts.base,
        force_sink=force_sink,
        delta_version=delta_version,
    )
    plan = plan_for_matrix(snapshot, matrix, request, storage_options=options)
    # A plan without a step is not written: apply would have nothing to do, and the next
    # 'plan -o' (with --accept-data-loss, say) would meet the file.
    if dest is not None and plan.steps:
        write_destination(dest, _bounded_plan(plan.to_json(), output or ""))
    hints = Hints.from_options(kw, storage_option)
    flags = _plan_flags(strategy, sink_kind, query_id, state_store, deep)
    if delta_version is not None:
        flags += ["--delta-version", str(delta_version)]
    # The hinted file names the checkpoint it is for (render.hints.plan_file).
    target = output or plan_file(checkpoint)
    follow = PlanFollowUp(
        output=output,
        written=dest is not None and bool(plan.steps),
        write=hints.plan(checkpoint, *flags, *_accept(accept_data_loss), "-o", target),
        consent=None
        if accept_data_loss or not any(u["manual"] == CONSENT_MANUAL for u in plan.unresolved)
        else hints.plan(checkpoint, *flags, "--accept-data-loss", "-o", target),
        live=replace(hints, live_window=0.0).plan(
            checkpoint, *flags, *_accept(accept_data_loss), "-o", target
        )
        if {u["code"] for u in plan.unresolved} & {Code.LIVE_WRITER, Code.FRESH_TEMP_FILE}
        else None,
    )
    with layout(terminal_width()):
        emit(
            json_document("plan", plan.to_dict())
            if output_format == "json"
            else render_plan(plan, output, hints, follow)
        )
        if loaded.unfinished:
            from checkpoint_doctor.render.changes import render_unfinished

            # A JSON plan is the plan document alone: the warning goes to stderr there.
            warning = render_unfinished(loaded.unfinished, hints)
            if output_format == "json":
                echo_err(warning.rstrip("\n"))
            else:
                emit(warning)
    if plan.unresolved:
        raise CommandFailed(plan_exit_code(plan, matrix))
    if matrix.state_may_be_gone is not None:
        raise CommandFailed(ExitCode.WARNINGS)  # what diagnose exits with on CD310


def _reset_flow_options(kw: dict[str, Any]) -> bool:
    """Whether ``--reset-flow`` was asked; ``--reset-start``/``--accept-duplicates`` stay in ``kw``
    only with it (and are refused without it)."""
    reset_flow = bool(kw.pop("reset_flow", False))
    start, duplicates = kw.get("reset_start", "committed"), kw.get("accept_duplicates", False)
    if not reset_flow and (start != "committed" or duplicates):
        raise UsageError("--reset-start and --accept-duplicates go with --reset-flow")
    if not reset_flow:
        kw.pop("reset_start", None), kw.pop("accept_duplicates", None)
    return reset_flow


def _plan_reset_flow(
    checkpoint: str,
    flow: dict[str, Any] | None,
    options: dict[str, Any],
    output: str | None,
    force: bool,
    accept_data_loss: bool,
    state_store: Sequence[str],
    output_format: str,
    kw: dict[str, Any],
    storage_option: Sequence[str] = (),
) -> None:
    """``plan <flow dir> --reset-flow``: a pipeline flow's new live version (pipelines.reset), planned
    with the flow directory as the plan's root. A reset that needs consent is refused with the whole
    command that gives every consent it needs."""
    from checkpoint_doctor.pipelines.load import plan_reset
    from checkpoint_doctor.pipelines.reset import reset_words
    from checkpoint_doctor.reading.storage import open_storage
    from checkpoint_doctor.render.layout import json_document, layout
    from checkpoint_doctor.render.plan import render_plan

    if flow is None:
        raise UsageError(
            f"--reset-flow takes a pipeline flow directory (.../_checkpoints/<catalog>/<schema>/<table>/<flow>), "
            f"not {checkpoint}",
            hint="name the flow directory, without its version",
        )
    url = flow["live_checkpoint"].rpartition("/")[0]
    dest = None
    if output:
        reading = [open_storage(url, options)]
        dest = check_destination(output, "-o", options, local_only=True, force=force, reading=reading)
    spark = kw.get("spark_version") or ()
    start = kw.get("reset_start") or "committed"
    accept_duplicates = bool(kw.get("accept_duplicates"))
    try:
        # The Python API's answer (api.plan_reset_flow), printed.
        plan, facts = plan_reset(
            url,
            options,
            pipeline=flow["pipeline"],
            accept_data_loss=accept_data_loss,
            spark=spark[0] if spark else None,
            live_window_s=float(kw.get("live_window") or 0),
            stores=_state_stores(state_store),
            code_spec=kw.get("job"),
            start=start,
            accept_duplicates=accept_duplicates,
        )
    except ConsentNeededError as exc:
        # The whole command with every consent, to run as printed.
        given = [
            f
            for f, yes in (
                ("--accept-duplicates", accept_duplicates),
                ("--accept-data-loss", accept_data_loss),
            )
            if yes
        ]
        start_flags = ["--reset-start", start] if start != "committed" else []
        words = [*start_flags, *_plan_flags(None, None, None, state_store, False), *given, *exc.consents]
        # the file name diagnose's reset hint gives (render.pipeline)
        target = output or f"reset-{flow['pipeline_flow'].replace('/', '-')}.json"
        rerun = Hints.from_options(kw, storage_option).plan(checkpoint, "--reset-flow", *words, "-o", target)
        raise RefusedError(exc.message, hint=f"to reset it anyway: {rerun}") from None
    if dest is not None:
        write_destination(dest, _bounded_plan(plan.to_json(), output or ""))
    starts, loss = reset_words(facts, flow["pipeline_flow"])
    if output_format == "json":
        doc = plan.to_dict()
        doc["pipeline_flow"] = {**flow, "reset": {**facts.to_dict(), "starts": starts, "loss": loss}}
        emit(json_document("plan", doc))
        return
    hints = Hints.from_options(kw, ())
    with layout(terminal_width()):
        emit(
            f"Pipeline flow {flow['pipeline_flow']}: reset into a new version {facts.version} "
            f"(version {flow['version']} is live; every version stays as history)\n"
        )
        emit(render_plan(plan, output, hints))


def _bounded_plan(text: str, output: str) -> str:
    """The plan file's text, or a refusal when 'apply' would refuse to read it (a plan is never
    written larger than parse_json_document's MAX_DOCUMENT_BYTES; issue 31 item 9)."""
    from checkpoint_doctor.errors import RefusedError
    from checkpoint_doctor.parsing.documents import MAX_DOCUMENT_BYTES

    size = len(text.encode("utf-8"))
    if size > MAX_DOCUMENT_BYTES:
        raise RefusedError(
            f"the plan for {output} would be {size} bytes, more than the {MAX_DOCUMENT_BYTES} 'apply' reads; "
            "nothing was written",
            hint="plan fewer changes at a time (e.g. --strategy), or restore the checkpoint from a backup",
        )
    return text


def _accept(accept_data_loss: bool) -> list[str]:
    return ["--accept-data-loss"] if accept_data_loss else []


def _plan_flags(
    strategy: str | None,
    sink_kind: str | None,
    query_id: str | None,
    state_store: Sequence[str],
    deep: bool,
) -> list[str]:
    """Return the plan-only flags that shaped a plan, to repeat them in the commands it suggests."""
    words: list[str] = []
    for flag, value in (
        ("--strategy", strategy),
        ("--sink", sink_kind),
        ("--query-id", query_id),
    ):
        if value:
            words += [flag, value]
    for store in state_store:
        words += ["--state-store", store]
    return [*words, "--deep"] if deep else words


def _read_plan(path: str) -> RepairPlan:
    from checkpoint_doctor.errors import PlanFormatError
    from checkpoint_doctor.parsing.documents import MAX_DOCUMENT_BYTES, DocumentError, parse_json_document
    from checkpoint_doctor.planning.plan import RepairPlan

    hint = "pass the file written by 'plan -o'"
    # Bounded (a plan is kilobytes) and never blocking: a FIFO named as the plan is refused.
    data = read_named_file(path, "plan", hint, MAX_DOCUMENT_BYTES)
    try:
        document = parse_json_document(data)
    except DocumentError as exc:
        raise PlanFormatError(f"{path} is not a plan: {exc.reason}", hint=hint) from exc
    return RepairPlan.from_dict(document)


@click.command("apply")
@click.argument("plan_file", metavar="PLAN.json")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--backup-dir",
    metavar="URI",
    help="Where backups and the journal go (default: <checkpoint>.checkpoint-doctor/<plan-id>/).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Verify the plan and every precondition, list every step and file, then stop.",
)
@click.option(
    "--kafka-option",
    metavar="KEY=VALUE",
    multiple=True,
    help="Kafka client setting for a plan that moves Kafka positions (its broker's positions are read "
    "again); KEY=@FILE or KEY=env:NAME reads the value from a file or the environment.",
)
@format_option
@storage_options
def apply_command(
    plan_file: str,
    yes: bool,
    backup_dir: str | None,
    dry_run: bool,
    kafka_option: Sequence[str],
    output_format: str,
    storage_option: Sequence[str],
) -> None:
    """Apply a plan: verify it against the live checkpoint, back up, change, journal, re-diagnose."""
    from checkpoint_doctor.execution.apply import apply_plan
    from checkpoint_doctor.execution.journal import tool_urls
    from checkpoint_doctor.reading.storage import open_storage
    from checkpoint_doctor.render.changes import render_apply
    from checkpoint_doctor.render.layout import json_document, layout
    from checkpoint_doctor.render.plan import render_plan

    plan = _read_plan(plan_file)
    # The plan records how to reach its checkpoint (never credentials); the command line adds to it.
    options = {**plan.storage_options, **parse_storage_options(storage_option)}
    checkpoint = open_storage(plan.checkpoint, options)
    sink = open_storage(plan.sink, options) if plan.sink else None
    # Beside the checkpoint's real location: one lock whichever path (a symlink) reaches it.
    tool = open_storage(tool_urls(checkpoint)[0], options)
    backup = open_storage(backup_dir, options) if backup_dir else None

    kafka = _kafka_again(plan, kafka_option)
    delta = _delta_again(plan, options)
    # The undo and history hints carry how the storage was reached (the plan's options and the
    # flags), no secret.
    hints = Hints(storage_options=storage_pairs(options))

    def confirm(p: RepairPlan) -> bool:
        if yes:
            return True
        _need_terminal("apply changes the checkpoint")
        with layout(terminal_width()):
            echo_err(render_plan(p, None))
        return click.confirm(shown(apply_question(p)), default=False, err=True)

    progress = _ApplyProgress(len(plan.executable_steps))
    try:
        result = apply_plan(
            plan,
            checkpoint,
            sink=sink,
            tool=tool,
            backup=backup,
            now_ms=now_ms(),
            dry_run=dry_run,
            confirm=None if dry_run else confirm,
            kafka=kafka,
            delta=delta,
            on_step=progress if progress.shown else None,
        )
    except (PlanMismatchError, PreconditionFailedError) as exc:
        raise _already_applied(plan, checkpoint, options, hints) or exc from exc
    finally:
        progress.close()
    with layout(terminal_width()):
        emit(
            json_document("apply", result.to_dict())
            if output_format == "json"
            else render_apply(result, hints, plan.checkpoint)
        )
    if result.cancelled:
        raise CommandFailed(ExitCode.REFUSED)
    if not plan.executable_steps and not result.manual_steps:
        raise CommandFailed(ExitCode.REFUSED)
    if result.after is not None and result.after.exit_code:
        raise CommandFailed(result.after.exit_code)


class _ApplyProgress:
    """click's progress bar on stderr while a long apply changes the checkpoint (issue 36): only on a
    terminal, without --quiet, for a plan of more than LONG_APPLY steps."""

    LONG_APPLY = 40

    def __init__(self, total: int) -> None:
        from checkpoint_doctor.cli.app import invocation

        self.shown = total > self.LONG_APPLY and sys.stderr.isatty() and not invocation().quiet
        self.total = total
        self.bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            self.bar = click.progressbar(length=total, label="apply", file=sys.stderr, show_eta=False)
            self.bar.__enter__()
        self.bar.update(done - self.bar.pos)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def _kafka_again(plan: RepairPlan, pairs: Sequence[str]) -> KafkaLive | None:
    """Return the positions of the topics a plan moves Kafka positions in, read again from the broker
    the plan names (None: the plan moves none, and ``--kafka-option`` is not used: the plan's
    suggested apply command carries the options the plan was made with)."""
    from checkpoint_doctor.planning.preconditions import KafkaPositionsPre

    held = [p for p in plan.preconditions if isinstance(p, KafkaPositionsPre)]
    if not held:
        return None
    from checkpoint_doctor.model import KafkaOffset
    from checkpoint_doctor.world.kafka import open_reader, parse_options

    # Only the topics' partitions and earliest/latest are re-checked: no record is fetched.
    wanted = KafkaOffset(
        tuple((t, part, pos) for p in held for t, part, pos, _ in p.partitions)
        + tuple((t, 0, 0) for p in held for t in p.gone_topics)  # still not listed (a dropped pattern topic)
    )
    reader = open_reader(held[0].bootstrap, parse_options(pairs))
    try:
        return reader.read([wanted], heads=False)
    finally:
        reader.close()


def _delta_again(plan: RepairPlan, options: Mapping[str, Any]) -> tuple[DeltaTable, ...] | None:
    """Return the Delta tables a plan relies on, read again from their logs (None: it relies on none)."""
    from checkpoint_doctor.planning.preconditions import DeltaTablePre

    urls = list(dict.fromkeys(p.url for p in plan.preconditions if isinstance(p, DeltaTablePre)))
    if not urls:
        return None
    from checkpoint_doctor.world.delta_log import read_table

    tables = []
    for url in urls:
        try:
            tables.append(read_table(url, options))
        except UsageError:
            continue  # no Delta table there any more: its precondition says so (exit 32)
    return tuple(tables)


def _need_terminal(what: str) -> None:
    """Refuse to ask on a pipe: a script passes ``--yes``."""
    if not sys.stdin.isatty():
        raise UsageError(f"{what} and needs confirmation", hint="pass --yes when not on a terminal")


def apply_question(plan: RepairPlan) -> str:
    """Return the confirmation question of an apply; a plan that can lose data names the loss
    first, so that the answer is not given on the habit of harmless plans."""
    question = f"Apply plan {plan.plan_id} to {plan.checkpoint}?"
    consequences = plan.expected.get("consequences") or {}
    lost = [str(x) for x in consequences.get("loss") or []]
    if consequences.get("data_loss") or lost:
        what = "; ".join(lost) or "see the plan's options"
        # Consent given for rows written twice only (nothing skipped, delta-sink-txn) is named as such.
        verb = "LOSES DATA" if consequences.get("data_loss") else "WRITES ROWS TWICE"
        return f"This plan {verb} ({what}). {question}"
    return question


def _already_applied(
    plan: RepairPlan, checkpoint: Storage, options: Mapping[str, Any], hints: Hints
) -> RefusedError | None:
    """Return the refusal for a plan whose newest recorded apply is still in place: the checkpoint
    differs from the plan's because the plan changed it, not because something else did."""
    from checkpoint_doctor.reading.history import apply_history
    from checkpoint_doctor.reading.storage import open_storage

    try:
        rows = apply_history(checkpoint.url, lambda url: open_storage(url, options))
    except CheckpointDoctorError:
        return None  # the refusal as verified stands
    mine = [r for r in rows if r["plan_id"] == plan.plan_id]
    if not mine or mine[-1]["state"] != "applied":
        return None
    journal = mine[-1]["journal"]
    return RefusedError(
        f"plan {plan.plan_id} is already applied to {checkpoint.url} (journal {journal}); nothing was changed",
        hint=f"see {hints.history(checkpoint.url)}; to apply it again, first {hints.undo(journal)}",
    )


def _iso(ms: Any) -> str | None:
    from checkpoint_doctor.render.documents import iso_utc

    return iso_utc(ms) if isinstance(ms, int) and not isinstance(ms, bool) else None


def _journal_location(journal: str) -> str:
    return journal[: -len("/journal.jsonl")] if journal.endswith("/journal.jsonl") else journal


@click.command("undo")
@click.argument("journal")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--force", is_flag=True, help="Undo even if the checkpoint changed since the apply.")
@click.option(
    "--checkpoint",
    "moved_to",
    metavar="PATH",
    help="The checkpoint was moved (with its .checkpoint-doctor directory) since the apply: undo it there.",
)
@format_option
@storage_options
def undo_command(
    journal: str,
    yes: bool,
    force: bool,
    moved_to: str | None,
    output_format: str,
    storage_option: Sequence[str],
) -> None:
    """Restore exactly what an apply changed, from its journal (journal.jsonl) and backups."""
    from checkpoint_doctor.execution.journal import JOURNAL, Event, Journal
    from checkpoint_doctor.execution.undo import undo_journal
    from checkpoint_doctor.reading.storage import open_storage
    from checkpoint_doctor.render.changes import render_undo
    from checkpoint_doctor.render.layout import json_document, layout

    options = parse_storage_options(storage_option)
    journal = _newest_journal(journal, options)
    local = normalize_url(journal)
    for path in (local, f"{local.rstrip('/')}/journal.jsonl"):  # as named, and in a named directory
        refuse_special_file(path, "journal", "pass the journal.jsonl that apply printed", directory_ok=True)
    location = open_storage(_journal_location(journal), options)
    if not yes:
        # Undo changes the checkpoint as apply does: the same confirmation (a malformed journal is
        # named before anything is asked).
        begin = Journal.load(location).first(Event.BEGIN) or {}
        _need_terminal("undo changes the checkpoint")
        where = moved_to if moved_to is not None else begin.get("checkpoint")
        question = f"Undo the apply of plan {begin.get('plan_id')} to {where}"
        if not click.confirm(shown(f"{question} (restore what it changed)?"), default=False, err=True):
            emit(f"Cancelled: {location.url_of(JOURNAL)} was not undone; nothing was changed.\n")
            raise CommandFailed(ExitCode.REFUSED)
    result = undo_journal(
        location,
        lambda url: open_storage(url, options),
        force=force,
        now_ms=now_ms(),
        moved_to=normalize_url(moved_to) if moved_to is not None else None,
    )
    with layout(terminal_width()):
        emit(json_document("undo", result.to_dict()) if output_format == "json" else render_undo(result))


#: The states of an apply that undo reverses (the ones history's "Undo the newest with" names).
UNDOABLE = ("applied", "failed", "interrupted", "partly undone")


def _newest_journal(named: str, options: Mapping[str, Any]) -> str:
    """Return the journal to undo: ``named`` when it is one (a journal.jsonl or its directory),
    else, ``named`` being a checkpoint, the journal of its newest apply that undo reverses
    (issue 36: ``undo CHECKPOINT``), said on stderr."""
    from checkpoint_doctor.reading.history import apply_history
    from checkpoint_doctor.reading.storage import open_storage

    try:
        if open_storage(_journal_location(named), options).exists("journal.jsonl"):
            return named
        store = open_storage(named, options)
        rows = apply_history(store.url, lambda url: open_storage(url, options))
    except CheckpointDoctorError:
        return named  # undo's own reading names what is wrong with it
    if not rows:
        return named
    undoable = [r for r in rows if r["state"] in UNDOABLE]
    if not undoable:
        raise UsageError(
            f"no apply to {store.url} is left to undo ({len(rows)} recorded, all undone)",
            hint=f"see them: checkpoint-doctor history {store.url}",
        )
    echo_err(f"Undoing the newest apply to {store.url}: {undoable[-1]['journal']}")
    return str(undoable[-1]["journal"])


@click.command("history")
@click.argument("checkpoint")
@format_option
@storage_options
def history_command(checkpoint: str, output_format: str, storage_option: Sequence[str]) -> None:
    """List the applies made to a checkpoint, newest last, with their state (applied, undone, ...)."""
    from checkpoint_doctor.reading.history import apply_history
    from checkpoint_doctor.reading.storage import open_storage
    from checkpoint_doctor.render.changes import render_history
    from checkpoint_doctor.render.layout import json_document, layout

    options = parse_storage_options(storage_option)
    store = open_storage(checkpoint, options)
    rows = apply_history(store.url, lambda url: open_storage(url, options))
    if not rows:
        # A mistyped path, a parent of the checkpoint or its offsets/ has no applies either: named
        # as diagnose names them (issue 36: "No apply was recorded", exit 0), not "no apply".
        load(checkpoint, storage_option, deep=False, sink_path=None)
    # ``at`` is ``at_ms`` readable (ISO 8601 UTC), added beside it so that readers of at_ms keep working.
    data = {"checkpoint": store.url, "applies": [{**r, "at": _iso(r.get("at_ms"))} for r in rows]}
    hints = Hints(storage_options=public_storage_options(storage_option))
    with layout(terminal_width()):
        emit(json_document("history", data) if output_format == "json" else render_history(data, hints))
