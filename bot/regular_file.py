"""Reading a file someone else may have put in place: regular files only, every read bounded.

A path the bot reads (the event payload, a local repository file, a prompt-cache entry) may
name something that is not a file: a FIFO blocks the open, then the read, until a writer comes;
a device such as ``/dev/zero`` never ends; a directory reads as an error only after the open. So
the file is opened non-blocking (a FIFO's open returns at once), checked with ``fstat`` on the
descriptor it got (no window between a check and the open), refused unless it is a regular
file, and read up to a bound. ``follow_symlinks=False`` (``O_NOFOLLOW``) also refuses a
symbolic link as the last component, for folders whose entries must be the folder's own.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

__all__ = ["FileTooLarge", "NotRegularFile", "open_regular", "read_regular"]


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a socket or a directory, not a regular file."""


class FileTooLarge(OSError):
    """The file holds more bytes than the reader's bound."""


def _kind(mode: int) -> str:
    kinds = {
        stat.S_ISDIR: "a directory",
        stat.S_ISFIFO: "a FIFO",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISSOCK: "a socket",
    }
    return next((name for test, name in kinds.items() if test(mode)), "not a regular file")


def open_regular(path: Path, *, follow_symlinks: bool = True) -> BinaryIO:
    """Open ``path`` for binary reading when it is a regular file (see the module docstring).

    Raises:
        NotRegularFile: a FIFO, device, socket or directory (the message says which).
        OSError: it cannot be opened: missing (``FileNotFoundError``), no permission, or, with
            ``follow_symlinks=False``, a symbolic link (``ELOOP``).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"is {_kind(mode)}, not a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path, *, limit: int, follow_symlinks: bool = True) -> bytes:
    """The whole content of the regular file ``path``, at most ``limit`` bytes.

    Raises:
        FileTooLarge: it holds more than ``limit`` bytes (only ``limit + 1`` are read).
        NotRegularFile / OSError: as :func:`open_regular`.
    """
    with open_regular(path, follow_symlinks=follow_symlinks) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileTooLarge(errno.EFBIG, f"larger than {limit} bytes", str(path))
    return data
