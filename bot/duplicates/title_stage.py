"""The ranking's second stage: how alike two issues' titles are in a sentence-embedding model.

Each indexed issue's title vector is kept in the store (``title_vectors``, keyed by
:data:`VECTOR_MODEL`); one missing there is computed when a ranking needs it, and kept when the
caller may write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from bot.errors import ModelError, StoreError
from bot.history.protocol import HistoryStore, IndexedIssue

__all__ = ["VECTOR_MODEL", "Encoder", "TitleStage"]

VECTOR_MODEL = "all-minilm-l6-v2/32"
"""The model and its token limit: a stored vector is used only by the same encoder."""

Vector = NDArray[np.float32]


class Encoder(Protocol):
    """Embeds titles: one L2-normalised float32 row per title."""

    def encode(self, titles: Sequence[str]) -> Vector: ...


UNIT_TOLERANCE = 1e-3
"""How far a stored vector's length may be from 1: any other is not the encoder's."""


def _decoded(blob: bytes, size: int) -> Vector | None:
    """The stored vector, or ``None`` when it is not a finite unit vector of ``size``."""
    if len(blob) != size * 4:
        return None
    vector = np.frombuffer(blob, dtype="<f4").astype(np.float32)
    if not bool(np.isfinite(vector).all()):
        return None
    length = float(np.sqrt(np.sum(vector.astype(np.float64) ** 2)))
    return vector if abs(length - 1.0) <= UNIT_TOLERANCE else None


class TitleStage:
    """Title vectors of one repository's indexed issues, read once each and cached.

    ``keep``: vectors computed here are written to the store (a store fault there only loses
    the write).
    """

    def __init__(self, store: HistoryStore, repo: str, encoder: Encoder, *, keep: bool) -> None:
        self.store = store
        self.repo = repo
        self.encoder = encoder
        self.keep = keep
        self._vectors: dict[int, Vector] = {}
        self.computed = 0
        """How many candidate titles this stage has encoded (not found in the store)."""

    def query(self, title: str) -> Vector:
        """The vector of a title being ranked.

        Raises:
            ModelError: the encoder failed on it.
        """
        return np.asarray(self._encode([title])[0], dtype=np.float32)

    def _encode(self, titles: Sequence[str]) -> Vector:
        try:
            return self.encoder.encode(titles)
        except (ValueError, ArithmeticError, MemoryError, RuntimeError) as exc:
            raise ModelError(f"the title model failed: {type(exc).__name__}: {exc}") from exc

    def similarities(self, query: Vector, issues: Sequence[IndexedIssue]) -> dict[int, float]:
        """Each issue's title cosine with ``query``.

        Raises:
            StoreError: the store cannot be read.
            ModelError: the encoder failed.
        """
        unknown = [i for i in issues if i.number not in self._vectors]
        if unknown:
            stored = self.store.title_vectors(self.repo, VECTOR_MODEL, [i.number for i in unknown])
            missing = []
            for issue in unknown:
                vector = _decoded(stored.get(issue.number, b""), query.shape[0])
                if vector is None:
                    missing.append(issue)
                else:
                    self._vectors[issue.number] = vector
            if missing:
                self._compute(missing)
        return {i.number: float(self._vectors[i.number] @ query) for i in issues}

    def _compute(self, issues: Sequence[IndexedIssue]) -> None:
        vectors = self._encode([i.title for i in issues])
        self.computed += len(issues)
        rows = []
        for issue, vector in zip(issues, vectors, strict=True):
            self._vectors[issue.number] = vector
            rows.append((issue.number, issue.title, vector.astype("<f4").tobytes()))
        if self.keep:
            try:
                self.store.keep_title_vectors(self.repo, VECTOR_MODEL, rows)
            except StoreError:
                self.keep = False

    def fill(self, batch: int = 256, limit: int | None = None) -> int:
        """Compute and keep the vectors of indexed issues without one, newest first, each issue
        once; returns how many were computed. Stops after ``limit`` when given.

        One the store does not keep (its title edited meanwhile) is left to the next fill.

        Raises:
            StoreError: the store cannot be read or written.
            ModelError: the encoder failed.
        """
        done, below = 0, None
        while limit is None or done < limit:
            size = batch if limit is None else min(batch, limit - done)
            rows = self.store.issues_without_vector(self.repo, VECTOR_MODEL, size, below)
            if not rows:
                break
            below = rows[-1][0]
            vectors = self._encode([title for _, title in rows])
            self.store.keep_title_vectors(
                self.repo,
                VECTOR_MODEL,
                [
                    (number, title, vector.astype("<f4").tobytes())
                    for (number, title), vector in zip(rows, vectors, strict=True)
                ],
            )
            done += len(rows)
        return done
