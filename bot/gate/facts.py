"""Facts about an issue the bot establishes itself, with a markdown parser and no model.

The body is parsed as github.com reads it (markdown-it-py, CommonMark). Template sections left
empty or holding a placeholder (``[e.g. 3.6]``, ``<version>``) count as empty, and their text
is not the author's prose.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["IssueFacts", "issue_facts"]


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


_TRACE = re.compile(
    r"^\s*at\s+\S.*(?:\(.*:\d+(?::\d+)?\)|:\d+:\d+)\s*$"  # JavaScript, Java/.NET: at f (x.js:1:2)
    r"|^\s*File \".+\", line \d+"  # Python
    r"|Traceback \(most recent call last\)"
    r"|^\s*\d+:\s+0x[0-9a-f]+|^\s*\d+: \S+::\S+"  # Rust backtrace frames
    r"|panicked at |^goroutine \d+ \[|^\s*at [\w$.<>]+\([\w$.<> ]*\)"  # Rust, Go, Java
    r"|^\s+from \S+:\d+:in ",  # Ruby
    re.MULTILINE,
)
_ERROR = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b|\berror\b|\bERR!|\bfatal\b|\bpanic\b|\bfailed\b|"
    r"\bcrash(?:es|ed)?\b|\bwarning\b|\bexit (?:code|status) \d+",
    re.IGNORECASE,
)
_VERSION = re.compile(
    r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?:[-+][\w.]+)?(?![\w.]*\d)"
    r"|\bversion\b[ \t]*(?::[ \t]*\S|v?\d)",  # a value on the same line, not the word alone
    re.I,
)
_REPRO_LINK = re.compile(
    r"https?://(?:[\w-]+\.)*(?:codesandbox\.io|stackblitz\.com|jsfiddle\.net|codepen\.io|"
    r"replit\.com|sharplab\.io|godbolt\.org|play\.[\w.-]+|[\w.-]*playground[\w.-]*|"
    r"gist\.github\.com|github\.com/[\w.-]+/[\w.-]+/(?:blob|tree|pull|commit|issues))\S*",
    re.IGNORECASE,
)
_PLACEHOLDER = re.compile(
    r"a clear and concise description|describe the bug|steps to reproduce the behaviou?r|"
    r"\[e\.g\.|\(e\.g\.|type here|please describe|please complete the following|"
    r"^\s*<[a-z _-]+>\s*$|yes/no|^\s*\.\.\.\s*$|^\s*\.\s*$|^\s*\d+\.\s*$|"
    r"in this environment\.\.\.|with this config\.\.\.|run '\.\.\.'|see error",
    re.IGNORECASE | re.MULTILINE,
)
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_URL = re.compile(r"https?://\S+|www\.\S+", re.IGNORECASE)
WIDE_SCRIPT = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
"""Kana, CJK ideographs and Hangul: scripts written without spaces between words."""


def _word_count(text: str) -> int:
    # a script written without spaces counts two words per three characters (a Chinese word
    # averages about 1.5 characters), so a Chinese post is not "one word"
    wide = len(WIDE_SCRIPT.findall(text))
    return len(_WORD.findall(WIDE_SCRIPT.sub(" ", text))) + (2 * wide + 1) // 3


@dataclass(frozen=True)
class IssueFacts:
    """What the bot can check in an issue without a model.

    Attributes:
        prose_words: words the author wrote outside code, links, images, headings and
            template placeholders, title excluded.
        title_words: words in the title.
        code_blocks: fenced or indented code blocks with content.
        inline_code: inline code spans.
        trace: a stack trace or backtrace (Python, JavaScript, Java, Go, Rust, Ruby frames).
        error_line: a line naming an error, failure, crash or exit status.
        version: a version number (``3.4.29``, ``v2.1``) or a ``version:`` line with a value.
        steps: an ordered list of two or more non-empty items.
        repro_link: a link to a playground, sandbox, gist or a file/commit/issue on GitHub.
        images: images (markdown or ``<img>``).
        links: links other than images.
        sections: template-like sections (headings, or lines that are all bold text).
        empty_sections: of those, sections left empty or holding only a placeholder.
        placeholders: template placeholder phrases still in the text (outside section titles
            and code, except a code block holding only a placeholder).
        log_share: share of the body's characters inside code blocks (0–1).
        non_ascii_share: share of letters outside ASCII, title and body (0–1).
        question: the title or the body's prose ends with a question mark.
    """

    prose_words: int
    title_words: int
    code_blocks: int
    inline_code: int
    trace: bool
    error_line: bool
    version: bool
    steps: bool
    repro_link: bool
    images: int
    links: int
    sections: int
    empty_sections: int
    placeholders: int
    log_share: float
    non_ascii_share: float
    question: bool

    def as_dict(self) -> dict[str, Any]:
        """The facts as a JSON-ready mapping (eval reports, the fitted rule's inputs)."""
        return asdict(self)


def _is_section_title(tokens: list[Token], i: int) -> bool:
    # a heading, or a paragraph that is all bold (**Describe the bug**)
    if tokens[i].type == "heading_open":
        return True
    if tokens[i].type != "paragraph_open" or i + 1 >= len(tokens):
        return False
    children = tokens[i + 1].children or []
    kinds = [c.type for c in children if not (c.type == "text" and not c.content.strip())]
    return (
        len(kinds) >= 3 and kinds[0] == "strong_open" and kinds[-1] == "strong_close"
        and "strong_open" not in kinds[1:-1]
    )  # fmt: skip


def _inline_words(token: Token) -> tuple[int, int, int, int]:
    words = code = images = links = 0
    in_link = 0
    for child in token.children or []:
        if child.type == "code_inline":
            code += 1
        elif child.type == "image":
            images += 1
        elif child.type == "link_open":
            links += 1
            in_link += 1
        elif child.type == "link_close":
            in_link -= 1
        elif child.type == "text" and not in_link:
            bare = _URL.findall(child.content)  # CommonMark links no bare URL; GitHub does
            links += len(bare)
            words += _word_count(_URL.sub(" ", child.content))
        elif child.type == "html_inline" and child.content.lower().startswith("<img"):
            images += 1
    return words, code, images, links


def issue_facts(title: str, body: str) -> IssueFacts:
    """The facts of a judged title and body (as ``prepare_issue`` cleans them); never raises."""
    tokens = _parser().parse(body)
    prose = code_blocks = inline_code = images = links = 0
    sections = empty_sections = 0
    section_filled: bool | None = None
    code_chars = 0
    ordered_items: list[int] = []
    list_depth = 0
    for i, token in enumerate(tokens):
        if _is_section_title(tokens, i):
            if section_filled is False:
                empty_sections += 1
            sections += 1
            section_filled = False
            continue
        if token.type in ("fence", "code_block"):
            if token.content.strip() and not _PLACEHOLDER.fullmatch(token.content.strip()):
                code_blocks += 1
                code_chars += len(token.content)
                section_filled = True
        elif token.type == "html_block" and "<img" in token.content.lower():
            images += token.content.lower().count("<img")
            section_filled = True
        elif token.type == "ordered_list_open":
            ordered_items.append(0)
            list_depth += 1
        elif token.type == "ordered_list_close":
            list_depth -= 1
        elif token.type == "inline":
            previous = tokens[i - 1] if i else None
            if previous is not None and previous.type == "heading_open":
                continue  # a heading's own words are the template's, not the author's
            if previous is not None and _is_section_title(tokens, i - 1):
                continue
            text = token.content.strip()
            placeholder = bool(_PLACEHOLDER.search(text)) and _word_count(text) <= 12
            words, spans, imgs, lnks = _inline_words(token)
            inline_code += spans
            images += imgs
            links += lnks
            if placeholder or not (any(ch.isalnum() for ch in text) or spans or imgs or lnks):
                continue  # a version, a bare URL or a number fills a section too
            prose += words
            section_filled = True
            if list_depth and ordered_items:
                ordered_items[-1] += 1
    if section_filled is False:
        empty_sections += 1
    letters = [ch for ch in f"{title}{body}" if ch.isalpha()]
    prose_text = _prose_tail(tokens)
    return IssueFacts(
        prose_words=prose,
        title_words=_word_count(title),
        code_blocks=code_blocks,
        inline_code=inline_code,
        trace=bool(_TRACE.search(body)),
        error_line=bool(_ERROR.search(body)),
        version=bool(_VERSION.search(body)),
        steps=any(n >= 2 for n in ordered_items),
        repro_link=bool(_REPRO_LINK.search(body)),
        images=images,
        links=links,
        sections=sections,
        empty_sections=empty_sections,
        placeholders=_placeholder_count(tokens, body),
        log_share=code_chars / len(body) if body else 0.0,
        non_ascii_share=sum(not ch.isascii() for ch in letters) / len(letters) if letters else 0.0,
        question=title.rstrip().endswith(("?", "？")) or prose_text.endswith(("?", "？")),
    )


_BOLD_LINE = re.compile(r"^[ \t]*(?:\*\*[^*\n]+\*\*|__[^_\n]+__)[ \t]*:?[ \t]*$", re.MULTILINE)


def _placeholder_count(tokens: list[Token], body: str) -> int:
    # section titles are the template's wording and code is the author's (a log's "..." line):
    # neither counts, except a code block holding nothing but a placeholder
    skip: set[int] = set()
    count = 0
    for token in tokens:
        if token.map is None or token.type not in ("heading_open", "fence", "code_block"):
            continue
        skip.update(range(*token.map))
        if token.type != "heading_open" and _PLACEHOLDER.fullmatch(token.content.strip()):
            count += 1
    lines = body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    kept = "\n".join(line for n, line in enumerate(lines) if n not in skip)
    return count + len(_PLACEHOLDER.findall(_BOLD_LINE.sub("", kept)))


def _prose_tail(tokens: list[Token]) -> str:
    for token in reversed(tokens):
        if token.type == "inline" and token.content.strip():
            return token.content.strip()
    return ""
