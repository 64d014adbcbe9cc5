"""The sinks for untrusted text: one function per place text leaves the bot.

Untrusted text is model output, file paths, issue and comment text, label names and exception
messages that may echo any of those. Each sink makes it inert *by construction* — it never
decides whether a piece of markdown is dangerous, it rebuilds the text so that no syntax
survives except what the sink itself writes:

* :func:`neutralise` — inline markdown (a paragraph, a table cell, a list item). Every ASCII
  punctuation character that CommonMark or GitHub gives a meaning to is backslash-escaped
  (backticks as ``&#96;``, so no backtick run can form), ``@`` is followed by a zero-width
  space (no mention, no e-mail autolink), whitespace is collapsed (no line structure). Text
  between two equal backtick runs is re-emitted by :func:`code_span`, so code stays readable.
* :func:`neutralise_block` — multi-line markdown. Each line is inline text as above; the only
  structure kept is the list marker at a line's start and fenced code, re-emitted in a fence
  longer than any backtick run inside it and always closed (an unclosed fence in model text
  cannot swallow what the bot writes after it).
* :func:`code_span` / :func:`code_block` — inline or fenced code whose delimiter is longer
  than any backtick run in it.
* :func:`chart_label` — a quoted label inside the bot's own mermaid chart (a week on the
  x-axis): one line of letters, digits and ``-.:/_+``; anything else becomes ``?``.
* :func:`html_text` — text inside raw HTML the bot writes (``<summary>…</summary>``): markdown
  does not apply there (CommonMark HTML blocks), so it is HTML-escaped instead.
* :func:`log_value` / :func:`log_text` — text for people on stdout or stderr (one line, or
  lines kept), shown as it is: only control, format, private-use and unassigned characters and
  line separators become visible escapes (``\x1b``, ``\u2028``; ``\n`` in a one-line
  value), and a zero-width space keeps any line from starting a workflow command (see
  :func:`log_text`). No percent-encoding: that belongs to workflow commands.
* :func:`command_data` — the data of a workflow command (``::warning::…``, ``::add-mask::…``),
  escaped as GitHub's toolkit escapes it (``%25``, ``%0D``, ``%0A``): the only place the bot
  percent-encodes printed text.
* :func:`escape_delimiters` / :func:`escape_special_tokens` — untrusted text inside a prompt's
  delimited block (the issue in ``<issue>``, the code in the audit's block): a tag that would
  open or close the block, and a chat-template control token written as text, lose their first
  character to an entity, so the text can neither leave its block nor forge a chat turn.

The oracle for every markdown sink is a real CommonMark renderer with tables and raw HTML on
(markdown-it-py), in tests/test_neutralise.py and benchmarks/reliability.py.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

__all__ = [
    "chart_label",
    "code_block",
    "code_span",
    "command_data",
    "escape_delimiters",
    "escape_special_tokens",
    "html_text",
    "json_line",
    "log_text",
    "log_value",
    "neutralise",
    "neutralise_block",
    "visible",
]

ZWSP = "\u200b"
"""Zero-width space: follows every ``@`` so GitHub links no mention and no e-mail address."""

_SYNTAX = frozenset("\\*_[]<>!|~&#$:.()")
"""ASCII punctuation escaped with a backslash: emphasis, links and images, raw HTML and
entities, tables, strikethrough, headings and issue references, math, autolinks
(``http:``, ``www.``), ordered-list markers. Backticks are written as ``&#96;``."""

_LINE_START = frozenset("-+=")
"""Escaped only at the start of inline text: list markers, setext underlines."""

_RUN = re.compile(r"`+")
_LIST_MARKER = re.compile(r"([-*+]|[0-9]{1,9}[.)])[ \t]+")
_FENCE = re.compile(r"(`{3,}|~{3,})(.*)$")


@cache
def _tag_like(tag: str) -> re.Pattern[str]:
    # "\s*(?:/\s*)?" rather than "\s*/?\s*": unambiguous, so no quadratic backtracking.
    return re.compile(rf"<(?=\s*(?:/\s*)?{re.escape(tag)})", re.IGNORECASE)


_SPECIAL_TOKEN = re.compile(
    "|".join(
        (
            r"<(?=\|[^<>|\n]{1,40}\|>)",  # ChatML, Llama 3, Phi, Qwen FIM: <|im_start|>
            r"<(?=\uff5c[^<>\uff5c\n]{1,40}\uff5c>)",  # DeepSeek: <｜begin▁of▁sentence｜>
            r"<(?=/?[a-z]+(?:_[a-z]+)*_of_[a-z_]+>)",  # Gemma: <start_of_turn>, <end_of_image>
            r"<(?=unused[0-9]{1,4}>)",  # Gemma's reserved <unused0> … <unused6241>
            r"<(?=/?(?:s|bos|eos|pad|unk|mask|cls|sep)>)",  # SentencePiece/BERT control tokens
            r"<(?=/?(?:think|thinking|tool_call|tool_response|tools)>)",  # reasoning/tool tags
            r"<(?=<\s*/?\s*SYS\s*>>)",  # Llama 2: <<SYS>> <</SYS>>
            r"\[(?=/?(?:INST|[A-Z]+(?:_[A-Z]+)+)\])",  # Llama 2/Mistral: [INST] [TOOL_CALLS]
        )
    ),
    re.IGNORECASE,
)
"""Chat-template control tokens by family pattern (not a list of names): what a tokenizer
could read as a special token when the prompt is tokenised with special tokens parsed. The
first character is made inert (``<`` → ``&lt;``, ``[`` → ``&#91;``). The Mistral pattern is
upper-case words joined by ``_`` (``[TOOL_CALLS]``) or ``INST``, so ``[BUG]`` stays as written;
IGNORECASE applies to it too, which also catches ``[inst]``."""


def escape_delimiters(text: str, tag: str = "issue") -> str:
    """Make ``<TAG`` / ``</TAG`` (any case, any spacing) inside untrusted text inert
    (``<`` → ``&lt;``), so the text cannot open or close its delimiter."""
    return escape_special_tokens(_tag_like(tag).sub("&lt;", text))


def escape_special_tokens(text: str) -> str:
    """Make chat-template control tokens written as text inert: their first character
    becomes an entity (``<`` → ``&lt;``, ``[`` → ``&#91;``), for every family
    :data:`_SPECIAL_TOKEN` knows."""
    return _SPECIAL_TOKEN.sub(lambda m: "&lt;" if m.group() == "<" else "&#91;", text)


def _cap(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


_GITHUB_LINKS = re.compile(
    r"(?<=#)(?=[A-Za-z0-9])"  # issue and PR references: #12, owner/repo#12
    r"|(?<=\bGH)(?=-[0-9])"  # GH-12
    r"|(?<=:)(?=[A-Za-z0-9_+-]+:)",  # emoji shortcodes :rocket: (any case, to be safe)
)
_HEX_RUN = re.compile(r"(?<![0-9A-Za-z])[0-9A-Fa-f]{7,}(?![0-9A-Za-z])")


def _unlinked(text: str) -> str:
    """A zero-width space wherever github.com links or replaces text *after* rendering, so a
    backslash escape cannot stop it: issue and PR references, ``GH-`` numbers, emoji
    shortcodes, and hex runs a commit SHA could match (one every six digits)."""
    text = _GITHUB_LINKS.sub(ZWSP, text)
    return _HEX_RUN.sub(lambda m: ZWSP.join(re.findall(".{1,6}", m.group())), text)


def _hidden(ch: str) -> bool:
    """Control, format (bidi overrides, zero-width), private-use and unassigned characters."""
    return unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cn", "Zl", "Zp")


def _escape_plain(text: str, *, at_line_start: bool) -> str:
    out: list[str] = []
    for at, ch in enumerate(_unlinked(text)):
        if ch == "`":
            out.append("&#96;")
        elif ch == "@":
            out.append("@" + ZWSP)
        elif ch in _SYNTAX or (at == 0 and at_line_start and ch in _LINE_START):
            out.append("\\" + ch)
        elif ch != ZWSP and _hidden(ch):
            out.append(visible(ch))
        else:
            out.append(ch)
    return "".join(out)


def visible(text: str) -> str:
    """Control characters shown as escapes (``\\n``, ``\\x00``): code spans have no lines."""
    return "".join(
        ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


def code_span(text: str, *, max_chars: int = 300, table: bool = False) -> str:
    """Inline code showing ``text`` exactly (control characters as escapes; the shown text
    cut at ``max_chars`` with ``…``): the delimiter is one backtick longer than the longest run
    inside, padded with a space where CommonMark strips one. ``table=True`` escapes ``|``
    (GFM splits table cells before it reads code spans)."""
    content = _cap(visible(text), max_chars) or " "
    longest = max((len(run) for run in _RUN.findall(content)), default=0)
    fence = "`" * (longest + 1)
    if content.strip(" ") and (content[0] in "` " or content[-1] in "` "):
        content = f" {content} "
    if table:
        content = content.replace("|", "\\|")
    return f"{fence}{content}{fence}"


def _inline(text: str, *, table: bool, at_line_start: bool) -> str:
    """Escaped text with equal backtick runs on the line re-emitted as code spans."""
    out: list[str] = []
    last = 0
    runs = list(_RUN.finditer(text))
    used = -1
    for i, run in enumerate(runs):
        if i <= used:
            continue
        same = (j for j in range(i + 1, len(runs)) if runs[j].group() == run.group())
        closing = next(same, None)
        if closing is None:
            continue
        inner = text[run.end() : runs[closing].start()]
        if not inner.strip(" "):
            continue
        head = text[last : run.start()]
        out.append(_escape_plain(head, at_line_start=at_line_start and not out))
        out.append(code_span(inner.strip(" "), table=table))
        last = runs[closing].end()
        used = closing
    out.append(_escape_plain(text[last:], at_line_start=at_line_start and not out))
    return "".join(out)


def _fitted(source: str, build: Callable[[str], str], max_chars: int) -> str:
    """``build(source)``, with ``source`` cut (``…``) until the result is at most ``max_chars``
    long: escapes make the markdown longer than its text, and the bound is on what is posted."""
    while True:
        out = build(source)
        if len(out) <= max_chars or len(source) <= 1:
            return out
        source = _cap(source, max(1, min(len(source) - 1, len(source) * max_chars // len(out))))


def neutralise(text: str, *, max_chars: int = 1000, table: bool = False) -> str:
    """One line of inert markdown showing ``text`` (whitespace collapsed), at most ``max_chars``
    characters long (the text is cut with ``…`` to fit). Safe anywhere inline, at a line's
    start too; ``table=True`` for a GFM table cell."""
    flat = " ".join(text.split())
    return _fitted(flat, lambda t: _inline(t, table=table, at_line_start=True), max_chars)


def code_block(lines: Sequence[str]) -> str:
    """Fenced code showing ``lines`` exactly (control characters as escapes): the fence is a
    backtick run longer than any inside, so no line can close it. It carries no info string:
    on github.com ```mermaid, ```geojson, ```topojson, ```stl and ```math fences render as
    diagrams, maps, models and formulas, which untrusted text must not get."""
    shown = [visible(line) for line in lines]
    longest = max((len(r) for line in shown for r in _RUN.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence, *shown, fence])


def _block(text: str) -> str:
    out: list[str] = []
    code: list[str] | None = None
    closer = ""
    for raw in text.splitlines():
        line = raw.rstrip().replace("\t", "    ")
        stripped = line.lstrip(" ")
        fence = _FENCE.match(stripped)
        if code is not None:
            run, rest = (fence.group(1), fence.group(2)) if fence else ("", "x")
            if run[:1] == closer[0] and len(run) >= len(closer) and not rest.strip():
                out.append(code_block(code))
                code = None
                continue
            code.append(line)
            continue
        if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
            closer, code = fence.group(1), []
            continue
        if not stripped:
            if out and out[-1]:
                out.append("")
            continue
        marker = _LIST_MARKER.match(stripped)
        if marker:  # nesting kept: indentation only ever makes a list or literal code
            indent = " " * min(len(line) - len(stripped), 12)
            rest = _inline(
                " ".join(stripped[marker.end() :].split()), table=False, at_line_start=True
            )
            out.append(f"{indent}{marker.group(1)} {rest}")
        else:
            out.append(_inline(" ".join(stripped.split()), table=False, at_line_start=True))
    if code is not None:
        out.append(code_block(code))
    return "\n".join(out).strip("\n")


def neutralise_block(text: str, *, max_chars: int = 8000) -> str:
    """Multi-line inert markdown showing ``text``, at most ``max_chars`` characters long (the
    text is cut with ``…`` to fit).

    Kept: line breaks (one blank line at most between paragraphs), a list marker at a line's
    start with its indentation (``-``, ``*``, ``+``, ``1.``, ``1)``), and fenced code (``` or
    ~~~, re-emitted without its info string in a backtick fence longer than any run inside,
    closed at the end of the text if the author left it open). Everything else on a line is
    :func:`neutralise`'d.
    """
    return _fitted(text.strip(), _block, max_chars)


def html_text(text: str, *, max_chars: int = 300) -> str:
    """Text for inside raw HTML the bot writes (e.g. ``<summary>``): one line, control and
    invisible characters as escapes, HTML-escaped (quotes too), a zero-width space after
    ``@`` and where github.com would link a reference, SHA or emoji, cut at ``max_chars``."""
    flat = _cap(" ".join(visible(text).split()), max_chars)
    linked = _unlinked(flat)
    return html.escape(linked, quote=True).replace("@", "@" + ZWSP)


_NOT_LABEL = re.compile(r"[^0-9A-Za-z .:/_+-]")


def chart_label(text: str, *, max_chars: int = 32) -> str:
    """Text for a double-quoted label inside a mermaid chart the bot writes in its own
    ```` ```mermaid ```` fence (``x-axis ["2026-11-23", …]``), cut at ``max_chars`` with ``…``.

    Inside a fence markdown escapes would show, and mermaid has no escape for its quote, so
    only letters, digits, spaces and ``-.:/_+`` are kept: every other character (quotes,
    brackets, backticks and tildes that could close the fence, line breaks, ``#`` entity
    codes, ``%%`` comments, ``<`` HTML) becomes ``?``. A date passes unchanged.
    """
    return _cap(_NOT_LABEL.sub("?", " ".join(text.split())), max_chars)


def json_line(value: Any) -> str:
    """One line of JSON for stdout: ``json.dumps`` escapes control characters, line
    separators and non-ASCII; ``[`` after ``##`` (only ever inside a string) becomes
    ``\\u005b``, so the runner's ``##[`` commands cannot appear. Still valid JSON."""
    return json.dumps(value, ensure_ascii=True).replace("##[", "##\\u005b")


def command_data(text: str) -> str:
    """Text for the data of a workflow command (after ``::name::``), escaped as GitHub's
    toolkit escapes it: ``%`` → ``%25``, CR → ``%0D``, LF → ``%0A`` (the runner undoes it)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escaped(ch: str) -> str:
    """A character that is not shown as text (control, format, private-use, unassigned,
    surrogate, line or paragraph separator) as its escape (``\x1b``, ``\u202e``), else itself."""
    if ch == "\t" or not (_hidden(ch) or unicodedata.category(ch) == "Cs"):
        return ch
    return ch.encode("unicode_escape").decode("ascii")


def _plain_line(line: str) -> str:
    """One line of text shown as it is (see :func:`log_text`)."""
    shown = "".join(_escaped(ch) for ch in line).replace("##[", f"##{ZWSP}[")
    body = shown.lstrip()
    if body.startswith("::"):
        shown = shown[: len(shown) - len(body)] + ZWSP + body
    return shown


def log_text(text: str, *, max_chars: int = 20_000) -> str:
    """Text for people on a step's stdout or stderr (an error message, a report), its lines
    kept (CRLF read as LF), cut at ``max_chars`` with ``…``, shown as it is but inert.

    GitHub's runner reads a workflow command from a line that starts with ``::`` after leading
    whitespace (.NET's, which Python's ``str.isspace`` includes), and from ``##[`` anywhere in a
    line; it splits lines at CR and LF. So: every character that is not shown as text
    (control, format, private-use, unassigned, surrogate, line or paragraph separator; a tab
    stays) becomes its escape (``\r``, ``\x1b``, ``\u2028``), so no line break but LF
    remains and no escape sequence can restyle the log; a zero-width space goes before a
    ``::`` that would start a line and between the ``##`` and ``[`` of ``##[``. Nothing else
    changes: ``%`` stays ``%``. A zero-width space in ``text`` is escaped like any format
    character, so each one in the result is the sink's.
    """
    lines = _cap(text, max_chars).replace("\r\n", "\n").split("\n")
    return "\n".join(_plain_line(line) for line in lines)


def log_value(text: str, *, max_chars: int = 2000) -> str:
    """A value for one line of people's text on stdout or stderr: :func:`log_text` with the
    line break escaped too (``\n``), so the value cannot start a line. Callers put a fixed
    label before it; a table cell is one too."""
    return _plain_line(_cap(text, max_chars))
