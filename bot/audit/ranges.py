"""Explicit audit ranges: ``PATH:START-END`` from a maintainer, checked before anything is read.

The range is the text after the *last*
``:`` (a file may be named ``a:b.py``). The path must equal one of the PR's changed files after
normalisation of both (Unicode NFC, a leading ``./`` dropped, surrounding whitespace trimmed);
the segment then carries the file's name exactly as GitHub sent it (an NFD name stays NFD, so
the contents are read under the name GitHub knows). Refused, each with a message naming the
rule: empty path, NUL or control characters, backslashes, absolute paths (``/x``, ``//host``),
any ``.`` or ``..`` segment, empty segments (``a//b``), URL-encoded characters (``%2e%2e``), a
path that is not a changed file, ranges that are not two plain decimal numbers, ``START < 1``,
``END < START``, more than 200 lines, and — once the file is read — ``END`` past the end of the
file. A drive letter (``C:/x``) is not special: git paths are POSIX, and ``C:`` is a folder
name that must match a changed file like any other.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from bot.audit.selection import MAX_SEGMENT_LINES, Segment
from bot.errors import InvalidRange

__all__ = ["check_range_in_file", "normalise_path", "parse_range_spec"]

_RANGE = re.compile(r"^([0-9]{1,9})-([0-9]{1,9})$")
_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}")


def normalise_path(raw: str) -> str:
    """Normalise a user-supplied repository path or refuse it.

    Raises:
        InvalidRange: the path breaks a rule (the message names it).
    """
    path = unicodedata.normalize("NFC", raw.strip())
    if not path:
        raise InvalidRange("the path is empty")
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in path):
        raise InvalidRange("the path contains NUL, control or invisible characters")
    if "\\" in path:
        raise InvalidRange("the path contains a backslash; use forward slashes")
    if _ENCODED.search(path):
        raise InvalidRange("the path contains URL-encoded characters (%XX)")
    if path.startswith("/"):
        raise InvalidRange("the path is absolute; give it relative to the repository root")
    while path.startswith("./"):
        path = path[2:]
    parts = path.split("/")
    if any(part in (".", "..") for part in parts):
        raise InvalidRange("the path contains a '.' or '..' segment")
    if any(part == "" for part in parts):
        raise InvalidRange("the path contains an empty segment ('//' or a trailing '/')")
    return path


def parse_range_spec(spec: str, changed_paths: Iterable[str]) -> Segment:
    """Parse ``PATH:START-END`` against the PR's changed files.

    Args:
        spec: the user's text, e.g. ``src/app.py:10-80``.
        changed_paths: the PR's changed file paths (``filename`` from the PR files API).

    Returns:
        The requested segment (its end is checked against the file later).

    Raises:
        InvalidRange: any rule broken; the message names the rule.
    """
    if len(spec) > 4096:
        raise InvalidRange("the range is longer than 4096 characters")
    raw_path, sep, raw_range = spec.strip().rpartition(":")
    if not sep:
        raise InvalidRange("expected PATH:START-END, e.g. src/app.py:10-80")
    match = _RANGE.match(raw_range.strip())
    if not match:
        raise InvalidRange("START-END must be two plain numbers, e.g. 10-80")
    start, end = int(match.group(1)), int(match.group(2))
    if start < 1:
        raise InvalidRange("START must be at least 1")
    if end < start:
        raise InvalidRange("END must not be before START")
    if end - start + 1 > MAX_SEGMENT_LINES:
        raise InvalidRange(f"a range covers at most {MAX_SEGMENT_LINES} lines")
    path = normalise_path(raw_path)
    paths = list(changed_paths)
    if path in paths:  # the very name GitHub sent (git allows an NFC and an NFD twin)
        return Segment(path, start, end)
    by_nfc = {unicodedata.normalize("NFC", p): p for p in paths}
    if path not in by_nfc:
        raise InvalidRange(f"{path!r} is not one of this pull request's changed files")
    return Segment(by_nfc[path], start, end)


def check_range_in_file(segment: Segment, file_lines: int) -> None:
    """Refuse a segment that ends past the file's last line.

    Raises:
        InvalidRange: ``segment.end > file_lines``.
    """
    if segment.end > file_lines:
        raise InvalidRange(
            f"{segment.path} has {file_lines} lines; the range ends at {segment.end}"
        )
