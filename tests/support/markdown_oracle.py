"""The oracle for everything the bot posts as markdown: a real CommonMark renderer.

markdown-it-py with GitHub's extensions that matter here (tables, strikethrough, autolinks of
bare URLs via linkify-it-py) and raw HTML on, as github.com renders comments and step
summaries. :func:`render` returns what a reader would get: every HTML element (start tags
with their attributes), the text outside code, the text inside code, and the top-level
blocks. Tests and benchmarks/reliability.py assert safety
on this, never on the bot's own idea of markdown.

GitHub-only rules the renderer does not know are checked on its output, in text outside code
(GitHub links none inside code), because github.com applies them *after* rendering, where
backslash escapes are already gone: a mention is ``@`` directly followed by a letter, digit,
``-`` or ``_``; references are ``#12``, ``owner/repo#12`` and ``GH-12``, commit SHAs 7-40 hex
digits, emoji shortcodes ``:name:`` (GitHub's "Autolinked references and URLs" and
"Basic writing and formatting syntax").
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser

from markdown_it import MarkdownIt

__all__ = ["Rendered", "render"]

MD = MarkdownIt("commonmark", {"html": True, "linkify": True}).enable(
    ["table", "strikethrough", "linkify"]
)

_MENTION = re.compile(r"@[A-Za-z0-9_-]")
_GITHUB_LINK = re.compile(
    r"(?<![\w/])(?:[\w.-]+/[\w.-]+)?#[0-9]+|\bGH-[0-9]+"
    r"|(?<![0-9A-Za-z])[0-9A-Fa-f]{7,40}(?![0-9A-Za-z])"
    r"|:(?:[a-z0-9_+-]*[a-z][a-z0-9_+-]*|[+-]1|100|1234):",  # emoji names hold a letter, or
    # are one of the few all-digit ones
    re.IGNORECASE,
)
_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "source", "wbr", "area"})


@dataclass
class Rendered:
    """A rendered markdown document.

    Attributes:
        html: the HTML markdown-it-py produced.
        tags: start-tag name → count (raw HTML the markdown let through shows up here).
        attributes: every attribute name seen on any tag (``src``, ``href``, ``onerror`` …).
        text: text outside ``<code>``/``<pre>``, in document order, a line break where a code
            element was.
        code: text inside ``<code>``, one entry per element.
        all_text: all text, code included, in document order.
        blocks: top-level elements in order as ``(tag, text)``.
        comments: HTML comments (hidden markers) in order.
    """

    html: str
    tags: Counter[str] = field(default_factory=Counter)
    attributes: set[str] = field(default_factory=set)
    text: str = ""
    code: list[str] = field(default_factory=list)
    all_text: str = ""
    blocks: list[tuple[str, str]] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)

    @property
    def mentions(self) -> list[str]:
        """Live mentions GitHub would link (outside code)."""
        return _MENTION.findall(self.text.replace("\u200b", " "))

    @property
    def github_links(self) -> list[str]:
        """References, SHAs and emoji github.com would link or replace (outside code)."""
        return _GITHUB_LINK.findall(self.text.replace("\u200b", " "))


class _Collector(HTMLParser):
    def __init__(self, out: Rendered) -> None:
        super().__init__(convert_charrefs=True)
        self.out = out
        self.stack: list[str] = []
        self.in_code = 0
        self.parts: list[str] = []
        self.everything: list[str] = []
        self.block_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.out.tags[tag] += 1
        self.out.attributes.update(name for name, _ in attrs)
        if tag in _VOID:
            return
        if not self.stack:
            self.block_text = []
        self.stack.append(tag)
        if tag in ("code", "pre"):
            # GitHub links references, mentions and emoji per text node: text on either side
            # of a code element never joins into one (``:x<code>…</code>y:`` is no ``:xy:``)
            self.parts.append("\n")
            self.in_code += 1
            if tag == "code":
                self.out.code.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or tag not in self.stack:
            return
        while self.stack:
            top = self.stack.pop()
            if top in ("code", "pre"):
                self.in_code -= 1
            if top == tag:
                break
        if not self.stack:
            self.out.blocks.append((tag, "".join(self.block_text)))

    def handle_data(self, data: str) -> None:
        self.block_text.append(data)
        self.everything.append(data)
        if self.in_code:
            if self.out.code:
                self.out.code[-1] += data
            return
        self.parts.append(data)

    def handle_comment(self, data: str) -> None:
        self.out.comments.append(data)


def render(markdown: str) -> Rendered:
    """Render ``markdown`` as GitHub would (CommonMark + tables + strikethrough, raw HTML on)
    and collect what a reader gets."""
    out = Rendered(MD.render(markdown))
    collector = _Collector(out)
    collector.feed(out.html)
    collector.close()
    out.text = "".join(collector.parts)
    out.all_text = "".join(collector.everything)
    return out
