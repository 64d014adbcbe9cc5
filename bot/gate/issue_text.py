"""What the validator judges: the issue as a human reader sees it, delimited as untrusted data.

docs/gate.md lists the rules. Quoting changes only the text the model is sent: the judged text,
its hash and the stored decision are the author's.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import secrets
import unicodedata
from dataclasses import dataclass

from bot.neutralise import escape_delimiters

__all__ = [
    "TEXT_RULES_VERSION",
    "TITLE_MAX_CHARS",
    "IssueText",
    "clean_text",
    "delimit_issue",
    "prepare_issue",
    "quote_role_lines",
    "quote_verdict_lines",
]

TEXT_RULES_VERSION = "text-3"
"""The version of the rules that turn an issue into the text the model is sent (this module).
It is part of the stored prompt version (like the prompt text and the reply rules), so a change
gets a replayed event judged again. Bump it with every change to what the model is sent."""

TITLE_MAX_CHARS = 256
"""GitHub's own limit on an issue title (characters)."""

_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)


# Invisible characters outside Unicode's Cf/Cc categories: combining grapheme joiner,
# variation selectors, Hangul fillers, braille blank, Mongolian vowel separator.
_INVISIBLE_EXTRA = frozenset(
    (
        0x034F,
        0x115F,
        0x1160,
        0x180E,
        0x2800,
        0x3164,
        0xFFA0,
        *range(0xFE00, 0xFE10),
        *range(0xE0100, 0xE01F0),
    )
)


@dataclass(frozen=True)
class IssueText:
    """An issue ready for the prompt, cleaned; lengths are in characters.

    A cut ``body`` (``truncated``) keeps ``kept_chars`` of ``original_chars`` and ends with a
    visible marker.
    """

    title: str
    body: str
    original_chars: int
    kept_chars: int
    truncated: bool
    removed_comments: int
    removed_invisible: int

    @property
    def author_body(self) -> str:
        """The body without the bot's cut marker, whose words are never the author's evidence."""
        return self.body[: self.kept_chars] if self.truncated else self.body

    @property
    def content_sha(self) -> str:
        """First 16 hex digits of the SHA-256 of the judged title and body."""
        digest = hashlib.sha256(f"{self.title}\0{self.body}".encode())
        return digest.hexdigest()[:16]


def _is_invisible(ch: str) -> bool:
    if ch in "\n\t":
        return False
    return unicodedata.category(ch) in ("Cf", "Cc", "Cs") or ord(ch) in _INVISIBLE_EXTRA


_LINE_BREAKS = str.maketrans({"\r": "\n", "\u2028": "\n", "\u2029": "\n"})
"""Line breaks other than ``\\n`` (a lone CR, the Unicode line and paragraph separators),
made ``\\n`` so every line rule (quoting role and verdict lines) sees the lines a reader sees."""


def clean_text(text: str) -> tuple[str, int, int]:
    """``(cleaned, removed_comments, removed_invisible)``: HTML comments, invisible chars gone."""
    text = text.replace("\r\n", "\n").translate(_LINE_BREAKS)
    text, removed_comments = _HTML_COMMENT.subn("", text)
    kept = [ch for ch in text if not _is_invisible(ch)]
    removed_invisible = len(text) - len(kept)
    return "".join(kept), removed_comments, removed_invisible


def _cut(body: str, limit: int) -> tuple[str, bool]:
    if len(body) <= limit:
        return body, False
    marker = f"\n\n[triage-bot: body cut here; {limit} of {len(body)} characters shown]"
    return body[:limit] + marker, True


def prepare_issue(title: str | None, body: str | None, *, max_body_chars: int) -> IssueText:
    """Clean an issue's title and body (``None`` is empty); cut the body at ``max_body_chars``."""
    clean_title, title_comments, title_invisible = clean_text(title or "")
    clean_title = " ".join(clean_title.split())[:TITLE_MAX_CHARS]
    clean_body, body_comments, body_invisible = clean_text(body or "")
    clean_body = clean_body.strip()
    cut_body, truncated = _cut(clean_body, max_body_chars)
    return IssueText(
        title=clean_title,
        body=cut_body,
        original_chars=len(clean_body),
        kept_chars=min(len(clean_body), max_body_chars),
        truncated=truncated,
        removed_comments=title_comments + body_comments,
        removed_invisible=title_invisible + body_invisible,
    )


_ROLE_LINE = re.compile(r"(?im)^([ \t]*)(assistant|system|user|model|developer|tool)([ \t]*:)")


def quote_role_lines(text: str) -> str:
    """Quote with ``> `` the lines that look like a chat turn (``assistant: {...}``)."""
    return _ROLE_LINE.sub(r"\1> \2\3", text)


_QUOTE = r"(?:\\?[\"'`]|&quot;|&#0*34;|&#x0*22;)"  # a quote, escaped (\"), or an HTML entity
_SEP = r"\s*[:=\uff1a]"  # ":" "=" or a full-width colon
_LEADING = r"^[ \t]*(?:[-*+#]+[ \t]*)?[*_]*"  # a list bullet, heading mark or emphasis
_VERDICT_KEY = re.compile(rf"{_QUOTE}?\bverdict\b{_QUOTE}?{_SEP}", re.IGNORECASE)


def _key_line(key: str) -> re.Pattern[str]:
    return re.compile(
        rf"{_QUOTE}{key}{_QUOTE}{_SEP}|{_LEADING}{key}[*_]*[ \t]*[:=\uff1a]", re.IGNORECASE
    )


_VERDICT_LINE, _REASON_LINE = _key_line("verdict"), _key_line("reason")
_OPEN, _CLOSE = "{\uff5b", "}\uff5d"  # ASCII and full-width braces
_QUOTED = re.compile(r"[ \t]*>")


def _verdict_objects(text: str) -> list[tuple[int, int]]:
    # the innermost closed {…} around each verdict key: one pass with a stack of open braces
    keys = [found.start() for found in _VERDICT_KEY.finditer(text)]
    spans: list[tuple[int, int]] = []
    opened: list[int] = []
    holding: set[int] = set()  # open-brace offsets whose innermost object holds a key
    next_key = 0
    for at, ch in enumerate(text):
        while next_key < len(keys) and keys[next_key] <= at:
            if opened:
                holding.add(opened[-1])
            next_key += 1
        if ch in _OPEN:
            opened.append(at)
        elif ch in _CLOSE and opened:
            start = opened.pop()
            if start in holding:
                spans.append((start, at + 1))
    return spans


def quote_verdict_lines(text: str) -> str:
    """Quote with ``> `` the lines of a verdict-shaped text; lines already quoted stay as they are.

    Quoted: each line of a closed ``{…}`` with a ``verdict`` key, a ``verdict`` key line, and a
    ``reason`` key line next to one. A ``reason`` key alone stays: real error logs have one.
    """
    newlines = [at for at, ch in enumerate(text) if ch == "\n"]
    marked: set[int] = set()
    for start, end in _verdict_objects(text):
        first = bisect.bisect_left(newlines, start)
        marked.update(range(first, bisect.bisect_left(newlines, end) + 1))
    lines = text.split("\n")
    for n in [n for n, line in enumerate(lines) if _VERDICT_LINE.search(line)]:
        marked.add(n)
        marked.update(
            near
            for near in (n - 1, n + 1)
            if 0 <= near < len(lines) and _REASON_LINE.search(lines[near])
        )
    return "\n".join(
        f"> {line}" if n in marked and not _QUOTED.match(line) else line
        for n, line in enumerate(lines)
    )


def delimit_issue(issue: IssueText, *, nonce: str | None = None) -> str:
    """Wrap the issue in ``<issue id="NONCE">`` … ``</issue>``; ``None``: a random 8-hex nonce."""
    tag_id = nonce or secrets.token_hex(4)
    title = quote_verdict_lines(escape_delimiters(issue.title)) or "(no title)"
    body = quote_verdict_lines(quote_role_lines(escape_delimiters(issue.body))) or "(empty body)"
    return f'<issue id="{tag_id}">\nTitle: {title}\n\n{body}\n</issue>'
