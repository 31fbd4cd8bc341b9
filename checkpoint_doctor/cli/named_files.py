"""Local files the operator names on the command line (a plan, a journal): opened without blocking
and refused when they are not regular files.

``open()`` of a FIFO blocks until a writer appears, so ``apply p.json`` on a named pipe hung
forever; a device or a socket is no plan either. The file is opened with ``O_NONBLOCK``
(which returns at once for a FIFO with no writer) and judged by ``fstat`` of the descriptor opened,
so what is read is what was checked.
"""

from __future__ import annotations

import os
import stat as stat_mod

from checkpoint_doctor.errors import UsageError

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def kind_of(mode: int) -> str:
    """Return what a non-regular file is, in words."""
    if stat_mod.S_ISDIR(mode):
        return "a directory"
    if stat_mod.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat_mod.S_ISSOCK(mode):
        return "a socket"
    if stat_mod.S_ISCHR(mode) or stat_mod.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def read_named_file(path: str, what: str, hint: str, max_bytes: int) -> bytes:
    """Return at most ``max_bytes + 1`` bytes of the regular file ``path`` (the caller judges the size).

    Raises:
        UsageError: it cannot be opened or read, or it is not a regular file.
    """
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}", hint=hint) from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat_mod.S_ISREG(mode):
            raise UsageError(f"cannot read {what} {path}: it is {kind_of(mode)}", hint=hint)
        os.set_blocking(fd, True)  # a regular file: reads never wait anyway
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}", hint=hint) from exc
    finally:
        os.close(fd)


def refuse_special_file(path: str, what: str, hint: str, *, directory_ok: bool = False) -> None:
    """Refuse a local ``path`` that exists and is neither a regular file (nor, with ``directory_ok``,
    a directory); a missing path or a URL is left to the storage that reads it.

    Raises:
        UsageError: naming the path and what it is.
    """
    if "://" in path:
        return
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if stat_mod.S_ISREG(mode) or (directory_ok and stat_mod.S_ISDIR(mode)):
        return
    raise UsageError(f"cannot read {what} {path}: it is {kind_of(mode)}", hint=hint)
