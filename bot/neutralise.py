"""Make untrusted text (model output, file paths) safe to post as GitHub markdown.

Rule source: design.md, "Issue gate" (model text posted to GitHub is neutralised) and issue
"Break it before users do" (posting safety). After neutralising, text cannot @mention anyone
(a zero-width space follows each ``@``), embed an image (``![`` → ``!\\[``), inject raw HTML or a
hidden marker (``&``, ``<``, ``>`` are escaped, so ``<!--`` cannot appear), and is length-capped.

Inline code spans are left as written (GitHub renders neither HTML, mentions nor images inside
them, and ``&lt;`` would show literally there). Only a span CommonMark is sure to read as code
is kept: single backticks on one line, not next to another backtick or a backslash; anything
doubtful is escaped.
"""

from __future__ import annotations

import re

__all__ = ["code_span", "neutralise", "neutralise_block"]

_MENTION = re.compile(r"@(?=[A-Za-z0-9_-])")
_CODE_SPAN = re.compile(r"(?<![`\\])`[^`\n]+`(?!`)")


def _escape_plain(text: str) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MENTION.sub("@\u200b", text).replace("![", "!\\[")


def _escape(text: str) -> str:
    out, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        out += [_escape_plain(text[last : span.start()]), span.group(0)]
        last = span.end()
    out.append(_escape_plain(text[last:]))
    return "".join(out)


def _cap(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def neutralise(text: str, *, max_chars: int = 1000) -> str:
    """One line of safe text, at most ``max_chars`` characters (``…`` marks a cut)."""
    return _cap(_escape(" ".join(text.split())), max_chars)


def neutralise_block(text: str, *, max_chars: int = 8000) -> str:
    """Multi-line safe text: line breaks kept (lists still render), each line neutralised."""
    lines = [_escape(line.rstrip()) for line in text.strip().splitlines()]
    return _cap("\n".join(lines), max_chars)


def code_span(text: str, *, max_chars: int = 300) -> str:
    """Inline code for a path or range; backticks and line breaks cannot break out of it."""
    clean = " ".join(text.replace("`", "'").split())
    return f"`{_cap(clean, max_chars)}`"
