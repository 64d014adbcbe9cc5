"""The type model file: JSON data (never code), its shape, loading it and applying it.

A model file comes from a repository, so it is data only: the blocks' vocabularies and idf,
the head's weights and intercepts as base64 of little-endian float32 with their shapes, the
thresholds, and the figures it was measured with. Loading refuses anything else with a
:exc:`TypeModelError` naming the file and the problem, never its content.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bot.errors import TypeModelError
from bot.regular_file import FileTooLarge, field_names, read_regular, write_atomic
from bot.repo_file import TYPE_NAMES, TypeName
from bot.type_guess import MAX_TYPE_MODEL_BYTES, TypeGuess
from bot.types.features import Analyzer, field_text, tfidf
from bot.types.features import Field as TextField

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "FORMAT",
    "VERSION",
    "Array",
    "TfidfBlock",
    "TypeFigures",
    "TypeModel",
    "load_type_model",
    "type_model_from_text",
    "write_type_model",
]

FORMAT: Literal["triage-bot-types"] = "triage-bot-types"
VERSION: Literal[1] = 1
MAX_BLOCKS = 8
"""The most blocks a model may have: each reads the whole text (``types fit`` writes 3)."""
MAX_BLOCK_WEIGHT = 100.0
MAX_HEAD_VALUE = 1e4
"""The largest weight or intercept a model may hold (a fitted head's are far smaller)."""
GUESS_BATCH = 256

Share = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Array(_Strict):
    """A float32 array: its shape and its values as base64 of little-endian float32."""

    shape: list[Annotated[int, Field(ge=0)]] = Field(min_length=1, max_length=2)
    float32_le: str

    @model_validator(mode="after")
    def _whole_and_finite(self) -> Self:
        """Values that fill the shape exactly, none NaN or infinite."""
        values = self.values()
        if values.size != math.prod(self.shape):
            raise ValueError(f"holds {values.size} values, its shape {self.shape} needs another")
        import numpy as np

        if not bool(np.all(np.isfinite(values))):
            raise ValueError("holds a NaN or an infinite value")
        return self

    def values(self) -> npt.NDArray[np.float32]:
        """The values, flat; :exc:`ValueError` for base64 that is not whole float32."""
        import numpy as np

        try:
            data = base64.b64decode(self.float32_le, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("is not base64") from None
        if len(data) % 4:
            raise ValueError("is not a whole number of float32 values")
        return np.frombuffer(data, dtype="<f4")

    def array(self) -> npt.NDArray[np.float64]:
        """The values in their shape, as float64."""
        return self.values().astype("float64").reshape(self.shape)

    @classmethod
    def of(cls, values: npt.ArrayLike) -> Array:
        """The array of ``values``, stored as float32."""
        import numpy as np

        data = np.ascontiguousarray(np.asarray(values, dtype="<f4"))
        return cls(shape=list(data.shape), float32_le=base64.b64encode(data.tobytes()).decode())


class TfidfBlock(_Strict):
    """A TF-IDF block: sublinear tf, the stored idf, l2 (:mod:`bot.types.features`)."""

    kind: Analyzer
    field: TextField
    ngram_range: tuple[Annotated[int, Field(ge=1, le=6)], Annotated[int, Field(ge=1, le=6)]]
    """Words up to 3-grams, characters up to 6-grams: each length costs a pass over the text."""
    weight: Annotated[float, Field(gt=0.0, le=MAX_BLOCK_WEIGHT, allow_inf_nan=False)]
    """What the block's vector is multiplied by before the blocks are concatenated."""
    vocabulary: list[str]
    """The block's n-grams in column order, each once."""
    idf: Array

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        """An n-gram range low to high, one idf ≥ 1 per n-gram (a smoothed idf), no n-gram
        twice."""
        if self.ngram_range[0] > self.ngram_range[1]:
            raise ValueError("ngram_range: its low end is above its high end")
        if self.kind == "words" and self.ngram_range[1] > 3:
            raise ValueError("ngram_range: word n-grams go up to 3")
        if self.idf.shape != [len(self.vocabulary)]:
            raise ValueError(f"idf: shape {self.idf.shape}, the vocabulary needs [{self.width}]")
        if len(set(self.vocabulary)) != len(self.vocabulary):
            raise ValueError("vocabulary: an n-gram is listed twice")
        if self.width and float(self.idf.array().min()) < 1.0:
            raise ValueError("idf: a value below 1, which no smoothed idf is")
        return self

    @property
    def width(self) -> int:
        """How many columns the block gives."""
        return len(self.vocabulary)

    @cached_property
    def columns(self) -> dict[str, int]:
        """Each n-gram's column."""
        return {gram: column for column, gram in enumerate(self.vocabulary)}

    @cached_property
    def idf_values(self) -> npt.NDArray[np.float64]:
        """The idf, decoded once."""
        return self.idf.array()


class TypeScores(_Strict):
    """One type's cross-validated figures."""

    precision: Share | None
    recall: Share | None
    f1: Share
    rows: Annotated[int, Field(ge=0)]
    """Rows of this type the model was fitted on."""
    threshold_precision: Share | None = None
    """Precision of the guesses of this type at its threshold, on the outer folds."""
    threshold_coverage: Share = 0.0
    """Share of this type's rows guessed as it at its threshold, on the outer folds."""


class TypeFigures(_Strict):
    """How the model was measured: nested 5-fold cross-validation on its rows."""

    folds: Annotated[int, Field(ge=2)]
    rows: Annotated[int, Field(ge=0)]
    macro_f1: Share
    min_precision: Share
    """The precision bound each threshold was chosen for."""
    coverage: Share
    """Share of all rows that clear their top type's threshold, on the outer folds."""
    per_type: dict[TypeName, TypeScores]


class TypeModel(_Strict):
    """A type model file's content."""

    format: Literal["triage-bot-types"]
    version: Literal[1]
    types: list[TypeName] = Field(min_length=3, max_length=3)
    """The classes, in the order of the weights' rows: bug, feature and question, once each."""
    blocks: list[TfidfBlock] = Field(min_length=1, max_length=MAX_BLOCKS)
    weights: Array
    """The head's weights: one row per type, one column per block column, blocks in order."""
    intercepts: Array
    thresholds: dict[TypeName, Share | None]
    """Per type the lowest confidence at which its label is applied; ``None``: never."""
    figures: TypeFigures
    repo: str | None = None
    """``OWNER/NAME`` of the rows it was fitted on, when they were one repository's."""

    @model_validator(mode="after")
    def _shapes(self) -> Self:
        """The types once each, the weights and intercepts shaped by the types and blocks,
        one threshold per type."""
        if len(set(self.types)) != len(self.types):
            raise ValueError("types: a type is listed twice")
        width = sum(block.width for block in self.blocks)
        if self.weights.shape != [len(self.types), width]:
            raise ValueError(
                f"weights: shape {self.weights.shape}, the types and blocks need "
                f"[{len(self.types)}, {width}]"
            )
        if self.intercepts.shape != [len(self.types)]:
            raise ValueError(
                f"intercepts: shape {self.intercepts.shape}, [{len(self.types)}] needed"
            )
        if set(self.thresholds) != set(self.types):
            raise ValueError("thresholds: one per type of types, no other")
        if set(self.figures.per_type) != set(self.types):
            raise ValueError("figures.per_type: one per type of types, no other")
        for name, array in (("weights", self.weights), ("intercepts", self.intercepts)):
            if array.shape[-1] and float(abs(array.array()).max()) > MAX_HEAD_VALUE:
                raise ValueError(f"{name}: a value beyond ±{MAX_HEAD_VALUE:g}")
        return self

    @cached_property
    def _head(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        return self.weights.array(), self.intercepts.array()

    def features(self, issues: Sequence[tuple[str, str]]) -> npt.NDArray[np.float64]:
        """The concatenated, weighted block vectors of ``(title, body)`` pairs."""
        import numpy as np

        parts = []
        for block in self.blocks:
            texts = [field_text(title, body, block.field) for title, body in issues]
            parts.append(
                block.weight
                * tfidf(
                    texts,
                    analyzer=block.kind,
                    ngram_range=block.ngram_range,
                    vocabulary=block.columns,
                    idf=block.idf_values,
                )
            )
        return np.hstack(parts)

    def probabilities(self, issues: Sequence[tuple[str, str]]) -> npt.NDArray[np.float64]:
        """Each issue's probability per type (rows sum to 1), types in :attr:`types` order."""
        import numpy as np

        logits = self.features(issues) @ self._head[0].T + self._head[1]
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        result: npt.NDArray[np.float64] = exp / exp.sum(axis=1, keepdims=True)
        return result

    def guesses(self, issues: Sequence[tuple[str, str]]) -> list[TypeGuess]:
        """The top type of each ``(title, body)``, its probability and its type's threshold.

        Featurises at most :data:`GUESS_BATCH` issues at a time (dense rows)."""
        guesses = []
        for start in range(0, len(issues), GUESS_BATCH):
            guesses += self._guesses(issues[start : start + GUESS_BATCH])
        return guesses

    def _guesses(self, issues: Sequence[tuple[str, str]]) -> list[TypeGuess]:
        guesses = []
        for row in self.probabilities(issues):
            top = int(row.argmax())
            kind = self.types[top]
            guesses.append(TypeGuess(kind, float(row[top]), self.thresholds[kind]))
        return guesses

    def guess(self, title: str, body: str) -> TypeGuess:
        """One issue's :meth:`guesses` (the gate's :class:`bot.type_guess.TypeClassifier`)."""
        return self.guesses([(title, body)])[0]

    def to_json(self) -> str:
        """The file's text: the same model gives the same bytes."""
        return self.model_dump_json(indent=1) + "\n"


_FIELDS = field_names(TypeModel) | set(TYPE_NAMES)


def type_model_from_text(data: bytes, *, source: str) -> TypeModel:
    """The model in ``data``; :exc:`TypeModelError` naming ``source`` when it is none."""
    try:
        raw: Any = json.loads(data)
    except (ValueError, RecursionError):
        raise TypeModelError(f"type model {source}: not JSON") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise TypeModelError(f"type model {source}: not a {FORMAT} file (its format differs)")
    if raw.get("version") != VERSION:
        raise TypeModelError(
            f"type model {source}: another version of the format; this bot reads version "
            f"{VERSION}: fit the model again with this bot's triage-bot types fit"
        )
    try:
        return TypeModel.model_validate(raw)
    except ValidationError as exc:
        problems = _problems(exc)
        raise TypeModelError(f"type model {source}: not a valid model: {problems}") from None


def _problems(exc: ValidationError) -> str:
    # Every message here is pydantic's or this module's validators', none quotes the file.
    parts = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False)[:5]:
        where = ".".join(
            str(part) if isinstance(part, int) or part in _FIELDS else "(a key)"
            for part in error["loc"]
        )
        parts.append(f"{where or '(top level)'}: {error['msg']}")
    return "; ".join(parts)


def load_type_model(path: Path) -> TypeModel:
    """The type model in the file ``path``.

    Raises:
        TypeModelError: unreadable, not a regular file, over :data:`MAX_TYPE_MODEL_BYTES` (refused
            before it is read whole), not JSON, another format or version, or not a valid model.
    """
    try:
        data = read_regular(path, limit=MAX_TYPE_MODEL_BYTES)
    except FileTooLarge:
        raise TypeModelError(
            f"type model {path}: larger than {MAX_TYPE_MODEL_BYTES:,} bytes, the most a model "
            "may be"
        ) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise TypeModelError(f"type model {path}: cannot be read ({reason})") from None
    return type_model_from_text(data, source=str(path))


def write_type_model(path: Path, model: TypeModel) -> int:
    """Write ``model`` to ``path`` atomically; return its size in bytes.

    Raises:
        TypeModelError: the file would be over :data:`MAX_TYPE_MODEL_BYTES`, or cannot be written.
    """
    data = model.to_json().encode("utf-8")
    if len(data) > MAX_TYPE_MODEL_BYTES:
        raise TypeModelError(
            f"type model {path}: {len(data):,} bytes, over the {MAX_TYPE_MODEL_BYTES:,} a "
            "model may be; fit it again with triage-bot types fit"
        )
    try:
        write_atomic(path, data)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise TypeModelError(f"type model {path}: cannot be written ({reason})") from None
    return len(data)
