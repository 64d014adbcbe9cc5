"""The feature blocks of a type model, applied with numpy: TF-IDF as scikit-learn computes it.

A block maps an issue's ``(title, body)`` to a vector; the model concatenates its blocks, each
multiplied by its weight. ``words`` blocks count word n-grams, ``chars`` blocks character
n-grams inside word boundaries (scikit-learn's ``char_wb``). The transform here is
scikit-learn's ``TfidfVectorizer.transform`` written out (lowercase, its token pattern, its
n-gram order, ``1 + ln(tf)``, the stored idf, l2): ``tests/types/test_features.py`` holds it to
scikit-learn as the oracle. numpy is imported when a block is applied, so the rest of the bot
runs without it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "TOKEN_PATTERN",
    "Analyzer",
    "Field",
    "char_wb_ngrams",
    "field_text",
    "tfidf",
    "word_ngrams",
]

TOKEN_PATTERN = r"(?u)\b\w\w+\b"  # noqa: S105 (a pattern, no secret)
"""scikit-learn's default word token: two or more word characters."""

_TOKEN = re.compile(TOKEN_PATTERN)
_WHITE_SPACES = re.compile(r"\s\s+")

Analyzer = Literal["words", "chars"]
Field = Literal["text", "title"]
"""What a block reads: ``text`` is the title, a line feed and the body; ``title`` the title."""


def field_text(title: str, body: str, field: Field) -> str:
    """The text a block of ``field`` reads from an issue."""
    return title if field == "title" else f"{title}\n{body}"


def word_ngrams(text: str, ngram_range: tuple[int, int]) -> list[str]:
    """The lowercased word n-grams of ``text``, tokens joined by one space."""
    tokens = _TOKEN.findall(text.lower())
    low, high = ngram_range
    grams: list[str] = list(tokens) if low == 1 else []
    for n in range(max(low, 2), high + 1):
        grams += [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return grams


def _padded_grams(word: str, low: int, high: int) -> list[str]:
    padded = f" {word} "
    size = len(padded)
    grams: list[str] = []
    for n in range(low, high + 1):
        if n >= size:
            grams.append(padded)
            break
        grams += [padded[i : i + n] for i in range(size - n + 1)]
    return grams


def _words(text: str) -> list[str]:
    return _WHITE_SPACES.sub(" ", text.lower()).split()


def char_wb_ngrams(text: str, ngram_range: tuple[int, int]) -> list[str]:
    """The lowercased character n-grams of each word of ``text``, the word padded by a space
    each side; a word no longer than an n, padded, gives itself once and no longer n-gram."""
    low, high = ngram_range
    return [gram for word in _words(text) for gram in _padded_grams(word, low, high)]


def _known_counts(
    text: str, analyzer: Analyzer, ngram_range: tuple[int, int], vocabulary: dict[str, int]
) -> dict[int, int]:
    """Each known n-gram's column and count; each distinct word's character n-grams made once."""
    counts: dict[int, int] = {}
    if analyzer == "words":
        for gram, times in Counter(word_ngrams(text, ngram_range)).items():
            if (column := vocabulary.get(gram)) is not None:
                counts[column] = times
        return counts
    low, high = ngram_range
    for word, times in Counter(_words(text)).items():
        for gram in _padded_grams(word, low, high):
            if (column := vocabulary.get(gram)) is not None:
                counts[column] = counts.get(column, 0) + times
    return counts


def tfidf(
    texts: Sequence[str],
    *,
    analyzer: Analyzer,
    ngram_range: tuple[int, int],
    vocabulary: dict[str, int],
    idf: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """The l2-normalised sublinear TF-IDF rows of ``texts`` (one row each, ``len(idf)`` wide);
    a text with no known n-gram gives a row of zeros."""
    import numpy as np

    rows = np.zeros((len(texts), len(idf)), dtype=np.float64)
    for row, text in enumerate(texts):
        counts = _known_counts(text, analyzer, ngram_range, vocabulary)
        if not counts:
            continue
        columns = np.fromiter(counts, dtype=np.intp, count=len(counts))
        tf = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        values = (1.0 + np.log(tf)) * idf[columns]
        norm = float(np.sqrt(np.dot(values, values)))
        rows[row, columns] = values / norm if norm > 0 else values
    return rows
