"""The statement "the top candidate is a duplicate": the threshold a measured record earns.

A record is a list of ``(score, right)``: a top candidate's score and whether the issue turned
out to be its duplicate. The threshold is the lowest score whose statements' precision clears
the bound at its one-sided lower limit (:data:`bot.types.scores.THRESHOLD_Z`), with at least
``min_support`` statements at or above it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.shares import wilson
from bot.types.scores import MIN_THRESHOLD_SUPPORT, THRESHOLD_Z

__all__ = ["Earned", "choose_threshold"]


@dataclass(frozen=True)
class Earned:
    """A threshold and the statements at or above it: ``right`` of ``made``."""

    threshold: float
    right: int
    made: int


def choose_threshold(
    record: Sequence[tuple[float, bool]], bound: float, *, min_support: int = MIN_THRESHOLD_SUPPORT
) -> Earned | None:
    """The lowest threshold ``record`` earns for ``bound``; ``None`` when none does."""
    ordered = sorted(record, key=lambda item: -item[0])
    chosen = None
    right = 0
    for made, (score, correct) in enumerate(ordered, start=1):
        right += correct
        last_of_score = made == len(ordered) or ordered[made][0] < score
        if last_of_score and made >= min_support and wilson(right, made, THRESHOLD_Z)[0] >= bound:
            chosen = Earned(score, right, made)
    return chosen
