"""What a repair step reads and changes, over the checkpoint and sink stores (the I/O a step is
handed: :class:`~checkpoint_doctor.planning.steps.StepIO`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from checkpoint_doctor.digest import sha256_hex
from checkpoint_doctor.errors import (
    CheckpointNotFoundError,
    PlanFormatError,
    StorageError,
)
from checkpoint_doctor.planning.steps import Area
from checkpoint_doctor.reading.storage import Storage
from checkpoint_doctor.reading.storage.base import Ownership

StoreOpener = Callable[[str], Storage]


class AreaIO:
    """The :class:`~checkpoint_doctor.planning.steps.StepIO` over the checkpoint and sink stores."""

    def __init__(self, checkpoint: Storage, sink: Storage | None) -> None:
        self.checkpoint = checkpoint
        self.sink = sink
        #: Keep the temp file each create is linked from (local disk), until the journal counts the
        #: step: after a kill, the same inode beside a file proves apply created it (issue 31).
        self.keep_temps = False
        self.kept: list[tuple[Area, str]] = []

    def store(self, area: Area) -> Storage:
        if area == Area.SINK:
            if self.sink is None:
                raise PlanFormatError("the plan changes a sink log but has no sink path")
            return self.sink
        return self.checkpoint

    def read(self, area: Area, path: str) -> bytes:
        return self.store(area).read(path)

    def exists(self, area: Area, path: str) -> bool:
        return self.store(area).stat(path) is not None

    def current(self, area: Area, path: str) -> bytes | None:
        store = self.store(area)
        return store.read(path) if store.stat(path) is not None else None

    def delete(self, area: Area, path: str) -> None:
        self.store(area).delete(path)

    def create(self, area: Area, path: str, data: bytes) -> None:
        # A new file belongs to whoever owns the files beside it (the query's user), with their
        # mode, not to a repair run as root under its umask (issue: root 0600 offsets/30).
        kept = self.store(area).write_exclusive(path, data, like_siblings=True, keep_temp=self.keep_temps)
        if kept is not None:
            self.kept.append((area, kept))

    def drop_kept(self) -> None:
        """Remove the temp files kept so far: the journal now counts their steps."""
        while self.kept:
            area, temp = self.kept[-1]
            with contextlib.suppress(CheckpointNotFoundError):
                self.store(area).delete(temp)
            self.kept.pop()

    def created_here(self, area: Area, path: str) -> bool | None:
        """Return whether the file at ``path`` was provably created by this tool's create (a temp
        file beside it is the same inode); None: the store cannot tell (object stores)."""
        return self.store(area).created_from_temp(path)

    def restore(self, area: Area, path: str, data: bytes, owner: Ownership | None) -> None:
        """Create a saved file again with the mode and owner it had (local disk)."""
        if owner is None:
            self.create(area, path, data)
        else:
            self.store(area).write_exclusive(path, data, owner=owner)

    def link_of(self, area: Area, path: str) -> str | None:
        """Return what a path that is a symbolic link points to (as written), or None."""
        return self.store(area).link_target(path)

    def link_holds(self, area: Area, path: str, link: str, data: bytes) -> bool:
        """Return whether the file a link at ``path`` would point to holds exactly ``data``."""
        try:
            held = self.store(area).read_link_target(path, link, max_bytes=len(data))
        except StorageError:
            return False
        return sha256_hex(held) == sha256_hex(data)

    def relink(self, area: Area, path: str, link: str) -> None:
        """Create the symbolic link ``path`` -> ``link`` again (fails if the name exists)."""
        self.store(area).make_link(path, link)

    def ownership(self, area: Area, path: str) -> Ownership | None:
        """Return the mode and owner of a file (None on object stores)."""
        return self.store(area).ownership(path)

    def remove_temps(self, area: Area, path: str) -> list[str]:
        """Delete the temp files a killed apply or undo left beside a path it changed (the tool's
        own: ``.<name>.<uuid>.cdtmp``, local disk only); return them."""
        store = self.store(area)
        found = store.temps_beside(path)
        for temp in found:
            with contextlib.suppress(CheckpointNotFoundError):
                store.delete(temp)
        return found

    def set_mtime(self, area: Area, path: str, mtime_ms: int | None) -> None:
        """Give a restored file back its modification time (object stores: the ETag of the same
        bytes is the same), so the checkpoint's fingerprint is as before the apply. A link's target
        was never changed by the apply (it removed the link): the storage leaves a link as it is."""
        if mtime_ms is not None:
            self.store(area).set_mtime(path, mtime_ms)

    def set_owner(self, area: Area, path: str, owner: Ownership | None) -> None:
        """Give a restored file back its mode and owner (local disk)."""
        if owner is not None:
            self.store(area).set_ownership(path, owner)

    def remove_dir(self, area: Area, path: str) -> None:
        self.store(area).remove_dir(path)

    def make_dir(self, area: Area, path: str) -> None:
        # A prefix comes back with its first key: on an object store there is nothing to make.
        store = self.store(area)
        if store.is_local:
            store.makedirs(path)
