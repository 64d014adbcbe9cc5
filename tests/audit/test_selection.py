"""Selection of audited line ranges from real-shaped GitHub patches."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.audit.selection import (
    Segment,
    added_ranges,
    merge_ranges,
    moved_line,
    removed_lines,
    select_segments,
    split_range,
)
from bot.clients.github_port import ChangedFile

MULTI_HUNK = "\n".join(
    [
        "@@ -1,4 +1,6 @@",
        " import os",
        "+import sys",
        "+import json",
        " ",
        " def main():",
        "     pass",
        "@@ -20,7 +22,8 @@ def helper(x):",
        "     a = 1",
        "-    b = 2",
        "+    b = 3",
        "+    c = 4",
        "     return a",
        "@@ -40,3 +43,3 @@ class Thing:",
        "-    old = True",
        "+    new = True",
        "     done = 1",
    ]
)

NO_NEWLINE = """@@ -1,2 +1,3 @@
 first
-second
\\ No newline at end of file
+second
+third
\\ No newline at end of file"""


def test_multi_hunk_new_side_ranges() -> None:
    assert added_ranges(MULTI_HUNK) == [(2, 3), (23, 24), (43, 43)]


def test_no_newline_marker_is_not_a_line() -> None:
    assert added_ranges(NO_NEWLINE) == [(2, 3)]


def test_crlf_patch_counts_the_same() -> None:
    assert added_ranges(MULTI_HUNK.replace("\n", "\r\n")) == [(2, 3), (23, 24), (43, 43)]


def test_new_file_patch() -> None:
    patch = "@@ -0,0 +1,3 @@\n+a\n+b\n+c"
    assert added_ranges(patch) == [(1, 3)]


def test_deletion_only_patch_has_no_ranges() -> None:
    assert added_ranges("@@ -1,3 +1,1 @@\n keep\n-x\n-y") == []


def test_merge_and_split() -> None:
    assert merge_ranges([(1, 2), (5, 6), (20, 21)], gap=3) == [(1, 6), (20, 21)]
    assert split_range(1, 450, 200) == [(1, 200), (201, 400), (401, 450)]


def _file(path: str, patch: str | None, status: str = "modified") -> ChangedFile:
    return ChangedFile(path, status, patch)


def test_skips_have_reasons() -> None:
    files = [
        _file("src/app.py", MULTI_HUNK),
        _file("old.py", None, status="removed"),
        _file("logo.png", None, status="added"),
        _file("poetry.lock", "@@ -1 +1 @@\n-a\n+b"),
        _file("web/vendor/lib.js", "@@ -0,0 +1 @@\n+x"),
        _file("static/app.min.js", "@@ -0,0 +1 @@\n+x"),
        _file("docs/only-deletions.md", "@@ -1,2 +1,1 @@\n a\n-b"),
    ]
    selection = select_segments(files)
    assert [str(s) for s in selection.segments] == [
        "src/app.py:2-3",
        "src/app.py:23-24",
        "src/app.py:43-43",
    ]
    reasons = {s.path: s.reason for s in selection.skipped}
    assert reasons["old.py"] == "removed"
    assert reasons["logo.png"].startswith("no patch")
    assert "skip glob" in reasons["poetry.lock"]
    assert "skip glob" in reasons["web/vendor/lib.js"]
    assert "skip glob" in reasons["static/app.min.js"]
    assert reasons["docs/only-deletions.md"] == "no added lines"


def test_renamed_file_uses_the_new_path() -> None:
    renamed = ChangedFile("pkg/new_name.py", "renamed", "@@ -1,1 +1,2 @@\n x\n+y", "pkg/old.py")
    assert select_segments([renamed]).segments == (Segment("pkg/new_name.py", 2, 2),)


def test_cap_keeps_the_largest_and_reports_the_rest() -> None:
    patch = "@@ -0,0 +1,500 @@\n" + "\n".join("+l" for _ in range(500))
    small = "@@ -0,0 +1,2 @@\n+a\n+b"
    selection = select_segments([_file("big.py", patch), _file("small.py", small)], max_segments=2)
    assert [str(s) for s in selection.segments] == ["big.py:1-200", "big.py:201-400"]
    capped = [s for s in selection.skipped if s.segment is not None]
    assert {str(s.segment) for s in capped} == {"big.py:401-500", "small.py:1-2"}
    assert all("cap of 2" in s.reason for s in capped)


@st.composite
def patches(draw: st.DrawFn) -> str:
    lines = ["@@ -1,1 +1,1 @@"]
    for kind in draw(st.lists(st.sampled_from(" +-\\"), max_size=300)):
        lines.append("\\ No newline at end of file" if kind == "\\" else f"{kind}text")
    return "\n".join(lines)


@given(patches(), st.integers(0, 10), st.integers(1, 200))
def test_segments_are_bounded_and_cover_only_added_lines(patch: str, gap: int, cap: int) -> None:
    added = {n for s, e in added_ranges(patch) for n in range(s, e + 1)}
    selection = select_segments([_file("f.py", patch)], merge_gap=gap, max_segments=cap)
    for segment in selection.segments:
        assert 1 <= segment.lines <= 200
        assert added & set(range(segment.start, segment.end + 1))
    assert len(selection.segments) <= cap


@given(st.text(max_size=400))
def test_any_patch_text_is_audited_or_skipped_with_a_reason(patch: str) -> None:
    """Never raises; the file is never dropped silently, and each segment holds added lines."""
    selection = select_segments([_file("f.py", patch)])
    added = {n for s, e in added_ranges(patch) for n in range(s, e + 1)}
    assert selection.segments or selection.skipped
    assert all(s.reason for s in selection.skipped)
    for segment in selection.segments:
        assert added & set(range(segment.start, segment.end + 1))


@pytest.mark.parametrize("status", ["added", "modified", "renamed", "copied", "changed"])
def test_statuses_with_patches_are_audited(status: str) -> None:
    assert select_segments([_file("f.py", "@@ -0,0 +1 @@\n+x", status)]).segments


def test_a_hunk_claiming_line_zero_is_ignored() -> None:
    """Found by fuzzing: a malformed "+0" hunk with added lines once gave a segment at line 0."""
    assert added_ranges("@@ -1 +0 @@\n+x\n@@ -5,1 +5,2 @@\n a\n+b") == [(6, 6)]


def test_removed_lines_are_counted_on_the_old_side() -> None:
    # hunk 2 starts at old line 20: 20 is context, 21 replaced; hunk 3 replaces old line 40
    assert removed_lines(MULTI_HUNK) == frozenset({21, 40})
    assert removed_lines(MULTI_HUNK.replace("\n", "\r\n")) == frozenset({21, 40})


def test_a_line_changed_past_the_no_newline_marker_is_removed() -> None:
    assert removed_lines(NO_NEWLINE) == frozenset({2})


def test_an_added_file_removes_nothing() -> None:
    assert removed_lines("@@ -0,0 +1,2 @@\n+a\n+b") == frozenset()


@given(patches())
def test_removed_lines_are_the_minus_lines_counted_from_the_hunk_start(patch: str) -> None:
    kinds = [line[:1] for line in patch.split("\n")[1:] if not line.startswith("\\")]
    old_side = [kind for kind in kinds if kind in (" ", "-")]
    expected = {1 + i for i, kind in enumerate(old_side) if kind == "-"}
    assert removed_lines(patch) == expected


def test_a_line_moves_with_the_lines_added_and_removed_above_it() -> None:
    assert moved_line(MULTI_HUNK, 1) == 1  # context before the first addition
    assert moved_line(MULTI_HUNK, 2) == 4  # two lines added above it
    assert moved_line(MULTI_HUNK, 10) == 12  # between hunks
    assert moved_line(MULTI_HUNK, 20) == 22
    assert moved_line(MULTI_HUNK, 21) is None  # replaced
    assert moved_line(MULTI_HUNK, 22) == 25
    assert moved_line(MULTI_HUNK, 40) is None
    assert moved_line(MULTI_HUNK, 41) == 44
    assert moved_line(MULTI_HUNK, 90) == 93  # past the last hunk


def _git_patch(old: list[str], new: list[str]) -> str:
    """A patch as GitHub shows one: unified, three lines of context, no file header."""
    lines = list(difflib.unified_diff(old, new, lineterm="", n=3))
    return "\n".join(lines[2:])


@given(
    st.lists(st.sampled_from("abcde"), max_size=40),
    st.lists(st.tuples(st.integers(0, 40), st.sampled_from(["drop", "add", "change"]))),
)
def test_a_kept_line_is_found_where_the_new_side_has_it(
    old: list[str], edits: list[tuple[int, str]]
) -> None:
    tagged = [f"{x}{i}" for i, x in enumerate(old)]  # each old line unique
    new = list(tagged)
    for where, how in edits:
        at = min(where, len(new))
        if how == "add":
            new.insert(at, "added")
        elif new and at < len(new):
            if how == "drop":
                del new[at]
            else:
                new[at] = "changed"
    patch = _git_patch(tagged, new)
    for number, text in enumerate(tagged, start=1):
        found = moved_line(patch, number) if patch else number
        if text in new:
            assert found == new.index(text) + 1
        else:
            assert found is None
            assert number in removed_lines(patch)
