"""Checks on the sources' own files under ``sources/<n>/`` (see :mod:`source_files`). Pure."""

from __future__ import annotations

from collections.abc import Iterator

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.diagnosis.model import Finding, RestartPrediction
from checkpoint_doctor.diagnosis.sources import files as source_files
from checkpoint_doctor.diagnosis.sources.files import SourceFileProblem


def _restart_reads(ctx: Context, prediction: RestartPrediction) -> list[SourceFileProblem]:
    """Problems with files this restart reads: at source creation, the re-read range, Kafka's start."""
    t, snap = ctx.target, ctx.snapshot
    out = source_files.created_problems(t, snap, dict(ctx.options.confs))
    latest = ctx.offsets(ctx.latest)
    if latest is not None and latest.record is not None:
        start = ctx.restart_start_entry
        begin = start.record.sources if start is not None and start.record is not None else None
        problem = source_files.file_source_range(t, snap, begin, latest.record.sources)
        out.extend([problem] if problem is not None else [])
    for problem in source_files.kafka_problems(t, snap):
        if source_files.kafka_reads(prediction.start_offsets, problem.source):
            out.append(problem)
    return out


def check_source_files(ctx: Context, prediction: RestartPrediction) -> Iterator[Finding]:
    """CD205 a source file the restart reads is missing or unreadable; CD206 one it does not read."""
    if ctx.is_continuous:
        return
    read = _restart_reads(ctx, prediction)
    seen = set()
    for problem in read:
        seen.add(problem.path)
        yield Finding(
            Code.SOURCE_FILE_UNREADABLE,
            f"{problem.path} ({problem.kind} source {problem.source}) is {_state(problem)}; Spark "
            f"{ctx.target.line} reads it on restart: {problem.error.search}.",
            paths=(problem.path,),
            details=(("source", problem.source), ("source_kind", problem.kind)),
        )
    kinds = source_files.source_kinds(ctx.snapshot)
    for n, log in sorted(source_files.source_logs(ctx.snapshot).items()):
        for entry in log.entries:
            if entry.failure is not None and entry.file.path not in seen:
                yield Finding(
                    Code.SOURCE_FILE_DAMAGED_UNREAD,
                    f"{entry.file.path} ({kinds.get(n, 'unknown')} source {n}) cannot be read "
                    f"({entry.failure.reason}); this restart does not read it.",
                    paths=(entry.file.path,),
                    details=(("source", n), ("kind", entry.failure.kind)),
                )


def _state(problem: SourceFileProblem) -> str:
    return "missing" if problem.reason == "missing" else f"unreadable ({problem.reason})"
