"""Posting safety: model text and paths cannot mention, embed, inject HTML or a marker."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.neutralise import code_span, neutralise_block

SPAN = re.compile(r"(?<![`\\])`[^`\n]+`(?!`)")


def _outside_spans(text: str) -> str:
    # a code span separates the text around it when rendered: "@`x`a" mentions nobody
    return SPAN.sub(" ", text)


@pytest.mark.parametrize(
    ("raw", "bad"),
    [
        ("ping @octocat please", "@octocat"),
        ("![x](https://evil.example/p.png)", "!["),
        ("<img src=x onerror=alert(1)>", "<img"),
        ("<!-- triage-bot:audit -->", "<!--"),
        ("<details open>", "<details"),
        ("\\`<img src=x>`", "<img"),
        ("``<b>x</b>`", "<b>"),
    ],
)
def test_dangerous_markup_is_neutralised(raw: str, bad: str) -> None:
    assert bad not in _outside_spans(neutralise_block(raw))


def test_code_spans_keep_operators_readable() -> None:
    assert neutralise_block("use `a <= b` instead") == "use `a <= b` instead"


def test_lines_are_kept_and_length_capped() -> None:
    text = "- one\n- two @x\n" + "y" * 100
    out = neutralise_block(text, max_chars=30)
    assert out.startswith("- one\n- two @\u200bx\n")
    assert len(out) == 30
    assert out.endswith("…")


def test_code_span_cannot_be_broken_out_of() -> None:
    assert code_span("a`b\nc") == "`a'b c`"


@given(st.text(alphabet=st.sampled_from(list("<>!@[]()`\\-\n abc")), max_size=200))
def test_nothing_dangerous_survives_outside_code_spans(text: str) -> None:
    out = _outside_spans(neutralise_block(text))
    assert "<" not in out
    assert not re.search(r"@[A-Za-z0-9_-]", out)
    assert "![" not in out.replace("!\\[", "")
