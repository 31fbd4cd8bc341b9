"""Rewrite a log file whose version is newer than the target Spark reads, when its body is valid
under a version the target reads (a downgrade). Only the files a restart reads are rewritten
(``offsets/L``, the offsets file below it, ``commits/K``); Spark writes the target's version from
then on.

* offsets ``v2`` (4.2+ "OffsetMap", ``name:offset`` lines) becomes ``v1`` when every name maps to one
  position: a single source, or ``sourceMetadataInfo`` naming source ids ``0..n-1``; the metadata loses
  ``sourceMetadataInfo`` (a v1 reader ignores it anyway). A control batch (offline repartition) is not.
* commits ``v2``/``v3`` become ``v1`` when they carry no ``stateUniqueIds`` (checkpoint format 2 names
  state files by those ids, which a v1 reader cannot use); ``v3``'s ``sinkMetadataMap`` is dropped.
* a ``v3`` commit without the ``sinkMetadataMap`` v3 requires (4.2+ cannot read it) becomes the lowest
  version its fields fit.
* any other version (``v9`` offsets, ``v7`` commits): the body must parse as the older version with
  only the fields that version has; then only the version line changes.
"""

from __future__ import annotations

import json
from typing import Any

from checkpoint_doctor.diagnosis.codes import Code
from checkpoint_doctor.diagnosis.model import Finding
from checkpoint_doctor.diagnosis.versions import target as spark_target
from checkpoint_doctor.errors import CheckpointParseError
from checkpoint_doctor.parsing.commits import parse_commit
from checkpoint_doctor.parsing.offsets import parse_offsets
from checkpoint_doctor.planning.options import Option, PlanContext, Strategy, quarantine, unavailable
from checkpoint_doctor.planning.steps import Step, WriteStep
from checkpoint_doctor.reading.snapshot import whole_content

NAME = "rewrite-format"
FAMILY = "rewrite"
_V1 = {"batchWatermarkMs", "batchTimestampMs", "conf"}
OFFSETS_KEYS = {1: _V1, 2: _V1 | {"sourceMetadataInfo", "controlBatchInfo"}}
COMMIT_KEYS = {
    1: {"nextBatchWatermarkMs"},
    2: {"nextBatchWatermarkMs", "stateUniqueIds"},
    3: {"nextBatchWatermarkMs", "stateUniqueIds", "sinkMetadataMap"},
}


class Refused(Exception):
    """Why a file cannot be rewritten (the message is shown as the option's reason)."""


def _split(raw: bytes) -> tuple[str, list[str]]:
    text = raw.decode("utf-8")
    head, _, body = text.partition("\n")
    return head.strip(), body.split("\n") if body else []


def _offsets_v2_to_v1(body: list[str], sources: int | None) -> list[str]:
    meta: dict[str, Any] = json.loads(body[0])
    if meta.get("controlBatchInfo"):
        raise Refused("it is a control batch of an offline repartition, which only 4.3 understands")
    lines = body[1:]
    names = [line.partition(":")[0] for line in lines]
    info = meta.pop("sourceMetadataInfo", None) or {}
    if len(lines) == 1:
        order = [0]
    else:
        ids = {n: (info.get(n) or {}).get("sourceId") for n in names}
        if sorted(str(v) for v in ids.values()) != [str(i) for i in range(len(names))]:
            raise Refused(
                f"its {len(names)} named sources do not map to positions (no sourceId 0..{len(names) - 1} for each name)"
            )
        order = sorted(range(len(names)), key=lambda i: int(str(ids[names[i]])))
    if sources is not None and sources != len(lines):
        raise Refused(f"it holds {len(lines)} sources, the query has {sources}")
    values = [lines[i].partition(":")[2] for i in order]
    return [json.dumps(meta, separators=(",", ":")), *values]


def _check_offsets_body(body: list[str], wanted: int) -> None:
    try:
        parse_offsets("\n".join([f"v{wanted}", *body]).encode(), path="x", max_version=wanted)
    except CheckpointParseError as exc:
        raise Refused(f"its body is not a valid v{wanted} offsets file ({exc.reason})") from exc
    meta = json.loads(body[0]) if body and body[0].strip() else {}
    extra = set(meta) - OFFSETS_KEYS[wanted]
    if extra:
        raise Refused(f"its metadata has fields v{wanted} does not know ({', '.join(sorted(extra))})")


def _offsets(raw: bytes, version: int, wanted: int, ctx: PlanContext) -> bytes:
    _, body = _split(raw)
    if version == 2:
        return "\n".join(["v1", *_offsets_v2_to_v1(body, ctx.options.diagnose.sources)]).encode("utf-8")
    problems = []
    for w in range(1, wanted + 1):  # the oldest version that reads it, as for commits
        try:
            _check_offsets_body(body, w)
        except Refused as exc:
            problems.append(str(exc))
            continue
        return "\n".join([f"v{w}", *body]).encode("utf-8")
    raise Refused("; ".join(problems))


def _commit(raw: bytes, version: int, wanted: int, exact: bool) -> bytes:
    _, body = _split(raw)
    obj: dict[str, Any] = json.loads(body[0]) if body and body[0].strip() else {}
    if obj.get("stateUniqueIds") and wanted < 2:
        raise Refused("it carries stateUniqueIds: checkpoint format 2 state files are named by them")
    if version in (2, 3):
        # Known formats: drop what the older version has no field for (v3's sink evolution record;
        # v2's ids when they are empty, since they name no state file).
        if wanted < 3:
            obj.pop("sinkMetadataMap", None)
        if not obj.get("stateUniqueIds"):
            obj.pop("stateUniqueIds", None)
    # The lowest version whose fields cover the body: readers require the fields of their version
    # (Spark 4.3 fails with "No usable value for json" on a v3 commit without sinkMetadataMap).
    fits = [
        v
        for v in (1, 2, 3)
        if v <= wanted and set(obj) <= COMMIT_KEYS[v] and (v < 3 or "sinkMetadataMap" in obj)
    ]
    fits = [v for v in fits if v == wanted] if exact else fits
    if not fits:
        extra = set(obj) - COMMIT_KEYS[min(wanted, 3)]
        what = (
            f"fields v{wanted} does not know ({', '.join(sorted(extra))})" if extra else f"no v{wanted} form"
        )
        raise Refused(f"its body has {what}")
    target = fits[0]
    text = (
        f"v{target}"
        if not body or not body[0].strip()
        else f"v{target}\n{json.dumps(obj, separators=(',', ':'))}"
    )
    try:
        parse_commit(text.encode(), path="x", max_version=target)
    except CheckpointParseError as exc:
        raise Refused(f"its body is not a valid v{target} commit file ({exc.reason})") from exc
    return text.encode()


def _wanted(ctx: PlanContext, log: str) -> int:
    t = spark_target(ctx.diagnosis.spark)
    if log == "offsets":
        return t.max_offsets_version
    if t.commits_exact_match:
        return ctx.options.diagnose.checkpoint_format_version or 1
    return t.max_commits_version


def _restart_reads(ctx: PlanContext) -> list[str]:
    offsets, commits = ctx.snapshot.offsets, ctx.snapshot.commits
    paths = []
    latest = offsets.latest_id
    if latest is not None:
        paths.append(f"offsets/{latest}")
        below = offsets.newest_below(latest)
        if below is not None:
            paths.append(below.file.path)
    if commits.latest_id is not None:
        paths.append(f"commits/{commits.latest_id}")
    return paths


def _version_of(ctx: PlanContext, path: str) -> int | None:
    log, _, batch = path.partition("/")
    entry = (ctx.snapshot.offsets if log == "offsets" else ctx.snapshot.commits).get(int(batch))
    if entry is None:
        return None
    if entry.record is not None:
        return entry.record.version
    return (
        entry.failure.version
        if entry.failure is not None and entry.failure.kind == "unsupported-version"
        else None
    )


def _v3_without_sink_map(ctx: PlanContext, path: str) -> bool:
    """A v3 commit lacking the ``sinkMetadataMap`` v3 requires (4.2+ fail: "No usable value for json")."""
    log, _, batch = path.partition("/")
    entry = ctx.snapshot.commits.get(int(batch)) if log == "commits" else None
    record = entry.record if entry is not None else None
    return record is not None and record.version == 3 and record.sink_metadata_json is None


def _rewrite(ctx: PlanContext, path: str) -> tuple[list[Step], str] | None:
    """Return the steps rewriting ``path`` and what they do (``v99 -> v1``), or None when it needs none."""
    log = path.partition("/")[0]
    version, wanted = _version_of(ctx, path), _wanted(ctx, log)
    raw = whole_content(ctx.snapshot.raw, path)
    if version is None or raw is None or (version <= wanted and not _v3_without_sink_map(ctx, path)):
        return None
    if log == "offsets":
        data = _offsets(raw, version, wanted, ctx)
    else:
        data = _commit(raw, version, wanted, spark_target(ctx.diagnosis.spark).commits_exact_match)
    new = data.split(b"\n", 1)[0].decode()
    steps: list[Step] = [*quarantine(ctx.snapshot, path, f"rewritten as {new}")]
    steps.append(WriteStep.of_bytes(path, data, f"v{version} -> {new}: the body is valid under {new}"))
    return steps, f"v{version} -> {new}"


def propose(finding: Finding, ctx: PlanContext) -> list[Option]:
    """Rewrite every too-new file the restart reads, or say why one cannot be."""
    steps: list[Step] = []
    rewritten = []
    for path in _restart_reads(ctx):
        try:
            done = _rewrite(ctx, path)
        except Refused as exc:
            return [
                unavailable(
                    FAMILY, finding.code, f"{path} cannot be rewritten for Spark {ctx.diagnosis.spark}: {exc}"
                )
            ]
        except (ValueError, UnicodeDecodeError, IndexError) as exc:
            return [
                unavailable(
                    FAMILY, finding.code, f"{path} cannot be rewritten: its body does not parse ({exc})"
                )
            ]
        if done is not None:
            steps += done[0]
            rewritten.append(f"{path} {done[1]}")
    if not steps:
        return []
    return [
        Option(
            FAMILY,
            tuple(steps),
            (finding.code,),
            note=", ".join(rewritten),
        )
    ]


STRATEGY = Strategy(
    NAME,
    FAMILY,
    # CD004 for a v3 commit without sinkMetadataMap: its body is a valid v1 commit.
    (Code.LOG_VERSION_TOO_NEW, Code.COMMIT_VERSION_MISMATCH, Code.COMMIT_FILE_UNREADABLE),
    propose,
)
