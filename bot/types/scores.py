"""A type model's figures from its guesses: per type precision, recall and F1, macro-F1, and
the confidence thresholds at which the guesses reach a precision bound, with their coverage."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.repo_file import TypeName
from bot.shares import wilson

__all__ = [
    "MIN_THRESHOLD_SUPPORT",
    "THRESHOLD_Z",
    "AtThresholds",
    "Prediction",
    "Scores",
    "at_thresholds",
    "choose_threshold",
    "choose_thresholds",
    "macro_f1",
    "type_scores",
]

MIN_THRESHOLD_SUPPORT = 5
"""The fewest guesses of a type at or above a threshold that may choose it."""

THRESHOLD_Z = 1.2815515655446004
"""The normal quantile of 0.9: a threshold's precision must clear the bound at the one-sided
90% Wilson lower limit, not as a point estimate (docs/types.md says why)."""


@dataclass(frozen=True)
class Prediction:
    """One issue's true type and the model's top guess with its probability."""

    expected: TypeName
    got: TypeName
    confidence: float


@dataclass(frozen=True)
class Scores:
    """One type's precision (``None`` with no guess of it), recall (``None`` with no row of
    it) and F1 (0 when either is undefined or both are 0)."""

    precision: float | None
    recall: float | None
    f1: float


def type_scores(
    predictions: Sequence[Prediction], types: Sequence[TypeName]
) -> dict[TypeName, Scores]:
    """Each type's :class:`Scores` over the top guesses."""
    scores = {}
    for kind in types:
        hits = sum(1 for p in predictions if p.got == kind and p.expected == kind)
        guessed = sum(1 for p in predictions if p.got == kind)
        actual = sum(1 for p in predictions if p.expected == kind)
        precision = hits / guessed if guessed else None
        recall = hits / actual if actual else None
        f1 = 2 * hits / (guessed + actual) if hits else 0.0
        scores[kind] = Scores(precision, recall, f1)
    return scores


def macro_f1(scores: dict[TypeName, Scores]) -> float:
    """The F1 scores' mean over the types."""
    return sum(s.f1 for s in scores.values()) / len(scores) if scores else 0.0


def choose_threshold(
    predictions: Sequence[Prediction],
    kind: TypeName,
    bound: float,
    *,
    min_support: int = MIN_THRESHOLD_SUPPORT,
) -> float | None:
    """The lowest confidence ``t`` at which the guesses of ``kind`` with confidence ≥ ``t``
    are at least ``min_support`` and the lower limit of their precision (:data:`THRESHOLD_Z`)
    is ≥ ``bound``; ``None`` when none does."""
    guesses = sorted(
        ((p.confidence, p.expected == kind) for p in predictions if p.got == kind), reverse=True
    )
    chosen = None
    hits = 0
    for taken, (confidence, hit) in enumerate(guesses, start=1):
        hits += hit
        if taken < len(guesses) and guesses[taken][0] == confidence:
            continue  # a threshold takes every guess of its confidence
        if taken >= min_support and wilson(hits, taken, THRESHOLD_Z)[0] >= bound:
            chosen = confidence
    return chosen


def choose_thresholds(
    predictions: Sequence[Prediction], types: Sequence[TypeName], bound: float
) -> dict[TypeName, float | None]:
    """:func:`choose_threshold` for each type."""
    return {kind: choose_threshold(predictions, kind, bound) for kind in types}


@dataclass(frozen=True)
class AtThresholds:
    """What applying thresholds gives: per type the precision of its applied labels (``None``
    with none) and the share of its rows labelled as it; the share of all rows labelled."""

    precision: dict[TypeName, float | None]
    coverage: dict[TypeName, float]
    labelled: dict[TypeName, int]
    overall_coverage: float


def _cleared(p: Prediction, thresholds: dict[TypeName, float | None]) -> bool:
    threshold = thresholds.get(p.got)
    return threshold is not None and p.confidence >= threshold


def at_thresholds(
    predictions: Sequence[Prediction],
    thresholds: Sequence[dict[TypeName, float | None]],
    types: Sequence[TypeName],
) -> AtThresholds:
    """The figures of ``predictions`` when the i-th is labelled by ``thresholds[i]`` (each
    item the thresholds chosen without it)."""
    cleared = [_cleared(p, t) for p, t in zip(predictions, thresholds, strict=True)]
    precision: dict[TypeName, float | None] = {}
    coverage: dict[TypeName, float] = {}
    labelled: dict[TypeName, int] = {}
    for kind in types:
        applied = [p for p, c in zip(predictions, cleared, strict=True) if c and p.got == kind]
        right = sum(1 for p in applied if p.expected == kind)
        actual = sum(1 for p in predictions if p.expected == kind)
        labelled[kind] = len(applied)
        precision[kind] = right / len(applied) if applied else None
        coverage[kind] = right / actual if actual else 0.0
    overall = sum(cleared) / len(predictions) if predictions else 0.0
    return AtThresholds(precision, coverage, labelled, overall)
