"""Fitting: the vocabulary cut as scikit-learn cuts it, thresholds by nested cross-validation,
the refusals, the same file for the same rows."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import TfidfVectorizer

from bot.errors import ConfigError
from bot.repo_file import TypeName
from bot.shares import wilson
from bot.types.features import field_text
from bot.types.fit import BLOCKS, check_rows, cv_predictions, fit_type_model
from bot.types.rows import TypeRow
from bot.types.scores import (
    THRESHOLD_Z,
    Prediction,
    at_thresholds,
    choose_threshold,
    choose_thresholds,
)
from tests.support.type_rows import made_up_rows


@pytest.mark.parametrize("limit", [3, 17, 60, None])
def test_a_cut_vocabulary_is_the_one_scikit_learn_keeps(limit: int | None) -> None:
    # many n-grams tie on frequency in made-up rows: the cut must break ties as it does
    rows = made_up_rows(10)
    specs = tuple(replace(spec, max_features=limit) for spec in BLOCKS)
    model = fit_type_model(rows, min_precision=0.9, specs=specs).model
    for spec, block in zip(specs, model.blocks, strict=True):
        oracle = TfidfVectorizer(
            analyzer="word" if spec.kind == "words" else "char_wb",
            ngram_range=spec.ngram_range,
            sublinear_tf=True,
            min_df=spec.min_df,
            max_features=spec.max_features,
        ).fit([field_text(r.title, r.body, spec.field) for r in rows])
        assert block.vocabulary == list(oracle.get_feature_names_out())
        np.testing.assert_allclose(block.idf.array(), oracle.idf_, rtol=1e-6)


def _p(expected: TypeName, got: TypeName, confidence: float) -> Prediction:
    return Prediction(expected, got, confidence)


def _lower(right: int, kept: int) -> float:
    return wilson(right, kept, THRESHOLD_Z)[0]


def test_the_threshold_is_the_lowest_confidence_whose_lower_limit_reaches_the_bound() -> None:
    # bug guesses, most confident first: 12 right from 0.99 down, a wrong one at 0.65, then
    # 8 right, then wrong ones
    right_high = [_p("bug", "bug", 0.99 - i * 0.02) for i in range(12)]  # 0.99 … 0.77
    guesses = [*right_high, _p("question", "bug", 0.65)]
    guesses += [_p("bug", "bug", 0.6 - i * 0.01) for i in range(8)]  # 0.60 … 0.53
    guesses += [_p("feature", "bug", 0.5), _p("feature", "bug", 0.45)]
    guesses += [_p("feature", "feature", 0.9)]
    # 12 of 12 has a lower limit of about 0.88: not 0.9, though the point estimate is 1.0
    assert _lower(12, 12) < 0.9 < 1.0
    assert choose_threshold(guesses, "bug", 0.9) is None
    # 0.85: ≥ 0.77 (12 of 12) clears it; ≥ 0.53 (20 of 21, lower ~0.86) clears it too
    assert _lower(20, 21) >= 0.85
    assert choose_threshold(guesses, "bug", 0.85) == pytest.approx(0.53)
    # 0.8: the lowest, 20 of 23 at 0.45, has a lower limit under it; 20 of 22 too
    assert _lower(20, 22) < 0.8
    assert choose_threshold(guesses, "bug", 0.8) == pytest.approx(0.53)
    # a type with fewer than 5 guesses gets none
    assert choose_threshold(guesses, "feature", 0.1) is None
    assert choose_threshold(guesses, "question", 0.1) is None


def test_a_threshold_takes_every_guess_of_its_confidence() -> None:
    # thirty right and one wrong all at 0.8: no threshold can keep the right ones alone
    guesses = [_p("bug", "bug", 0.8)] * 30 + [_p("feature", "bug", 0.8)]
    assert _lower(30, 31) < 0.9
    assert choose_threshold(guesses, "bug", 0.9) is None
    assert choose_threshold(guesses, "bug", 0.8) == 0.8


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["bug", "feature"]), st.floats(0.34, 1.0, allow_nan=False)),
        max_size=40,
    ),
    st.floats(0.3, 1.0),
)
def test_the_chosen_threshold_reaches_the_bound_and_is_the_lowest(
    raw: list[tuple[TypeName, float]], bound: float
) -> None:
    guesses = [_p(expected, "bug", c) for expected, c in raw]
    chosen = choose_threshold(guesses, "bug", bound)

    def reaches(t: float) -> bool:
        kept = [g for g in guesses if g.confidence >= t]
        right = sum(1 for g in kept if g.expected == "bug")
        return len(kept) >= 5 and _lower(right, len(kept)) >= bound

    candidates = sorted({g.confidence for g in guesses if reaches(g.confidence)})
    assert chosen == (candidates[0] if candidates else None)


def test_figures_at_thresholds_count_each_item_by_its_own_thresholds() -> None:
    guesses = [_p("bug", "bug", 0.9), _p("feature", "bug", 0.7), _p("feature", "feature", 0.6)]
    low = {"bug": 0.5, "feature": None, "question": None}
    high: dict[TypeName, float | None] = {"bug": 0.8, "feature": 0.5, "question": None}
    at = at_thresholds(guesses, [low, high, high], ["bug", "feature", "question"])
    # the first clears 0.5; the second is held to 0.8 and does not; the third clears 0.5
    assert at.labelled == {"bug": 1, "feature": 1, "question": 0}
    assert at.precision == {"bug": 1.0, "feature": 1.0, "question": None}
    assert at.coverage == {"bug": 1.0, "feature": 0.5, "question": 0.0}
    assert at.overall_coverage == pytest.approx(2 / 3)


def test_nested_thresholds_are_chosen_without_the_rows_they_are_measured_on() -> None:
    rows = made_up_rows(14)
    result = fit_type_model(rows, min_precision=0.9)
    figures = result.model.figures
    # the figures at the thresholds are the outer folds' (each row held to thresholds chosen
    # on inner folds without it)
    assert figures.coverage == result.at_thresholds.overall_coverage
    for kind, scores in figures.per_type.items():
        assert scores.threshold_coverage == result.at_thresholds.coverage[kind]
    # the written thresholds are chosen on the outer folds' guesses of all rows
    assert result.model.thresholds == choose_thresholds(
        result.predictions, ["bug", "feature", "question"], 0.9
    )
    assert len(result.predictions) == len(rows)
    # and those guesses are the plain 5-fold cross-validation's
    assert result.predictions == cv_predictions(rows, BLOCKS)


def test_the_same_rows_give_the_same_file_byte_for_byte() -> None:
    rows = made_up_rows(11, seed=3)
    first = fit_type_model(rows, min_precision=0.8, repo="acme/widgets").model.to_json()
    second = fit_type_model(rows, min_precision=0.8, repo="acme/widgets").model.to_json()
    assert first == second
    other = fit_type_model(made_up_rows(11, seed=4), min_precision=0.8).model.to_json()
    assert other != first


def _rows(bug: int, feature: int, question: int) -> list[TypeRow]:
    rows = made_up_rows(max(bug, feature, question, 1))
    wanted = {"bug": bug, "feature": feature, "question": question}
    kept: list[TypeRow] = []
    for row in rows:
        if sum(1 for r in kept if r.type == row.type) < wanted[row.type]:
            kept.append(row)
    return kept


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ((9, 10, 10), "29 type row(s): a model needs at least 30"),
        ((0, 0, 0), "0 type row(s)"),
        ((20, 20, 9), "rows per type: question 9; each of bug, feature and question needs"),
        ((40, 0, 5), "rows per type: feature 0, question 5;"),
    ],
)
def test_too_few_rows_are_refused(counts: tuple[int, int, int], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_rows(_rows(*counts))
    check_rows(_rows(10, 10, 10))


def test_rows_that_share_no_ngram_are_refused() -> None:
    rows = [
        TypeRow(id=str(n), title=f"t{n}x", body="", type=("bug", "feature", "question")[n % 3])
        for n in range(30)
    ]
    with pytest.raises(ConfigError, match="share too few words of their text"):
        fit_type_model(rows, min_precision=0.9)


def test_each_outer_fold_takes_thresholds_chosen_on_its_training_part_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import bot.types.fit as fit

    calls: list[int] = []
    real = fit.choose_thresholds

    def recording(
        predictions: list[Prediction], types: list[TypeName], bound: float
    ) -> dict[TypeName, float | None]:
        calls.append(len(predictions))
        return real(predictions, types, bound)

    monkeypatch.setattr(fit, "choose_thresholds", recording)
    rows = made_up_rows(14)  # 42 rows: outer folds of 8 or 9, training parts of 34 or 33
    fit_type_model(rows, min_precision=0.9)
    # five outer folds, each choosing on its training part's inner out-of-fold guesses only,
    # then the written thresholds on all 42 outer guesses
    assert len(calls) == 6
    assert sorted(calls[:5]) == [33, 33, 34, 34, 34]
    assert calls[5] == 42
