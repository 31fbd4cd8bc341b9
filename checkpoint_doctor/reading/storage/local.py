"""The local disk: an ``os.scandir`` walk, bounded reads, atomic writes and create-exclusive by link.

A plain ``os.scandir`` walk is several times faster than fsspec's per-entry ``info`` on a big
checkpoint. Names that are not valid UTF-8 (bytes Python keeps as lone surrogates) are shown with
``\\xNN`` escapes (``printable_name``) everywhere above this module, so nothing that prints, hashes
or serialises a path can fail on one; this storage maps the escaped paths back to the real names, so
such a file can still be read, backed up or deleted. Spark itself never names one: every file it
reads or writes has an ASCII name.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat as stat_mod
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import itemgetter

from checkpoint_doctor.errors import FileTooLargeError, StorageError
from checkpoint_doctor.model import DirEntries, FileStat, Listing, Stat, StatFiles
from checkpoint_doctor.reading.storage.base import Ownership, RootedPaths
from checkpoint_doctor.reading.storage.errors import backend_error, translate_error, translated

#: Open flags for reads: never block on a FIFO put where a file was listed (O_NONBLOCK), never leak
#: the descriptor to a child process.
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def printable_name(name: str) -> str:
    """Return a file name with the bytes that are not UTF-8 shown as ``\\xNN`` escapes."""
    if name.isascii():
        return name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return name.encode("utf-8", "backslashreplace").decode("ascii")
    return name


#: The name of a temp file this module writes beside ``<name>``: ``.<name>.<uuid4>.cdtmp``.
_TEMP = re.compile(r"^\.(?P<name>.+)\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.cdtmp$")


def temp_of(name: str) -> str | None:
    """Return the file name a temp file of this module was written for, or None if ``name`` is
    not one (a process killed between the temp's write and its link or rename leaves it)."""
    match = _TEMP.match(name)
    return match.group("name") if match else None


def ownership_of(path: str) -> Ownership | None:
    """Return the permission bits and owner of a file (not following a final link), or None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return stat_mod.S_IMODE(st.st_mode), st.st_uid, st.st_gid


def _sibling_ownership(directory: str) -> Ownership | None:
    """Return what a new file in ``directory`` should get: the mode and owner most of the regular
    files there have (Spark writes every file of a directory as the query's user, with one umask;
    one file made private by hand is not the rule), else the directory's owner and its read/write
    bits. At most :data:`_SIBLINGS_SEEN` files are looked at."""
    seen: Counter[Ownership] = Counter()
    try:
        with os.scandir(directory) as it:
            for entry in it:
                if temp_of(entry.name) is None and entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    seen[(stat_mod.S_IMODE(st.st_mode), st.st_uid, st.st_gid)] += 1
                    if sum(seen.values()) >= _SIBLINGS_SEEN:
                        break
        if seen:
            return seen.most_common(1)[0][0]
        st = os.stat(directory)
    except OSError:
        return None
    return stat_mod.S_IMODE(st.st_mode) & 0o666, st.st_uid, st.st_gid


#: How many files beside a new one decide its mode and owner (a bound on a huge directory).
_SIBLINGS_SEEN = 64


def _give(fd_or_path: int | str, owner: Ownership) -> None:
    """Give a file an owner and mode; an owner this process may not give (not root) is left."""
    mode, uid, gid = owner
    with contextlib.suppress(PermissionError):
        os.chown(fd_or_path, uid, gid)
    os.chmod(fd_or_path, mode)


def _makedirs_like_parent(directory: str) -> None:
    """Create ``directory`` and its missing parents, each with the owner and mode of the directory
    above it (a new ``state/0/5/`` belongs to the query's user, as its siblings do)."""
    missing: list[str] = []
    path = directory
    while not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for new in reversed(missing):
        try:
            os.mkdir(new)
        except FileExistsError:
            continue
        st = os.stat(os.path.dirname(new))
        _give(new, (stat_mod.S_IMODE(st.st_mode), st.st_uid, st.st_gid))


@contextlib.contextmanager
def _temp_beside(
    final: str,
    data: bytes,
    *,
    mode: int = 0o666,
    owner: Ownership | None = None,
    keep: Callable[[], bool] | None = None,
) -> Iterator[str]:
    """Write ``data`` to a hidden, fsync'ed temp file beside ``final``, created with ``mode`` (less
    the umask) or, given ``owner``, private until it gets that mode and owner; it goes whatever
    fails."""
    os.makedirs(os.path.dirname(final), exist_ok=True)
    tmp = os.path.join(os.path.dirname(final), f".{os.path.basename(final)}.{uuid.uuid4()}.cdtmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(tmp, flags, 0o600 if owner is not None else mode)
        with open(fd, "wb", closefd=True) as fh:
            fh.write(data)
            fh.flush()
            if owner is not None:
                _give(fd, owner)
            os.fsync(fh.fileno())
        yield tmp
    finally:
        if os.path.lexists(tmp) and not (keep is not None and keep()):
            os.unlink(tmp)


_first = itemgetter(0)

#: A file of a directory: the name shown, its real name, and its (size, mtime in millis) if stat'ed.
_Row = tuple[str, str, tuple[int, int | None] | None]

#: The metadata logs (``offsets/``, ``commits/``, a sink's ``_spark_metadata/``; a source's log is
#: ``sources/<n>/``): their files' sizes and mtimes are the diagnosis's evidence (an empty batch
#: file, when a batch was written), so they are stat'ed as listed, and a file gone between the
#: name and the stat is not listed.
_LOG_DIRS = frozenset({"offsets", "commits", "_spark_metadata"})


def _stat_eagerly(rel: str) -> bool:
    """Return whether the files of the directory at ``rel`` are stat'ed while listed."""
    parent, _, name = rel.rpartition("/")
    return name in _LOG_DIRS or parent.rpartition("/")[2] == "sources"


#: ``os.stat`` of a name in a directory opened once: half the time of a stat by path, which the
#: kernel resolves component by component (a log file is seven directories deep in a fleet).
_DIR_FD = os.stat in os.supports_dir_fd
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def _stat_rows(directory: str, files: list[tuple[str, str]], rows: list[_Row]) -> None:
    """Add the rows of regular files (name shown, real name) with their stat; a file gone since its
    name was read (renamed or deleted by a live writer) is not part of this listing."""
    if not files:
        return
    fd = os.open(directory, _DIR_FLAGS) if _DIR_FD else None
    try:
        for name, real in files:
            try:
                if fd is not None:
                    st = os.stat(real, dir_fd=fd, follow_symlinks=False)
                else:
                    st = os.stat(os.path.join(directory, real), follow_symlinks=False)
            except FileNotFoundError:
                continue
            rows.append((name, real, (st.st_size, st.st_mtime_ns // 1_000_000)))
    finally:
        if fd is not None:
            os.close(fd)


def _stat_in(directory: str, names: tuple[str, ...]) -> StatFiles:
    """Return the function stat'ing files of ``directory`` (a real path) by their index in
    ``names``, following a link as the walk does. A file gone since it was listed has size 0 and
    no mtime (reading it says it is gone)."""

    def stat_files(indexes: Sequence[int]) -> list[Stat]:
        out: list[Stat] = []
        fd = None
        if _DIR_FD and len(indexes) > 1:
            with contextlib.suppress(OSError):
                fd = os.open(directory, _DIR_FLAGS)
        # By name in the opened directory, else by path (no descriptor: one file, or none given).
        prefix = "" if fd is not None else directory + os.sep
        add, stat = out.append, os.stat
        try:
            for index in indexes:
                try:
                    st = stat(prefix + names[index], dir_fd=fd)
                except OSError:
                    add((0, None))
                    continue
                add((st.st_size, st.st_mtime_ns // 1_000_000))
        finally:
            if fd is not None:
                os.close(fd)
        return out

    return stat_files


def _column(directory: str, rel: str, names: list[str], rows: list[_Row]) -> DirEntries:
    """Return the column of a directory's files (sorted by name, compared as strings): stat'ed if
    every row was, else stat'ed when first asked for. The first file not stat'ed yet is stat'ed
    now (the probe), and raises when that fails otherwise than by the file being gone: a
    directory that can be read but not searched cannot be listed, as when every file was stat'ed
    while listed."""
    seeds: dict[int, Stat] = {}
    if not rows:
        # The common case: ASCII names, nothing stat'ed yet (one per directory of a fleet).
        names.sort()
        shown = real = tuple(names)
        probe = 0
    else:
        if names:
            rows.extend((n, n, None) for n in names)
        rows.sort(key=_first)
        shown = tuple(r[0] for r in rows)
        if all(r[2] is not None for r in rows):
            return DirEntries(
                rel,
                shown,
                tuple(r[2][0] for r in rows if r[2] is not None),
                tuple(r[2][1] for r in rows if r[2] is not None),
            )
        real = tuple(r[1] for r in rows)
        seeds = {i: r[2] for i, r in enumerate(rows) if r[2] is not None}
        probe = next(i for i in range(len(real)) if i not in seeds)
    try:
        st = os.stat(f"{directory}/{real[probe]}")
    except FileNotFoundError:
        pass
    else:
        seeds[probe] = (st.st_size, st.st_mtime_ns // 1_000_000)
    return DirEntries.unstatted(rel, shown, _stat_in(directory, real), seeds)


#: A directory to list: real path, relative path as shown, whether a name on the way was escaped,
#: its device, and the (device, inode) of every directory from the root down to it.
_Pending = tuple[str, str, bool, int, frozenset[tuple[int, int]]]


class _Walk:
    """One listing of a directory tree: columns per directory, directories, unlisted ones.

    Symbolic links are followed, as Hadoop's local file system follows them for Spark (a ``state/``
    on another volume, a checkpoint linked into a fleet directory), except a link to a directory
    already on the way down from the root (a loop): each directory carries the (device, inode) set
    of its ancestors.
    """

    def __init__(self, aliases: dict[str, str], display_root: str) -> None:
        self.columns: list[DirEntries] = []
        self.dirs: list[str] = []
        self.unlisted: list[tuple[str, int]] = []
        self.aliases = aliases
        self.display_root = display_root

    def alias(self, rel: str, real: str) -> None:
        self.aliases[f"{self.display_root}/{rel}"] = real

    def directory(self, item: _Pending, stack: list[_Pending]) -> None:
        """List one directory: its files become a column, its subdirectories go on the stack."""
        rel = item[1]
        subdirs: list[_Pending] = []
        try:
            column = self._scan(item, subdirs)
        except FileNotFoundError:
            if not rel:
                raise
            return  # a subdirectory removed while we walk (purge, state maintenance)
        except OSError as exc:
            if not rel:
                raise
            # Unreadable (no permission, I/O error): named in the listing, the walk goes on.
            self.unlisted.append((rel, exc.errno or errno.EIO))
            return
        if column is not None:
            self.columns.append(column)
        for sub in subdirs:
            self.dirs.append(sub[1])
            stack.append(sub)

    def _scan(self, item: _Pending, subdirs: list[_Pending]) -> DirEntries | None:
        # The hot loop of a local inspect and of the audit's listing (bench: audit): one scandir
        # per directory. Outside the metadata logs a file's size and mtime are stat'ed when first
        # asked for (DirEntries.unstatted): most files of an audited tree are state store, sink
        # and table data files whose names are all the diagnosis reads, and a stat costs three names.
        path, rel, renamed, _, _ = item
        eager = _stat_eagerly(rel)
        with os.scandir(path) as it:
            entries = list(it)
        rows: list[_Row] = []
        if not eager and not renamed:
            # The names of the files, ASCII as Spark writes them, taken in one comprehension; the
            # few other entries (directories, links) one by one.
            names = [e.name for e in entries if e.is_file(follow_symlinks=False)]
            if "".join(names).isascii():
                if len(names) < len(entries):
                    others = [e for e in entries if not e.is_file(follow_symlinks=False)]
                    self._entries(others, item, [], rows, subdirs, None)
                return _column(path, rel, names, rows) if names or rows else None
        names = []
        statted: list[tuple[str, str]] | None = [] if eager else None
        self._entries(entries, item, names, rows, subdirs, statted)
        if statted:
            _stat_rows(path, statted, rows)
        return _column(path, rel, names, rows) if names or rows else None

    def _entries(
        self,
        entries: list[os.DirEntry[str]],
        item: _Pending,
        names: list[str],
        rows: list[_Row],
        subdirs: list[_Pending],
        statted: list[tuple[str, str]] | None,
    ) -> None:
        """Take the entries of a directory one by one: a file's name goes to ``names`` (to
        ``statted``, shown and real, when it is to be stat'ed now; to ``rows`` when its name is shown
        escaped), a directory or a link to one to ``subdirs`` (a link to a file to ``rows``)."""
        _, rel, renamed, dev, chain = item
        append = names.append
        for entry in entries:
            name = real = entry.name
            moved = renamed
            if not name.isascii():
                name = printable_name(real)
                moved = moved or name != real
            # is_dir/is_file come from the directory entry's type (no syscall); sockets and FIFOs
            # are not files of a checkpoint. A file's path is built only when it needs an alias.
            if entry.is_file(follow_symlinks=False):
                if statted is not None:
                    statted.append((name, real))
                elif name is real:
                    append(name)
                else:
                    rows.append((name, real, None))
                if moved:
                    self.alias(f"{rel}/{name}" if rel else name, entry.path)
                continue
            child = f"{rel}/{name}" if rel else name
            if entry.is_dir(follow_symlinks=False):
                key = (dev, entry.inode())
                subdirs.append((entry.path, child, moved, dev, chain | {key}))
            elif not (entry.is_symlink() and self._link(entry, child, moved, chain, rows, subdirs)):
                continue
            if moved:
                self.alias(child, entry.path)

    @staticmethod
    def _link(
        entry: os.DirEntry[str],
        child: str,
        moved: bool,
        chain: frozenset[tuple[int, int]],
        rows: list[_Row],
        subdirs: list[_Pending],
    ) -> bool:
        """Follow a symbolic link: a file becomes a row (with the stat of what it points to), a
        directory a subdirectory to list, unless it is one of its own ancestors. Return whether it
        was taken (a dangling link is not)."""
        try:
            st = os.stat(entry.path)
        except OSError:
            return False  # dangling, or a loop the kernel refuses (ELOOP)
        if stat_mod.S_ISREG(st.st_mode):
            rows.append((child.rpartition("/")[2], entry.name, (st.st_size, st.st_mtime_ns // 1_000_000)))
            return True
        key = (st.st_dev, st.st_ino)
        if not stat_mod.S_ISDIR(st.st_mode) or key in chain:
            return False
        subdirs.append((entry.path, child, moved, st.st_dev, chain | {key}))
        return True

    def listing(self) -> Listing:
        self.columns.sort(key=lambda d: d.path)
        self.dirs.sort()
        self.unlisted.sort()
        return Listing(dirs=tuple(self.dirs), columns=tuple(self.columns), unlisted=tuple(self.unlisted))


#: What :meth:`LocalStorage.list_pruned` does with a subdirectory: list it and apply the rule
#: inside it (``WALK``), list all of it without the rule (``WHOLE``), only name it (``PRUNE``), or
#: list it under the rule keeping only the number of files of each directory below it in which
#: the rule finds nothing (``COUNT``: a file sink's data, whose names the audit never reads).
WALK, WHOLE, PRUNE, COUNT = "walk", "whole", "prune", "count"

#: The rule of a pruned walk: given a directory's relative path, its files' names and its
#: subdirectories' names, return what to do with each subdirectory (:data:`WALK` if not named),
#: and whether the directory may be listed again later (only those are remembered).
PruneRule = Callable[[str, tuple[str, ...], list[str]], tuple[Mapping[str, str], bool]]


class _PrunedWalk(_Walk):
    """A walk that lists some subdirectories by name only, as ``rule`` says, and remembers where
    each directory it listed is (:meth:`LocalStorage.list_pruned`)."""

    def __init__(self, aliases: dict[str, str], display_root: str, rule: PruneRule) -> None:
        super().__init__(aliases, display_root)
        self.rule = rule
        #: The directories listed under the rule that may be listed again, as the walk met them.
        self.nodes: dict[str, _Pending] = {}
        #: Directories listed whole: the rule is not applied below them.
        self.whole: set[str] = set()
        #: Directories the rule pruned (named, not listed).
        self.pruned: list[str] = []
        #: Directories listed under ``COUNT``: only their subdirectories' names are kept, and, for
        #: each in which the rule finds nothing, its number of files (``counted``).
        self.counting: set[str] = set()
        self.counted: list[tuple[str, int]] = []

    def directory(self, item: _Pending, stack: list[_Pending]) -> None:
        rel = item[1]
        if rel in self.whole:
            # Listed as the plain walk lists it; so is everything below it.
            self.whole.discard(rel)
            below: list[_Pending] = []
            super().directory(item, below)
            self.whole.update(sub[1] for sub in below)
            stack.extend(below)
            return
        subdirs: list[_Pending] = []
        try:
            column = self._scan(item, subdirs)
        except FileNotFoundError:
            if not rel:
                raise
            return
        except OSError as exc:
            if not rel:
                raise
            self.unlisted.append((rel, exc.errno or errno.EIO))
            return
        counting = rel in self.counting
        if counting:
            self.counting.discard(rel)
        names = [sub[1].rpartition("/")[2] for sub in subdirs]
        ways, again = self.rule(rel, column.names if column is not None else (), names)
        if column is not None:
            if counting and not again and not any(w in (PRUNE, WHOLE) for w in ways.values()):
                # Nothing here for discovery: the number of files is all that is kept.
                self.counted.append((rel, len(column.names)))
            else:
                self.columns.append(column)
        if again:
            self.nodes[rel] = item
        for sub, name in zip(subdirs, names, strict=True):
            self.dirs.append(sub[1])
            way = ways.get(name, WALK)
            if way == PRUNE:
                self.pruned.append(sub[1])
                continue
            stack.append(sub)
            if way == WHOLE:
                self.whole.add(sub[1])
            elif way == COUNT or (counting and way == WALK):
                self.counting.add(sub[1])


def _rerooted(listing: Listing, rel: str) -> Listing:
    """Return a listing of the tree below ``rel`` with paths relative to ``rel`` (what
    ``TreeIndex.slice`` makes of a whole listing)."""
    if not rel:
        return listing
    cut = len(rel) + 1
    columns = tuple(c.rerooted(c.path[cut:] if c.path != rel else "") for c in listing.columns)
    return Listing(
        dirs=tuple(d[cut:] for d in listing.dirs if d != rel),
        columns=columns,
        unlisted=tuple((p[cut:] if p != rel else "", code) for p, code in listing.unlisted),
    )


def _read_fd(fd: int, limit: int | None, size_hint: int) -> bytes:
    """Read ``limit`` bytes of a regular file's descriptor, or to its end (``limit`` None), fewer at
    its end: what ``BufferedReader.read`` returns, without the file object."""
    if limit is not None:
        data = os.read(fd, limit)
        if len(data) == limit or not data:
            return data
        parts = [data]
        got = len(data)
        while got < limit:
            chunk = os.read(fd, limit - got)
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)
    parts = []
    chunk = os.read(fd, max(size_hint + 1, 1 << 16))
    while chunk:
        parts.append(chunk)
        chunk = os.read(fd, 1 << 16)
    return b"".join(parts)


class LocalStorage(RootedPaths):
    """A directory on this machine's file system (a plain path or a ``file://`` URL)."""

    protocol = "file"
    is_local = True
    atomic_create = True

    def __init__(self, url: str, root: str, aliases: dict[str, str] | None = None) -> None:
        self.url = url
        self.root = root.rstrip("/") if root not in ("/", "") else root
        #: escaped path -> real path, for names that are not UTF-8 (shared with children)
        self._aliases: dict[str, str] = aliases if aliases is not None else {}

    def full_path(self, rel: str) -> str:
        """Return the real path of a relative path (escaped names mapped back)."""
        path = super().full_path(rel)
        return self._aliases.get(path, path) if self._aliases else path

    def child(self, rel: str) -> LocalStorage:
        """Return the storage rooted at a subdirectory."""
        return LocalStorage(self.url_of(rel), super().full_path(rel), self._aliases)

    def resolved_root(self) -> tuple[str, str]:
        """Return ``("file", <real path of the root, symlinks resolved>)``."""
        return self.protocol, os.path.realpath(self.full_path(""))

    # ----------------------------------------------------------------------------- listing
    def list_tree(self, *, missing_ok: bool = False) -> Listing:
        """List every file below the root (see :meth:`Storage.list_tree`)."""
        with translated(self.url, "list"):
            root = self.full_path("")
            if not os.path.exists(root):
                if missing_ok:
                    return Listing((), ())
                if os.path.islink(root):
                    os.stat(root)  # a symlink loop raises ELOOP, said as such (not "no such file")
                raise FileNotFoundError(root)
            if not os.path.isdir(root):
                raise NotADirectoryError(root)
            walk = _Walk(self._aliases, self.root)
            st = os.stat(root)
            stack: list[_Pending] = [(root, "", False, st.st_dev, frozenset({(st.st_dev, st.st_ino)}))]
            while stack:
                walk.directory(stack.pop(), stack)
            return walk.listing()

    def list_pruned(
        self, rule: PruneRule
    ) -> tuple[Listing, Callable[[str], Listing], tuple[str, ...], tuple[tuple[str, int], ...]]:
        """List the tree as :meth:`list_tree` does, except the subdirectories ``rule`` prunes
        (named in ``dirs``, not listed); return that listing, the pruned directories (sorted),
        and a function listing the subtree
        of a directory listed under the rule, relative to it, exactly as the slice of
        :meth:`list_tree`'s listing would be (the same walk, continued from where it met the
        directory: links, loops and escaped names alike). An audit lists the tree without the
        checkpoints' own directories, then each checkpoint when it audits it: it never holds the
        listing of the whole fleet (issue 40 item 4). Then the pruned directories (sorted), and
        last the directories listed under ``COUNT`` whose files are left out of the listing, each
        with its number of files (sorted by path).

        Raises:
            StorageError: as :meth:`list_tree`.
        """
        with translated(self.url, "list"):
            root = self._walk_root()
            walk = _PrunedWalk(self._aliases, self.root, rule)
            stack = [root]
            while stack:
                walk.directory(stack.pop(), stack)
            listing = walk.listing()
        nodes = walk.nodes

        def subtree(rel: str) -> Listing:
            with translated(self.url_of(rel), "list"):
                node = nodes[rel]
                if not os.path.isdir(node[0]):
                    # Gone since the first listing (a checkpoint deleted mid-audit): said as a
                    # missing directory, where the whole listing's files would fail to be read.
                    raise FileNotFoundError(node[0])
                sub = _Walk(self._aliases, self.root)
                stack = [node]
                while stack:
                    sub.directory(stack.pop(), stack)
                return _rerooted(sub.listing(), rel)

        return listing, subtree, tuple(sorted(walk.pruned)), tuple(sorted(walk.counted))

    def _walk_root(self) -> _Pending:
        """Return the walk's first directory, the root (raising as :meth:`list_tree` says)."""
        root = self.full_path("")
        if not os.path.exists(root):
            if os.path.islink(root):
                os.stat(root)
            raise FileNotFoundError(root)
        if not os.path.isdir(root):
            raise NotADirectoryError(root)
        st = os.stat(root)
        return (root, "", False, st.st_dev, frozenset({(st.st_dev, st.st_ino)}))

    # ----------------------------------------------------------------------------- reading
    def subdirs(self, rel: str = "") -> list[str]:
        """Return the directories directly below a path (symlinks to directories count, as
        Hadoop's local file system follows them)."""
        with translated(self.url_of(rel), "list"):
            try:
                entries = list(os.scandir(self.full_path(rel)))
            except (FileNotFoundError, NotADirectoryError):
                return []
            # A name that is not UTF-8 has no URL to give (the tree walk aliases it): left out.
            return sorted(e.name for e in entries if printable_name(e.name) == e.name and e.is_dir())

    def read(self, rel: str, *, max_bytes: int | None = None) -> bytes:
        """Return the bytes of one regular file, at most ``max_bytes`` of them."""
        return self._read(rel, max_bytes, head=False)

    def _read(self, rel: str, max_bytes: int | None, *, head: bool) -> bytes:
        # ``translated`` without its context manager, the URL made for an error only: a local read
        # of a log file takes microseconds, the two a third of that, and an audit reads thousands
        # (bench: delta).
        try:
            return self._read_fd_of(rel, max_bytes, head)
        except Exception as exc:
            error = backend_error(exc, self.url_of(rel), "read")
            if error is exc:
                raise
            raise error from exc

    def _read_fd_of(self, rel: str, max_bytes: int | None, head: bool) -> bytes:
        # The descriptor read directly: a file object and its buffer cost more than the read of
        # a small file (an audit reads thousands: the log tails and a state header per store).
        fd = os.open(self.full_path(rel), _READ_FLAGS)
        try:
            st = os.fstat(fd)
            if stat_mod.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory")
            if not stat_mod.S_ISREG(st.st_mode):
                raise StorageError(
                    self.url_of(rel), "read", "not a regular file", hint="remove it or move it away"
                )
            if max_bytes is None:
                return _read_fd(fd, None, st.st_size)
            if head:
                return _read_fd(fd, min(st.st_size + 1, max_bytes), st.st_size)
            if st.st_size > max_bytes:
                raise FileTooLargeError(self.url_of(rel), st.st_size, max_bytes)
            # Ask for what the stat says plus one byte (a read of n bytes allocates n up front).
            data = _read_fd(fd, min(st.st_size, max_bytes) + 1, st.st_size)
            if len(data) > st.st_size:  # grew since the stat: read on, still bounded
                data += _read_fd(fd, max_bytes + 1 - len(data), 0)
            if len(data) > max_bytes:
                raise FileTooLargeError(self.url_of(rel), len(data), max_bytes)
            return data
        finally:
            os.close(fd)

    def _read_all(
        self, rels: Iterable[str], max_bytes: int | None, *, head: bool
    ) -> dict[str, bytes | StorageError]:
        # One after the other: local reads take microseconds.
        out: dict[str, bytes | StorageError] = {}
        for rel in dict.fromkeys(rels):
            try:
                out[rel] = self._read(rel, max_bytes, head=head)
            except StorageError as exc:
                out[rel] = exc
        return out

    def stat(self, rel: str) -> FileStat | None:
        """Return the current stat of a regular file, or None."""
        with translated(self.url_of(rel), "stat"):
            try:
                st = os.stat(self.full_path(rel))
            except FileNotFoundError:
                return None
            if not stat_mod.S_ISREG(st.st_mode):
                return None
            return FileStat(rel, st.st_size, st.st_mtime_ns // 1_000_000)

    def exists(self, rel: str) -> bool:
        """Return whether a file or directory exists at the path."""
        with translated(self.url_of(rel), "stat"):
            return os.path.exists(self.full_path(rel))

    # ----------------------------------------------------------------------------- changing
    def write_exclusive(
        self,
        rel: str,
        data: bytes,
        *,
        like_siblings: bool = False,
        owner: Ownership | None = None,
        keep_temp: bool = False,
    ) -> str | None:
        """Create a file that must not exist yet, atomically.

        The data goes to a hidden temp file in the same directory and is fsync'ed, then ``os.link``
        gives it the final name, which fails if the name exists (atomic on every POSIX file system,
        NFS included), and the temp goes: never a partial file under the final name, and of two
        processes creating one name exactly one succeeds.

        ``like_siblings``: the file (and any directory made for it) gets the mode and owner of the
        files beside it, not this process's (a repair run as root must leave files the query's
        user can read, whatever the umask); ``owner``: exactly that mode and owner (a restore).
        ``keep_temp``: the temp file stays once linked (a second name of the new file, which proves
        the tool created it: :meth:`created_from_temp`) and its relative path is returned.
        """
        linked = [False]
        with translated(self.url_of(rel), "write"):
            final = self.full_path(rel)
            if like_siblings or owner is not None:
                _makedirs_like_parent(os.path.dirname(final))
                owner = owner or _sibling_ownership(os.path.dirname(final))
            with _temp_beside(final, data, owner=owner, keep=lambda: keep_temp and linked[0]) as tmp:
                try:
                    os.link(tmp, final)
                    linked[0] = True
                except FileExistsError:
                    raise
                except OSError:
                    # No hard links here (FAT, some FUSE file systems): check, then rename. Still
                    # never a partial file, but two racing creators could both pass the check.
                    if os.path.lexists(final):
                        raise FileExistsError(errno.EEXIST, "exists", final) from None
                    os.replace(tmp, final)
        if not linked[0]:
            return None
        base = rel.rpartition("/")[0]
        name = os.path.basename(tmp)
        return f"{base}/{name}" if base else name

    def created_from_temp(self, rel: str) -> bool | None:
        """Return whether a temp file of the tool's beside ``rel`` is the same file (device and
        inode): ``rel`` was linked from it by :meth:`write_exclusive` (the only way a temp name and
        the final name share an inode), so the tool created it, whatever anyone else wrote."""
        try:
            st = os.lstat(self.full_path(rel))
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise translate_error(exc, self.url_of(rel), "stat") from exc
        for temp in self.temps_beside(rel):
            with contextlib.suppress(OSError):
                other = os.lstat(self.full_path(temp))
                if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                    return True
        return False

    def write(self, rel: str, data: bytes, *, private: bool = False) -> None:
        """Create or replace a file atomically: temp file, fsync, ``os.replace``. ``private``: only
        this process's user may read it (a backup of a file that may be private)."""
        with translated(self.url_of(rel), "write"):
            final = self.full_path(rel)
            with _temp_beside(final, data, mode=0o600 if private else 0o666) as tmp:
                os.replace(tmp, final)

    def temps_beside(self, rel: str) -> list[str]:
        """Return the temp files this module left beside ``rel`` (relative paths), by a process
        killed between their write and their link: the tool's own, to clean."""
        directory, _, name = self.full_path(rel).rpartition("/")
        base = rel.rpartition("/")[0]
        try:
            names = os.listdir(directory or "/")
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise translate_error(exc, self.url_of(base), "list") from exc
        return sorted(f"{base}/{n}" if base else n for n in names if temp_of(n) == name)

    def delete(self, rel: str) -> None:
        """Delete one file."""
        with translated(self.url_of(rel), "delete"):
            os.unlink(self.full_path(rel))

    def delete_tree(self, rel: str) -> None:
        """Delete a directory and everything below it."""
        with translated(self.url_of(rel), "delete"):
            import shutil  # only a repair removes a tree; not a verdict's start-up

            shutil.rmtree(self.full_path(rel))

    def makedirs(self, rel: str) -> None:
        """Create a directory and its parents."""
        with translated(self.url_of(rel), "create"):
            os.makedirs(self.full_path(rel), exist_ok=True)

    def remove_dir(self, rel: str) -> None:
        """Remove an empty directory (``os.rmdir``: one that is not empty stays, and says so)."""
        with translated(self.url_of(rel), "remove directory"):
            os.rmdir(self.full_path(rel))

    def set_mtime(self, rel: str, mtime_ms: int) -> None:
        """Set a file's modification time, to the millisecond; a symbolic link is left as it is."""
        with translated(self.url_of(rel), "set the time of"):
            full = self.full_path(rel)
            if not os.path.islink(full):
                ns = mtime_ms * 1_000_000
                os.utime(full, ns=(ns, ns))

    def ownership(self, rel: str) -> Ownership | None:
        """Return a file's mode and owner (not following a final link), or None if it is not there."""
        return ownership_of(self.full_path(rel))

    def set_ownership(self, rel: str, owner: Ownership) -> None:
        """Give a file a mode and owner (an owner only root may give is left to this process's
        user); a symbolic link is left as it is (``os.chmod`` follows it out of the checkpoint)."""
        with translated(self.url_of(rel), "set the owner of"):
            full = self.full_path(rel)
            if not os.path.islink(full):
                mode, uid, gid = owner
                with contextlib.suppress(PermissionError):
                    os.chown(full, uid, gid, follow_symlinks=False)
                os.chmod(full, mode)

    def link_target(self, rel: str) -> str | None:
        """Return what a symbolic link at the path points to, as written, or None."""
        with translated(self.url_of(rel), "read"):
            full = self.full_path(rel)
            return os.readlink(full) if os.path.islink(full) else None

    def read_link_target(self, rel: str, target: str, *, max_bytes: int | None = None) -> bytes:
        """Return the bytes of the file a link at ``rel`` to ``target`` points to (relative to the
        link's directory, as the kernel resolves it)."""
        url = self.url_of(rel)
        with translated(url, "read"):
            path = os.path.join(os.path.dirname(self.full_path(rel)), target)
            with open(path, "rb") as fh:
                data = fh.read(max_bytes + 1 if max_bytes is not None else -1)
        if max_bytes is not None and len(data) > max_bytes:
            raise FileTooLargeError(url, len(data), max_bytes)
        return data

    def make_link(self, rel: str, target: str) -> None:
        """Create the symbolic link ``rel`` -> ``target`` (fails if the name exists)."""
        with translated(self.url_of(rel), "link"):
            os.symlink(target, self.full_path(rel))


def open_local(url: str, path: str) -> LocalStorage:
    """Return the storage of a local path (``~`` expanded, made absolute)."""
    local = os.path.abspath(os.path.expanduser(path))
    shown = url if "://" in url else local
    return LocalStorage(printable_name(shown), local)
