"""The numpy transform and head against scikit-learn, the oracle."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from bot.types.features import char_wb_ngrams, field_text, word_ngrams
from bot.types.fit import BLOCKS, fit_type_model
from bot.types.model_file import TypeModel
from tests.support.type_rows import made_up_rows

REAL_LOOKING = [
    ("Crash on start", ""),
    ("", ""),
    ("Übersetzung fehlt — ÄÖÜ straße", "Die Datei `i18n/de.json` fehlt.\n\n- [ ] geprüft"),
    ("How do I use `useEffect`?", "```js\nuseEffect(() => {\n  return () => {};\n}, []);\n```"),
    ("Add dark mode", "## Why\n\nIt would be nice.\r\n\r\n| a | b |\n|---|---|\n| 1 | 2 |"),
    ("日本語のタイトル", "本文\u2028段落\u00a0NBSP\ttab  two  spaces"),
    ("TypeError: x is undefined", "    at foo (bar.js:10:5)\n    at baz (qux.js:1:1)\n" * 20),
    ("emoji 🎉🐛 bug", "İstanbul ß ﬁ Σίσυφος"),
]

_texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200
) | st.sampled_from([t for pair in REAL_LOOKING for t in pair])


@settings(max_examples=300, deadline=None)
@given(_texts)
def test_the_ngrams_are_scikit_learns(text: str) -> None:
    words = TfidfVectorizer(analyzer="word", ngram_range=(1, 2)).build_analyzer()
    chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5)).build_analyzer()
    assert word_ngrams(text, (1, 2)) == words(text)
    assert char_wb_ngrams(text, (2, 5)) == chars(text)


def _oracle(model: TypeModel, rows: list[Any]) -> tuple[list[TfidfVectorizer], LogisticRegression]:
    """scikit-learn's own analyzers fitted on the rows as the model's blocks were, with the
    model file's float32 idf and weights put in."""
    vectorizers = []
    for spec, block in zip(BLOCKS, model.blocks, strict=True):
        vectorizer = TfidfVectorizer(
            analyzer="word" if spec.kind == "words" else "char_wb",
            ngram_range=spec.ngram_range,
            sublinear_tf=True,
            min_df=spec.min_df,
            max_features=spec.max_features,
        )
        vectorizer.fit([field_text(r.title, r.body, spec.field) for r in rows])
        assert list(vectorizer.get_feature_names_out()) == block.vocabulary
        np.testing.assert_allclose(block.idf.array(), vectorizer.idf_, rtol=1e-6)
        vectorizer.idf_ = block.idf.array()
        vectorizers.append(vectorizer)
    head = LogisticRegression()
    head.classes_ = np.array(model.types)
    head.coef_ = model.weights.array()
    head.intercept_ = model.intercepts.array()
    return vectorizers, head


@pytest.fixture(scope="module")
def fitted() -> tuple[TypeModel, list[TfidfVectorizer], LogisticRegression]:
    rows = made_up_rows(12)
    model = fit_type_model(rows, min_precision=0.9).model
    vectorizers, head = _oracle(model, rows)
    return model, vectorizers, head


def _sklearn_proba(
    vectorizers: list[TfidfVectorizer], head: LogisticRegression, issues: list[tuple[str, str]]
) -> Any:
    from scipy.sparse import hstack

    blocks = [
        spec.weight * v.transform([field_text(t, b, spec.field) for t, b in issues])
        for spec, v in zip(BLOCKS, vectorizers, strict=True)
    ]
    return head.predict_proba(hstack(blocks, format="csr"))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_texts, _texts), min_size=1, max_size=4))
def test_the_probabilities_are_scikit_learns(
    fitted: tuple[TypeModel, list[TfidfVectorizer], LogisticRegression],
    issues: list[tuple[str, str]],
) -> None:
    model, vectorizers, head = fitted
    np.testing.assert_allclose(
        model.probabilities(issues), _sklearn_proba(vectorizers, head, issues), rtol=0, atol=1e-6
    )


def test_the_probabilities_of_real_looking_issues_are_scikit_learns(
    fitted: tuple[TypeModel, list[TfidfVectorizer], LogisticRegression],
) -> None:
    model, vectorizers, head = fitted
    issues = [*REAL_LOOKING, ("crash error traceback", "the build fails with a segfault")]
    got = model.probabilities(issues)
    np.testing.assert_allclose(got, _sklearn_proba(vectorizers, head, issues), rtol=0, atol=1e-6)
    np.testing.assert_allclose(got.sum(axis=1), 1.0)
    assert model.guesses([issues[-1]])[0].type == "bug"  # the made-up bug words win


def test_the_file_keeps_the_fitted_weights_to_float32(
    fitted: tuple[TypeModel, list[TfidfVectorizer], LogisticRegression],
) -> None:
    # the head scikit-learn fits on its own analyzers' matrix: the model file's, rounded
    from scipy.sparse import hstack

    model, vectorizers, _ = fitted
    rows = made_up_rows(12)
    matrix = hstack(
        [
            spec.weight * v.transform([field_text(r.title, r.body, spec.field) for r in rows])
            for spec, v in zip(BLOCKS, vectorizers, strict=True)
        ],
        format="csr",
    )
    head = LogisticRegression(C=10.0, max_iter=5000, random_state=0).fit(
        matrix, [r.type for r in rows]
    )
    assert list(head.classes_) == model.types
    np.testing.assert_allclose(model.weights.array(), head.coef_, rtol=1e-4, atol=1e-5)
