"""``Retry-After`` is read by one rule (:func:`bot.retry.retry_after_s`, RFC 9110 section
10.2.3: delta-seconds or an HTTP-date) for GitHub and for an OpenAI-compatible server alike,
and what it asks is never negative, ``nan`` or beyond the caller's longest wait. The oracle
for a date is the date the test formatted, not the parser's reading of it."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx2
import openai
from github import GithubException
from hypothesis import example, given
from hypothesis import strategies as st

from bot.clients.github_errors import rate_limit_wait_s
from bot.clients.openai_client import server_wait_s
from bot.retry import retry_after_s

NOW = datetime(2026, 3, 4, 12, 0, 0, tzinfo=UTC)
LONGEST = 8.0

DATE_FORMATS = {
    "IMF-fixdate": lambda d: format_datetime(d, usegmt=True),
    "RFC 850": lambda d: d.strftime("%A, %d-%b-%y %H:%M:%S GMT"),
    "asctime": lambda d: d.strftime("%a %b ") + f"{d.day:2d}" + d.strftime(" %H:%M:%S %Y"),
}
"""RFC 9110's three HTTP-date forms (section 5.6.7)."""

NOT_A_WAIT = ["1e3", "inf", "-inf", "nan", "-1", "+5", "1.5", "0x10", "１２", "²", "",
              "soon", "12 s", "1,5", "Infinity", "9" * 20 + "e9",
              "Wed, 32 Feb 2026 00:00:00 GMT"]  # fmt: skip
"""Values that are neither delta-seconds nor an HTTP-date."""

Header = tuple[str, float | None, bool]
"""A ``Retry-After`` value, the wait it asks for before any bound (``None``: none), and
whether that wait is known (free text is only held to the bounds)."""


@st.composite
def _headers(draw: st.DrawFn) -> Header:
    kind = draw(st.sampled_from(["seconds", "huge", "date", "other", "text"]))
    pad = draw(st.sampled_from(["", " ", "\t", "  "]))
    if kind == "seconds":
        seconds = draw(st.integers(0, 10**6))
        return f"{pad}{seconds:0{draw(st.integers(1, 9))}d}{pad}", float(seconds), True
    if kind == "huge":
        digits = "9" * draw(st.integers(16, 400))
        return digits, float(digits), True  # past 308 digits: inf
    if kind == "date":
        offset = draw(st.integers(-(10**7), 10**7))
        form = draw(st.sampled_from(sorted(DATE_FORMATS)))
        when = NOW + timedelta(seconds=offset)
        return pad + DATE_FORMATS[form](when) + pad, float(max(0, offset)), True
    if kind == "other":
        return draw(st.sampled_from(NOT_A_WAIT)), None, True
    return (
        draw(st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30)),
        None,
        False,
    )


def _bounded(asked: float | None, longest: float) -> float | None:
    return None if asked is None else min(asked, longest)


@given(header=_headers(), longest=st.sampled_from([0.0, LONGEST, 3600.0, math.inf]))
@example(header=("1e3", None, True), longest=LONGEST)
@example(header=("inf", None, True), longest=LONGEST)
@example(header=("nan", None, True), longest=LONGEST)
@example(header=("-1", None, True), longest=LONGEST)
@example(header=(format_datetime(NOW + timedelta(seconds=90), usegmt=True), 90.0, True),
         longest=3600.0)  # fmt: skip
def test_a_header_asks_for_its_seconds_or_date_bounded_or_for_nothing(
    header: Header, longest: float
) -> None:
    value, asked, known = header
    wait = retry_after_s(value, max_s=longest, now_s=NOW.timestamp())
    if known:
        assert wait == _bounded(asked, longest)
    else:
        assert wait is None or 0.0 <= wait <= longest


@given(header=_headers())
@example(header=("1e3", None, True))
@example(header=("inf", None, True))
@example(header=(format_datetime(NOW + timedelta(seconds=5), usegmt=True), 5.0, True))
def test_github_and_the_openai_client_read_a_header_alike(header: Header) -> None:
    """GitHub's rate-limit answer and an OpenAI-compatible server's 429 with the same
    ``Retry-After``: the same wait, the rule's own."""
    value, asked, known = header
    now = NOW.timestamp()
    github = GithubException(429, {"message": "slow down"}, {"Retry-After": value})
    from_github = rate_limit_wait_s(github, now_s=now, max_s=LONGEST)
    request = httpx2.Request("POST", "http://127.0.0.1:8080/v1/chat/completions")
    response = httpx2.Response(429, headers={"retry-after": value.encode()}, request=request)
    error = openai.RateLimitError("slow down", response=response, body=None)
    from_server = server_wait_s(error, max_s=LONGEST, now_s=now)
    assert from_github == from_server == retry_after_s(value, max_s=LONGEST, now_s=now)
    if known:
        assert from_server == _bounded(asked, LONGEST)
