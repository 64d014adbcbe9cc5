"""Fitting a type model with scikit-learn (the ``types-fit`` extra): blocks, head, thresholds.

The figures come from nested cross-validation: in each of 5 stratified outer folds, the model
fitted on the other folds guesses the held-out rows; each type's threshold for those rows is
chosen on 5 inner folds of the outer training part, so the precision and coverage reported at
the thresholds are never measured on the rows that chose them. The thresholds written into the
model are chosen the same way on the outer folds' guesses, and the model is fitted on all rows.
Seeds are fixed: the same rows give the same file byte for byte.

Each row's n-grams are computed once, by :mod:`bot.types.features` (the analyzer the model is
applied with), and counted once per block; each fold keeps the columns scikit-learn's
``TfidfVectorizer`` would keep fitted on its rows and weighs them with its
``TfidfTransformer``, so 31 fits count no text again (``tests/types/`` holds the vocabulary
and idf to ``TfidfVectorizer``'s).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.errors import ConfigError
from bot.repo_file import TYPE_NAMES, TypeName
from bot.types.features import Analyzer, char_wb_ngrams, field_text, word_ngrams
from bot.types.features import Field as TextField
from bot.types.model_file import (
    FORMAT,
    VERSION,
    Array,
    TfidfBlock,
    TypeFigures,
    TypeModel,
    TypeScores,
)
from bot.types.rows import TypeRow
from bot.types.scores import (
    AtThresholds,
    Prediction,
    at_thresholds,
    choose_thresholds,
    macro_f1,
    type_scores,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "BLOCKS",
    "FOLDS",
    "MIN_ROWS",
    "MIN_ROWS_PER_TYPE",
    "BlockSpec",
    "FitResult",
    "check_rows",
    "cv_predictions",
    "fit_type_model",
]

FOLDS = 5
MIN_ROWS = 30
MIN_ROWS_PER_TYPE = 10
C = 10.0
"""The logistic regression's inverse regularisation, measured on the development set."""
SEED = 0
_TYPE: dict[str, TypeName] = {kind: kind for kind in TYPE_NAMES}


@dataclass(frozen=True)
class BlockSpec:
    """A TF-IDF block to fit: what it reads, its n-grams, its weight and its vocabulary cut."""

    kind: Analyzer
    field: TextField
    ngram_range: tuple[int, int]
    weight: float
    max_features: int | None
    """The most frequent n-grams kept; ``None``: every n-gram in two rows or more."""
    min_df: int = 2


BLOCKS = (
    BlockSpec("words", "text", (1, 2), 1.0, 8000),
    BlockSpec("words", "title", (1, 2), 1.0, 2000),
    BlockSpec("chars", "text", (2, 5), 1.0, 8000),
)
"""The blocks a model is fitted with; the cuts keep a model of 300 issues well under 1 MiB."""


@dataclass(frozen=True)
class FitResult:
    """The fitted model, and each row's outer-fold guess and the thresholds applied to it."""

    model: TypeModel
    predictions: list[Prediction]
    at_thresholds: AtThresholds
    final_fit_s: float
    """The final fit's wall time (counting its n-grams again), in seconds."""


def check_rows(rows: Sequence[TypeRow]) -> None:
    """Refuse rows a model cannot be fitted and measured on.

    Raises:
        ConfigError: fewer than :data:`MIN_ROWS` rows, or a type with fewer than
            :data:`MIN_ROWS_PER_TYPE`.
    """
    counts = Counter(row.type for row in rows)
    if len(rows) < MIN_ROWS:
        raise ConfigError(
            f"{len(rows)} type row(s): a model needs at least {MIN_ROWS} to be fitted and "
            "measured; collect more with triage-bot dataset --types"
        )
    short = [f"{kind} {counts[kind]}" for kind in TYPE_NAMES if counts[kind] < MIN_ROWS_PER_TYPE]
    if short:
        raise ConfigError(
            f"rows per type: {', '.join(short)}; each of bug, feature and question needs at "
            f"least {MIN_ROWS_PER_TYPE}. If the repository names a type with other labels, list "
            "them under types.labels in .github/triage-bot.yml and run dataset --types again"
        )


def _grams(spec: BlockSpec, rows: Sequence[TypeRow]) -> list[list[str]]:
    split = word_ngrams if spec.kind == "words" else char_wb_ngrams
    return [split(field_text(r.title, r.body, spec.field), spec.ngram_range) for r in rows]


def _identity(grams: list[str]) -> list[str]:
    return grams


class _Counts:
    """A block's n-gram counts of every row, over all their n-grams in sorted order (as
    ``TfidfVectorizer`` counts before it prunes): counted once, cut per fold."""

    def __init__(self, spec: BlockSpec, rows: Sequence[TypeRow]) -> None:
        import numpy as np
        from sklearn.feature_extraction.text import CountVectorizer

        counter = CountVectorizer(analyzer=_identity, lowercase=False, dtype=np.float64)
        self.spec = spec
        self.matrix: Any = counter.fit_transform(_grams(spec, rows)).tocsr()
        self.terms: list[str] = [str(t) for t in counter.get_feature_names_out()]

    def columns(self, index: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
        """The columns ``TfidfVectorizer`` keeps fitted on rows ``index``: the n-grams in at
        least ``min_df`` of them, cut to the ``max_features`` most frequent as it cuts."""
        import numpy as np

        part = self.matrix[index]
        frequency = np.bincount(part.indices, minlength=part.shape[1])
        keep = frequency >= self.spec.min_df
        limit = self.spec.max_features
        if limit is not None and keep.sum() > limit:
            totals = np.asarray(part.sum(axis=0)).ravel()
            chosen = (-totals[keep]).argsort()[:limit]  # its sort, on its array: its ties
            cut = np.zeros(len(keep), dtype=bool)
            cut[np.where(keep)[0][chosen]] = True
            keep = cut
        columns: npt.NDArray[np.intp] = np.where(keep)[0]
        if not columns.size:
            raise ConfigError(
                f"the rows share too few {self.spec.kind} of their {self.spec.field} to learn "
                "from (none is in two rows)"
            )
        return columns


class _Pipeline:
    """The blocks' columns and idf, and the head, fitted on some rows."""

    def __init__(self, counts: Sequence[_Counts]) -> None:
        from sklearn.linear_model import LogisticRegression

        self.counts = counts
        self.columns: list[Any] = []
        self.transformers: list[Any] = []
        self.head = LogisticRegression(C=C, max_iter=5000, random_state=SEED)

    def _matrix(self, index: npt.NDArray[np.intp]) -> Any:
        from scipy.sparse import hstack

        parts = [
            block.spec.weight * transformer.transform(block.matrix[index][:, columns])
            for block, columns, transformer in zip(
                self.counts, self.columns, self.transformers, strict=True
            )
        ]
        return hstack(parts, format="csr")

    def fit(self, index: npt.NDArray[np.intp], labels: Sequence[TypeName]) -> None:
        from sklearn.feature_extraction.text import TfidfTransformer

        self.columns = [block.columns(index) for block in self.counts]
        self.transformers = [
            TfidfTransformer(norm="l2", sublinear_tf=True).fit(block.matrix[index][:, columns])
            for block, columns in zip(self.counts, self.columns, strict=True)
        ]
        self.head.fit(self._matrix(index), [labels[i] for i in index])

    def predict(self, index: npt.NDArray[np.intp]) -> list[tuple[TypeName, float]]:
        probabilities = self.head.predict_proba(self._matrix(index))
        classes = list(self.head.classes_)
        return [(_TYPE[str(classes[int(row.argmax())])], float(row.max())) for row in probabilities]

    def blocks(self) -> list[TfidfBlock]:
        """The fitted blocks as the model file keeps them."""
        return [
            TfidfBlock(
                kind=block.spec.kind,
                field=block.spec.field,
                ngram_range=block.spec.ngram_range,
                weight=block.spec.weight,
                vocabulary=[block.terms[c] for c in columns],
                idf=Array.of(transformer.idf_),
            )
            for block, columns, transformer in zip(
                self.counts, self.columns, self.transformers, strict=True
            )
        ]


def _out_of_fold(
    counts: Sequence[_Counts],
    index: npt.NDArray[np.intp],
    labels: Sequence[TypeName],
    on_fit: Callable[[], None],
) -> list[tuple[npt.NDArray[np.intp], list[Prediction]]]:
    """Per stratified fold of the rows ``index``: its rows, and their guesses by a model
    fitted on the others."""
    import numpy as np
    from sklearn.model_selection import StratifiedKFold

    folds = StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=SEED)
    out = []
    y = np.array([labels[i] for i in index])
    for train, test in folds.split(np.zeros(len(index)), y):
        pipeline = _Pipeline(counts)
        pipeline.fit(index[train], labels)
        on_fit()
        guesses = pipeline.predict(index[test])
        predictions = [
            Prediction(labels[i], got, confidence)
            for i, (got, confidence) in zip(index[test], guesses, strict=True)
        ]
        out.append((index[test], predictions))
    return out


def _one_blas_thread() -> AbstractContextManager[object]:
    """One BLAS thread while it is entered. threadpoolctl limits the libraries loaded when it
    is called: scipy's and scikit-learn's are imported first."""
    import importlib

    from threadpoolctl import threadpool_limits

    for module in ("scipy.sparse", "sklearn.linear_model", "sklearn.model_selection"):
        importlib.import_module(module)
    limit: AbstractContextManager[object] = threadpool_limits(limits=1, user_api="blas")
    return limit


def cv_predictions(rows: Sequence[TypeRow], specs: Sequence[BlockSpec]) -> list[Prediction]:
    """Each row's guess, in the rows' order, by a model fitted on the other folds (5-fold,
    stratified, no thresholds): how candidate blocks compare."""
    import numpy as np

    labels = [row.type for row in rows]
    with _one_blas_thread():
        counts = [_Counts(spec, rows) for spec in specs]
        folds = _out_of_fold(counts, np.arange(len(rows)), labels, lambda: None)
    by_row = {int(i): p for test, fold in folds for i, p in zip(test, fold, strict=True)}
    return [by_row[i] for i in range(len(rows))]


def fit_type_model(
    rows: Sequence[TypeRow],
    *,
    min_precision: float,
    repo: str | None = None,
    specs: Sequence[BlockSpec] = BLOCKS,
    on_fit: Callable[[], None] = lambda: None,
) -> FitResult:
    """Fit a model on ``rows`` and measure it by nested cross-validation.

    ``on_fit`` is called after each of the 31 fits (progress). BLAS runs on one thread: on a
    busy runner its threads wait on each other (the head's fit took 16 times as long on 2
    cores). Raises :exc:`ConfigError` as :func:`check_rows` does, or when the rows share too
    few n-grams.
    """
    check_rows(rows)
    with _one_blas_thread():
        return _fit(rows, min_precision=min_precision, repo=repo, specs=specs, on_fit=on_fit)


def _fit(
    rows: Sequence[TypeRow],
    *,
    min_precision: float,
    repo: str | None,
    specs: Sequence[BlockSpec],
    on_fit: Callable[[], None],
) -> FitResult:
    import numpy as np

    types = list(TYPE_NAMES)
    labels = [row.type for row in rows]
    counts = [_Counts(spec, rows) for spec in specs]
    every = np.arange(len(rows))
    predictions: list[Prediction | None] = [None] * len(rows)
    applied: list[dict[TypeName, float | None]] = [{} for _ in rows]
    for test, guesses in _out_of_fold(counts, every, labels, on_fit):
        train = np.setdiff1d(every, test)
        inner = [p for _, fold in _out_of_fold(counts, train, labels, on_fit) for p in fold]
        thresholds = choose_thresholds(inner, types, min_precision)
        for i, prediction in zip(test, guesses, strict=True):
            predictions[i] = prediction
            applied[i] = thresholds
    outer = [p for p in predictions if p is not None]
    final_thresholds = choose_thresholds(outer, types, min_precision)
    start = time.perf_counter()
    pipeline = _Pipeline([_Counts(spec, rows) for spec in specs])
    pipeline.fit(every, labels)
    final_fit_s = time.perf_counter() - start
    on_fit()
    scores = type_scores(outer, types)
    at = at_thresholds(outer, applied, types)
    per_type = Counter(labels)
    figures = TypeFigures(
        folds=FOLDS,
        rows=len(rows),
        macro_f1=macro_f1(scores),
        min_precision=min_precision,
        coverage=at.overall_coverage,
        per_type={
            kind: TypeScores(
                precision=scores[kind].precision,
                recall=scores[kind].recall,
                f1=scores[kind].f1,
                rows=per_type[kind],
                threshold_precision=at.precision[kind],
                threshold_coverage=at.coverage[kind],
            )
            for kind in types
        },
    )
    head = pipeline.head
    order = [list(head.classes_).index(kind) for kind in types]
    model = TypeModel(
        format=FORMAT,
        version=VERSION,
        types=types,
        blocks=pipeline.blocks(),
        weights=Array.of(np.asarray(head.coef_)[order]),
        intercepts=Array.of(np.asarray(head.intercept_)[order]),
        thresholds=final_thresholds,
        figures=figures,
        repo=repo,
    )
    return FitResult(model=model, predictions=outer, at_thresholds=at, final_fit_s=final_fit_s)
