"""The session confs the logs prove the writer ran with. Pure.

Some confs change what a restart does but are not pinned in the offsets log's ``conf`` map (Spark
reads them from the session on every start), so "the restart as configured" can only mean the
session the writer had. The logs prove two of them:

* ``spark.sql.streaming.stateStore.checkpointFormatVersion=2``: Spark 4.0+ writes ``stateUniqueIds``
  into ``CommitMetadata`` (commit log v2) only when the session's checkpoint format version is 2
  (``MicroBatchExecution`` / ``StateStoreConf.stateStoreCheckpointFormatVersion``); Spark 4.0/4.1
  read the commit log with ``validateVersionExactMatch`` against that same conf, so a restart
  without it fails on the v2 commit while one with it starts [exp: rocksdb_v2 on 4.0.5 and 4.1.4].
* ``spark.sql.streaming.queryEvolution.enableSourceEvolution=true``: pinned in the offsets log's
  conf map by the session that planned the batch (``OffsetSeqMetadata.relevantSQLConfs``), but Spark
  4.3 checks the session's value when it creates the sources, before it restores the pinned confs
  [exp: offsets_v2 of 4.2.1 restarted on 4.3.0].

A conf the operator passed (``confs``) or a checkpoint format told with ``--checkpoint-format-version``
wins over what the logs prove.
"""

from __future__ import annotations

from dataclasses import replace

from checkpoint_doctor.diagnosis.model import DiagnoseOptions
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot
from checkpoint_doctor.valueclasses import frozen

CHECKPOINT_FORMAT_VERSION = "spark.sql.streaming.stateStore.checkpointFormatVersion"
SOURCE_EVOLUTION = "spark.sql.streaming.queryEvolution.enableSourceEvolution"


@frozen
class ProvenConf:
    """A session conf the writer ran with, and the file that proves it."""

    key: str
    value: str
    evidence: str

    @property
    def text(self) -> str:
        """Return ``key=value``."""
        return f"{self.key}={self.value}"


def proven_confs(snapshot: CheckpointSnapshot) -> tuple[ProvenConf, ...]:
    """Return the session confs the newest readable commit and offsets files prove the writer used."""
    out = []
    commit = next((e for e in reversed(snapshot.commits.entries) if e.record is not None), None)
    if commit is not None and commit.record is not None and commit.record.state_unique_ids:
        why = f"{commit.file.path} is commit log v{commit.record.version} with stateUniqueIds"
        out.append(ProvenConf(CHECKPOINT_FORMAT_VERSION, "2", why))
    offsets = next(
        (e for e in reversed(snapshot.offsets.entries) if e.record is not None and e.record.metadata),
        None,
    )
    metadata = offsets.record.metadata if offsets is not None and offsets.record is not None else None
    if offsets is not None and metadata is not None:
        value = metadata.conf_value(SOURCE_EVOLUTION)
        if value is not None and value.lower() == "true":
            out.append(ProvenConf(SOURCE_EVOLUTION, "true", f"{offsets.file.path} pins it"))
    return tuple(out)


def applicable(proven: tuple[ProvenConf, ...], base: DiagnoseOptions) -> tuple[ProvenConf, ...]:
    """Return the proven confs the operator did not set otherwise."""
    told = dict(base.confs)
    return tuple(
        p
        for p in proven
        if p.key not in told
        and not (p.key == CHECKPOINT_FORMAT_VERSION and base.checkpoint_format_version is not None)
    )


def with_confs(base: DiagnoseOptions, proven: tuple[ProvenConf, ...]) -> DiagnoseOptions:
    """Return the options of a restart in the writer's session (the proven confs added)."""
    if not proven:
        return base
    confs = dict(base.confs)
    confs.update((p.key, p.value) for p in proven)
    return replace(base, confs=tuple(sorted(confs.items())))
