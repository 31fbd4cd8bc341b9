"""Rewrite the version line of a source's own file (``sources/<n>/<id>``: a rate source's start
time, a file source's file list) when the line is damaged or too new but the body is intact and
valid under ``v1``, the version every Spark line writes there: only the version line changes, so
the source reads exactly what it wrote. A file whose body is lost is not rebuilt here."""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.errors import CheckpointParseError
from checkpoint_doctor.parsing.compactible import parse_source_metadata
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine, unavailable
from checkpoint_doctor.planning.steps import Step, WriteStep
from checkpoint_doctor.reading.snapshot import FileHead

NAME = "rewrite-source-file"
FAMILY = "rewrite"


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Rewrite the version line of the source file the restart cannot read."""
    path = finding.paths[0] if finding.paths else ""
    raw = ctx.snapshot.raw.get(path)
    if not path.startswith("sources/") or not raw:
        return []
    if isinstance(raw, FileHead):
        # Only the first line of a file far larger than any log was read (issue 31): its body is not
        # in hand, and a rewrite from it would drop the rest.
        return [
            unavailable(
                FAMILY,
                finding.code,
                f"{path} is {raw.size} bytes, far larger than any source log; only part of it was "
                "read, so it is not rewritten (move it aside, or restore it from a backup)",
            )
        ]
    head, newline, body = raw.partition(b"\n")
    if not newline or not body or head.strip() == b"v1":
        return [
            unavailable(
                FAMILY, finding.code, f"{path} lost its body; only a backup or the source can restore it"
            )
        ]
    data = b"v1\n" + body
    try:
        parse_source_metadata(data, path=path)
    except CheckpointParseError as exc:
        return [unavailable(FAMILY, finding.code, f"{path} has no valid v1 body to keep ({exc.reason})")]
    old = head.decode("utf-8", "replace")[:20]
    steps: list[Step] = [*quarantine(ctx.snapshot, path, "its version line is rewritten")]
    steps.append(WriteStep.of_bytes(path, data, f"version line {old!r} -> 'v1'; the body is kept"))
    return [Option(FAMILY, tuple(steps), (finding.code,), note=f"{path} version line {old!r} -> v1")]


STRATEGY = Strategy(NAME, FAMILY, (Code.SOURCE_FILE_UNREADABLE,), propose)
