"""Facts the bot checks itself (bot/gate/facts.py), on small hand-written markdown issues."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.gate.facts import IssueFacts, issue_facts
from bot.gate.issue_text import prepare_issue
from tests.support.profiles import FUZZ


def facts(body: str, title: str = "Export is empty") -> IssueFacts:
    return issue_facts(title, body)


# --- template sections -----------------------------------------------------------------------

FILLED_FORM = """### What happened?

The export button writes an empty file when a filter is applied to the table.

### Steps to reproduce

1. Open a table with 50 rows
2. Filter it by name
3. Click Export

### Expected behaviour

The file holds the filtered rows.
"""


def test_a_filled_template_has_sections_and_none_empty() -> None:
    f = facts(FILLED_FORM)
    assert (f.sections, f.empty_sections, f.placeholders) == (3, 0, 0)
    assert f.steps


def test_headings_words_are_not_the_authors_prose() -> None:
    without_headings = facts(
        "The export button writes an empty file when a filter is applied to the table.\n\n"
        "1. Open a table with 50 rows\n2. Filter it by name\n3. Click Export\n\n"
        "The file holds the filtered rows.\n"
    )
    assert facts(FILLED_FORM).prose_words == without_headings.prose_words


def test_empty_sections_are_counted() -> None:
    body = "### What happened?\n\n### Steps to reproduce\n\n### Expected behaviour\n"
    f = facts(body)
    assert (f.sections, f.empty_sections, f.prose_words) == (3, 3, 0)


def test_an_empty_last_section_is_counted() -> None:
    f = facts(FILLED_FORM + "\n### Logs\n")
    assert (f.sections, f.empty_sections) == (4, 1)


def test_bold_lines_are_section_titles() -> None:
    body = (
        "**Describe the problem**\n\nSaving a draft loses the attachments.\n\n"
        "**Expected behaviour**\n\n**Screenshots**\n"
    )
    f = facts(body)
    assert (f.sections, f.empty_sections) == (3, 2)
    assert f.prose_words == 6  # the titles' words are the template's


def test_a_bold_phrase_inside_a_sentence_is_no_section() -> None:
    f = facts("The **save** button does nothing when the form has an error.")
    assert (f.sections, f.empty_sections) == (0, 0)


def test_a_section_holding_only_a_placeholder_is_empty() -> None:
    body = (
        "### What happened?\n\nA clear and concise description of what the bug is.\n\n"
        "### Version\n\n<version>\n\n### Steps\n\n1. run `tool sync`\n2. wait\n"
    )
    f = facts(body)
    assert f.sections == 3
    assert f.empty_sections == 2
    assert f.placeholders == 2
    assert f.prose_words == 2  # "run", "wait": the placeholders are not the author's words


@pytest.mark.parametrize(
    ("body", "placeholders"),
    [
        ("**Describe the bug**\nA clear and concise description of what the bug is.", 1),
        ("- OS: [e.g. iOS]\n- Browser [e.g. chrome, safari]", 2),
        ("Steps to reproduce the behavior:\n1. Go to the page\n2. See error", 2),
        ("Please describe the change you would like to see here.", 1),
        ("Version: <version>", 0),  # not alone on its line: a value, not the template's tag
        ("1.\n2.\n3.", 3),  # an empty numbered list
        ("Type here", 1),
        ("Worked before: yes/no", 1),
        ("```\n...\n```", 1),  # a code block holding only the template's ellipsis
    ],
)
def test_placeholders_left_in_the_text_are_counted(body: str, placeholders: int) -> None:
    assert facts(body).placeholders == placeholders


@pytest.mark.parametrize(
    "body",
    [
        # a section's title is the template's, never a placeholder left in it
        FILLED_FORM.replace("What happened?", "Describe the bug"),
        "**Describe the bug**\n\nThe export button writes an empty file when filtered.",
        "Describe the bug\n---\n\nThe export button writes an empty file when filtered.",
        # an elided log: the author's "..." inside code is no template left unfilled
        "It crashes at start:\n\n```\nstarting\n...\nKeyError: 'id'\n```\n",
        "    line 1\n    ...\n    line 9\n",
    ],
)
def test_titles_and_code_are_never_placeholders(body: str) -> None:
    assert facts(body).placeholders == 0


# --- code, logs and traces ---------------------------------------------------------------------


def test_code_blocks_inline_code_and_log_share() -> None:
    body = (
        "Running `tool sync --all` fails:\n\n```\nERROR sync failed\nexit status 1\n```\n\n"
        "    indented block\n\nAn empty fence does not count:\n\n```\n```\n"
    )
    f = facts(body)
    assert f.code_blocks == 2
    assert f.inline_code == 1
    code = len("ERROR sync failed\nexit status 1\n") + len("indented block\n")
    assert f.log_share == pytest.approx(code / len(body))
    assert f.error_line


def test_a_bare_log_is_mostly_code() -> None:
    f = facts("```\n" + "GET /api/items 500 12ms\n" * 20 + "```\nsame again")
    assert f.log_share > 0.9
    assert f.prose_words == 2


@pytest.mark.parametrize(
    "trace",
    [
        'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n'
        "    main()\nKeyError: 'id'",
        "TypeError: x is undefined\n    at load (/srv/app/index.js:12:5)\n"
        "    at main (index.js:3:1)",
        "thread 'main' panicked at src/main.rs:4:5:\nindex out of bounds",
        "stack backtrace:\n   0: rust_begin_unwind\n   1: core::panicking::panic_fmt",
        "panic: runtime error: index out of range\n\ngoroutine 1 [running]:\nmain.main()",
        "Exception in thread main\n\tat com.example.App.run(App.java:12)",
        "app.rb:3:in `load': boom (RuntimeError)\n\tfrom app.rb:7:in `<main>'",
    ],
    ids=["python", "javascript", "rust-panic", "rust-backtrace", "go", "java", "ruby"],
)
def test_traces_are_recognised(trace: str) -> None:
    assert facts(f"It fails like this:\n\n```\n{trace}\n```\n").trace


def test_prose_that_mentions_a_file_is_no_trace() -> None:
    f = facts("The docs at the top of app.py say line 3 is optional.")
    assert not f.trace


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("It fails with ValueError.", True),
        ("npm ERR! code ELIFECYCLE", True),
        ("The job exits with exit code 2.", True),
        ("The app crashed twice.", True),
        ("The colours are a bit too dark.", False),
    ],
)
def test_error_lines(body: str, error: bool) -> None:
    assert facts(body).error_line is error


# --- versions, steps, links, images ----------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    ["Broken on 3.4.29.", "since v2.1", "tool 1.0.0-rc.1 on Linux", "Version: latest",
     "version 4 and up", "**Version:** 2024.1"],
)  # fmt: skip
def test_versions_are_recognised(body: str) -> None:
    assert facts(body).version


@pytest.mark.parametrize(
    "body",
    [
        "I tried the new version and it broke.",  # the word, no version
        "Which version should I use?",
        "### Version\n\n### Operating system\n\nLinux",  # an empty version section
        "### Version\n\n<version>\n",  # the template's tag
        "Nothing to see here.",
    ],
)
def test_the_word_version_alone_is_no_version(body: str) -> None:
    assert not facts(body).version


@pytest.mark.parametrize(
    ("body", "steps"),
    [
        ("1. Open the app\n2. Click Export\n", True),
        ("3. Open the app\n4. Click Export\n", True),  # a list may start anywhere
        ("1. Open the app\n", False),  # one step is no sequence
        ("- Open the app\n- Click Export\n", False),  # a bullet list is not ordered
        ("1.\n2.\n", False),  # an empty list
        ("1. Open the app\n2.\n", False),
    ],
)
def test_ordered_steps(body: str, steps: bool) -> None:
    assert facts(body).steps is steps


@pytest.mark.parametrize(
    ("body", "repro"),
    [
        ("Repro: https://codesandbox.io/s/export-bug-123", True),
        ("See https://stackblitz.com/edit/vite-abc", True),
        ("https://play.rust-lang.org/?gist=abc", True),
        ("https://www.typescriptlang.org/play?#code/abc", False),  # a docs site's path, not a host
        ("https://gist.github.com/someone/0123abcd", True),
        ("https://github.com/owner/repo/blob/main/src/app.py#L10", True),
        ("https://github.com/owner/repo/issues/12", True),
        ("https://github.com/owner/repo", False),  # a repository, no file or commit
        ("See https://example.com/docs/export", False),
    ],
)
def test_links_to_a_reproduction(body: str, repro: bool) -> None:
    assert facts(body).repro_link is repro


def test_links_and_images_are_counted_and_not_prose() -> None:
    body = (
        "See [the export docs](https://example.com/export) and this:\n\n"
        '![screenshot](https://example.com/a.png)\n\n<img src="b.png" width="300">\n'
    )
    f = facts(body)
    assert (f.links, f.images) == (1, 2)
    assert f.prose_words == 3  # "See", "and", "this": the link text and the images are not


# --- words -------------------------------------------------------------------------------------


def test_words_of_the_body_and_the_title() -> None:
    f = facts("It doesn't save the user's e-mail address.", title="Saving fails since 2.0")
    assert f.prose_words == 7  # contractions and hyphenated words are one word
    assert f.title_words == 3  # numbers are not words


def test_cjk_text_counts_two_words_per_three_characters() -> None:
    """A script written without spaces is not "one word": a Chinese word averages about 1.5
    characters."""
    f = facts("设置页面在重新加载后丢失所有更改", title="导出为空")  # 16 and 4 characters
    assert f.prose_words == 11
    assert f.title_words == 3
    assert f.non_ascii_share == 1.0


def test_mixed_scripts() -> None:
    f = facts("保存ボタン does nothing")  # 5 wide characters → 3 words, plus 2
    assert f.prose_words == 5
    assert 0 < f.non_ascii_share < 1


def test_a_bare_url_is_a_link_not_words() -> None:
    """github.com links a bare URL (CommonMark does not): a link, like ``[text](url)``."""
    f = facts("See https://example.com/docs/export-options for it")
    assert (f.links, f.prose_words) == (1, 3)


def test_a_version_a_number_or_a_url_fills_a_section() -> None:
    f = facts("### Version\n\n2.3.1\n\n### Rows\n\n1000\n\n### Link\n\nhttps://example.com/a\n")
    assert (f.sections, f.empty_sections, f.prose_words) == (3, 0, 0)


def test_a_question() -> None:
    assert facts("How do I set the proxy for the export?").question
    assert facts("Some details first.\n\nHow do I set the proxy？").question
    assert facts("It crashes.", title="Why does it crash?").question
    assert not facts("It crashes.\n\nWhy? No idea. Here is the log.").question


def test_an_empty_issue() -> None:
    f = issue_facts("", "")
    assert f == IssueFacts(
        prose_words=0, title_words=0, code_blocks=0, inline_code=0, trace=False,
        error_line=False, version=False, steps=False, repro_link=False, images=0, links=0,
        sections=0, empty_sections=0, placeholders=0, log_share=0.0, non_ascii_share=0.0,
        question=False,
    )  # fmt: skip
    assert f.as_dict()["log_share"] == 0.0


def test_as_dict_is_json_ready() -> None:
    import json

    data = facts(FILLED_FORM).as_dict()
    assert json.loads(json.dumps(data)) == data
    assert set(data) == set(IssueFacts.__dataclass_fields__)


# --- property ----------------------------------------------------------------------------------

_MARKDOWN = st.lists(
    st.sampled_from(
        ["#", "### ", "**", "*", "_", "`", "```", "\n", "\n\n", " ", "1. ", "- ", "> ", "[", "]",
         "(", ")", "![", "<img ", "<!--", "-->", "|", "---", "    ", "\t", "word", "Error",
         "version", "3.4", "https://gist.github.com/a/b", "设置", "...", "[e.g. x]", "\r",
         "\u2028", "\x00", "&amp;", "<version>"]
    ),
    max_size=80,
).map("".join)  # fmt: skip


@FUZZ
@given(st.one_of(st.text(max_size=300), _MARKDOWN), st.one_of(st.text(max_size=80), _MARKDOWN))
def test_issue_facts_never_raises(body: str, title: str) -> None:
    for f in (issue_facts(title, body), _as_judged(title, body)):
        assert f.prose_words >= 0
        assert 0 <= f.empty_sections <= f.sections
        assert 0.0 <= f.log_share <= 1.0
        assert 0.0 <= f.non_ascii_share <= 1.0


def _as_judged(title: str, body: str) -> IssueFacts:
    issue = prepare_issue(title, body, max_body_chars=6000)
    return issue_facts(issue.title, issue.body)
