"""Every file the bot reads or writes by a path it is given: regular files only, reads bounded,
writes atomic and never through a symbolic link, errors that name the file, never its content.

A path (the event payload, an eval set, recorded replies, a report, a policy, a dataset's
rows) may name something that is not a file: a FIFO blocks the open, then the read, until a
writer comes; a device such as ``/dev/zero`` never ends; a directory reads as an error only
after the open. So a file is opened non-blocking (a FIFO's open returns at once), checked with
``fstat`` on the descriptor it got (no window between a check and the open), refused unless it
is a regular file, and read up to a bound. ``follow_symlinks=False`` (``O_NOFOLLOW``) also
refuses a symbolic link as the last component, for files the bot writes and folders whose
entries must be the folder's own.

A file the bot writes whole (:func:`write_atomic`) is written to a new file in the same folder,
made with ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a random name (a file or link planted at any
name is never opened, let alone written through), then renamed over the target with
``os.replace``: a reader sees the old file or the new one, whole. The target must be a regular
file or nothing: a symbolic link (``/dev/stdout``), a device or a FIFO is refused, not replaced.
A file the bot appends to (:func:`open_append`) is opened without following a link.

The ``*_input`` / ``*_output`` functions are for a file a person names (a flag, a setting):
they raise :class:`~bot.errors.ConfigError` naming it (``what`` and the path) and, for content
that is not what it should be, the line (:func:`content_problems`), never the content: the
file may be anything readable (``/proc/self/environ``, a token file).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Collection
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ValidationError

from bot.errors import ConfigError

__all__ = [
    "MAX_INPUT_BYTES",
    "FileTooLarge",
    "NotRegularFile",
    "append_output",
    "check_output",
    "check_target",
    "content_problems",
    "field_names",
    "open_append",
    "open_regular",
    "read_input",
    "read_regular",
    "utf8_text",
    "write_atomic",
    "write_output",
]

MAX_INPUT_BYTES = 256 * 2**20
"""The most a file a person names may hold (an eval set, recorded replies, a report, a dataset's
rows and state): 256 MiB, some 100,000 issues of a few KB, or 1,000 at GitHub's longest body
(65,536 characters of up to 4 bytes)."""

_TEMP_TRIES = 16
"""Random names tried for a temporary file before giving up (each taken one is a collision or a
planted file)."""


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a socket, a directory or (where links are refused) a
    symbolic link, not a regular file."""


class FileTooLarge(OSError):
    """The file holds more bytes than the reader's bound."""


def _kind(mode: int) -> str:
    kinds = {
        stat.S_ISDIR: "a directory",
        stat.S_ISFIFO: "a FIFO",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISSOCK: "a socket",
        stat.S_ISLNK: "a symbolic link",
    }
    return next((name for test, name in kinds.items() if test(mode)), "not a regular file")


def _not_regular(mode: int, path: Path) -> NotRegularFile:
    return NotRegularFile(errno.EINVAL, f"is {_kind(mode)}, not a regular file", str(path))


def _lstat_mode(path: Path) -> int | None:
    """The mode of what ``path`` names itself (a link not followed); ``None``: nothing there."""
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None


def _open_checked(path: Path, flags: int, mode: int = 0o666) -> int:
    """A descriptor of ``path`` opened with ``flags`` (non-blocking), once ``fstat`` shows a
    regular file; blocking again.

    Raises:
        NotRegularFile: not a regular file; a symbolic link where ``O_NOFOLLOW`` is given.
        OSError: it cannot be opened.
    """
    flags |= os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    found: int | None = None
    try:
        fd = os.open(path, flags, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP and flags & os.O_NOFOLLOW:
            raise _not_regular(stat.S_IFLNK, path) from None
        if exc.errno == errno.ENXIO:  # a FIFO opened to write with no reader, or a socket
            with contextlib.suppress(OSError):
                found = os.stat(path).st_mode  # a link was refused above, or is followed
            if found is not None and not stat.S_ISREG(found):
                raise _not_regular(found, path) from None
        raise
    try:
        st_mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(st_mode):
            raise _not_regular(st_mode, path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: Path, *, follow_symlinks: bool = True) -> BinaryIO:
    """Open ``path`` for binary reading when it is a regular file (see the module docstring).

    Raises:
        NotRegularFile: a FIFO, device, socket or directory (the message says which), or with
            ``follow_symlinks=False`` a symbolic link.
        OSError: it cannot be opened: missing (``FileNotFoundError``), no permission.
    """
    flags = os.O_RDONLY | (0 if follow_symlinks else os.O_NOFOLLOW)
    return os.fdopen(_open_checked(path, flags), "rb")


def read_regular(path: Path, *, limit: int, follow_symlinks: bool = True) -> bytes:
    """The whole content of the regular file ``path``, at most ``limit`` bytes.

    Raises:
        FileTooLarge: it holds more than ``limit`` bytes (its size says so, or ``limit + 1``
            bytes were read: a file under ``/proc`` gives its size as 0).
        NotRegularFile / OSError: as :func:`open_regular`.
    """
    with open_regular(path, follow_symlinks=follow_symlinks) as handle:
        too_large = os.fstat(handle.fileno()).st_size > limit
        data = b"" if too_large else handle.read(limit + 1)
    if too_large or len(data) > limit:
        raise FileTooLarge(errno.EFBIG, f"larger than {limit:,} bytes", str(path))
    return data


def open_append(path: Path) -> BinaryIO:
    """Open ``path`` for appending, made when missing (under the umask), never through a
    symbolic link; a regular file only.

    Raises:
        NotRegularFile: a symbolic link, a FIFO, a device or a directory.
        OSError: it cannot be opened or made.
    """
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
    return os.fdopen(_open_checked(path, flags), "ab")


def _existing_mode(path: Path) -> int | None:
    """The permission bits of the regular file at ``path``, ``None`` when nothing is there.

    Raises:
        NotRegularFile: something else is there (a symbolic link included).
    """
    found = _lstat_mode(path)
    if found is None:
        return None
    if not stat.S_ISREG(found):
        raise _not_regular(found, path)
    return stat.S_IMODE(found)


def _new_temporary(folder: Path, name: str) -> tuple[int, Path]:
    """A new file beside the target, open for writing: ``O_EXCL | O_NOFOLLOW`` under a random
    name, so nothing already there is opened."""
    for _ in range(_TEMP_TRIES):
        temporary = folder / f".{name}.{secrets.token_hex(8)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            return os.open(temporary, flags, 0o666), temporary
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free name for a temporary file", str(folder))


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with a file holding ``data`` (see the module docstring): flushed to disk
    before the rename; an existing file's permissions kept, a new file made under the umask.

    Raises:
        NotRegularFile: ``path`` is a symbolic link, a FIFO, a device or a directory.
        OSError: it cannot be written (nothing is left behind: the temporary file is removed).
    """
    mode = _existing_mode(path)
    fd, temporary = _new_temporary(path.parent, path.name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            if mode is not None:
                os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def check_target(path: Path) -> None:
    """Check that :func:`write_atomic` can write ``path``: its folder exists and takes a new
    file, and ``path`` is a regular file or nothing.

    Raises:
        NotRegularFile: ``path`` is not a regular file (a symbolic link included).
        OSError: the folder is missing (``FileNotFoundError``, naming the folder) or takes no
            new file (``PermissionError``), or the name is refused (too long).
    """
    folder = path.parent
    if not folder.is_dir():
        raise FileNotFoundError(errno.ENOENT, "the folder does not exist", str(folder))
    _existing_mode(path)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "permission denied", str(folder))
    if path.exists() and not os.access(path, os.W_OK):  # a write-protected file stays so
        raise PermissionError(errno.EACCES, "permission denied", str(path))


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def read_input(path: Path, *, what: str, limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of a file a person named (:func:`read_regular`; a link to a regular file
    is read).

    Raises:
        ConfigError: it cannot be read, is not a regular file, holds more than ``limit`` bytes,
            or is not UTF-8; ``what`` and the path are named, and the line of the first byte
            that is not UTF-8.
    """
    try:
        data = read_regular(path, limit=limit)
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot be read ({_reason(exc)})") from None
    return utf8_text(data, what=what, path=path)


def utf8_text(data: bytes, *, what: str, path: Path) -> str:
    """``data``, read from ``path``, as UTF-8 text.

    Raises:
        ConfigError: it is not UTF-8; ``what``, the path and the line of the first byte that is
            not are named (the bytes are not: :exc:`UnicodeDecodeError` shows them).
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{what} {path}:{line}: not UTF-8") from None


def check_output(path: Path, *, what: str) -> None:
    """Check, before any work, that :func:`write_output` can write ``path``.

    Raises:
        ConfigError: it cannot (``what``, the path and why are named).
    """
    try:
        check_target(path)
    except FileNotFoundError as exc:
        raise ConfigError(f"{what} {path}: the folder {exc.filename} does not exist") from None
    except NotRegularFile as exc:
        raise ConfigError(f"{what} {path}: cannot be written ({exc.strerror})") from None
    except PermissionError:
        raise ConfigError(f"{what} {path}: cannot be written (permission)") from None
    except OSError as exc:  # a name the file system refuses (too long)
        raise ConfigError(f"{what} {path}: cannot be written ({_reason(exc)})") from None


def write_output(path: Path, text: str, *, what: str) -> None:
    """Write a file a person named, whole and atomically (:func:`write_atomic`), as UTF-8.

    Raises:
        ConfigError: it cannot be written (``what``, the path and why are named).
    """
    try:
        write_atomic(path, text.encode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot be written ({_reason(exc)})") from None


def append_output(path: Path, text: str, *, what: str) -> None:
    """Append UTF-8 text to a file a person named (:func:`open_append`).

    Raises:
        ConfigError: it cannot be written (``what``, the path and why are named).
    """
    try:
        with open_append(path) as out:
            out.write(text.encode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot be written ({_reason(exc)})") from None


def field_names(*models: type[BaseModel]) -> frozenset[str]:
    """Every property name the models' JSON schemas declare, nested models included: the keys
    an error about a file's content may name (:func:`content_problems`)."""
    names: set[str] = set()
    pending: list[Any] = [model.model_json_schema() for model in models]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict):
                names.update(properties)
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return frozenset(names)


_MAY_QUOTE_INPUT = frozenset(
    {"value_error", "assertion_error", "union_tag_invalid", "union_tag_not_found"}
)
"""pydantic error types whose message may hold a piece of the input."""


def content_problems(exc: ValidationError, fields: Collection[str], *, most: int = 5) -> str:
    """A pydantic error about a file's content in one line, without the content: each
    problem's place and message (the first ``most``). A key is named only when it is one of
    ``fields`` (else ``(a key)``: the file chose it); pydantic's own text (``str(exc)``) quotes
    the input, and is never used."""
    problems = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False)[:most]:
        where = ".".join(
            str(part) if isinstance(part, int) or part in fields else "(a key)"
            for part in error["loc"]
        )
        message = "not a valid value" if error["type"] in _MAY_QUOTE_INPUT else error["msg"]
        problems.append(f"{where or '(top level)'}: {message}")
    return "; ".join(problems)
