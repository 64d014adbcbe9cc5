"""The enclosing function or class of a changed range: context the model reads, not audits.

Found by indentation, the same way for every language; bounded by :data:`MAX_BEFORE` and
:data:`MAX_AFTER`. The file is already read, so context costs prompt tokens, no request.
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
    """The lines shown around an audited range: file lines ``start``..``end``, 1-based."""

    start: int
    end: int
    lines: tuple[str, ...]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _is_definition(line: str) -> bool:
    return bool(_DEFINITION.match(line) or _SIGNATURE.match(line))


# the nearest line above ``first``, indented less than ``depth``, that opens a block
def _header(lines: Sequence[str], first: int, depth: int) -> int | None:
    for i in range(first - 1, max(first - 1 - MAX_BEFORE, -1), -1):
        text = lines[i]
        if not text.strip() or _indent(text) >= depth:
            continue
        if _is_definition(text) or _OPENS.search(text.rstrip()):
            return i
        return None  # a less indented line that opens nothing: top-level code
    return None


def enclosing_context(file_lines: Sequence[str], start: int, end: int) -> Context | None:
    """The enclosing block of lines ``start``..``end`` (1-based), bounded, or ``None``.

    ``None`` at the top level, for a range that is the whole block, or one outside the file.
    Never raises on any text.
    """
    if not 1 <= start <= end <= len(file_lines):
        return None
    audited = [line for line in file_lines[start - 1 : end] if line.strip()]
    if not audited:
        return None
    depth = min(_indent(line) for line in audited)
    top = _header(file_lines, start - 1, depth)
    # climb nested blocks while the header is no definition: a changed ``if`` gets its function
    while top is not None and not _is_definition(file_lines[top]):
        higher = _header(file_lines, top, _indent(file_lines[top]))
        if higher is None or start - 1 - higher > MAX_BEFORE:
            break
        top = higher
    if top is None:
        return None
    # down to the first line after the range indented no deeper than the header
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
