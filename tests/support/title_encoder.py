"""A stand-in for the duplicate ranking's title model: deterministic, no model files."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from bot.duplicates.terms import terms


class WordHash:
    """Each title word a fixed random direction; a title their normalised sum."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def encode(self, titles: Sequence[str]) -> NDArray[np.float32]:
        self.calls.append(len(titles))
        out = np.zeros((len(titles), 384), np.float32)
        for row, title in enumerate(titles):
            for word in terms(title) or ["<empty>"]:
                seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
                out[row] += np.random.default_rng(seed).standard_normal(384).astype(np.float32)
            out[row] /= np.linalg.norm(out[row])
        return out
