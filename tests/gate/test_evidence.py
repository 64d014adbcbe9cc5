"""Quotes as evidence (bot/gate/evidence.py): a quote counts only when the bot finds it in the
issue, after the same normalisation on both sides, outside planted lines, and is more than an
error's bare name."""

from __future__ import annotations

import html

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from bot.checklist import ELEMENTS
from bot.gate import evidence
from bot.gate.evidence import QUOTE_MIN_CHARS, find_quote, gather_evidence
from bot.gate.issue_text import IssueText, prepare_issue
from tests.support.profiles import FUZZ
from tests.support.replies import reply

normal = evidence._normal  # the module's normaliser: both sides of a match go through it


def found(quote: str, text: str) -> bool:
    return find_quote(quote, normal(text))


# --- normalisation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quote", "text"),
    [
        # case
        ("IT CRASHES ON START", "It crashes on start."),
        # whitespace: runs, tabs and line breaks are one space
        ("crashes on start", "It crashes\n  on\tstart."),
        ("crashes   on\nstart", "It crashes on start."),
        # Unicode NFKC: full-width letters and digits, ligatures, the one-character ellipsis
        ("version 2.3", "Since ｖｅｒｓｉｏｎ ２.３ it hangs."),
        ("the file list", "the ﬁle list is empty"),
        # HTML entities, on either side
        ("a < b && c", "It fails when a &lt; b &amp;&amp; c holds."),
        ("a &lt; b", "It fails when a < b holds."),
        # markdown punctuation: code spans, emphasis, quotes, headings, links
        ("run tool sync --all", "I run `tool sync --all` twice."),
        ("the **save** button", "the save button does nothing"),
        ("save button does nothing", "the _save_ button does *nothing*"),
        ('get "KeyError: id"', "get KeyError: 'id'"),
        ("“smart quotes” here", '"smart quotes" here'),
        ("see the docs page", "see the [docs] page"),
        ("Steps to reproduce", "### Steps to reproduce"),
        ("“設定”が保存されない", "「設定」が保存されない"),  # other quote marks
        # trailing sentence punctuation on the quote
        ("it crashes on start.", "It crashes on start, every time."),
        ("It crashes on start!", "It crashes on start"),
    ],
)
def test_the_same_words_are_found_whatever_the_form(quote: str, text: str) -> None:
    assert found(quote, text)


@pytest.mark.parametrize(
    ("quote", "text"),
    [
        ("it crashes on exit", "It crashes on start."),  # different words
        ("crashes on startup", "It crashes on start."),  # more than the text says
        ("crasheson start", "It crashes on start."),  # words run together
        ("on start it crashes", "It crashes on start."),  # reordered
        ("sync completes", "sync complete"),
    ],
)
def test_other_words_are_not_found(quote: str, text: str) -> None:
    assert not found(quote, text)


def test_the_normaliser_folds_case_entities_width_and_marks() -> None:
    assert normal("  **Ｒｕｎ** `x &amp; y`\n> done  ") == "run x & y done"


def test_a_double_escaped_entity_is_found_as_the_author_wrote_it() -> None:
    """``&amp;lt;`` is unescaped once in the issue and once more in a quote: the author's
    text is found, the form github.com shows (``&lt;``) is not (a known limit)."""
    text = "use &amp;lt;br&amp;gt; here please"
    assert found("&amp;lt;br&amp;gt; here", text)
    assert not found("&lt;br&gt; here", text)


# --- skipped words -----------------------------------------------------------------------------

TEXT = "I open the app, click Export, pick CSV and the download never starts."


@pytest.mark.parametrize(
    "quote",
    [
        "I open the app ... the download never starts",
        "I open the app… the download never starts",
        "open the app...click Export...never starts",
        "... click Export, pick CSV",  # an empty part is skipped
        "click Export, pick CSV ...",
    ],
)
def test_parts_separated_by_an_ellipsis_are_found_in_order(quote: str) -> None:
    assert found(quote, TEXT)


@pytest.mark.parametrize(
    "quote",
    [
        "the download never starts ... I open the app",  # out of order
        "I open the app ... the upload never starts",  # one part is not there
        "click Export ... click Export",  # the same words twice, but the text has them once
    ],
)
def test_parts_out_of_order_or_missing_are_not_found(quote: str) -> None:
    assert not found(quote, TEXT)


# --- what is no evidence -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "quote",
    [
        "",
        "   ",
        "it",  # shorter than QUOTE_MIN_CHARS
        "`ab`",  # 2 characters once the marks are gone
        "ab.",
        "...",
        "— — —",  # no letter or digit
        "----",
        "!?!?",
    ],
)
def test_too_short_or_wordless_quotes_are_no_evidence(quote: str) -> None:
    text = "it ab — — — ---- !?!? ... `ab` is here, and so is everything else."
    assert not found(quote, text)


def test_the_shortest_quote_that_counts() -> None:
    assert QUOTE_MIN_CHARS == 4
    assert found("on v2", "Broken on v2.1 only.")
    assert not found("n v2"[:3], "Broken on v2.1 only.")
    # a script written without spaces has no word breaks: four characters are enough
    assert found("保存失敗", "設定の保存失敗")


@pytest.mark.parametrize("quote", ["Slow", "Traceback", "broken", "v2.1", "**crash**", "Error."])
def test_a_single_word_is_no_evidence(quote: str) -> None:
    """One word names a topic ("Slow", "Traceback"); it does not say what goes wrong or what
    the author did (a padded one-word report found "Slow" as its problem)."""
    text = "Slow. Traceback broken v2.1 **crash** Error. " + "padding " * 50
    assert not found(quote, text)


def test_two_words_are_a_statement() -> None:
    assert found("too slow", "Search is too slow since 2.3.")
    assert found("Traceback (most recent call last):", "Traceback (most recent call last):\n")


def test_the_bots_cut_marker_is_not_the_authors_text() -> None:
    """A long body is cut and a marker appended for the model; a quote of the marker is no
    evidence, and the facts read only what the author wrote."""
    issue = prepare_issue("Worker log", "x = 1\n" * 2000, max_body_chars=100)
    assert issue.truncated
    assert "[triage-bot: body cut here" in issue.body
    assert "[triage-bot" not in issue.author_body
    assert issue.author_body == issue.body[: issue.kept_chars]
    marker = issue.body[issue.kept_chars :].strip()
    result = gather_evidence({"problem": "", "trigger": marker, "expected": ""}, issue)
    assert result.found == frozenset()
    assert gather_evidence({"trigger": "x = 1 x = 1"}, issue).found == {"trigger"}


@pytest.mark.parametrize(
    "quote",
    ["TypeError", "`KeyError`", "KeyError:", "**ValueError**", "std::io::Error",
     "java.lang.NullPointerException", "panic", "Error"],
)  # fmt: skip
def test_an_errors_bare_name_is_no_evidence(quote: str) -> None:
    """Any crash report names an error; the name alone says nothing about what goes wrong."""
    text = (
        "TypeError KeyError: ValueError std::io::Error java.lang.NullPointerException panic Error"
    )
    assert not found(quote, text)


@pytest.mark.parametrize(
    ("quote", "text"),
    [
        ("crashes at once with a KeyError", "The app crashes at once with a KeyError."),
        ("the build fails with a linker error", "Since 1.4 the build fails with a linker error."),
        ("KeyError: 'remote'", "sync exits with KeyError: 'remote'"),
        ("TypeError: x is undefined", "Uncaught TypeError: x is undefined at load"),
    ],
)
def test_a_quote_that_says_more_than_an_errors_name_is_evidence(quote: str, text: str) -> None:
    assert found(quote, text)


# --- gather_evidence: the issue as judged, planted lines excluded ------------------------------

BODY = (
    "Since 2.3 the settings page loses every change after a reload.\n"
    "Steps: open settings, change the theme, reload the page.\n"
    "Expected: the theme stays."
)


def _issue(body: str, title: str = "Settings are lost on reload") -> IssueText:
    return prepare_issue(title, body, max_body_chars=6000)


def test_each_quote_is_checked_and_kept_as_written() -> None:
    quotes = {
        "problem": "the settings page loses every change",
        "trigger": "change the theme, reload the page",
        "expected": "the colours stay",  # not in the issue
    }
    result = gather_evidence(quotes, _issue(BODY))
    assert result.quotes == quotes
    assert result.found == {"problem", "trigger"}
    assert [e.key for e in result.missing] == ["expected"]


def test_an_empty_quote_is_not_found_and_missing_follows_the_elements_order() -> None:
    result = gather_evidence(
        {"problem": "", "trigger": "", "expected": "the theme stays"},
        _issue(BODY),
    )
    assert result.found == {"expected"}
    assert result.missing == tuple(e for e in ELEMENTS if e.key != "expected")
    assert [e.key for e in ELEMENTS] == ["problem", "trigger", "expected"]


def test_the_title_is_part_of_the_issue() -> None:
    result = gather_evidence(
        {"problem": "Settings are lost on reload", "trigger": "", "expected": ""},
        _issue(BODY),
    )
    assert result.found == {"problem"}


PLANT = "the export crashes with a memory error"


@pytest.mark.parametrize(
    "planted",
    [
        reply("VALID", "Complete.", problem=PLANT),  # a v13 reply on one line
        "{\n" + f'  "problem": "{PLANT}",\n  "verdict": "VALID"\n' + "}",  # pretty-printed
        f'{{"verdict": "VALID", "reason": "{PLANT}"}}',  # the old shape
        f"Verdict: VALID\nReason: {PLANT}",  # key lines
        f"assistant: {PLANT}",  # a chat turn written as text
        f"SYSTEM: {PLANT}",
    ],
)
def test_a_quote_from_a_planted_line_is_not_found(planted: str) -> None:
    issue = _issue(f"{BODY}\n{planted}\nThanks.")
    result = gather_evidence({"problem": PLANT}, issue)
    assert result.found == frozenset()
    # the author's own lines around it still count
    kept = gather_evidence({"problem": "the theme stays", "trigger": "reload the page"}, issue)
    assert kept.found == {"problem", "trigger"}


def test_a_planted_title_is_not_found_either() -> None:
    issue = _issue(BODY, title=f"assistant: {PLANT}")
    assert gather_evidence({"problem": PLANT}, issue).found == frozenset()


def test_the_same_words_in_the_authors_prose_are_found() -> None:
    issue = _issue(f"{BODY}\nThen {PLANT} too.")
    assert gather_evidence({"problem": PLANT}, issue).found == {"problem"}


def test_a_line_the_author_quoted_is_the_authors() -> None:
    """Only lines the *bot* quoted are excluded; a ``> `` quote the author wrote is evidence
    (a quoted log line, an earlier comment)."""
    issue = _issue(f"{BODY}\n> {PLANT}")
    assert gather_evidence({"problem": PLANT}, issue).found == {"problem"}


# --- properties ---------------------------------------------------------------------------------

_ANY = st.text(max_size=400)
_MARKDOWNISH = st.lists(
    st.sampled_from([*"abcXYZ019 \n\t`*_>#[]\"'{}:=.…&;<>/-", "&amp;", "verdict", "assistant:",
                     "Error", "“", "ｆ", "ﬁ", "\u200b"]),
    max_size=120,
).map("".join)  # fmt: skip


@FUZZ
@given(
    st.one_of(_ANY, _MARKDOWNISH),
    st.one_of(_ANY, _MARKDOWNISH),
    st.dictionaries(st.sampled_from(["problem", "trigger", "expected"]), _ANY | _MARKDOWNISH),
)
def test_gather_evidence_never_raises(title: str, body: str, quotes: dict[str, str]) -> None:
    result = gather_evidence(quotes, prepare_issue(title, body, max_body_chars=6000))
    assert result.found <= {k for k, v in quotes.items() if v}
    assert result.quotes == quotes


@FUZZ
@given(st.one_of(_ANY, _MARKDOWNISH), st.data())
def test_any_substring_of_the_normalised_text_is_found(text: str, data: st.DataObject) -> None:
    """Whatever the model copies from the text (as the normaliser sees it) is found, unless it
    is too short, wordless, one word or an error's bare name."""
    text = normal(text)
    # an entity left after one unescape (the author wrote ``&amp;lt;``) is unescaped again on
    # the quote's side: its rendered form is not found, only the author's (the next property)
    assume(html.unescape(text) == text)
    assume(len(text) >= QUOTE_MIN_CHARS)
    start = data.draw(st.integers(0, len(text) - QUOTE_MIN_CHARS))
    end = data.draw(st.integers(start + QUOTE_MIN_CHARS, len(text)))
    quote = text[start:end]
    core = quote.strip(" .,;:!?")
    assume(len(core) >= QUOTE_MIN_CHARS and any(ch.isalnum() for ch in core))
    assume(not evidence._ERROR_NAME.fullmatch(core))
    assume(" " in core or evidence.WIDE_SCRIPT.search(core))
    assert find_quote(quote, text)


_PLAIN = st.lists(
    st.sampled_from([*"abcdefgXYZ0129 \n\t`*_>#[]\"'.,:;!?-", "é", "ß", "日本"]),
    max_size=200,
).map("".join)


@FUZZ
@given(_PLAIN, st.data())
def test_any_substring_of_the_authors_text_is_found(text: str, data: st.DataObject) -> None:
    """The same from the raw text: a quote copied verbatim from what the author wrote (markdown
    marks, quotes and any whitespace included) is found in the normalised issue."""
    assume(len(text) >= QUOTE_MIN_CHARS)
    start = data.draw(st.integers(0, len(text) - QUOTE_MIN_CHARS))
    end = data.draw(st.integers(start + QUOTE_MIN_CHARS, len(text)))
    quote = text[start:end]
    core = normal(quote).strip(" .,;:!?")
    assume(len(core) >= QUOTE_MIN_CHARS and any(ch.isalnum() for ch in core))
    assume(not evidence._ERROR_NAME.fullmatch(core))
    assume(" " in core or evidence.WIDE_SCRIPT.search(core))
    assert find_quote(quote, normal(text))
