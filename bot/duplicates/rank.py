"""Ranking a repository's indexed issues against one issue: retrieval by the store's full-text
search, scores in Python.

The score is the cosine of TF-IDF vectors (the title counted twice, ``1 + ln(tf)``, smooth idf
``ln((1 + N) / (1 + df)) + 1`` from the store's document frequencies), so it lies in [0, 1] and
one threshold means the same for every issue. The store only says which issues share a term
with the query: the query's :data:`RETRIEVAL_TERMS` heaviest terms among those another issue
holds and at most :data:`COMMON_SHARE` of the index (or :data:`COMMON_FLOOR` issues) holds. Both
stores return the same set for the same terms, and
everything after that is computed here, so both give the same ranking.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.duplicates.terms import IssueTerms
from bot.history.protocol import HistoryStore, IndexedIssue

if TYPE_CHECKING:
    from bot.duplicates.title_stage import TitleStage

__all__ = [
    "COMMON_FLOOR",
    "COMMON_SHARE",
    "RETRIEVAL_TERMS",
    "SHORTLIST",
    "TITLE_SHARE",
    "TITLE_SHORTLIST",
    "TITLE_WEIGHT",
    "Candidate",
    "Ranker",
    "mixed",
]

TITLE_WEIGHT = 2
"""How many times a title term counts."""
RETRIEVAL_TERMS = 32
COMMON_SHARE = 0.1
COMMON_FLOOR = 100
"""A term in at most this many issues always retrieves: in a small index a tenth is a few
issues, and the words two reports share are among the commonest there."""
"""Terms in more than this share of the index do not retrieve (they still score)."""
MAX_RETRIEVED = 5000
SHORTLIST = 50
"""How many retrieved issues get the exact score, picked by a rough one that needs no
document frequency of their other terms."""
TITLE_SHARE = 0.3
"""With a title stage, the title cosine's share of a candidate's score; the words' cosine has
the rest."""
TITLE_SHORTLIST = 200
"""The shortlist with a title stage: titles alike in meaning but not in words rank low on the
rough score."""

_SUBLINEAR = [0.0] + [1.0 + math.log(c) for c in range(1, 256)]


def _sublinear(count: int) -> float:
    return _SUBLINEAR[count] if count < len(_SUBLINEAR) else 1.0 + math.log(count)


def mixed(words: float, title: float) -> float:
    """A candidate's score (0–1) from its words' cosine and its title cosine (negative: 0)."""
    return min(1.0, (1 - TITLE_SHARE) * words + TITLE_SHARE * max(0.0, title))


@dataclass(frozen=True)
class Candidate:
    """An indexed issue ranked against another: its number, title and score (0–1)."""

    number: int
    title: str
    score: float


def _counts(terms: IssueTerms) -> Counter[str]:
    counts = Counter(terms.body.split())
    for term in terms.title.split():
        counts[term] += TITLE_WEIGHT
    return counts


class Ranker:
    """Ranks one repository's indexed issues. It keeps what it reads (document frequencies,
    issues' weights): build one after the index's last write, and use it while nothing writes."""

    def __init__(self, store: HistoryStore, repo: str, titles: TitleStage | None = None) -> None:
        self.store = store
        self.repo = repo
        self.titles = titles
        """With a title stage, a candidate's score mixes in its title cosine
        (:func:`mixed`) when :meth:`rank` is given the title."""
        self._size: int | None = None
        self._idf: dict[str, float] = {}
        self._docs: dict[str, int] = {}
        self._issues: dict[int, tuple[dict[str, float], float]] = {}
        self._counted: dict[int, Counter[str]] = {}
        self._tf_norms: dict[int, float] = {}
        self.retrieved = 0
        """How many issues the last :meth:`rank` read from the store."""

    @property
    def size(self) -> int:
        """How many issues of the repository the index holds (read once)."""
        if self._size is None:
            self._size = self.store.index_size(self.repo)
        return self._size

    def _read(self, terms: Iterable[str]) -> None:
        if self._size is None:
            self._size = self.store.index_size(self.repo)
        unknown = {t for t in terms if t not in self._idf}
        if unknown:
            docs = self.store.term_docs(self.repo, unknown)
            for term in unknown:
                self._docs[term] = docs.get(term, 0)
                self._idf[term] = math.log((1 + self._size) / (1 + self._docs[term])) + 1.0

    def _own_terms(self, number: int | None) -> set[str]:
        """The terms the index holds for ``number`` (the issue being ranked, when indexed)."""
        if number is None:
            return set()
        indexed = self.store.indexed_issue(self.repo, number)
        return (
            set() if indexed is None else IssueTerms(indexed.title_terms, indexed.body_terms).all()
        )

    def _weights(self, counts: Counter[str]) -> tuple[dict[str, float], float]:
        """Each term's weight ``(1 + ln tf) · idf``, and the vector's norm (``fsum``: the same
        terms in any order give the same norm, so issues of the same words tie exactly)."""
        idf = self._idf
        weights = {t: _sublinear(c) * idf[t] for t, c in counts.items()}
        return weights, math.sqrt(math.fsum(w * w for w in weights.values()))

    def rank(
        self,
        terms: IssueTerms,
        *,
        exclude: int | None = None,
        before: str | None = None,
        k: int = 5,
        title: str | None = None,
    ) -> list[Candidate]:
        """The ``k`` indexed issues most like ``terms``, best first (ties: lower number first),
        leaving out ``exclude`` and, with ``before`` (ISO 8601), issues created at or after it.
        ``title``: the issue's title, for the title stage.

        Raises:
            StoreError: the store cannot be read.
        """
        counts = _counts(terms)
        if not counts:
            return []
        self._read(counts)
        weights, norm = self._weights(counts)
        query = {t: w / norm for t, w in weights.items()}
        common = max(COMMON_SHARE * (self._size or 0), COMMON_FLOOR)
        own = self._own_terms(exclude)
        # a term retrieves when another issue holds it, and not too many do
        others = {t: self._docs[t] - (t in own) for t in query}
        heaviest = sorted((t for t in query if others[t] > 0), key=lambda t: (-query[t], t))
        retrieving = [t for t in heaviest if self._docs[t] <= common][:RETRIEVAL_TERMS]
        retrieving = retrieving or heaviest[:RETRIEVAL_TERMS]
        if not retrieving:
            return []
        found = self.store.issues_with_terms(
            self.repo,
            retrieving,
            before=before,
            exclude=exclude,
            limit=MAX_RETRIEVED,
        )
        self.retrieved = len(found)
        return self._best(query, retrieving, found, k, title)

    def _best(
        self,
        query: Mapping[str, float],
        retrieving: Sequence[str],
        found: Sequence[IndexedIssue],
        k: int,
        title: str | None,
    ) -> list[Candidate]:
        counts = {i.number: self._counts(i) for i in found}
        idf = self._idf
        asked = [(t, query[t]) for t in retrieving]

        def rough(issue: IndexedIssue) -> float:
            # the query's retrieving terms over the root of the issue's distinct terms:
            # no document frequency of its other terms needed
            mine = counts[issue.number]
            dot = sum(w * _sublinear(mine[t]) * idf[t] for t, w in asked if t in mine)
            return dot / self._tf_norms[issue.number]

        staged = self.titles is not None and title is not None
        size = max(TITLE_SHORTLIST if staged else SHORTLIST, k)
        short = sorted(found, key=lambda i: (-rough(i), i.number))[:size]
        fresh = [i.number for i in short if i.number not in self._issues]
        self._read(t for n in fresh for t in counts[n])
        for number in fresh:
            self._issues[number] = self._weights(counts[number])
        alike: dict[int, float] | None = None
        if self.titles is not None and title is not None:  # staged, for mypy
            alike = self.titles.similarities(self.titles.query(title), short)
        scored = []
        for issue in short:
            weights, norm = self._issues[issue.number]
            dot = sum(w * weights[t] for t, w in query.items() if t in weights)
            score = min(1.0, dot / norm)
            if alike is not None:
                score = mixed(score, alike[issue.number])
            scored.append(Candidate(issue.number, issue.title, score))
        scored.sort(key=lambda c: (-c.score, c.number))
        return scored[:k]

    def _counts(self, issue: IndexedIssue) -> Counter[str]:
        known = self._counted.get(issue.number)
        if known is None:
            known = _counts(IssueTerms(issue.title_terms, issue.body_terms))
            self._counted[issue.number] = known
            self._tf_norms[issue.number] = math.sqrt(len(known)) or 1.0
        return known
