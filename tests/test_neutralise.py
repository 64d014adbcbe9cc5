"""The sinks for untrusted text, judged by a real CommonMark renderer
(tests/support/markdown_oracle.py).

Each sink must make any string inert by construction. The
properties run every sink on hostile text in the places the bot uses it (a line's start, the
middle of a paragraph, a table cell, a ``<summary>``, a block between the bot's own HTML) and
check the rendered result: no element the bot did not write, no attribute, no live mention or
link (autolinks included), the bot's own structure intact, and the author's text shown whole.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.neutralise import (
    ZWSP,
    code_block,
    code_span,
    command_data,
    html_text,
    log_text,
    log_value,
    neutralise,
    neutralise_block,
)
from tests.support.markdown_oracle import render
from tests.support.profiles import FUZZ

# Markdown/HTML syntax, GitHub's own (mentions, math, autolinks), whitespace and a few letters.
SYNTAX = [*list("<>!@[]()`\\-*_~|#$:.&;=+/{}\"' \t\n\r"), "\u2028", "\x00", "\x1b", "1."]
WORDS = ["img", "src", "http", "www", "details", "summary", "script", "octocat", "x", "é",
         "12", "GH-", "ec26c3e5", "rocket", "mermaid", "\u202e", "\u200b"]  # fmt: skip
HOSTILE = st.lists(st.sampled_from(SYNTAX + WORDS), max_size=60).map("".join)
PRINTABLE = st.lists(st.sampled_from([c for c in SYNTAX + WORDS if c.isprintable()]),
                     max_size=60).map("".join)  # fmt: skip

INLINE_TAGS = {"p", "code"}
TABLE_TAGS = {"table", "thead", "tbody", "tr", "th", "td", "code"}
BLOCK_TAGS = {"details", "summary", "p", "ul", "ol", "li", "pre", "code"}


def _squash(text: str) -> str:
    """The text without whitespace, zero-width spaces and backticks (code-span delimiters are
    formatting, not text): what a reader reads, in order."""
    return "".join(text.replace(ZWSP, "").replace("`", "").split())


def _words(text: str) -> list[str]:
    """Words of 2+ letters; backticks are formatting (``a`b`c`` renders as one word ``abc``)."""
    return re.findall(r"[^\W\d_]{2,}", unicodedata.normalize("NFC", text.replace("`", "")))


def _inert(rendered_tags: set[str], allowed: set[str]) -> None:
    assert rendered_tags <= allowed, rendered_tags - allowed


# --- known attacks (the issue's own examples) --------------------------------------------------
ATTACKS = [
    "\\``x`@team <img src=//evil/p.png>`",  # a backslash before a backtick run
    "`\n`<img src=//evil/p.png>`",  # a lone backtick, then a span on the next line
    "x<img src=//evil/p.png>.py",
    "</details>@org/team",
    "![pwn](https://evil.example/p.png) [link](https://evil.example)",
    "<!-- triage-bot:audit --> <script>alert(1)</script>",
    "a | b | c",
    "```\nunclosed fence swallowing what follows",
    "www.evil.example and https://evil.example and $\\color{red}{x}$",
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_known_attacks_render_inert_in_every_sink(attack: str) -> None:
    paragraph = render(f"before {neutralise(attack)} after")
    _inert(set(paragraph.tags), INLINE_TAGS)
    assert not paragraph.attributes
    assert not paragraph.mentions
    assert not paragraph.github_links
    block = render(
        f"<details><summary>s</summary>\n\n{neutralise_block(attack)}\n\n</details>\n\nTAIL"
    )
    _inert(set(block.tags), BLOCK_TAGS)
    assert block.tags["details"] == 1
    assert block.blocks[-1] == ("p", "TAIL")
    assert not block.mentions
    assert not block.github_links
    assert set(block.attributes) <= {"start"}  # no info string: no ```mermaid or ```math
    summary = render(f"<details><summary>{html_text(attack)}</summary>\n\nx\n\n</details>")
    assert set(summary.tags) == {"details", "summary", "p"}
    assert not summary.mentions
    assert not summary.github_links
    assert "\u202e" not in paragraph.all_text + block.all_text + summary.all_text


def test_code_spans_stay_readable() -> None:
    assert render(neutralise("use `a <= b` instead")).code == ["a <= b"]
    assert neutralise_block("- one\n- two @x") == f"- one\n- two @{ZWSP}x"


def test_an_unclosed_fence_is_closed_by_the_bot() -> None:
    out = neutralise_block("look:\n```python\nprint('<b>')\n</details>")
    rendered = render(out + "\n\nCoverage line")
    assert rendered.blocks[-1] == ("p", "Coverage line")
    assert rendered.code == ["print('<b>')\n</details>\n"]
    assert "class" not in rendered.attributes  # the language is dropped (```mermaid renders)


def test_length_is_capped_on_what_is_posted() -> None:
    """The bound is on the markdown, escapes included: 4,000 backticks (5 characters each as
    ``&#96;``) still make at most ``max_chars`` characters."""
    assert render(neutralise("x" * 100, max_chars=30)).text.strip() == "x" * 29 + "…"
    for sink in (neutralise, neutralise_block):
        out = sink("` " * 4000, max_chars=2000)
        assert len(out) <= 2000
        assert out.endswith("…")


# --- properties: hostile text in every place, checked by the renderer --------------------------
@FUZZ
@given(HOSTILE)
def test_inline_text_is_inert_anywhere_in_a_paragraph(text: str) -> None:
    for doc in (neutralise(text), f"a {neutralise(text)} b", f"{neutralise(text)}\n===\n"):
        rendered = render(doc)
        _inert(set(rendered.tags), INLINE_TAGS | {"h1"} if doc.endswith("===\n") else INLINE_TAGS)
        assert not rendered.attributes
        assert not rendered.mentions
        assert not rendered.github_links


@FUZZ
@given(PRINTABLE)
def test_inline_text_shows_the_authors_text_whole(text: str) -> None:
    rendered = render(f"a {neutralise(text, max_chars=10_000)} b")
    assert _squash(rendered.all_text) == "a" + _squash(text) + "b"


@FUZZ
@given(HOSTILE, HOSTILE)
def test_table_cells_stay_cells(left: str, right: str) -> None:
    """Two untrusted cells (one as text, one as code) in a 3-column row stay 3 cells."""
    doc = (
        "| a | b | c |\n|---|---|---|\n"
        f"| {neutralise(left, table=True)} | {code_span(right, table=True)} | z |"
    )
    rendered = render(doc)
    _inert(set(rendered.tags), TABLE_TAGS)
    assert rendered.tags["td"] == 3
    assert rendered.tags["tr"] == 2
    assert not rendered.mentions
    assert not rendered.attributes


@FUZZ
@given(HOSTILE)
def test_code_span_shows_exactly_the_text(text: str) -> None:
    rendered = render(f"see {code_span(text, max_chars=10_000)} here")
    assert rendered.tags == {"p": 1, "code": 1}
    shown = "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in text)
    assert rendered.code == [shown or " "]


@FUZZ
@given(HOSTILE)
def test_a_block_cannot_escape_the_bots_details(text: str) -> None:
    """Model text between the bot's ``<details>`` and its coverage line: nothing it writes
    closes the block early, swallows the coverage line, or renders as HTML."""
    doc = (
        f"<details><summary>s</summary>\n\n{neutralise_block(text)}\n\n</details>\n\n"
        "**Coverage:** 1 segment"
    )
    rendered = render(doc)
    _inert(set(rendered.tags), BLOCK_TAGS | {"strong"})
    assert set(rendered.attributes) <= {"start", "class"}  # <ol start>, <code class=language-x>
    assert rendered.tags["details"] == 1
    assert rendered.tags["strong"] == 1
    assert rendered.blocks[-1] == ("p", "Coverage: 1 segment")
    assert not rendered.mentions


@FUZZ
@given(PRINTABLE)
def test_a_block_keeps_every_word(text: str) -> None:
    """Every word is shown (a fence's info string, which no renderer shows, aside) and no
    word is invented."""
    shown = Counter(_words(render(neutralise_block(text, max_chars=10_000)).all_text))
    fences = re.compile(r"^[ \t]*(?:`{3,}|~{3,}).*$", re.MULTILINE)
    assert Counter(_words(fences.sub("", text))) <= shown <= Counter(_words(text))


@FUZZ
@given(HOSTILE)
def test_code_block_holds_every_line(text: str) -> None:
    lines = text.split("\n")
    rendered = render(code_block(lines) + "\n\nafter")
    assert rendered.tags == {"pre": 1, "code": 1, "p": 1}
    assert rendered.blocks[-1] == ("p", "after")


@FUZZ
@given(HOSTILE)
def test_html_text_is_text_in_a_summary(text: str) -> None:
    rendered = render(f"<details><summary>{html_text(text)}</summary>\n\nbody\n\n</details>")
    assert set(rendered.tags) == {"details", "summary", "p"}
    assert not rendered.attributes
    assert not rendered.mentions


# --- stdout and stderr: text for people, no workflow command -------------------------------------

# What .NET's char.IsWhiteSpace calls whitespace: the runner trims it before it looks for "::".
NET_WHITESPACE = "".join(
    chr(c) for c in range(0x110000)
    if unicodedata.category(chr(c)) in ("Zs", "Zl", "Zp") or chr(c) in "\t\n\v\f\r\x85\xa0"
)  # fmt: skip


def runner_commands(text: str) -> list[str]:
    """The lines of ``text`` GitHub's runner would read as workflow commands: it splits at CR
    and LF (.NET's ``ReadLine``), reads ``::`` at a line's start after .NET whitespace, and
    ``##[`` anywhere in a line."""
    lines = re.split("\r\n|\r|\n", text)
    return [line for line in lines if line.lstrip(NET_WHITESPACE).startswith("::") or "##[" in line]


def _as_written(out: str) -> str:
    """Undo the sink: drop its zero-width spaces, read its escapes back (for text without a
    backslash of its own)."""
    return out.replace(ZWSP, "").encode("latin-1", "backslashreplace").decode("unicode_escape")


STDOUT_PIECES = [*SYNTAX, "%", "%0A", "%5B", "::", "##[", "set-output", "\x85", "\u2029",
                 "\x1c", "é", "\xa0", "\u3000", "\u200b", "\x0b", "\x0c", "\r\n", "\ud800",
                 "x"]  # fmt: skip
STDOUT_TEXT = st.lists(st.sampled_from(STDOUT_PIECES)).map("".join)


@FUZZ
@given(STDOUT_TEXT)
def test_log_value_is_one_line_without_commands_and_loses_nothing(text: str) -> None:
    """One line however the runner or Python splits it, no workflow command, no control
    character but a tab, ``%`` as ``%`` (no percent-encoding), and the text comes back whole."""
    out = log_value(text, max_chars=10_000)
    assert runner_commands(out) == []
    assert len(out.splitlines()) <= 1  # Python's idea of a line break is the widest
    assert not any(unicodedata.category(ch) in ("Cc", "Cs") and ch != "\t" for ch in out)
    assert out.count("%") == text.count("%")
    if "\\" not in text:
        assert _as_written(out) == text


@FUZZ
@given(STDOUT_TEXT)
def test_log_text_keeps_its_lines_and_starts_no_command(text: str) -> None:
    """Lines kept (CRLF as LF), none of them a workflow command, each shown as written."""
    out = log_text(text, max_chars=10_000)
    assert runner_commands(out) == []
    lines = text.replace("\r\n", "\n").split("\n")
    assert len(re.split("\r\n|\r|\n", out)) == len(lines)
    assert out.count("%") == text.count("%")
    if "\\" not in text:
        assert [_as_written(line) for line in out.split("\n")] == lines


@pytest.mark.parametrize(
    ("sink", "text", "shown"),
    [
        (log_value, "50% done\r\n::error::x", "50% done\\r\\n::error::x"),
        (log_value, "::error::x", f"{ZWSP}::error::x"),
        (log_value, "a ##[set-output name=v;]x", f"a ##{ZWSP}[set-output name=v;]x"),
        (log_value, "\x1b[31mred\u2028", "\\x1b[31mred\\u2028"),
        (log_text, "line 1: 10% of 20\n  ::warning::y\r\nok",
         f"line 1: 10% of 20\n  {ZWSP}::warning::y\nok"),
        (log_text, "a\rb\u00a0::c", "a\\rb\u00a0::c"),
        (log_text, "\u3000::x", f"\u3000{ZWSP}::x"),
        (command_data, "50%\r\nx", "50%25%0D%0Ax"),
    ],
)  # fmt: skip
def test_what_people_read_is_the_text(sink: Callable[[str], str], text: str, shown: str) -> None:
    """Only a workflow command's data is percent-encoded; people's text is the text."""
    assert sink(text) == shown
