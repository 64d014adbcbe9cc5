"""The enclosing function or class of a changed range: context the model reads, not audits.

Hunt before judging: the whole enclosing function or class is shown as context when the changed
range sits inside one (the file is already fetched; still ≤ 200 lines audited, the context
marked as such). A PR usually changes a few lines inside a function; audited alone,
``return items[start:start + size]`` says nothing about what ``start`` is. The file at the head
SHA is already read for the segment, so the context costs no request, only prompt tokens.

The block is found by layout, the same way for every language the audit sees (no parser per
language): from the audited lines, walk up to the nearest line indented less than all of them
that opens a block (a definition keyword, or a line ending in ``:``, ``{`` or ``=>``; nested
blocks are climbed while the header found is not a definition, so a changed ``if`` body gets
its function), then down to the first line after the range indented no deeper than that header
(its closing brace included). Bounds: at most :data:`MAX_BEFORE` lines before and
:data:`MAX_AFTER` after; a range at the top level (no enclosing block) gets no context.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MAX_AFTER", "MAX_BEFORE", "Context", "enclosing_context"]

MAX_BEFORE = 60
"""Most context lines shown before the audited range (a function's head and what it sets up)."""
MAX_AFTER = 30
"""Most context lines shown after it (where the values it computes are used)."""

_DEFINITION = re.compile(
    r"^\s*(?:export\s+|pub(?:\(\w+\))?\s+|public\s+|private\s+|protected\s+|static\s+"
    r"|async\s+|final\s+|abstract\s+|override\s+|inline\s+|unsafe\s+)*"
    r"(?:def|class|func|function|fn|impl|struct|interface|trait|enum|module|sub|proc)\b"
)
_OPENS = re.compile(r"(?::|\{|=>|\bthen|\bdo)\s*(?:#.*|//.*)?$")
_SIGNATURE = re.compile(
    r"^\s*(?!\s)(?!(?:if|for|while|switch|catch|else|return|do|try|elif|with|match)\b)"
    r"[\w<>\[\],.*&:\s]+\([^;]*\)\s*(?:throws [\w., ]+)?\{?\s*$"
)


@dataclass(frozen=True)
class Context:
    """The lines shown around an audited range.

    Attributes:
        start / end: first and last file line shown (1-based, inclusive); they contain the
            audited range.
        lines: the file's lines ``start``..``end``.
    """

    start: int
    end: int
    lines: tuple[str, ...]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _is_definition(line: str) -> bool:
    return bool(_DEFINITION.match(line) or _SIGNATURE.match(line))


def _header(lines: Sequence[str], first: int, depth: int) -> int | None:
    """Index of the nearest line above ``first`` indented less than ``depth`` that opens a
    block, or ``None``."""
    for i in range(first - 1, max(first - 1 - MAX_BEFORE, -1), -1):
        text = lines[i]
        if not text.strip() or _indent(text) >= depth:
            continue
        if _is_definition(text) or _OPENS.search(text.rstrip()):
            return i
        return None  # a less indented line that opens nothing: top-level code
    return None


def enclosing_context(file_lines: Sequence[str], start: int, end: int) -> Context | None:
    """The enclosing function or class of file lines ``start``..``end``, bounded, or ``None``
    when the range is at the top level or already holds the whole block.

    Args:
        file_lines: the whole file at the head SHA (index 0 is line 1).
        start / end: the audited range (1-based, inclusive, inside the file).

    Never raises on any text; a range outside the file gives ``None``.
    """
    if not 1 <= start <= end <= len(file_lines):
        return None
    audited = [line for line in file_lines[start - 1 : end] if line.strip()]
    if not audited:
        return None
    depth = min(_indent(line) for line in audited)
    top = _header(file_lines, start - 1, depth)
    while top is not None and not _is_definition(file_lines[top]):
        higher = _header(file_lines, top, _indent(file_lines[top]))
        if higher is None or start - 1 - higher > MAX_BEFORE:
            break
        top = higher
    if top is None:
        return None
    head = _indent(file_lines[top])
    bottom = end - 1
    for i in range(end, min(end + MAX_AFTER, len(file_lines))):
        text = file_lines[i]
        if not text.strip():
            continue
        if _indent(text) <= head:
            if text.strip()[0] in "}])" or text.strip().startswith("end"):
                bottom = i  # the block's closing line
            break
        bottom = i
    first, last = top + 1, bottom + 1
    if (first, last) == (start, end):
        return None
    return Context(first, last, tuple(file_lines[first - 1 : last]))
