"""Explicit audit ranges: ``PATH:START-END`` from a maintainer, checked before anything is read.

The range follows the *last* ``:``. The path must match a changed file once both are normalised
(NFC, no leading ``./``, trimmed); the segment keeps GitHub's spelling. Git paths are POSIX.
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
    """Normalise a user-supplied repository path; :class:`InvalidRange` names the rule it breaks."""
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
    """Parse ``PATH:START-END`` against the changed paths; the file's end is checked later.

    Raises :class:`InvalidRange` naming the broken rule.
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
    """Raise :class:`InvalidRange` when the segment ends past the file's last line."""
    if segment.end > file_lines:
        raise InvalidRange(
            f"{segment.path} has {file_lines} lines; the range ends at {segment.end}"
        )
