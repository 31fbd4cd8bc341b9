"""The layout of a pipeline's storage root. Pure: takes relative paths, returns data.

``spark-pipelines`` keeps each streaming flow's checkpoint at
``<storage>/_checkpoints/<catalog>/<schema>/<table>/<flow>/<version>/`` (FlowSystemMetadata). The live
version is the largest numeric directory name (``SystemMetadata.getLatestCheckpointDir``: non-numeric
names such as ``0.bak`` are ignored); a full refresh (``State.reset``) makes version n+1 and never
deletes the older ones, which are history Spark never reads again.
"""

from __future__ import annotations

from collections.abc import Iterable

from checkpoint_doctor.valueclasses import frozen

CHECKPOINTS = "_checkpoints"
#: The tool directory beside a plan's root (execution.journal.tool_url): ``<flow>.checkpoint-doctor``.
TOOL_SUFFIX = ".checkpoint-doctor"
SPEC_NAMES = ("spark-pipeline.yml", "spark-pipeline.yaml", "pipeline.yml", "pipeline.yaml")


@frozen
class FlowLayout:
    """One flow's checkpoint directory: its versions and which is live."""

    catalog: str
    schema: str
    table: str
    flow: str
    #: The numeric version directory names, oldest first.
    versions: tuple[str, ...]
    #: Non-numeric directory names beside them (``0.bak``): Spark ignores them.
    ignored: tuple[str, ...] = ()
    #: The version directories that hold no file at all.
    empty: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The flow in the pipeline's words: ``table/flow``."""
        return f"{self.table}/{self.flow}"

    @property
    def live(self) -> str | None:
        """The version Spark reads: the largest numeric name (SystemMetadata.getLatestCheckpointDir)."""
        return self.versions[-1] if self.versions else None

    @property
    def history(self) -> tuple[str, ...]:
        """The older versions: left by full refreshes, never read again."""
        return self.versions[:-1]

    @property
    def live_is_empty(self) -> bool:
        return self.live is not None and self.live in self.empty

    @property
    def dir(self) -> str:
        """The flow directory relative to the storage root."""
        return f"{CHECKPOINTS}/{self.catalog}/{self.schema}/{self.table}/{self.flow}"

    def version_dir(self, version: str) -> str:
        return f"{self.dir}/{version}"


@frozen
class PipelineLayout:
    """Every flow under a storage root's ``_checkpoints/``."""

    flows: tuple[FlowLayout, ...]

    def tables(self) -> dict[str, tuple[FlowLayout, ...]]:
        """The flows of each table, in order."""
        out: dict[str, list[FlowLayout]] = {}
        for f in self.flows:
            out.setdefault(f.table, []).append(f)
        return {t: tuple(fs) for t, fs in out.items()}

    def flow(self, name: str) -> FlowLayout | None:
        return next((f for f in self.flows if f.name == name or f.flow == name), None)


#: SystemMetadata.getLatestCheckpointDir keeps the names for which ``Try(name.toInt)`` succeeds: a
#: number past a Java int is no version at all, however large (javap of spark-pipelines 4.3.0).
_JAVA_INT_MAX = 2**31 - 1


def _numeric(name: str) -> bool:
    return name.isdigit() and name.isascii() and int(name) <= _JAVA_INT_MAX


def is_version(name: str) -> bool:
    """Whether a flow directory's entry is a version Spark counts (a Java int, in decimal digits)."""
    return _numeric(name)


def pipeline_layout(dirs: Iterable[str], files: Iterable[str]) -> PipelineLayout | None:
    """Map the directories and files below a storage root (relative paths) to its flows, or None
    when there is no ``_checkpoints/<catalog>/<schema>/<table>/<flow>/`` below it."""
    versions: dict[tuple[str, str, str, str], set[str]] = {}
    for d in dirs:
        parts = d.strip("/").split("/")
        if len(parts) >= 5 and parts[4].endswith(TOOL_SUFFIX):
            continue  # a flow directory's own plans and backups (plan <flow dir> --reset-flow), no flow
        if len(parts) >= 6 and parts[0] == CHECKPOINTS:
            key = (parts[1], parts[2], parts[3], parts[4])
            versions.setdefault(key, set()).add(parts[5])
        elif len(parts) == 5 and parts[0] == CHECKPOINTS:
            versions.setdefault((parts[1], parts[2], parts[3], parts[4]), set())
    if not versions:
        return None
    holding: set[tuple[str, ...]] = set()
    for f in files:
        parts = f.strip("/").split("/")
        if len(parts) >= 7 and parts[0] == CHECKPOINTS:
            holding.add(tuple(parts[1:6]))
    flows = []
    for key in sorted(versions):
        names = versions[key]
        numeric = tuple(sorted((n for n in names if _numeric(n)), key=int))
        ignored = tuple(sorted(n for n in names if not _numeric(n)))
        empty = tuple(n for n in numeric if (*key, n) not in holding)
        flows.append(FlowLayout(*key, versions=numeric, ignored=ignored, empty=empty))
    return PipelineLayout(tuple(flows))


def flow_dir_parts(path: str) -> tuple[str, str, str, str, str] | None:
    """For a path ending ``_checkpoints/<catalog>/<schema>/<table>/<flow>``, the storage root before
    ``_checkpoints`` and the four names; else None."""
    parts = path.rstrip("/").split("/")
    if len(parts) >= 5 and parts[-5] == CHECKPOINTS:
        return "/".join(parts[:-5]), parts[-4], parts[-3], parts[-2], parts[-1]
    return None


def live_of(names: Iterable[str]) -> str | None:
    """The live version among a flow directory's subdirectory names (largest numeric), or None."""
    numeric = [n for n in names if _numeric(n)]
    return max(numeric, key=int) if numeric else None
