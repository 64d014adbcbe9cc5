"""What a type classifier says about one issue, and the protocol the gate applies it through.

The classifier itself (its model file, how it is learned) lives elsewhere; the gate and the
job's context see only :class:`TypeClassifier`, built from a model file's bytes by a
:data:`TypeModelLoader`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bot.repo_file import TypeName

__all__ = ["MAX_TYPE_MODEL_BYTES", "TypeClassifier", "TypeGuess", "TypeModelLoader"]

MAX_TYPE_MODEL_BYTES = 2**20
"""A type model file's size bound (1 MiB), checked before it is read whole."""


@dataclass(frozen=True)
class TypeGuess:
    """The classifier's top type for one issue.

    Attributes:
        type: the most probable type.
        confidence: that type's probability, 0..1.
        threshold: the model's threshold for that type; ``None``: the type is never applied.
    """

    type: TypeName
    confidence: float
    threshold: float | None

    @property
    def clears(self) -> bool:
        """Whether the guess is confident enough to apply its type's label."""
        return self.threshold is not None and self.confidence >= self.threshold


class TypeClassifier(Protocol):
    """A type model, loaded: guesses an issue's type from its text."""

    def guess(self, title: str, body: str) -> TypeGuess:
        """The top type of the issue with this title and body (plain text, as filed)."""
        ...


TypeModelLoader = Callable[[bytes, str], TypeClassifier]
"""``(data, source) -> TypeClassifier``: a model file's bytes, loaded; ``source`` names the
file in errors. Raises :exc:`bot.errors.ConfigError` (or a subclass) for a broken file."""
