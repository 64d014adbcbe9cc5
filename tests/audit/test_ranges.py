"""Explicit PATH:START-END ranges: the accepted forms and ≥ 30 hostile ones, each with its rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.audit.ranges import check_range_in_file, parse_range_spec
from bot.audit.selection import Segment
from bot.errors import InvalidRange

NFD = "re\u0301sume\u0301.py"  # as a macOS client commits it: decomposed accents
CHANGED = ["src/app.py", "docs/guide.md", "weird:name.txt", "café/menu.py", "a:b.py", NFD]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("src/app.py:10-80", Segment("src/app.py", 10, 80)),
        ("  src/app.py:1-1  ", Segment("src/app.py", 1, 1)),
        ("./src/app.py:5-204", Segment("src/app.py", 5, 204)),
        ("weird:name.txt:3-4", Segment("weird:name.txt", 3, 4)),
        ("cafe\u0301/menu.py:1-2", Segment("café/menu.py", 1, 2)),
        # a colon in the name is not a drive letter; the range is after the last ':'
        ("a:b.py:1-2", Segment("a:b.py", 1, 2)),
        # typed in NFC, the PR's file is NFD: the segment keeps GitHub's spelling
        ("résumé.py:1-2", Segment(NFD, 1, 2)),
    ],
)
def test_accepted(spec: str, expected: Segment) -> None:
    assert parse_range_spec(spec, CHANGED) == expected


def test_the_segment_path_is_githubs_name_byte_for_byte() -> None:
    """The contents are read under the returned name: it must be the PR's own (NFD here)."""
    segment = parse_range_spec("r\u00e9sum\u00e9.py:3-4", CHANGED)
    assert segment.path.encode() == NFD.encode()


HOSTILE: list[tuple[str, str]] = [
    ("", "expected PATH:START-END"),
    ("src/app.py", "expected PATH:START-END"),
    ("src/app.py:", "two plain numbers"),
    ("src/app.py:10", "two plain numbers"),
    ("src/app.py:10-", "two plain numbers"),
    ("src/app.py:-10", "two plain numbers"),
    ("src/app.py:a-b", "two plain numbers"),
    ("src/app.py:+1-+5", "two plain numbers"),
    ("src/app.py:1.5-3", "two plain numbers"),
    ("src/app.py:0x1-0x5", "two plain numbers"),
    ("src/app.py:١-٥", "two plain numbers"),
    ("src/app.py:1 - 5", "two plain numbers"),
    ("src/app.py:99999999999-99999999999", "two plain numbers"),
    ("src/app.py:0-5", "at least 1"),
    ("src/app.py:80-10", "not be before START"),
    ("src/app.py:1-201", "at most 200 lines"),
    ("src/app.py:1000-1200", "at most 200 lines"),
    (":1-5", "empty"),
    ("   :1-5", "empty"),
    ("../src/app.py:1-5", "'..' segment"),
    ("src/../src/app.py:1-5", "'..' segment"),
    ("src/./app.py:1-5", "'..' segment"),
    ("src/app.py/..:1-5", "'..' segment"),
    ("/src/app.py:1-5", "absolute"),
    ("/etc/passwd:1-5", "absolute"),
    ("//server/share/app.py:1-5", "absolute"),
    ("C:/src/app.py:1-5", "not one of this pull request's changed files"),
    ("C:src/app.py:1-5", "not one of this pull request's changed files"),
    ("src\\app.py:1-5", "backslash"),
    ("..\\..\\windows\\win.ini:1-5", "backslash"),
    ("src/app.py\x00.txt:1-5", "NUL"),
    ("src/app\n.py:1-5", "NUL"),
    ("src/ap\u200bp.py:1-5", "invisible"),
    ("src/app\u202e.py:1-5", "invisible"),
    ("%2e%2e/src/app.py:1-5", "URL-encoded"),
    ("%2E%2E%2Fetc%2Fpasswd:1-5", "URL-encoded"),
    ("src%2fapp.py:1-5", "URL-encoded"),
    ("src//app.py:1-5", "empty segment"),
    ("src/:1-5", "empty segment"),
    ("src/other.py:1-5", "not one of this pull request's changed files"),
    ("SRC/APP.PY:1-5", "not one of this pull request's changed files"),
    ("src/app.py " * 500 + ":1-5", "longer than 4096"),
]


@pytest.mark.parametrize(("spec", "needle"), HOSTILE)
def test_hostile_specs_are_refused_with_the_rule(spec: str, needle: str) -> None:
    with pytest.raises(InvalidRange) as info:
        parse_range_spec(spec, CHANGED)
    assert needle in str(info.value)


def test_at_least_thirty_hostile_cases() -> None:
    assert len(HOSTILE) >= 30


def test_range_past_end_of_file() -> None:
    check_range_in_file(Segment("a.py", 1, 10), 10)
    with pytest.raises(InvalidRange, match="has 9 lines"):
        check_range_in_file(Segment("a.py", 1, 10), 9)


@given(st.text(max_size=200))
def test_never_raises_anything_else(spec: str) -> None:
    try:
        segment = parse_range_spec(spec, CHANGED)
    except InvalidRange:
        return
    assert segment.path in CHANGED
    assert 1 <= segment.start <= segment.end <= segment.start + 199
