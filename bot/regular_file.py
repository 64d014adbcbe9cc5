"""Files the bot reads or writes by a given path: regular files only, bounded reads, atomic writes.

Errors name the file and the line, never the content: it may be anything readable.
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
"""The most a file a person names may hold: 256 MiB, some 100,000 issues."""

_TEMP_TRIES = 16


class NotRegularFile(OSError):
    """The path is not a regular file (or is a symbolic link where links are refused)."""


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
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None


def _open_checked(path: Path, flags: int, mode: int = 0o666) -> int:
    # Non-blocking, so a FIFO's open returns at once; fstat on the descriptor leaves no window.
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
    """Open ``path`` for binary reading.

    Raises :exc:`NotRegularFile` if it is not a regular file (a FIFO would block, a device never
    ends), or is a symbolic link with ``follow_symlinks=False``.
    """
    flags = os.O_RDONLY | (0 if follow_symlinks else os.O_NOFOLLOW)
    return os.fdopen(_open_checked(path, flags), "rb")


def read_regular(path: Path, *, limit: int, follow_symlinks: bool = True) -> bytes:
    """The content of the regular file ``path``; :exc:`FileTooLarge` over ``limit`` bytes."""
    with open_regular(path, follow_symlinks=follow_symlinks) as handle:
        # A file under /proc gives its size as 0: read one byte past the limit too.
        too_large = os.fstat(handle.fileno()).st_size > limit
        data = b"" if too_large else handle.read(limit + 1)
    if too_large or len(data) > limit:
        raise FileTooLarge(errno.EFBIG, f"larger than {limit:,} bytes", str(path))
    return data


def open_append(path: Path) -> BinaryIO:
    """Open ``path`` for appending, made when missing; :exc:`NotRegularFile` for a link."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
    return os.fdopen(_open_checked(path, flags), "ab")


def _existing_mode(path: Path) -> int | None:
    found = _lstat_mode(path)
    if found is None:
        return None
    if not stat.S_ISREG(found):
        raise _not_regular(found, path)
    return stat.S_IMODE(found)


def _new_temporary(folder: Path, name: str) -> tuple[int, Path]:
    # A random name with O_EXCL | O_NOFOLLOW: a file or link planted there is never opened.
    for _ in range(_TEMP_TRIES):
        temporary = folder / f".{name}.{secrets.token_hex(8)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            return os.open(temporary, flags, 0o666), temporary
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free name for a temporary file", str(folder))


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` by rename: readers see the old file or the new, whole.

    An existing file keeps its permissions. Raises :exc:`NotRegularFile` if ``path`` is not a
    regular file (a link included), :exc:`OSError` if it cannot be written (nothing left behind).
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
    """Check that :func:`write_atomic` can write ``path``.

    Raises :exc:`NotRegularFile` as it would, :exc:`FileNotFoundError` naming a missing folder,
    :exc:`PermissionError` for a folder or file not writable.
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
    """The UTF-8 text of a file a person named; a link to a regular file is read.

    Raises :exc:`ConfigError` if unreadable, not regular, over ``limit`` bytes or not UTF-8.
    """
    try:
        data = read_regular(path, limit=limit)
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot be read ({_reason(exc)})") from None
    return utf8_text(data, what=what, path=path)


def utf8_text(data: bytes, *, what: str, path: Path) -> str:
    """``data`` as UTF-8; :exc:`ConfigError` names the path and line, not the bytes."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{what} {path}:{line}: not UTF-8") from None


def check_output(path: Path, *, what: str) -> None:
    """Check that :func:`write_output` can write ``path``, else raise :exc:`ConfigError`."""
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
    """Write a file a person named atomically, as UTF-8; :exc:`ConfigError` if it cannot."""
    try:
        write_atomic(path, text.encode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot be written ({_reason(exc)})") from None


def append_output(path: Path, text: str, *, what: str) -> None:
    """Append UTF-8 text to a file a person named; :exc:`ConfigError` if it cannot."""
    try:
        with open_append(path) as out:
            out.write(text.encode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot be written ({_reason(exc)})") from None


def field_names(*models: type[BaseModel]) -> frozenset[str]:
    """Every property name in the models' JSON schemas, nested models included."""
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


# pydantic error types whose message may quote the input.
_MAY_QUOTE_INPUT = frozenset(
    {"value_error", "assertion_error", "union_tag_invalid", "union_tag_not_found"}
)


def content_problems(exc: ValidationError, fields: Collection[str], *, most: int = 5) -> str:
    """The first ``most`` problems of ``exc`` in one line, without the file's content.

    A key not in ``fields`` shows as ``(a key)``: the file chose it. ``str(exc)`` quotes input.
    """
    problems = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False)[:most]:
        where = ".".join(
            str(part) if isinstance(part, int) or part in fields else "(a key)"
            for part in error["loc"]
        )
        message = "not a valid value" if error["type"] in _MAY_QUOTE_INPUT else error["msg"]
        problems.append(f"{where or '(top level)'}: {message}")
    return "; ".join(problems)
