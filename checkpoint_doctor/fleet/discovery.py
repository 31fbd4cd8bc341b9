"""Find the checkpoints and file sink outputs in one recursive listing. Pure.

A fleet audit lists each root once (one recursive listing: on S3 one ListObjectsV2 per 1,000 keys)
and works out everything else from that listing:

* a directory is a **checkpoint** when it holds ``offsets/``, ``commits/`` or a ``metadata`` file;
* a directory is a **file sink output** when it holds ``_spark_metadata/``;
* a directory holding ``_delta_log/`` is a Delta table: not audited on its own, noted, and paired
  with the checkpoints (:mod:`checkpoint_doctor.fleet.delta`);
* a directory named ``<name>.checkpoint-doctor`` holds checkpoint-doctor's own backups, journals and
  lock for the checkpoint ``<name>`` (its backed-up files look like a damaged checkpoint): skipped,
  with a note;
* a directory with files but none of the above anywhere below it is skipped, with a note.

Targets nest: a checkpoint inside a checkpoint (``a/`` and ``a/old/``), a checkpoint inside a sink's
output (``out/_checkpoint/``), a checkpoint inside a Delta table's directory. What lies inside the
directories a checkpoint or a sink owns (``offsets/``, ``commits/``, ``state/``, ``sources/``,
``_spark_metadata/``, ``_delta_log/``) never makes a target: ``state/0/_metadata/metadata`` is an
operator's metadata, not a checkpoint. A ``metadata`` file in a directory named ``_metadata`` is
never a checkpoint's either.

Each target is then audited from its **slice** of the listing (:class:`TreeIndex`): the files
below it with paths made relative to it, exactly what listing the target itself would return.
"""

from __future__ import annotations

import bisect
import fnmatch
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate, pairwise

from checkpoint_doctor.enums import TextEnum
from checkpoint_doctor.model import DirEntries, Listing
from checkpoint_doctor.reading.layout import SINK_LOG
from checkpoint_doctor.reading.storage.local import COUNT, PRUNE, WHOLE


class TargetKind(TextEnum):
    """What an audited directory is: a checkpoint, or a file sink's output (it holds
    :data:`~checkpoint_doctor.reading.layout.SINK_LOG`). Not a plan's area (``reading.layout.Area``)."""

    CHECKPOINT = "checkpoint"
    SINK = "sink"


#: Subdirectories a checkpoint owns: nothing inside them is a target of its own.
CHECKPOINT_OWNED = ("offsets", "commits", "state", "sources")
DELTA_LOG = "_delta_log"
#: checkpoint-doctor's own directory beside each checkpoint it repaired (execution.journal.TOOL_SUFFIX).
TOOL_DIR_SUFFIX = ".checkpoint-doctor"
TOOL = "tool"

NOTE_DELTA = "delta-table"
NOTE_TOOL = "checkpoint-doctor-backups"
NOTE_NEITHER = "not-a-checkpoint"
NOTE_STRAY = "stray-files"
NOTE_EXCLUDED = "excluded"
NOTE_EMPTY = "nothing-found"


@dataclass(frozen=True)
class Target:
    """A directory to audit: ``kind`` is ``checkpoint`` or ``sink``; ``path`` is relative to the
    listed root ('' for the root itself); ``evidence`` names what made it one."""

    kind: TargetKind
    path: str
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Note:
    """Something found and skipped (or left out), with why."""

    path: str
    kind: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """Return a JSON-safe dict."""
        return {"path": self.path, "kind": self.kind, "message": self.message}


@dataclass(frozen=True)
class Discovery:
    """What one listing holds: targets (sorted by path, checkpoints before sinks) and notes."""

    targets: tuple[Target, ...]
    notes: tuple[Note, ...]


def parent_of(path: str) -> str:
    """Return the parent of a relative path ('' for a top-level name)."""
    return path.rpartition("/")[0]


def join(parent: str, name: str) -> str:
    """Join relative path parts ('' is the root)."""
    return f"{parent}/{name}" if parent else name


def _ancestors(path: str) -> Iterable[str]:
    """Yield the proper ancestors of a relative path, nearest first, ending with '' (the root)."""
    while path:
        path = parent_of(path)
        yield path


def _candidates(listing: Listing) -> tuple[dict[tuple[str, str], list[str]], list[str], list[str]]:
    """Return {(kind, dir): evidence}, the Delta table directories and checkpoint-doctor's own
    directories, from names alone."""
    found: dict[tuple[str, str], list[str]] = {}
    deltas: list[str] = []
    tools: list[str] = []
    for d in listing.dirs:
        parent, _, name = d.rpartition("/")
        if name.endswith(TOOL_DIR_SUFFIX) and len(name) > len(TOOL_DIR_SUFFIX):
            tools.append(d)
        elif name == "offsets" or name == "commits":
            found.setdefault((TargetKind.CHECKPOINT, parent), []).append(f"{name}/")
        elif name == SINK_LOG:
            found.setdefault((TargetKind.SINK, parent), []).append(f"{SINK_LOG}/")
        elif name == DELTA_LOG:
            deltas.append(parent)
    for column in listing.columns:
        if "metadata" in column.names and column.path.rpartition("/")[2] != "_metadata":
            found.setdefault((TargetKind.CHECKPOINT, column.path), []).append("metadata")
    return found, deltas, tools


def _owned_by(kind: str, path: str) -> tuple[str, ...]:
    if kind == TargetKind.CHECKPOINT:
        return tuple(join(path, d) for d in CHECKPOINT_OWNED)
    if kind == TargetKind.SINK:
        return (join(path, SINK_LOG),)
    if kind == TOOL:
        return (path,)
    return (join(path, DELTA_LOG),)


def _depth(path: str) -> int:
    return path.count("/") + 1 if path else 0


def matches(globs: Sequence[str], rel: str, url: str) -> str | None:
    """Return the first glob matching the relative path or the URL (``fnmatch``: ``*`` crosses ``/``)."""
    for glob in globs:
        if fnmatch.fnmatchcase(rel, glob) or fnmatch.fnmatchcase(url, glob):
            return glob
    return None


def discover(
    listing: Listing,
    *,
    root_url: str = "",
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> Discovery:
    """Return the checkpoints and sink outputs in a listing, and notes for what was skipped.

    ``include``/``exclude`` are globs matched against each target's path relative to the root and
    against its URL (``root_url`` + path): with includes, only matching targets are kept; a target
    matching an exclude is dropped. Left-out targets get a note.
    """
    found, deltas, tools = _candidates(listing)
    owned: set[str] = set()
    accepted: list[Target] = []
    kept_deltas: list[str] = []
    kept_tools: list[str] = []
    # Shallow first, so a directory's owner is known before anything below it is considered (a tool
    # directory before the offsets/ and commits/ of the backups it holds).
    candidates = [*found, *((DELTA_LOG, d) for d in deltas), *((TOOL, d) for d in tools)]
    order = sorted(candidates, key=lambda kp: (_depth(kp[1]), kp[1], kp[0]))
    for kind, path in order:
        if path in owned or any(a in owned for a in _ancestors(path)):
            continue
        owned.update(_owned_by(kind, path))
        if kind == TOOL:
            kept_tools.append(path)
        elif kind == DELTA_LOG:
            kept_deltas.append(path)
        else:
            accepted.append(Target(TargetKind(kind), path, tuple(sorted(set(found[(kind, path)])))))
    notes: list[Note] = []
    targets: list[Target] = []
    for target in accepted:
        url = url_join(root_url, target.path)
        if include and matches(include, target.path, url) is None:
            notes.append(Note(target.path, NOTE_EXCLUDED, f"{_what(target)} left out: matches no --include"))
            continue
        glob = matches(exclude, target.path, url)
        if glob is not None:
            notes.append(
                Note(target.path, NOTE_EXCLUDED, f"{_what(target)} left out: matches --exclude {glob!r}")
            )
            continue
        targets.append(target)
    notes.extend(
        Note(d, NOTE_DELTA, "a Delta table (_delta_log/), not a streaming checkpoint: skipped")
        for d in kept_deltas
    )
    notes.extend(
        Note(d, NOTE_TOOL, "checkpoint-doctor's own backups and journals, not a checkpoint: skipped")
        for d in kept_tools
    )
    notes.extend(_uncovered_notes(listing, [t.path for t in accepted] + kept_deltas + kept_tools))
    targets.sort(key=lambda t: (t.path, t.kind != TargetKind.CHECKPOINT))
    notes.sort(key=lambda n: (n.path, n.kind))
    return Discovery(tuple(targets), tuple(notes))


def left_out(rel: str, root_url: str, *, include: Sequence[str], exclude: Sequence[str]) -> str | None:
    """Return why a directory is left out by ``--include``/``--exclude`` (matching it or a
    directory above it), or None when it is audited."""
    paths = [rel, *(a for a in _ancestors(rel) if a)]
    if include and not any(matches(include, p, url_join(root_url, p)) for p in paths):
        return "matches no --include"
    for p in paths:
        glob = matches(exclude, p, url_join(root_url, p))
        if glob is not None:
            return f"matches --exclude {glob!r}"
    return None


def _what(target: Target) -> str:
    return "checkpoint" if target.kind == TargetKind.CHECKPOINT else "file sink output"


def prune_rule(
    root_url: str = "", *, include: Sequence[str] = (), exclude: Sequence[str] = ()
) -> Callable[[str, tuple[str, ...], list[str]], tuple[dict[str, str], bool]]:
    """Return the rule of a local audit's first listing (``LocalStorage.list_pruned``): which
    subdirectories it need not list, because :func:`discover` finds nothing in them and the
    target owning them lists them again when it is audited. Those are only the directories a
    checkpoint owns (:data:`CHECKPOINT_OWNED`: most of a fleet's files) of a checkpoint that will be
    audited (not left out by ``include``/``exclude``). Everything owned otherwise (a sink's log, a
    Delta table's log, checkpoint-doctor's own directories, a left-out checkpoint's) is listed
    whole, as before: the audit reads those logs for pairing, and notes what lies below them.

    The rule is applied to a directory only when no target above it owns it (below an owned
    directory the walk lists whole), so a checkpoint candidate it meets is one :func:`discover`
    accepts (candidates are taken shallow first; only an owner above can refuse one). The rule
    also says which directories are checkpoints or sink outputs: only targets are listed again.

    A sink's other subdirectories (its data) are listed under ``COUNT``: a directory below them
    holding no target keeps only its number of files (issue 40 item 4: a fleet's sink data files
    were most of what its first listing still held). A sink's record counts them; a checkpoint
    holding such a directory is listed whole when it is audited.
    """

    def ways(rel: str, files: tuple[str, ...], subdirs: list[str]) -> tuple[dict[str, str], bool]:
        name = rel.rpartition("/")[2]
        checkpoint = (
            "offsets" in subdirs or "commits" in subdirs or ("metadata" in files and name != "_metadata")
        )
        target = checkpoint or SINK_LOG in subdirs
        if name.endswith(TOOL_DIR_SUFFIX) and len(name) > len(TOOL_DIR_SUFFIX):
            return dict.fromkeys(subdirs, WHOLE), target
        out: dict[str, str] = {}
        if checkpoint:
            url = url_join(root_url, rel)
            audited = (
                not (include and matches(include, rel, url) is None) and matches(exclude, rel, url) is None
            )
            for owned in CHECKPOINT_OWNED:
                if owned in subdirs:
                    out[owned] = PRUNE if audited else WHOLE
        for log in (SINK_LOG, DELTA_LOG):
            if log in subdirs:
                out[log] = WHOLE
        if SINK_LOG in subdirs:
            # A file sink's data (its partitions, thousands of part files): listed for the targets
            # that may lie below it, but of a directory where none does only its number of files
            # is kept (the sink's record counts them; nothing else reads their names).
            for sub in subdirs:
                out.setdefault(sub, COUNT)
        return out, target

    return ways


def _uncovered_notes(listing: Listing, covered: list[str]) -> list[Note]:
    """Notes for directories holding files but no target, and for files lying outside every target."""
    if not covered:
        if listing.file_count:
            return [
                Note(
                    "",
                    NOTE_EMPTY,
                    f"no checkpoint, file sink output or Delta table in {listing.file_count} files",
                )
            ]
        return [Note("", NOTE_EMPTY, "no checkpoint, file sink output or Delta table: nothing is listed")]
    inside = set(covered)
    leading: set[str] = set()
    for path in covered:
        leading.update(_ancestors(path))
    # Everything below a target is part of that target (its slice), nested targets included:
    # only the directories leading to targets from outside can hold skipped things.
    leading = {d for d in leading if d not in inside and not any(a in inside for a in _ancestors(d))}
    index = TreeIndex(listing)
    notes = []
    for d in listing.dirs:
        if d in leading or d in inside:
            continue
        parent = parent_of(d)
        if parent not in leading:
            continue  # inside a target, or below a directory already noted
        count = index.count(d)
        if count:
            noun = "file" if count == 1 else "files"
            notes.append(
                Note(
                    d, NOTE_NEITHER, f"neither a checkpoint nor a file sink output ({count} {noun}): skipped"
                )
            )
    for parent in sorted(leading):
        count = index.files_in(parent)
        if count:
            noun = "file lies" if count == 1 else "files lie"
            notes.append(Note(parent, NOTE_STRAY, f"{count} {noun} here outside any checkpoint: skipped"))
    return notes


def url_join(root_url: str, rel: str) -> str:
    """Return the URL of a path relative to a root URL."""
    if not rel:
        return root_url
    return f"{root_url.rstrip('/')}/{rel}" if root_url else rel


class TreeIndex:
    """A listing, sliced per directory with binary searches over its per-directory columns.

    Directory paths sharing the prefix ``d/`` form one contiguous run of the sorted paths: exactly
    the strings ``s`` with ``"d/" <= s < "d0"`` (``'0'`` follows ``'/'``). A slice re-roots whole
    directories (one :class:`DirEntries` each), never file by file.
    """

    def __init__(self, listing: Listing) -> None:
        self.listing = listing
        columns = listing.columns
        if any(a.path > b.path for a, b in pairwise(columns)):
            columns = tuple(sorted(columns, key=lambda c: c.path))
        self._columns = columns
        self._paths = [c.path for c in columns]
        self._before = list(accumulate((len(c.names) for c in columns), initial=0))
        self._dirs = sorted(listing.dirs)
        self._unlisted = sorted(listing.unlisted)

    @staticmethod
    def _span(paths: list[str], prefix: str) -> tuple[int, int]:
        return bisect.bisect_left(paths, prefix + "/"), bisect.bisect_left(paths, prefix + "0")

    def _exact(self, prefix: str) -> int | None:
        i = bisect.bisect_left(self._paths, prefix)
        return i if i < len(self._paths) and self._paths[i] == prefix else None

    def count(self, prefix: str) -> int:
        """Return the number of files below a directory."""
        if not prefix:
            return self._before[-1]
        lo, hi = self._span(self._paths, prefix)
        exact = self._exact(prefix)
        own = len(self._columns[exact].names) if exact is not None else 0
        return self._before[hi] - self._before[lo] + own

    def files_in(self, directory: str) -> int:
        """Return the number of files directly in a directory."""
        exact = self._exact(directory)
        return len(self._columns[exact].names) if exact is not None else 0

    def slice(self, prefix: str) -> Listing:
        """Return the listing of a directory, with paths relative to it."""
        if not prefix:
            return self.listing
        cut = len(prefix) + 1
        lo, hi = self._span(self._paths, prefix)
        columns = [_rerooted(c, c.path[cut:]) for c in self._columns[lo:hi]]
        exact = self._exact(prefix)
        if exact is not None:
            columns.insert(0, _rerooted(self._columns[exact], ""))
        dlo, dhi = self._span(self._dirs, prefix)
        unlisted = tuple(
            (path[cut:] if path != prefix else "", code)
            for path, code in self._unlisted
            if path == prefix or path.startswith(prefix + "/")
        )
        return Listing(
            dirs=tuple(d[cut:] for d in self._dirs[dlo:dhi]), columns=tuple(columns), unlisted=unlisted
        )


def _rerooted(column: DirEntries, path: str) -> DirEntries:
    return column.rerooted(path)
