"""Things a path may name instead of a regular file, for the tests of every file the bot reads or
writes (tests/test_regular_file.py, tests/test_file_flags.py).

A FIFO made here is released every :data:`RELEASE_AFTER_S` for a minute: should a reader or
writer block on it after all, the test fails on what it read or wrote (and on its time) instead
of hanging the suite.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "OUTPUTS",
    "RELEASE_AFTER_S",
    "SECRET",
    "fifo",
    "inputs",
    "secret_lines",
]

RELEASE_AFTER_S = 10.0
"""How often a FIFO made here is opened at both ends by the test itself (unblocking any
open), :data:`RELEASES` times."""

RELEASES = 6
"""How many times a FIFO is released (code that opens it again after a release is released
again, for a minute)."""

SECRET = "ghp_" + "Zq7" * 12
"""A token-shaped secret a file may hold (a token file given by mistake)."""


def _release(path: Path) -> None:
    """Every :data:`RELEASE_AFTER_S`, open the FIFO at both ends (``O_RDWR`` never blocks on
    Linux): a blocked open returns, a blocked reader reads the end of the file once this
    closes."""
    for _ in range(RELEASES):
        time.sleep(RELEASE_AFTER_S)
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_RDWR | os.O_NONBLOCK))


def fifo(path: Path) -> Path:
    """A FIFO at ``path`` with no reader or writer, released now and then (module docstring)."""
    os.mkfifo(path)
    threading.Thread(target=_release, args=(path,), daemon=True).start()
    return path


def _socket(path: Path) -> Path:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()  # the socket file stays
    return path


def _directory(path: Path) -> Path:
    path.mkdir()
    return path


def _oversized(limit: int) -> Callable[[Path], Path]:
    def make(path: Path) -> Path:
        with path.open("wb") as out:
            out.truncate(limit + 1)  # sparse: no disk, no memory
        return path

    return make


def _link_to(target: Callable[[Path], Path]) -> Callable[[Path], Path]:
    def make(path: Path) -> Path:
        real = target(path.with_name(path.name + ".real"))
        path.symlink_to(real)
        return path

    return make


def inputs(limit: int) -> dict[str, Callable[[Path], Path]]:
    """What a path to be read may name instead of a regular file (made at the path given)."""
    return {
        "a FIFO": fifo,
        "a link to a FIFO": _link_to(fifo),
        "/dev/zero": lambda _path: Path("/dev/zero"),
        "a socket": _socket,
        "a directory": _directory,
        "a file over the bound": _oversized(limit),
    }


def _victim(path: Path) -> Path:
    victim = path.with_name(path.name + ".victim")
    victim.write_text("not the bot's\n", "utf-8")
    return victim


def _link_to_victim(path: Path) -> Path:
    path.symlink_to(_victim(path))
    return path


def _dangling_link(path: Path) -> Path:
    path.symlink_to(path.with_name("nowhere"))
    return path


def _fifo_behind_link(path: Path) -> Path:
    """What ``--out /dev/stdout`` is when stdout is a pipe: a link to a FIFO."""
    path.symlink_to(fifo(path.with_name(path.name + ".pipe")))
    return path


OUTPUTS: dict[str, Callable[[Path], Path]] = {
    "a link to a file": _link_to_victim,
    "a dangling link": _dangling_link,
    "a FIFO": fifo,
    "a link to a FIFO (/dev/stdout on a pipe)": _fifo_behind_link,
    "a socket": _socket,
}
"""What a path to be written may name instead of a regular file or nothing."""


def secret_lines() -> list[str]:
    """Lines holding :data:`SECRET` that are not valid items: raw, as JSON of every kind, as a
    key, as a field's value of the wrong kind."""
    s = SECRET
    return [
        s,
        f"{s} {{",
        f'"{s}"',
        f"[{s!r}]",
        f'{{"{s}": 1}}',
        f'{{"id": "{s}"}}',
        f'{{"id": "a", "reply": ["{s}"]}}',
        f'{{"expected": "{s}"}}',
        f'{{"x": {{"{s}": "{s}"}}}}',
        f'{{"gate": {{"halves": {{"{s}": 5}}}}}}',
        f'{{"name": "{s}", "verdict_from": "{s}"}}',
    ]
