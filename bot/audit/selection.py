"""Which changed lines a PR audit looks at (pure).

Added lines, merged when close, split into segments; every file or segment left out is
:class:`Skipped` with a reason the report shows. A per-PR cap keeps the largest segments.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from bot.clients.github_port import ChangedFile

__all__ = [
    "DEFAULT_SKIP_GLOBS",
    "MAX_SEGMENT_LINES",
    "Segment",
    "Selection",
    "Skipped",
    "added_ranges",
    "merge_ranges",
    "moved_line",
    "removed_lines",
    "right_side_lines",
    "select_segments",
    "split_range",
]

MAX_SEGMENT_LINES = 200
"""Longest segment one audit call sees (lines): it fits the auditor's context with the prompt,
the enclosing block and a repair turn."""

DEFAULT_SKIP_GLOBS: tuple[str, ...] = (
    "*.lock", "package-lock.json", "*/package-lock.json", "pnpm-lock.yaml", "*/pnpm-lock.yaml",
    "go.sum", "*/go.sum", "*.min.js", "*.min.css", "*.map", "*_pb2.py", "*_pb2_grpc.py",
    "*.pb.go", "*.generated.*", "*.g.dart", "vendor/*", "*/vendor/*", "third_party/*",
    "*/third_party/*", "node_modules/*", "*/node_modules/*", "dist/*", "build/*",
)  # fmt: skip
"""Lock, vendored, generated and minified files (fnmatch; ``*`` also matches ``/``)."""

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_OLD_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True, order=True)
class Segment:
    """Lines ``start``–``end`` (1-based, inclusive, new side) of ``path``."""

    path: str
    start: int
    end: int

    @property
    def lines(self) -> int:
        return self.end - self.start + 1

    def __str__(self) -> str:
        return f"{self.path}:{self.start}-{self.end}"


@dataclass(frozen=True)
class Skipped:
    """Something not audited and why: a whole file (``segment is None``) or one segment."""

    path: str
    reason: str
    segment: Segment | None = None


@dataclass(frozen=True)
class Selection:
    """The segments to audit, in path order, and everything skipped."""

    segments: tuple[Segment, ...]
    skipped: tuple[Skipped, ...]


def _new_side(patch: str) -> Iterator[tuple[int, bool]]:
    """Each new-side line of a diff: ``(line number, added)``, malformed lines passed over.

    A hunk claiming to start at line 0 is skipped: GitHub writes ``+0,0`` only for empty ones.
    """
    new_line = 0
    in_hunk = False
    for raw in patch.split("\n"):
        line = raw.rstrip("\r")
        header = _HUNK.match(line)
        if header:
            new_line = int(header.group(1))
            in_hunk = new_line >= 1
        elif in_hunk and (line.startswith(("+", " ")) or line == ""):
            yield new_line, line.startswith("+")
            new_line += 1


def added_ranges(patch: str) -> list[tuple[int, int]]:
    """Inclusive, ascending new-side ranges of added lines, every line ≥ 1."""
    ranges: list[tuple[int, int]] = []
    for number, added in _new_side(patch):
        if not added:
            continue
        if ranges and ranges[-1][1] == number - 1:
            ranges[-1] = (ranges[-1][0], number)
        else:
            ranges.append((number, number))
    return ranges


def right_side_lines(patch: str) -> frozenset[int]:
    """The added and context lines: the only ones a RIGHT-side review comment may target."""
    return frozenset(number for number, _ in _new_side(patch))


def removed_lines(patch: str) -> frozenset[int]:
    """The old-side lines a diff removes or replaces (a changed line is removed, then added).

    A hunk claiming to start at old line 0 removes nothing: GitHub writes ``-0,0`` for a file
    it adds.
    """
    removed: set[int] = set()
    old_line = 0
    in_hunk = False
    for raw in patch.split("\n"):
        line = raw.rstrip("\r")
        header = _OLD_HUNK.match(line)
        if header:
            old_line = int(header.group(1))
            in_hunk = old_line >= 1
        elif in_hunk and line.startswith("-"):
            removed.add(old_line)
            old_line += 1
        elif in_hunk and (line.startswith(" ") or line == ""):
            old_line += 1
    return frozenset(removed)


def moved_line(patch: str, line: int) -> int | None:
    """Where old-side ``line`` is on the new side of a diff; ``None`` when the diff removes or
    replaces it."""
    old_line = new_line = 0
    offset = 0
    in_hunk = False
    for raw in patch.split("\n"):
        text = raw.rstrip("\r")
        header = _OLD_HUNK.match(text)
        if header:
            if in_hunk:
                offset = new_line - old_line
            old_line, new_line = int(header.group(1)), int(header.group(2))
            if line < old_line:
                return line + offset
            in_hunk = True
        elif in_hunk and text.startswith("-"):
            if old_line == line:
                return None
            old_line += 1
        elif in_hunk and text.startswith("+"):
            new_line += 1
        elif in_hunk and (text.startswith(" ") or text == ""):
            if old_line == line:
                return new_line
            old_line += 1
            new_line += 1
    if in_hunk:
        offset = new_line - old_line
    return line + offset


def merge_ranges(ranges: Iterable[tuple[int, int]], gap: int) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start - merged[-1][1] - 1 <= gap:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def split_range(start: int, end: int, max_lines: int = MAX_SEGMENT_LINES) -> list[tuple[int, int]]:
    return [(s, min(s + max_lines - 1, end)) for s in range(start, end + 1, max_lines)]


def _skip_reason(changed: ChangedFile, globs: Sequence[str]) -> str | None:
    if changed.status == "removed":
        return "removed"
    for pattern in globs:
        if fnmatch.fnmatchcase(changed.path, pattern):
            return f"matches skip glob {pattern!r}"
    if not changed.patch:
        return "no patch (binary, or too large for the diff API)"
    return None


def select_segments(
    files: Iterable[ChangedFile],
    *,
    skip_globs: Sequence[str] = DEFAULT_SKIP_GLOBS,
    max_segments: int = 8,
    merge_gap: int = 3,
    max_lines: int = MAX_SEGMENT_LINES,
) -> Selection:
    """Choose the segments to audit for one PR; ties for the cap go in path order."""
    segments: list[Segment] = []
    skipped: list[Skipped] = []
    for changed in files:
        reason = _skip_reason(changed, skip_globs)
        if reason:
            skipped.append(Skipped(changed.path, reason))
            continue
        ranges = merge_ranges(added_ranges(changed.patch or ""), merge_gap)
        if not ranges:
            skipped.append(Skipped(changed.path, "no added lines"))
            continue
        for start, end in ranges:
            segments.extend(
                Segment(changed.path, s, e) for s, e in split_range(start, end, max_lines)
            )
    ranked = sorted(segments, key=lambda s: (-s.lines, s.path, s.start))
    kept, dropped = ranked[:max_segments], ranked[max_segments:]
    skipped.extend(
        Skipped(s.path, f"over the per-PR cap of {max_segments} segments", s) for s in dropped
    )
    return Selection(segments=tuple(sorted(kept)), skipped=tuple(skipped))
