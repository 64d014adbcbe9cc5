"""Index terms: split where both stores' full-text engines split."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.duplicates.terms import issue_terms, terms


def test_a_mark_continues_a_term_and_never_starts_one() -> None:
    assert terms("e\u0301cole S´ \u0301\u0301x \u0915\u094d\u0937") == [
        "\u00e9cole",
        "s",
        "x",
        "\u0915\u094d\u0937",
    ]


def test_other_numbers_split_terms_and_decimal_and_letter_digits_do_not() -> None:
    assert terms("a\u09f4b 1\u0b72 x\u00bdy") == ["a", "b", "1", "x1", "2y"]
    assert terms("abc123 \u0661\u0662\u0663 \u2167") == ["abc123", "\u0661\u0662\u0663", "viii"]


def test_issue_terms_join_the_title_and_body_terms_by_single_spaces() -> None:
    found = issue_terms("Crash: on   START", "a\x00b NEAR(x)")
    assert (found.title, found.body) == ("crash on start", "a b near x")
    assert found.all() == {"crash", "on", "start", "a", "b", "near", "x"}


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_every_term_starts_with_a_letter_or_digit_and_holds_no_other_number(text: str) -> None:
    for term in terms(text):
        assert unicodedata.category(term[0])[0] in "LN"
        categories = {unicodedata.category(c) for c in term}
        assert all(c[0] in "LM" or c in ("Nd", "Nl") for c in categories)
