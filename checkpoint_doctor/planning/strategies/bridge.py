"""``bridge``: write ``offsets/(L-1)`` as a byte copy of ``offsets/P`` (P = newest offsets id below L).

That is exactly the start an async restart uses (``getPrevBatchFromStorage``), so a synchronous
restart behaves like the async one; at most the range P..L is read again. No Spark needed.
"""

from __future__ import annotations

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.digest import sha256_hex
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, unavailable
from checkpoint_doctor.planning.steps import CopyStep, QuarantineStep, Step
from checkpoint_doctor.reading.layout import hadoop_crc_path
from checkpoint_doctor.reading.snapshot import whole_content

NAME = "bridge"


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Bridge the missing ``offsets/(L-1)`` from the newest readable file below it."""
    offsets = ctx.snapshot.offsets
    latest = offsets.latest_id
    if latest is None or latest == 0 or offsets.get(latest - 1) is not None:
        return []
    prev = offsets.newest_below(latest)
    missing = f"offsets/{latest - 1}"
    if prev is None or whole_content(ctx.snapshot.raw, prev.file.path) is None:
        return [unavailable(NAME, finding.code, f"no readable offsets file below offsets/{latest} to copy")]
    steps: list[Step] = []
    crc = hadoop_crc_path(missing)
    if crc in ctx.snapshot.hadoop_crcs:
        steps.append(QuarantineStep(path=crc, reason=f"orphan checksum of {missing}"))
    steps.append(
        CopyStep(
            path=missing,
            source=prev.file.path,
            source_sha256=sha256_hex(ctx.snapshot.raw[prev.file.path]),
            reason=f"bridge: {missing} = {prev.file.path}, the start an async restart uses",
        )
    )
    return [Option(NAME, tuple(steps), (finding.code,), note=f"{missing} := copy of {prev.file.path}")]


STRATEGY = Strategy(
    NAME,
    NAME,
    (Code.ASYNC_TAIL_SYNC_RESTART, Code.OFFSETS_PREDECESSOR_MISSING, Code.OFFSETS_JUMP_AHEAD),
    propose,
)
